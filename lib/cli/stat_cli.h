/* SPDX-License-Identifier: MIT */
/*
 * The options `kvmprof-agent stat` and `kvmprof stat` share (perf stat's
 * -e, -r, -x, -o, -B/--no-big-num, -a, -p, a command after them, --help)
 * and one parser for them, as record_cli does for record. A program adds
 * its own options (kvmprof's --vm, --domain) through own_option.
 */
#ifndef KVMPROF_STAT_CLI_H
#define KVMPROF_STAT_CLI_H

#include <getopt.h>
#include <stdio.h>

#include "stat/stat_count.h"

struct stat_cli {
	const char *prog;  /* what messages start with: "kvmprof-agent" */
	const char *usage; /* after a usage error; with help for --help */
	const char *help;
	/* After help for --help (NULL: nothing): a section the program makes from its own tables. */
	void (*help_more)(FILE *out);
	const char *own_shortopts; /* the program's own, getopt style */
	const struct option *own_longopts; /* NULL or ending with a zero entry */
	/* One of the program's own options: 0, or the exit status to end with; -1: not one. */
	int (*own_option)(int c, const char *arg, void *ctx);
	void *ctx;
};

/*
 * Parses argv (argv[0] is "stat") into o, which it clears first; options
 * end at the first argument that is none (the command). -1 when that went
 * through, else the exit status: 0 after --help, 2 for bad usage.
 */
int stat_cli_parse(const struct stat_cli *cli, int argc, char **argv, struct stat_opts *o);

/* -a, -p and a command: -1 when they go together (-p or -a with a command is "for as long as it runs"), else 2. */
int stat_cli_check_target(const struct stat_cli *cli, const struct stat_opts *o);

#endif
