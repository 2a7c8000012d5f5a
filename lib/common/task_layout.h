/* SPDX-License-Identifier: MIT */
/*
 * The rules a Linux guest's task layout (struct kp_rec_task_layout in
 * include/kvmprof/sample_format.h) must meet before anything reads guest
 * memory through it. One check for both ends: the agent refuses to send a
 * layout the VMM would refuse at sample-start, and the VMM checks it again
 * because the layout reaches it from the guest.
 */
#ifndef KVMPROF_TASK_LAYOUT_H
#define KVMPROF_TASK_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvmprof/sample_format.h"

#define TASK_LAYOUT_TASK_MAX (1u << 20)           /* task_size and every field below this */
#define TASK_LAYOUT_PERCPU_REL_MAX (1ULL << 32)   /* a zero-based per-CPU offset is below this */
#define TASK_LAYOUT_MAX_CPUS 256                  /* __per_cpu_offset[] entries read at most */

/*
 * The upper half, where x86-64 kernels live: from 0xff00000000000000 with
 * 5-level paging, 0xffff800000000000 with 4-level (the addresses between
 * are not canonical there, and the page walker refuses them).
 */
static inline bool task_layout_kernel_half(uint64_t a)
{
	return a >= 0xff00000000000000ULL;
}

/* 0 if l can be used; -EINVAL with the first reason in why (why_size bytes) otherwise. */
int task_layout_check(const struct kp_rec_task_layout *l, char *why, size_t why_size);

#endif
