/* SPDX-License-Identifier: MIT */
/*
 * The opreport-style table: per event a header line, then the rows of the
 * --sort keys (report_table.c), most samples first, with caller chains
 * under the top rows when asked. The caller chains are kvmprof report's
 * too (report_table_callgraph).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "collection/events.h"
#include "report/report.h"

/* Callers shown per chain; deeper chains show their innermost callers after "...". */
#define CHAIN_DEPTH 8

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

/*
 * How often sampling was throttled, from META throttled (the bundled
 * guest's agent: a CPU's PMI budget for a tick ran out), as perf report
 * counts THROTTLE records; 0 without it or with a value that is no count.
 */
static uint64_t throttled(const struct profile *p)
{
	const char *v = profile_meta(p, "throttled");
	char *end;
	unsigned long long n;

	if (!v || *v < '0' || *v > '9')
		return 0;
	errno = 0;
	n = strtoull(v, &end, 10);
	return *end || errno ? 0 : n;
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

/*
 * Outermost caller first, down to the row's symbol (leaf: the row has one)
 * or, for rows of other keys, down to each sample's own function, which
 * the chain then holds as its first id. The last id may mark a cut chain.
 */
static void print_chain(FILE *out, const struct profile *p, const struct report_stacks *rs,
			const struct report_stack *st, uint32_t leaf)
{
	const uint32_t *ids = &rs->ids[st->first];
	uint32_t n = st->nr, i, leaf_image;
	bool own_leaf = leaf == PROFILE_NONE;

	if (own_leaf) {
		leaf = ids[0];
		ids++;
		n--;
	}
	leaf_image = p->funcs[leaf].image;
	if (!n) {
		fputs("(no callers recorded)", out);
		if (own_leaf) {
			fputs(": ", out);
			report_put_clean(out, report_func_name(p, leaf), 0);
		}
		return;
	}
	if (ids[n - 1] == PROFILE_NONE) {
		fputs("... > ", out);
		n--;
	}
	for (i = n; i-- > 0;) {
		const struct profile_func *f = &p->funcs[ids[i]];

		report_put_clean(out, report_func_name(p, ids[i]), 0);
		if (f->image != leaf_image) {
			fputs(" [", out);
			report_put_clean(out, p->images[f->image].name, 0);
			fputc(']', out);
		}
		fputs(" > ", out);
	}
	report_put_clean(out, report_func_name(p, leaf), 0);
}

int report_table_callgraph(FILE *out, const struct profile *p, const struct report_table *t, size_t first,
			   size_t nrows, uint64_t whole, const struct report_table_options *o, unsigned callgraph_rows,
			   unsigned callgraph_chains)
{
	unsigned max_rows = callgraph_rows ? callgraph_rows : 10;
	unsigned max_chains = callgraph_chains ? callgraph_chains : 5;
	bool by_sym = report_keys_has(&o->keys, REPORT_KEY_SYM);
	struct report_stacks rs = { 0 };
	size_t i, j;
	int rc = 0;

	if (!t->sample_row)
		return -EINVAL; /* built without sample_rows */
	if (nrows > max_rows)
		nrows = max_rows;
	for (i = 0; i < p->nr_samples && !rc; i++) {
		const struct profile_sample *s = &p->samples[i];
		const uint32_t *frames = &p->frames[s->first_frame];
		uint32_t ids[CHAIN_DEPTH + 2], n = 0, f, row = t->sample_row[i];

		if (row == PROFILE_NONE || row < first || row - first >= nrows)
			continue;
		if (!by_sym)
			ids[n++] = p->locs[frames[0]].func;
		for (f = 1; f < s->nr_frames && n < CHAIN_DEPTH + (by_sym ? 0u : 1u); f++)
			ids[n++] = p->locs[frames[f]].func;
		if (f < s->nr_frames)
			ids[n++] = PROFILE_NONE;
		rc = report_stacks_add(&rs, (uint32_t)(row - first), ids, n, s->period);
	}
	if (rc)
		goto out;
	if (rs.nr > 1)
		qsort(rs.stacks, rs.nr, sizeof(*rs.stacks), cmp_stacks);
	for (i = 0, j = 0; i < nrows; i++) {
		const struct report_row *r = &t->rows[first + i];
		uint64_t other = 0;
		unsigned k = 0;

		fprintf(out, "\n%8" PRIu64 " %6.2f%%  ", r->count, whole ? 100.0 * (double)r->count / (double)whole : 0.0);
		if (by_sym) {
			/* What the chains end in: the row's function. */
			report_put_clean(out, p->images[r->image].name, 0);
			fputs("  ", out);
			report_put_clean(out, report_func_name(p, r->func), 0);
		} else {
			report_table_print_keys(out, p, r, o);
		}
		fputc('\n', out);
		for (; j < rs.nr && rs.stacks[j].group == i; j++) {
			if (k++ >= max_chains) {
				other += rs.stacks[j].count;
				continue;
			}
			fprintf(out, "          %6.2f%%  ", r->count ? 100.0 * (double)rs.stacks[j].count / (double)r->count : 0.0);
			print_chain(out, p, &rs, &rs.stacks[j], by_sym ? r->func : PROFILE_NONE);
			fputc('\n', out);
		}
		if (other)
			fprintf(out, "          %6.2f%%  (%u other call chains)\n",
				r->count ? 100.0 * (double)other / (double)r->count : 0.0, k - max_chains);
	}
out:
	report_stacks_free(&rs);
	return rc;
}

int report_text(FILE *out, const struct profile *p, const struct report_options *opt)
{
	struct report_table_options o = opt->table;
	struct report_table t;
	size_t start = 0;
	uint32_t ev;
	int rc;

	o.per_event = true;
	o.sample_rows = opt->callgraph;
	rc = report_table_build(&t, p, &o);
	if (rc)
		return rc;
	for (ev = 0; ev < p->nr_events && !rc; ev++) {
		const struct profile_event *e = &p->events[ev];
		/* Shares are of the event's recorded samples (perf's --percentage absolute) or of those kept (relative). */
		uint64_t whole = report_table_whole(&o, t.kept[ev], e->samples);
		size_t end = start, shown;

		while (end < t.nr && t.rows[end].event == ev)
			end++;
		if (ev)
			fputc('\n', out);
		print_header(out, e);
		/* A filter that kept nothing of an event says so too. */
		if (end > start || t.total[ev])
			report_table_print_filter(out, &o, t.kept[ev], t.total[ev]);
		if (end == start)
			continue;
		rc = report_table_print(out, p, &t, start, end - start, whole, &o, REPORT_STYLE_AGENT);
		if (!rc && e->unresolved)
			fprintf(out, "# %" PRIu64 " of %" PRIu64 " samples (%.2f%%) have no symbol\n", e->unresolved,
				e->samples, pct(e->unresolved, e->samples));
		shown = report_table_shown(&t, start, end - start, whole, &o);
		if (!rc && opt->callgraph && shown) {
			fputs(report_keys_has(&o.keys, REPORT_KEY_SYM) ? "\nCallers of the top symbols (outermost first):\n"
									     : "\nCall chains of the top rows (outermost first):\n",
			      out);
			rc = report_table_callgraph(out, p, &t, start, shown, whole, &o, opt->callgraph_rows,
						    opt->callgraph_chains);
		}
		start = end;
	}
	if (!rc && p->lost)
		fprintf(out, "\n# %" PRIu64 " samples lost in all\n", p->lost);
	if (!rc && throttled(p))
		fprintf(out, "\n# sampling throttled %" PRIu64 " times (a CPU's PMI budget for a tick ran out)\n",
			throttled(p));
	report_table_free(&t);
	if (!rc && (fflush(out) || ferror(out)))
		rc = -EIO;
	return rc;
}
