/* SPDX-License-Identifier: MIT */
/* The trace events' table (from include/kvmprof/trace_events.h) and --trace-events patterns. */
#ifndef KVMPROF_TRACE_EVENT_TABLE_H
#define KVMPROF_TRACE_EVENT_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvmprof/trace_events.h"

struct trace_event_info {
	unsigned int id;
	const char *name;
	unsigned int nargs;
	const char *args;  /* "name:type,...": see trace_events.h */
	const char *desc;
};

/* The event with this id, or NULL. */
const struct trace_event_info *trace_event_info(unsigned int id);

/* The name and type letter of an event's argument i; false past its last one. */
bool trace_event_arg(const struct trace_event_info *e, unsigned int i, char name[32], char *type);

/*
 * Sets enabled[id] for every event some glob of the comma-separated list
 * matches ("*" when NULL). Returns 0, or -1 with err naming the first glob
 * that matches no event (or an empty one).
 */
int trace_events_match(const char *patterns, bool enabled[KVMPROF_TRACE_EVENT_COUNT], char *err, size_t errsz);

#endif
