// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>

#include "acpi.h"
#include "checksum.h"
#include "kvmprof/platform.h"

struct acpi_header {
	char signature[4];
	uint32_t length;
	uint8_t revision;
	uint8_t checksum;
	char oem_id[6];
	char oem_table_id[8];
	uint32_t oem_revision;
	char creator_id[4];
	uint32_t creator_revision;
} __attribute__((packed));

struct acpi_rsdp {
	char signature[8];
	uint8_t checksum;
	char oem_id[6];
	uint8_t revision;
	uint32_t rsdt_address;
	uint32_t length;
	uint64_t xsdt_address;
	uint8_t extended_checksum;
	uint8_t reserved[3];
} __attribute__((packed));

struct madt_lapic {
	uint8_t type, length, processor_id, apic_id;
	uint32_t flags;
} __attribute__((packed));

struct madt_ioapic {
	uint8_t type, length, ioapic_id, reserved;
	uint32_t address, gsi_base;
} __attribute__((packed));

#define FADT_SIZE 276
#define FADT_DSDT 40
#define FADT_SCI_INT 46
#define FADT_PM1A_EVT_BLK 56
#define FADT_PM1A_CNT_BLK 64
#define FADT_PM1_EVT_LEN 88
#define FADT_PM1_CNT_LEN 89
#define FADT_IAPC_BOOT_ARCH 109
#define FADT_FLAGS 112
#define FADT_MINOR_REVISION 131
#define FADT_X_DSDT 140
#define FADT_X_PM1A_EVT_BLK 148
#define FADT_X_PM1A_CNT_BLK 172
#define FADT_HYPERVISOR_ID 268
#define IAPC_VGA_NOT_PRESENT (1u << 2)

/* A Generic Address Structure in system I/O space. */
struct acpi_gas {
	uint8_t space_id, bit_width, bit_offset, access_size;
	uint64_t address;
} __attribute__((packed));

#define ACPI_GAS_SYSTEM_IO 1

/*
 * The DSDT's only content, Name (_S5_, Package () { S5, S5, 0, 0 }): the
 * sleep type a guest writes to PM1a_CNT (and PM1b_CNT, which there is not)
 * to power off. AML: NameOp, the name, PackageOp, PkgLength (itself and the
 * 7 bytes after it), NumElements, BytePrefix S5 twice, Zero twice.
 */
static const uint8_t dsdt_aml_s5[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x08, 0x04,
				       0x0a, KVMPROF_ACPI_S5_TYPE, 0x0a, KVMPROF_ACPI_S5_TYPE, 0x00, 0x00 };

static void fadt_set_pm_block(uint8_t *fadt, unsigned int legacy_off, unsigned int x_off, uint16_t port,
			      uint8_t len)
{
	uint32_t v32 = port;
	struct acpi_gas gas = { .space_id = ACPI_GAS_SYSTEM_IO, .bit_width = (uint8_t)(len * 8), .address = port };

	memcpy(fadt + legacy_off, &v32, 4);
	memcpy(fadt + x_off, &gas, sizeof(gas));
}

static void acpi_header_init(struct acpi_header *h, const char *sig, uint32_t length, uint8_t revision)
{
	memcpy(h->signature, sig, 4);
	h->length = length;
	h->revision = revision;
	memcpy(h->oem_id, "KVMPRF", 6);
	memcpy(h->oem_table_id, "KVMPROF ", 8);
	h->oem_revision = 1;
	memcpy(h->creator_id, "KPRF", 4);
	h->creator_revision = 1;
}

/* Lays the tables out one after another from KVMPROF_ACPI_ADDR; each is checksummed in place. */
int acpi_write_tables(const struct guest_mem *mem, unsigned int ncpus)
{
	const uint64_t rsdp_gpa = KVMPROF_ACPI_ADDR;
	const uint64_t xsdt_gpa = rsdp_gpa + 64;
	const uint64_t fadt_gpa = xsdt_gpa + 64;
	const uint64_t dsdt_gpa = fadt_gpa + 512;
	const uint64_t madt_gpa = dsdt_gpa + 64;
	const uint32_t madt_len = sizeof(struct acpi_header) + 8 +
				  ncpus * sizeof(struct madt_lapic) + sizeof(struct madt_ioapic);
	uint8_t *base = guest_mem_ptr(mem, rsdp_gpa, madt_gpa - rsdp_gpa + madt_len);
	struct acpi_rsdp *rsdp;
	struct acpi_header *h;
	uint8_t *fadt, *madt;
	uint32_t v32;
	uint64_t v64;

	if (!base || ncpus == 0 || ncpus > KVMPROF_MAX_CPUS)
		return -EINVAL;
	memset(base, 0, madt_gpa - rsdp_gpa + madt_len);

	/* DSDT: \_S5 alone. The UARTs and the RTC are legacy devices Linux finds on its own. */
	_Static_assert(sizeof(struct acpi_header) + sizeof(dsdt_aml_s5) <= 64, "the DSDT fits its slot");
	h = (struct acpi_header *)(base + (dsdt_gpa - rsdp_gpa));
	acpi_header_init(h, "DSDT", (uint32_t)(sizeof(*h) + sizeof(dsdt_aml_s5)), 2);
	memcpy(h + 1, dsdt_aml_s5, sizeof(dsdt_aml_s5));
	h->checksum = checksum8(h, h->length);

	fadt = base + (fadt_gpa - rsdp_gpa);
	acpi_header_init((struct acpi_header *)fadt, "FACP", FADT_SIZE, 6);
	v32 = (uint32_t)dsdt_gpa;
	memcpy(fadt + FADT_DSDT, &v32, 4);
	v64 = dsdt_gpa;
	memcpy(fadt + FADT_X_DSDT, &v64, 8);
	/*
	 * Not hardware-reduced: with that flag Linux drops the legacy PIC and
	 * gives the UARTs no IRQ (it expects them in the DSDT), so a Linux
	 * console could not work in interrupt mode. With no SMI port, Linux
	 * takes the machine as already in ACPI mode. The PM1a blocks are there
	 * for the standard power-off (acpi_pm.h); no PM timer, no GPE blocks.
	 */
	v32 = 0;
	memcpy(fadt + FADT_FLAGS, &v32, 4);
	fadt_set_pm_block(fadt, FADT_PM1A_EVT_BLK, FADT_X_PM1A_EVT_BLK, KVMPROF_ACPI_PM1A_EVT_PORT, 4);
	fadt_set_pm_block(fadt, FADT_PM1A_CNT_BLK, FADT_X_PM1A_CNT_BLK, KVMPROF_ACPI_PM1A_CNT_PORT, 2);
	fadt[FADT_PM1_EVT_LEN] = 4;
	fadt[FADT_PM1_CNT_LEN] = 2;
	fadt[FADT_IAPC_BOOT_ARCH] = IAPC_VGA_NOT_PRESENT;
	fadt[FADT_MINOR_REVISION] = 5;
	memcpy(fadt + FADT_HYPERVISOR_ID, "KVMPROF ", 8);
	((struct acpi_header *)fadt)->checksum = checksum8(fadt, FADT_SIZE);

	madt = base + (madt_gpa - rsdp_gpa);
	acpi_header_init((struct acpi_header *)madt, "APIC", madt_len, 5);
	v32 = (uint32_t)KVMPROF_LAPIC_BASE;
	memcpy(madt + sizeof(struct acpi_header), &v32, 4);
	v32 = 1; /* PCAT_COMPAT: there is an 8259 pair (KVM's) to mask */
	memcpy(madt + sizeof(struct acpi_header) + 4, &v32, 4);
	{
		uint8_t *p = madt + sizeof(struct acpi_header) + 8;
		for (unsigned int i = 0; i < ncpus; i++) {
			struct madt_lapic l = { 0, sizeof(l), (uint8_t)i, (uint8_t)i, 1 /* enabled */ };
			memcpy(p, &l, sizeof(l));
			p += sizeof(l);
		}
		struct madt_ioapic io = { 1, sizeof(io), (uint8_t)ncpus, 0,
					  (uint32_t)KVMPROF_IOAPIC_BASE, 0 };
		memcpy(p, &io, sizeof(io));
	}
	((struct acpi_header *)madt)->checksum = checksum8(madt, madt_len);

	h = (struct acpi_header *)(base + (xsdt_gpa - rsdp_gpa));
	acpi_header_init(h, "XSDT", sizeof(*h) + 2 * 8, 1);
	v64 = fadt_gpa;
	memcpy((uint8_t *)(h + 1), &v64, 8);
	v64 = madt_gpa;
	memcpy((uint8_t *)(h + 1) + 8, &v64, 8);
	h->checksum = checksum8(h, h->length);

	rsdp = (struct acpi_rsdp *)base;
	memcpy(rsdp->signature, "RSD PTR ", 8);
	memcpy(rsdp->oem_id, "KVMPRF", 6);
	rsdp->revision = 2;
	rsdp->length = sizeof(*rsdp);
	rsdp->xsdt_address = xsdt_gpa;
	rsdp->checksum = checksum8(rsdp, 20);
	rsdp->extended_checksum = checksum8(rsdp, sizeof(*rsdp));
	return 0;
}
