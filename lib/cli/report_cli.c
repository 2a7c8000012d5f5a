/* SPDX-License-Identifier: MIT */
#include "cli/report_cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

/* Long-only options take codes above any character, clear of both programs' own short options. */
#define OPT_NO_DEMANGLE 0x100

static const struct option shared_longopts[] = {
	{ "input", required_argument, NULL, 'i' },  { "format", required_argument, NULL, 'f' },
	{ "output", required_argument, NULL, 'o' }, { "guest-root", required_argument, NULL, 'r' },
	{ "recover", no_argument, NULL, 'R' },	    { "help", no_argument, NULL, 'h' },
	{ "no-demangle", no_argument, NULL, OPT_NO_DEMANGLE },
};
#define NR_SHARED (sizeof(shared_longopts) / sizeof(shared_longopts[0]))

/*
 * -o's name picks the format when -f is not given; a -f that contradicts
 * the name is refused rather than writing, say, folded stacks into x.svg.
 * -1 to go on, else the exit status (2).
 */
static int check_output_name(const struct report_cli *cli, struct report_cli_args *a, bool format_given)
{
	const struct report_format *named = NULL;
	int k;

	if (cli->one_format || !a->output)
		return -1;
	k = report_format_of_name(a->output, &named);
	if (k < 0 && !format_given)
		return cli_usage_error(cli->cmd, cli->usage,
				       "-o %s: which format? name it .pb.gz for pprof, or give --format", a->output);
	if (k > 0 && format_given && named != a->format)
		return cli_usage_error(cli->cmd, cli->usage, "-o %s is named for %s, but --format is %s", a->output,
				       named->name, a->format->name);
	if (k > 0)
		a->format = named;
	return -1;
}

/* --help's list of the formats, from their table in the program's words. */
static void print_formats(const struct report_view *v)
{
	char text[512];

	printf("\nFormats (-f FMT; without -f, an -o name with a format's ending picks it):\n");
	for (const struct report_format *f = report_formats(); f->name; f++) {
		int n = snprintf(text, sizeof(text), "%s", report_format_help(f, v));

		if (f->suffix && n > 0 && (size_t)n < sizeof(text))
			snprintf(text + n, sizeof(text) - (size_t)n, "; -o *%s", f->suffix);
		cli_help_item(stdout, 10, f->name, text);
	}
}

/* -1 to go on, else the exit status. */
static int parse_args(const struct report_cli *cli, int argc, char **argv, struct report_cli_args *a)
{
	struct option longopts[NR_SHARED + CLI_OWN_LONGOPTS_MAX + 1], shared[NR_SHARED];
	size_t nshared = 0;
	char shortopts[128];
	bool format_given = false;
	int c, r;

	/* A command with one output (script) has no -f: it is then an unknown option. */
	for (size_t i = 0; i < NR_SHARED; i++)
		if (!cli->one_format || shared_longopts[i].val != 'f')
			shared[nshared++] = shared_longopts[i];
	cli_merge_longopts(longopts, shared, nshared, cli->own_longopts);
	snprintf(shortopts, sizeof(shortopts), ":i:%so:r:h%s", cli->one_format ? "" : "f:",
		 cli->own_shortopts ? cli->own_shortopts : "");
	*a = (struct report_cli_args){ .input = "kvmprof.data", .format = report_format_default() };
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			a->input = optarg;
			continue;
		case 'f':
			a->format = report_format_find(optarg);
			if (!a->format) {
				char names[128];

				report_format_names(names, sizeof(names), ", ", " or ");
				return cli_usage_error(cli->cmd, cli->usage, "unknown format '%s' (%s)", optarg, names);
			}
			format_given = true;
			continue;
		case 'o':
			a->output = optarg;
			continue;
		case 'r':
			a->root = optarg;
			continue;
		case 'R':
			a->recover = true;
			continue;
		case OPT_NO_DEMANGLE:
			a->no_demangle = true;
			continue;
		case 'h':
			printf("%s%s", cli->usage, cli->help);
			if (!cli->one_format)
				print_formats(cli->view);
			return 0;
		case ':':
			return cli_usage_error(cli->cmd, cli->usage, "option '%s' needs an argument", argv[optind - 1]);
		case '?':
			return cli_usage_error(cli->cmd, cli->usage, "unknown option '%s'", argv[optind - 1]);
		}
		r = cli->own_option ? cli->own_option(c, optarg, cli->ctx) : -1;
		if (r < 0)
			return cli_usage_error(cli->cmd, cli->usage, "unknown option '%s'", argv[optind - 1]);
		if (r)
			return r;
	}
	/* getopt_long moved the operands to the end. */
	for (; optind < argc; optind++) {
		r = cli->own_operand ? cli->own_operand(argv[optind], cli->ctx) : -1;
		if (r < 0)
			return cli_usage_error(cli->cmd, cli->usage, "unexpected argument '%s'", argv[optind]);
		if (r)
			return r;
	}
	r = check_output_name(cli, a, format_given);
	if (r >= 0)
		return r;
	return cli->check ? cli->check(cli->ctx) : -1;
}

/* A binary format (pprof) without -o must not go to a terminal. 0 or 2. */
static int check_output(const char *cmd, const struct report_format *format, const char *output)
{
	/* Checked before the (possibly long) load, so the mistake is told at once. */
	if (format->binary && !output && isatty(STDOUT_FILENO)) {
		fprintf(stderr, "%s: %s output is binary: give -o FILE or redirect it\n", cmd, format->name);
		return 2;
	}
	return 0;
}

/*
 * Renders p (NULL: the directory a->input) to output ("wb" for pprof; NULL:
 * standard output). 0, or 1 after "prog: OUTPUT: reason".
 */
static int write_report(const struct report_cli *cli, const struct report_cli_args *a, struct profile *p,
			const struct profile_options *popt)
{
	FILE *out = stdout;
	int rc, status = 0;

	if (a->output) {
		out = fopen(a->output, a->format->binary ? "wb" : "w");
		if (!out) {
			fprintf(stderr, "%s: %s: %s\n", cli->prog, a->output, strerror(errno));
			return 1;
		}
	}
	rc = p ? cli->render(out, p, a, cli->ctx) : cli->directory(out, a, popt, cli->ctx);
	if (rc == -ECANCELED) {
		status = 1; /* the renderer said why */
	} else if (rc) {
		fprintf(stderr, "%s: %s: %s\n", cli->prog, a->output ? a->output : "standard output", strerror(-rc));
		status = 1;
	}
	/* A full disk may only show at fclose: the file is then incomplete. */
	if (out != stdout && fclose(out) && !status) {
		fprintf(stderr, "%s: %s: %s\n", cli->prog, a->output, strerror(errno));
		status = 1;
	}
	return status;
}

static void print_warning(void *ctx, const char *msg)
{
	fprintf(stderr, "%s: warning: %s\n", (const char *)ctx, msg);
}

int report_cli_main(const struct report_cli *cli, int argc, char **argv)
{
	struct profile_options popt = { 0 };
	struct report_cli_args a;
	struct stat st;
	struct profile *p;
	char err[512];
	int rc, status;

	rc = parse_args(cli, argc, argv, &a);
	if (rc >= 0)
		return rc;
	rc = check_output(cli->cmd, a.format, a.output);
	if (rc)
		return rc;
	if (cli->profile_options)
		cli->profile_options(&a, &popt, cli->ctx);
	popt.recover = a.recover;
	popt.no_demangle = a.no_demangle;
	popt.warn = print_warning;
	popt.warn_ctx = (void *)cli->prog;
	if (!stat(a.input, &st) && S_ISDIR(st.st_mode)) {
		if (!cli->directory) {
			fprintf(stderr, "%s: %s is a directory\n", cli->prog, a.input);
			return 1;
		}
		return write_report(cli, &a, NULL, &popt);
	}
	rc = profile_load(&p, a.input, &popt, err, sizeof(err));
	if (rc) {
		char hint[128] = "";

		if (rc == -EBADMSG)
			snprintf(hint, sizeof(hint), " (`%s --recover` reads what precedes the damage)", cli->cmd);
		fprintf(stderr, "%s: %s%s\n", cli->prog, err, hint);
		return 1;
	}
	rc = cli->prepare ? cli->prepare(p, cli->ctx) : 0;
	if (rc) {
		fprintf(stderr, "%s: %s\n", cli->prog, rc == -ENOMEM ? "out of memory" : strerror(-rc));
		profile_free(p);
		return 1;
	}
	status = write_report(cli, &a, p, &popt);
	if (!status && cli->note_unresolved && a.format->stacks && p->unresolved)
		fprintf(stderr, "%s: %" PRIu64 " of %zu samples have no symbol\n", cli->prog, p->unresolved,
			p->nr_samples);
	profile_free(p);
	return status;
}
