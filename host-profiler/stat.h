/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof stat --vm SOCKET -e EVENTS`: counting mode, split by domain as
 * far as the host allows: per-thread counters of the VMM's threads (with
 * exclude_guest / exclude_host where a hardware PMU exists), the kernel's
 * own accounting of each thread's user, system and guest time, and the
 * VMM's vPMU figures.
 */
#ifndef HOST_STAT_H
#define HOST_STAT_H

#include "events.h"

#define HOST_STAT_MAX_EVENTS 8

struct host_stat_opts {
	const char *vm;
	struct events_event events[HOST_STAT_MAX_EVENTS];
	int nevents; /* 0: task-clock */
	double duration; /* 0: until Ctrl-C or the VM exits */
};

int host_stat_run(const struct host_stat_opts *o);

#endif
