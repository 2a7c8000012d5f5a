/* SPDX-License-Identifier: MIT */
/* kvmprof top: its options (-e, -F and -c are record's, the table's report's); the display is top.c's. */
#include <getopt.h>
#include <stdbool.h>
#include <string.h>

#include "cli/cli.h"
#include "domain_sampler.h"
#include "host_commands.h"
#include "host_report.h"
#include "host_top.h"
#include "cli/record_cli.h"
#include "cli/report_table_cli.h"

/* After "usage: kvmprof top " and every VM target's option (vm_target_command). */
static const char top_usage_tail[] =
	" [--connect URI] [--guest-hz HZ]\n"
	"                   [-e EVENT] [-F HZ | -c PERIOD] [-d SECONDS] [-n N] [--stdio]\n"
	"                   [--guest-root DIR] [--guest-kernel ELF] [--no-demangle]\n"
	"                   [-s KEYS] [--percent-limit PCT] [--comms|--pids|--tids|--dsos|--symbols LIST]\n"
	"                   [--percentage absolute|relative]\n";

static const char top_help[] =
	"\n"
	"Samples a running kvmprof-vmm as kvmprof record --vm does (its host threads with\n"
	"perf_event_open, its guest through the VMM's guest sampler) and every -d seconds\n"
	"shows the hottest symbols of those seconds: samples, %, domain (guest user,\n"
	"guest kernel, VMM user, host kernel), process, image and symbol. Each refresh\n"
	"counts its own seconds only (no decay, unlike perf top). On a terminal the\n"
	"screen is redrawn in place (q or Ctrl-C quits); otherwise, or with --stdio,\n"
	"each refresh is a block of plain text ending with an empty line.\n"
	"\n"
	"  --guest-hz HZ       --domain: register samples a second and vCPU, as for record\n"
	"  -e, --event EVENT   event to sample (default cycles; cpu-clock without a hardware\n"
	"                      PMU), as for kvmprof record\n"
	"  -F, --freq HZ       samples per second (default 1000)\n"
	"  -c, --count N       sample every N events instead (ns for cpu-clock and task-clock)\n"
	"  -d, --delay S       seconds between refreshes (default 2)\n"
	"  -n, --iterations N  exit after N refreshes (default: q, Ctrl-C, or the VM exiting)\n"
	"      --stdio         plain text blocks even when standard output is a terminal\n"
	"  --guest-root DIR    the guest's files (as for kvmprof report): its programs'\n"
	"                      symbols come from DIR/path\n"
	"  --guest-kernel ELF  the guest's kernel, when DIR does not hold it\n"
	"  --no-demangle       C++ and Rust names as the files have them (as for report)\n"
	"\n"
	"The table, as kvmprof report's (perf top's spellings):\n"
	"  -s, --sort KEYS     the rows' keys and the columns' order, comma-separated:\n"
	"                      domain, process, comm, pid, tid, dso (or image), sym (or\n"
	"                      symbol); default domain,process,sym\n"
	"      --percent-limit PCT  rows under PCT% of the samples are not shown\n"
	"      --comms LIST    only the samples of these commands (comma-separated);\n"
	"      --pids LIST     of these processes; --tids LIST of these threads;\n"
	"                      --dsos LIST of these images;\n"
	"      --symbols LIST  of these functions\n"
	"      --percentage absolute|relative  under a filter, shares are of all the\n"
	"                      refresh's samples (absolute, the default, as perf's) or of\n"
	"                      those kept (relative)\n"
	"When the VM exits, top says so and exits with 0.\n";
static char top_usage[1024];


#define top_usage_error(...) cli_usage_error("kvmprof", top_usage, __VA_ARGS__)

/* top's own options; -e, -F and -c are record's. */
static int top_option(int c, const char *arg, void *ctx)
{
	struct host_top_opts *o = ctx;
	unsigned long long n;

	if (vm_target_option(&o->rec.target, c, arg))
		return 0;
	switch (c) {
	case 'd':
		if (cli_parse_seconds(arg, &o->delay) || o->delay < 0.1 || o->delay > 3600)
			return top_usage_error("--delay '%s': expected seconds, 0.1 to 3600", arg);
		return 0;
	case 'n':
		if (cli_parse_num(arg, 1, 1000000, &n))
			return top_usage_error("--iterations '%s': expected a number of refreshes, 1 to 1000000", arg);
		o->iterations = (unsigned long)n;
		return 0;
	case 'S':
		o->stdio = true;
		return 0;
	case 'R':
		o->guest_root = arg;
		return 0;
	case 'k':
		/* the report's guest kernel symbols, and a domain's kernel when its XML names none, as for record */
		o->guest_kernel = arg;
		o->rec.guest_kernel = arg;
		return 0;
	case 'M':
		o->no_demangle = true;
		return 0;
	/* --connect, --guest-hz: a libvirt domain, as kvmprof record takes it */
	case 'C':
		o->rec.connect = arg;
		return 0;
	case 'H':
		if (cli_parse_num(arg, 1, DOMAIN_SAMPLER_HZ_MAX, &n))
			return top_usage_error("--guest-hz '%s': expected 1 to %d register samples per second", arg,
					       DOMAIN_SAMPLER_HZ_MAX);
		o->rec.guest_hz = (unsigned int)n;
		return 0;
	}
	/* The table's: --sort, --percent-limit and the filters, as kvmprof report takes them. */
	return report_table_option(c, arg, &o->table, HOST_REPORT_KEYS, "kvmprof top", top_usage);
}

int cmd_top(int argc, char **argv)
{
	static const struct option own[] = {
		{ "connect", required_argument, NULL, 'C' },
		{ "guest-hz", required_argument, NULL, 'H' },
		{ "delay", required_argument, NULL, 'd' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "stdio", no_argument, NULL, 'S' },
		{ "guest-root", required_argument, NULL, 'R' },
		{ "guest-kernel", required_argument, NULL, 'k' },
		{ "no-demangle", no_argument, NULL, 'M' },
		/* The report's table options, but for -n/--show-nr-samples: top's -n is --iterations. */
		{ "sort", required_argument, NULL, 's' },
		{ "percent-limit", required_argument, NULL, REPORT_OPT_PERCENT_LIMIT },
		{ "percentage", required_argument, NULL, REPORT_OPT_PERCENTAGE },
		{ "comms", required_argument, NULL, REPORT_OPT_COMMS },
		{ "comm", required_argument, NULL, REPORT_OPT_COMMS },
		{ "pids", required_argument, NULL, REPORT_OPT_PIDS },
		{ "pid", required_argument, NULL, REPORT_OPT_PIDS },
		{ "dsos", required_argument, NULL, REPORT_OPT_DSOS },
		{ "dso", required_argument, NULL, REPORT_OPT_DSOS },
		{ "symbols", required_argument, NULL, REPORT_OPT_SYMBOLS },
		{ "symbol", required_argument, NULL, REPORT_OPT_SYMBOLS },
		{ "tids", required_argument, NULL, REPORT_OPT_TIDS },
		{ "tid", required_argument, NULL, REPORT_OPT_TIDS },
	};
	struct option longopts[CLI_OWN_LONGOPTS_MAX + 1];
	static struct host_top_opts o;
	const struct record_cli cli = {
		.prog = "kvmprof", .cmd_name = "top", .usage = top_usage, .help = top_help, .help_more = vm_target_help,
		.max_events = 1, .max_freq = 100000, .own_shortopts = "v:d:n:s:", .own_longopts = longopts,
		.own_option = top_option, .ctx = &o,
	};
	char choices[512];
	int r;

	vm_target_command(longopts, own, sizeof(own) / sizeof(own[0]), top_usage, sizeof(top_usage),
			  "usage: kvmprof top ", top_usage_tail);
	memset(&o, 0, sizeof(o));
	o.delay = HOST_TOP_DELAY_DEFAULT;
	host_report_table_defaults(&o.table);
	r = record_cli_parse(&cli, argc, argv, &o.rec.rec);
	if (r >= 0)
		return r;
	if (optind < argc)
		return top_usage_error("top: unexpected argument '%s'", argv[optind]);
	vm_target_choices(choices, sizeof(choices), NULL);
	if (o.rec.target.given != 1)
		return top_usage_error("top: one of %s", choices);
	if (!o.rec.target.kind->libvirt && (o.rec.connect || o.rec.guest_hz))
		return top_usage_error("top: --connect and --guest-hz are for libvirt domains, not --%s",
				       o.rec.target.kind->option);
	if (o.rec.rec.output || o.rec.rec.callgraph)
		return top_usage_error("top: -o and call graphs are kvmprof record's: top keeps no file and shows "
				       "symbols only");
	r = record_cli_check_rate(&cli, &o.rec.rec);
	if (r >= 0)
		return r;
	return host_top_run(&o);
}
