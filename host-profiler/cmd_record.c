/* SPDX-License-Identifier: MIT */
/* kvmprof record: its options; the recording itself is record.c's. */
#include <getopt.h>
#include <stdbool.h>
#include <string.h>

#include "cli/cli.h"
#include "domain_sampler.h"
#include "host_commands.h"
#include "host_record.h"
#include "cli/record_cli.h"

/* After "usage: kvmprof record " and every VM target's option (vm_target_command). */
static const char record_usage_tail[] =
	" | --all-domains [--connect URI]\n"
	"                      [-e EVENT] [-F HZ | -c PERIOD] [-g | --call-graph fp|dwarf[,SIZE]] [-o FILE]\n"
	"                      [--duration S] [--guest-export FILE] [--guest-kernel ELF] [--guest-hz HZ]\n"
	"                      [--no-exits] [-q]\n";

static const char record_help[] =
	"\n"
	"Samples a VM's host threads (VMM user code, host kernel) with perf_event_open and\n"
	"its guest through the VMM's guest sampler (--vm) or QEMU's monitor (--domain),\n"
	"into one sample file for kvmprof report.\n"
	"\n"
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
	"  -d, --duration S    stop after S seconds of sampling, counted once both sides sample\n"
	"                      (default: Ctrl-C, or when the VM exits)\n"
	"  -x, --guest-export FILE  a Linux guest's `kvmprof-agent export`: its task layout\n"
	"                      lets kvmprof name the guest's processes in its samples\n"
	"      --no-exits      no VM exit records (by default the VMM records every exit\n"
	"                      with its guest context and host interval, for the report's\n"
	"                      cross-layer stacks, --drill and --exits)\n"
	"  -q, --quiet         no progress line (it is shown only when stderr is a terminal)\n"
	"Host samples taken while guest code ran are the guest's time: they are left\n"
	"out and counted (META host_samples_in_guest), and the guest's own samples stand\n"
	"for that time. A VMM's control socket is waited for up to 2 s, for a VMM that\n"
	"is just starting.\n";
static char record_usage[1024];


#define record_usage_error(...) cli_usage_error("kvmprof", record_usage, __VA_ARGS__)

/* Which VM, for how long, and a Linux guest's task layout. */
static int record_option(int c, const char *arg, void *ctx)
{
	struct host_record_opts *o = ctx;

	if (vm_target_option(&o->target, c, arg))
		return 0;
	switch (c) {
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

int cmd_record(int argc, char **argv)
{
	static const struct option own[] = {
		{ "duration", required_argument, NULL, 'd' },
		{ "guest-export", required_argument, NULL, 'x' },
		{ "no-exits", no_argument, NULL, 'X' },
		{ "all-domains", no_argument, NULL, 'A' },
		{ "connect", required_argument, NULL, 'C' },
		{ "guest-kernel", required_argument, NULL, 'k' },
		{ "guest-hz", required_argument, NULL, 'H' },
	};
	struct option longopts[CLI_OWN_LONGOPTS_MAX + 1];
	static struct host_record_opts o;
	const struct record_cli cli = {
		.prog = "kvmprof", .usage = record_usage, .help = record_help, .help_more = vm_target_help,
		.max_events = 1, .max_freq = 100000, .own_shortopts = "v:d:x:", .own_longopts = longopts,
		.own_option = record_option, .ctx = &o,
	};
	char choices[512];
	int r;

	vm_target_command(longopts, own, sizeof(own) / sizeof(own[0]), record_usage, sizeof(record_usage),
			  "usage: kvmprof record ", record_usage_tail);
	memset(&o, 0, sizeof(o));
	r = record_cli_parse(&cli, argc, argv, &o.rec);
	if (r >= 0)
		return r;
	if (optind < argc)
		return record_usage_error("record: unexpected argument '%s'", argv[optind]);
	vm_target_choices(choices, sizeof(choices), "--all-domains");
	if (o.target.given + o.all_domains != 1)
		return record_usage_error("record: one of %s", choices);
	if (o.target.kind && !o.target.kind->libvirt && (o.connect || o.guest_hz || o.guest_kernel))
		return record_usage_error("record: --connect, --guest-hz and --guest-kernel are for libvirt domains, not --%s",
					  o.target.kind->option);
	r = record_cli_check_rate(&cli, &o.rec);
	if (r >= 0)
		return r;
	return o.all_domains ? host_record_all_domains(&o) : host_record_run(&o);
}
