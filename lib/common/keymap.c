/* SPDX-License-Identifier: MIT */
#include "common/keymap.h"

#include <errno.h>
#include <stdlib.h>

struct keymap_slot {
	uint64_t a, b;
	uint32_t val;
	uint32_t full;
};

/* splitmix64's finalizer: addresses differ in low bits only, so mix well. */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static size_t slot_of(const struct keymap *m, uint64_t a, uint64_t b)
{
	return (size_t)mix(a ^ mix(b + 0x9e3779b97f4a7c15ull)) & m->mask;
}

int64_t keymap_get(const struct keymap *m, uint64_t a, uint64_t b)
{
	size_t i;

	if (!m->slots)
		return -1;
	for (i = slot_of(m, a, b);; i = (i + 1) & m->mask) {
		const struct keymap_slot *s = &m->slots[i];

		if (!s->full)
			return -1;
		if (s->a == a && s->b == b)
			return s->val;
	}
}

static int rehash(struct keymap *m)
{
	size_t n = m->slots ? (m->mask + 1) * 2 : 64;
	struct keymap old = *m;
	size_t i;

	if (n > SIZE_MAX / sizeof(*m->slots))
		return -ENOMEM;
	m->slots = calloc(n, sizeof(*m->slots));
	if (!m->slots) {
		*m = old;
		return -ENOMEM;
	}
	m->mask = n - 1;
	m->used = 0;
	for (i = 0; old.slots && i <= old.mask; i++)
		if (old.slots[i].full)
			keymap_put(m, old.slots[i].a, old.slots[i].b, old.slots[i].val);
	free(old.slots);
	return 0;
}

int keymap_put(struct keymap *m, uint64_t a, uint64_t b, uint32_t val)
{
	size_t i;

	/* Keep the load under 1/2 so probe runs stay short. */
	if (!m->slots || (m->used + 1) * 2 > m->mask + 1) {
		int rc = rehash(m);

		if (rc)
			return rc;
	}
	for (i = slot_of(m, a, b);; i = (i + 1) & m->mask) {
		struct keymap_slot *s = &m->slots[i];

		if (!s->full) {
			*s = (struct keymap_slot){ a, b, val, 1 };
			m->used++;
			return 0;
		}
		if (s->a == a && s->b == b) {
			s->val = val;
			return 0;
		}
	}
}

void keymap_free(struct keymap *m)
{
	free(m->slots);
	*m = (struct keymap)KEYMAP_INIT;
}

uint64_t keymap_hash(const void *buf, size_t len, uint64_t seed)
{
	const unsigned char *p = buf;
	uint64_t h = 0xcbf29ce484222325ull ^ mix(seed);
	size_t i;

	/* FNV-1a, finished with a mix so that every bit depends on all bytes. */
	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return mix(h ^ len);
}
