/* SPDX-License-Identifier: MIT */
/*
 * The profile's life cycle, and profile_finish, which runs replay and
 * symbolization in order. The parts, in layers: profile_state.h.
 */
#include "profile/profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/grow.h"
#include "symbols/kallsyms.h"
#include "common/keymap.h"
#include "profile/profile_state.h"
#include "symbols/symtab.h"
#include "common/utf8.h"

const char *profile_meta(const struct profile *p, const char *key)
{
	const char *v = NULL;

	for (size_t i = 0; i < p->nr_meta; i++)
		if (!strcmp(p->meta[i].key, key))
			v = p->meta[i].value; /* the last one wins */
	return v;
}

const char *profile_guest_export(const struct profile *p)
{
	return p->state->opt.guest_export_path;
}

int profile_new(struct profile **out, const struct profile_options *opt)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p || !(p->state = calloc(1, sizeof(*p->state)))) {
		free(p);
		return -ENOMEM;
	}
	if (opt)
		p->state->opt = *opt;
	p->state->agg.on = p->state->opt.aggregate;
	for (int d = 0; d < NR_DOMAINS; d++) {
		p->state->dom[d].kernel_mm = PROFILE_NONE;
		p->state->root_fd[d] = -2;
	}
	*out = p;
	return 0;
}

/*
 * Sorts order[0..n) (0..n-1 on entry) by the samples' times, stably, so
 * that equal times keep their stream order: an LSD radix sort, a byte a
 * pass, skipping the bytes every time shares: several times faster than
 * qsort with a comparison callback on the ~10^6 samples of a system-wide
 * recording, whose host and guest rings interleave.
 */
static int sort_by_time(const struct profile *p, uint32_t *order, size_t n)
{
	struct key {
		uint64_t time;
		uint32_t index;
	} *a = malloc((n ? n : 1) * sizeof(*a)), *b = malloc((n ? n : 1) * sizeof(*b)), *t;
	uint64_t all_or = 0, all_and = UINT64_MAX;

	if (!a || !b) {
		free(a);
		free(b);
		return -ENOMEM;
	}
	/* The keys side by side: the passes then read memory in order. */
	for (size_t i = 0; i < n; i++) {
		a[i] = (struct key){ p->samples[order[i]].time, order[i] };
		all_or |= a[i].time;
		all_and &= a[i].time;
	}
	for (unsigned int shift = 0; shift < 64; shift += 8) {
		size_t count[257] = { 0 };

		if (!(((all_or ^ all_and) >> shift) & 0xff))
			continue; /* every time has the same byte here */
		for (size_t i = 0; i < n; i++)
			count[((a[i].time >> shift) & 0xff) + 1]++;
		for (int k = 0; k < 256; k++)
			count[k + 1] += count[k];
		for (size_t i = 0; i < n; i++)
			b[count[(a[i].time >> shift) & 0xff]++] = a[i];
		t = a, a = b, b = t;
	}
	for (size_t i = 0; i < n; i++)
		order[i] = a[i].index;
	free(a);
	free(b);
	return 0;
}

int profile_time_order(const struct profile *p, uint32_t **out)
{
	uint32_t *order = malloc((p->nr_samples ? p->nr_samples : 1) * sizeof(*order));
	bool sorted = true;

	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_samples; i++) {
		order[i] = (uint32_t)i;
		if (i && p->samples[i].time < p->samples[i - 1].time)
			sorted = false;
	}
	if (!sorted && sort_by_time(p, order, p->nr_samples)) {
		free(order);
		return -ENOMEM;
	}
	*out = order;
	return 0;
}

/*
 * A sample whose process never had a name recorded: ":PID", as perf
 * shows one, or swapper for pid 0, the idle task (perf's and the
 * kernel's name). 0 or -ENOMEM.
 */
static int name_by_pid(struct profile *p, struct profile_sample *s)
{
	char name[32];

	if (s->pid)
		snprintf(name, sizeof(name), ":%u", s->pid);
	else
		snprintf(name, sizeof(name), "swapper");
	s->comm = profile_comm(p, name);
	return s->comm == PROFILE_NONE ? -ENOMEM : 0;
}

/*
 * Each domain's kernel and "[unknown]" images, and the kernel symbols:
 * the host's at once; the guest's only once the profile has guest records
 * or guest symbol options (a native profile reads as it always did; until
 * then the guest domain's images are the host's, never used). Done once
 * per domain, so profile_update can call it again as records come.
 */
static int setup_domains(struct profile *p)
{
	struct profile_state *ps = p->state;
	int rc;

	if (!ps->native_ready) {
		ps->dom[0].kernel_image = profile_image_id(p, NULL, "[kernel.kallsyms]", NULL, 0, true, KP_DOMAIN_NATIVE);
		ps->dom[0].unknown_image = profile_image_id(p, NULL, "[unknown]", NULL, 0, false, KP_DOMAIN_NATIVE);
		if (ps->dom[0].kernel_image == PROFILE_NONE || ps->dom[0].unknown_image == PROFILE_NONE)
			return -ENOMEM;
		rc = profile_load_kernel_symbols(p, KP_DOMAIN_NATIVE);
		if (rc)
			return rc;
		ps->native_ready = true;
		/* Until guest records come, no sample is in the guest domain. */
		ps->dom[1].kernel_image = ps->dom[0].kernel_image;
		ps->dom[1].unknown_image = ps->dom[0].unknown_image;
	}
	if (!ps->guest_ready && (ps->has_guest || ps->opt.guest_kallsyms_path || ps->opt.guest_kernel_path)) {
		ps->dom[1].kernel_image = profile_image_id(p, NULL, "[guest.kernel]", NULL, 0, true, KP_DOMAIN_GUEST);
		ps->dom[1].unknown_image = profile_image_id(p, NULL, "[unknown]", NULL, 0, false, KP_DOMAIN_GUEST);
		if (ps->dom[1].kernel_image == PROFILE_NONE || ps->dom[1].unknown_image == PROFILE_NONE)
			return -ENOMEM;
		rc = profile_load_kernel_symbols(p, KP_DOMAIN_GUEST);
		if (!rc && ps->opt.guest_kernel_path && !ps->dom[1].ks)
			rc = profile_add_guest_kernel_elf(p);
		if (rc)
			return rc;
		ps->guest_ready = true;
	}
	return 0;
}

/* Reports walk 10^6 of them several times: a size worth keeping. */
_Static_assert(sizeof(struct profile_sample) == 48, "struct profile_sample grew past 48 bytes");

/*
 * Samples carry recorded event ids until profile_finish or profile_update:
 * a sample's index, the last one's (*last_id, *last) reused for a run of
 * one id. PROFILE_NONE when out of memory.
 */
static uint32_t event_of(struct profile *p, uint32_t id, uint32_t *last_id, uint32_t *last)
{
	if (*last == PROFILE_NONE || id != *last_id) {
		*last_id = id;
		*last = profile_event_index(p, id);
	}
	return *last;
}

int profile_finish(struct profile *p)
{
	struct profile_state *ps = p->state;
	uint32_t *sample_mm = NULL, *agg_order = NULL, last_id = 0, last_ev = PROFILE_NONE;
	size_t i, nr;
	int rc = -ENOMEM;

	if (ps->finished)
		return -EINVAL;
	ps->finished = true;
	p->lost = ps->lost_sum > ps->end_lost ? ps->lost_sum : ps->end_lost;
	/* Aggregation's grouping is done: the groups are samples with counts now. */
	rc = profile_agg_flush(p);
	if (!rc && ps->agg.broken)
		rc = -EAGAIN; /* not in time order: profile_load reads the file again without aggregate */
	/* Groups are resolved in their first samples' stream order: functions and commands are made in plain loading's order. */
	if (!rc && ps->agg.on)
		rc = profile_agg_order(p, &agg_order);
	profile_agg_free(p);
	if (rc)
		return rc;
	rc = setup_domains(p);
	if (rc)
		return rc;
	/* First: with exits_joined_only, the join decides which exits are kept. */
	rc = profile_match_exits(p);
	if (rc)
		goto out;
	rc = -ENOMEM;
	/*
	 * Exits resolve like guest samples: replay sees them past the samples
	 * (items nr_samples...), symbolization as a sample made of each.
	 */
	nr = p->nr_samples + p->nr_exits;
	sample_mm = malloc((nr ? nr : 1) * sizeof(*sample_mm));
	p->frames = malloc((ps->nr_raw ? ps->nr_raw : 1) * sizeof(*p->frames));
	if (!sample_mm || !p->frames)
		goto out;
	rc = profile_replay(p, 0, nr, sample_mm);
	if (rc)
		goto out;
	rc = -ENOMEM;

	for (size_t k = 0; k < nr; k++) {
		/* Aggregated: no exits (they break aggregation), and groups in their first samples' order. */
		i = agg_order && k < p->nr_samples ? agg_order[k] : k;
		struct profile_sample xs, *s = i < p->nr_samples ? &p->samples[i] : NULL; /* no array with no samples */
		int64_t mm = sample_mm[i];
		bool resolve = true;

		if (i >= p->nr_samples) {
			struct profile_exit *x = &p->exits[i - p->nr_samples];

			/* An exit whose stack no report shows: only its command (the header names COM2's writers). */
			resolve = x->joined || ps->opt.all_exit_frames;
			if (!resolve) {
				x->nr_frames = 0;
				if (x->comm != PROFILE_NONE)
					continue; /* replay found it: most exits, skipped at the cost of one cache line */
			}

			xs = (struct profile_sample){
				.pid = x->pid, .tid = x->tid, .cpu = x->cpu, .cpl = x->cpl, .domain = KP_DOMAIN_GUEST,
				.time = x->time, .nr_frames = (uint16_t)x->nr_frames, .first_frame = (uint32_t)x->first_frame,
				.comm = x->comm, .exit = PROFILE_NONE,
			};
			s = &xs;
		}
		if (resolve && profile_resolve_sample(p, s, i < p->nr_samples ? (uint32_t)i : PROFILE_NONE, (uint32_t)mm))
			goto out;
		/* Names recorded after the samples (a process table at the end) still count. */
		if (s->comm == PROFILE_NONE && mm != PROFILE_NONE)
			s->comm = ps->mms[mm].comm;
		if (s->comm == PROFILE_NONE) {
			int64_t last = keymap_get(&ps->mm_by_pid, s->pid, s->domain);

			if (last >= 0 && (mm == PROFILE_NONE || last > mm))
				s->comm = ps->mms[last].comm;
		}
		if (s->comm == PROFILE_NONE && name_by_pid(p, s))
			goto out;
		if (i >= p->nr_samples) {
			struct profile_exit *x = &p->exits[i - p->nr_samples];

			x->comm = s->comm;
			x->nr_frames = s->nr_frames;
			continue;
		}
		/* Here rather than in a pass of its own: one less walk through 10^6 samples. */
		s->event = event_of(p, s->event, &last_id, &last_ev);
		if (s->event == PROFILE_NONE)
			goto out;
		struct profile_event *e = &p->events[s->event];
		uint32_t count = profile_sample_count(p, i);

		e->samples += count;
		e->weight += s->period * count;
		if (!profile_func_known(p, p->locs[p->frames[s->first_frame]].func)) {
			e->unresolved += count;
			p->unresolved += count;
		}
	}
	if (profile_join_exits(p))
		goto out;
	/*
	 * A chain or two cut in a dynamic loader's start-up is the normal
	 * noise of frame-pointer walks; a warning is for a share worth a look.
	 */
	if (p->chains_cut && p->chains_cut * 100 >= p->nr_samples)
		profile_warn(p, "%" PRIu64 " call chains were cut where a caller lies in no mapping (garbage frame pointers: "
			     "a frame without one, a clobbered RBP); %" PRIu64 " frames dropped", p->chains_cut, p->frames_cut);
	if (ps->ustacks_over_cap)
		profile_warn(p, "%" PRIu64 " user stack copies beyond %llu MiB not unwound: those samples have their "
			     "kernel frames only", ps->ustacks_over_cap, USTACK_DATA_MAX >> 20);
	if (ps->ustacks_orphaned)
		profile_warn(p, "%" PRIu64 " user stack copies that follow no sample of their thread were ignored",
			     ps->ustacks_orphaned);
	rc = 0;
out:
	free(sample_mm);
	free(agg_order);
	/* The stack copies and the unwinder's open files are needed no more. */
	profile_unwind_free(p);
	free(ps->ustacks);
	ps->ustacks = NULL;
	ps->nr_ustacks = 0;
	free(ps->ustack_data);
	ps->ustack_data = NULL;
	free(ps->raw);
	ps->raw = NULL;
	free(ps->joined);
	ps->joined = NULL;
	profile_exit_index_free(p);
	return rc;
}

/*
 * profile_update: a profile that grows while it is read (kvmprof top). The
 * tables, the process state and the symbolizer's open files and resolved
 * locations persist across calls; each call replays only the process-state
 * records added since the last, and resolves only the samples added since.
 * Samples earlier in time than state already replayed resolve against the
 * state as it is now (a live view's window is short). VM exits are not
 * joined here: they are dropped.
 */
int profile_update(struct profile *p)
{
	struct profile_state *ps = p->state;
	size_t first = ps->updated, n = p->nr_samples - first, i;
	uint32_t *sample_mm = NULL, *frames, last_id = 0, last_ev = PROFILE_NONE;
	int rc;

	if (ps->finished)
		return -EINVAL;
	p->lost = ps->lost_sum > ps->end_lost ? ps->lost_sum : ps->end_lost;
	rc = setup_domains(p);
	if (rc)
		return rc;
	p->nr_exits = p->exits_recorded = 0;
	profile_exit_index_drop_exits(p);
	for (i = first; i < p->nr_samples; i++) {
		p->samples[i].event = event_of(p, p->samples[i].event, &last_id, &last_ev);
		if (p->samples[i].event == PROFILE_NONE)
			return -ENOMEM;
	}
	frames = realloc(p->frames, (ps->nr_raw ? ps->nr_raw : 1) * sizeof(*p->frames));
	if (!frames)
		return -ENOMEM;
	p->frames = frames;
	rc = -ENOMEM;
	sample_mm = calloc(p->nr_samples ? p->nr_samples : 1, sizeof(*sample_mm));
	if (!sample_mm)
		goto out;
	rc = profile_replay(p, first, n, sample_mm);
	if (rc)
		goto out;
	rc = -ENOMEM;
	/* Every state record so far is applied: later calls replay only newer ones. */
	ps->nr_ops = 0;
	for (i = first; i < p->nr_samples; i++) {
		struct profile_sample *s = &p->samples[i];

		if (profile_resolve_sample(p, s, (uint32_t)i, sample_mm[i]))
			goto out;
		if (s->comm == PROFILE_NONE) {
			/* A name recorded after the sample, in this window, still counts. */
			int64_t last = keymap_get(&ps->mm_by_pid, s->pid, s->domain);

			if (last >= 0)
				s->comm = ps->mms[last].comm;
		}
		if (s->comm == PROFILE_NONE && name_by_pid(p, s))
			goto out;
		p->events[s->event].samples++;
		p->events[s->event].weight += s->period;
		if (!profile_func_known(p, p->locs[p->frames[s->first_frame]].func)) {
			p->events[s->event].unresolved++;
			p->unresolved++;
		}
	}
	ps->updated = p->nr_samples;
	rc = 0;
out:
	free(sample_mm);
	return rc;
}

void profile_drop_samples(struct profile *p)
{
	struct profile_state *ps = p->state;

	p->nr_samples = 0;
	p->nr_exits = p->exits_recorded = 0;
	profile_exit_index_free(p);
	/* State records not replayed yet came before every sample and exit still to come. */
	for (size_t i = 0; i < ps->nr_ops; i++)
		ps->ops[i].samples_before = ps->ops[i].exits_before = 0;
	p->unresolved = 0;
	p->chains_cut = p->frames_cut = 0;
	ps->nr_raw = 0;
	ps->updated = 0;
	ps->nr_ustacks = 0;
	ps->ustack_len = 0;
	for (size_t i = 0; i < p->nr_events; i++)
		p->events[i].samples = p->events[i].weight = p->events[i].unresolved = 0;
}

void profile_free(struct profile *p)
{
	struct profile_state *ps;
	size_t i;

	if (!p)
		return;
	ps = p->state;
	if (ps) {
		for (i = 0; i < p->nr_images; i++)
			symtab_close(ps->istate[i].st);
		for (i = 0; i < ps->nr_mms; i++) {
			free(ps->mms[i].maps);
			free(ps->mms[i].ivs);
		}
		for (i = 0; i < ps->nr_strs; i++)
			free(ps->str_list[i]);
		free(ps->str_list);
		free(ps->mms);
		free(ps->istate);
		free(ps->ops);
		profile_unwind_free(p);
		free(ps->resolved);
		free(ps->ustacks);
		free(ps->ustack_data);
		free(ps->raw);
		free(ps->joined);
		profile_exit_index_free(p);
		for (int d = 0; d < NR_DOMAINS; d++) {
			if (ps->root_fd[d] >= 0)
				close(ps->root_fd[d]);
			kallsyms_free(ps->dom[d].ks);
		}
		keymap_free(&ps->event_by_id);
		keymap_free(&ps->image_by_key);
		keymap_free(&ps->func_by_key);
		keymap_free(&ps->loc_by_key);
		keymap_free(&ps->comm_by_str);
		keymap_free(&ps->strs);
		keymap_free(&ps->mm_by_pid);
		profile_agg_free(p);
		free(ps);
	}
	free(p->sample_counts);
	free(p->events);
	free(p->images);
	free(p->funcs);
	free(p->locs);
	free(p->samples);
	free(p->exits);
	free(p->frames);
	free(p->comms);
	free(p->meta);
	free(p);
}

