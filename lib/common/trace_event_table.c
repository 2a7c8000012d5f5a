// SPDX-License-Identifier: MIT
/* The trace events' table, generated from the one list in kvmprof/trace_events.h. */
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "common/trace_event_table.h"

static const struct trace_event_info events[KVMPROF_TRACE_EVENT_COUNT] = {
#define TRACE_EVENT_ROW(i, n, na, a, d) [i] = { .id = i, .name = #n, .nargs = na, .args = a, .desc = d },
	KVMPROF_TRACE_EVENTS(TRACE_EVENT_ROW)
#undef TRACE_EVENT_ROW
};

const struct trace_event_info *trace_event_info(unsigned int id)
{
	return id < KVMPROF_TRACE_EVENT_COUNT && events[id].name ? &events[id] : NULL;
}

bool trace_event_arg(const struct trace_event_info *e, unsigned int i, char name[32], char *type)
{
	const char *p = e->args;

	if (i >= e->nargs)
		return false;
	for (unsigned int k = 0; k < i; k++) {
		p = strchr(p, ',');
		if (!p)
			return false;
		p++;
	}
	size_t len = strcspn(p, ":,");
	if (len == 0 || len >= 32 || p[len] != ':')
		return false;
	memcpy(name, p, len);
	name[len] = '\0';
	*type = p[len + 1];
	return *type == 'u' || *type == 'x' || *type == 's';
}

int trace_events_match(const char *patterns, bool enabled[KVMPROF_TRACE_EVENT_COUNT], char *err, size_t errsz)
{
	const char *p = patterns ? patterns : "*";

	for (;;) {
		size_t len = strcspn(p, ",");
		char glob[64];
		bool any = false;

		if (len == 0 || len >= sizeof(glob)) {
			snprintf(err, errsz, "'%.*s': %s", (int)(len > 60 ? 60 : len), p,
				 len ? "pattern too long" : "empty pattern");
			return -1;
		}
		memcpy(glob, p, len);
		glob[len] = '\0';
		for (unsigned int i = 0; i < KVMPROF_TRACE_EVENT_COUNT; i++) {
			if (fnmatch(glob, events[i].name, 0) == 0) {
				enabled[i] = true;
				any = true;
			}
		}
		if (!any) {
			snprintf(err, errsz, "'%s' matches no event (see docs/trace.md; e.g. vm_exit, pio, msr_*)", glob);
			return -1;
		}
		if (!p[len])
			return 0;
		p += len + 1;
	}
}
