/* SPDX-License-Identifier: MIT */
/*
 * kvmprof-agent: the in-guest sampling agent. Subcommands record, report,
 * script, annotate, stat, export and list; this file only parses the command line.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_record.h"
#include "agent_report.h"
#include "cli.h"
#include "event_list.h"
#include "events.h"
#include "export.h"
#include "kvmprof/version.h"
#include "record_cli.h"
#include "stat_cli.h"


static const char usage_text[] =
	"usage: kvmprof-agent record [OPTIONS] [-a | -p PID | [--] CMD [ARGS...]]\n"
	"       kvmprof-agent report [-i FILE] [OPTIONS]\n"
	"       kvmprof-agent script [-i FILE] [-G] [OPTIONS]\n"
	"       kvmprof-agent annotate [SYMBOL] [-i FILE] [OPTIONS]\n"
	"       kvmprof-agent stat [OPTIONS] [-a | -p PID | [--] CMD [ARGS...]]\n"
	"       kvmprof-agent export [-o DEVICE] [--pid PID]... [--all-symbols]\n"
	"       kvmprof-agent list [--details] [FILTER]\n"
	"       kvmprof-agent --help | --version\n";

static const char help_text[] =
	"\n"
	"Samples a Linux system with perf_event_open, like perf record or OProfile,\n"
	"and writes a kvmprof sample file (self-describing, versioned, checked on read).\n"
	"\n"
	"  record   sample a command, a process or the whole system into a sample file\n"
	"  report   read a sample file: a table by symbol, call graphs, folded stacks,\n"
	"           pprof, an SVG flame graph\n"
	"  script   print every sample of a sample file with its stack, as perf script\n"
	"           does (for flame-graph scripts and your own tools)\n"
	"  stat     count events of a command, a process or the whole system, like perf stat\n"
	"  annotate one function's instructions with their samples and source lines\n"
	"  export   send this system's process maps and kernel symbols to a host-side\n"
	"           profiler (kvmprof record --guest-export, kvmprof report)\n"
	"  list     the events this system can sample (record -e), as perf list\n"
	"\n"
	"`kvmprof-agent COMMAND --help` describes each command's options.\n";

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

static const char export_usage[] =
	"usage: kvmprof-agent export [-o DEVICE] [--pid PID]... [--all-symbols]\n";

static const char export_help[] =
	"\n"
	"Writes this system's process table, executable mappings and kernel symbols as\n"
	"a sample file, for a profiler on the host to resolve this guest's samples with.\n"
	"\n"
	"  -o, --output DEVICE  where to send the stream (default /dev/ttyS1, the\n"
	"                  kvmprof-vmm agent channel; a terminal is set to raw 115200 8N1)\n"
	"  -p, --pid PID    only these processes (repeatable; default all)\n"
	"  --all-symbols    all of /proc/kallsyms; by default only text symbols go\n"
	"                  (program counters land only in code; half the bytes)\n";

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
static const char list_usage[] = "usage: kvmprof-agent list [--details] [FILTER]\n";

static const char list_help[] =
	"\n"
	"The events record -e takes, as perf list prints them: perf's generic hardware,\n"
	"hardware cache and software events, then the events (and unit masks) of each\n"
	"PMU libpfm4 finds on this system, as PMU::EVENT[:UMASK] with libpfm4's\n"
	"description. On a system without a hardware PMU (most VMs without a vPMU) the\n"
	"hardware events are marked as not countable here: record samples cpu-clock in\n"
	"their place.\n"
	"\n"
	"  FILTER   only the events whose name or description contains FILTER (any\n"
	"           case), or, with a * ? or [, whose name matches it as a glob:\n"
	"           `list cache`, `list 'icl::BR_*'`\n"
	"  --details  under each libpfm4 event, what -e opens for it: perf's type and\n"
	"           config (as perf list --details)\n";

#define usage_error(...) cli_usage_error("kvmprof-agent", usage_text, __VA_ARGS__)
#define record_usage_error(...) cli_usage_error("kvmprof-agent", record_usage, __VA_ARGS__)
#define export_usage_error(...) cli_usage_error("kvmprof-agent", export_usage, __VA_ARGS__)

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

static int cmd_record(int argc, char **argv)
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

static int cmd_stat(int argc, char **argv)
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

static int cmd_export(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "pid", required_argument, NULL, 'p' },
		{ "all-symbols", no_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct export_opts o = { 0 };
	unsigned long long v;
	int c, r;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:p:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!*optarg)
				return export_usage_error("-o needs a file name");
			o.output = optarg;
			break;
		case 'A':
			o.all_symbols = true;
			break;
		case 'p': {
			pid_t *n;

			if (cli_parse_num(optarg, 1, INT_MAX, &v)) {
				free(o.pids);
				return cli_bad_number("kvmprof-agent", export_usage, 'p', optarg, "a process id");
			}
			n = realloc(o.pids, (o.npids + 1) * sizeof(*n));
			if (!n) {
				free(o.pids);
				fprintf(stderr, "kvmprof-agent: out of memory\n");
				return 1;
			}
			o.pids = n;
			o.pids[o.npids++] = (pid_t)v;
			break;
		}
		case 'h':
			printf("%s%s", export_usage, export_help);
			free(o.pids);
			return 0;
		case ':':
			free(o.pids);
			return export_usage_error("export: option %s needs an argument", argv[optind - 1]);
		default:
			free(o.pids);
			return export_usage_error("export: unknown option %s", argv[optind - 1]);
		}
	}
	if (optind < argc) {
		free(o.pids);
		return export_usage_error("export: unexpected argument '%s'", argv[optind]);
	}
	r = export_run(&o);
	free(o.pids);
	return r;
}

static int cmd_list(int argc, char **argv)
{
	struct event_list l;
	struct event_list_args a;
	char why[256];
	int r = event_list_parse_args("kvmprof-agent list", list_usage, list_help, argc, argv, &a);

	if (r >= 0)
		return r;
	event_list_init(&l, stdout, a.filter, event_list_host_has_pmu(why, sizeof(why)));
	l.details = a.details;
	event_list_host(&l, "List of pre-defined events (to use in -e)");
	return 0;
}

int main(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL;

	if (!sub) {
		fputs(usage_text, stderr);
		return 2;
	}
	if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
		printf("%s%s", usage_text, help_text);
		return 0;
	}
	if (!strcmp(sub, "--version") || !strcmp(sub, "-V")) {
		printf("kvmprof-agent %s (sample format %d.%d)\n", KVMPROF_VERSION, KP_FILE_VERSION_MAJOR,
		       KP_FILE_VERSION_MINOR);
		return 0;
	}
	/* Each subcommand sees argv[0] = its name, as if it were its own program. */
	if (!strcmp(sub, "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(sub, "report"))
		return agent_report_main(argc - 1, argv + 1);
	if (!strcmp(sub, "script"))
		return agent_script_main(argc - 1, argv + 1);
	if (!strcmp(sub, "stat"))
		return cmd_stat(argc - 1, argv + 1);
	if (!strcmp(sub, "annotate"))
		return agent_annotate_main(argc - 1, argv + 1);
	if (!strcmp(sub, "export"))
		return cmd_export(argc - 1, argv + 1);
	if (!strcmp(sub, "list"))
		return cmd_list(argc - 1, argv + 1);
	return usage_error("unknown subcommand '%s'", sub);
}
