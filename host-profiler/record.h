/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof record --vm SOCKET`: system-wide sampling of a running
 * kvmprof-vmm. Host side: perf_event_open on every thread of the VMM
 * process (VMM user code and the host kernel). Guest side: the VMM's own
 * guest sampler (sample-start), whose records arrive in shared-memory rings
 * and are copied into the same file.
 */
#ifndef HOST_RECORD_H
#define HOST_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "events.h"

#define HOST_RECORD_DEFAULT_HZ 1000
#define HOST_RECORD_DEFAULT_OUTPUT "kvmprof.data"

struct host_record_opts {
	const char *vm;      /* --vm: the control socket */
	struct events_event event;
	bool event_given;    /* -e; else cycles, or cpu-clock without a PMU */
	uint64_t freq;       /* -F; 0: not given */
	uint64_t period;     /* -c; 0: not given */
	bool callgraph;      /* --callgraph */
	const char *output;  /* -o */
	double duration;     /* --duration seconds; 0: until Ctrl-C or the VM exits */
	const char *guest_export; /* --guest-export: a Linux guest's `kvmprof-agent export`, for its task layout */
	bool quiet;
};

/* Prints its own messages. Returns the exit status: 0, or 1 when nothing usable was recorded. */
int host_record_run(const struct host_record_opts *o);

#endif
