/* SPDX-License-Identifier: MIT */
/*
 * Counting as perf stat does, for `kvmprof-agent stat` and `kvmprof stat`
 * on the host: a command (from its exec, with its children), a running
 * process's threads (-p) or every CPU (-a), with perf_event_open counters,
 * -r N times, printed by stat_format. Ctrl-C ends the counting and prints
 * what was counted; a command's exit status is the result.
 */
#ifndef KVMPROF_STAT_COUNT_H
#define KVMPROF_STAT_COUNT_H

#include <stdbool.h>
#include <sys/types.h>

#include "collection/events.h"

#define STAT_MAX_EVENTS 16
#define STAT_MAX_RUNS 100000

struct stat_opts {
	struct events_event events[STAT_MAX_EVENTS];
	int nevents;        /* -e; 0: perf's default list (stat_default_events) */
	unsigned repeat;    /* -r; 0: once */
	const char *sep;    /* -x SEP: CSV; NULL: the table */
	const char *output; /* -o FILE; NULL: standard error, as perf */
	bool no_big_num;    /* --no-big-num: no thousands separators */
	bool all;           /* -a: every CPU */
	pid_t pid;          /* -p: a running process; 0: none */
	char **argv;        /* the command; NULL: none (then until Ctrl-C, or -p's process exits) */
};

/* perf stat's default events: task-clock, context-switches, ..., branch-misses. Returns how many. */
int stat_default_events(struct events_event *ev, int max);

/* Counts as o says and prints the counts: the exit status (the command's, when one ran). */
int stat_count_run(const char *prog, const struct stat_opts *o);

#endif
