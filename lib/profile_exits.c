/* SPDX-License-Identifier: MIT */
/*
 * VM exits in the profile model (KP_REC_VM_EXIT, issue 14): each exit's
 * guest side resolves like a guest sample (profile_finish runs them
 * through replay and symbolization with the samples), gets a frame of its
 * own ("[exit: io out 0x3f8]" in the pseudo image "[vm exit]"), and, with
 * cross_layer, every host sample of the exit's vCPU thread inside its
 * interval is joined to it: that host work was done for that exit.
 *
 * A vCPU thread's exit intervals never overlap (the thread is either in
 * the guest or handling one exit), so a host sample belongs to at most one
 * exit: the one with the latest start at or before the sample's time, if
 * the sample is before that exit's end. Clocks: both sides are
 * CLOCK_MONOTONIC (the host recorder sets perf's clockid).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "kvm_exit_name.h"
#include "keymap.h"
#include "profile_state.h"

/* Exit i in its thread's list. */
static int index_exit(struct profile *p, uint32_t i)
{
	struct exit_index *xi = &p->state->xi;
	const struct profile_exit *x = &p->exits[i];
	struct exit_thread *t;

	if (!xi->memo_valid || xi->memo_tid != x->host_tid) {
		int64_t v = keymap_get(&xi->by_tid, x->host_tid, 0);

		if (v < 0) {
			if (grow_array(&xi->threads, &xi->cap, xi->nr + 1, sizeof(*xi->threads)) ||
			    keymap_put(&xi->by_tid, x->host_tid, 0, (uint32_t)xi->nr))
				return -ENOMEM;
			xi->threads[xi->nr] = (struct exit_thread){ .tid = x->host_tid };
			v = (int64_t)xi->nr++;
		}
		xi->memo = (size_t)v;
		xi->memo_tid = x->host_tid;
		xi->memo_valid = true;
	}
	t = &xi->threads[xi->memo];
	if (grow_array(&t->idx, &t->cap, t->n + 1, sizeof(*t->idx)))
		return -ENOMEM;
	t->unsorted |= t->n && x->time < t->last_time;
	t->last_time = x->time;
	t->idx[t->n++] = i;
	return 0;
}

int profile_exit_index_sample(struct profile *p, uint32_t sample)
{
	struct exit_index *xi = &p->state->xi;

	if (grow_array(&xi->native, &xi->native_cap, xi->nr_native + 1, sizeof(*xi->native)))
		return -ENOMEM;
	xi->native[xi->nr_native++] = sample;
	return 0;
}

void profile_exit_index_drop_exits(struct profile *p)
{
	struct exit_index *xi = &p->state->xi;

	for (size_t i = 0; i < xi->nr; i++)
		free(xi->threads[i].idx);
	free(xi->threads);
	keymap_free(&xi->by_tid);
	xi->threads = NULL;
	xi->nr = xi->cap = 0;
	xi->memo_valid = false;
}

void profile_exit_index_free(struct profile *p)
{
	struct exit_index *xi = &p->state->xi;

	profile_exit_index_drop_exits(p);
	free(xi->native);
	xi->native = NULL;
	xi->nr_native = xi->native_cap = 0;
}

int profile_add_vm_exit(struct profile *p, const struct kp_rec_vm_exit *x)
{
	struct profile_state *ps = p->state;
	size_t n = x->nr_callchain <= KP_CALLCHAIN_MAX ? x->nr_callchain : KP_CALLCHAIN_MAX;

	if (grow_array(&p->exits, &ps->exits_cap, p->nr_exits + 1, sizeof(*p->exits)) ||
	    grow_array(&ps->raw, &ps->raw_cap, ps->nr_raw + n + 1, sizeof(uint64_t)))
		return -ENOMEM;
	p->exits[p->nr_exits] = (struct profile_exit){
		.pid = x->pid, .tid = x->tid, .cpu = x->cpu, .host_tid = x->host_tid, .comm = PROFILE_NONE,
		.kind = x->kind, .cpl = x->cpl, .size = x->size, .detail = x->detail,
		/* The reader refuses end < time; a record built in memory might not have been read. */
		.time = x->time, .end = x->end >= x->time ? x->end : x->time,
		.loc = PROFILE_NONE, .nr_frames = (uint32_t)n + 1, .first_frame = ps->nr_raw,
	};
	ps->raw[ps->nr_raw++] = x->ip;
	if (n)
		memcpy(&ps->raw[ps->nr_raw], x->callchain, n * sizeof(uint64_t));
	ps->nr_raw += n;
	if (index_exit(p, (uint32_t)p->nr_exits))
		return -ENOMEM;
	p->nr_exits++;
	return 0;
}

void profile_exit_describe(char *buf, size_t len, uint8_t kind, uint64_t detail)
{
	static const char *const names[KP_EXIT_KIND_MAX + 1] = {
		[KP_EXIT_OTHER] = "kvm reason", [KP_EXIT_IO_IN] = "io in", [KP_EXIT_IO_OUT] = "io out",
		[KP_EXIT_MMIO_READ] = "mmio read", [KP_EXIT_MMIO_WRITE] = "mmio write",
		[KP_EXIT_MSR_READ] = "msr read", [KP_EXIT_MSR_WRITE] = "msr write",
		[KP_EXIT_SIGNAL] = "signal", [KP_EXIT_HLT] = "hlt",
	};

	const char *reason = kind == KP_EXIT_OTHER && detail <= UINT32_MAX ? kvm_exit_reason_name((unsigned int)detail)
									   : NULL;

	if (kind > KP_EXIT_KIND_MAX)
		snprintf(buf, len, "kind %u", kind);
	else if (reason)
		snprintf(buf, len, "kvm %s", reason);
	else if (kind == KP_EXIT_OTHER)
		snprintf(buf, len, "%s %llu", names[kind], (unsigned long long)detail);
	else if (kind == KP_EXIT_SIGNAL || kind == KP_EXIT_HLT)
		snprintf(buf, len, "%s", names[kind]);
	else
		snprintf(buf, len, "%s %#llx", names[kind], (unsigned long long)detail);
}

/* The pseudo functions of exit frames, one per distinct (kind, detail), named once. */
struct exit_frame_names {
	struct keymap by_reason;
	uint32_t img;
	const struct profile_exit *last; /* exits come in runs of one reason (a guest's console writes) */
};

static int exit_frame(struct profile *p, struct exit_frame_names *f, struct profile_exit *x)
{
	char name[64], desc[48];
	const char *s;
	int64_t v;

	if (x->loc != PROFILE_NONE)
		return 0; /* an exit more than one sample joined */
	if (f->last && x->kind == f->last->kind && x->detail == f->last->detail) {
		x->loc = f->last->loc;
		return 0;
	}
	f->last = x;
	v = keymap_get(&f->by_reason, x->kind, x->detail);
	if (v >= 0) {
		x->loc = (uint32_t)v;
		return 0;
	}
	if (f->img == PROFILE_NONE) {
		f->img = profile_image_id(p, NULL, "[vm exit]", NULL, 0, false, KP_DOMAIN_NATIVE);
		if (f->img == PROFILE_NONE)
			return -ENOMEM;
		p->images[f->img].vm_exit = true;
	}
	profile_exit_describe(desc, sizeof(desc), x->kind, x->detail);
	snprintf(name, sizeof(name), "[exit: %s]", desc);
	s = profile_intern(p, name);
	if (!s)
		return -ENOMEM;
	x->loc = profile_pseudo_loc(p, f->img, s, x->detail);
	if (x->loc == PROFILE_NONE || keymap_put(&f->by_reason, x->kind, x->detail, x->loc))
		return -ENOMEM;
	return 0;
}

/* Each resolved exit's own frame: every exit's with all_exit_frames, else the joined ones' only. */
static int exit_frames(struct profile *p)
{
	struct exit_frame_names f = { .by_reason = KEYMAP_INIT, .img = PROFILE_NONE };
	const struct profile_state *ps = p->state;
	int rc = 0;

	if (ps->opt.all_exit_frames)
		for (size_t i = 0; !rc && i < p->nr_exits; i++)
			rc = exit_frame(p, &f, &p->exits[i]);
	else
		for (size_t i = 0; !rc && i < p->exit_samples; i++)
			rc = exit_frame(p, &f, &p->exits[p->samples[ps->joined[i]].exit]);
	keymap_free(&f.by_reason);
	return rc;
}

static int cmp_exit_order(const void *a, const void *b, void *arg)
{
	const struct profile *p = arg;
	const struct profile_exit *x = &p->exits[*(const uint32_t *)a], *y = &p->exits[*(const uint32_t *)b];

	if (x->host_tid != y->host_tid)
		return x->host_tid < y->host_tid ? -1 : 1;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int cmp_thread_tid(const void *a, const void *b)
{
	uint32_t x = (*(const struct exit_thread *const *)a)->tid, y = (*(const struct exit_thread *const *)b)->tid;

	return x < y ? -1 : x > y;
}

/*
 * The exits by (vCPU thread, time): the threads' lists (in recorded order,
 * which each vCPU's ring keeps in time order) one after the other, by
 * thread; only a thread whose list is out of order (a crafted file) is sorted.
 */
static uint32_t *exit_order(const struct profile *p, size_t *nr)
{
	const struct exit_index *xi = &p->state->xi;
	const struct exit_thread **by_tid = malloc((xi->nr ? xi->nr : 1) * sizeof(*by_tid));
	uint32_t *order = malloc((p->nr_exits ? p->nr_exits : 1) * sizeof(*order));
	size_t i, at = 0;

	if (!by_tid || !order) {
		free(by_tid);
		free(order);
		return NULL;
	}
	for (i = 0; i < xi->nr; i++)
		by_tid[i] = &xi->threads[i];
	qsort(by_tid, xi->nr, sizeof(*by_tid), cmp_thread_tid);
	for (i = 0; i < xi->nr; i++) {
		const struct exit_thread *t = by_tid[i];

		memcpy(order + at, t->idx, t->n * sizeof(*order));
		if (t->unsorted)
			qsort_r(order + at, t->n, sizeof(*order), cmp_exit_order, (void *)p);
		at += t->n;
	}
	free(by_tid);
	*nr = at; /* every exit, as each is indexed as it comes in */
	return order;
}

/* Whether the exit at order[i] sorts at or before (tid, t). */
static bool at_or_before(const struct profile *p, const uint32_t *order, size_t i, uint32_t tid, uint64_t t)
{
	const struct profile_exit *x = &p->exits[order[i]];

	return x->host_tid < tid || (x->host_tid == tid && x->time <= t);
}

/*
 * The exit whose interval holds a host sample of thread tid at time t, or
 * PROFILE_NONE. *hint: where the last search ended; a thread's samples
 * mostly come in time order, so the search gallops out from there and
 * touches a few exits rather than a binary search's ~20 scattered ones.
 */
static uint32_t exit_at(const struct profile *p, const uint32_t *order, size_t n, uint32_t tid, uint64_t t,
			size_t *hint)
{
	size_t lo = 0, hi = n, h = *hint < n ? *hint : n, step = 1;

	/* lo..hi: bounds on the first exit after (tid, t). */
	if (h < n && at_or_before(p, order, h, tid, t)) {
		for (lo = h + 1; lo + step <= n && at_or_before(p, order, lo + step - 1, tid, t); step *= 2)
			lo += step;
		hi = lo + step <= n ? lo + step - 1 : n;
	} else if (h > 0 && !at_or_before(p, order, h - 1, tid, t)) {
		for (hi = h - 1; hi >= step && !at_or_before(p, order, hi - step, tid, t); step *= 2)
			hi -= step;
		lo = hi >= step ? hi - step + 1 : 0;
	} else {
		lo = hi = h;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (at_or_before(p, order, mid, tid, t))
			lo = mid + 1;
		else
			hi = mid;
	}
	*hint = lo;
	if (!lo)
		return PROFILE_NONE;
	const struct profile_exit *x = &p->exits[order[lo - 1]];

	return x->host_tid == tid && t < x->end ? order[lo - 1] : PROFILE_NONE;
}

static bool add_overflows(size_t *sum, size_t n)
{
	if (n > SIZE_MAX - *sum)
		return true;
	*sum += n;
	return false;
}

/* Where each thread's last search ended, by thread id modulo this (a clash costs time, never a wrong answer). */
#define NR_HINTS 64

int profile_match_exits(struct profile *p)
{
	struct profile_state *ps = p->state;
	uint32_t *order;
	size_t hints[NR_HINTS] = { 0 }, cap = 0, nr_order;

	if (!ps->opt.cross_layer || !p->nr_exits)
		return 0;
	order = exit_order(p, &nr_order);
	if (!order)
		return -ENOMEM;
	for (size_t k = 0; k < ps->xi.nr_native; k++) {
		uint32_t i = ps->xi.native[k];
		struct profile_sample *s = &p->samples[i];

		s->exit = exit_at(p, order, nr_order, s->tid, s->time, &hints[s->tid % NR_HINTS]);
		if (s->exit == PROFILE_NONE)
			continue;
		if (grow_array(&ps->joined, &cap, p->exit_samples + 1, sizeof(*ps->joined))) {
			free(order);
			return -ENOMEM;
		}
		ps->joined[p->exit_samples++] = i;
		p->exits[s->exit].joined = true;
	}
	free(order);
	return 0;
}

int profile_join_exits(struct profile *p)
{
	struct profile_state *ps = p->state;
	uint32_t *frames;
	size_t total = 0, extra = 0, out_at, i;

	if (exit_frames(p))
		return -ENOMEM;
	/* A joined sample's frames are copied past the others: its own, then the exit's frame and guest stack. */
	for (i = 0; i < p->exit_samples; i++) {
		const struct profile_sample *s = &p->samples[ps->joined[i]];

		if (add_overflows(&extra, (size_t)s->nr_frames + 1 + p->exits[s->exit].nr_frames))
			return -ENOMEM;
	}
	if (!extra)
		return 0;
	if (add_overflows(&total, ps->nr_raw) || add_overflows(&total, extra) || total > SIZE_MAX / sizeof(*frames))
		return -ENOMEM;
	frames = realloc(p->frames, total * sizeof(*frames));
	if (!frames)
		return -ENOMEM;
	p->frames = frames;
	out_at = ps->nr_raw;
	for (i = 0; i < p->exit_samples; i++) {
		struct profile_sample *s = &p->samples[ps->joined[i]];
		const struct profile_exit *x = &p->exits[s->exit];
		size_t first = out_at;

		memcpy(&frames[out_at], &frames[s->first_frame], s->nr_frames * sizeof(*frames));
		out_at += s->nr_frames;
		frames[out_at++] = x->loc;
		memcpy(&frames[out_at], &frames[x->first_frame], x->nr_frames * sizeof(*frames));
		out_at += x->nr_frames;
		s->first_frame = first;
		s->nr_frames = (uint32_t)(out_at - first);
	}
	return 0;
}
