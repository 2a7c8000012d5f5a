/* SPDX-License-Identifier: MIT */
/* kvmprof-agent list: the events this system can sample. */
#include <stdio.h>

#include "agent_commands.h"
#include "cli/event_list.h"

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

int cmd_list(int argc, char **argv)
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
