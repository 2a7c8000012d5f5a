/* SPDX-License-Identifier: MIT */
/*
 * The shared-memory rings that carry guest samples from kvmprof-vmm to the
 * host profiler (`kvmprof record`). The VMM creates a memfd laid out as
 * below and hands it over the control socket (`sample-start`'s reply,
 * SCM_RIGHTS); the profiler maps it and drains it while sampling runs.
 *
 *   offset 0                      struct kp_ring_header (one page)
 *   offset 4096 + i * stride      ring i (one per vCPU): struct kp_ring_ctl
 *                                 (one page), then data_size bytes of data
 *   stride = 4096 + data_size
 *
 * One ring per vCPU keeps every ring single-producer (that vCPU's thread)
 * and single-consumer (the profiler), so no locks cross the process
 * boundary. The data area holds records in the sample-file encoding
 * (struct kp_rec_header + payload, 8-byte aligned, CRC set), so the
 * profiler can copy them into its output file unchanged. A record never
 * wraps: when it does not fit before the end of the data area, the
 * producer fills the rest with one KP_RING_PAD record (or, when fewer than
 * 16 bytes remain, leaves them as zero and the consumer skips to the start)
 * and writes the record at the start.
 *
 * head and tail are byte counts that only grow (position = count % data_size):
 * the producer writes records, then publishes head with a release store;
 * the consumer reads up to head (acquire), then publishes tail (release). A
 * record that does not fit in head - tail free space is not written and
 * `lost` is incremented: losses are counted, never silent.
 *
 * The consumer must treat the ring as hostile input like any sample file
 * (the guest shapes what the VMM records): it checks every record header
 * against the bytes available before reading it.
 */
#ifndef KVMPROF_GUEST_RING_H
#define KVMPROF_GUEST_RING_H

#include <stdint.h>

#define KP_RING_MAGIC "KPRING\0\0" /* 8 bytes */
#define KP_RING_VERSION 1
#define KP_RING_PAGE 4096u
#define KP_RING_PAD 0 /* record type: skip to the end of the data area */

struct kp_ring_header {
	char magic[8];
	uint32_t version;
	uint32_t nr_rings;  /* vCPUs */
	uint64_t data_size; /* bytes of data per ring, a power of two >= 64 KiB */
	uint64_t stride;    /* KP_RING_PAGE + data_size */
	uint32_t file_version_major; /* the sample-file version the records follow */
	uint32_t file_version_minor;
};

struct kp_ring_ctl {
	uint64_t head;    /* bytes ever written (producer) */
	uint64_t lost;    /* records dropped for want of space (producer) */
	uint64_t written; /* records ever written (producer) */
	uint64_t exits_dropped; /* VM_EXIT records left out to keep room for samples (producer; not in lost) */
	uint64_t pad0[4];
	uint64_t tail; /* bytes ever consumed (consumer), on its own cache line */
	uint64_t pad1[7];
};

_Static_assert(sizeof(struct kp_ring_ctl) == 128, "ring control layout");

#endif
