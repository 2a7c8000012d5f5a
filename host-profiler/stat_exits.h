/* SPDX-License-Identifier: MIT */
/*
 * kvmprof stat's VM exits by reason: the VMM counts them per reason, with
 * the host time from each exit to the vCPU's next entry, while this
 * connection holds its exit-stats (docs/control-socket.md); stat reads the
 * totals at its start and end and prints the difference. A VMM without
 * the command (older) gets one line saying so.
 */
#ifndef HOST_STAT_EXITS_H
#define HOST_STAT_EXITS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "vm_client.h"

#define STAT_EXITS_MAX_REASONS 96
#define STAT_EXITS_NAME_MAX 32

struct stat_exit_reason {
	char name[STAT_EXITS_NAME_MAX];
	uint64_t count, host_ns;
};

struct stat_exit_totals {
	unsigned int n;
	struct stat_exit_reason reason[STAT_EXITS_MAX_REASONS];
};

struct stat_exits {
	bool on;       /* the VMM counts exits for this connection */
	char why[320]; /* else: why not, for the output */
	unsigned int vcpus; /* the VMM's vCPU count, from its reply */
	struct stat_exit_totals start;
};

/* Asks the VMM to count exits (exit-stats start) and keeps the totals at this moment. */
void stat_exits_start(struct stat_exits *s, struct vm_client *vm);
/*
 * Reads the totals now (unless the VM is gone) and prints the table of
 * what changed since stat_exits_start: per reason the count, the host
 * time, its mean per exit and its share of the vCPUs' time in interval_ns.
 */
void stat_exits_print(FILE *f, struct stat_exits *s, struct vm_client *vm, bool vm_gone, uint64_t interval_ns);

#endif
