/* SPDX-License-Identifier: MIT */
/*
 * Event names: perf's generic names first (they need no model knowledge and
 * mean the same on every machine), then libpfm4 (model-specific names and
 * modifiers, perf::NAME), then OProfile's architectural names, so an old
 * `CPU_CLK_UNHALTED:100000` still works where libpfm4 does not know the CPU
 * or knows it without a default unit mask for the event.
 */
#include "collection/events.h"
#include "common/suggest.h"

#include <errno.h>
#include <inttypes.h>
#include <perfmon/pfmlib_perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct generic_event {
	const char *name;
	uint32_t type;
	uint64_t config;
};

#define HW_CACHE(cache, op, result)                                                                 \
	((uint64_t)PERF_COUNT_HW_CACHE_##cache | ((uint64_t)PERF_COUNT_HW_CACHE_OP_##op << 8) |   \
	 ((uint64_t)PERF_COUNT_HW_CACHE_RESULT_##result << 16))

static const struct generic_event generic_events[] = {
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
	{ "stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ "stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
	{ "L1-dcache-loads", PERF_TYPE_HW_CACHE, HW_CACHE(L1D, READ, ACCESS) },
	{ "L1-dcache-load-misses", PERF_TYPE_HW_CACHE, HW_CACHE(L1D, READ, MISS) },
	{ "L1-icache-load-misses", PERF_TYPE_HW_CACHE, HW_CACHE(L1I, READ, MISS) },
	{ "LLC-loads", PERF_TYPE_HW_CACHE, HW_CACHE(LL, READ, ACCESS) },
	{ "LLC-load-misses", PERF_TYPE_HW_CACHE, HW_CACHE(LL, READ, MISS) },
	{ "dTLB-load-misses", PERF_TYPE_HW_CACHE, HW_CACHE(DTLB, READ, MISS) },
	{ "iTLB-load-misses", PERF_TYPE_HW_CACHE, HW_CACHE(ITLB, READ, MISS) },
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "cgroup-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CGROUP_SWITCHES },
	{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS },
	{ "emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS },
};

/* OProfile's names for the Intel architectural events (its i386/arch_perfmon list). */
static const struct {
	const char *oprofile, *generic;
} oprofile_aliases[] = {
	{ "CPU_CLK_UNHALTED", "cycles" },     { "INST_RETIRED", "instructions" },
	{ "LLC_REFS", "cache-references" },   { "LLC_MISSES", "cache-misses" },
	{ "BR_INST_RETIRED", "branches" },    { "BR_MISS_PRED_RETIRED", "branch-misses" },
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_FIELDS 16

static int pfm_state; /* 0: not tried, 1: ready, -1: pfm_initialize failed */

static bool pfm_ready(void)
{
	if (!pfm_state)
		pfm_state = pfm_initialize() == PFM_SUCCESS ? 1 : -1;
	return pfm_state > 0;
}

static const struct generic_event *find_generic(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(generic_events); i++)
		if (!strcasecmp(generic_events[i].name, name))
			return &generic_events[i];
	return NULL;
}

static const char *find_alias(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(oprofile_aliases); i++)
		if (!strcasecmp(oprofile_aliases[i].oprofile, name))
			return oprofile_aliases[i].generic;
	return NULL;
}

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	*out = strtoull(s, &end, 0);
	return !errno && !*end;
}

/* perf's modifier letters on generic names: u, k, h select privilege levels, p precision. */
static int apply_perf_modifiers(struct perf_event_attr *attr, char **mods, int nmods, const char *name,
				char *err, size_t errlen)
{
	bool u = false, k = false, h = false;

	for (int i = 0; i < nmods; i++) {
		for (const char *c = mods[i]; *c; c++) {
			switch (*c) {
			case 'u': u = true; break;
			case 'k': k = true; break;
			case 'h': h = true; break;
			case 'p':
				if (attr->precise_ip < 3)
					attr->precise_ip++;
				break;
			default:
				snprintf(err, errlen, "unknown modifier '%s' for %s (known: u, k, h, p)", mods[i],
					 name);
				return -EINVAL;
			}
		}
	}
	if (u || k || h) {
		attr->exclude_user = !u;
		attr->exclude_kernel = !k;
		attr->exclude_hv = !h;
	}
	return 0;
}

static int resolve_generic(const struct generic_event *g, struct events_event *ev, char **mods, int nmods,
			   const char *name, char *err, size_t errlen)
{
	ev->attr.type = g->type;
	ev->attr.config = g->config;
	return apply_perf_modifiers(&ev->attr, mods, nmods, name, err, errlen);
}

int events_pfm_encode(const char *pfmstr, struct perf_event_attr *out, uint64_t *period, char *err, size_t errlen)
{
	struct perf_event_attr attr;
	pfm_perf_encode_arg_t arg;
	int r;

	if (!pfm_ready()) {
		snprintf(err, errlen, "%s: libpfm4 did not initialise", pfmstr);
		return -EINVAL;
	}
	memset(&attr, 0, sizeof(attr));
	memset(&arg, 0, sizeof(arg));
	arg.attr = &attr;
	arg.size = sizeof(arg);
	r = pfm_get_os_event_encoding(pfmstr, PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
	if (r != PFM_SUCCESS) {
		snprintf(err, errlen, "%s: %s", pfmstr, pfm_strerror(r));
		return -EINVAL;
	}
	/*
	 * libpfm4 also sets exclude_guest; the agent profiles the system it
	 * runs in (usually a guest, where the bit means nothing), and the
	 * generic names do not set it either, so `cycles` and `perf::cycles`
	 * open the same event.
	 */
	out->type = attr.type;
	out->config = attr.config;
	out->config1 = attr.config1;
	out->config2 = attr.config2;
	out->exclude_user = attr.exclude_user;
	out->exclude_kernel = attr.exclude_kernel;
	out->exclude_hv = attr.exclude_hv;
	out->precise_ip = attr.precise_ip;
	*period = attr.sample_period && !attr.freq ? attr.sample_period : 0;
	return 0;
}

/* libpfm4 with its perf_event encoder, for -e. */
static int resolve_pfm(const char *pfmstr, struct events_event *ev, char *err, size_t errlen)
{
	uint64_t period;
	int r = events_pfm_encode(pfmstr, &ev->attr, &period, err, errlen);

	if (!r && period && !ev->period)
		ev->period = period;
	return r;
}

/* "NAME" plus ":mod" for each modifier, and ":UMASK" for a named OProfile unit mask. */
static int join_pfm(char *out, size_t outlen, const char *name, char **mods, int nmods, const char *umask)
{
	size_t n = (size_t)snprintf(out, outlen, "%s", name);

	for (int i = 0; i < nmods && n < outlen; i++)
		n += (size_t)snprintf(out + n, outlen - n, ":%s", mods[i]);
	if (umask && n < outlen)
		n += (size_t)snprintf(out + n, outlen - n, ":%s", umask);
	return n < outlen ? 0 : -ENAMETOOLONG;
}

static int resolve(const char *name, char **mods, int nmods, const char *umask, struct events_event *ev,
		   char *unknown, size_t unknownlen, char *err, size_t errlen)
{
	const struct generic_event *g = find_generic(name);
	const char *alias = find_alias(name);
	int r;

	if (g) {
		if (umask) {
			snprintf(err, errlen, "%s takes no named unit mask ('%s')", name, umask);
			return -EINVAL;
		}
		return resolve_generic(g, ev, mods, nmods, name, err, errlen);
	}
	if (pfm_ready() && pfm_find_event(name) >= 0) {
		char pfmstr[2 * KP_EVENT_NAME_MAX];

		if (join_pfm(pfmstr, sizeof(pfmstr), name, mods, nmods, umask)) {
			snprintf(err, errlen, "event name too long");
			return -EINVAL;
		}
		r = resolve_pfm(pfmstr, ev, err, errlen);
		/*
		 * OProfile's CPU_CLK_UNHALTED and INST_RETIRED count the
		 * architectural event when no unit mask is given; libpfm4's
		 * tables for newer Intel cores (model 167 here) have no
		 * default unit mask for them, so the generic event stands in.
		 */
		if (!r || !alias || umask)
			return r;
		return resolve_generic(find_generic(alias), ev, mods, nmods, name, err, errlen);
	}
	if (alias) {
		if (umask) {
			snprintf(err, errlen, "%s takes no named unit mask here ('%s')", name, umask);
			return -EINVAL;
		}
		return resolve_generic(find_generic(alias), ev, mods, nmods, name, err, errlen);
	}
	snprintf(unknown, unknownlen, "%s", name);
	snprintf(err, errlen, "unknown event '%s'", name);
	return -ENOENT;
}

/* OProfile's unit mask, kernel and user fields (after the count). */
static int apply_oprofile(struct events_event *ev, const char *umask_num, const char *kernel, const char *user,
			  const char *name, char *err, size_t errlen)
{
	uint64_t v;

	if (umask_num) {
		if (!parse_u64(umask_num, &v) || v > 0xff) {
			snprintf(err, errlen, "%s: bad unit mask '%s' (0..0xff or a name)", name, umask_num);
			return -EINVAL;
		}
		if (ev->attr.type == PERF_TYPE_RAW) {
			/* x86 raw encodings keep the unit mask in bits 8-15. */
			ev->attr.config = (ev->attr.config & ~0xff00ull) | (v << 8);
		} else if (v) {
			snprintf(err, errlen, "%s: a numeric unit mask needs a raw hardware event", name);
			return -EINVAL;
		}
	}
	if (kernel) {
		if (strcmp(kernel, "0") != 0 && strcmp(kernel, "1") != 0) {
			snprintf(err, errlen, "%s: kernel field must be 0 or 1, not '%s'", name, kernel);
			return -EINVAL;
		}
		ev->attr.exclude_kernel = kernel[0] == '0';
	}
	if (user) {
		if (strcmp(user, "0") != 0 && strcmp(user, "1") != 0) {
			snprintf(err, errlen, "%s: user field must be 0 or 1, not '%s'", name, user);
			return -EINVAL;
		}
		ev->attr.exclude_user = user[0] == '0';
	}
	if (ev->attr.exclude_kernel && ev->attr.exclude_user) {
		snprintf(err, errlen, "%s: kernel and user both 0 count nothing", name);
		return -EINVAL;
	}
	return 0;
}

int events_parse(const char *spec, struct events_event *ev, char *unknown, size_t unknownlen, char *err,
		 size_t errlen)
{
	char buf[KP_EVENT_NAME_MAX], *fields[MAX_FIELDS], *rest, *pmu_sep;
	int n = 0, first_num = -1, r;
	uint64_t v;

	memset(ev, 0, sizeof(*ev));
	if (unknownlen)
		unknown[0] = 0;
	if (!spec || !*spec) {
		snprintf(err, errlen, "empty event name");
		return -EINVAL;
	}
	if (strlen(spec) >= sizeof(buf)) {
		snprintf(err, errlen, "event '%.32s...' is too long", spec);
		return -EINVAL;
	}
	memcpy(buf, spec, strlen(spec) + 1);
	/* libpfm4's "pmu::event" keeps its double colon inside the name. */
	pmu_sep = strstr(buf, "::");
	rest = pmu_sep ? pmu_sep + 2 : buf;
	fields[n++] = buf;
	for (char *c = strchr(rest, ':'); c; c = strchr(c + 1, ':')) {
		if (n == MAX_FIELDS) {
			snprintf(err, errlen, "%s: too many ':' fields", spec);
			return -EINVAL;
		}
		*c = 0;
		fields[n++] = c + 1;
	}
	for (int i = 0; i < n; i++) {
		if (!fields[i][0]) {
			snprintf(err, errlen, "%s: empty field", spec);
			return -EINVAL;
		}
		if (i > 0 && first_num < 0 && parse_u64(fields[i], &v))
			first_num = i;
	}

	if (first_num == 1) {
		/* OProfile: event:count[:unitmask[:kernel[:user]]]; a named unit mask goes to libpfm4. */
		const char *um = n > 2 ? fields[2] : NULL, *um_name = NULL;

		if (n > 5) {
			snprintf(err, errlen, "%s: too many fields for event:count:unitmask:kernel:user", spec);
			return -EINVAL;
		}
		if (um && !parse_u64(um, &v)) {
			um_name = um;
			um = NULL;
		}
		r = resolve(fields[0], NULL, 0, um_name, ev, unknown, unknownlen, err, errlen);
		if (!r)
			r = apply_oprofile(ev, um, n > 3 ? fields[3] : NULL, n > 4 ? fields[4] : NULL,
					   fields[0], err, errlen);
		if (r)
			return r;
		parse_u64(fields[1], &ev->period);
	} else if (first_num < 0 || first_num == n - 1) {
		/* NAME[:modifier...][:PERIOD] */
		int nmods = (first_num < 0 ? n : n - 1) - 1;

		r = resolve(fields[0], fields + 1, nmods, NULL, ev, unknown, unknownlen, err, errlen);
		if (r)
			return r;
		if (first_num > 0)
			parse_u64(fields[first_num], &ev->period);
	} else {
		snprintf(err, errlen, "%s: a period goes last (NAME[:MODIFIER...]:PERIOD)", spec);
		return -EINVAL;
	}
	if (first_num > 0 && !ev->period) {
		snprintf(err, errlen, "%s: the period must be at least 1", spec);
		return -EINVAL;
	}
	/*
	 * The name as written, without a trailing period: reports title their
	 * tables with it. OProfile's longer forms stay whole (the unit mask
	 * and kernel/user fields say what was counted).
	 */
	snprintf(ev->name, sizeof(ev->name), "%s", spec);
	if (first_num > 0 && first_num == n - 1)
		*strrchr(ev->name, ':') = 0;
	return 0;
}

bool events_is_clock(uint32_t type, uint64_t config)
{
	return type == PERF_TYPE_SOFTWARE && (config == PERF_COUNT_SW_CPU_CLOCK || config == PERF_COUNT_SW_TASK_CLOCK);
}

void events_cpu_clock(struct events_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	snprintf(ev->name, sizeof(ev->name), "cpu-clock");
	ev->attr.type = PERF_TYPE_SOFTWARE;
	ev->attr.config = PERF_COUNT_SW_CPU_CLOCK;
}

size_t events_generic_count(void)
{
	return ARRAY_SIZE(generic_events);
}

const char *events_generic(size_t i, uint32_t *type, uint64_t *config)
{
	if (i >= ARRAY_SIZE(generic_events))
		return NULL;
	*type = generic_events[i].type;
	*config = generic_events[i].config;
	return generic_events[i].name;
}

/* The unit masks of libpfm4 event idx, each through fn. */
static int for_each_umask(int idx, const pfm_event_info_t *info, struct events_pfm_entry *e,
			  int (*fn)(const struct events_pfm_entry *e, void *ctx), void *ctx)
{
	for (int a = 0; a < info->nattrs; a++) {
		pfm_event_attr_info_t ainfo;
		int r;

		memset(&ainfo, 0, sizeof(ainfo));
		ainfo.size = sizeof(ainfo);
		if (pfm_get_event_attr_info(idx, a, PFM_OS_NONE, &ainfo) != PFM_SUCCESS ||
		    ainfo.type != PFM_ATTR_UMASK)
			continue;
		e->umask = ainfo.name;
		e->desc = ainfo.desc ? ainfo.desc : "";
		r = fn(e, ctx);
		if (r)
			return r;
	}
	return 0;
}

int events_for_each_pfm(bool umasks, int (*fn)(const struct events_pfm_entry *e, void *ctx), void *ctx)
{
	if (!pfm_ready())
		return -ENODEV;
	for (int p = PFM_PMU_NONE; p < PFM_PMU_MAX; p++) {
		pfm_pmu_info_t pinfo;

		memset(&pinfo, 0, sizeof(pinfo));
		pinfo.size = sizeof(pinfo);
		if (pfm_get_pmu_info((pfm_pmu_t)p, &pinfo) != PFM_SUCCESS || !pinfo.is_present)
			continue;
		for (int i = pinfo.first_event; i != -1; i = pfm_get_event_next(i)) {
			pfm_event_info_t info;
			struct events_pfm_entry e;
			int r;

			memset(&info, 0, sizeof(info));
			info.size = sizeof(info);
			if (pfm_get_event_info(i, PFM_OS_NONE, &info) != PFM_SUCCESS)
				continue;
			e = (struct events_pfm_entry){
				.pmu = pinfo.name, .pmu_desc = pinfo.desc ? pinfo.desc : "",
				.pmu_generic = pinfo.type == PFM_PMU_TYPE_OS_GENERIC, .event = info.name,
				.desc = info.desc ? info.desc : "",
			};
			r = fn(&e, ctx);
			if (!r && umasks)
				r = for_each_umask(i, &info, &e, fn, ctx);
			if (r)
				return r;
		}
	}
	return 0;
}

static int consider_pfm(const struct events_pfm_entry *e, void *ctx)
{
	struct suggest *s = ctx;
	char full[KP_EVENT_NAME_MAX];

	suggest_consider(s, e->event);
	snprintf(full, sizeof(full), "%s::%s", e->pmu, e->event);
	suggest_consider(s, full);
	return 0;
}

int events_suggest(const char *name, int max, char *out, size_t outlen)
{
	struct suggest s;

	suggest_init(&s, name, max);
	for (size_t i = 0; i < ARRAY_SIZE(generic_events); i++)
		suggest_consider(&s, generic_events[i].name);
	for (size_t i = 0; i < ARRAY_SIZE(oprofile_aliases); i++)
		suggest_consider(&s, oprofile_aliases[i].oprofile);
	events_for_each_pfm(false, consider_pfm, &s);
	return suggest_format(&s, out, outlen);
}
