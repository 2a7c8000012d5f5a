/* SPDX-License-Identifier: MIT */
/* The hottest symbols of a system-wide profile (hot_table.h). */
#include "hot_table.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "report.h"
#include "utf8.h"

static const char *const layer_names[HOST_LAYER_COUNT] = { "guest user", "guest kernel", "VMM user",
							   "host kernel" };

const char *hot_layer_name(uint32_t layer)
{
	return layer < HOST_LAYER_COUNT ? layer_names[layer] : "?";
}

static int cmp_rows(const void *x, const void *y, void *arg)
{
	const struct hot_row *a = x, *b = y;
	const struct profile *p = arg;
	int c;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	if (a->layer != b->layer)
		return a->layer < b->layer ? -1 : 1;
	c = strcmp(report_func_name(p, a->func), report_func_name(p, b->func));
	if (!c)
		c = strcmp(p->comms[a->comm], p->comms[b->comm]);
	return c ? c : (a->pid > b->pid) - (a->pid < b->pid);
}

int hot_table_build(struct hot_table *t, const struct profile *p, bool by_process)
{
	t->nr = 0;
	t->total = 0;
	memset(t->by_layer, 0, sizeof(t->by_layer));
	keymap_free(&t->index);
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		uint32_t layer = host_layer_of(s), func = p->locs[p->frames[s->first_frame]].func;
		uint64_t k1 = (uint64_t)layer << 32 | (by_process ? s->comm : 0);
		uint64_t k2 = (by_process ? (uint64_t)s->pid << 32 : 0) | func;
		int64_t idx = keymap_get(&t->index, k1, k2);

		if (idx < 0) {
			if (grow_array(&t->rows, &t->cap, t->nr + 1, sizeof(*t->rows)) ||
			    keymap_put(&t->index, k1, k2, (uint32_t)t->nr))
				return -ENOMEM;
			t->rows[t->nr] = (struct hot_row){ layer, s->pid, s->comm, func, 0 };
			idx = (int64_t)t->nr++;
		}
		t->rows[idx].count++;
		t->by_layer[layer]++;
		t->total++;
	}
	if (t->nr > 1)
		qsort_r(t->rows, t->nr, sizeof(*t->rows), cmp_rows, (void *)p);
	return 0;
}

void hot_table_free(struct hot_table *t)
{
	free(t->rows);
	keymap_free(&t->index);
	memset(t, 0, sizeof(*t));
}

/* A line cut to width bytes; what is left of a character the cut split goes too. */
static void cut_line(char *line, size_t width)
{
	if (width && strlen(line) > width) {
		line[width] = 0;
		utf8_sanitize(line, ' ', NULL);
	}
}

void hot_table_print_heading(FILE *out, const struct hot_columns *c)
{
	char line[256];
	int n = snprintf(line, sizeof(line), "%10s %8s  %-13s", "samples", "%", "domain");

	/* Cut columns cut their titles too: the rows stay under them. */
	if (c->process)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " %-*.*s", c->process_width,
			      c->cut ? c->process_width : 7, "process");
	if (c->image)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " %-*.*s", c->image_width, c->cut ? c->image_width : 5,
			      "image");
	snprintf(line + n, sizeof(line) - (size_t)n, " %s", "symbol");
	cut_line(line, c->width);
	fputs(line, out);
}

void hot_table_print_row(FILE *out, const struct profile *p, const struct hot_table *t, const struct hot_row *r,
			 const struct hot_columns *c)
{
	char line[1024], proc[64], image[256], sym[512];
	int n, pw = c->cut ? c->process_width : 0, iw = c->cut ? c->image_width : 0;

	/* A guest names its processes, files and symbols: no terminal escapes from it. */
	snprintf(proc, sizeof(proc), "%s [%u]", p->comms[r->comm], r->pid);
	snprintf(image, sizeof(image), "%s", p->images[p->funcs[r->func].image].name);
	snprintf(sym, sizeof(sym), "%s", report_func_name(p, r->func));
	/* Cut to a column: the process's pid is what tells rows apart, so its name gives way. */
	if (pw > 0 && strlen(proc) > (size_t)pw) {
		char pid[16];
		int pl = snprintf(pid, sizeof(pid), " [%u]", r->pid);

		size_t at = pw > pl + 1 ? (size_t)(pw - pl - 1) : 0;

		snprintf(proc + at, sizeof(proc) - at, "~%s", pid);
	}
	if (iw > 0 && strlen(image) > (size_t)iw)
		image[iw] = 0;
	utf8_sanitize(proc, '?', NULL);
	utf8_sanitize(image, '?', NULL);
	utf8_sanitize(sym, '?', NULL);
	n = snprintf(line, sizeof(line), "%10" PRIu64 " %7.2f%%  %-13s", r->count,
		     t->total ? 100.0 * (double)r->count / (double)t->total : 0.0, hot_layer_name(r->layer));
	if (c->process)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " %-*s", c->process_width, proc);
	if (c->image)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " %-*s", c->image_width, image);
	if (n < (int)sizeof(line))
		snprintf(line + n, sizeof(line) - (size_t)n, " %s", sym);
	cut_line(line, c->width);
	fputs(line, out);
}
