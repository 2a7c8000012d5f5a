/* SPDX-License-Identifier: MIT */
/*
 * perf_event ring records to kvmprof records: SAMPLE (cpl from the perf
 * cpumode, call chain without PERF_CONTEXT_* markers and without the
 * sampled ip repeated), MMAP2, COMM (exec flag), FORK/EXIT, LOST.
 *
 * All events of a recording sample CONVERT_SAMPLE_TYPE (plus
 * PERF_SAMPLE_CALLCHAIN with call chains) with sample_id_all, so one
 * layout serves every record; PERF_SAMPLE_IDENTIFIER names the event.
 */
#ifndef KVMPROF_CONVERT_H
#define KVMPROF_CONVERT_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emit.h"

#define CONVERT_SAMPLE_TYPE                                                                         \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | \
	 PERF_SAMPLE_PERIOD)
/* The sample_id_all trailer for these fields: pid/tid, time, cpu/res, identifier. */
#define CONVERT_ID_TRAILER 32

struct convert_id {
	uint64_t id; /* PERF_EVENT_IOC_ID */
	uint32_t event;
};

struct convert_ctx {
	struct emit_ctx *e;
	const struct convert_id *ids; /* unknown ids map to event 0 */
	size_t nids;
	bool callchain; /* PERF_SAMPLE_CALLCHAIN is in the layout */
	uint64_t lost;  /* sum of LOST records so far */
	/*
	 * Optional: called for each converted sample with perf's misc bits;
	 * 1 keeps it, 0 drops it (the host profiler hands host samples that
	 * are really guest time to the guest's side instead), -errno fails
	 * the conversion. NULL keeps every sample.
	 */
	int (*keep_sample)(void *ctx, const struct kp_rec_sample *s, uint16_t misc);
	void *keep_ctx;
};

/* One perf record (h->size bytes, contiguous); kinds a report does not need are skipped. 0 or -errno. */
int convert_record(struct convert_ctx *c, const struct perf_event_header *h);

#endif
