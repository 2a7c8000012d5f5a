/* SPDX-License-Identifier: MIT */
/*
 * The report table: filter, group by the --sort keys, sort, print. A row's
 * key packs every key's value into the 128 bits a keymap takes (any
 * combination fits: a function implies its image, process and pid are the
 * same pair, and a thread implies its process), one hash lookup per sample; rows are then sorted most samples
 * first with ties in a fixed order (domain, image, symbol, process, command
 * names), so reports of the same data compare equal.
 */
#include "report/report_table.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/keymap.h"
#include "report/report.h"
#include "common/utf8.h"

#define COMM_WIDTH_MAX 16

static uint32_t leaf_func(const struct profile *p, const struct profile_sample *s)
{
	return p->locs[p->frames[s->first_frame]].func;
}

static uint32_t domain_of(const struct report_table_options *o, const struct profile *p,
			  const struct profile_sample *s)
{
	if (o->domain)
		return o->domain(p, s, o->ctx);
	return s->cpl == KP_CPL_KERNEL;
}

static const char *domain_name(const struct report_table_options *o, uint32_t d)
{
	if (o->domain_name)
		return o->domain_name(d, o->ctx);
	return d ? "kernel" : "user";
}

/* Which of a row's values its key holds, worked out once from the --sort keys. */
struct key_parts {
	bool by_proc, by_tid, by_comm, by_sym, by_dso;
};

static struct key_parts key_parts(const struct report_keys *k)
{
	struct key_parts kp = {
		.by_proc = report_keys_has(k, REPORT_KEY_PID) || report_keys_has(k, REPORT_KEY_PROCESS),
		.by_tid = report_keys_has(k, REPORT_KEY_TID),
		.by_sym = report_keys_has(k, REPORT_KEY_SYM),
		.by_dso = report_keys_has(k, REPORT_KEY_DSO),
	};

	kp.by_comm = kp.by_proc || kp.by_tid || report_keys_has(k, REPORT_KEY_COMM);
	return kp;
}

/*
 * The row key of a sample's values (r) for event ev: a holds the command
 * and the tid (with the tid key: a thread's tid names its process too, but
 * for a tid reused by another process within one recording) or the pid,
 * b the event (24 bits), domain (8) and the function or, without sym, the
 * image. Keys not in use are 0.
 */
static void row_key(const struct key_parts *kp, uint32_t ev, const struct report_row *r, uint64_t *a, uint64_t *b)
{
	uint32_t place = kp->by_sym ? r->func : kp->by_dso ? r->image : 0;

	*a = (uint64_t)(kp->by_comm ? r->comm : 0) << 32 | (kp->by_tid ? r->tid : kp->by_proc ? r->pid : 0);
	*b = (uint64_t)ev << 40 | (uint64_t)(r->domain & 0xff) << 32 | place;
}

static uint64_t key_value(enum report_key k, const struct report_row *r)
{
	switch (k) {
	case REPORT_KEY_COMM:
		return r->comm;
	case REPORT_KEY_PID:
	case REPORT_KEY_PROCESS:
		return (uint64_t)r->pid << 32 | r->comm;
	case REPORT_KEY_TID:
		return (uint64_t)r->tid << 32 | r->comm;
	case REPORT_KEY_DSO:
		return r->image;
	case REPORT_KEY_SYM:
		return r->func;
	case REPORT_KEY_DOMAIN:
		return r->domain;
	default:
		return 0;
	}
}

struct row_order {
	const struct profile *p;
	const struct report_table_options *o;
	const struct report_row *rows;
};

static int cmp_u32(uint32_t a, uint32_t b)
{
	return (a > b) - (a < b);
}

static int cmp_rows(const void *a, const void *b, void *arg)
{
	const struct row_order *ro = arg;
	const struct report_row *x = &ro->rows[*(const uint32_t *)a], *y = &ro->rows[*(const uint32_t *)b];
	const struct report_keys *k = &ro->o->keys;
	const struct profile *p = ro->p;
	int c;

	if (x->event != y->event)
		return x->event < y->event ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (report_keys_has(k, REPORT_KEY_DOMAIN) && (c = cmp_u32(x->domain, y->domain)))
		return c;
	if (report_keys_has(k, REPORT_KEY_DSO) && (c = strcmp(p->images[x->image].name, p->images[y->image].name)))
		return c;
	if (report_keys_has(k, REPORT_KEY_SYM) && (c = strcmp(report_func_name(p, x->func), report_func_name(p, y->func))))
		return c;
	if (report_keys_has(k, REPORT_KEY_PROCESS) &&
	    ((c = strcmp(p->comms[x->comm], p->comms[y->comm])) || (c = cmp_u32(x->pid, y->pid))))
		return c;
	if (report_keys_has(k, REPORT_KEY_PID) &&
	    ((c = cmp_u32(x->pid, y->pid)) || (c = strcmp(p->comms[x->comm], p->comms[y->comm]))))
		return c;
	if (report_keys_has(k, REPORT_KEY_TID) &&
	    ((c = cmp_u32(x->tid, y->tid)) || (c = strcmp(p->comms[x->comm], p->comms[y->comm]))))
		return c;
	if (report_keys_has(k, REPORT_KEY_COMM) && (c = strcmp(p->comms[x->comm], p->comms[y->comm])))
		return c;
	/* Equal names (a symbol's image when dso is not a key; two static functions of one name). */
	if ((c = strcmp(p->images[x->image].name, p->images[y->image].name)))
		return c;
	for (unsigned i = 0; i < k->nr; i++) {
		uint64_t vx = key_value(k->key[i], x), vy = key_value(k->key[i], y);

		if (vx != vy)
			return vx < vy ? -1 : 1;
	}
	return 0;
}

void report_table_free(struct report_table *t)
{
	free(t->rows);
	free(t->sample_row);
	free(t->kept);
	free(t->total);
	memset(t, 0, sizeof(*t));
}

static int sort_rows(struct report_table *t, const struct profile *p, const struct report_table_options *o)
{
	uint32_t *order = malloc((t->nr ? t->nr : 1) * sizeof(*order)), *where = malloc((t->nr ? t->nr : 1) * sizeof(*where));
	struct report_row *sorted = malloc((t->nr ? t->nr : 1) * sizeof(*sorted));
	struct row_order ro = { p, o, t->rows };
	int rc = -ENOMEM;

	if (!order || !where || !sorted)
		goto out;
	for (size_t i = 0; i < t->nr; i++)
		order[i] = (uint32_t)i;
	if (t->nr > 1)
		qsort_r(order, t->nr, sizeof(*order), cmp_rows, &ro);
	for (size_t i = 0; i < t->nr; i++) {
		sorted[i] = t->rows[order[i]];
		where[order[i]] = (uint32_t)i;
	}
	for (size_t i = 0; t->sample_row && i < p->nr_samples; i++)
		if (t->sample_row[i] != PROFILE_NONE)
			t->sample_row[i] = where[t->sample_row[i]];
	free(t->rows);
	t->rows = sorted;
	sorted = NULL;
	rc = 0;
out:
	free(order);
	free(where);
	free(sorted);
	return rc;
}

int report_table_build(struct report_table *t, const struct profile *p, const struct report_table_options *o)
{
	size_t nev = o->per_event ? (p->nr_events ? p->nr_events : 1) : 1, cap = 0;
	bool by_domain = report_keys_has(&o->keys, REPORT_KEY_DOMAIN), filtered = report_filter_active(&o->filter);
	struct key_parts kp = key_parts(&o->keys);
	struct keymap index = { 0 };
	uint64_t last_a = 0, last_b = 0;
	int64_t last = -1; /* the row of the sample before, often this one's too */
	int rc = -ENOMEM;

	memset(t, 0, sizeof(*t));
	/* The event's 24 bits of the row key (no recording has near that many events). */
	if (nev > 0xffffff)
		return -EFBIG;
	if (o->sample_rows) {
		t->sample_row = malloc((p->nr_samples ? p->nr_samples : 1) * sizeof(*t->sample_row));
		if (!t->sample_row)
			goto fail;
	}
	t->kept = calloc(nev, sizeof(*t->kept));
	t->total = calloc(nev, sizeof(*t->total));
	if (!t->kept || !t->total)
		goto fail;
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		uint32_t ev = o->per_event ? s->event : 0, func = leaf_func(p, s);
		struct report_row r = { .event = o->per_event ? s->event : PROFILE_NONE, .comm = s->comm, .pid = s->pid,
					.tid = s->tid, .func = func, .image = p->funcs[func].image };
		uint64_t a, b;
		int64_t v;

		uint32_t count = profile_sample_count(p, i);

		if (t->sample_row)
			t->sample_row[i] = PROFILE_NONE;
		t->total[ev] += count;
		if (filtered && !report_filter_keeps(&o->filter, p, s))
			continue;
		t->kept[ev] += count;
		/* Domains are small numbers (8 bits of the key): two layers or four. */
		if (by_domain)
			r.domain = domain_of(o, p, s) & 0xff;
		row_key(&kp, ev, &r, &a, &b);
		v = last >= 0 && a == last_a && b == last_b ? last : keymap_get(&index, a, b);
		if (v < 0) {
			if (grow_array(&t->rows, &cap, t->nr + 1, sizeof(*t->rows)) ||
			    keymap_put(&index, a, b, (uint32_t)t->nr))
				goto fail;
			t->rows[t->nr] = r;
			v = (int64_t)t->nr++;
		}
		t->rows[v].count += count;
		if (t->sample_row)
			t->sample_row[i] = (uint32_t)v;
		last = v, last_a = a, last_b = b;
	}
	keymap_free(&index);
	rc = sort_rows(t, p, o);
	if (rc)
		goto fail;
	return 0;
fail:
	keymap_free(&index);
	report_table_free(t);
	return rc;
}

/* ---- printing ---- */

enum column {
	COL_COMM,
	COL_PID,
	COL_PID_COMM, /* the pid or tid key's command, when comm (or pid, for tid) is not a key itself */
	COL_TID,
	COL_DSO,
	COL_SYM_IMAGE, /* the sym key's image, when dso is not a key itself */
	COL_SYM,
	COL_DOMAIN,
	COL_PROCESS,
};

static const char *const col_header[] = { "command", "pid", "command", "tid", "image", "image", "symbol", "domain", "process" };

/* The columns of keys k, in their order; no_sym_image leaves out the symbol's image. */
static unsigned columns(const struct report_keys *k, bool no_sym_image, enum column *cols)
{
	unsigned n = 0;

	for (unsigned i = 0; i < k->nr; i++)
		switch (k->key[i]) {
		case REPORT_KEY_COMM:
			cols[n++] = COL_COMM;
			break;
		case REPORT_KEY_PID:
			cols[n++] = COL_PID;
			if (!report_keys_has(k, REPORT_KEY_COMM))
				cols[n++] = COL_PID_COMM;
			break;
		case REPORT_KEY_TID:
			cols[n++] = COL_TID;
			if (!report_keys_has(k, REPORT_KEY_COMM) && !report_keys_has(k, REPORT_KEY_PID))
				cols[n++] = COL_PID_COMM;
			break;
		case REPORT_KEY_DSO:
			cols[n++] = COL_DSO;
			break;
		case REPORT_KEY_SYM:
			if (!report_keys_has(k, REPORT_KEY_DSO) && !no_sym_image)
				cols[n++] = COL_SYM_IMAGE;
			cols[n++] = COL_SYM;
			break;
		case REPORT_KEY_DOMAIN:
			cols[n++] = COL_DOMAIN;
			break;
		default:
			cols[n++] = COL_PROCESS;
			break;
		}
	return n;
}

/* pid and tid: numbers, right-aligned in 7 columns (Linux's pid_max is at most 4194304). */
static bool numeric(enum column c)
{
	return c == COL_PID || c == COL_TID;
}

static const char *col_text(enum column c, const struct profile *p, const struct report_row *r,
			    const struct report_table_options *o, char *buf, size_t len)
{
	switch (c) {
	case COL_COMM:
	case COL_PID_COMM:
		return p->comms[r->comm];
	case COL_PID:
		snprintf(buf, len, "%u", r->pid);
		return buf;
	case COL_TID:
		snprintf(buf, len, "%u", r->tid);
		return buf;
	case COL_DSO:
	case COL_SYM_IMAGE:
		return p->images[r->image].name;
	case COL_SYM:
		return report_func_name(p, r->func);
	case COL_DOMAIN:
		return domain_name(o, r->domain);
	default:
		snprintf(buf, len, "%s [%u]", p->comms[r->comm], r->pid);
		return buf;
	}
}

void report_put_clean(FILE *out, const char *s, int width)
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

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

size_t report_table_shown(const struct report_table *t, size_t first, size_t nr, uint64_t whole,
			  const struct report_table_options *o)
{
	size_t n = 0;

	if (o->percent_limit <= 0)
		return nr;
	while (n < nr && pct(t->rows[first + n].count, whole) >= o->percent_limit)
		n++;
	return n;
}

uint64_t report_table_whole(const struct report_table_options *o, uint64_t kept, uint64_t all)
{
	return o->percent_relative && report_filter_active(&o->filter) ? kept : all;
}

void report_table_print_filter(FILE *out, const struct report_table_options *o, uint64_t kept, uint64_t total)
{
	char desc[512];

	if (!report_filter_active(&o->filter))
		return;
	report_filter_describe(&o->filter, desc, sizeof(desc));
	fputs("# filter ", out);
	report_put_clean(out, desc, 0);
	fprintf(out, ": %" PRIu64 " of %" PRIu64 " samples kept (%.2f%%); percentages are of %s %" PRIu64 "\n", kept,
		total, pct(kept, total), o->percent_relative ? "those" : "all", o->percent_relative ? kept : total);
}

/*
 * A column's text cut to its width in bytes: a process ("name [pid]")
 * keeps its pid and gives up the end of its name, marked '~'. A character
 * the cut splits is printed as '?' (report_put_clean).
 */
static const char *cut_text(enum column c, const char *text, uint32_t pid, int width, char *buf, size_t len)
{
	size_t w = width > 0 ? (size_t)width : 0;

	if (strlen(text) <= w)
		return text;
	if (c == COL_PROCESS) {
		char tail[16];
		size_t tl = (size_t)snprintf(tail, sizeof(tail), "~ [%u]", pid);

		if (w > tl && w < len) {
			/* text is "name [pid]": its first w - tl bytes are the name's */
			memmove(buf, text, w - tl);
			memcpy(buf + (w - tl), tail, tl + 1);
			return buf;
		}
	}
	snprintf(buf, len, "%.*s", (int)w, text);
	return buf;
}

/* The table onto out as report_table_print_fit says, lines uncut. */
static int print_table(FILE *out, const struct profile *p, const struct report_table *t, size_t first, size_t nr,
		       uint64_t whole, const struct report_table_options *o, enum report_table_style style,
		       const struct report_table_fit *fit)
{
	enum column cols[2 * REPORT_KEY_COUNT];
	unsigned nc = columns(&o->keys, fit && fit->no_sym_image, cols);
	int width[2 * REPORT_KEY_COUNT];
	bool host = style == REPORT_STYLE_HOST, cut = fit && fit->cut;
	const char *sep = host ? " " : "  ";
	size_t shown = report_table_shown(t, first, nr, whole, o);
	char buf[160], cutbuf[160];

	for (unsigned c = 0; c < nc; c++) {
		width[c] = (int)strlen(col_header[cols[c]]);
		if (numeric(cols[c])) {
			width[c] = 7;
			continue;
		}
		if (fit && fit->process_width > 0 && cols[c] == COL_PROCESS) {
			width[c] = fit->process_width;
			continue;
		}
		if (fit && fit->image_width > 0 && (cols[c] == COL_DSO || cols[c] == COL_SYM_IMAGE)) {
			width[c] = fit->image_width;
			continue;
		}
		if (host && cols[c] == COL_DOMAIN) {
			width[c] = 13;
			continue;
		}
		/*
		 * kvmprof's process and image columns are at least 28 and 20 wide, and wider when a
		 * name shown needs it, as perf widens its columns: a QEMU thread's tagged name
		 * ("[vmm] qemu-system-x86 (vCPU 0) [4242]") overflowed its column and pushed the
		 * row's image and symbol out of line.
		 */
		if (host && (cols[c] == COL_PROCESS || cols[c] == COL_DSO || cols[c] == COL_SYM_IMAGE))
			width[c] = cols[c] == COL_PROCESS ? 28 : 20;
		for (size_t i = first; i < first + shown; i++) {
			int l = (int)strlen(col_text(cols[c], p, &t->rows[i], o, buf, sizeof(buf)));

			/* A Linux command has 15 characters; kvmprof's tagged ones ("[vmm] qemu-system-x86 (vCPU 0)") get their width. */
			if (!host && (cols[c] == COL_COMM || cols[c] == COL_PID_COMM))
				l = l < COMM_WIDTH_MAX ? l : COMM_WIDTH_MAX;
			if (l > width[c])
				width[c] = l;
		}
	}
	fprintf(out, "%*s %*s  ", host ? 10 : 8, "samples", host ? 8 : 7, "%");
	for (unsigned c = 0; c < nc; c++) {
		bool last = c + 1 == nc;

		if (c)
			fputs(sep, out);
		if (numeric(cols[c]))
			fprintf(out, "%*s", width[c], col_header[cols[c]]);
		else if (cut && !last) /* cut columns cut their titles too: the rows stay under them */
			fprintf(out, "%-*.*s", width[c], width[c], col_header[cols[c]]);
		else
			fprintf(out, "%-*s", last ? 0 : width[c], col_header[cols[c]]);
	}
	fputc('\n', out);
	for (size_t i = first; i < first + shown; i++) {
		const struct report_row *r = &t->rows[i];

		fprintf(out, "%*" PRIu64 " %*.2f%%  ", host ? 10 : 8, r->count, host ? 7 : 6, pct(r->count, whole));
		for (unsigned c = 0; c < nc; c++) {
			bool last = c + 1 == nc;
			const char *text;

			if (c)
				fputs(sep, out);
			if (numeric(cols[c])) {
				fprintf(out, "%*u", width[c], cols[c] == COL_PID ? r->pid : r->tid);
				continue;
			}
			text = col_text(cols[c], p, r, o, buf, sizeof(buf));
			if (cut && !last)
				text = cut_text(cols[c], text, r->pid, width[c], cutbuf, sizeof(cutbuf));
			report_put_clean(out, text, last ? 0 : width[c]);
		}
		fputc('\n', out);
	}
	if (shown < nr) {
		uint64_t hidden = 0;

		for (size_t i = first + shown; i < first + nr; i++)
			hidden += t->rows[i].count;
		fprintf(out, "# %zu rows under %g%% not shown: %" PRIu64 " samples (%.2f%%)\n", nr - shown, o->percent_limit,
			hidden, pct(hidden, whole));
	}
	return ferror(out) ? -EIO : 0;
}

int report_table_print(FILE *out, const struct profile *p, const struct report_table *t, size_t first, size_t nr,
		       uint64_t whole, const struct report_table_options *o, enum report_table_style style)
{
	return print_table(out, p, t, first, nr, whole, o, style, NULL);
}

int report_table_print_fit(FILE *out, const struct profile *p, const struct report_table *t, size_t first, size_t nr,
			   uint64_t whole, const struct report_table_options *o, enum report_table_style style,
			   const struct report_table_fit *fit)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem;
	int rc;

	if (!fit || !fit->width)
		return print_table(out, p, t, first, nr, whole, o, style, fit);
	/* Whole lines first, then each cut to the width (the names in them are already clean UTF-8). */
	mem = open_memstream(&text, &len);
	if (!mem)
		return -ENOMEM;
	rc = print_table(mem, p, t, first, nr, whole, o, style, fit);
	if (fclose(mem) && !rc)
		rc = -ENOMEM;
	for (char *line = text; !rc && line && *line;) {
		char *nl = strchr(line, '\n'), *next = nl ? nl + 1 : line + strlen(line);

		if (nl)
			*nl = 0;
		if (strlen(line) > fit->width) {
			line[fit->width] = 0;
			utf8_sanitize(line, ' ', NULL); /* a character the cut split: its first bytes become spaces */
		}
		fputs(line, out);
		if (nl)
			fputc('\n', out);
		line = next;
	}
	free(text);
	return rc ? rc : ferror(out) ? -EIO : 0;
}

void report_table_print_keys(FILE *out, const struct profile *p, const struct report_row *r,
			     const struct report_table_options *o)
{
	enum column cols[2 * REPORT_KEY_COUNT];
	unsigned nc = columns(&o->keys, false, cols);
	char buf[160];

	for (unsigned c = 0; c < nc; c++) {
		if (c)
			fputs("  ", out);
		report_put_clean(out, col_text(cols[c], p, r, o, buf, sizeof(buf)), 0);
	}
}
