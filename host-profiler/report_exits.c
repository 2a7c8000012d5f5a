/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof report --exits`: the exit cost table. Every recorded VM exit
 * counts once for the guest function at its RIP (and its guest process)
 * with its reason, and brings its host interval: from KVM_RUN's return to
 * the vCPU's next entry. The host samples joined to it split that time
 * into VMM user and host kernel (samples x their period, in ns for the
 * clock events); waiting is the rest: the vCPU thread off CPU (blocked,
 * preempted) or work too short for the sampling rate to see.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "host_report.h"
#include "common/keymap.h"
#include "report/report.h"
#include "common/utf8.h"

struct exit_row {
	uint32_t func, comm, pid; /* PROFILE_NONE where the table does not split by it */
	uint8_t kind;
	uint64_t detail;
	uint64_t exits, host_ns, user_ns, kernel_ns, samples;
};

struct exit_table {
	struct exit_row *rows;
	size_t nr, cap;
	struct keymap index;
};

/* The ns one host sample stands for: its period for the clock events, 1/rate for other frequencies. */
static uint64_t sample_ns(const struct profile *p, const struct profile_sample *s)
{
	const struct profile_event *e = &p->events[s->event];

	if (e->type == PERF_TYPE_SOFTWARE &&
	    (e->config == PERF_COUNT_SW_CPU_CLOCK || e->config == PERF_COUNT_SW_TASK_CLOCK))
		return s->period;
	if ((e->flags & KP_EVENT_FREQ) && e->period)
		return 1000000000ull / e->period;
	return 0;
}

static struct exit_row *row(struct exit_table *t, uint32_t func, uint32_t comm, uint32_t pid, uint8_t kind,
			    uint64_t detail)
{
	const uint64_t key[4] = { (uint64_t)func << 32 | comm, pid, kind, detail };
	uint64_t h = keymap_hash(key, sizeof(key), 5), k;

	/* Hash collisions chain through the second key, as profile_intern's do. */
	for (k = 0;; k++) {
		int64_t v = keymap_get(&t->index, h, k);
		struct exit_row *r;

		if (v < 0)
			break;
		r = &t->rows[v];
		if (r->func == func && r->comm == comm && r->pid == pid && r->kind == kind && r->detail == detail)
			return r;
	}
	if (grow_array(&t->rows, &t->cap, t->nr + 1, sizeof(*t->rows)) || keymap_put(&t->index, h, k, (uint32_t)t->nr))
		return NULL;
	t->rows[t->nr] = (struct exit_row){ .func = func, .comm = comm, .pid = pid, .kind = kind, .detail = detail };
	return &t->rows[t->nr++];
}

static int cmp_rows(const void *a, const void *b)
{
	const struct exit_row *x = a, *y = b;

	if (x->host_ns != y->host_ns)
		return x->host_ns > y->host_ns ? -1 : 1;
	if (x->exits != y->exits)
		return x->exits > y->exits ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->detail != y->detail)
		return x->detail < y->detail ? -1 : 1;
	if (x->func != y->func)
		return x->func < y->func ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

enum split { BY_REASON, BY_FUNCTION, BY_PROCESS };

/* One table: exits and their host samples, grouped as `split` says. */
static int fill(struct exit_table *t, const struct profile *p, enum split split)
{
	uint32_t *of_exit = calloc(p->nr_exits ? p->nr_exits : 1, sizeof(*of_exit)); /* rows move as they grow */

	if (!of_exit)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_exits; i++) {
		const struct profile_exit *x = &p->exits[i];
		uint32_t func = split == BY_FUNCTION ? p->locs[p->frames[x->first_frame]].func : PROFILE_NONE;
		uint32_t comm = split == BY_REASON ? PROFILE_NONE : x->comm;
		uint32_t pid = split == BY_REASON ? PROFILE_NONE : x->pid;
		struct exit_row *r = row(t, func, comm, pid, split == BY_PROCESS ? 0 : x->kind,
					 split == BY_PROCESS ? 0 : x->detail);

		if (!r) {
			free(of_exit);
			return -ENOMEM;
		}
		r->exits++;
		r->host_ns += x->end - x->time;
		of_exit[i] = (uint32_t)(r - t->rows);
	}
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		struct exit_row *r;

		if (s->exit == PROFILE_NONE)
			continue;
		r = &t->rows[of_exit[s->exit]];
		r->samples++;
		if (s->cpl == KP_CPL_KERNEL)
			r->kernel_ns += sample_ns(p, s);
		else
			r->user_ns += sample_ns(p, s);
	}
	free(of_exit);
	if (t->nr > 1)
		qsort(t->rows, t->nr, sizeof(*t->rows), cmp_rows);
	return 0;
}

static void print_table(FILE *out, const struct profile *p, const struct exit_table *t, enum split split)
{
	char reason[48], proc[64];

	fprintf(out, "%9s %10s %10s %10s %10s %8s", "exits", "host ms", "VMM user", "host kern", "waiting", "samples");
	if (split != BY_PROCESS)
		fprintf(out, "  %-20s", "reason");
	if (split != BY_REASON)
		fprintf(out, "  %-24s", "guest process");
	if (split == BY_FUNCTION)
		fprintf(out, "  %s", "guest function at the exit");
	fputc('\n', out);
	for (size_t i = 0; i < t->nr; i++) {
		const struct exit_row *r = &t->rows[i];
		uint64_t busy = r->user_ns + r->kernel_ns, wait = r->host_ns > busy ? r->host_ns - busy : 0;

		fprintf(out, "%9" PRIu64 " %10.2f %10.2f %10.2f %10.2f %8" PRIu64, r->exits, (double)r->host_ns / 1e6,
			(double)r->user_ns / 1e6, (double)r->kernel_ns / 1e6, (double)wait / 1e6, r->samples);
		if (split != BY_PROCESS) {
			profile_exit_describe(reason, sizeof(reason), r->kind, r->detail);
			fprintf(out, "  %-20s", reason);
		}
		if (split != BY_REASON) {
			snprintf(proc, sizeof(proc), "%s [%u]", p->comms[r->comm], r->pid);
			/* The guest named its process: nothing for the terminal. */
			utf8_sanitize(proc, '?', NULL);
			fprintf(out, "  %-24s", proc);
		}
		if (split == BY_FUNCTION) {
			char frame[320];

			report_frame(frame, sizeof(frame), p, r->func);
			fprintf(out, "  %s", frame);
		}
		fputc('\n', out);
	}
}

int host_report_exits(FILE *out, const struct profile *p)
{
	static const char *const titles[] = { "by reason", "by guest function (at the exit's RIP) and reason",
					      "by guest process" };
	const char *dropped = profile_meta(p, "vm_exits_dropped");
	uint64_t host_ns = 0;
	int rc = 0;

	for (size_t i = 0; i < p->nr_exits; i++)
		host_ns += p->exits[i].end - p->exits[i].time;
	fprintf(out, "kvmprof exit cost: %zu VM exits, %.2f ms of host time from exit to next entry; %" PRIu64
		     " host samples in those intervals\n",
		p->nr_exits, (double)host_ns / 1e6, p->exit_samples);
	if (!p->nr_exits) {
		const char *vmm = profile_meta(p, "vmm");

		if (vmm && !strcmp(vmm, "qemu"))
			fprintf(out, "(a libvirt domain's recording has no VM exit records: they come from kvmprof-vmm's "
				     "own exit hooks, and QEMU has none kvmprof can use)\n");
		else
			fprintf(out, "(the recording has no VM exit records: recorded with --no-exits or by a kvmprof "
				     "before sample file 1.4, or the VM made no exit while it ran)\n");
		return ferror(out) ? -EIO : 0;
	}
	fprintf(out, "host ms: exit to next entry; VMM user, host kern: the vCPU thread's host samples in those "
		     "intervals x their period; waiting: the rest (off CPU, or too short for the sampling rate).\n"
		     "Not here: %s exit records the VMM left out to keep ring room for samples, and records lost "
		     "in the rings (%" PRIu64 ", counted with the samples).\n",
		dropped ? dropped : "?", p->lost);
	for (enum split sp = BY_REASON; sp <= BY_PROCESS; sp++) {
		struct exit_table t = { 0 };

		rc = fill(&t, p, sp);
		if (!rc) {
			fprintf(out, "\n%s\n", titles[sp]);
			print_table(out, p, &t, sp);
		}
		free(t.rows);
		keymap_free(&t.index);
		if (rc)
			return rc;
	}
	return ferror(out) ? -EIO : 0;
}
