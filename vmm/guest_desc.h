/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_VMM_GUEST_DESC_H
#define KVMPROF_VMM_GUEST_DESC_H

/*
 * The guest descriptor (include/kvmprof/guest_desc.h): checking one a guest
 * registered, and reading the current process through it. Pure code over
 * guest memory and a paging set-up, so the unit tests drive it with hostile
 * descriptors and page tables and no KVM.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guest_mem.h"
#include "guest_walk.h"
#include "kvmprof/guest_desc.h"
#include "kvmprof/sample_format.h"
#include "../lib/task_layout.h"

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
int guest_desc_current(const struct kp_guest_desc *d, const struct guest_mem *mem,
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
int guest_desc_proc_info(const struct kp_guest_desc *d, const struct guest_mem *mem,
			 const struct guest_paging *pg, uint64_t proc_gva, struct guest_desc_proc *out);

/*
 * Linux guests (struct kp_rec_task_layout, from the agent's export, given
 * with sample-start): no descriptor in guest memory, but the kernel's own
 * per-CPU current-task pointer and task_struct offsets.
 */
/* Each function below expects a layout task_layout_check (lib/task_layout.h) accepted. */

/*
 * The task Linux CPU cpu runs (cpu: the vCPU index; the VMM's ACPI and MP
 * tables list vCPUs in order, so Linux numbers them the same): *task, its
 * *tgid (the process) and *pid (the thread); all 0 when idle (the swapper
 * task, pid 0). 0, or -EFAULT when something could not be read or made no
 * sense (then all three are 0).
 */
int guest_linux_current(const struct kp_rec_task_layout *l, const struct guest_mem *mem,
			const struct guest_paging *pg, unsigned int cpu, uint64_t *task, uint32_t *tgid,
			uint32_t *pid);

/* The task's comm, NUL-terminated, control bytes as '?'; false (and "[unknown]") if unreadable or empty. */
bool guest_linux_comm(const struct kp_rec_task_layout *l, const struct guest_mem *mem,
		      const struct guest_paging *pg, uint64_t task, char comm[KP_COMM_MAX + 1]);

#endif
