/* SPDX-License-Identifier: MIT */
/*
 * The command table both programs dispatch through, in perf's shape
 * (tools/perf/perf.c's commands[]): each command is a file that owns its
 * options and its cmd_* function, and a row here; the program's usage and
 * --help are made from the rows, so a new command is one file and one row.
 */
#ifndef KVMPROF_CLI_COMMAND_H
#define KVMPROF_CLI_COMMAND_H

#include <stdio.h>

struct cli_command {
	const char *name;
	/* What follows "usage: PROG NAME" in the program's usage, one line. */
	const char *synopsis;
	/* The --help line: at most ~64 columns a line, further lines after '\n'. */
	const char *summary;
	/* argv[0] is the command's name, as if it were its own program. */
	int (*run)(int argc, char **argv);
};

struct cli_program {
	const char *name;  /* "kvmprof-agent" */
	const char *about; /* --help's paragraph after the usage, '\n'-ended lines */
	const struct cli_command *commands; /* ends with a row whose name is NULL */
};

/*
 * Runs the command argv[1] names with argv + 1; --help (-h, help) and
 * --version (-V: the version and the sample format it writes) print to
 * stdout and return 0; no command, or one not in
 * the table, prints the usage on stderr and returns 2.
 */
int cli_program_main(const struct cli_program *p, int argc, char **argv);
/* The program's usage: a line per command, then --help | --version. */
void cli_program_usage(const struct cli_program *p, FILE *f);

#endif
