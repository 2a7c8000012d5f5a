/* SPDX-License-Identifier: MIT */
/* --comms, --pids, --dsos, --symbols, --tids: which samples a report counts. */
#include "report/report_filter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

static const char *const option_names[REPORT_FILTER_COUNT] = { "--comms", "--pids", "--dsos", "--symbols", "--tids" };

int report_filter_set(struct report_filter *f, enum report_filter_kind kind, const char *list, char *err,
		      size_t errlen)
{
	for (const char *p = list;;) {
		size_t n = strcspn(p, ",");

		if (!n) {
			snprintf(err, errlen, "%s: empty item in '%s'", option_names[kind], list);
			return -EINVAL;
		}
		if (kind == REPORT_FILTER_PIDS || kind == REPORT_FILTER_TIDS) {
			char *end;
			unsigned long v;

			if (*p < '0' || *p > '9' || ((v = strtoul(p, &end, 10)), end != p + n) || v > UINT32_MAX) {
				snprintf(err, errlen, "%s: '%.*s' is not a %s", option_names[kind], (int)n, p,
					 kind == REPORT_FILTER_PIDS ? "pid" : "tid");
				return -EINVAL;
			}
		}
		if (!p[n])
			break;
		p += n + 1;
	}
	f->list[kind] = list;
	return 0;
}

bool report_filter_active(const struct report_filter *f)
{
	for (int k = 0; k < REPORT_FILTER_COUNT; k++)
		if (f->list[k])
			return true;
	return false;
}

/* Whether name is one of the comma list's items. */
static bool in_list(const char *list, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = list;;) {
		size_t n = strcspn(p, ",");

		if (n == len && !strncmp(p, name, n))
			return true;
		if (!p[n])
			return false;
		p += n + 1;
	}
}

static bool pid_in_list(const char *list, uint32_t pid)
{
	for (const char *p = list;;) {
		size_t n = strcspn(p, ",");

		if (strtoul(p, NULL, 10) == pid)
			return true;
		if (!p[n])
			return false;
		p += n + 1;
	}
}

/* "[guest] matmul" is matmul's: kvmprof's reports tag commands with their layer. */
static bool comm_matches(const char *list, const char *comm)
{
	const char *tag_end;

	if (in_list(list, comm))
		return true;
	return comm[0] == '[' && (tag_end = strstr(comm, "] ")) && in_list(list, tag_end + 2);
}

bool report_filter_keeps(const struct report_filter *f, const struct profile *p, const struct profile_sample *s)
{
	uint32_t func = p->locs[p->frames[s->first_frame]].func;
	const struct profile_image *im = &p->images[p->funcs[func].image];

	if (f->list[REPORT_FILTER_COMMS] && !comm_matches(f->list[REPORT_FILTER_COMMS], p->comms[s->comm]))
		return false;
	if (f->list[REPORT_FILTER_PIDS] && !pid_in_list(f->list[REPORT_FILTER_PIDS], s->pid))
		return false;
	if (f->list[REPORT_FILTER_TIDS] && !pid_in_list(f->list[REPORT_FILTER_TIDS], s->tid))
		return false;
	if (f->list[REPORT_FILTER_DSOS] && !in_list(f->list[REPORT_FILTER_DSOS], im->name) &&
	    !(im->path && in_list(f->list[REPORT_FILTER_DSOS], im->path)))
		return false;
	if (f->list[REPORT_FILTER_SYMBOLS] && !in_list(f->list[REPORT_FILTER_SYMBOLS], report_func_name(p, func)))
		return false;
	return true;
}

void report_filter_describe(const struct report_filter *f, char *buf, size_t len)
{
	size_t n = 0;

	if (len)
		buf[0] = '\0';
	for (int k = 0; k < REPORT_FILTER_COUNT && n < len; k++) {
		int w;

		if (!f->list[k])
			continue;
		w = snprintf(buf + n, len - n, "%s%s %s", n ? " " : "", option_names[k], f->list[k]);
		if (w < 0)
			break;
		n += (size_t)w;
	}
}

size_t report_filter_profile(struct profile *p, const struct report_filter *f)
{
	size_t n = 0;

	if (!report_filter_active(f))
		return p->nr_samples;
	for (size_t e = 0; e < p->nr_events; e++)
		p->events[e].samples = p->events[e].weight = 0;
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *s = &p->samples[i];

		if (!report_filter_keeps(f, p, s))
			continue;
		uint32_t count = profile_sample_count(p, i);

		if (s->event < p->nr_events) {
			p->events[s->event].samples += count;
			p->events[s->event].weight += s->period * count;
		}
		if (p->sample_counts)
			p->sample_counts[n] = count;
		p->samples[n++] = *s;
	}
	p->nr_samples = n;
	return n;
}
