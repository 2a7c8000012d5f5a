/* SPDX-License-Identifier: MIT */
/*
 * perf list's layout: generic events as "  NAME  [TAG]" in a 50-column
 * name field, a PMU's events as the name with its description on the next
 * line. Every name printed is one -e takes as printed (events_parse): the
 * generic names, and libpfm4's fully qualified PMU::EVENT[:UMASK] (a bare
 * EVENT could name another PMU's event of the same name).
 */
#include "cli/event_list.h"

#include <fnmatch.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "collection/events.h"
#include "common/perf_open.h"

#define NO_PMU_TAG "not countable here: cpu-clock stands in"

void event_list_init(struct event_list *l, FILE *out, const char *filter, bool hw_countable)
{
	memset(l, 0, sizeof(*l));
	l->out = out;
	l->filter = filter && *filter ? filter : NULL;
	l->hw_countable = hw_countable;
}

static bool contains_nocase(const char *s, const char *needle)
{
	return s && strcasestr(s, needle);
}

bool event_list_matches(const struct event_list *l, const char *name, const char *desc)
{
	if (!l->filter)
		return true;
	if (strpbrk(l->filter, "*?["))
		return !fnmatch(l->filter, name, FNM_CASEFOLD);
	return contains_nocase(name, l->filter) || contains_nocase(desc, l->filter);
}

void event_list_section(struct event_list *l, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(l->pending, sizeof(l->pending), fmt, ap);
	va_end(ap);
}

/* A row, and with detail (l->details only) a second bracketed line under the description. */
static void print_row(struct event_list *l, const char *name, const char *tag, const char *desc, const char *detail)
{
	if (l->pending[0]) {
		fprintf(l->out, "%s%s\n", l->any_section ? "\n" : "", l->pending);
		l->pending[0] = 0;
		l->any_section = true;
	}
	if (desc && *desc)
		fprintf(l->out, "  %s%s%s%s\n       [%s]\n", name, tag ? " [" : "", tag ? tag : "", tag ? "]" : "", desc);
	else if (tag)
		fprintf(l->out, "  %-50s [%s]\n", name, tag);
	else
		fprintf(l->out, "  %s\n", name);
	if (detail)
		fprintf(l->out, "       [%s]\n", detail);
	l->shown++;
}

void event_list_force_row(struct event_list *l, const char *name, const char *tag, const char *desc)
{
	print_row(l, name, tag, desc, NULL);
}

void event_list_row(struct event_list *l, const char *name, const char *tag, const char *desc)
{
	if (event_list_matches(l, name, desc))
		print_row(l, name, tag, desc, NULL);
}

/* perf list's tag for a generic event's type. */
static const char *generic_tag(uint32_t type)
{
	switch (type) {
	case PERF_TYPE_HARDWARE: return "Hardware event";
	case PERF_TYPE_HW_CACHE: return "Hardware cache event";
	default: return "Software event";
	}
}

/*
 * The generic events of one perf type; the rows that open one event joined
 * with " OR ", shown when one of those names matches the filter.
 */
static void list_generic(struct event_list *l, uint32_t want)
{
	size_t n = events_generic_count();

	for (size_t i = 0; i < n; i++) {
		uint32_t type, t2;
		uint64_t config, c2;
		const char *name = events_generic(i, &type, &config);
		char names[160], tag[96];
		bool seen = false, match;

		if (type != want)
			continue;
		for (size_t j = 0; j < i && !seen; j++) {
			events_generic(j, &t2, &c2);
			seen = t2 == type && c2 == config;
		}
		if (seen)
			continue;
		snprintf(names, sizeof(names), "%s", name);
		match = event_list_matches(l, name, NULL);
		for (size_t j = i + 1; j < n; j++) {
			const char *alias = events_generic(j, &t2, &c2);
			size_t used = strlen(names);

			if (t2 != type || c2 != config)
				continue;
			snprintf(names + used, sizeof(names) - used, " OR %s", alias);
			match = match || event_list_matches(l, alias, NULL);
		}
		if (!match)
			continue;
		snprintf(tag, sizeof(tag), "%s%s", generic_tag(type),
			 type != PERF_TYPE_SOFTWARE && !l->hw_countable ? "; " NO_PMU_TAG : "");
		print_row(l, names, tag, NULL, NULL);
	}
}

/*
 * What -e NAME opens, through the parser's own libpfm4 encoder: perf's
 * type, config and any config1/config2, as perf list --details shows it.
 */
static void describe_encoding(const char *name, char *out, size_t len)
{
	struct perf_event_attr attr;
	uint64_t period;
	char err[256];
	int n;

	memset(&attr, 0, sizeof(attr));
	if (events_pfm_encode(name, &attr, &period, err, sizeof(err))) {
		snprintf(out, len, "not encodable alone: %s", err);
		return;
	}
	n = snprintf(out, len, "perf type %u%s, config %#llx", attr.type, attr.type == PERF_TYPE_RAW ? " (raw)" : "",
		     (unsigned long long)attr.config);
	if (attr.config1 && n > 0 && (size_t)n < len)
		n += snprintf(out + n, len - (size_t)n, ", config1 %#llx", (unsigned long long)attr.config1);
	if (attr.config2 && n > 0 && (size_t)n < len)
		snprintf(out + n, len - (size_t)n, ", config2 %#llx", (unsigned long long)attr.config2);
}

struct pfm_walk {
	struct event_list *l;
	const char *pmu; /* the PMU whose heading was set last */
};

static int list_pfm_entry(const struct events_pfm_entry *e, void *ctx)
{
	struct pfm_walk *w = ctx;
	char name[256], detail[320];

	/* libpfm4's perf and perf_raw PMUs are the generic events again, in other spellings. */
	if (e->pmu_generic)
		return 0;
	if (!w->pmu || strcmp(w->pmu, e->pmu)) {
		event_list_section(w->l, "%s: %s events, from libpfm4%s:", e->pmu, e->pmu_desc,
				   w->l->hw_countable ? "" : " (" NO_PMU_TAG ")");
		w->pmu = e->pmu;
	}
	snprintf(name, sizeof(name), "%s::%s%s%s", e->pmu, e->event, e->umask ? ":" : "", e->umask ? e->umask : "");
	if (!event_list_matches(w->l, name, e->desc))
		return 0;
	if (w->l->details)
		describe_encoding(name, detail, sizeof(detail));
	print_row(w->l, name, NULL, e->desc, w->l->details ? detail : NULL);
	return 0;
}

void event_list_host(struct event_list *l, const char *title)
{
	struct pfm_walk w = { .l = l };

	event_list_section(l, "%s%s:", title, l->hw_countable ? "" : ", on a system without a hardware PMU");
	list_generic(l, PERF_TYPE_HARDWARE);
	list_generic(l, PERF_TYPE_HW_CACHE);
	list_generic(l, PERF_TYPE_SOFTWARE);
	events_for_each_pfm(true, list_pfm_entry, &w);
}

bool event_list_host_has_pmu(char *why, size_t len)
{
	return perf_open_probe_pmu(why, len) == 0;
}

int event_list_parse_args(const char *prog, const char *usage, const char *help, int argc, char **argv,
			  struct event_list_args *a)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "details", no_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(a, 0, sizeof(*a));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			printf("%s%s", usage, help);
			return 0;
		case 'd':
			a->details = true;
			break;
		default:
			return cli_usage_error(prog, usage, "unknown option %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		a->filter = argv[optind++];
	if (optind < argc)
		return cli_usage_error(prog, usage, "one filter at most ('%s', then '%s')", a->filter, argv[optind]);
	if (a->filter && !*a->filter)
		return cli_usage_error(prog, usage, "empty filter");
	return -1;
}
