/* SPDX-License-Identifier: MIT */
/*
 * kvmprof-agent: the in-guest sampling agent. A command is a file owning
 * its options (agent_commands.h) and a row below.
 */
#include "agent_commands.h"
#include "agent_report.h"
#include "cli/cli_command.h"

static const struct cli_command commands[] = {
	{ "record", "[OPTIONS] [-a | -p PID | [--] CMD [ARGS...]]",
	  "sample a command, a process or the whole system into a sample file", cmd_record },
	{ "report", "[-i FILE] [OPTIONS]",
	  "read a sample file: a table by symbol, call graphs, folded stacks,\npprof, an SVG flame graph",
	  agent_report_main },
	{ "script", "[-i FILE] [-G] [OPTIONS]",
	  "print every sample of a sample file with its stack, as perf script\ndoes (for flame-graph scripts and your own tools)",
	  agent_script_main },
	{ "annotate", "[SYMBOL] [-i FILE] [OPTIONS]", "one function's instructions with their samples and source lines",
	  agent_annotate_main },
	{ "stat", "[OPTIONS] [-a | -p PID | [--] CMD [ARGS...]]",
	  "count events of a command, a process or the whole system, like perf stat", cmd_stat },
	{ "export", "[-o DEVICE] [--pid PID]... [--all-symbols]",
	  "send this system's process maps and kernel symbols to a host-side\nprofiler (kvmprof record --guest-export, kvmprof report)",
	  cmd_export },
	{ "list", "[--details] [FILTER]", "the events this system can sample (record -e), as perf list", cmd_list },
	{ 0 },
};

static const struct cli_program agent = {
	.name = "kvmprof-agent",
	.about = "Samples a Linux system with perf_event_open, like perf record or OProfile,\n"
		 "and writes a kvmprof sample file (self-describing, versioned, checked on read).\n",
	.commands = commands,
};

int main(int argc, char **argv)
{
	return cli_program_main(&agent, argc, argv);
}
