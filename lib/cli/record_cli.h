/* SPDX-License-Identifier: MIT */
/*
 * The options `kvmprof-agent record` and `kvmprof record` share (-e, -F,
 * -c, -g, -o, -q, --help) and one parser for them, so that both take them
 * by the same rules and refuse them in the same words. Each program adds
 * the options that are its own (what to profile: -a, -p, a command; --vm,
 * --duration...) through record_cli.own_option.
 */
#ifndef KVMPROF_RECORD_CLI_H
#define KVMPROF_RECORD_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "collection/events.h"

#define RECORD_DEFAULT_HZ 1000
#define RECORD_DEFAULT_OUTPUT "kvmprof.data"
#define RECORD_MAX_EVENTS 16

/* How call chains are taken (-g, --call-graph MODE[,SIZE]); NONE is 0, so `if (o->callgraph)` reads as "any". */
enum record_callgraph {
	RECORD_CALLGRAPH_NONE = 0,
	RECORD_CALLGRAPH_FP,    /* the kernel walks frame pointers (-g, --call-graph fp) */
	RECORD_CALLGRAPH_DWARF, /* user registers and a stack copy, unwound by the report with CFI */
};
#define RECORD_DWARF_STACK_DEFAULT 8192 /* perf's default --call-graph dwarf copy size */

struct record_opts {
	struct events_event events[RECORD_MAX_EVENTS];
	int nevents;        /* -e; 0: the program's default event */
	uint64_t freq;      /* -F; 0: not given */
	uint64_t period;    /* -c; 0: not given */
	enum record_callgraph callgraph; /* -g, --callgraph, --call-graph MODE */
	uint32_t dwarf_stack; /* --call-graph dwarf,SIZE: bytes of user stack per sample (multiple of 8) */
	const char *output; /* -o; NULL: RECORD_DEFAULT_OUTPUT */
	bool quiet;         /* -q: no progress line (the summary still comes) */
};

/* A record command as the shared parser sees it. */
struct record_cli {
	const char *prog;  /* what messages start with: "kvmprof-agent" */
	const char *cmd_name; /* what usage errors name after it; NULL: "record" (kvmprof top parses record's options too) */
	const char *usage; /* after a usage error; with help for --help */
	const char *help;
	/* After help for --help (NULL: nothing): a section the program makes from its own tables. */
	void (*help_more)(FILE *out);
	int max_events;    /* -e's; 1: one event, a later -e replaces the earlier */
	unsigned long long max_freq; /* -F's upper bound, Hz */
	/* Options end at the first argument that is none: a command's own are not ours. */
	bool stop_at_command;
	const char *own_shortopts; /* the program's own, getopt style ("ap:m:") */
	const struct option *own_longopts; /* the program's own; NULL or ending with a zero entry */
	/* One of the program's own options: 0, or the exit status to end with. */
	int (*own_option)(int c, const char *arg, void *ctx);
	void *ctx;
};

/*
 * Parses argv (argv[0] is "record") into o, which it clears first. -1 when
 * that went through (optind is the first argument not parsed), else the
 * exit status: 0 after --help, 2 for bad usage (message on stderr).
 */
int record_cli_parse(const struct record_cli *cli, int argc, char **argv, struct record_opts *o);
/* -F and -c exclude each other: -1 when they don't clash, else 2 after the message. */
int record_cli_check_rate(const struct record_cli *cli, const struct record_opts *o);

#endif
