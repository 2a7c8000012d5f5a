// SPDX-License-Identifier: MIT
/* The producer side of a kp_ring: see ring_append.h. */
#include <string.h>
#include <zlib.h>

#include "kvmprof/sample_format.h"
#include "common/ring_append.h"

void ring_seal(uint8_t *rec, uint32_t type, uint32_t size)
{
	struct kp_rec_header h = { .type = type, .size = size };

	memcpy(rec, &h, sizeof(h));
	h.crc = (uint32_t)crc32(crc32(0, rec, 8), rec + sizeof(h), size - (uint32_t)sizeof(h));
	memcpy(rec, &h, sizeof(h));
}

uint64_t ring_unread(const struct kp_ring_ctl *ctl, uint64_t dsize, uint64_t head)
{
	uint64_t tail = __atomic_load_n(&ctl->tail, __ATOMIC_ACQUIRE);

	return tail > head || head - tail > dsize ? dsize : head - tail;
}

bool ring_append(const struct kp_ring_ctl *ctl, uint8_t *data, uint64_t dsize, uint64_t *head, const uint8_t *rec,
		 uint32_t size, uint64_t keep)
{
	uint64_t pos = *head & (dsize - 1), room = dsize - pos, need = size;

	if (room < size)
		need += room; /* a record never wraps: skip the end of the area */
	if (dsize - ring_unread(ctl, dsize, *head) < need + keep)
		return false;
	if (room < size) {
		if (room >= sizeof(struct kp_rec_header))
			ring_seal(data + pos, KP_RING_PAD, (uint32_t)room);
		else
			memset(data + pos, 0, room);
		*head += room;
		pos = 0;
	}
	memcpy(data + pos, rec, size);
	*head += size;
	return true;
}
