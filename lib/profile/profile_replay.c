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

#include "common/grow.h"
#include "profile/profile_state.h"

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

bool profile_process_mapped(const struct profile *p, uint32_t pid, uint8_t domain)
{
	const struct profile_state *ps = p->state;
	int64_t v = keymap_get(&ps->mm_by_pid, pid, domain);

	/* Its address spaces, newest first: one per exec, or per pid reused after an exit. */
	for (uint32_t m = v >= 0 ? (uint32_t)v : PROFILE_NONE; m != PROFILE_NONE; m = ps->mms[m].prev)
		if (ps->mms[m].nr)
			return true;
	return false;
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
	ps->maps_gen++;
	return 0;
}

int profile_add_guest_kernel_elf(struct profile *p)
{
	struct profile_state *ps = p->state;
	struct op op = { .kind = OP_MMAP, .pid = KP_PID_KERNEL, .domain = KP_DOMAIN_GUEST };
	uint32_t img = profile_image_id(p, ps->opt.guest_kernel_path, NULL, NULL, 0, true, KP_DOMAIN_GUEST);

	if (img == PROFILE_NONE)
		return -ENOMEM;
	ps->istate[img].host_path = true;
	/* A fixed-address kernel: runtime addresses are link addresses (symtab_map_addr). */
	op.map = (struct map){ .start = 0, .end = UINT64_MAX, .pgoff = 0, .image = img };
	return profile_replay_mmap(p, &op);
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
	/* An exit's place in the stream is its ordinal among the recorded exits. */
	return (struct item){ p->exits[i].time, p->state->exit_ord ? p->state->exit_ord[i] : (uint32_t)i,
			      p->exits[i].pid, KP_DOMAIN_GUEST, true };
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

/* The last lookup: a run of one process's items is looked up once. */
struct lookup_memo {
	bool valid;
	uint8_t domain;
	uint32_t pid;
	int64_t mm;
};

/* The address space item k is in at this point of the replay (PROFILE_NONE: none); sets its command. */
static uint32_t lookup(struct profile *p, size_t k, struct lookup_memo *m)
{
	struct item it = item_at(p, k);

	if (!m->valid || it.pid != m->pid || it.domain != m->domain)
		*m = (struct lookup_memo){ true, it.domain, it.pid, keymap_get(&p->state->mm_by_pid, it.pid, it.domain) };
	if (m->mm < 0)
		return PROFILE_NONE;
	if (k < p->nr_samples)
		p->samples[k].comm = p->state->mms[m->mm].comm;
	else
		p->exits[k - p->nr_samples].comm = p->state->mms[m->mm].comm;
	return (uint32_t)m->mm;
}

int profile_replay(struct profile *p, size_t first, size_t n, uint32_t *item_mm)
{
	struct profile_state *ps = p->state;
	uint32_t *start = NULL, *minor = NULL, *minor_mm = NULL, nr_ops, e, last = 0, big = 0;
	size_t i, o = 0, nr_minor;
	int rc = -ENOMEM;

	if (ps->nr_ops > UINT32_MAX - 2)
		return -EFBIG;
	nr_ops = (uint32_t)ps->nr_ops;
	if (nr_ops > 1)
		qsort(ps->ops, nr_ops, sizeof(*ps->ops), cmp_op);
	/*
	 * The state is the same for every sample between two state records:
	 * each sample's epoch (the records before it) is found, and the
	 * samples of an epoch are looked up once its records are applied.
	 * Almost all samples are in one epoch, often the last (the records
	 * come first): those are walked in place; the few others are put in
	 * buckets by epoch (a counting sort, stable). This replaces a sort of
	 * all the samples by time.
	 */
	start = calloc((size_t)nr_ops + 2, sizeof(*start));
	if (!start)
		goto out;
	for (i = 0; i < n; i++) {
		struct item it = item_at(p, first + i);

		last = epoch_of(ps->ops, nr_ops, last, &it);
		item_mm[first + i] = last; /* the epoch until the lookups below */
		start[last + 1]++;
	}
	for (e = 1; e <= nr_ops; e++)
		if (start[e + 1] > start[big + 1])
			big = e;
	nr_minor = n - start[big + 1];
	start[big + 1] = 0;
	for (e = 0; e <= nr_ops; e++)
		start[e + 1] += start[e];
	minor = malloc((nr_minor ? nr_minor : 1) * sizeof(*minor));
	minor_mm = malloc((nr_minor ? nr_minor : 1) * sizeof(*minor_mm));
	if (!minor || !minor_mm)
		goto out;
	for (i = 0; nr_minor && i < n; i++)
		if (item_mm[first + i] != big)
			minor[start[item_mm[first + i]]++] = (uint32_t)(first + i);
	/* start[e] is now the end of epoch e's minor items. */
	for (e = 0, i = 0; e <= nr_ops; e++) {
		struct lookup_memo memo = { 0 };

		for (; o < e; o++)
			if (apply_op(p, &ps->ops[o]))
				goto out;
		if (e == big) {
			/* Item epochs stay in item_mm until every lookup is done; the minor ones' results wait aside. */
			for (size_t k = first; k < first + n; k++)
				if (item_mm[k] == big)
					item_mm[k] = lookup(p, k, &memo);
			continue;
		}
		for (; i < start[e]; i++)
			minor_mm[i] = lookup(p, minor[i], &memo);
	}
	for (i = 0; i < nr_minor; i++)
		item_mm[minor[i]] = minor_mm[i];
	rc = 0;
out:
	/* What lookups found before may differ now. */
	ps->maps_gen++;
	free(start);
	free(minor);
	free(minor_mm);
	return rc;
}
