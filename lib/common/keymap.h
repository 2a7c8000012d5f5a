/* SPDX-License-Identifier: MIT */
/*
 * A hash index from a pair of 64-bit keys to a 32-bit value (an index into
 * the caller's array). The profile model and the renderers use it to resolve
 * each distinct (image, address) once and to aggregate samples by key.
 */
#ifndef KVMPROF_KEYMAP_H
#define KVMPROF_KEYMAP_H

#include <stddef.h>
#include <stdint.h>

struct keymap {
	struct keymap_slot *slots;
	size_t mask; /* slots - 1; a power of two minus one, 0 when empty */
	size_t used;
};

#define KEYMAP_INIT { NULL, 0, 0 }

/* The value stored under (a, b), or -1. */
int64_t keymap_get(const struct keymap *m, uint64_t a, uint64_t b);
/* Stores val under (a, b), replacing any value. 0 or -ENOMEM. */
int keymap_put(struct keymap *m, uint64_t a, uint64_t b, uint32_t val);
void keymap_free(struct keymap *m);
/* A 64-bit hash of bytes, for keys that are strings or sequences. */
uint64_t keymap_hash(const void *buf, size_t len, uint64_t seed);

#endif
