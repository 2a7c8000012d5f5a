/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_BACKEND_PERF_H
#define KVMPROF_BACKEND_PERF_H

#include "vpmu.h"

/*
 * The emulated backend: one host perf_event per enabled virtual counter,
 * opened by the vCPU thread on itself. Overflow notifications (a signal to
 * the vCPU thread, which makes KVM_RUN return) are requested through the
 * event's sample period; they only shorten the time to the next sync, the
 * counts come from reading the events.
 */
struct vpmu_perf_backend {
	int fd[VPMU_MAX_COUNTERS];
	uint64_t time_enabled[VPMU_MAX_COUNTERS], time_running[VPMU_MAX_COUNTERS];
	int signo; /* overflow signal sent to the vCPU thread; 0: none */
};

extern const struct vpmu_backend_ops vpmu_perf_ops;

/*
 * The clock backend, for hosts without hardware counters (CI machines here,
 * the nested TCG harness): core and reference cycles are counted from the
 * vCPU thread's task clock at a nominal 1 GHz (one cycle per nanosecond the
 * thread runs); every other event is not countable and reads 0. It exercises
 * the whole vPMU (MSRs, accounting modes, overflow, PMI delivery) where no
 * hardware PMU exists; the counts are time, not microarchitecture.
 */
extern const struct vpmu_backend_ops vpmu_clock_ops;

void vpmu_perf_backend_init(struct vpmu_perf_backend *b, int signo);

/* Folds the backend's enabled/running times into the vCPU's statistics. */
void vpmu_perf_backend_stats(struct vpmu_vcpu *v);

/*
 * Whether this host can count hardware events on a thread at all (it
 * cannot inside QEMU-TCG, for example). 0, or -errno with the reason.
 */
int vpmu_perf_probe(char reason[VPMU_ERR_MAX]);

#endif
