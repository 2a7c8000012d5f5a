/* SPDX-License-Identifier: MIT */
/*
 * `kvmprof list`: the events the host and the guest's vPMU models can count
 * (host-profiler/list_events.c), and `kvmprof list domains [--connect URI]`:
 * the running libvirt domains and what kvmprof can do with each
 * (host-profiler/libvirt/list.c).
 */
#ifndef HOST_LIST_H
#define HOST_LIST_H

#include "cli/event_list.h"

/* argv[0] is "list". Returns the exit status. */
int host_list_main(int argc, char **argv);

/* argv[0] is "domains" (or "list" for the older `kvmprof list --connect URI`). Returns the exit status. */
int host_list_domains_main(int argc, char **argv);

/*
 * Each vPMU model's events (vpmu/vpmu_model_events.c) as a guest's
 * kvmprof-agent record -e spells them, with their event select and unit
 * mask: a section per model, a line per row of its table.
 */
void host_list_vpmu_models(struct event_list *l);

#endif
