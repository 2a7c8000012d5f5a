/* SPDX-License-Identifier: MIT */
/*
 * perf stat's output, for `kvmprof-agent stat` and every mode of `kvmprof
 * stat`: a table of counts with units, thousands separators and aligned
 * columns, a derived figure after '#' ("CPUs utilized" for the clocks, a
 * rate per second of task-clock time for the others), the spread of -r
 * runs as "( +- 1.23% )", and perf's -x CSV fields:
 *   value,unit,event[,spread%],run-time,pct-running,metric-value,metric-unit
 * Notes about one event are printed under that event's line only.
 */
#ifndef KVMPROF_STAT_FORMAT_H
#define KVMPROF_STAT_FORMAT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "kvmprof/sample_format.h"

/* A running mean and variance over runs (Welford's method), for -r. */
struct stat_spread {
	unsigned n;
	double mean, m2;
};

void stat_spread_add(struct stat_spread *s, double v);
/* The standard error of the mean, sqrt(variance / n), as perf prints it; 0 under two runs. */
double stat_spread_stderr(const struct stat_spread *s);
/* That error as a percentage of the mean; 0 when the mean is 0. */
double stat_spread_rel(const struct stat_spread *s);

enum stat_state {
	STAT_COUNTED,
	STAT_NOT_COUNTED,   /* opened, never ran (a sleeping process): perf's <not counted> */
	STAT_NOT_SUPPORTED, /* the host cannot count it (no hardware PMU): perf's <not supported> */
};

struct stat_event_result {
	char name[KP_EVENT_NAME_MAX];
	uint32_t type;    /* perf type and config: which unit and derived figure */
	uint64_t config;
	enum stat_state state;
	struct stat_spread value; /* the count of each run, scaled for multiplexing; ns for clocks */
	double enabled, running;  /* ns, summed over runs: the pct-running field */
	const char *note;         /* printed under the event's line (table only); NULL: none */
};

struct stat_output {
	FILE *f;
	const char *sep;    /* NULL: perf's table; else -x's separator */
	bool big_num;       /* thousands separators in the table (perf's -B, its default) */
	const char *target; /* after "Performance counter stats for ": "'true'", "process id '42'" */
	unsigned runs;      /* -r: runs counted (1 when not repeated) */
	struct stat_spread elapsed_ns; /* wall time of each run */
	bool have_rusage;   /* user and sys times below (a single command run) */
	double user_s, sys_s;
};

/*
 * v with `decimals` decimals, and with big_num a ',' between thousands:
 * 1234567.891, 2 -> "1,234,567.89". Negative values keep their sign.
 */
void stat_format_number(char *buf, size_t len, double v, int decimals, bool big_num);

/*
 * The derived figure after '#' for ev[i] (from means over runs), as perf
 * gives it: the clocks' "CPUs utilized" (their time over the wall time),
 * cycles' "GHz" and instructions' "insn per cycle" (when cycles and
 * task-clock are counted too), and for any other event a rate per second
 * of task-clock time ("/sec", "K/sec", "M/sec", "G/sec"). false: none.
 */
bool stat_format_metric(const struct stat_event_result *ev, int n, int i, double elapsed_ns, double *value,
			const char **unit);

/* The whole report: header, one line per event (and its note), elapsed time and rusage; or CSV lines. */
void stat_format_print(const struct stat_output *o, const struct stat_event_result *ev, int n);

#endif
