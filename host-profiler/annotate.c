/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof annotate`: one function of a system-wide recording, a guest's or
 * the VMM's, its instructions with their samples and source lines, as perf
 * annotate --stdio prints them (lib/report/report_annotate.c), over the report
 * command in lib/cli/report_cli.c: the same -i, -o, --guest-root,
 * --guest-kernel, --guest-kallsyms, --guest-export, --recover and
 * --no-demangle as `kvmprof report`.
 */
#include <stdio.h>

#include "cli/cli.h"
#include "host_report.h"
#include "report/report.h"
#include "cli/report_annotate_cli.h"
#include "cli/report_cli.h"

static const char annotate_usage[] =
	"usage: kvmprof annotate [SYMBOL] [-i FILE] [--dso IMAGE] [-M att|intel] [-o OUT]\n"
	"                        [--guest-root DIR] [--guest-kernel ELF | --guest-kallsyms FILE]\n"
	"                        [--guest-export FILE] [--recover] [--no-demangle]\n";

static const char annotate_help[] =
	"\n"
	"Like perf annotate --stdio, for a function of the guest or of the VMM: its\n"
	"instructions, disassembled from its ELF file, each with the share and count of\n"
	"the function's samples that fell on it, and the source file:line above them\n"
	"where the file has debug info.\n"
	"\n"
	"  SYMBOL                  the function (default: the one with the most samples)\n"
	"  -i, --input FILE        the recording (default kvmprof.data; '-' is standard input)\n"
	"  -d, --dso IMAGE         the function of this image (its name as report shows it,\n"
	"                          or its path), when several have one of that name\n"
	"  -M, --disassembler-style att|intel  the syntax (default att, as perf's)\n"
	"  -o, --output OUT        write there instead of standard output\n"
	"  -r, --guest-root DIR    the guest's files on the host (build/guest for the\n"
	"                          bundled guest): guest programs' code is read there\n"
	"  -k, --guest-kernel ELF  the guest kernel's ELF file: guest kernel functions'\n"
	"                          symbols and code\n"
	"  -K, --guest-kallsyms FILE  the guest's /proc/kallsyms (symbols, no code)\n"
	"  -x, --guest-export FILE a guest's `kvmprof-agent export` stream\n"
	"      --recover           read a damaged file up to the damage\n"
	"      --no-demangle       C++ and Rust names as the files have them (SYMBOL too)\n"
	"\n"
	"A sample counts on the instruction at its own address (its first frame), guest\n"
	"and host samples alike. Samples that fell inside an instruction, not on its\n"
	"first byte, are counted apart and said. Kernel symbols from kallsyms have no\n"
	"code to show.\n";

struct host_annotate_args {
	struct host_report_args report; /* the guest's symbol sources */
	struct report_annotate_options opt;
};

static int own_option(int c, const char *arg, void *ctx)
{
	struct host_annotate_args *a = ctx;
	int r = report_annotate_option(c, arg, &a->opt, annotate_usage);

	return r >= 0 ? r : host_report_option(c, arg, &a->report);
}

static int operand(const char *arg, void *ctx)
{
	return report_annotate_operand(arg, &((struct host_annotate_args *)ctx)->opt, annotate_usage);
}

static int check(void *ctx)
{
	const struct host_report_args *a = &((struct host_annotate_args *)ctx)->report;

	/* As report's rule, told with this command's usage. */
	if (a->guest_kernel && a->guest_kallsyms)
		return cli_usage_error("kvmprof annotate", annotate_usage, "--guest-kernel and --guest-kallsyms exclude each other");
	return -1;
}

static void profile_options(const struct report_cli_args *a, struct profile_options *popt, void *ctx)
{
	host_report_profile_options(a, popt, &((struct host_annotate_args *)ctx)->report);
}

static int render(FILE *out, struct profile *p, const struct report_cli_args *a, void *ctx)
{
	(void)a;
	return report_annotate(out, p, &((const struct host_annotate_args *)ctx)->opt);
}

int host_annotate_main(int argc, char **argv)
{
	static const struct option own_longopts[] = {
		{ "guest-kernel", required_argument, NULL, 'k' },
		{ "guest-kallsyms", required_argument, NULL, 'K' },
		{ "guest-export", required_argument, NULL, 'x' },
		REPORT_ANNOTATE_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	/* Every sample counts: the host's and the guest's are one time line, as in the table. */
	struct host_annotate_args own = {
		.report = { .argc = argc, .argv = argv },
		.opt = { .prog = "kvmprof annotate", .event = PROFILE_NONE },
	};
	const struct report_cli cli = {
		.prog = "kvmprof", .cmd = "kvmprof annotate", .usage = annotate_usage, .help = annotate_help,
		.own_shortopts = "k:K:x:" REPORT_ANNOTATE_SHORTOPTS, .own_longopts = own_longopts, .own_option = own_option,
		.own_operand = operand, .one_format = true, .check = check, .profile_options = profile_options,
		.render = render, .ctx = &own,
	};

	return report_cli_main(&cli, argc, argv);
}
