// SPDX-License-Identifier: MIT
#include "common/task_layout.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

static int layout_refused(char *why, size_t why_size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, why_size, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* A field of size bytes at off lies within limit. */
static bool field_within(uint32_t off, uint32_t size, uint32_t limit)
{
	return size <= limit && off <= limit - size;
}

int task_layout_check(const struct kp_rec_task_layout *l, char *why, size_t why_size)
{
	if (l->kind != KP_LAYOUT_LINUX_X86_64)
		return layout_refused(why, why_size, "layout kind %u, not 1 (Linux x86-64)", l->kind);
	if (l->flags & ~(uint32_t)KP_LAYOUT_PCPU_HOT)
		return layout_refused(why, why_size, "unknown layout flags 0x%x", l->flags);
	if (l->reserved)
		return layout_refused(why, why_size, "reserved field is 0x%x, not 0", l->reserved);
	/* An array of one u64 per CPU in the kernel's half, which the last CPU's entry does not wrap. */
	if (!task_layout_kernel_half(l->per_cpu_offset) ||
	    l->per_cpu_offset > UINT64_MAX - 8ULL * TASK_LAYOUT_MAX_CPUS || l->per_cpu_offset % 8)
		return layout_refused(why, why_size, "per_cpu_offset 0x%llx is not an aligned kernel address",
				      (unsigned long long)l->per_cpu_offset);
	/*
	 * The per-CPU variable: an offset from the CPU's base (x86-64 links
	 * per-CPU data at 0) or, on kernels that do not, its kernel address.
	 */
	if (l->current_task >= TASK_LAYOUT_PERCPU_REL_MAX && !task_layout_kernel_half(l->current_task))
		return layout_refused(why, why_size, "current_task 0x%llx is neither a per-CPU offset nor a kernel address",
				      (unsigned long long)l->current_task);
	if (l->current_task % 8)
		return layout_refused(why, why_size, "current_task 0x%llx is not 8-byte aligned",
				      (unsigned long long)l->current_task);
	if (l->task_size == 0 || l->task_size > TASK_LAYOUT_TASK_MAX)
		return layout_refused(why, why_size, "task_struct size %u (1 byte to 1 MiB)", l->task_size);
	if (!field_within(l->task_pid, 4, l->task_size) || !field_within(l->task_tgid, 4, l->task_size))
		return layout_refused(why, why_size, "pid or tgid offset (%u, %u) outside task_struct", l->task_pid,
				      l->task_tgid);
	if (l->task_comm_size < 2 || l->task_comm_size > KP_LAYOUT_COMM_MAX ||
	    !field_within(l->task_comm, l->task_comm_size, l->task_size))
		return layout_refused(why, why_size, "comm field (%u bytes at %u) too small, too large or outside task_struct",
				      l->task_comm_size, l->task_comm);
	return 0;
}
