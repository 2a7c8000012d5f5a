/* SPDX-License-Identifier: MIT */
/*
 * What both record commands do when the host has no PMU for the event they
 * were asked to sample (lib/common/perf_open.h decides that): cpu-clock stands in,
 * sampled by frequency, and the recording says so (KP_EVENT_FALLBACK, its
 * "pmu" meta line).
 */
#ifndef KVMPROF_RECORD_FALLBACK_H
#define KVMPROF_RECORD_FALLBACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collection/events.h"

/*
 * Turns ev into cpu-clock at freq Hz (RECORD_DEFAULT_HZ when 0), or, when
 * flags and rate say a period was asked for (no KP_EVENT_FREQ), every
 * rate nanoseconds, as perf's clock counts; keeps the name asked for when
 * keep_name (the report then shows "cycles" the user typed, flagged as a
 * stand-in), sets flags and rate to match, and
 * describes the PMU in pmu as the recording's header does. err is the
 * errno of the failed open; prog starts the one-line notice on stderr,
 * printed when notice is set.
 */
void record_fall_back_to_clock(struct events_event *ev, uint32_t *flags, uint64_t *rate, uint64_t freq,
			       bool keep_name, int err, char *pmu, size_t pmu_len, const char *prog, bool notice);

#endif
