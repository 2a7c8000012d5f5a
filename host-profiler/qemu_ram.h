/* SPDX-License-Identifier: MIT */
/*
 * A QEMU guest's RAM, read from outside QEMU: the guest-physical ranges
 * backed by RAM blocks (`info mtree -f`) and where QEMU maps each one
 * (`gpa2hva`), read with process_vm_readv, one call per range a read
 * touches. This is vmi's "read guest memory" (vmi/vmi_mem.h) for a guest
 * that is not kvmprof-vmm's: the page walker, stack walker and process
 * attribution run over it unchanged. Reading another user's process takes
 * ptrace rights over it (root with CAP_SYS_PTRACE; Yama's ptrace_scope
 * 3 forbids it to everyone).
 */
#ifndef HOST_QEMU_RAM_H
#define HOST_QEMU_RAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "qemu_hmp.h"
#include "qemu_monitor.h"
#include "vmi_mem.h"

struct qemu_ram {
	pid_t pid;
	struct qemu_ram_range range[QEMU_HMP_MAX_RANGES]; /* guest-physical order, each with its hva */
	int nranges;
	uint64_t size;   /* the end of the highest range: vmi_mem's bound */
	uint64_t reads;  /* process_vm_readv calls */
	uint64_t failed; /* of which failed (a range QEMU unmapped, permissions) */
};

/* The map of QEMU pid's guest RAM, from its monitor. 0, or -errno with a message in err. */
int qemu_ram_map(struct qemu_ram *r, const struct qemu_monitor *m, pid_t pid, char *err, size_t errlen);

/* Whether this process may read it: one read of the lowest range. 0, or -errno with the reason in err. */
int qemu_ram_probe(struct qemu_ram *r, char *err, size_t errlen);

/* The RAM as vmi reads it (r must outlive the result). */
struct vmi_mem qemu_ram_vmi(struct qemu_ram *r);

/* The bytes of RAM (the ranges' sum). */
uint64_t qemu_ram_bytes(const struct qemu_ram *r);

#endif
