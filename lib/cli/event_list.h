/* SPDX-License-Identifier: MIT */
/*
 * `list`, as perf list prints it: the events -e takes, one per line, with
 * perf's tags ("[Hardware event]", "[Software event]") for perf's generic
 * names and libpfm4's descriptions for the events of the PMUs it finds. Both
 * programs print through it: kvmprof-agent list (this system's events) and
 * kvmprof list (the host's, then the vPMU models', host-profiler/list_events.c).
 */
#ifndef KVMPROF_EVENT_LIST_H
#define KVMPROF_EVENT_LIST_H

#include <stdbool.h>
#include <stdio.h>

struct event_list {
	FILE *out;
	const char *filter;   /* NULL: every event; else a substring or a glob (event_list_matches) */
	bool hw_countable;    /* false: this system has no hardware PMU, and its lines say so */
	bool details;         /* each libpfm4 event's perf_event encoding under its description */
	unsigned int shown;   /* event lines printed so far */
	bool any_section;     /* a section was printed: the next starts after a blank line */
	char pending[256];    /* the heading of the current section, printed before its first event */
};

void event_list_init(struct event_list *l, FILE *out, const char *filter, bool hw_countable);

/*
 * Whether an event belongs in the list: no filter, or one with a glob
 * character (* ? [) that matches the whole name, or a substring of the name
 * or of the description, ignoring case ("cache" finds cache-misses and
 * L1-dcache-loads, as perf list cache does).
 */
bool event_list_matches(const struct event_list *l, const char *name, const char *desc);

/* Starts a section; its heading is printed only if one of its events is. */
void event_list_section(struct event_list *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * One event, if it matches: "  NAME    [TAG]" as perf prints its generic
 * events, or, with desc, NAME on its line and "[DESC]" indented under it, as
 * perf prints a PMU's events. tag or desc may be NULL.
 */
void event_list_row(struct event_list *l, const char *name, const char *tag, const char *desc);
/* The same without the filter: for a caller that matched the event's names itself ("a OR b"). */
void event_list_force_row(struct event_list *l, const char *name, const char *tag, const char *desc);

/*
 * This system's events: perf's generic hardware, hardware cache and
 * software events (names that open the same event on one line, "cycles OR
 * cpu-cycles"), then each PMU libpfm4 detects with its events and their
 * unit masks. Without a hardware PMU the hardware lines say that cpu-clock
 * stands in for them (both record commands fall back to it). title heads
 * the generic events ("List of pre-defined events (to use in -e)").
 */
void event_list_host(struct event_list *l, const char *title);

struct event_list_args {
	const char *filter; /* NULL: none */
	bool details;       /* --details */
};

/*
 * `list [--details] [FILTER]` and --help, after the command name
 * (argv[0]): -1 with a filled in to go on, else the exit status (0 after
 * --help; 2 after a usage error: an unknown option, a second filter). prog
 * starts messages ("kvmprof-agent list").
 */
int event_list_parse_args(const char *prog, const char *usage, const char *help, int argc, char **argv,
			  struct event_list_args *a);

/* Whether this system counts hardware events (perf_open_probe_pmu), and why not in why. */
bool event_list_host_has_pmu(char *why, size_t len);

#endif
