/* SPDX-License-Identifier: MIT */
/*
 * The report command both programs run (`kvmprof-agent report`, `kvmprof
 * report`), and those that read a recording as it does (`script`, with
 * its one format): the options they share (-i, -o, -f/--format,
 * -r/--guest-root, --recover, --help), loading the sample file
 * (profile_load), the refusal to write binary to a terminal, writing to
 * -o FILE or standard output, and the messages for all of it. Each program brings its own options
 * (sort keys, symbol sources, --guest-export), its loader options and its
 * renderer through struct report_cli.
 */
#ifndef KVMPROF_REPORT_CLI_H
#define KVMPROF_REPORT_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "profile/profile.h"
#include "report/report_format.h"

/* The shared options, parsed. */
struct report_cli_args {
	const char *input;  /* -i; default kvmprof.data, '-' standard input */
	const char *output; /* -o; NULL: standard output */
	const char *root;   /* -r, --guest-root: where the recorded system's files are */
	bool recover;       /* --recover */
	bool no_demangle;   /* --no-demangle: C++ and Rust names as mangled */
	const struct report_format *format; /* -f, or the -o name's; text by default */
};

struct report_cli {
	const char *prog;  /* what messages start with: "kvmprof-agent" */
	const char *cmd;   /* usage errors and the --recover hint name it: "kvmprof-agent report" */
	const char *usage; /* after a usage error; with help for --help */
	const char *help;
	const char *own_shortopts; /* the program's own, getopt style ("s:gk:") */
	const struct option *own_longopts; /* the program's own; NULL or ending with a zero entry */
	/* One of the program's own options: 0, the exit status to end with, or -1: not one. */
	int (*own_option)(int c, const char *arg, void *ctx);
	/* An argument that is no option (annotate's SYMBOL): 0, the exit status, or -1: refused. NULL: none taken. */
	int (*own_operand)(const char *arg, void *ctx);
	/* After parsing (NULL: nothing to check): -1 to go on, else the exit status. */
	int (*check)(void *ctx);
	/* The loader's options besides recover and warn, which the driver sets. */
	void (*profile_options)(const struct report_cli_args *a, struct profile_options *popt, void *ctx);
	/* After loading, before rendering (NULL: nothing): 0 or -errno. */
	int (*prepare)(struct profile *p, void *ctx);
	/*
	 * Renders the profile to out: 0 or -errno (-EIO when writing failed;
	 * -ECANCELED: it told the user why itself).
	 */
	int (*render)(FILE *out, struct profile *p, const struct report_cli_args *a, void *ctx);
	/*
	 * An input that is a directory of recordings (kvmprof record
	 * --all-domains), rendered to out: 0 or -errno (-ECANCELED: it told
	 * the user why). NULL: a directory is refused.
	 */
	int (*directory)(FILE *out, const struct report_cli_args *a, const struct profile_options *popt, void *ctx);
	/* Formats other than text say on stderr how many samples have no symbol (the table has a footer). */
	bool note_unresolved;
	/* The command has one output of its own (script, annotate): no -f/--format; a->format stays text. */
	bool one_format;
	/* The program's view of the formats: --help lists them in its words (NULL with one_format). */
	const struct report_view *view;
	void *ctx;
};

/* argv[0] is "report". Returns the exit status: 0, 1 (bad input, I/O), 2 (usage). */
int report_cli_main(const struct report_cli *cli, int argc, char **argv);

#endif
