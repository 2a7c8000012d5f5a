// SPDX-License-Identifier: MIT
#include "guest_procs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "desc_reader.h"
#include "linux_task.h"

int guest_procs_current(const struct guest_os *os, const struct vmi_mem *mem, const struct guest_paging *pg,
			unsigned int cpu, int *desc_entry, struct guest_task *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (os->linux_layout) {
		rc = guest_linux_current(os->linux_layout, mem, pg, cpu, &out->gva, &out->pid, &out->tid);
	} else if (os->desc) {
		rc = guest_desc_current(os->desc, mem, pg, cpu, desc_entry, &out->gva, &out->pid);
		out->tid = out->pid;
	} else {
		rc = -ENOENT;
	}
	if (rc)
		memset(out, 0, sizeof(*out));
	return rc;
}

int guest_procs_seen_init(struct guest_procs_seen *s)
{
	s->n = 0;
	s->key = calloc(GUEST_PROCS_SLOTS, sizeof(*s->key));
	s->name_hash = calloc(GUEST_PROCS_SLOTS, sizeof(*s->name_hash));
	if (!s->key || !s->name_hash) {
		guest_procs_seen_free(s);
		return -ENOMEM;
	}
	return 0;
}

void guest_procs_seen_free(struct guest_procs_seen *s)
{
	free(s->key);
	free(s->name_hash);
	s->key = s->name_hash = NULL;
	s->n = 0;
}

/* The slot of pid, or of the free slot it would take (add); -1 when absent and not added (or full). */
static int seen_slot(const struct guest_procs_seen *s, uint32_t pid, bool add)
{
	uint32_t key = pid + 1, h = (pid * 2654435761u) & (GUEST_PROCS_SLOTS - 1);

	for (unsigned int probe = 0; probe < GUEST_PROCS_SLOTS; probe++, h = (h + 1) & (GUEST_PROCS_SLOTS - 1)) {
		if (s->key[h] == key)
			return (int)h;
		if (!s->key[h])
			return add && s->n < GUEST_PROCS_MAX ? (int)h : -1;
	}
	return -1;
}

/* FNV-1a of a name: a changed name (exec, prctl) is noticed by its hash. 0 is kept for "none". */
static uint32_t name_hash(const char *n)
{
	uint32_t h = 2166136261u;

	while (*n)
		h = (h ^ (unsigned char)*n++) * 16777619u;
	return h ? h : 1;
}

static void desc_news(const struct kp_guest_desc *d, const struct vmi_mem *mem, const struct guest_paging *pg,
		      uint64_t proc, struct guest_proc_news *news)
{
	struct guest_desc_proc info;

	guest_desc_proc_info(d, mem, pg, proc, &info);
	memcpy(news->comm, info.comm, sizeof(news->comm));
	news->has_text = info.path[0] && info.text_end > info.text_start;
	if (news->has_text) {
		memcpy(news->path, info.path, sizeof(news->path));
		news->text_start = info.text_start;
		news->text_len = info.text_end - info.text_start;
		news->text_pgoff = info.text_pgoff;
	}
}

bool guest_procs_news(const struct guest_procs_seen *s, const struct guest_os *os, const struct vmi_mem *mem,
		      const struct guest_paging *pg, const struct guest_task *task, struct guest_proc_news *news)
{
	int slot = seen_slot(s, task->pid, false);

	memset(news, 0, sizeof(*news));
	news->pid = task->pid;
	if (os->linux_layout) {
		/*
		 * Read at every sample, a page walk: a rename must be noticed, and
		 * this costs less than the forced exit every sample already costs.
		 * The mappings are not read here: they come from the agent's
		 * export, joined by tgid in the report.
		 */
		guest_linux_comm(os->linux_layout, mem, pg, task->gva, news->comm);
		news->name_hash = name_hash(news->comm);
		return slot < 0 || s->name_hash[slot] != news->name_hash;
	}
	if (slot >= 0 || !os->desc)
		return false;
	desc_news(os->desc, mem, pg, task->gva, news);
	news->name_hash = name_hash(news->comm);
	return true;
}

void guest_procs_comm(const struct guest_os *os, const struct vmi_mem *mem, const struct guest_paging *pg,
		      const struct guest_task *task, char comm[KP_COMM_MAX + 1])
{
	struct guest_desc_proc info;

	if (os->linux_layout) {
		guest_linux_comm(os->linux_layout, mem, pg, task->gva, comm);
	} else if (os->desc) {
		guest_desc_proc_info(os->desc, mem, pg, task->gva, &info);
		memcpy(comm, info.comm, KP_COMM_MAX + 1);
	} else {
		strcpy(comm, "[unknown]");
	}
}

void guest_procs_told(struct guest_procs_seen *s, const struct guest_proc_news *news)
{
	int slot = seen_slot(s, news->pid, true);

	if (slot < 0)
		return;
	if (!s->key[slot]) {
		s->key[slot] = news->pid + 1;
		s->n++;
	}
	s->name_hash[slot] = news->name_hash;
}
