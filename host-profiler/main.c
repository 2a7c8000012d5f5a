/* SPDX-License-Identifier: MIT */
/*
 * kvmprof: the host-side system-wide profiler. A command is a file owning
 * its options (host_commands.h) and a row below.
 * Exit codes: 0 done, 1 failed, 2 bad usage.
 */
#include "cli/cli_command.h"
#include "host_commands.h"
#include "host_list.h"
#include "host_report.h"
#include "plugin_cmd.h"
#include "host_trace.h"

static const struct cli_command commands[] = {
	{ "record", "--vm SOCKET | --domain NAME | --all-domains [OPTIONS]",
	  "sample a VM: its host threads and its guest, into a sample file", cmd_record },
	{ "report", "[-i FILE] [OPTIONS]", "read a recording: by domain, process and symbol; stacks, flame graphs",
	  host_report_main },
	{ "script", "[-i FILE] [-G] [OPTIONS]",
	  "print every sample of a recording with its domain and stack, as perf\nscript does (for flame-graph scripts and your own tools)",
	  host_script_main },
	{ "annotate", "[SYMBOL] [-i FILE] [OPTIONS]", "one function's instructions with their samples and source lines",
	  host_annotate_main },
	{ "stat", "--vm SOCKET | --domain NAME | -a | -p PID | [--] CMD [ARGS...] [OPTIONS]",
	  "count events like perf stat: a VM (host threads and guest), or a\ncommand, a process or the whole host", cmd_stat },
	{ "top", "--vm SOCKET | --domain NAME [OPTIONS]", "a running VM's hottest guest and host symbols, refreshed live", cmd_top },
	{ "list", "[--details] [FILTER] | list domains [--connect URI]",
	  "the events the host and the guest's vPMU models count, as perf list;\nlist domains: the running libvirt domains, and what works for each",
	  host_list_main },
	{ "trace", "-i FILE [--counts]", "print a kvmprof-vmm --trace file", host_trace_main },
	{ "plugin", "--vm SOCKET load|unload|list|output|events|enable|disable ...",
	  "load and unload a running VMM's plugins", host_plugin_main },
	{ 0 },
};

static const struct cli_program kvmprof = {
	.name = "kvmprof",
	.about = "Profiles a virtual machine from the host: a kvmprof-vmm, or a QEMU/KVM domain\n"
		 "that libvirt manages. The VM's own threads (VMM user code, host kernel) are\n"
		 "sampled with perf_event_open, the guest through kvmprof-vmm's guest sampler or,\n"
		 "for a domain, through QEMU's monitor and QEMU's mapping of guest memory; guest\n"
		 "samples resolve against the guest's own files.\n",
	.commands = commands,
};

int main(int argc, char **argv)
{
	return cli_program_main(&kvmprof, argc, argv);
}
