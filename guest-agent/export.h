/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof-agent export`: the guest's kernel symbols and process maps as a
 * sample stream without samples, sent over the agent channel (guest COM2,
 * /dev/ttyS1) for the host's system-wide profiler.
 */
#ifndef AGENT_EXPORT_H
#define AGENT_EXPORT_H

#include <stddef.h>
#include <stdbool.h>
#include <sys/types.h>

#define EXPORT_DEFAULT_DEVICE "/dev/ttyS1"

struct export_opts {
	const char *output; /* NULL: EXPORT_DEFAULT_DEVICE */
	pid_t *pids;        /* NULL: every process in /proc */
	size_t npids;
	bool all_symbols; /* false: text symbols of kallsyms only */
};

/* Prints its messages and the summary; returns the CLI's exit status (0 or 1). */
int export_run(const struct export_opts *o);

#endif
