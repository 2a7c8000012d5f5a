/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_VMI_GUEST_PROCS_H
#define KVMPROF_VMI_GUEST_PROCS_H

/*
 * Process attribution: which guest process a vCPU runs, and what a consumer
 * of its samples must be told about that process first (its name and, for
 * the bundled guest, its text mapping). Two sources, one answer: the
 * bundled guest's descriptor (desc_reader.h) or a Linux task layout
 * (linux_task.h). Pure code over guest memory: whoever samples (the VMM's
 * guest sampler today) turns the answers into records.
 */

#include <stdbool.h>
#include <stdint.h>

#include "guest_walk.h"
#include "kvmprof/guest_desc.h"
#include "kvmprof/sample_format.h"
#include "vmi_mem.h"

/* Where a guest keeps its processes: exactly one of the two, already checked. */
struct guest_os {
	const struct kp_guest_desc *desc;              /* guest_desc_check accepted it */
	const struct kp_rec_task_layout *linux_layout; /* task_layout_check accepted it */
};

/* What a vCPU runs. All 0 when it runs no process (idle). */
struct guest_task {
	uint64_t gva; /* the process record (bundled guest) or task_struct (Linux) */
	uint32_t pid; /* the process (Linux: the tgid) */
	uint32_t tid; /* the thread (the bundled guest's processes have one: tid = pid) */
};

/*
 * The task vCPU cpu runs. 0 (pid 0: idle), or a negative errno when it
 * cannot be known (unreadable, insane, no descriptor entry for this CPU);
 * then *out is all 0. *desc_entry caches the descriptor's per-CPU entry
 * between calls (-1 at first; see guest_desc_current); Linux ignores it.
 */
int guest_procs_current(const struct guest_os *os, const struct vmi_mem *mem, const struct guest_paging *pg,
			unsigned int cpu, int *desc_entry, struct guest_task *out);

/*
 * The processes one consumer (one sample ring) has been told about, and
 * under which name: a fixed-size open-addressing table, so that the sample
 * path neither allocates nor grows. When it is full a new process is not
 * remembered, and its news comes again with each sample rather than never.
 */
#define GUEST_PROCS_SLOTS 4096u /* a power of two */
#define GUEST_PROCS_MAX (GUEST_PROCS_SLOTS / 4 * 3)

struct guest_procs_seen {
	uint32_t *key;       /* pid + 1 per slot; 0: free */
	uint32_t *name_hash; /* a hash of the name the consumer was told, to notice exec and renames */
	unsigned int n;
};

/* Allocates an empty table; 0 or -ENOMEM. */
int guest_procs_seen_init(struct guest_procs_seen *s);
void guest_procs_seen_free(struct guest_procs_seen *s);

/* What to tell a consumer about a process before its sample. */
struct guest_proc_news {
	uint32_t pid;
	uint32_t name_hash;
	char comm[KP_COMM_MAX + 1]; /* never empty: "[unknown]" if unreadable */
	/* The bundled guest's processes: the image and its text segment, when known. */
	bool has_text;
	char path[KP_GDESC_PATH_MAX];
	uint64_t text_start, text_len, text_pgoff;
};

/*
 * Whether the consumer must be told about task (a running process, pid not
 * 0) before its sample, and what: a process it was never told about, and
 * for Linux also one whose name changed since (an exec keeps the tgid). The
 * bundled guest's names are read once per process.
 */
bool guest_procs_news(const struct guest_procs_seen *s, const struct guest_os *os, const struct vmi_mem *mem,
		      const struct guest_paging *pg, const struct guest_task *task, struct guest_proc_news *news);

/* task's name (a running process, pid not 0): "[unknown]" when it cannot be read. */
void guest_procs_comm(const struct guest_os *os, const struct vmi_mem *mem, const struct guest_paging *pg,
		      const struct guest_task *task, char comm[KP_COMM_MAX + 1]);

/* The consumer has received the news (all of its records): remember it. */
void guest_procs_told(struct guest_procs_seen *s, const struct guest_proc_news *news);

#endif
