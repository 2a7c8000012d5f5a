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

/*
 * perf's generic names, for listing: the i-th row of the table events_parse
 * reads (0 <= i < events_generic_count()), its name and the perf type and
 * config it opens. Names that open the same event (cycles, cpu-cycles) are
 * rows of their own, in a row.
 */
size_t events_generic_count(void);
const char *events_generic(size_t i, uint32_t *type, uint64_t *config);

/* One libpfm4 event of a PMU libpfm4 finds on this machine, or one of its unit masks. */
struct events_pfm_entry {
	const char *pmu;      /* libpfm4's PMU name: "icl", "amd64_fam17h", "perf" */
	const char *pmu_desc; /* "Intel Icelake" */
	bool pmu_generic;     /* perf's own generic events (libpfm4's perf, perf_raw PMUs) */
	const char *event;    /* "BR_INST_RETIRED" */
	const char *umask;    /* "NEAR_TAKEN", or NULL for the event itself */
	const char *desc;     /* libpfm4's description of the event, or of the unit mask */
};

/*
 * Calls fn for every event of every PMU libpfm4 detects as present (and,
 * with umasks, after each event, for each of its unit masks), in libpfm4's
 * order, until fn returns non-zero. The one walk over libpfm4's tables:
 * suggestions and `list` both use it. 0, fn's value, or -ENODEV when
 * libpfm4 does not initialise.
 */
int events_for_each_pfm(bool umasks, int (*fn)(const struct events_pfm_entry *e, void *ctx), void *ctx);

/*
 * The one call of libpfm4's perf_event encoder: pfmstr ("PMU::EVENT:UMASK",
 * modifiers included) as the counting fields of out (type, config,
 * config1, config2, exclude_user/kernel/hv, precise_ip; other fields are
 * left alone), and in period the period the name fixes (0: none). 0, or
 * -EINVAL with a one-line message in err. events_parse and `list
 * --details` both encode through it.
 */
int events_pfm_encode(const char *pfmstr, struct perf_event_attr *out, uint64_t *period, char *err, size_t errlen);

/* The software clock that stands in when there is no PMU. */
void events_cpu_clock(struct events_event *ev);

/* Whether an event of this perf type and config is a clock (cpu-clock, task-clock): its period is nanoseconds. */
bool events_is_clock(uint32_t type, uint64_t config);

#endif
