/* SPDX-License-Identifier: MIT */
/*
 * What the bundled guest's programs (guest/user/) need of their libc, on the
 * host, so that bench/rates.sh runs the very same program natively under
 * `perf record` as in the guest under the agent. The PMU calls become a
 * clock: the program's measured phase (between pmu_count_insn_cycles and
 * pmu_print_insn_cycles) is printed as `NAME: ms=N`, the agent's word.
 * Built with the guest's code-generation flags (no SSE: bench.mk), so the
 * compiler makes the same loops of it; hence no floating point here.
 */
#ifndef KVMPROF_BENCH_HOST_LIBC_H
#define KVMPROF_BENCH_HOST_LIBC_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct timespec host_libc_start, host_libc_end;

static inline long atol_def(const char *s, long def)
{
	char *end;
	long v;

	if (!s || !*s)
		return def;
	v = strtol(s, &end, 10);
	return *end ? def : v;
}

static inline uint64_t clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void sleep_ms(unsigned long ms)
{
	struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts))
		;
}

static inline long pmu_count_insn_cycles(void)
{
	clock_gettime(CLOCK_MONOTONIC, &host_libc_start);
	return 0;
}

static inline long pmu_stop_insn_cycles(long opened, uint64_t n[2])
{
	clock_gettime(CLOCK_MONOTONIC, &host_libc_end);
	n[0] = n[1] = 0;
	return opened;
}

static inline void pmu_print_insn_cycles(const char *name, long status, const uint64_t n[2])
{
	uint64_t us = ((uint64_t)(host_libc_end.tv_sec - host_libc_start.tv_sec) * 1000000000u +
		       (uint64_t)host_libc_end.tv_nsec - (uint64_t)host_libc_start.tv_nsec) / 1000;

	(void)status;
	(void)n;
	printf("%s: ms=%lu.%03lu\n", name, (unsigned long)(us / 1000), (unsigned long)(us % 1000));
}

#endif
