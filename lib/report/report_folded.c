/* SPDX-License-Identifier: MIT */
/*
 * Folded stacks (the input of flamegraph.pl and most flame-graph tools):
 * one line per distinct (command, stack), "comm;image`outer;...;image`inner
 * COUNT", weighted by samples. Lines are sorted so that output compares.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "report/report.h"
#include "common/utf8.h"

uint32_t report_folded_event(const struct profile *p)
{
	uint32_t i;

	for (i = 0; i < p->nr_events; i++)
		if (p->events[i].samples)
			return i;
	return 0;
}

struct line {
	char *text;
	uint64_t count;
};

static int cmp_lines(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->text, ((const struct line *)b)->text);
}

/* The text of one stack: the command, then frames outermost first. */
static char *stack_text(const struct profile *p, const struct report_stacks *rs, const struct report_stack *st)
{
	char *buf = NULL, frame[512];
	size_t len = 0, cap = 0, l;
	uint32_t i;

	snprintf(frame, sizeof(frame), "%s", p->comms[st->group]);
	for (i = 0;; i++) {
		/* The command is a frame too: same character rules. */
		if (i == 0)
			utf8_sanitize(frame, '_', "; ");
		l = strlen(frame);
		if (grow_array(&buf, &cap, len + l + 2, 1)) {
			free(buf);
			return NULL;
		}
		if (i)
			buf[len++] = ';';
		memcpy(buf + len, frame, l + 1);
		len += l;
		if (i == st->nr)
			return buf;
		report_frame(frame, sizeof(frame), p, rs->ids[st->first + i]);
	}
}

int report_folded(FILE *out, const struct profile *p, uint32_t event)
{
	struct report_stacks rs = { 0 };
	struct line *lines = NULL;
	uint32_t *ids = NULL;
	size_t i, nr = 0;
	int rc = 0;

	ids = malloc((KP_CALLCHAIN_MAX + 1) * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	for (i = 0; i < p->nr_samples && !rc; i++) {
		const struct profile_sample *s = &p->samples[i];
		uint32_t f, n = s->nr_frames;

		if (s->event != event)
			continue;
		if (n > KP_CALLCHAIN_MAX + 1)
			n = KP_CALLCHAIN_MAX + 1;
		for (f = 0; f < n; f++)
			ids[f] = p->locs[p->frames[s->first_frame + n - 1 - f]].func;
		rc = report_stacks_add(&rs, s->comm, ids, n, s->period);
	}
	if (!rc && rs.nr) {
		lines = calloc(rs.nr, sizeof(*lines));
		if (!lines)
			rc = -ENOMEM;
	}
	for (i = 0; !rc && i < rs.nr; i++, nr++) {
		lines[i].text = stack_text(p, &rs, &rs.stacks[i]);
		lines[i].count = rs.stacks[i].count;
		if (!lines[i].text)
			rc = -ENOMEM;
	}
	if (!rc) {
		if (nr > 1)
			qsort(lines, nr, sizeof(*lines), cmp_lines);
		for (i = 0; i < nr; i++)
			fprintf(out, "%s %" PRIu64 "\n", lines[i].text, lines[i].count);
		if (fflush(out) || ferror(out))
			rc = -EIO;
	}
	for (i = 0; i < nr; i++)
		free(lines[i].text);
	free(lines);
	free(ids);
	report_stacks_free(&rs);
	return rc;
}
