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

#include "common/grow.h"
#include "common/kvm_exit_name.h"
#include "common/keymap.h"
#include "profile/profile_state.h"

/* Exits are held coded until the join (exits_joined_only, unless every exit's frames are asked for). */
static bool exits_coded(const struct profile_state *ps)
{
	return ps->opt.exits_joined_only && !ps->opt.all_exit_frames;
}

/* Exit ord's interval in its thread's list. */
static int index_exit(struct profile *p, uint32_t host_tid, uint64_t time, uint64_t end, uint32_t ord)
{
	struct exit_index *xi = &p->state->xi;
	struct exit_thread *t;

	if (!xi->memo_valid || xi->memo_tid != host_tid) {
		int64_t v = keymap_get(&xi->by_tid, host_tid, 0);

		if (v < 0) {
			if (grow_array(&xi->threads, &xi->cap, xi->nr + 1, sizeof(*xi->threads)) ||
			    keymap_put(&xi->by_tid, host_tid, 0, (uint32_t)xi->nr))
				return -ENOMEM;
			xi->threads[xi->nr] = (struct exit_thread){ .tid = host_tid };
			v = (int64_t)xi->nr++;
		}
		xi->memo = (size_t)v;
		xi->memo_tid = host_tid;
		xi->memo_valid = true;
	}
	t = &xi->threads[xi->memo];
	t->unsorted |= t->n && time < t->last_time;
	for (;;) {
		uint64_t len = end - time < UINT32_MAX ? end - time : UINT32_MAX;

		if (grow_array(&t->iv, &t->cap, t->n + 1, sizeof(*t->iv)))
			return -ENOMEM;
		t->iv[t->n++] = (struct exit_interval){ .time = time, .len = (uint32_t)len, .ord = ord };
		t->last_time = time;
		if (end - time == len)
			return 0;
		time += len;
	}
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
	struct profile_state *ps = p->state;
	struct exit_index *xi = &ps->xi;
	struct exit_store *xs = &ps->xs;

	for (size_t i = 0; i < xi->nr; i++)
		free(xi->threads[i].iv);
	free(xi->threads);
	keymap_free(&xi->by_tid);
	xi->threads = NULL;
	xi->nr = xi->cap = 0;
	xi->memo_valid = false;
	free(xs->bytes);
	free(xs->run_start);
	free(xs->coder);
	free(xs->rec);
	free(xs->kept);
	*xs = (struct exit_store){ 0 };
	free(ps->exit_ord);
	ps->exit_ord = NULL;
}

void profile_exit_index_free(struct profile *p)
{
	struct exit_index *xi = &p->state->xi;

	profile_exit_index_drop_exits(p);
	free(xi->native);
	xi->native = NULL;
	xi->nr_native = xi->native_cap = 0;
}

/* An exit kept whole: appended to exits, its guest stack raw like a guest sample's. */
static int keep_exit(struct profile *p, const struct kp_rec_vm_exit *x)
{
	struct profile_state *ps = p->state;
	size_t n = x->nr_callchain <= KP_CALLCHAIN_MAX ? x->nr_callchain : KP_CALLCHAIN_MAX;

	if (grow_array(&p->exits, &ps->exits_cap, p->nr_exits + 1, sizeof(*p->exits)) || profile_raw_room(p, n + 1))
		return -ENOMEM;
	p->exits[p->nr_exits++] = (struct profile_exit){
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
	return 0;
}

/* An exit held coded (exits_coded): its ordinal is exits_recorded. */
static int store_exit(struct profile *p, const struct kp_rec_vm_exit *x)
{
	struct profile_state *ps = p->state;
	struct exit_store *xs = &ps->xs;
	uint32_t ord = (uint32_t)p->exits_recorded;
	size_t n = x->nr_callchain <= KP_CALLCHAIN_MAX ? x->nr_callchain : KP_CALLCHAIN_MAX;
	struct kp_rec_vm_exit *rec;

	if (!xs->coder) {
		xs->coder = malloc(sizeof(*xs->coder));
		xs->rec = malloc(sizeof(*xs->rec) + KP_CALLCHAIN_MAX * sizeof(uint64_t));
		if (!xs->coder || !xs->rec)
			return -ENOMEM;
	}
	if (grow_array(&xs->bytes, &xs->cap, xs->len + KP_SAMPLE_CODE_MAX, 1))
		return -ENOMEM;
	if (ord % EXIT_STORE_RUN == 0) {
		if (grow_array(&xs->run_start, &xs->runs_cap, xs->nr_runs + 1, sizeof(*xs->run_start)))
			return -ENOMEM;
		xs->run_start[xs->nr_runs++] = xs->len;
		kp_sample_coder_reset(xs->coder);
	}
	if (x->kind < 32 && ps->opt.exit_kinds_kept >> x->kind & 1) {
		if (grow_array(&xs->kept, &xs->kept_cap, xs->nr_kept + 1, sizeof(*xs->kept)))
			return -ENOMEM;
		xs->kept[xs->nr_kept++] = ord;
	}
	if (kp_exit_encodable(x, sizeof(*x) + (size_t)x->nr_callchain * sizeof(uint64_t))) {
		/* Every record the reader hands out: the coder's own rule says so. */
		xs->len += kp_exit_encode(xs->coder, x, xs->bytes + xs->len);
		return 0;
	}
	/*
	 * A record built in memory the reader would refuse, taken as reports
	 * read it: a CPL other than the kernel's is user, an unknown kind
	 * KVM's other.
	 */
	rec = xs->rec;
	*rec = *x;
	rec->nr_callchain = (uint16_t)n;
	rec->reserved = 0;
	rec->reserved2 = 0;
	rec->end = x->end >= x->time ? x->end : x->time;
	rec->cpl = x->cpl == KP_CPL_KERNEL ? KP_CPL_KERNEL : KP_CPL_USER;
	rec->kind = x->kind <= KP_EXIT_KIND_MAX ? x->kind : KP_EXIT_OTHER;
	memcpy(rec->callchain, x->callchain, n * sizeof(uint64_t));
	xs->len += kp_exit_encode(xs->coder, rec, xs->bytes + xs->len);
	return 0;
}

int profile_add_vm_exit(struct profile *p, const struct kp_rec_vm_exit *x)
{
	struct profile_state *ps = p->state;

	if (p->exits_recorded >= UINT32_MAX)
		return -ENOMEM; /* ordinals are 32-bit, like sample indices */
	if (ps->opt.cross_layer && index_exit(p, x->host_tid, x->time, x->end >= x->time ? x->end : x->time,
					      (uint32_t)p->exits_recorded))
		return -ENOMEM;
	if (exits_coded(ps) ? store_exit(p, x) : keep_exit(p, x))
		return -ENOMEM;
	p->exits_recorded++;
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

static int cmp_interval(const void *a, const void *b)
{
	const struct exit_interval *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

/*
 * The exit of thread t whose interval holds time `when` (the latest start
 * at or before it, if `when` is before its end): its ordinal, or
 * PROFILE_NONE. The search gallops out from where the thread's last one
 * ended and touches a few intervals rather than a binary search's ~20
 * scattered ones.
 */
static uint32_t exit_at(struct exit_thread *t, uint64_t when)
{
	const struct exit_interval *iv = t->iv;
	size_t n = t->n, lo = 0, hi = n, h = t->hint < n ? t->hint : n, step = 1;

	/* lo..hi: bounds on the first interval starting after `when`. */
	if (h < n && iv[h].time <= when) {
		for (lo = h + 1; lo + step <= n && iv[lo + step - 1].time <= when; step *= 2)
			lo += step;
		hi = lo + step <= n ? lo + step - 1 : n;
	} else if (h > 0 && iv[h - 1].time > when) {
		for (hi = h - 1; hi >= step && iv[hi - step].time > when; step *= 2)
			hi -= step;
		lo = hi >= step ? hi - step + 1 : 0;
	} else {
		lo = hi = h;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (iv[mid].time <= when)
			lo = mid + 1;
		else
			hi = mid;
	}
	t->hint = lo;
	return lo && when - iv[lo - 1].time < iv[lo - 1].len ? iv[lo - 1].ord : PROFILE_NONE;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The index of ordinal ord in the sorted ords[n] (it is there). */
static uint32_t index_of(const uint32_t *ords, size_t n, uint32_t ord)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ords[mid] < ord)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (uint32_t)lo;
}

/*
 * The coded exits to keep (joined, or of a kept kind) decoded into exits,
 * in recorded order; each joined sample's exit, an ordinal until now,
 * becomes its index there. The coded bytes are freed after.
 */
static int keep_wanted_exits(struct profile *p)
{
	struct profile_state *ps = p->state;
	struct exit_store *xs = &ps->xs;
	size_t nw = 0, k, pos = 0;
	uint32_t *want, next = 0;

	want = malloc((p->exit_samples + xs->nr_kept + 1) * sizeof(*want));
	if (!want)
		return -ENOMEM;
	for (k = 0; k < p->exit_samples; k++)
		want[nw++] = p->samples[ps->joined[k]].exit;
	if (xs->nr_kept)
		memcpy(want + nw, xs->kept, xs->nr_kept * sizeof(*want));
	nw += xs->nr_kept;
	qsort(want, nw, sizeof(*want), cmp_u32);
	for (k = 0; k < nw; k++) /* unique */
		if (!pos || want[pos - 1] != want[k])
			want[pos++] = want[k];
	nw = pos;
	ps->exit_ord = want;
	for (k = 0; k < nw; k++) {
		uint32_t ord = want[k];

		/* Runs start with a fresh coder: an exit further on is decoded from its run's start. */
		if (ord / EXIT_STORE_RUN > next / EXIT_STORE_RUN)
			next = ord - ord % EXIT_STORE_RUN;
		while (next <= ord) {
			size_t used;

			if (next % EXIT_STORE_RUN == 0) {
				kp_sample_coder_reset(xs->coder);
				pos = xs->run_start[next / EXIT_STORE_RUN];
			}
			used = kp_exit_decode(xs->coder, xs->bytes + pos, xs->len - pos, xs->rec);
			if (!used)
				return -EIO; /* its own coding: cannot happen */
			pos += used;
			next++;
		}
		if (keep_exit(p, xs->rec))
			return -ENOMEM;
	}
	for (k = 0; k < p->exit_samples; k++) {
		struct profile_sample *s = &p->samples[ps->joined[k]];

		s->exit = index_of(want, nw, s->exit);
		p->exits[s->exit].joined = true;
	}
	free(xs->bytes);
	free(xs->run_start);
	xs->bytes = NULL;
	xs->run_start = NULL;
	xs->len = xs->cap = xs->nr_runs = xs->runs_cap = 0;
	return 0;
}

int profile_match_exits(struct profile *p)
{
	struct profile_state *ps = p->state;
	struct exit_index *xi = &ps->xi;
	struct exit_thread *t = NULL;
	size_t cap = 0;

	for (size_t i = 0; i < xi->nr; i++)
		if (xi->threads[i].unsorted) /* a crafted file: each vCPU's ring is in time order */
			qsort(xi->threads[i].iv, xi->threads[i].n, sizeof(*xi->threads[i].iv), cmp_interval);
	for (size_t k = 0; ps->opt.cross_layer && k < xi->nr_native; k++) {
		uint32_t i = xi->native[k], ord;
		struct profile_sample *s = &p->samples[i];

		if (!t || t->tid != s->tid) {
			int64_t v = keymap_get(&xi->by_tid, s->tid, 0);

			t = v >= 0 ? &xi->threads[v] : NULL;
			if (!t)
				continue;
		}
		ord = exit_at(t, s->time);
		if (ord == PROFILE_NONE)
			continue;
		if (grow_array(&ps->joined, &cap, p->exit_samples + 1, sizeof(*ps->joined)))
			return -ENOMEM;
		ps->joined[p->exit_samples++] = i;
		s->exit = ord;
		if (!exits_coded(ps))
			p->exits[ord].joined = true;
	}
	return exits_coded(ps) && p->exits_recorded ? keep_wanted_exits(p) : 0;
}

static bool add_overflows(size_t *sum, size_t n)
{
	if (n > SIZE_MAX - *sum)
		return true;
	*sum += n;
	return false;
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
	if (add_overflows(&total, ps->nr_raw) || add_overflows(&total, extra) || total > UINT32_MAX)
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
		s->first_frame = (uint32_t)first;
		s->nr_frames = (uint16_t)(out_at - first);
	}
	return 0;
}
