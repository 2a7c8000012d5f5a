/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof-agent record`: sample with perf_event_open and write a kvmprof
 * sample file as the samples come (a crash leaves a readable, truncated
 * file; SIGINT/SIGTERM end the recording cleanly with an END record).
 */
#ifndef AGENT_RECORD_H
#define AGENT_RECORD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "events.h"

#define RECORD_DEFAULT_HZ 1000
#define RECORD_DEFAULT_OUTPUT "kvmprof.data"
#define RECORD_MAX_EVENTS 16

struct record_opts {
	struct events_event events[RECORD_MAX_EVENTS];
	int nevents;        /* 0: cycles */
	uint64_t freq;      /* -F; 0: not given */
	uint64_t period;    /* -c; 0: not given */
	bool callgraph;     /* -g */
	const char *output; /* -o */
	bool all;           /* -a */
	pid_t pid;          /* -p; 0: none */
	char **argv;        /* -- CMD ARGS; NULL: none */
	unsigned mmap_pages; /* per CPU ring, power of two; 0: default */
	bool quiet;         /* no progress line (the summary still comes) */
};

/*
 * Records until the command exits, the process given with -p exits, or
 * SIGINT/SIGTERM. Prints its own messages (it is the record command's
 * edge). Returns the exit status for the CLI: the command's status for
 * `-- CMD`, 0 otherwise, 1 on errors.
 */
int record_run(const struct record_opts *o);

#endif
