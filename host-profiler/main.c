/* SPDX-License-Identifier: MIT */
/*
 * kvmprof: the host-side system-wide profiler. Subcommands record, report,
 * script, annotate, stat, list, trace and plugin; this file only parses the command line.
 * Exit codes: 0 done, 1 failed, 2 bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "events.h"
#include "domain_sampler.h"
#include "host_list.h"
#include "host_record.h"
#include "host_report.h"
#include "host_top.h"
#include "kvmprof/version.h"
#include "record_cli.h"
#include "report_table_cli.h"
#include "stat.h"
#include "stat_cli.h"
#include "plugin_cmd.h"
#include "trace.h"


static const char usage_text[] =
	"usage: kvmprof record --vm SOCKET | --domain NAME | --all-domains [OPTIONS]\n"
	"       kvmprof report [-i FILE] [OPTIONS]\n"
	"       kvmprof script [-i FILE] [-G] [OPTIONS]\n"
	"       kvmprof annotate [SYMBOL] [-i FILE] [OPTIONS]\n"
	"       kvmprof stat --vm SOCKET | --domain NAME | -a | -p PID | [--] CMD [ARGS...] [OPTIONS]\n"
	"       kvmprof top --vm SOCKET [OPTIONS]\n"
	"       kvmprof list [--details] [FILTER] | list domains [--connect URI]\n"
	"       kvmprof trace -i FILE [--counts]\n"
	"       kvmprof plugin --vm SOCKET load|unload|list|output|events|enable|disable ...\n"
	"       kvmprof --help | --version\n";

static const char help_text[] =
	"\n"
	"Profiles a virtual machine from the host: a kvmprof-vmm, or a QEMU/KVM domain\n"
	"that libvirt manages. The VM's own threads (VMM user code, host kernel) are\n"
	"sampled with perf_event_open, the guest through kvmprof-vmm's guest sampler or,\n"
	"for a domain, through QEMU's monitor and QEMU's mapping of guest memory; guest\n"
	"samples resolve against the guest's own files.\n"
	"\n"
	"  record   sample a VM: its host threads and its guest, into a sample file\n"
	"  report   read a recording: by domain, process and symbol; stacks, flame graphs\n"
	"  script   print every sample of a recording with its domain and stack, as perf\n"
	"           script does (for flame-graph scripts and your own tools)\n"
	"  annotate one function's instructions with their samples and source lines\n"
	"  stat     count events like perf stat: a VM (host threads and guest), or a\n"
	"           command, a process or the whole host\n"
	"  top      a running VM's hottest guest and host symbols, refreshed live\n"
	"  list     the events the host and the guest's vPMU models count, as perf list;\n"
	"           list domains: the running libvirt domains, and what works for each\n"
	"  trace    print a kvmprof-vmm --trace file\n"
	"  plugin   load and unload a running VMM's plugins\n"
	"\n"
	"`kvmprof COMMAND --help` describes each command's options.\n";

static const char record_usage[] =
	"usage: kvmprof record --vm SOCKET | --domain NAME | --all-domains [--connect URI]\n"
	"                      [-e EVENT] [-F HZ | -c PERIOD] [-g | --call-graph fp|dwarf[,SIZE]] [-o FILE]\n"
	"                      [--duration S] [--guest-export FILE] [--guest-kernel ELF] [--guest-hz HZ]\n"
	"                      [--no-exits] [-q]\n";

static const char record_help[] =
	"\n"
	"Samples a VM's host threads (VMM user code, host kernel) with perf_event_open and\n"
	"its guest through the VMM's guest sampler (--vm) or QEMU's monitor (--domain),\n"
	"into one sample file for kvmprof report.\n"
	"\n"
	"  --vm SOCKET         the VMM's control socket (kvmprof-vmm --control SOCKET;\n"
	"                      waited for up to 2 s, for a VMM that is just starting)\n"
	"  --domain NAME       a running libvirt domain (kvmprof list shows them)\n"
	"  --all-domains       every running domain at once, a recording each in the\n"
	"                      directory -o names (default kvmprof.domains); kvmprof report\n"
	"                      -i DIR shows them one after another, after host CPU per domain\n"
	"  --connect URI       libvirt's connection (default qemu:///system)\n"
	"  --guest-hz HZ       a domain's vCPU register samples per second (default 100,\n"
	"                      at most 250): each is a round trip through QEMU's monitor\n"
	"  --guest-kernel ELF  the bundled guest's kernel.elf, when the domain XML does not\n"
	"                      boot it directly (names the guest's processes)\n"
	"  -e, --event EVENT   event to sample (default cycles; cpu-clock without a hardware\n"
	"                      PMU); names as for kvmprof-agent record\n"
	"  -F, --freq HZ       samples per second (default 1000)\n"
	"  -c, --count N       sample every N events instead (ns for cpu-clock and task-clock)\n"
	"  -g, --callgraph     call chains: host frame pointers, and the guest's stacks\n"
	"  --call-graph MODE   fp (as -g), or dwarf[,SIZE]: the VM's host threads unwound\n"
	"                      at report time from a copy of SIZE bytes of their user stack\n"
	"                      (default 8192) with the CFI of their files (through libc's\n"
	"                      frames, which have no frame pointers); the guest's stacks are\n"
	"                      walked by frame pointer either way\n"
	"  -o, --output FILE   sample file (default kvmprof.data; '-' is standard output);\n"
	"                      an earlier one there is kept as FILE.old, as with perf record\n"
	"  -d, --duration S    stop after S seconds (default: Ctrl-C, or when the VM exits)\n"
	"  -x, --guest-export FILE  a Linux guest's `kvmprof-agent export`: its task layout\n"
	"                      lets kvmprof name the guest's processes in its samples\n"
	"      --no-exits      no VM exit records (by default the VMM records every exit\n"
	"                      with its guest context and host interval, for the report's\n"
	"                      cross-layer stacks, --drill and --exits)\n"
	"  -q, --quiet         no progress line (it is shown only when stderr is a terminal)\n"
	"Host samples taken while guest code ran are the guest's time: they are left\n"
	"out and counted (META host_samples_in_guest), and the guest's own samples stand\n"
	"for that time.\n";

static const char stat_usage[] =
	"usage: kvmprof stat --vm SOCKET | --domain NAME [--connect URI] [--duration S] [-e EVENTS] [-x SEP]\n"
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
	"user, system and guest time, and kvmprof-vmm's VM exits.\n"
	"  --vm SOCKET         the VMM's control socket (kvmprof-vmm --control SOCKET)\n"
	"  --domain NAME       a running libvirt domain; --connect URI its connection\n"
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

static const char top_usage[] =
	"usage: kvmprof top --vm SOCKET | --domain NAME [--connect URI] [--guest-hz HZ]\n"
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
	"  --vm SOCKET         the VMM's control socket (kvmprof-vmm --control SOCKET)\n"
	"  --domain NAME       a libvirt QEMU/KVM domain instead, as kvmprof record --domain\n"
	"                      samples it (its QEMU's threads, its vCPUs' registers)\n"
	"  --connect URI       libvirt's URI for --domain (default: libvirt's own)\n"
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

#define usage_error(...) cli_usage_error("kvmprof", usage_text, __VA_ARGS__)
#define record_usage_error(...) cli_usage_error("kvmprof", record_usage, __VA_ARGS__)
#define stat_usage_error(...) cli_usage_error("kvmprof", stat_usage, __VA_ARGS__)
#define top_usage_error(...) cli_usage_error("kvmprof", top_usage, __VA_ARGS__)

/* Which VM, for how long, and a Linux guest's task layout. */
static int record_option(int c, const char *arg, void *ctx)
{
	struct host_record_opts *o = ctx;

	switch (c) {
	case 'v':
		o->vm = arg;
		return 0;
	case 'd':
		if (cli_parse_seconds(arg, &o->duration))
			return record_usage_error("--duration '%s': expected seconds (> 0)", arg);
		return 0;
	case 'x':
		o->guest_export = arg;
		return 0;
	case 'X':
		o->no_exits = true;
		return 0;
	case 'D':
		o->domain = arg;
		return 0;
	case 'A':
		o->all_domains = true;
		return 0;
	case 'C':
		o->connect = arg;
		return 0;
	case 'k':
		o->guest_kernel = arg;
		return 0;
	case 'H': {
		unsigned long long hz;

		if (cli_parse_num(arg, 1, DOMAIN_SAMPLER_HZ_MAX, &hz))
			return record_usage_error("--guest-hz '%s': expected 1 to %d register samples per second", arg,
					   DOMAIN_SAMPLER_HZ_MAX);
		o->guest_hz = (unsigned int)hz;
		return 0;
	}
	}
	return -1;
}

static int cmd_record(int argc, char **argv)
{
	static const struct option own_longopts[] = {
		{ "vm", required_argument, NULL, 'v' },
		{ "duration", required_argument, NULL, 'd' },
		{ "guest-export", required_argument, NULL, 'x' },
		{ "no-exits", no_argument, NULL, 'X' },
		{ "domain", required_argument, NULL, 'D' },
		{ "all-domains", no_argument, NULL, 'A' },
		{ "connect", required_argument, NULL, 'C' },
		{ "guest-kernel", required_argument, NULL, 'k' },
		{ "guest-hz", required_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 },
	};
	static struct host_record_opts o;
	const struct record_cli cli = {
		.prog = "kvmprof", .usage = record_usage, .help = record_help, .max_events = 1, .max_freq = 100000,
		.own_shortopts = "v:d:x:", .own_longopts = own_longopts, .own_option = record_option, .ctx = &o,
	};
	int r;

	memset(&o, 0, sizeof(o));
	r = record_cli_parse(&cli, argc, argv, &o.rec);
	if (r >= 0)
		return r;
	if (optind < argc)
		return record_usage_error("record: unexpected argument '%s'", argv[optind]);
	if (!!o.vm + !!o.domain + o.all_domains != 1)
		return record_usage_error("record: one of --vm SOCKET (kvmprof-vmm --control SOCKET), --domain NAME (a libvirt "
				   "domain) or --all-domains");
	if (o.vm && (o.connect || o.guest_hz || o.guest_kernel))
		return record_usage_error("record: --connect, --guest-hz and --guest-kernel are for libvirt domains, not --vm");
	r = record_cli_check_rate(&cli, &o.rec);
	if (r >= 0)
		return r;
	return o.all_domains ? host_record_all_domains(&o) : host_record_run(&o);
}

/* top's own options; -e, -F and -c are record's. */
static int top_option(int c, const char *arg, void *ctx)
{
	struct host_top_opts *o = ctx;
	unsigned long long n;

	switch (c) {
	case 'v':
		o->rec.vm = arg;
		return 0;
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
	/* --domain, --connect, --guest-hz: a libvirt domain, as kvmprof record takes it */
	case 'D':
		o->rec.domain = arg;
		return 0;
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

/* Which VM, and for how long: kvmprof stat's own options beside perf stat's. */
static int stat_option(int c, const char *arg, void *ctx)
{
	struct host_stat_opts *o = ctx;

	switch (c) {
	case 'v':
		o->vm = arg;
		return 0;
	case 'D':
		o->domain = arg;
		return 0;
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

static int cmd_top(int argc, char **argv)
{
	static const struct option own_longopts[] = {
		{ "vm", required_argument, NULL, 'v' },
		{ "domain", required_argument, NULL, 'D' },
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
		{ NULL, 0, NULL, 0 },
	};
	static struct host_top_opts o;
	const struct record_cli cli = {
		.prog = "kvmprof", .cmd_name = "top", .usage = top_usage, .help = top_help, .max_events = 1,
		.max_freq = 100000, .own_shortopts = "v:d:n:s:", .own_longopts = own_longopts, .own_option = top_option, .ctx = &o,
	};
	int r;

	memset(&o, 0, sizeof(o));
	o.delay = HOST_TOP_DELAY_DEFAULT;
	host_report_table_defaults(&o.table);
	r = record_cli_parse(&cli, argc, argv, &o.rec.rec);
	if (r >= 0)
		return r;
	if (optind < argc)
		return top_usage_error("top: unexpected argument '%s'", argv[optind]);
	if (!!o.rec.vm + !!o.rec.domain != 1)
		return top_usage_error("top: one of --vm SOCKET (kvmprof-vmm --control SOCKET) or --domain NAME (a libvirt "
				       "domain)");
	if (o.rec.vm && (o.rec.connect || o.rec.guest_hz))
		return top_usage_error("top: --connect and --guest-hz are for libvirt domains, not --vm");
	if (o.rec.rec.output || o.rec.rec.callgraph)
		return top_usage_error("top: -o and call graphs are kvmprof record's: top keeps no file and shows "
				       "symbols only");
	r = record_cli_check_rate(&cli, &o.rec.rec);
	if (r >= 0)
		return r;
	return host_top_run(&o);
}

static int cmd_stat(int argc, char **argv)
{
	static const struct option own_longopts[] = {
		{ "vm", required_argument, NULL, 'v' },	     { "duration", required_argument, NULL, 'd' },
		{ "domain", required_argument, NULL, 'D' }, { "connect", required_argument, NULL, 'C' },
		{ NULL, 0, NULL, 0 },
	};
	static struct host_stat_opts o; /* large (events); static keeps it off the stack */
	const struct stat_cli cli = {
		.prog = "kvmprof", .usage = stat_usage, .help = stat_help, .own_shortopts = "v:d:D:C:",
		.own_longopts = own_longopts, .own_option = stat_option, .ctx = &o,
	};
	int r;

	memset(&o, 0, sizeof(o));
	r = stat_cli_parse(&cli, argc, argv, &o.stat);
	if (r >= 0)
		return r;
	if (o.vm && o.domain)
		return stat_usage_error("stat: --vm and --domain exclude each other");
	if (o.vm || o.domain) {
		if (o.stat.all || o.stat.pid || o.stat.argv || o.stat.repeat)
			return stat_usage_error("stat: -a, -p, -r and a command count host processes, not --vm or --domain");
		if (o.vm && o.connect)
			return stat_usage_error("stat: --connect is for libvirt domains, not --vm");
		return host_stat_run(&o);
	}
	if (o.connect || o.duration)
		return stat_usage_error("stat: --connect and --duration are for --vm or --domain");
	r = stat_cli_check_target(&cli, &o.stat);
	if (r >= 0)
		return r;
	return stat_count_run("kvmprof", &o.stat);
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
		printf("kvmprof %s (sample format %d.%d)\n", KVMPROF_VERSION, KP_FILE_VERSION_MAJOR, KP_FILE_VERSION_MINOR);
		return 0;
	}
	if (!strcmp(sub, "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(sub, "top"))
		return cmd_top(argc - 1, argv + 1);
	if (!strcmp(sub, "report"))
		return host_report_main(argc - 1, argv + 1);
	if (!strcmp(sub, "script"))
		return host_script_main(argc - 1, argv + 1);
	if (!strcmp(sub, "annotate"))
		return host_annotate_main(argc - 1, argv + 1);
	if (!strcmp(sub, "stat"))
		return cmd_stat(argc - 1, argv + 1);
	if (!strcmp(sub, "list"))
		return host_list_main(argc - 1, argv + 1);
	if (!strcmp(sub, "trace"))
		return host_trace_main(argc - 1, argv + 1);
	if (!strcmp(sub, "plugin"))
		return host_plugin_main(argc - 1, argv + 1);
	return usage_error("unknown subcommand '%s'", sub);
}
