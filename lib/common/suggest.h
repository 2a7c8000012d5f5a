/* SPDX-License-Identifier: MIT */
/*
 * "Did you mean": the known names closest to one a user mistyped, by edit
 * distance (case-insensitive, an adjacent transposition is one edit). For
 * event names (events_suggest) and libvirt domain names.
 */
#ifndef KVMPROF_SUGGEST_H
#define KVMPROF_SUGGEST_H

#include <stddef.h>

#define SUGGEST_MAX 8
#define SUGGEST_NAME_MAX 128

struct suggest {
	const char *name;
	int threshold, max, n;
	int dist[SUGGEST_MAX];
	char names[SUGGEST_MAX][SUGGEST_NAME_MAX];
};

/* Starts a search for up to max (<= SUGGEST_MAX) names close to name: one or two edits, a third of a long name. */
void suggest_init(struct suggest *s, const char *name, int max);
/* Offers a known name; kept if it is among the closest so far (first offered first among equals). */
void suggest_consider(struct suggest *s, const char *candidate);
/* The names kept, closest first, as "a, b, c" (empty when none was close). Returns how many. */
int suggest_format(const struct suggest *s, char *out, size_t outlen);

/* Edit distance with adjacent transpositions, case-insensitive; 128 for longer strings. */
int suggest_distance(const char *a, const char *b);

#endif
