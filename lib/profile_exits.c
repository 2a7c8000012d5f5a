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
	memcpy(&ps->raw[ps->nr_raw], x->callchain, n * sizeof(uint64_t));
	ps->nr_raw += n;
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

/* Each exit's own frame: one pseudo function per distinct (kind, detail), named once. */
static int exit_frames(struct profile *p)
{
	struct keymap by_reason = KEYMAP_INIT;
	uint32_t img = PROFILE_NONE;
	char name[64], desc[48];
	int rc = -ENOMEM;

	for (size_t i = 0; i < p->nr_exits; i++) {
		struct profile_exit *x = &p->exits[i];
		int64_t v = keymap_get(&by_reason, x->kind, x->detail);
		const char *s;

		if (v >= 0) {
			x->loc = (uint32_t)v;
			continue;
		}
		if (img == PROFILE_NONE) {
			img = profile_image_id(p, NULL, "[vm exit]", NULL, 0, false, KP_DOMAIN_NATIVE);
			if (img == PROFILE_NONE)
				goto out;
			p->images[img].vm_exit = true;
		}
		profile_exit_describe(desc, sizeof(desc), x->kind, x->detail);
		snprintf(name, sizeof(name), "[exit: %s]", desc);
		s = profile_intern(p, name);
		if (!s)
			goto out;
		x->loc = profile_pseudo_loc(p, img, s, x->detail);
		if (x->loc == PROFILE_NONE || keymap_put(&by_reason, x->kind, x->detail, x->loc))
			goto out;
	}
	rc = 0;
out:
	keymap_free(&by_reason);
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

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

struct bucket_memo {
	uint32_t tid, bucket;
	bool valid;
};

/*
 * The exits by (vCPU thread, time). Each vCPU's ring is written in time
 * order, so the exits of one thread mostly come in order already: a
 * stable pass by thread (there are few) and a check of each thread's run
 * replace a sort of them all; a run out of order (a crafted file) is sorted.
 */
/* The bucket of a vCPU thread; a run of one thread's exits is looked up once. */
static uint32_t bucket(const struct keymap *bucket_of, uint32_t tid, struct bucket_memo *memo)
{
	if (!memo->valid || memo->tid != tid)
		*memo = (struct bucket_memo){ .tid = tid, .bucket = (uint32_t)keymap_get(bucket_of, tid, 0), .valid = true };
	return memo->bucket;
}

static uint32_t *exit_order(const struct profile *p)
{
	struct keymap bucket_of = KEYMAP_INIT;
	struct bucket_memo memo = { 0 };
	uint32_t *order = malloc(p->nr_exits * sizeof(*order)), *tids = NULL, *start = NULL;
	size_t nr_tids = 0, cap = 0, i;
	bool ok = false;

	if (!order)
		return NULL;
	/* The distinct threads, then their buckets in thread order. */
	for (i = 0; i < p->nr_exits; i++) {
		uint32_t tid = p->exits[i].host_tid;

		if ((i && tid == p->exits[i - 1].host_tid) || keymap_get(&bucket_of, tid, 0) >= 0)
			continue;
		if (grow_array(&tids, &cap, nr_tids + 1, sizeof(*tids)) || keymap_put(&bucket_of, tid, 0, 0))
			goto out;
		tids[nr_tids++] = tid;
	}
	qsort(tids, nr_tids, sizeof(*tids), cmp_u32);
	start = calloc(nr_tids + 1, sizeof(*start));
	if (!start)
		goto out;
	for (i = 0; i < nr_tids; i++)
		if (keymap_put(&bucket_of, tids[i], 0, (uint32_t)i))
			goto out;
	for (i = 0; i < p->nr_exits; i++)
		start[bucket(&bucket_of, p->exits[i].host_tid, &memo) + 1]++;
	for (i = 0; i < nr_tids; i++)
		start[i + 1] += start[i];
	for (i = 0; i < p->nr_exits; i++)
		order[start[bucket(&bucket_of, p->exits[i].host_tid, &memo)]++] = (uint32_t)i;
	/* start[b] is now bucket b's end; each bucket's run is checked, and sorted if it must be. */
	for (size_t b = 0, from = 0; b < nr_tids; from = start[b++]) {
		for (i = from + 1; i < start[b]; i++)
			if (p->exits[order[i]].time < p->exits[order[i - 1]].time)
				break;
		if (i < start[b])
			qsort_r(order + from, start[b] - from, sizeof(*order), cmp_exit_order, (void *)p);
	}
	ok = true;
out:
	keymap_free(&bucket_of);
	free(tids);
	free(start);
	if (!ok) {
		free(order);
		return NULL;
	}
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

int profile_join_exits(struct profile *p)
{
	struct profile_state *ps = p->state;
	uint32_t *order = NULL, *frames;
	size_t total = 0, extra = 0, out_at, i, hints[NR_HINTS] = { 0 };
	int rc = -ENOMEM;

	if (exit_frames(p))
		return -ENOMEM;
	if (!ps->opt.cross_layer || !p->nr_exits)
		return 0;
	order = exit_order(p);
	if (!order)
		return -ENOMEM;

	/*
	 * A joined sample's frames are copied past the others: its own, then
	 * the exit's frame and guest stack. The rest stay where they are.
	 */
	for (i = 0; i < p->nr_samples; i++) {
		struct profile_sample *s = &p->samples[i];

		if (s->domain != KP_DOMAIN_NATIVE)
			continue;
		s->exit = exit_at(p, order, p->nr_exits, s->tid, s->time, &hints[s->tid % NR_HINTS]);
		if (s->exit != PROFILE_NONE) {
			if (add_overflows(&extra, (size_t)s->nr_frames + 1 + p->exits[s->exit].nr_frames))
				goto out;
			p->exit_samples++;
		}
	}
	if (!extra) {
		rc = 0;
		goto out;
	}
	if (add_overflows(&total, ps->nr_raw) || add_overflows(&total, extra) || total > SIZE_MAX / sizeof(*frames))
		goto out;
	frames = realloc(p->frames, total * sizeof(*frames));
	if (!frames)
		goto out;
	p->frames = frames;
	out_at = ps->nr_raw;
	for (i = 0; i < p->nr_samples; i++) {
		struct profile_sample *s = &p->samples[i];
		const struct profile_exit *x;
		size_t first = out_at;

		if (s->exit == PROFILE_NONE)
			continue;
		x = &p->exits[s->exit];
		memcpy(&frames[out_at], &frames[s->first_frame], s->nr_frames * sizeof(*frames));
		out_at += s->nr_frames;
		frames[out_at++] = x->loc;
		memcpy(&frames[out_at], &frames[x->first_frame], x->nr_frames * sizeof(*frames));
		out_at += x->nr_frames;
		s->first_frame = first;
		s->nr_frames = (uint32_t)(out_at - first);
	}
	rc = 0;
out:
	free(order);
	return rc;
}
