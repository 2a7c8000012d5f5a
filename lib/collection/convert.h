/* SPDX-License-Identifier: MIT */
/*
 * perf_event ring records to kvmprof records: SAMPLE (cpl from the perf
 * cpumode, call chain without PERF_CONTEXT_* markers and without the
 * sampled ip repeated), MMAP2, COMM (exec flag), FORK/EXIT, LOST.
 *
 * All events of a recording sample CONVERT_SAMPLE_TYPE (plus
 * PERF_SAMPLE_PERIOD in frequency mode, PERF_SAMPLE_CALLCHAIN with call
 * chains) with sample_id_all; PERF_SAMPLE_IDENTIFIER, first in every
 * sample, names the event and so the rest of its layout.
 */
#ifndef KVMPROF_CONVERT_H
#define KVMPROF_CONVERT_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collection/emit.h"

#define CONVERT_SAMPLE_TYPE \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)
/* The sample_id_all trailer for these fields: pid/tid, time, cpu/res, identifier. */
#define CONVERT_ID_TRAILER 32

/*
 * --call-graph dwarf adds the user registers an unwinder starts from
 * (PERF_SAMPLE_REGS_USER: these, in perf's x86 numbering) and a copy of
 * the user stack (PERF_SAMPLE_STACK_USER); the kernel's callchain then
 * stops at the user boundary (exclude_callchain_user), as perf's does.
 */
#define CONVERT_REGS_USER_MASK 0xff01ffull /* ax bx cx dx si di bp sp ip, r8..r15 */

/*
 * The sample layout of a recording: CONVERT_SAMPLE_TYPE with
 * sample_id_all, plus what the call graph mode needs (0 none, 1 frame
 * pointers, 2 dwarf with stack_size bytes of stack). The one place both
 * record commands set it, so convert_record reads what they asked for.
 * Call it once a->freq is set: PERF_SAMPLE_PERIOD is asked for only in
 * frequency mode, as perf does. With a fixed period it would be wrong for
 * software events (page-faults, context-switches...): the kernel then
 * takes a sample of period 1 at every event (perf_swevent_event), so
 * `-c 100` sampled every fault instead of every hundredth.
 */
void convert_sample_layout(struct perf_event_attr *a, int callgraph, uint32_t stack_size);
/* The period every sample of an event opened with `a` has when its samples carry none; 0 when they do. */
uint64_t convert_fixed_period(const struct perf_event_attr *a);

struct convert_id {
	uint64_t id; /* PERF_EVENT_IOC_ID */
	uint32_t event;
	uint64_t fixed_period; /* convert_fixed_period of its attr: 0, its samples carry PERF_SAMPLE_PERIOD */
};

struct convert_ctx {
	struct emit_ctx *e;
	const struct convert_id *ids; /* unknown ids map to event 0, with PERF_SAMPLE_PERIOD */
	size_t nids;
	bool callchain; /* PERF_SAMPLE_CALLCHAIN is in the layout */
	bool user_stack; /* PERF_SAMPLE_REGS_USER (CONVERT_REGS_USER_MASK) and _STACK_USER are: a
			  * USER_STACK record follows each sample that has them */
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
