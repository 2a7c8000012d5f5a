/* SPDX-License-Identifier: MIT */
/*
 * The opreport-style table: per event a header line, then one row per
 * (image, symbol) or (pid, command, image, symbol), most samples first,
 * with caller chains under the top rows when asked.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "grow.h"
#include "report.h"
#include "utf8.h"

/* Callers shown per chain; deeper chains show their innermost callers after "...". */
#define CHAIN_DEPTH 8
#define COMM_WIDTH_MAX 16

struct row {
	uint32_t event, pid, comm, func;
	uint64_t count;
};

struct table {
	struct row *rows;
	size_t nr, cap;
	struct keymap index;
	const struct report_options *opt;
};

static void row_key(const struct table *t, const struct profile_sample *s, uint32_t func, uint64_t *a,
		    uint64_t *b)
{
	bool by_pid = t->opt->sort == REPORT_SORT_PID_IMAGE_SYMBOL;

	*a = (uint64_t)s->event << 32 | (by_pid ? s->comm : 0);
	*b = (by_pid ? (uint64_t)s->pid << 32 : 0) | func;
}

static int count_rows(struct table *t, const struct profile *p)
{
	size_t i;

	for (i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		uint32_t func = p->locs[p->frames[s->first_frame]].func;
		uint64_t a, b;
		int64_t v;

		row_key(t, s, func, &a, &b);
		v = keymap_get(&t->index, a, b);
		if (v < 0) {
			if (grow_array(&t->rows, &t->cap, t->nr + 1, sizeof(*t->rows)) ||
			    keymap_put(&t->index, a, b, (uint32_t)t->nr))
				return -ENOMEM;
			t->rows[t->nr] = (struct row){ s->event, s->pid, s->comm, func, 0 };
			v = (int64_t)t->nr++;
		}
		t->rows[v].count++;
	}
	return 0;
}

static int cmp_rows(const void *a, const void *b, void *arg)
{
	const struct row *x = a, *y = b;
	const struct profile *p = arg;
	int c;

	if (x->event != y->event)
		return x->event < y->event ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	/* Ties in a fixed order, so reports of the same data compare equal. */
	c = strcmp(p->images[p->funcs[x->func].image].name, p->images[p->funcs[y->func].image].name);
	if (!c)
		c = strcmp(report_func_name(p, x->func), report_func_name(p, y->func));
	if (!c && x->pid != y->pid)
		c = x->pid < y->pid ? -1 : 1;
	if (!c)
		c = strcmp(p->comms[x->comm], p->comms[y->comm]);
	return c;
}

/* Names come from the recorded system: keep terminal control characters out. */
static void put_clean(FILE *out, const char *s, int width)
{
	int n = 0;

	for (; *s; n++) {
		size_t l = utf8_printable_len(s);

		if (l)
			fwrite(s, 1, l, out);
		else
			fputc('?', out);
		s += l ? l : 1;
	}
	for (; n < width; n++)
		fputc(' ', out);
}

static void print_header(FILE *out, const struct profile_event *e)
{
	bool fallback = e->declared && (e->flags & KP_EVENT_FALLBACK);

	/* Under the fallback the samples are cpu-clock's: the event asked for is named as what it stood in for. */
	fprintf(out, "Event %s", fallback ? "cpu-clock" : e->name);
	if (e->declared) {
		if (e->flags & KP_EVENT_FREQ)
			fprintf(out, " (frequency %" PRIu64 " Hz", e->period);
		else
			fprintf(out, " (period %" PRIu64 "%s", e->period,
				fallback || events_is_clock(e->type, e->config) ? " ns" : "");
		if (fallback)
			fprintf(out, "; standing in for %s: no hardware PMU", e->name);
		fputc(')', out);
	}
	fprintf(out, ": %" PRIu64 " samples, %" PRIu64 " lost\n", e->samples, e->lost);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static int cmp_stacks(const void *a, const void *b)
{
	const struct report_stack *x = a, *y = b;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

static void print_chain(FILE *out, const struct profile *p, const struct report_stacks *rs,
			const struct report_stack *st, const struct row *r)
{
	const uint32_t *ids = &rs->ids[st->first];
	uint32_t n = st->nr, i;
	uint32_t leaf_image = p->funcs[r->func].image;

	if (!n) {
		fputs("(no callers recorded)", out);
		return;
	}
	/* Outermost caller first, down to the row's symbol; the last id may mark a cut chain. */
	if (ids[n - 1] == PROFILE_NONE) {
		fputs("... > ", out);
		n--;
	}
	for (i = n; i-- > 0;) {
		const struct profile_func *f = &p->funcs[ids[i]];

		put_clean(out, report_func_name(p, ids[i]), 0);
		if (f->image != leaf_image) {
			fputs(" [", out);
			put_clean(out, p->images[f->image].name, 0);
			fputc(']', out);
		}
		fputs(" > ", out);
	}
	put_clean(out, report_func_name(p, r->func), 0);
}

static int print_callgraph(FILE *out, const struct profile *p, struct table *t, const struct row *rows,
			   size_t nrows, const struct report_options *opt)
{
	unsigned max_rows = opt->callgraph_rows ? opt->callgraph_rows : 10;
	unsigned max_chains = opt->callgraph_chains ? opt->callgraph_chains : 5;
	struct report_stacks rs = { 0 };
	size_t base = (size_t)(rows - t->rows), i, j;
	int rc = 0;

	if (nrows > max_rows)
		nrows = max_rows;
	/* Rows were sorted: find each sample's row by key again, then count its caller chain. */
	for (i = 0; i < p->nr_samples && !rc; i++) {
		const struct profile_sample *s = &p->samples[i];
		const uint32_t *frames = &p->frames[s->first_frame];
		uint32_t ids[CHAIN_DEPTH + 1], n = 0, f;
		uint64_t a, b;
		int64_t v;

		if (s->event != rows[0].event)
			continue;
		row_key(t, s, p->locs[frames[0]].func, &a, &b);
		v = keymap_get(&t->index, a, b);
		if (v < 0 || (size_t)v < base || (size_t)v - base >= nrows)
			continue;
		v -= (int64_t)base;
		for (f = 1; f < s->nr_frames && n < CHAIN_DEPTH; f++)
			ids[n++] = p->locs[frames[f]].func;
		if (f < s->nr_frames)
			ids[n++] = PROFILE_NONE;
		rc = report_stacks_add(&rs, (uint32_t)v, ids, n, s->period);
	}
	if (rc)
		goto out;
	if (rs.nr > 1)
		qsort(rs.stacks, rs.nr, sizeof(*rs.stacks), cmp_stacks);
	for (i = 0, j = 0; i < nrows; i++) {
		uint64_t other = 0;
		unsigned k = 0;

		fprintf(out, "\n%8" PRIu64 " %6.2f%%  ", rows[i].count, pct(rows[i].count, p->events[rows[i].event].samples));
		put_clean(out, p->images[p->funcs[rows[i].func].image].name, 0);
		fputs("  ", out);
		put_clean(out, report_func_name(p, rows[i].func), 0);
		fputc('\n', out);
		for (; j < rs.nr && rs.stacks[j].group == i; j++) {
			if (k++ >= max_chains) {
				other += rs.stacks[j].count;
				continue;
			}
			fprintf(out, "          %6.2f%%  ", pct(rs.stacks[j].count, rows[i].count));
			print_chain(out, p, &rs, &rs.stacks[j], &rows[i]);
			fputc('\n', out);
		}
		if (other)
			fprintf(out, "          %6.2f%%  (%u other call chains)\n", pct(other, rows[i].count),
				k - max_chains);
	}
out:
	report_stacks_free(&rs);
	return rc;
}

static int print_event(FILE *out, const struct profile *p, struct table *t, const struct row *rows, size_t nrows,
		       const struct report_options *opt)
{
	const struct profile_event *e = &p->events[rows ? rows[0].event : 0];
	bool by_pid = opt->sort == REPORT_SORT_PID_IMAGE_SYMBOL;
	int iw = 5, cw = 7;
	size_t i;

	for (i = 0; i < nrows; i++) {
		int l = (int)strlen(p->images[p->funcs[rows[i].func].image].name);

		if (l > iw)
			iw = l;
		l = (int)strlen(p->comms[rows[i].comm]);
		if (l > cw)
			cw = l < COMM_WIDTH_MAX ? l : COMM_WIDTH_MAX;
	}
	fprintf(out, " samples       %%  ");
	if (by_pid)
		fprintf(out, "%7s  %-*s  ", "pid", cw, "command");
	fprintf(out, "%-*s  symbol\n", iw, "image");
	for (i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];

		fprintf(out, "%8" PRIu64 " %6.2f%%  ", r->count, pct(r->count, e->samples));
		if (by_pid) {
			fprintf(out, "%7u  ", r->pid);
			put_clean(out, p->comms[r->comm], cw);
			fputs("  ", out);
		}
		put_clean(out, p->images[p->funcs[r->func].image].name, iw);
		fputs("  ", out);
		put_clean(out, report_func_name(p, r->func), 0);
		fputc('\n', out);
	}
	if (e->unresolved)
		fprintf(out, "# %" PRIu64 " of %" PRIu64 " samples (%.2f%%) have no symbol\n", e->unresolved,
			e->samples, pct(e->unresolved, e->samples));
	if (opt->callgraph && nrows) {
		fputs("\nCallers of the top symbols (outermost first):\n", out);
		return print_callgraph(out, p, t, rows, nrows, opt);
	}
	return 0;
}

int report_text(FILE *out, const struct profile *p, const struct report_options *opt)
{
	struct table t = { .opt = opt };
	size_t i, start;
	uint32_t ev;
	int rc;

	rc = count_rows(&t, p);
	if (rc)
		goto out;
	if (t.nr > 1)
		qsort_r(t.rows, t.nr, sizeof(*t.rows), cmp_rows, (void *)p);
	/* Sorting moved the rows: index them again for the call-chain pass. */
	keymap_free(&t.index);
	for (i = 0; i < t.nr && !rc; i++) {
		const struct row *r = &t.rows[i];
		bool by_pid = opt->sort == REPORT_SORT_PID_IMAGE_SYMBOL;

		rc = keymap_put(&t.index, (uint64_t)r->event << 32 | (by_pid ? r->comm : 0),
				(by_pid ? (uint64_t)r->pid << 32 : 0) | r->func, (uint32_t)i);
	}
	if (rc)
		goto out;
	for (ev = 0, start = 0; ev < p->nr_events && !rc; ev++) {
		size_t end = start;

		while (end < t.nr && t.rows[end].event == ev)
			end++;
		if (ev)
			fputc('\n', out);
		if (end == start) {
			print_header(out, &p->events[ev]);
			continue;
		}
		print_header(out, &p->events[ev]);
		/* Row indices in the call-chain pass are relative to this event's first row. */
		rc = print_event(out, p, &t, &t.rows[start], end - start, opt);
		start = end;
	}
	if (!rc && p->lost)
		fprintf(out, "\n# %" PRIu64 " samples lost in all\n", p->lost);
out:
	free(t.rows);
	keymap_free(&t.index);
	if (!rc && (fflush(out) || ferror(out)))
		rc = -EIO;
	return rc;
}
