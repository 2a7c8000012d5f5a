/* SPDX-License-Identifier: MIT */
/*
 * What kvmprof reads from QEMU's human monitor (HMP, through libvirt's
 * virDomainQemuMonitorCommand): the vCPUs' registers (`info registers
 * -a`), the guest-physical memory map (`info mtree -f`) and where a RAM
 * range lies in QEMU's address space (`gpa2hva`). Pure parsers of the
 * text QEMU 7.2 prints, so the tests and the fuzzer drive them with any
 * text: QEMU's output is read as untrusted (a guest that escaped into QEMU
 * writes it), every number is range-checked and a reply that does not
 * parse is refused, never half-used.
 */
#ifndef HOST_QEMU_HMP_H
#define HOST_QEMU_HMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One vCPU of `info registers -a`: what a guest sample and its page and stack walks need. */
struct qemu_vcpu_regs {
	unsigned int cpu; /* "CPU#n" */
	uint64_t rip, rsp, rbp;
	uint64_t cr0, cr3, cr4, efer;
	uint64_t tr_base;
	uint64_t idt_base; /* IDTR; both 0 when the dump had no "IDT=" line */
	uint16_t idt_limit;
	uint8_t cpl;  /* 0-3 */
	bool halted;  /* HLT=1: the vCPU waits for an interrupt */
};

#define QEMU_HMP_MAX_VCPUS 64

/*
 * The vCPUs of `info registers -a` (or of a plain `info registers`, one
 * vCPU without its "CPU#" line, as cpu 0). 64-bit register dumps only:
 * a vCPU in 32-bit mode has EIP, not RIP, and is left out. Returns how
 * many it filled (at most max), or -EBADMSG when no vCPU parsed.
 */
int qemu_hmp_parse_registers(const char *text, struct qemu_vcpu_regs *out, int max);

/* A guest-physical range backed by one of QEMU's RAM blocks (type ram or rom in the flat view). */
struct qemu_ram_range {
	uint64_t gpa, size;
	uint64_t hva; /* where QEMU maps its first byte (gpa2hva), 0 until known */
	char name[64]; /* the memory region: "pc.ram", "pc.bios" */
};

#define QEMU_HMP_MAX_RANGES 64

/*
 * The RAM and ROM ranges of the flat view of address space "memory" in
 * `info mtree -f`, in guest-physical order. Returns how many (at most
 * max), or -EBADMSG when there is no such view or a range line is
 * malformed, or the ranges overlap.
 */
int qemu_hmp_parse_mtree(const char *text, struct qemu_ram_range *out, int max);

/* `gpa2hva ADDR`: "Host virtual address for 0x... (name) is 0x...". 0, or -EBADMSG (the reply is QEMU's error). */
int qemu_hmp_parse_gpa2hva(const char *text, uint64_t *hva);

#endif
