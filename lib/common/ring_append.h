/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_RING_APPEND_H
#define KVMPROF_RING_APPEND_H

/*
 * The producer side of a kp_ring (include/kvmprof/guest_ring.h): one
 * mechanism for both rings kvmprof-vmm fills, the guest sampler's (shared
 * with the host profiler) and the vPMU's sample buffer (in guest memory).
 * The consumer shares the control block and may write anything into it, so
 * the producer keeps its own head and only reads the consumer's tail, and a
 * tail that makes no sense counts as a full ring.
 */

#include <stdbool.h>
#include <stdint.h>

#include "kvmprof/guest_ring.h"

/*
 * Copies a sealed record of size bytes (a multiple of 8) to *head's
 * position in data (dsize bytes, a power of two), padding the end of the
 * area first when it does not fit there, and advances *head. False, and
 * nothing written, when it does not fit with `keep` bytes left free after
 * it (room for records of a higher priority). Publishing head is the
 * caller's.
 */
bool ring_append(const struct kp_ring_ctl *ctl, uint8_t *data, uint64_t dsize, uint64_t *head, const uint8_t *rec,
		 uint32_t size, uint64_t keep);

/* Bytes the consumer has not read (dsize when its tail makes no sense). */
uint64_t ring_unread(const struct kp_ring_ctl *ctl, uint64_t dsize, uint64_t head);

/* Fills in a record's header at rec: type, size and the CRC of the rest. */
void ring_seal(uint8_t *rec, uint32_t type, uint32_t size);

#endif
