/* SPDX-License-Identifier: MIT */
/*
 * Event names for `kvmprof-agent record -e` and `kvmprof record -e`: perf's generic names
 * (cycles, cpu-clock, ...), everything libpfm4 knows (INST_RETIRED,
 * perf::cycles, model-specific names with modifiers), and OProfile's
 * `event:count[:unitmask[:kernel[:user]]]`.
 */
#ifndef KVMPROF_EVENTS_H
#define KVMPROF_EVENTS_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvmprof/sample_format.h"

struct events_event {
	char name[KP_EVENT_NAME_MAX]; /* as the user wrote it, without a period */
	struct perf_event_attr attr;  /* type, config, exclude_*; no sampling fields */
	uint64_t period;              /* from NAME:PERIOD or OProfile's count; 0: none */
};

/*
 * Parses one -e argument. 0, or -EINVAL (bad syntax) / -ENOENT (unknown
 * event name) with a one-line message in err. On -ENOENT, `unknown` gets
 * the name that was not found (for events_suggest).
 */
int events_parse(const char *spec, struct events_event *ev, char *unknown, size_t unknownlen,
		 char *err, size_t errlen);

/*
 * Up to `max` known event names closest to `name` by edit distance, as
 * "a, b, c" in out (empty when nothing is close). Returns how many.
 */
int events_suggest(const char *name, int max, char *out, size_t outlen);

/* The software clock that stands in when there is no PMU. */
void events_cpu_clock(struct events_event *ev);

/* Whether an event of this perf type and config is a clock (cpu-clock, task-clock): its period is nanoseconds. */
bool events_is_clock(uint32_t type, uint64_t config);

#endif
