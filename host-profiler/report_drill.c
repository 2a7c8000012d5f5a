/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof report --drill [START]`: CrossWalk's walk (Mirgorodskiy and
 * Miller) over the cross-layer stacks. The samples become one call tree:
 * the process (the guest process that caused the work, for host samples
 * joined to a VM exit), then frames outermost first through guest user
 * code, the guest kernel, the exit, the VMM and the host kernel. From the
 * start the walk follows the heaviest child, listing the others that hold
 * at least the threshold, and stops at the frame whose own (self) time
 * outweighs every child: the ultimate bottleneck.
 *
 * START: a process name (the whole process) or a function name, as
 * "symbol" or "image`symbol"; for a function, each sample's stack is taken
 * from its outermost frame of that function, so recursion and many
 * callers merge (a caller-independent subtree).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "host_report.h"
#include "common/keymap.h"
#include "report/report.h"
#include "common/utf8.h"

#define ROOT 0u

/* Node keys: a function id, or with this bit set an index into the tree's processes. */
#define KEY_PROCESS (1ull << 63)
#define KEY_NONE UINT64_MAX

struct dnode {
	uint32_t parent, first_child, next_sibling;
	uint64_t key;
	uint64_t incl, self;
};

/* A process as the walk names it: a guest's and the host's pid 1 are two. */
struct dproc {
	uint32_t pid, comm;
	uint8_t domain;
};

struct tree {
	struct dnode *n;
	size_t nr, cap;
	struct keymap index;
	struct dproc *procs;
	size_t nr_procs, procs_cap;
	struct keymap proc_index;
};

static uint32_t child(struct tree *t, uint32_t parent, uint64_t key)
{
	int64_t v = keymap_get(&t->index, parent, key);

	if (v >= 0)
		return (uint32_t)v;
	if (grow_array(&t->n, &t->cap, t->nr + 1, sizeof(*t->n)) || keymap_put(&t->index, parent, key, (uint32_t)t->nr))
		return PROFILE_NONE;
	t->n[t->nr] = (struct dnode){ .parent = parent, .first_child = PROFILE_NONE, .next_sibling = PROFILE_NONE,
				      .key = key };
	return (uint32_t)t->nr++;
}

/* The process a sample's work belongs to (the guest process behind an exit, else its own): its key, or KEY_NONE. */
static uint64_t process_key(struct tree *t, const struct profile *p, const struct profile_sample *s)
{
	struct dproc d = { s->pid, s->comm, s->domain };
	int64_t v;

	if (s->exit != PROFILE_NONE)
		d = (struct dproc){ p->exits[s->exit].pid, p->exits[s->exit].comm, KP_DOMAIN_GUEST };
	v = keymap_get(&t->proc_index, (uint64_t)d.domain << 32 | d.pid, d.comm);
	if (v >= 0)
		return KEY_PROCESS | (uint64_t)v;
	if (grow_array(&t->procs, &t->procs_cap, t->nr_procs + 1, sizeof(*t->procs)) ||
	    keymap_put(&t->proc_index, (uint64_t)d.domain << 32 | d.pid, d.comm, (uint32_t)t->nr_procs))
		return KEY_NONE;
	t->procs[t->nr_procs] = d;
	return KEY_PROCESS | t->nr_procs++;
}

static void process_label(char *buf, size_t len, const struct profile *p, const struct tree *t, uint64_t key)
{
	const struct dproc *d = &t->procs[key & ~KEY_PROCESS];

	snprintf(buf, len, "%s [%u] (%s)", p->comms[d->comm], d->pid,
		 d->domain == KP_DOMAIN_GUEST ? "guest process" : "host process");
}

static bool process_matches(const struct profile *p, const struct tree *t, uint64_t key, const char *start)
{
	return !strcmp(p->comms[t->procs[key & ~KEY_PROCESS].comm], start);
}

static bool func_matches(const struct profile *p, uint32_t func, const char *start)
{
	const char *name = report_func_name(p, func), *tick = strchr(start, '`');
	const char *image = p->images[p->funcs[func].image].name;

	if (!tick)
		return !strcmp(name, start);
	return !strcmp(name, tick + 1) && strlen(image) == (size_t)(tick - start) &&
	       !strncmp(image, start, (size_t)(tick - start));
}

/* Adds one sample's path; frames outermost first from `from` (an index into its frames, innermost 0). */
static int add_path(struct tree *t, const struct profile *p, const struct profile_sample *s, uint32_t node,
		    int64_t from)
{
	t->n[node].incl++;
	for (int64_t i = from; i >= 0; i--) {
		node = child(t, node, p->locs[p->frames[s->first_frame + (size_t)i]].func);
		if (node == PROFILE_NONE)
			return -ENOMEM;
		t->n[node].incl++;
	}
	t->n[node].self++;
	return 0;
}

/* Builds the tree under ROOT from the samples START selects; how many it took, or -errno. */
static int64_t build(struct tree *t, const struct profile *p, const char *start)
{
	bool by_process = false;
	int64_t taken = 0;

	/* The root is no one's child: not in the index. */
	if (grow_array(&t->n, &t->cap, 1, sizeof(*t->n)))
		return -ENOMEM;
	t->n[ROOT] = (struct dnode){ .parent = PROFILE_NONE, .first_child = PROFILE_NONE, .next_sibling = PROFILE_NONE,
				     .key = KEY_PROCESS };
	t->nr = 1;
	for (size_t i = 0; start && i < p->nr_samples && !by_process; i++) {
		uint64_t pk = process_key(t, p, &p->samples[i]);

		if (pk == KEY_NONE)
			return -ENOMEM;
		by_process = process_matches(p, t, pk, start);
	}
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		uint64_t pk = process_key(t, p, s);
		int64_t from = (int64_t)s->nr_frames - 1;
		uint32_t node = ROOT;

		if (start && by_process) {
			if (pk == KEY_NONE)
				return -ENOMEM;
			if (!process_matches(p, t, pk, start))
				continue;
		} else if (start) {
			while (from >= 0 && !func_matches(p, p->locs[p->frames[s->first_frame + (size_t)from]].func, start))
				from--;
			if (from < 0)
				continue;
			/* The START frame is the root: its subtree is what the walk reads. */
			t->n[ROOT].key = p->locs[p->frames[s->first_frame + (size_t)from]].func;
			from--;
		} else {
			t->n[ROOT].incl++;
			node = child(t, ROOT, pk);
			if (node == PROFILE_NONE)
				return -ENOMEM;
		}
		if (add_path(t, p, s, node, from))
			return -ENOMEM;
		taken++;
	}
	for (size_t i = t->nr; i-- > 1;) {
		struct dnode *d = &t->n[i];

		d->next_sibling = t->n[d->parent].first_child;
		t->n[d->parent].first_child = (uint32_t)i;
	}
	return taken;
}

static void node_label(char *buf, size_t len, const struct profile *p, const struct tree *t, uint32_t i,
		       const char *start)
{
	uint64_t key = t->n[i].key;

	if (i == ROOT && !start)
		snprintf(buf, len, "all (the whole recording: the VM, the VMM, the host kernel for both)");
	else if (i == ROOT && key == KEY_PROCESS)
		snprintf(buf, len, "%s (process)", start);
	else if (key & KEY_PROCESS)
		process_label(buf, len, p, t, key);
	else if (p->images[p->funcs[key].image].vm_exit)
		snprintf(buf, len, "%s", report_func_name(p, (uint32_t)key));
	else
		snprintf(buf, len, "%s`%s", p->images[p->funcs[key].image].name, report_func_name(p, (uint32_t)key));
	/* Names are the recorded systems' (a guest's): nothing for the terminal. */
	utf8_sanitize(buf, '?', NULL);
}

static const char *node_layer(const struct profile *p, const struct tree *t, uint32_t i, const char *start)
{
	uint64_t key = t->n[i].key;

	if (i == ROOT && !start)
		return "";
	return key & KEY_PROCESS ? "process" : host_frame_layer(p, (uint32_t)key);
}

/* Whether child a goes before child b among equals: processes by (domain, pid, command), functions by id. */
static bool before(const struct tree *t, uint32_t a, uint32_t b)
{
	uint64_t ka = t->n[a].key, kb = t->n[b].key;

	if ((ka & KEY_PROCESS) && (kb & KEY_PROCESS)) {
		const struct dproc *x = &t->procs[ka & ~KEY_PROCESS], *y = &t->procs[kb & ~KEY_PROCESS];

		if (x->domain != y->domain)
			return x->domain < y->domain;
		if (x->pid != y->pid)
			return x->pid < y->pid;
		return x->comm < y->comm;
	}
	return ka < kb;
}

/* The heaviest child (ties: by before(), for output that does not change from run to run). */
static uint32_t heaviest(const struct tree *t, uint32_t i)
{
	uint32_t best = PROFILE_NONE;

	for (uint32_t c = t->n[i].first_child; c != PROFILE_NONE; c = t->n[c].next_sibling)
		if (best == PROFILE_NONE || t->n[c].incl > t->n[best].incl ||
		    (t->n[c].incl == t->n[best].incl && before(t, c, best)))
			best = c;
	return best;
}

static double pct(uint64_t n, uint64_t total)
{
	return total ? 100.0 * (double)n / (double)total : 0.0;
}

/* The other children worth a look: at least the threshold, heaviest first, at most 4. */
static void print_others(FILE *out, const struct profile *p, const struct tree *t, uint32_t i, uint32_t chosen,
			 uint64_t total, uint64_t min, const char *start)
{
	uint32_t shown[4] = { 0 };
	size_t n = 0;
	char label[320];

	while (n < 4) {
		uint32_t best = PROFILE_NONE;

		for (uint32_t c = t->n[i].first_child; c != PROFILE_NONE; c = t->n[c].next_sibling) {
			bool seen = c == chosen;

			for (size_t k = 0; k < n; k++)
				seen |= shown[k] == c;
			if (!seen && t->n[c].incl >= min && t->n[c].incl &&
			    (best == PROFILE_NONE || t->n[c].incl > t->n[best].incl))
				best = c;
		}
		if (best == PROFILE_NONE)
			break;
		shown[n++] = best;
		node_label(label, sizeof(label), p, t, best, start);
		fprintf(out, "%25s also %5.1f%%  %s\n", "", pct(t->n[best].incl, total), label);
	}
}

int host_report_drill(FILE *out, struct profile *p, const char *start, double threshold)
{
	struct tree t = { 0 };
	uint32_t path[4096], np = 0, i = ROOT;
	char label[320];
	uint64_t total, min;
	int64_t taken;
	int rc = 0;

	taken = build(&t, p, start);
	if (taken < 0) {
		rc = (int)taken;
		goto out;
	}
	if (!taken) {
		if (start)
			fprintf(stderr, "kvmprof report: --drill: '%s' is neither a process name nor a function "
					"(\"symbol\" or \"image`symbol\") in any sample's stack\n", start);
		else
			fprintf(stderr, "kvmprof report: --drill: the recording has no samples\n");
		rc = -ECANCELED;
		goto out;
	}
	total = t.n[ROOT].incl;
	min = (uint64_t)((double)total * threshold / 100.0 + 0.5);
	if (!min)
		min = 1;
	fprintf(out, "kvmprof drill-down from %s%s%s: %" PRIu64 " samples", start ? "'" : "the whole recording",
		start ? start : "", start ? "'" : "", total);
	if (start)
		fprintf(out, " (%.1f%% of all %zu)", pct(total, p->nr_samples), p->nr_samples);
	fprintf(out, "; %" PRIu64 " host samples joined to VM exits\n", p->exit_samples);
	fprintf(out, "Each step follows the heaviest child while it holds at least %.1f%% and outweighs the frame's own\n"
		     "time; shares are of the start: with callees (total) and the frame alone (self).\n\n",
		threshold);
	fprintf(out, "%5s %7s %7s  %-12s  %s\n", "step", "total", "self", "layer", "frame");
	for (;;) {
		uint32_t next = heaviest(&t, i);
		bool go = next != PROFILE_NONE && t.n[next].incl >= min && t.n[next].incl > t.n[i].self;

		node_label(label, sizeof(label), p, &t, i, start);
		fprintf(out, "%5u %6.1f%% %6.1f%%  %-12s  %s\n", np, pct(t.n[i].incl, total), pct(t.n[i].self, total),
			node_layer(p, &t, i, start), label);
		if (np < sizeof(path) / sizeof(path[0]))
			path[np++] = i;
		print_others(out, p, &t, i, go ? next : PROFILE_NONE, total, min, start);
		if (!go)
			break;
		i = next;
	}
	/* The bottom line: the layers the path crossed, and where it ended. */
	fprintf(out, "\npath by layer:");
	for (uint32_t k = 0; k < np; k++) {
		const char *layer = node_layer(p, &t, path[k], start);
		const char *prev = k ? node_layer(p, &t, path[k - 1], start) : NULL;
		uint64_t key = t.n[path[k]].key;

		if (!*layer || (key & KEY_PROCESS))
			continue;
		if (!prev || strcmp(prev, layer) != 0)
			fprintf(out, "\n  %s:", layer);
		else
			fprintf(out, " ->");
		fprintf(out, " %s", report_func_name(p, (uint32_t)key));
		if (!strcmp(layer, "VM exit"))
			fprintf(out, " (%.1f%%)", pct(t.n[path[k]].incl, total));
	}
	node_label(label, sizeof(label), p, &t, i, start);
	fprintf(out, "\nultimate bottleneck: %s, %s: %.1f%% self, %.1f%% with its callees\n", label,
		*node_layer(p, &t, i, start) ? node_layer(p, &t, i, start) : "the start", pct(t.n[i].self, total),
		pct(t.n[i].incl, total));
	if (ferror(out))
		rc = -EIO;
out:
	free(t.n);
	keymap_free(&t.index);
	free(t.procs);
	keymap_free(&t.proc_index);
	return rc;
}
