/* SPDX-License-Identifier: MIT */
#include "collection/perf_ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int perf_ring_map(struct perf_ring *r, int fd, unsigned data_pages)
{
	size_t pagesz = (size_t)sysconf(_SC_PAGESIZE);
	void *p;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if (!data_pages || (data_pages & (data_pages - 1)))
		return -EINVAL;
	r->data_size = data_pages * pagesz;
	r->map_size = r->data_size + pagesz;
	/* Writable: the reader tells the kernel how far it got through data_tail. */
	p = mmap(NULL, r->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	r->scratch = malloc(UINT16_MAX + 1); /* a record's size is 16 bits */
	if (!r->scratch) {
		munmap(p, r->map_size);
		return -ENOMEM;
	}
	r->page = p;
	r->fd = fd;
	return 0;
}

void perf_ring_unmap(struct perf_ring *r)
{
	if (r->page)
		munmap(r->page, r->map_size);
	free(r->scratch);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

int perf_ring_read(struct perf_ring *r, int (*fn)(const struct perf_event_header *h, void *ctx), void *ctx)
{
	const unsigned char *data = (const unsigned char *)r->page + (r->map_size - r->data_size);
	/* Acquire: the records' bytes are visible once head is. */
	uint64_t head = __atomic_load_n(&r->page->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->page->data_tail;
	size_t mask = r->data_size - 1;
	int ret = 0;

	while (tail < head) {
		struct perf_event_header hdr;
		size_t off = (size_t)tail & mask, first;
		const struct perf_event_header *h;

		if (head - tail < sizeof(hdr)) {
			ret = -EIO;
			break;
		}
		/* The header itself may wrap (records are 8-byte aligned, so it cannot, but be safe). */
		first = r->data_size - off;
		if (first >= sizeof(hdr)) {
			memcpy(&hdr, data + off, sizeof(hdr));
		} else {
			memcpy(&hdr, data + off, first);
			memcpy((unsigned char *)&hdr + first, data, sizeof(hdr) - first);
		}
		if (hdr.size < sizeof(hdr) || hdr.size > head - tail) {
			/* Cannot find the next record boundary: give the rest back rather than spin on it. */
			tail = head;
			ret = -EIO;
			break;
		}
		if (first >= hdr.size) {
			h = (const struct perf_event_header *)(data + off);
		} else {
			memcpy(r->scratch, data + off, first);
			memcpy(r->scratch + first, data, hdr.size - first);
			h = (const struct perf_event_header *)r->scratch;
		}
		ret = fn(h, ctx);
		if (ret)
			break;
		tail += hdr.size;
	}
	/* Release: we are done reading these bytes before the kernel may overwrite them. */
	__atomic_store_n(&r->page->data_tail, tail, __ATOMIC_RELEASE);
	return ret;
}
