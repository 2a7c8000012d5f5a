/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_VMI_DESC_READER_H
#define KVMPROF_VMI_DESC_READER_H

/*
 * The bundled guest's descriptor (the guest/VMM ABI in
 * include/kvmprof/guest_desc.h): checking one a guest registered, and
 * reading the current process through it. Pure code over guest memory and
 * a paging set-up, so the unit tests drive it with hostile descriptors and
 * page tables and no KVM.
 */

#include <stdint.h>

#include "guest_walk.h"
#include "kvmprof/guest_desc.h"
#include "kvmprof/sample_format.h"
#include "vmi_mem.h"

#define GUEST_DESC_WHY_MAX 128

/* 0 if d can be used; -EINVAL with the first reason in why otherwise. */
int guest_desc_check(const struct kp_guest_desc *d, char why[GUEST_DESC_WHY_MAX]);

/*
 * The current process of the vCPU with index (and APIC id) cpu: *proc_gva
 * and *pid, both 0 when the CPU runs no process. *entry caches the per-CPU
 * entry between calls (-1: unknown); it is re-checked on every call. 0, or
 * -EFAULT when something could not be read or made no sense, -ENOENT when
 * no entry is this CPU's.
 */
int guest_desc_current(const struct kp_guest_desc *d, const struct vmi_mem *mem,
		       const struct guest_paging *pg, unsigned int cpu, int *entry,
		       uint64_t *proc_gva, uint32_t *pid);

struct guest_desc_proc {
	char comm[KP_COMM_MAX + 1];       /* NUL-terminated, never empty */
	char path[KP_GDESC_PATH_MAX];     /* NUL-terminated; "" when unknown */
	uint64_t text_start, text_end, text_pgoff; /* all 0 when unknown or insane */
};

/*
 * Name, image path and text segment of the process at proc_gva. Fields that
 * cannot be read or make no sense come back empty (comm "[unknown]"); the
 * return value is 0 if all of it was read, -EFAULT otherwise.
 */
int guest_desc_proc_info(const struct kp_guest_desc *d, const struct vmi_mem *mem,
			 const struct guest_paging *pg, uint64_t proc_gva, struct guest_desc_proc *out);

#endif
