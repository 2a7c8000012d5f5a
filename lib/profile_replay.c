/* SPDX-License-Identifier: MIT */
/*
 * Process state replayed in (time, stream order): FORK copies the parent's
 * maps, an exec COMM starts an empty address space, EXIT keeps the maps
 * (samples of exited processes resolve), a pid seen again after EXIT
 * starts afresh.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "profile_state.h"

static uint32_t new_mm(struct profile *p, uint32_t pid, uint8_t domain)
{
	struct profile_state *ps = p->state;
	int64_t prev = keymap_get(&ps->mm_by_pid, pid, domain);
	struct mm *mm;

	if (grow_array(&ps->mms, &ps->mms_cap, ps->nr_mms + 1, sizeof(*ps->mms)))
		return PROFILE_NONE;
	mm = &ps->mms[ps->nr_mms];
	*mm = (struct mm){ .pid = pid, .comm = PROFILE_NONE, .prev = prev >= 0 ? (uint32_t)prev : PROFILE_NONE,
			   .domain = domain };
	if (keymap_put(&ps->mm_by_pid, pid, domain, (uint32_t)ps->nr_mms))
		return PROFILE_NONE;
	return (uint32_t)ps->nr_mms++;
}

static int copy_maps(struct profile *p, uint32_t dst, uint32_t src)
{
	struct profile_state *ps = p->state;
	struct mm *d = &ps->mms[dst], *s = &ps->mms[src];

	d->comm = s->comm;
	if (!s->nr)
		return 0;
	if (ps->total_maps + s->nr > MAPS_TOTAL_MAX) {
		if (!ps->maps_warned)
			profile_warn(p, "more than %u mappings in all: later ones ignored", MAPS_TOTAL_MAX);
		ps->maps_warned = true;
		return 0;
	}
	if (grow_array(&d->maps, &d->cap, s->nr, sizeof(*d->maps)))
		return -ENOMEM;
	memcpy(d->maps, s->maps, s->nr * sizeof(*s->maps));
	d->nr = s->nr;
	ps->total_maps += s->nr;
	return 0;
}

/* The pid's address space now; a fresh one if it has none or it exited. */
static uint32_t current_mm(struct profile *p, uint32_t pid, uint8_t domain)
{
	int64_t v = keymap_get(&p->state->mm_by_pid, pid, domain);

	if (v >= 0 && !p->state->mms[v].exited)
		return (uint32_t)v;
	return new_mm(p, pid, domain);
}

int profile_replay_mmap(struct profile *p, const struct op *op)
{
	struct profile_state *ps = p->state;
	uint32_t idx;
	struct mm *mm;

	if (op->pid == KP_PID_KERNEL) {
		struct domain_state *d = &ps->dom[op->domain];

		if (d->kernel_mm == PROFILE_NONE) {
			/* The kernel's maps live outside the pid table: no process can replace them. */
			if (grow_array(&ps->mms, &ps->mms_cap, ps->nr_mms + 1, sizeof(*ps->mms)))
				return -ENOMEM;
			ps->mms[ps->nr_mms] = (struct mm){ .pid = KP_PID_KERNEL, .comm = PROFILE_NONE,
							   .prev = PROFILE_NONE, .domain = op->domain };
			d->kernel_mm = (uint32_t)ps->nr_mms++;
		}
		idx = d->kernel_mm;
	} else {
		idx = current_mm(p, op->pid, op->domain);
		if (idx == PROFILE_NONE)
			return -ENOMEM;
	}
	mm = &ps->mms[idx];
	if (mm->nr >= MAPS_PER_MM_MAX || ps->total_maps >= MAPS_TOTAL_MAX) {
		if (!ps->maps_warned)
			profile_warn(p, "pid %u: too many mappings: later ones ignored", op->pid);
		ps->maps_warned = true;
		return 0;
	}
	if (grow_array(&mm->maps, &mm->cap, mm->nr + 1, sizeof(*mm->maps)))
		return -ENOMEM;
	mm->maps[mm->nr++] = op->map;
	ps->total_maps++;
	return 0;
}

static int apply_op(struct profile *p, const struct op *op)
{
	struct profile_state *ps = p->state;
	uint32_t idx;
	int64_t parent;

	switch (op->kind) {
	case OP_MMAP:
		return profile_replay_mmap(p, op);
	case OP_COMM:
		if (op->flags & KP_COMM_EXEC) {
			/* exec: a new program, none of the old mappings. */
			idx = new_mm(p, op->pid, op->domain);
		} else {
			idx = current_mm(p, op->pid, op->domain);
			/* A thread's own name doesn't rename its process. */
			if (idx != PROFILE_NONE && op->tid != op->pid && ps->mms[idx].comm != PROFILE_NONE)
				return 0;
		}
		if (idx == PROFILE_NONE)
			return -ENOMEM;
		ps->mms[idx].comm = op->comm;
		return 0;
	case OP_FORK:
		/* A new thread shares its process's address space: nothing to do. */
		if (op->tid != op->pid)
			return 0;
		parent = keymap_get(&ps->mm_by_pid, op->ppid, op->domain);
		idx = new_mm(p, op->pid, op->domain);
		if (idx == PROFILE_NONE)
			return -ENOMEM;
		return parent >= 0 && (uint32_t)parent != idx ? copy_maps(p, idx, (uint32_t)parent) : 0;
	case OP_EXIT: {
		int64_t v = keymap_get(&ps->mm_by_pid, op->pid, op->domain);

		/* Keep the maps: samples recorded before EXIT still resolve against them. */
		if (v >= 0 && op->tid == op->pid)
			ps->mms[v].exited = true;
		return 0;
	}
	}
	return 0;
}

static int cmp_op(const void *a, const void *b)
{
	const struct op *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * What replay needs of item i, a sample or (past nr_samples) an exit: its
 * time, its index among its kind (is_exit says which) and its process.
 */
struct item {
	uint64_t time;
	uint32_t index, pid;
	uint8_t domain;
	bool is_exit;
};

static inline struct item item_at(const struct profile *p, size_t i)
{
	if (i < p->nr_samples)
		return (struct item){ p->samples[i].time, (uint32_t)i, p->samples[i].pid, p->samples[i].domain, false };
	i -= p->nr_samples;
	return (struct item){ p->exits[i].time, (uint32_t)i, p->exits[i].pid, KP_DOMAIN_GUEST, true };
}

/* Whether state record o comes before item it in (time, stream order). */
static inline bool op_before(const struct op *o, const struct item *it)
{
	return o->time < it->time ||
	       (o->time == it->time && (it->is_exit ? o->exits_before : o->samples_before) <= it->index);
}

/*
 * A sample's epoch: how many of the sorted state records come before it.
 * Samples mostly come in time order and state records are few, so the
 * previous sample's epoch is tried first.
 */
static uint32_t epoch_of(const struct op *ops, uint32_t n, uint32_t last, const struct item *it)
{
	uint32_t lo = 0, hi = n;

	if ((!last || op_before(&ops[last - 1], it)) && (last == n || !op_before(&ops[last], it)))
		return last;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (op_before(&ops[mid], it))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int profile_replay(struct profile *p, size_t first, size_t n, uint32_t *item_mm)
{
	struct profile_state *ps = p->state;
	uint32_t *start = NULL, *by_epoch = NULL, nr_ops, e, last = 0;
	size_t i, o = 0;
	int rc = -ENOMEM;

	if (ps->nr_ops > UINT32_MAX - 2)
		return -EFBIG;
	nr_ops = (uint32_t)ps->nr_ops;
	if (nr_ops > 1)
		qsort(ps->ops, nr_ops, sizeof(*ps->ops), cmp_op);
	/*
	 * The state is the same for every sample between two state records:
	 * the samples are put in buckets by epoch (a counting sort, stable)
	 * and each bucket is looked up after its epoch's records are applied.
	 * This replaces a sort of all the samples by time.
	 */
	start = calloc((size_t)nr_ops + 2, sizeof(*start));
	if (!start)
		goto out;
	for (i = 0; i < n; i++) {
		struct item it = item_at(p, first + i);

		last = epoch_of(ps->ops, nr_ops, last, &it);
		item_mm[first + i] = last; /* the epoch until the lookup below */
		start[last + 1]++;
	}
	/* Often every sample is in one epoch (the state records all come first): they are in order as they are. */
	if (start[last + 1] != n) {
		by_epoch = malloc((n ? n : 1) * sizeof(*by_epoch));
		if (!by_epoch)
			goto out;
	}
	for (e = 0; e <= nr_ops; e++)
		start[e + 1] += start[e];
	for (i = 0; by_epoch && i < n; i++)
		by_epoch[start[item_mm[first + i]]++] = (uint32_t)(first + i);
	if (!by_epoch)
		start[last] = (uint32_t)n; /* its end, as the scatter leaves each epoch's */
	/* start[e] is now epoch e's end. */
	for (e = 0, i = 0; e <= nr_ops; e++) {
		/* Within an epoch, a run of one process's samples is looked up once. */
		uint32_t last_pid = 0;
		int last_domain = -1;
		int64_t mm = -1;

		for (; o < e; o++)
			if (apply_op(p, &ps->ops[o]))
				goto out;
		for (; i < start[e]; i++) {
			size_t k = by_epoch ? by_epoch[i] : first + i;
			struct item it = item_at(p, k);

			if (it.pid != last_pid || it.domain != last_domain)
				mm = keymap_get(&ps->mm_by_pid, it.pid, it.domain);
			last_pid = it.pid, last_domain = it.domain;
			item_mm[k] = mm >= 0 ? (uint32_t)mm : PROFILE_NONE;
			if (mm < 0)
				continue;
			if (k < p->nr_samples)
				p->samples[k].comm = ps->mms[mm].comm;
			else
				p->exits[k - p->nr_samples].comm = ps->mms[mm].comm;
		}
	}
	rc = 0;
out:
	/* What lookups found before may differ now. */
	profile_resolve_cache_clear(p);
	free(start);
	free(by_epoch);
	return rc;
}
