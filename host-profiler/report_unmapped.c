/* SPDX-License-Identifier: MIT */
/*
 * The note under kvmprof report's table that says why a guest process has
 * no symbols: its pid has no memory map in the guest export.
 *
 * A Linux guest's processes are named from their task_structs while the
 * recording runs (libvirt) or by the VMM's guest sampler, but their code
 * is symbolized through the maps of a `kvmprof-agent export`, which holds
 * the processes running when it was taken. A process started later is
 * named, and every user sample of it lands in "[unknown]": without this
 * note the report did not say why, even with the binary under
 * --guest-root.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "host_report.h"
#include "common/keymap.h"
#include "common/utf8.h"

/* The processes named in full; the rest are counted. */
#define UNMAPPED_LISTED 10

struct unmapped {
	uint32_t pid, comm;
	uint64_t samples;
};

static int cmp_unmapped(const void *a, const void *b)
{
	const struct unmapped *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/*
 * The guest user samples of named processes (pid 0 is the guest's idle
 * task, HOST_CPL_UNKNOWN samples no process at all) that have no map, by
 * (pid, command). 0 or -ENOMEM.
 */
static int collect(const struct profile *p, struct unmapped **out, size_t *nr)
{
	struct keymap index = KEYMAP_INIT;
	size_t cap = 0;
	uint32_t last_pid = 0;
	bool last_mapped = true;

	*out = NULL;
	*nr = 0;
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		int64_t v;

		if (s->domain != KP_DOMAIN_GUEST || s->cpl != KP_CPL_USER || !s->pid)
			continue;
		/* A process's samples come in runs: one map lookup per run. */
		if (s->pid != last_pid) {
			last_pid = s->pid;
			last_mapped = profile_process_mapped(p, s->pid, KP_DOMAIN_GUEST);
		}
		if (last_mapped)
			continue;
		v = keymap_get(&index, s->pid, s->comm);
		if (v < 0) {
			if (grow_array(out, &cap, *nr + 1, sizeof(**out)) || keymap_put(&index, s->pid, s->comm, (uint32_t)*nr))
				goto fail;
			(*out)[*nr] = (struct unmapped){ .pid = s->pid, .comm = s->comm };
			v = (int64_t)(*nr)++;
		}
		(*out)[v].samples++;
	}
	keymap_free(&index);
	return 0;
fail:
	keymap_free(&index);
	free(*out);
	*out = NULL;
	*nr = 0;
	return -ENOMEM;
}

void host_report_unmapped_note(FILE *out, const struct profile *p)
{
	const char *export = profile_guest_export(p);
	struct unmapped *u;
	uint64_t rest = 0;
	size_t n;

	/* Without an export no guest process has maps, and the remedy would be another. */
	if (!export)
		return;
	if (collect(p, &u, &n)) {
		fputs("\n(the guest processes with no memory map in the guest export could not be listed: out of memory)\n",
		      out);
		return;
	}
	if (!n)
		return;
	qsort(u, n, sizeof(*u), cmp_unmapped);
	fputs("\nguest processes with no memory map in the guest export, their code without symbols:", out);
	for (size_t i = 0; i < n; i++) {
		/* The command as the table tags it ("[guest] hotloop"): the guest's own name after the tag. */
		const char *comm = p->comms[u[i].comm], *sp = strchr(comm, ' ');
		char name[96];

		if (i >= UNMAPPED_LISTED) {
			rest += u[i].samples;
			continue;
		}
		snprintf(name, sizeof(name), "%s", sp && comm[0] == '[' ? sp + 1 : comm);
		utf8_sanitize(name, '?', NULL); /* the guest names its processes */
		fprintf(out, "%s %s [%" PRIu32 "] (%" PRIu64 " sample%s)", i ? "," : "", name, u[i].pid, u[i].samples,
			u[i].samples == 1 ? "" : "s");
	}
	if (rest)
		fprintf(out, " and %zu more (%" PRIu64 " samples)", n - UNMAPPED_LISTED, rest);
	fprintf(out, "\n(started after the export %s was taken: run kvmprof-agent export in the guest while %s, "
		     "and report with that export)\n", export, n == 1 ? "it runs" : "they run");
	free(u);
}
