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

#include "record_cli.h"

struct host_record_opts {
	/* -e, -F, -c, -g, -o, -q; one event (events[0] when nevents is 1), else cycles, or cpu-clock without a PMU */
	struct record_opts rec;
	const char *vm;      /* --vm: the control socket */
	double duration;     /* --duration seconds; 0: until Ctrl-C or the VM exits */
	const char *guest_export; /* --guest-export: a Linux guest's `kvmprof-agent export`, for its task layout */
	bool no_exits;       /* --no-exits: no VM_EXIT records (when their cost, docs/benchmarks.md, is not wanted) */
};

/* Prints its own messages. Returns the exit status: 0, or 1 when nothing usable was recorded. */
int host_record_run(const struct host_record_opts *o);

#endif
