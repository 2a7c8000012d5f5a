/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof list [FILTER]`: what perf list shows (this host's events, as
 * kvmprof record -e and stat -e take them: lib/cli/event_list.c), then what a
 * guest of kvmprof-vmm can count on each vPMU model, spelled as the guest's
 * kvmprof-agent record -e takes them. `list domains` (and, as before it
 * existed, `list --connect URI`) goes to the libvirt domain listing.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "host_list.h"
#include "vpmu_model_events.h"
#include "vpmu_names.h"

static const char usage[] = "usage: kvmprof list [--details] [FILTER]\n"
			    "       kvmprof list domains [--connect URI]\n";
static const char help[] =
	"\n"
	"With no argument or a FILTER, the events, as perf list prints them: this\n"
	"host's (perf's generic hardware, hardware cache and software events, then the\n"
	"events and unit masks of each PMU libpfm4 finds, as PMU::EVENT[:UMASK]), which\n"
	"kvmprof record -e and stat -e take; then, for each vPMU model of kvmprof-vmm\n"
	"(--vpmu=intel|amd), the events a guest can count, spelled as the guest's\n"
	"kvmprof-agent record -e takes them (perf's raw rUUEE syntax, and the generic\n"
	"name a Linux guest programs as the same event select and unit mask). Without a\n"
	"hardware PMU the host's hardware events are marked: record samples cpu-clock\n"
	"in their place.\n"
	"\n"
	"  FILTER          only the events whose name or description contains FILTER (any\n"
	"                  case), or, with a * ? or [, whose name matches it as a glob\n"
	"  --details       under each libpfm4 event, what -e opens for it: perf's type\n"
	"                  and config (as perf list --details)\n"
	"  domains         the running libvirt domains: QEMU's pid, the vCPU threads,\n"
	"                  guest RAM, the guest's PMU, and which kvmprof features work\n"
	"                  for each and why not (`kvmprof list domains --help`)\n"
	"  -c, --connect URI  libvirt's connection (default qemu:///system); given\n"
	"                  without `domains`, it lists the domains, as it always has\n";

static bool asks_for_domains(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			return false;
		if (!strncmp(argv[i], "-c", 2) || !strncmp(argv[i], "--connect", 9))
			return true;
	}
	return false;
}

void host_list_vpmu_models(struct event_list *l)
{
	for (size_t m = 0; m < vpmu_model_names.count; m++) {
		enum vpmu_model model = (enum vpmu_model)vpmu_model_names.row[m].value;
		const struct vpmu_model_events *t = vpmu_model_events(model);

		if (!t->count)
			continue;
		event_list_section(l, "vPMU model %s (kvmprof-vmm --vpmu=%s): what a guest counts, as its kvmprof-agent record -e "
				   "spells it:",
				   vpmu_model_names.row[m].name, vpmu_model_names.row[m].name);
		for (size_t i = 0; i < t->count; i++) {
			const struct vpmu_model_event *e = &t->row[i];
			char raw[24], name[96], desc[256];

			vpmu_model_event_raw_name(e, raw, sizeof(raw));
			snprintf(name, sizeof(name), "%s%s%s", e->linux_name ? e->linux_name : "",
				 e->linux_name ? " OR " : "", raw);
			snprintf(desc, sizeof(desc), "event=0x%02x,umask=0x%02x: %s", e->select, e->umask, e->desc);
			/* A glob matches either spelling, as for the generic names' aliases. */
			if (event_list_matches(l, raw, desc) || (e->linux_name && event_list_matches(l, e->linux_name, desc)))
				event_list_force_row(l, name, NULL, desc);
		}
	}
}

int host_list_main(int argc, char **argv)
{
	struct event_list l;
	struct event_list_args a;
	char why[256];
	int r;

	if (argc > 1 && !strcmp(argv[1], "domains"))
		return host_list_domains_main(argc - 1, argv + 1);
	if (asks_for_domains(argc, argv))
		return host_list_domains_main(argc, argv);
	r = event_list_parse_args("kvmprof list", usage, help, argc, argv, &a);
	if (r >= 0)
		return r;
	event_list_init(&l, stdout, a.filter, event_list_host_has_pmu(why, sizeof(why)));
	l.details = a.details;
	event_list_host(&l, "Host events (kvmprof record -e, stat -e)");
	host_list_vpmu_models(&l);
	return 0;
}
