/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof script`: every sample of a system-wide recording on its own
 * line, in time order, with its stack, as perf script prints them
 * (lib/report/report_script.c), each with its domain: guest-user, guest-kernel,
 * vmm-user or host-kernel (what `kvmprof report` calls guest user, guest
 * kernel, VMM user and host kernel). It runs over the report command in
 * lib/cli/report_cli.c with the report's guest options (--guest-root,
 * --guest-kernel, --guest-kallsyms, --guest-export, --no-cross-layer).
 */
#include <stdio.h>

#include "cli/cli.h"
#include "host_report.h"
#include "report/report.h"
#include "cli/report_cli.h"

static const char usage[] =
	"usage: kvmprof script [-i FILE] [-G] [-o OUT] [--guest-root DIR] [--guest-kernel ELF | --guest-kallsyms FILE]\n"
	"                      [--guest-export FILE] [--no-cross-layer] [--recover] [--no-demangle]\n";

static const char help[] =
	"\n"
	"Prints every sample of a `kvmprof record` file, in time order, as perf\n"
	"script does (flame-graph scripts such as stackcollapse-perf.pl read it):\n"
	"\n"
	"  COMM PID/TID DOMAIN [CPU] SECONDS.MICROSECONDS: PERIOD EVENT:\n"
	"  \\tIP SYMBOL+0xOFFSET (DSO)          one line per frame, innermost first\n"
	"\n"
	"then a blank line; without call chains in the recording (or with -G) the\n"
	"frame follows the event on the same line. DOMAIN, the one field perf does\n"
	"not print, is guest-user, guest-kernel, vmm-user (the VMM's own code on the\n"
	"host) or host-kernel. A guest sample's COMM, PID and CPU are the guest's\n"
	"(its process, its vCPU). A caller's IP is its return address.\n"
	"\n"
	"  -i, --input FILE        the recording (default kvmprof.data; '-' is standard input)\n"
	"  -G, --hide-call-graph   one line per sample: the sampled IP only\n"
	"  -o, --output OUT        write there instead of standard output\n"
	"  -r, --guest-root DIR    the guest's files on the host (build/guest for the\n"
	"                          bundled guest)\n"
	"  -k, --guest-kernel ELF  the guest kernel's ELF file, for guest kernel symbols\n"
	"  -K, --guest-kallsyms FILE  the guest's /proc/kallsyms, for guest kernel symbols\n"
	"  -x, --guest-export FILE a guest's `kvmprof-agent export` stream\n"
	"      --no-cross-layer    host samples keep their host stacks (by default, one\n"
	"                          taken while the VMM handled a VM exit goes on through\n"
	"                          the exit's frame, \"[exit: ...]\", into the guest's stack)\n"
	"      --recover           read a damaged file up to the damage, and say what was lost\n"
	"      --no-demangle       C++ and Rust function names as the files have them\n";

struct host_script_args {
	struct host_report_args report; /* the guest options */
	struct report_script_options opt;
};

static int own_option(int c, const char *arg, void *ctx)
{
	struct host_script_args *a = ctx;

	if (c == 'G') {
		a->opt.hide_callchain = true;
		return 0;
	}
	return host_report_option(c, arg, &a->report);
}

static int check(void *ctx)
{
	const struct host_script_args *a = ctx;

	if (a->report.guest_kernel && a->report.guest_kallsyms)
		return cli_usage_error("kvmprof script", usage, "--guest-kernel and --guest-kallsyms exclude each other");
	return -1;
}

static void profile_options(const struct report_cli_args *a, struct profile_options *popt, void *ctx)
{
	host_report_profile_options(a, popt, &((struct host_script_args *)ctx)->report);
}

/* One word each: line parsers split on spaces. */
static const char *domain(const struct profile *p, const struct profile_sample *s, void *ctx)
{
	static const char *const words[HOST_LAYER_COUNT] = {
		[HOST_LAYER_GUEST_USER] = "guest-user",
		[HOST_LAYER_GUEST_KERNEL] = "guest-kernel",
		[HOST_LAYER_GUEST_UNKNOWN] = "guest-unknown", /* a record's own cpl can say 0xff too */
		[HOST_LAYER_VMM_USER] = "vmm-user",
		[HOST_LAYER_HOST_KERNEL] = "host-kernel",
	};

	(void)p;
	(void)ctx;
	return words[host_layer_of(s)];
}

static int render(FILE *out, struct profile *p, const struct report_cli_args *a, void *ctx)
{
	(void)a;
	return report_script(out, p, &((const struct host_script_args *)ctx)->opt);
}

int host_script_main(int argc, char **argv)
{
	static const struct option own_longopts[] = {
		{ "hide-call-graph", no_argument, NULL, 'G' },
		{ "guest-kernel", required_argument, NULL, 'k' },
		{ "guest-kallsyms", required_argument, NULL, 'K' },
		{ "guest-export", required_argument, NULL, 'x' },
		{ "no-cross-layer", no_argument, NULL, 'C' },
		{ NULL, 0, NULL, 0 },
	};
	struct host_script_args own = { .opt = { .domain = domain } };
	const struct report_cli cli = {
		.prog = "kvmprof", .cmd = "kvmprof script", .usage = usage, .help = help,
		.own_shortopts = "Gk:K:x:", .own_longopts = own_longopts, .own_option = own_option, .check = check,
		.profile_options = profile_options, .render = render, .one_format = true, .ctx = &own,
	};

	return report_cli_main(&cli, argc, argv);
}
