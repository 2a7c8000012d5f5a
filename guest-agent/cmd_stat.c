/* SPDX-License-Identifier: MIT */
/* kvmprof-agent stat: its options; the counting is lib/stat/stat_count.c's. */
#include "agent_commands.h"
#include "cli/stat_cli.h"

static const char stat_usage[] =
	"usage: kvmprof-agent stat [-e EVENT[,EVENT...]]... [-r N] [-x SEP] [-o FILE] [--no-big-num]\n"
	"                          [-a | -p PID] [[--] CMD [ARGS...]]\n";

static const char stat_help[] =
	"\n"
	"Counts events with perf_event_open and prints the counts as perf stat does:\n"
	"units, thousands separators, CPUs utilized for the clocks, rates per second.\n"
	"\n"
	"  -e, --event EVENTS  comma-separated events, repeatable (names as for record;\n"
	"                  default perf's list: task-clock, context-switches,\n"
	"                  cpu-migrations, page-faults, cycles, instructions, branches,\n"
	"                  branch-misses). Hardware events the host cannot count (no\n"
	"                  PMU) print <not supported>, as in perf\n"
	"  -r, --repeat N   run the command N times; counts are means, with their spread\n"
	"                  ( +- P% ): the standard error of the mean, relative to it\n"
	"  -x, --field-separator SEP  CSV lines, perf's fields: value,unit,event,\n"
	"                  [spread%,]run-time,pct-running,metric-value,metric-unit\n"
	"  -o, --output FILE  the counts into FILE (default: standard error, as perf)\n"
	"  --no-big-num     no thousands separators (-B, the default, has them)\n"
	"  -a, --all-cpus   every CPU, until Ctrl-C or until CMD exits\n"
	"  -p, --pid PID    the threads of a running process, until it exits, Ctrl-C,\n"
	"                  or CMD exits (perf's `-p PID -- sleep 5`)\n"
	"  CMD ARGS         run CMD counted, with its children; exit with its status\n"
	"Ctrl-C prints the counts so far.\n";

int cmd_stat(int argc, char **argv)
{
	static struct stat_opts o; /* large (events); static keeps it off the stack */
	const struct stat_cli cli = { .prog = "kvmprof-agent", .usage = stat_usage, .help = stat_help };
	int r = stat_cli_parse(&cli, argc, argv, &o);

	if (r >= 0)
		return r;
	r = stat_cli_check_target(&cli, &o);
	if (r >= 0)
		return r;
	return stat_count_run("kvmprof-agent", &o);
}
