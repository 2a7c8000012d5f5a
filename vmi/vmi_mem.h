/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_VMI_MEM_H
#define KVMPROF_VMI_MEM_H

/*
 * Guest-physical memory as guest introspection (vmi/) reads it: the one
 * interface between the readers here (page walker, stack walker, process
 * attribution) and whoever holds the guest's RAM.
 *
 * The RAM is guest-physical [0, size). It is either mapped in this process
 * (base: kvmprof-vmm's own guest RAM, read with plain loads, no call per
 * access) or reached through read (another process's guest, e.g. QEMU's
 * RAM through process_vm_readv: one call per page-table entry or per page
 * of data, never per byte). Every access is checked against size here,
 * before base or read is touched, so a reader need not check bounds; it may
 * refuse more (holes in what it can reach) by failing.
 *
 * Writes are rare: only the emulation engine's page walks, which set the
 * accessed and dirty bits the CPU would set (guest_walk_touch). A reader
 * without base and without set_bits64 cannot do that, and says so.
 */

#include <stdbool.h>
#include <stdint.h>

struct vmi_mem {
	uint64_t size;  /* bytes of guest-physical memory, from 0 */
	uint8_t *base;  /* guest-physical 0 in this process, or NULL: use read */
	/* Copies guest-physical [gpa, gpa + len), which lies below size; 0 or a negative errno. */
	int (*read)(void *opaque, uint64_t gpa, void *dst, uint64_t len);
	/* Optional: atomically ORs bits into the 8-byte aligned word at gpa (below size); 0 or a negative errno. */
	int (*set_bits64)(void *opaque, uint64_t gpa, uint64_t bits);
	void *opaque;
};

/* Guest RAM mapped in this process: guest-physical [0, size) at base. */
static inline struct vmi_mem vmi_mem_mapped(void *base, uint64_t size)
{
	return (struct vmi_mem){ .size = size, .base = base };
}

/* Whether [gpa, gpa + len) lies wholly in guest RAM (len 0: whether gpa <= size). */
static inline bool vmi_mem_contains(const struct vmi_mem *m, uint64_t gpa, uint64_t len)
{
	return gpa <= m->size && len <= m->size - gpa;
}

/*
 * Copies guest-physical [gpa, gpa + len) into dst; -EFAULT if any of it lies
 * outside RAM or the reader fails. The guest may be writing the same bytes
 * from another vCPU meanwhile: callers get some mix of old and new bytes and
 * must validate what they read.
 */
int vmi_mem_read(const struct vmi_mem *m, uint64_t gpa, void *dst, uint64_t len);

/*
 * The 8-byte word at gpa (8-byte aligned), read once: a page-table entry
 * that another vCPU may rewrite meanwhile is checked and followed as the
 * same value. -EFAULT if misaligned, outside RAM or unreadable.
 */
int vmi_mem_load64(const struct vmi_mem *m, uint64_t gpa, uint64_t *val);

/* Whether vmi_mem_set_bits64 can work. */
bool vmi_mem_can_set_bits(const struct vmi_mem *m);

/*
 * Atomically ORs bits into the 8-byte aligned word at gpa, as the CPU sets
 * accessed and dirty bits (a locked OR: the guest may update the same
 * entry). -EFAULT outside RAM, -EOPNOTSUPP for a reader that cannot write.
 */
int vmi_mem_set_bits64(const struct vmi_mem *m, uint64_t gpa, uint64_t bits);

/* This process's pointer to guest-physical [gpa, gpa + len), or NULL: outside RAM or not mapped here. */
void *vmi_mem_ptr(const struct vmi_mem *m, uint64_t gpa, uint64_t len);

#endif
