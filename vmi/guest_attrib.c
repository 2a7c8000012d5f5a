// SPDX-License-Identifier: MIT
#include "guest_attrib.h"

#include <string.h>

#include "kvmprof/sample_format.h"

enum { PID0_NONE, PID0_IDLE, PID0_UNKNOWN };

int guest_attrib_init(struct guest_attrib *a)
{
	memset(a, 0, sizeof(*a));
	a->desc_entry = -1;
	return guest_procs_seen_init(&a->procs);
}

void guest_attrib_free(struct guest_attrib *a)
{
	guest_procs_seen_free(&a->procs);
}

/* The records before a sample of a new (or renamed) process: its COMM, and MMAP when known. */
static bool put_news(const struct guest_attrib_sink *sink, const struct guest_proc_news *n, uint64_t time)
{
	return sink->comm(sink->opaque, n->pid, time, n->comm) &&
	       (!n->has_text || sink->mmap(sink->opaque, n->pid, time, n->text_start, n->text_len, n->text_pgoff, n->path));
}

void guest_attribute(struct guest_attrib *a, const struct guest_os *os, const struct vmi_mem *mem,
		     const struct guest_paging *pg, unsigned int cpu, uint64_t time,
		     const struct guest_attrib_sink *sink, uint32_t *pid, uint32_t *tid)
{
	struct guest_task task = { 0 };
	struct guest_proc_news news;
	bool known = false;
	int kind;

	if (pg && os->desc && !a->kernel_mmap_sent)
		a->kernel_mmap_sent = sink->mmap(sink->opaque, KP_PID_KERNEL, time, os->desc->kernel_text_start,
						 os->desc->kernel_text_end - os->desc->kernel_text_start, 0,
						 os->desc->kernel_path);
	if (pg && (os->desc || os->linux_layout)) {
		known = guest_procs_current(os, mem, pg, cpu, &a->desc_entry, &task) == 0;
		if (known && task.pid && guest_procs_news(&a->procs, os, mem, pg, &task, &news) &&
		    put_news(sink, &news, time))
			guest_procs_told(&a->procs, &news);
	}
	*pid = task.pid;
	*tid = task.tid;
	if (task.pid)
		return;
	kind = known ? PID0_IDLE : PID0_UNKNOWN;
	if (a->pid0_kind != kind && sink->comm(sink->opaque, 0, time, kind == PID0_IDLE ? "[idle]" : "[unknown]"))
		a->pid0_kind = kind;
}
