/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof-agent script`: every sample of a recording on its own line, in
 * time order, with its stack, as perf script prints them (lib/report/report_script.c),
 * over the report command in lib/cli/report_cli.c: the same -i, -o,
 * --guest-root, --kallsyms, --recover and --no-demangle as `kvmprof-agent
 * report`.
 */
#include <stdio.h>

#include "agent_report.h"
#include "report/report.h"
#include "cli/report_cli.h"

static const char script_usage[] =
	"usage: kvmprof-agent script [-i FILE] [-G] [-o OUT] [--guest-root DIR] [--kallsyms FILE] [--recover]\n"
	"                            [--no-demangle]\n";

static const char script_help[] =
	"\n"
	"Prints every sample of a kvmprof sample file, in time order, as perf script\n"
	"does (flame-graph scripts such as stackcollapse-perf.pl read it):\n"
	"\n"
	"  COMM PID/TID DOMAIN [CPU] SECONDS.MICROSECONDS: PERIOD EVENT:\n"
	"  \\tIP SYMBOL+0xOFFSET (DSO)          one line per frame, innermost first\n"
	"\n"
	"then a blank line; without call chains in the recording (or with -G) the\n"
	"frame follows the event on the same line. DOMAIN (user or kernel) is the\n"
	"one field perf does not print. A caller's IP is its return address.\n"
	"\n"
	"  -i, --input FILE    sample file (default kvmprof.data; '-' is standard input)\n"
	"  -G, --hide-call-graph  one line per sample: the sampled IP only\n"
	"  -o, --output OUT    write there instead of standard output\n"
	"  -r, --guest-root DIR  look up the recorded files as DIR/path\n"
	"  -k, --kallsyms FILE  kernel symbols when the sample file carries none\n"
	"      --recover       read a damaged file up to the damage, and say what was lost\n"
	"      --no-demangle   C++ and Rust function names as the files have them\n";

struct agent_script_args {
	struct agent_report_args report; /* --kallsyms */
	struct report_script_options opt;
};

static int own_option(int c, const char *arg, void *ctx)
{
	struct agent_script_args *a = ctx;

	if (c == 'G') {
		a->opt.hide_callchain = true;
		return 0;
	}
	return agent_report_option(c, arg, &a->report);
}

static void profile_options(const struct report_cli_args *a, struct profile_options *popt, void *ctx)
{
	agent_report_profile_options(a, popt, &((struct agent_script_args *)ctx)->report);
}

static int render(FILE *out, struct profile *p, const struct report_cli_args *a, void *ctx)
{
	(void)a;
	return report_script(out, p, &((const struct agent_script_args *)ctx)->opt);
}

int agent_script_main(int argc, char **argv)
{
	static const struct option own_longopts[] = {
		{ "hide-call-graph", no_argument, NULL, 'G' },
		{ "kallsyms", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	struct agent_script_args own = { 0 };
	const struct report_cli cli = {
		.prog = "kvmprof-agent", .cmd = "kvmprof-agent script", .usage = script_usage, .help = script_help,
		.own_shortopts = "Gk:", .own_longopts = own_longopts, .own_option = own_option,
		.profile_options = profile_options, .render = render, .one_format = true, .ctx = &own,
	};

	return report_cli_main(&cli, argc, argv);
}
