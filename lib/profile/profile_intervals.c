/* SPDX-License-Identifier: MIT */
/*
 * An address space as sorted intervals: its maps, oldest first, laid over
 * each other so that what a newer map covers is the newer map's. Built on
 * the first lookup, after replay has added every map.
 */
#include <errno.h>
#include <string.h>

#include "common/grow.h"
#include "profile/profile_state.h"

static size_t first_ending_after(const struct map *iv, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (iv[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Lays one map over the intervals: what it covers now belongs to it. */
static int overlay(struct map **ivs, size_t *n, size_t *cap, const struct map *m)
{
	size_t i = first_ending_after(*ivs, *n, m->start), j = i, add = 1;
	struct map left = { 0 }, right = { 0 };
	bool has_left = false, has_right = false;

	while (j < *n && (*ivs)[j].start < m->end)
		j++;
	/* Intervals i..j-1 overlap m; keep their parts outside it. */
	if (i < j && (*ivs)[i].start < m->start) {
		left = (*ivs)[i];
		left.end = m->start;
		has_left = true;
		add++;
	}
	if (i < j && (*ivs)[j - 1].end > m->end) {
		right = (*ivs)[j - 1];
		right.pgoff += m->end - right.start;
		right.start = m->end;
		has_right = true;
		add++;
	}
	if (grow_array(ivs, cap, *n - (j - i) + add, sizeof(**ivs)))
		return -ENOMEM;
	memmove(&(*ivs)[i + add], &(*ivs)[j], (*n - j) * sizeof(**ivs));
	*n = *n - (j - i) + add;
	if (has_left)
		(*ivs)[i++] = left;
	(*ivs)[i++] = *m;
	if (has_right)
		(*ivs)[i] = right;
	return 0;
}

static int build_intervals(struct mm *mm)
{
	size_t cap = 0, i;

	mm->built = true;
	for (i = 0; i < mm->nr; i++)
		if (overlay(&mm->ivs, &mm->nr_ivs, &cap, &mm->maps[i]))
			return -ENOMEM;
	return 0;
}

const struct map *mm_find_map(struct mm *mm, uint64_t addr)
{
	size_t i;

	if (!mm->built && build_intervals(mm))
		return NULL;
	i = first_ending_after(mm->ivs, mm->nr_ivs, addr);
	return i < mm->nr_ivs && mm->ivs[i].start <= addr ? &mm->ivs[i] : NULL;
}

const struct map *mm_intervals(struct mm *mm, size_t *n)
{
	*n = 0;
	if (!mm->built && build_intervals(mm))
		return NULL;
	*n = mm->nr_ivs;
	return mm->ivs;
}
