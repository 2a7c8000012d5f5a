/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_VMI_LINUX_TASK_H
#define KVMPROF_VMI_LINUX_TASK_H

/*
 * Linux guests (struct kp_rec_task_layout, from the agent's export, given
 * with sample-start): no descriptor in guest memory, but the kernel's own
 * per-CPU current-task pointer and task_struct offsets. Each function
 * expects a layout task_layout_check (lib/common/task_layout.h) accepted.
 */

#include <stdbool.h>
#include <stdint.h>

#include "guest_walk.h"
#include "kvmprof/sample_format.h"
#include "common/task_layout.h"
#include "vmi_mem.h"

/*
 * The task Linux CPU cpu runs (cpu: the vCPU index; the VMM's ACPI and MP
 * tables list vCPUs in order, so Linux numbers them the same): *task, its
 * *tgid (the process) and *pid (the thread); all 0 when idle (the swapper
 * task, pid 0). 0, or -EFAULT when something could not be read or made no
 * sense (then all three are 0).
 */
int guest_linux_current(const struct kp_rec_task_layout *l, const struct vmi_mem *mem,
			const struct guest_paging *pg, unsigned int cpu, uint64_t *task, uint32_t *tgid,
			uint32_t *pid);

/* The task's comm, NUL-terminated, control bytes as '?'; false (and "[unknown]") if unreadable or empty. */
bool guest_linux_comm(const struct kp_rec_task_layout *l, const struct vmi_mem *mem,
		      const struct guest_paging *pg, uint64_t task, char comm[KP_COMM_MAX + 1]);

#endif
