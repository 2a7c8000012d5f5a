/* SPDX-License-Identifier: MIT */
#include "guest_ring_reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "kvmprof/guest_ring.h"
#include "kvmprof/sample_format.h"

#define RINGS_MAX 64
#define DATA_SIZE_MAX (1ull << 30)

int guest_rings_map(struct guest_rings *g, int fd, char *err, size_t errlen)
{
	struct kp_ring_header h;
	struct stat st;
	void *p;

	memset(g, 0, sizeof(*g));
	if (fstat(fd, &st) || st.st_size < (off_t)KP_RING_PAGE) {
		snprintf(err, errlen, "guest sample rings: the descriptor is not a ring (size %lld)",
			 (long long)st.st_size);
		return -EPROTO;
	}
	p = mmap(NULL, KP_RING_PAGE, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		snprintf(err, errlen, "guest sample rings: mmap: %s", strerror(errno));
		return -errno;
	}
	memcpy(&h, p, sizeof(h));
	munmap(p, KP_RING_PAGE);
	/* Everything the offsets below are computed from is checked first. */
	if (memcmp(h.magic, KP_RING_MAGIC, sizeof(h.magic)) || h.version != KP_RING_VERSION ||
	    h.nr_rings == 0 || h.nr_rings > RINGS_MAX || h.data_size < 65536 || h.data_size > DATA_SIZE_MAX ||
	    (h.data_size & (h.data_size - 1)) || h.stride != KP_RING_PAGE + h.data_size ||
	    h.file_version_major != KP_FILE_VERSION_MAJOR) {
		snprintf(err, errlen, "guest sample rings: bad ring header (magic, version %u, %u rings, data %llu, "
			 "format %u.%u)", h.version, h.nr_rings, (unsigned long long)h.data_size,
			 h.file_version_major, h.file_version_minor);
		return -EPROTO;
	}
	g->map_size = KP_RING_PAGE + (size_t)h.nr_rings * (size_t)h.stride;
	if ((uint64_t)st.st_size < g->map_size) {
		snprintf(err, errlen, "guest sample rings: memfd of %lld bytes, %zu needed", (long long)st.st_size,
			 g->map_size);
		return -EPROTO;
	}
	/* Writable: the consumer publishes tail. */
	p = mmap(NULL, g->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		snprintf(err, errlen, "guest sample rings: mmap of %zu bytes: %s", g->map_size, strerror(errno));
		return -errno;
	}
	g->scratch = malloc(KP_REC_MAX_SIZE);
	if (!g->scratch) {
		munmap(p, g->map_size);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	g->map = p;
	g->nr_rings = h.nr_rings;
	g->data_size = h.data_size;
	g->stride = h.stride;
	return 0;
}

void guest_rings_unmap(struct guest_rings *g)
{
	if (g->map)
		munmap(g->map, g->map_size);
	free(g->scratch);
	g->map = NULL;
	g->scratch = NULL;
}

static struct kp_ring_ctl *ring_ctl(const struct guest_rings *g, uint32_t i)
{
	return (struct kp_ring_ctl *)(g->map + KP_RING_PAGE + (size_t)i * g->stride);
}

static int drain_one(struct guest_rings *g, uint32_t i, struct kp_writer *w)
{
	struct kp_ring_ctl *ctl = ring_ctl(g, i);
	const unsigned char *data = (const unsigned char *)ctl + KP_RING_PAGE;
	uint64_t head = __atomic_load_n(&ctl->head, __ATOMIC_ACQUIRE);
	uint64_t tail = ctl->tail;
	int r = 0;

	/* A producer that claims more than the ring holds is lying: take only what fits. */
	if (head - tail > g->data_size)
		tail = head - g->data_size;
	while (tail < head) {
		uint64_t pos = tail & (g->data_size - 1), room = g->data_size - pos, avail = head - tail;
		struct kp_rec_header h;
		const char *bad;

		if (room < sizeof(h)) { /* the zero-filled end of the data area */
			tail += room;
			continue;
		}
		if (avail < sizeof(h))
			break; /* not a whole header published: wait */
		memcpy(&h, data + pos, sizeof(h));
		if (h.type == KP_RING_PAD && h.size == room && room <= avail) {
			tail += room;
			continue;
		}
		if (h.size < sizeof(h) || h.size % 8 || h.size > room || h.size > avail || h.size > KP_REC_MAX_SIZE) {
			/* No way to find the next record boundary: skip what is published. */
			g->bad++;
			tail = head;
			break;
		}
		/* Copy first: the producer cannot change what is checked and written afterwards. */
		memcpy(g->scratch, data + pos, h.size);
		bad = kp_record_check(g->scratch, h.size);
		if (bad) {
			g->bad++;
		} else {
			r = kp_writer_add_raw(w, g->scratch);
			if (r)
				break;
			g->copied++;
			if (h.type == KP_REC_SAMPLE)
				g->samples++;
		}
		tail += h.size;
	}
	__atomic_store_n(&ctl->tail, tail, __ATOMIC_RELEASE);
	return r;
}

int guest_rings_drain(struct guest_rings *g, struct kp_writer *w)
{
	for (uint32_t i = 0; g->map && i < g->nr_rings; i++) {
		int r = drain_one(g, i, w);

		if (r)
			return r;
	}
	return 0;
}

uint64_t guest_rings_exits_dropped(const struct guest_rings *g)
{
	uint64_t n = 0;

	for (uint32_t i = 0; g->map && i < g->nr_rings; i++)
		n += __atomic_load_n(&ring_ctl(g, i)->exits_dropped, __ATOMIC_RELAXED);
	return n;
}

uint64_t guest_rings_lost(const struct guest_rings *g)
{
	uint64_t lost = 0;

	for (uint32_t i = 0; g->map && i < g->nr_rings; i++)
		lost += __atomic_load_n(&ring_ctl(g, i)->lost, __ATOMIC_RELAXED);
	return lost;
}
