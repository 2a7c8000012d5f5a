/* SPDX-License-Identifier: MIT */
/* kvmprof stat: its options beside perf stat's; the counting is stat.c's and lib/stat/stat_count.c's. */
#include <getopt.h>
#include <string.h>

#include "cli/cli.h"
#include "host_commands.h"
#include "stat.h"
#include "cli/stat_cli.h"

/* After "usage: kvmprof stat " and every VM target's option (vm_target_command). */
static const char stat_usage_tail[] =
	" [--connect URI] [--duration S] [-e EVENTS] [-x SEP]\n"
	"                    [-o FILE] [--no-big-num]\n"
	"       kvmprof stat [-e EVENTS]... [-r N] [-x SEP] [-o FILE] [--no-big-num] [-a | -p PID] [[--] CMD [ARGS...]]\n";

static const char stat_help[] =
	"\n"
	"Counts events and prints them as perf stat does: units, thousands separators,\n"
	"CPUs utilized for the clocks, rates per second; <not supported> for hardware\n"
	"events a host without a PMU cannot count.\n"
	"\n"
	"A VM (counts on standard output): the counters of all of its host threads, then\n"
	"the same per thread, split by domain as far as the host allows, the kernel's\n"
	"user, system and guest time, and kvmprof-vmm's VM exits (the VM: below).\n"
	"  -d, --duration S    count for S seconds (default: Ctrl-C, or when the VM exits)\n"
	"\n"
	"The host, as perf stat (counts on standard error, as perf):\n"
	"  CMD ARGS            run CMD counted, with its children; exit with its status\n"
	"  -p, --pid PID       the threads of a running process, until it exits, Ctrl-C,\n"
	"                      or CMD exits (perf's `-p PID -- sleep 5`)\n"
	"  -a, --all-cpus      every CPU, until Ctrl-C or until CMD exits\n"
	"  -r, --repeat N      run CMD N times; counts are means with their spread\n"
	"                      ( +- P% ): the standard error of the mean, relative to it\n"
	"\n"
	"Both:\n"
	"  -e, --event EVENTS  comma-separated events, repeatable (names as for record;\n"
	"                      default task-clock for a VM, perf's list for the host)\n"
	"  -x, --field-separator SEP  CSV lines, perf's fields: value,unit,event,\n"
	"                      [spread%,]run-time,pct-running,metric-value,metric-unit\n"
	"                      (for a VM, only the totals)\n"
	"  -o, --output FILE   the counts into FILE\n"
	"  --no-big-num        no thousands separators (-B, the default, has them)\n"
	"Ctrl-C prints the counts so far.\n";
static char stat_usage[1024];


#define stat_usage_error(...) cli_usage_error("kvmprof", stat_usage, __VA_ARGS__)

/* Which VM, and for how long: kvmprof stat's own options beside perf stat's. */
static int stat_option(int c, const char *arg, void *ctx)
{
	struct host_stat_opts *o = ctx;

	if (vm_target_option(&o->target, c, arg))
		return 0;
	switch (c) {
	case 'C':
		o->connect = arg;
		return 0;
	case 'd':
		if (cli_parse_seconds(arg, &o->duration))
			return stat_usage_error("--duration '%s': expected seconds (> 0)", arg);
		return 0;
	}
	return -1;
}

int cmd_stat(int argc, char **argv)
{
	static const struct option own[] = {
		{ "duration", required_argument, NULL, 'd' },
		{ "connect", required_argument, NULL, 'C' },
	};
	struct option longopts[CLI_OWN_LONGOPTS_MAX + 1];
	static struct host_stat_opts o; /* large (events); static keeps it off the stack */
	const struct stat_cli cli = {
		.prog = "kvmprof", .usage = stat_usage, .help = stat_help, .help_more = vm_target_help,
		.own_shortopts = "v:d:D:C:", .own_longopts = longopts, .own_option = stat_option, .ctx = &o,
	};
	int r;

	vm_target_command(longopts, own, sizeof(own) / sizeof(own[0]), stat_usage, sizeof(stat_usage),
			  "usage: kvmprof stat ", stat_usage_tail);
	memset(&o, 0, sizeof(o));
	r = stat_cli_parse(&cli, argc, argv, &o.stat);
	if (r >= 0)
		return r;
	char choices[512];

	vm_target_choices(choices, sizeof(choices), NULL);
	if (o.target.given > 1)
		return stat_usage_error("stat: one VM at a time: %s", choices);
	if (o.target.kind) {
		if (o.stat.all || o.stat.pid || o.stat.argv || o.stat.repeat)
			return stat_usage_error("stat: -a, -p, -r and a command count host processes, not --%s",
						o.target.kind->option);
		if (!o.target.kind->libvirt && o.connect)
			return stat_usage_error("stat: --connect is for libvirt domains, not --%s", o.target.kind->option);
		return host_stat_run(&o);
	}
	if (o.connect || o.duration)
		return stat_usage_error("stat: --connect and --duration are for a VM: %s", choices);
	r = stat_cli_check_target(&cli, &o.stat);
	if (r >= 0)
		return r;
	return stat_count_run("kvmprof", &o.stat);
}
