/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof-agent annotate`: one function's instructions with their samples
 * and source lines, as perf annotate --stdio prints them
 * (lib/report/report_annotate.c), over the report command in lib/cli/report_cli.c:
 * the same -i, -o, --guest-root, --kallsyms, --recover and --no-demangle
 * as `kvmprof-agent report`.
 */
#include <stdio.h>

#include "agent_report.h"
#include "report/report.h"
#include "cli/report_annotate_cli.h"
#include "cli/report_cli.h"

static const char annotate_usage[] =
	"usage: kvmprof-agent annotate [SYMBOL] [-i FILE] [--dso IMAGE] [-M att|intel] [-o OUT]\n"
	"                              [--guest-root DIR] [--kallsyms FILE] [--recover] [--no-demangle]\n";

static const char annotate_help[] =
	"\n"
	"Like perf annotate --stdio: one function's instructions, disassembled from its\n"
	"ELF file, each with the share and count of the function's samples that fell on\n"
	"it, and the source file:line above them where the file has debug info (-g).\n"
	"\n"
	"  SYMBOL              the function (default: the one with the most samples)\n"
	"  -i, --input FILE    sample file (default kvmprof.data; '-' is standard input)\n"
	"  -d, --dso IMAGE     the function of this image (its name as report shows it, or\n"
	"                      its path), when several have one of that name\n"
	"  -M, --disassembler-style att|intel  the syntax (default att, as perf's)\n"
	"  -o, --output OUT    write there instead of standard output\n"
	"  -r, --guest-root DIR  look up the recorded files as DIR/path\n"
	"  -k, --kallsyms FILE  kernel symbols when the sample file carries none\n"
	"      --recover       read a damaged file up to the damage\n"
	"      --no-demangle   C++ and Rust names as the files have them (SYMBOL too)\n"
	"\n"
	"Counts are of the first event with samples; a sample counts on the\n"
	"instruction at its own address (its first frame). Samples that fell inside an\n"
	"instruction, not on its first byte, are counted apart and said. Kernel\n"
	"symbols from kallsyms have no code to show.\n";

struct agent_annotate_args {
	struct agent_report_args report; /* --kallsyms */
	struct report_annotate_options opt;
};

static int own_option(int c, const char *arg, void *ctx)
{
	struct agent_annotate_args *a = ctx;
	int r = report_annotate_option(c, arg, &a->opt, annotate_usage);

	return r >= 0 ? r : agent_report_option(c, arg, &a->report);
}

static int operand(const char *arg, void *ctx)
{
	return report_annotate_operand(arg, &((struct agent_annotate_args *)ctx)->opt, annotate_usage);
}

static void profile_options(const struct report_cli_args *a, struct profile_options *popt, void *ctx)
{
	agent_report_profile_options(a, popt, &((struct agent_annotate_args *)ctx)->report);
}

static int render(FILE *out, struct profile *p, const struct report_cli_args *a, void *ctx)
{
	struct agent_annotate_args *own = ctx;

	(void)a;
	/* As the report's table is per event: the counts are of one. */
	own->opt.event = report_folded_event(p);
	return report_annotate(out, p, &own->opt);
}

int agent_annotate_main(int argc, char **argv)
{
	static const struct option own_longopts[] = {
		{ "kallsyms", required_argument, NULL, 'k' },
		REPORT_ANNOTATE_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct agent_annotate_args own = { .opt = { .prog = "kvmprof-agent annotate" } };
	const struct report_cli cli = {
		.prog = "kvmprof-agent", .cmd = "kvmprof-agent annotate", .usage = annotate_usage, .help = annotate_help,
		.own_shortopts = "k:" REPORT_ANNOTATE_SHORTOPTS, .own_longopts = own_longopts, .own_option = own_option,
		.own_operand = operand, .one_format = true, .profile_options = profile_options, .render = render,
		.ctx = &own,
	};

	return report_cli_main(&cli, argc, argv);
}
