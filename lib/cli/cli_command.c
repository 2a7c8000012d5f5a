/* SPDX-License-Identifier: MIT */
#include "cli/cli_command.h"

#include <string.h>

#include "kvmprof/sample_format.h"
#include "kvmprof/version.h"

#define SUMMARY_INDENT 11 /* "  " and the name in 8 columns and a space */

void cli_program_usage(const struct cli_program *p, FILE *f)
{
	const char *lead = "usage: ";

	for (const struct cli_command *c = p->commands; c->name; c++) {
		fprintf(f, "%s%s %s %s\n", lead, p->name, c->name, c->synopsis);
		lead = "       ";
	}
	fprintf(f, "%s%s --help | --version\n", lead, p->name);
}

static void print_help(const struct cli_program *p)
{
	cli_program_usage(p, stdout);
	printf("\n%s\n", p->about);
	for (const struct cli_command *c = p->commands; c->name; c++) {
		const char *s = c->summary, *nl;

		printf("  %-8s ", c->name);
		/* Each further line of the summary under the first. */
		while ((nl = strchr(s, '\n'))) {
			printf("%.*s\n%*s", (int)(nl - s), s, SUMMARY_INDENT, "");
			s = nl + 1;
		}
		printf("%s\n", s);
	}
	printf("\n`%s COMMAND --help` describes each command's options.\n", p->name);
}

int cli_program_main(const struct cli_program *p, int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL;

	if (!sub) {
		cli_program_usage(p, stderr);
		return 2;
	}
	if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
		print_help(p);
		return 0;
	}
	if (!strcmp(sub, "--version") || !strcmp(sub, "-V")) {
		printf("%s %s (sample format %d.%d)\n", p->name, KVMPROF_VERSION, KP_FILE_VERSION_MAJOR,
		       KP_FILE_VERSION_MINOR);
		return 0;
	}
	for (const struct cli_command *c = p->commands; c->name; c++)
		if (!strcmp(sub, c->name))
			return c->run(argc - 1, argv + 1);
	fprintf(stderr, "%s: unknown subcommand '%s'\n", p->name, sub);
	cli_program_usage(p, stderr);
	return 2;
}
