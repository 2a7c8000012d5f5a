// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>

#include "checksum.h"
#include "kvmprof/platform.h"
#include "mptable.h"

struct mpf_intel {
	char signature[4]; /* "_MP_" */
	uint32_t physptr;
	uint8_t length;    /* in 16-byte units */
	uint8_t specification;
	uint8_t checksum;
	uint8_t feature[5];
} __attribute__((packed));

struct mpc_table {
	char signature[4]; /* "PCMP" */
	uint16_t length;
	uint8_t spec;
	uint8_t checksum;
	char oem[8];
	char productid[12];
	uint32_t oemptr;
	uint16_t oemsize;
	uint16_t oemcount;
	uint32_t lapic;
	uint32_t reserved;
} __attribute__((packed));

struct mpc_cpu {
	uint8_t type, apicid, apicver, cpuflag;
	uint32_t cpufeature, featureflag;
	uint32_t reserved[2];
} __attribute__((packed));

struct mpc_bus {
	uint8_t type, busid;
	char bustype[6];
} __attribute__((packed));

struct mpc_ioapic {
	uint8_t type, apicid, apicver, flags;
	uint32_t apicaddr;
} __attribute__((packed));

struct mpc_intsrc {
	uint8_t type, irqtype;
	uint16_t irqflag;
	uint8_t srcbus, srcbusirq, dstapic, dstirq;
} __attribute__((packed));

enum { MP_PROCESSOR, MP_BUS, MP_IOAPIC, MP_INTSRC, MP_LINTSRC };
enum { MP_INT, MP_NMI, MP_SMI, MP_EXTINT };

#define CPU_ENABLED 1
#define CPU_BOOTPROCESSOR 2
#define APIC_VERSION 0x14
#define IOAPIC_VERSION 0x11

int mptable_write(const struct guest_mem *mem, unsigned int ncpus)
{
	const size_t max = 0x1000;
	uint8_t *base = guest_mem_ptr(mem, KVMPROF_MPTABLE_ADDR, max);
	uint8_t ioapic_id = (uint8_t)ncpus;
	uint16_t count = 0;

	if (!base || ncpus == 0 || ncpus > KVMPROF_MAX_CPUS)
		return -EINVAL;
	struct mpf_intel *mpf = (struct mpf_intel *)base;
	struct mpc_table *mpc = (struct mpc_table *)(base + sizeof(*mpf));
	uint8_t *p = (uint8_t *)(mpc + 1);
	memset(base, 0, max);
	for (unsigned int i = 0; i < ncpus; i++) {
		struct mpc_cpu cpu = {
			.type = MP_PROCESSOR,
			.apicid = (uint8_t)i,
			.apicver = APIC_VERSION,
			.cpuflag = CPU_ENABLED | (i == 0 ? CPU_BOOTPROCESSOR : 0),
			.cpufeature = 0x600, /* family 6: a "modern" CPU to a 1997 spec */
			.featureflag = 0x201, /* FPU, APIC */
		};
		memcpy(p, &cpu, sizeof(cpu));
		p += sizeof(cpu);
		count++;
	}
	struct mpc_bus bus = { .type = MP_BUS, .busid = 0, .bustype = "ISA   " };
	memcpy(p, &bus, sizeof(bus));
	p += sizeof(bus);
	count++;
	struct mpc_ioapic ioapic = {
		.type = MP_IOAPIC, .apicid = ioapic_id, .apicver = IOAPIC_VERSION,
		.flags = 1, .apicaddr = (uint32_t)KVMPROF_IOAPIC_BASE,
	};
	memcpy(p, &ioapic, sizeof(ioapic));
	p += sizeof(ioapic);
	count++;
	for (uint8_t irq = 0; irq < 16; irq++) {
		struct mpc_intsrc src = {
			.type = MP_INTSRC, .irqtype = MP_INT, .irqflag = 0,
			.srcbus = 0, .srcbusirq = irq, .dstapic = ioapic_id, .dstirq = irq,
		};
		memcpy(p, &src, sizeof(src));
		p += sizeof(src);
		count++;
	}
	/* Legacy PIC output to LINT0 and NMI to LINT1 on every local APIC. */
	struct mpc_intsrc lint[2] = {
		{ .type = MP_LINTSRC, .irqtype = MP_EXTINT, .dstapic = 0xff, .dstirq = 0 },
		{ .type = MP_LINTSRC, .irqtype = MP_NMI, .dstapic = 0xff, .dstirq = 1 },
	};
	memcpy(p, lint, sizeof(lint));
	p += sizeof(lint);
	count += 2;

	memcpy(mpc->signature, "PCMP", 4);
	mpc->length = (uint16_t)(p - (uint8_t *)mpc);
	mpc->spec = 4;
	memcpy(mpc->oem, "KVMPROF ", 8);
	memcpy(mpc->productid, "KVMPROF-VMM ", 12);
	mpc->oemcount = count;
	mpc->lapic = (uint32_t)KVMPROF_LAPIC_BASE;
	mpc->checksum = checksum8((uint8_t *)mpc, mpc->length);

	memcpy(mpf->signature, "_MP_", 4);
	mpf->physptr = (uint32_t)(KVMPROF_MPTABLE_ADDR + sizeof(*mpf));
	mpf->length = 1;
	mpf->specification = 4;
	mpf->checksum = checksum8((uint8_t *)mpf, sizeof(*mpf));
	return 0;
}
