/* SPDX-License-Identifier: MIT */
/* kvmprof-agent record: its options; the recording itself is record.c's. */
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "agent_commands.h"
#include "agent_record.h"
#include "cli/cli.h"
#include "cli/record_cli.h"

static const char record_usage[] =
	"usage: kvmprof-agent record [-e EVENT[:PERIOD]]... [-F HZ | -c PERIOD] [-o FILE]\n"
	"                            [-g | --call-graph fp|dwarf[,SIZE]] [-m PAGES] [-q]\n"
	"                            [-a | -p PID | [--] CMD [ARGS...]]\n";

static const char record_help[] =
	"\n"
	"Samples with perf_event_open, like perf record: a command and its children, a\n"
	"running process (-p) or every CPU (-a), into a kvmprof sample file.\n"
	"\n"
	"  -e, --event EVENT[:PERIOD]  event to sample (repeatable; default cycles). Names:\n"
	"                  perf's generic names (cycles, instructions, branches, branch-misses,\n"
	"                  cache-references, cache-misses, cpu-clock, task-clock, page-faults...),\n"
	"                  with modifiers u/k (cycles:u); anything libpfm4 knows (perf::cycles,\n"
	"                  INST_RETIRED:ANY_P:u, model-specific names); OProfile's\n"
	"                  event:count[:unitmask[:kernel[:user]]] (count = sampling period,\n"
	"                  kernel/user 0 or 1). A trailing :PERIOD samples every PERIOD events.\n"
	"  -F, --freq HZ    samples per second for events without a period (default 1000;\n"
	"                  perf's 4000 costs four times as much in a guest with an emulated PMU)\n"
	"  -c, --count N    sample every N events instead of a frequency (ns for cpu-clock\n"
	"                  and task-clock)\n"
	"  -g, --callgraph  record call chains by frame pointer (as perf's -g)\n"
	"  --call-graph MODE  fp (as -g), or dwarf[,SIZE]: each sample also carries its\n"
	"                  user registers and SIZE bytes of user stack (default 8192, at most\n"
	"                  65528), which report unwinds with the programs' CFI (.eh_frame):\n"
	"                  callers in code built without frame pointers; files 3-4x larger\n"
	"  -o, --output FILE  sample file (default kvmprof.data; '-' is standard output);\n"
	"                  an earlier one there is kept as FILE.old, as with perf record\n"
	"  -a, --all-cpus   every process on every CPU, kernel included, until Ctrl-C\n"
	"                  (or until CMD exits, when one is given)\n"
	"  -p, --pid PID    the threads of a running process, until it exits or Ctrl-C\n"
	"  -m, --mmap-pages N  ring buffer pages per CPU (power of two; default 128, 512\n"
	"                  with --call-graph dwarf)\n"
	"  -q, --quiet      no progress line (it is drawn only with -a or -p, on a terminal,\n"
	"                  and erased at the end; the summary still comes)\n"
	"  CMD ARGS         run CMD profiled, with its children; exit with its status\n"
	"Without a hardware PMU (most virtual machines), hardware events fall back to\n"
	"cpu-clock at the -F rate, and the file says so.\n";


#define record_usage_error(...) cli_usage_error("kvmprof-agent", record_usage, __VA_ARGS__)

/* What to profile: -a, -p PID or a command (record -m too). */
static int record_option(int c, const char *arg, void *ctx)
{
	struct agent_record_opts *o = ctx;
	unsigned long long v;

	switch (c) {
	case 'a':
		o->all = true;
		return 0;
	case 'p':
		if (cli_parse_num(arg, 1, INT_MAX, &v))
			return cli_bad_number("kvmprof-agent", record_usage, 'p', arg, "a process id");
		o->pid = (pid_t)v;
		return 0;
	case 'm':
		if (cli_parse_num(arg, 1, 1u << 16, &v) || (v & (v - 1)))
			return cli_bad_number("kvmprof-agent", record_usage, 'm', arg, "a power of two between 1 and 65536");
		o->mmap_pages = (unsigned)v;
		return 0;
	}
	return -1;
}

int cmd_record(int argc, char **argv)
{
	static const struct option own_longopts[] = {
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "pid", required_argument, NULL, 'p' },
		{ "mmap-pages", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	static struct agent_record_opts o; /* large (events); static keeps it off the stack */
	const struct record_cli cli = {
		.prog = "kvmprof-agent", .usage = record_usage, .help = record_help,
		.max_events = RECORD_MAX_EVENTS, .max_freq = 1000000, .stop_at_command = true,
		.own_shortopts = "ap:m:", .own_longopts = own_longopts, .own_option = record_option, .ctx = &o,
	};
	int r;

	memset(&o, 0, sizeof(o));
	r = record_cli_parse(&cli, argc, argv, &o.rec);
	if (r >= 0)
		return r;
	r = record_cli_check_rate(&cli, &o.rec);
	if (r >= 0)
		return r;
	if (optind < argc)
		o.argv = argv + optind;
	else if (optind > 1 && !strcmp(argv[optind - 1], "--"))
		return record_usage_error("record: missing command after --");
	if (o.pid && (o.all || o.argv))
		return record_usage_error("record: -p excludes -a and a command");
	if (!o.all && !o.pid && !o.argv)
		return record_usage_error("record: nothing to profile: give -a, -p PID or -- CMD");
	return record_run(&o);
}
