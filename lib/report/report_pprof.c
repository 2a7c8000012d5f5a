/* SPDX-License-Identifier: MIT */
/*
 * pprof output: the profile as a gzipped perftools.profiles.Profile
 * (lib/profile/profile.proto). Each event contributes two values per sample, its
 * sample count and its weight (events, the sum of periods); samples with
 * the same event, pid, command and location stack are merged. Each sample
 * has labels pid and comm, and with options domain (the VM), layer and
 * guest_process, so continuous-profiling back ends can filter by them.
 * Locations
 * carry their mapping (one per image) and function, so readers need no
 * symbol files.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "collection/events.h"
#include "common/grow.h"
#include "profile.pb-c.h"
#include "report/report.h"

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__ValueType PbValueType;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Label PbLabel;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;

struct strtab {
	char **s;
	size_t nr, cap;
	struct keymap index;
	int failed;
};

static int64_t str_index(struct strtab *t, const char *s)
{
	uint64_t h = keymap_hash(s, strlen(s), 7), k;
	char *copy;

	for (k = 0;; k++) {
		int64_t v = keymap_get(&t->index, h, k);

		if (v < 0)
			break;
		if (!strcmp(t->s[v], s))
			return v;
	}
	copy = strdup(s);
	if (!copy || grow_array(&t->s, &t->cap, t->nr + 1, sizeof(*t->s)) ||
	    keymap_put(&t->index, h, k, (uint32_t)t->nr)) {
		free(copy);
		t->failed = 1;
		return 0;
	}
	t->s[t->nr] = copy;
	return (int64_t)t->nr++;
}

/*
 * Groups of (event, pid, command, domain, privilege level): a sample
 * stack is counted within one, and its labels are the group's.
 */
struct group {
	uint32_t event, pid, comm;
	uint32_t sample; /* one of its samples, for the labels */
};

#define MAX_LABELS 5 /* pid, comm, and the options': domain, layer, guest_process */

struct builder {
	const struct profile *p;
	const struct report_pprof_options *opt;
	struct strtab str;
	PbProfile prof;
	PbValueType *types, **type_ptrs, period_type;
	PbMapping *maps, **map_ptrs;
	PbFunction *funcs, **func_ptrs;
	PbLocation *locs, **loc_ptrs;
	PbLine *lines, **line_ptrs;
	PbSample *samples, **sample_ptrs;
	PbLabel *labels, **label_ptrs;
	uint64_t *loc_ids;
	int64_t *values;
	struct group *groups;
	size_t nr_groups, groups_cap;
	struct keymap group_index;
	struct report_stacks stacks;
};

static void *alloc_n(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

/*
 * An event's value type: what it counted, in its unit. A clock (cpu-clock,
 * task-clock, or the clock that stood in for an event the host could not
 * count) counts nanoseconds, under the clock's own name.
 */
static void event_type(const struct profile_event *e, const char **name, const char **unit)
{
	bool clock = events_is_clock(e->type, e->config) || (e->flags & KP_EVENT_FALLBACK);

	*name = clock && (e->flags & KP_EVENT_FALLBACK) ? "cpu-clock" : e->name;
	*unit = clock ? "nanoseconds" : "events";
}

static int add_types(struct builder *b)
{
	const struct profile *p = b->p;
	size_t i, n = 2 * p->nr_events;
	bool single = p->nr_events == 1;

	b->types = alloc_n(n, sizeof(*b->types));
	b->type_ptrs = alloc_n(n, sizeof(*b->type_ptrs));
	if (!b->types || !b->type_ptrs)
		return -ENOMEM;
	for (i = 0; i < p->nr_events; i++) {
		const struct profile_event *e = &p->events[i];
		char name[KP_EVENT_NAME_MAX + 16];
		const char *type, *unit;

		event_type(e, &type, &unit);
		snprintf(name, sizeof(name), "%s%s", single ? "" : type, single ? "samples" : "-samples");
		perftools__profiles__value_type__init(&b->types[2 * i]);
		b->types[2 * i].type = str_index(&b->str, name);
		b->types[2 * i].unit = str_index(&b->str, "count");
		perftools__profiles__value_type__init(&b->types[2 * i + 1]);
		b->types[2 * i + 1].type = str_index(&b->str, type);
		b->types[2 * i + 1].unit = str_index(&b->str, unit);
		b->type_ptrs[2 * i] = &b->types[2 * i];
		b->type_ptrs[2 * i + 1] = &b->types[2 * i + 1];
	}
	b->prof.n_sample_type = n;
	b->prof.sample_type = b->type_ptrs;
	if (p->nr_events) {
		const struct profile_event *e = &p->events[report_folded_event(p)];
		const char *type, *unit;

		event_type(e, &type, &unit);
		perftools__profiles__value_type__init(&b->period_type);
		b->period_type.type = str_index(&b->str, type);
		b->period_type.unit = str_index(&b->str, unit);
		b->prof.period_type = &b->period_type;
		/*
		 * pprof's period is in the period type's unit: a clock sampled at F Hz
		 * samples every 10^9 / F ns; another event sampled by frequency has no
		 * fixed period, and the mean of what its samples stood for is given.
		 */
		if (!(e->flags & KP_EVENT_FREQ))
			b->prof.period = (int64_t)e->period;
		else if (!strcmp(unit, "nanoseconds") && e->period)
			b->prof.period = (int64_t)(1000000000ull / e->period);
		else if (e->samples)
			b->prof.period = (int64_t)(e->weight / e->samples);
		/* The first event with samples is what pprof shows unless told otherwise. */
		b->prof.default_sample_type = b->types[(size_t)2 * report_folded_event(p)].type;
	}
	return 0;
}

/*
 * pprof takes mapping[0] for the main binary: the program image (not a
 * kernel, not a pseudo image) in which most samples were taken goes first
 * (not the first image seen, which may be a shell or env that exec'd it).
 * Mapping ids follow the images; only the order of the list changes.
 */
static size_t main_image(const struct profile *p)
{
	uint64_t *n = calloc(p->nr_images ? p->nr_images : 1, sizeof(*n)), best_n = 0;
	size_t best = 0;

	if (!n)
		return 0;
	for (size_t i = 0; i < p->nr_samples; i++)
		if (p->samples[i].nr_frames)
			n[p->locs[p->frames[p->samples[i].first_frame]].image]++;
	for (size_t i = 0; i < p->nr_images; i++)
		if (p->images[i].path && !p->images[i].kernel && !p->images[i].vm_exit && n[i] > best_n) {
			best_n = n[i];
			best = i;
		}
	free(n);
	return best;
}

static int add_mappings(struct builder *b)
{
	const struct profile *p = b->p;
	size_t i, first = p->nr_images ? main_image(p) : 0;

	b->maps = alloc_n(p->nr_images, sizeof(*b->maps));
	b->map_ptrs = alloc_n(p->nr_images, sizeof(*b->map_ptrs));
	if (!b->maps || !b->map_ptrs)
		return -ENOMEM;
	for (i = 0; i < p->nr_images; i++) {
		const struct profile_image *im = &p->images[i];
		PbMapping *m = &b->maps[i];
		char hex[2 * KP_BUILD_ID_MAX + 1] = "";
		unsigned j;

		for (j = 0; j < im->build_id_size; j++)
			snprintf(hex + 2 * j, 3, "%02x", im->build_id[j]);
		perftools__profiles__mapping__init(m);
		m->id = i + 1;
		m->memory_start = im->start;
		m->memory_limit = im->limit;
		m->file_offset = im->pgoff;
		m->filename = str_index(&b->str, im->path ? im->path : im->name);
		m->build_id = str_index(&b->str, hex);
		m->has_functions = im->has_symbols || im->kernel;
		/* The main image first, the others in their order. */
		b->map_ptrs[i == first ? 0 : i < first ? i + 1 : i] = m;
	}
	b->prof.n_mapping = p->nr_images;
	b->prof.mapping = b->map_ptrs;
	return 0;
}

static int add_functions(struct builder *b)
{
	const struct profile *p = b->p;
	size_t i, n = 0;

	b->funcs = alloc_n(p->nr_funcs, sizeof(*b->funcs));
	b->func_ptrs = alloc_n(p->nr_funcs, sizeof(*b->func_ptrs));
	if (!b->funcs || !b->func_ptrs)
		return -ENOMEM;
	/* Ids are func index + 1; unresolved addresses get no function, only an address. */
	for (i = 0; i < p->nr_funcs; i++) {
		const struct profile_func *f = &p->funcs[i];
		const struct profile_image *im = &p->images[f->image];
		PbFunction *pf = &b->funcs[n];

		if (!f->name)
			continue;
		perftools__profiles__function__init(pf);
		pf->id = i + 1;
		pf->name = str_index(&b->str, f->name);
		pf->system_name = pf->name;
		pf->filename = str_index(&b->str, im->path ? im->path : im->name);
		b->func_ptrs[n++] = pf;
	}
	b->prof.n_function = n;
	b->prof.function = b->func_ptrs;
	return 0;
}

static int add_locations(struct builder *b)
{
	const struct profile *p = b->p;
	size_t i;

	b->locs = alloc_n(p->nr_locs, sizeof(*b->locs));
	b->loc_ptrs = alloc_n(p->nr_locs, sizeof(*b->loc_ptrs));
	b->lines = alloc_n(p->nr_locs, sizeof(*b->lines));
	b->line_ptrs = alloc_n(p->nr_locs, sizeof(*b->line_ptrs));
	if (!b->locs || !b->loc_ptrs || !b->lines || !b->line_ptrs)
		return -ENOMEM;
	for (i = 0; i < p->nr_locs; i++) {
		const struct profile_loc *l = &p->locs[i];
		PbLocation *pl = &b->locs[i];

		perftools__profiles__location__init(pl);
		pl->id = i + 1;
		pl->mapping_id = l->image + 1;
		pl->address = l->addr;
		if (profile_func_known(p, l->func)) {
			perftools__profiles__line__init(&b->lines[i]);
			b->lines[i].function_id = l->func + 1;
			b->line_ptrs[i] = &b->lines[i];
			pl->n_line = 1;
			pl->line = &b->line_ptrs[i];
		}
		b->loc_ptrs[i] = pl;
	}
	b->prof.n_location = p->nr_locs;
	b->prof.location = b->loc_ptrs;
	return 0;
}

static int64_t group_of(struct builder *b, const struct profile_sample *s, size_t index)
{
	uint64_t k1 = (uint64_t)s->event << 32 | s->pid, k2 = (uint64_t)s->domain << 40 | (uint64_t)s->cpl << 32 | s->comm;
	int64_t v = keymap_get(&b->group_index, k1, k2);

	if (v >= 0)
		return v;
	if (grow_array(&b->groups, &b->groups_cap, b->nr_groups + 1, sizeof(*b->groups)) ||
	    keymap_put(&b->group_index, k1, k2, (uint32_t)b->nr_groups))
		return -1;
	b->groups[b->nr_groups] = (struct group){ s->event, s->pid, s->comm, (uint32_t)index };
	return (int64_t)b->nr_groups++;
}

/* A string label of sample ps (the next of its labels at lb[*n]); nothing for an empty or missing value. */
static void str_label(struct builder *b, PbLabel *lb, PbLabel **ptrs, size_t *n, int64_t key, const char *value)
{
	if (!value || !*value)
		return;
	perftools__profiles__label__init(&lb[*n]);
	lb[*n].key = key;
	lb[*n].str = str_index(&b->str, value);
	ptrs[*n] = &lb[*n];
	(*n)++;
}

static int add_samples(struct builder *b)
{
	const struct profile *p = b->p;
	size_t nv = 2 * p->nr_events, i, n;
	int64_t pid_key = str_index(&b->str, "pid"), comm_key = str_index(&b->str, "comm");
	int64_t domain_key = str_index(&b->str, "domain"), layer_key = str_index(&b->str, "layer");
	int64_t guest_key = str_index(&b->str, "guest_process");
	int rc;

	for (i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		int64_t g = group_of(b, s, i);

		if (g < 0)
			return -ENOMEM;
		rc = report_stacks_add(&b->stacks, (uint32_t)g, &p->frames[s->first_frame], s->nr_frames, s->period);
		if (rc)
			return rc;
	}
	n = b->stacks.nr;
	b->samples = alloc_n(n, sizeof(*b->samples));
	b->sample_ptrs = alloc_n(n, sizeof(*b->sample_ptrs));
	b->labels = alloc_n(MAX_LABELS * n, sizeof(*b->labels));
	b->label_ptrs = alloc_n(MAX_LABELS * n, sizeof(*b->label_ptrs));
	b->loc_ids = alloc_n(b->stacks.nr_ids, sizeof(*b->loc_ids));
	if (n && nv > SIZE_MAX / n)
		return -ENOMEM;
	b->values = alloc_n(n * nv, sizeof(*b->values));
	if (!b->samples || !b->sample_ptrs || !b->labels || !b->label_ptrs || !b->loc_ids || !b->values)
		return -ENOMEM;
	for (i = 0; i < b->stacks.nr_ids; i++)
		b->loc_ids[i] = (uint64_t)b->stacks.ids[i] + 1;
	for (i = 0; i < n; i++) {
		const struct report_stack *st = &b->stacks.stacks[i];
		const struct group *g = &b->groups[st->group];
		PbSample *ps = &b->samples[i];
		PbLabel *lb = &b->labels[MAX_LABELS * i], **ptrs = &b->label_ptrs[MAX_LABELS * i];
		size_t nl = 2;

		perftools__profiles__sample__init(ps);
		ps->n_location_id = st->nr;
		ps->location_id = &b->loc_ids[st->first];
		ps->n_value = nv;
		ps->value = &b->values[i * nv];
		ps->value[2 * g->event] = (int64_t)st->count;
		ps->value[2 * g->event + 1] = (int64_t)st->weight;
		perftools__profiles__label__init(&lb[0]);
		lb[0].key = pid_key;
		lb[0].num = g->pid;
		perftools__profiles__label__init(&lb[1]);
		lb[1].key = comm_key;
		lb[1].str = str_index(&b->str, p->comms[g->comm]);
		ptrs[0] = &lb[0];
		ptrs[1] = &lb[1];
		if (b->opt) {
			const char *layer = NULL, *guest = NULL;

			str_label(b, lb, ptrs, &nl, domain_key, b->opt->domain);
			if (b->opt->labels)
				b->opt->labels(p, &p->samples[g->sample], b->opt->ctx, &layer, &guest);
			str_label(b, lb, ptrs, &nl, layer_key, layer);
			str_label(b, lb, ptrs, &nl, guest_key, guest);
		}
		ps->n_label = nl;
		ps->label = ptrs;
		b->sample_ptrs[i] = ps;
	}
	b->prof.n_sample = n;
	b->prof.sample = b->sample_ptrs;
	return 0;
}

static int write_gzip(FILE *out, const uint8_t *data, size_t len)
{
	uint8_t buf[65536];
	z_stream z = { 0 };
	int zrc;

	/* windowBits 15 + 16: a gzip wrapper, which pprof readers expect. */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (uint8_t *)data;
	do {
		size_t chunk = len > (1u << 30) ? (1u << 30) : len;

		z.avail_in = (uInt)chunk;
		len -= chunk;
		do {
			z.next_out = buf;
			z.avail_out = sizeof(buf);
			zrc = deflate(&z, len ? Z_NO_FLUSH : Z_FINISH);
			if (zrc == Z_STREAM_ERROR) {
				deflateEnd(&z);
				return -EIO;
			}
			if (fwrite(buf, 1, sizeof(buf) - z.avail_out, out) != sizeof(buf) - z.avail_out) {
				deflateEnd(&z);
				return -EIO;
			}
		} while (z.avail_out == 0);
	} while (len);
	deflateEnd(&z);
	return zrc == Z_STREAM_END ? 0 : -EIO;
}

static void builder_free(struct builder *b)
{
	size_t i;

	for (i = 0; i < b->str.nr; i++)
		free(b->str.s[i]);
	free(b->str.s);
	keymap_free(&b->str.index);
	free(b->types);
	free(b->type_ptrs);
	free(b->maps);
	free(b->map_ptrs);
	free(b->funcs);
	free(b->func_ptrs);
	free(b->locs);
	free(b->loc_ptrs);
	free(b->lines);
	free(b->line_ptrs);
	free(b->samples);
	free(b->sample_ptrs);
	free(b->labels);
	free(b->label_ptrs);
	free(b->loc_ids);
	free(b->values);
	free(b->groups);
	keymap_free(&b->group_index);
	report_stacks_free(&b->stacks);
}

static int64_t meta_time_ns(const struct profile *p)
{
	size_t i;

	for (i = 0; i < p->nr_meta; i++) {
		if (!strcmp(p->meta[i].key, "time")) {
			long long t = strtoll(p->meta[i].value, NULL, 10);

			return t > 0 && t < INT64_MAX / 1000000000 ? t * 1000000000 : 0;
		}
	}
	return 0;
}

int report_pprof(FILE *out, const struct profile *p, const struct report_pprof_options *opt)
{
	struct builder b = { .p = p, .opt = opt };
	uint8_t *buf = NULL;
	size_t len;
	int rc;

	perftools__profiles__profile__init(&b.prof);
	str_index(&b.str, ""); /* entry 0 is the empty string */
	rc = add_types(&b);
	if (!rc)
		rc = add_mappings(&b);
	if (!rc)
		rc = add_functions(&b);
	if (!rc)
		rc = add_locations(&b);
	if (!rc)
		rc = add_samples(&b);
	if (!rc && b.str.failed)
		rc = -ENOMEM;
	if (rc)
		goto out;
	b.prof.time_nanos = meta_time_ns(p);
	b.prof.duration_nanos = p->duration_ns < INT64_MAX ? (int64_t)p->duration_ns : 0;
	b.prof.n_string_table = b.str.nr;
	b.prof.string_table = b.str.s;
	len = perftools__profiles__profile__get_packed_size(&b.prof);
	buf = malloc(len ? len : 1);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	perftools__profiles__profile__pack(&b.prof, buf);
	rc = write_gzip(out, buf, len);
	if (!rc && (fflush(out) || ferror(out)))
		rc = -EIO;
out:
	free(buf);
	builder_free(&b);
	return rc;
}
