/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof-agent record`: sample with perf_event_open and write a kvmprof
 * sample file as the samples come (a crash leaves a readable, truncated
 * file; SIGINT/SIGTERM end the recording cleanly with an END record).
 */
#ifndef AGENT_RECORD_H
#define AGENT_RECORD_H

#include <stdbool.h>
#include <sys/types.h>

#include "cli/record_cli.h"

struct agent_record_opts {
	struct record_opts rec; /* -e, -F, -c, -g, -o, -q */
	bool all;           /* -a */
	pid_t pid;          /* -p; 0: none */
	char **argv;        /* -- CMD ARGS; NULL: none */
	unsigned mmap_pages; /* -m: per CPU ring, power of two; 0: default */
};

/*
 * Records until the command exits, the process given with -p exits, or
 * SIGINT/SIGTERM. Prints its own messages (it is the record command's
 * edge). Returns the exit status for the CLI: the command's status for
 * `-- CMD`, 0 otherwise, 1 on errors.
 */
int record_run(const struct agent_record_opts *o);

#endif
