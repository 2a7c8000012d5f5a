/* SPDX-License-Identifier: MIT */
/*
 * The one door to perf_event_open(2) for every part of kvmprof that opens
 * events: the agent and the host profiler (sampling), kvmprof stat
 * (counting), the VMM's guest sampler (a clock that interrupts a vCPU) and
 * the vPMU's perf backend (host counters behind guest counters). It owns
 * the decisions they must make alike: what "this host has no PMU" looks
 * like, and how the cpu-clock stand-in is described.
 */
#ifndef KVMPROF_PERF_OPEN_H
#define KVMPROF_PERF_OPEN_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* perf_event_open with close-on-exec: the fd, or -errno. */
int perf_open(const struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd);

/*
 * Sends signo to thread tid at each overflow (F_SETOWN_EX, F_SETSIG,
 * O_ASYNC), as a sampler that must stop a vCPU needs. 0 or -errno.
 */
int perf_open_signal_thread(int fd, pid_t tid, int signo);

/* Whether an event needs the PMU: everything but software events and tracepoints. */
bool perf_attr_is_hardware(const struct perf_event_attr *attr);
/*
 * The records a recorder needs to name processes and map their code, as
 * perf record's tracking event asks for them: mmap and mmap2, comm (with
 * exec), fork and exit.
 */
void perf_attr_track_tasks(struct perf_event_attr *attr);

/*
 * Whether opening attr failed with err because the host has no PMU that
 * perf can use (the errors a kernel without one, or a VM without a vPMU,
 * gives for hardware events), as opposed to a refusal or a bad attr.
 */
bool perf_open_no_pmu(const struct perf_event_attr *attr, int err);

/*
 * The no-PMU check: opens a user-space instruction counter on the calling
 * thread. 0 when the host can count hardware events, else -errno with the
 * reason in why.
 */
int perf_open_probe_pmu(char *why, size_t len);

/*
 * What a recording's header says about the PMU: "hardware", "software
 * events only", or, when err is set, that the named event fell back to
 * cpu-clock because of err.
 */
void perf_open_describe_pmu(char *buf, size_t len, bool hardware, const char *event, int err);

#endif
