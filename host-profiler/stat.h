/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof stat --vm SOCKET | --domain NAME -e EVENTS`: counting mode,
 * split by domain as far as the host allows: per-thread counters of the
 * VM's threads (with exclude_guest / exclude_host where a hardware PMU
 * exists), the kernel's own accounting of each thread's user, system and
 * guest time, and kvmprof-vmm's vPMU figures and exits.
 */
#ifndef HOST_STAT_H
#define HOST_STAT_H

#include "stat/stat_count.h"
#include "vm_target_kind.h"

struct host_stat_opts {
	struct vm_target_choice target; /* --vm, --domain, ...: the VM (vm_target.h) */
	const char *connect; /* a libvirt domain's URI (NULL: qemu:///system) */
	double duration; /* 0: until Ctrl-C or the VM exits */
	/* -e (0 events: task-clock), -x, -o, --no-big-num; not -a, -p, -r or a command */
	struct stat_opts stat;
};

int host_stat_run(const struct host_stat_opts *o);

#endif
