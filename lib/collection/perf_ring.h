/* SPDX-License-Identifier: MIT */
/*
 * A perf_event mmap ring buffer: map it, hand out whole records in order
 * (records that wrap around the end are copied so callers always see one
 * contiguous record), release what was read.
 */
#ifndef KVMPROF_PERF_RING_H
#define KVMPROF_PERF_RING_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

struct perf_ring {
	int fd;
	struct perf_event_mmap_page *page; /* control page, then the data pages */
	size_t map_size, data_size;        /* data_size is a power of two */
	unsigned char *scratch;            /* for records that wrap */
};

/* Maps 1 + data_pages pages of fd (data_pages a power of two). 0 or -errno. */
int perf_ring_map(struct perf_ring *r, int fd, unsigned data_pages);
void perf_ring_unmap(struct perf_ring *r);

/*
 * Calls fn for each record written so far, then releases them to the
 * kernel. Stops at fn's first nonzero return and passes it on (the records
 * before it are released). -EIO when the ring holds a malformed record.
 */
int perf_ring_read(struct perf_ring *r, int (*fn)(const struct perf_event_header *h, void *ctx), void *ctx);

#endif
