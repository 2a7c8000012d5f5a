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
 */
void convert_sample_layout(struct perf_event_attr *a, int callgraph, uint32_t stack_size);

struct convert_id {
	uint64_t id; /* PERF_EVENT_IOC_ID */
	uint32_t event;
};

struct convert_ctx {
	struct emit_ctx *e;
	const struct convert_id *ids; /* unknown ids map to event 0 */
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
