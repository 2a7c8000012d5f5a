/* SPDX-License-Identifier: MIT */
#include "collection/perf_rings.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int perf_rings_init(struct perf_rings *s, const char *prog, const int *cpus, int ncpus)
{
	memset(s, 0, sizeof(*s));
	s->prog = prog;
	s->cpus = cpus;
	s->rings = calloc((size_t)ncpus, sizeof(*s->rings));
	if (!s->rings)
		return -ENOMEM;
	s->ncpus = ncpus;
	for (int c = 0; c < ncpus; c++)
		s->rings[c].fd = -1;
	return 0;
}

/* Keeps fd and its id; the fd is the set's from here on, whatever happens. */
static int keep_fd(struct perf_rings *s, int fd, uint32_t event, uint64_t fixed_period)
{
	uint64_t id;

	if (s->nfds == s->capfds) {
		size_t ncap = s->capfds ? s->capfds * 2 : 64;
		int *f = realloc(s->fds, ncap * sizeof(*f));
		struct convert_id *ids;

		if (!f) {
			close(fd);
			return -ENOMEM;
		}
		s->fds = f;
		ids = realloc(s->ids, ncap * sizeof(*ids));
		if (!ids) {
			close(fd);
			return -ENOMEM;
		}
		s->ids = ids;
		s->capfds = ncap;
	}
	s->fds[s->nfds++] = fd;
	if (ioctl(fd, PERF_EVENT_IOC_ID, &id))
		return -errno;
	s->ids[s->nids++] = (struct convert_id){ .id = id, .event = event, .fixed_period = fixed_period };
	return 0;
}

int perf_rings_add(struct perf_rings *s, int slot, int fd, uint32_t event, const struct perf_event_attr *attr,
		   unsigned pages)
{
	int r = keep_fd(s, fd, event, convert_fixed_period(attr));

	if (r) {
		fprintf(stderr, "%s: perf event id: %s\n", s->prog, strerror(-r));
		return r;
	}
	if (s->rings[slot].fd < 0) {
		r = perf_ring_map(&s->rings[slot], fd, pages);
		if (r)
			fprintf(stderr, "%s: mmap of the perf ring buffer (%u pages) on CPU %d: %s\n", s->prog, pages,
				s->cpus[slot], strerror(-r));
	} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, s->rings[slot].fd)) {
		r = -errno;
		fprintf(stderr, "%s: PERF_EVENT_IOC_SET_OUTPUT on CPU %d: %s\n", s->prog, s->cpus[slot], strerror(-r));
	}
	return r;
}

void perf_rings_enable(struct perf_rings *s, bool on)
{
	for (size_t i = 0; i < s->nfds; i++)
		ioctl(s->fds[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

static int on_record(const struct perf_event_header *h, void *ctx)
{
	return convert_record(ctx, h);
}

int perf_rings_drain(struct perf_rings *s, struct convert_ctx *conv)
{
	for (int c = 0; c < s->ncpus; c++) {
		int r;

		if (s->rings[c].fd < 0)
			continue;
		r = perf_ring_read(&s->rings[c], on_record, conv);
		/* perf_ring_read gave the ring's bytes back: the next records still come. */
		if (r == -EIO) {
			fprintf(stderr, "%s: malformed record in the perf ring of CPU %d; skipped its contents\n", s->prog,
				s->cpus[c]);
			continue;
		}
		if (r)
			return r;
	}
	return 0;
}

void perf_rings_free(struct perf_rings *s)
{
	if (s->rings)
		for (int c = 0; c < s->ncpus; c++)
			if (s->rings[c].fd >= 0)
				perf_ring_unmap(&s->rings[c]);
	for (size_t i = 0; i < s->nfds; i++)
		close(s->fds[i]);
	free(s->rings);
	free(s->fds);
	free(s->ids);
	memset(s, 0, sizeof(*s));
}

/* Writes out what has waited PERF_RINGS_FLUSH_NS; the next poll wakes up when more will have. */
static int flush_aged(struct convert_ctx *conv, int *wait_ms)
{
	uint64_t wait_ns;
	/* A write error goes back as the drain's do: the caller names its file. */
	int r = kp_writer_flush_aged(conv->e->w, emit_now_ns(), PERF_RINGS_FLUSH_NS, &wait_ns);

	if (r)
		return r;
	if (wait_ns != UINT64_MAX && (wait_ns + 999999) / 1000000 < (uint64_t)*wait_ms)
		*wait_ms = (int)((wait_ns + 999999) / 1000000);
	return 0;
}

int perf_rings_loop(struct perf_rings *s, struct convert_ctx *conv, int extra_fd, int poll_ms,
		    int (*step)(void *ctx, short extra_revents, int *next_poll_ms), void *ctx)
{
	struct pollfd *pfd = calloc((size_t)s->ncpus + 1, sizeof(*pfd));
	int nrings = 0, npfd, r = 0, wait_ms = poll_ms;

	if (!pfd)
		return -ENOMEM;
	for (int c = 0; c < s->ncpus; c++)
		if (s->rings[c].fd >= 0)
			pfd[nrings++] = (struct pollfd){ .fd = s->rings[c].fd, .events = POLLIN };
	npfd = nrings;
	if (extra_fd >= 0)
		pfd[npfd++] = (struct pollfd){ .fd = extra_fd, .events = POLLIN };
	for (;;) {
		int n = poll(pfd, (nfds_t)npfd, wait_ms);

		if (n < 0 && errno != EINTR) {
			r = -errno;
			fprintf(stderr, "%s: poll: %s\n", s->prog, strerror(errno));
			break;
		}
		/* A negative fd is skipped by poll (revents 0), so it is not turned back. */
		for (int i = 0; i < nrings; i++)
			if (pfd[i].fd >= 0 && (pfd[i].revents & (POLLHUP | POLLERR)))
				pfd[i].fd = -pfd[i].fd - 1;
		r = perf_rings_drain(s, conv);
		if (r)
			break;
		wait_ms = poll_ms;
		r = step(ctx, n > 0 && extra_fd >= 0 ? pfd[npfd - 1].revents : 0, &wait_ms);
		if (r) {
			r = r < 0 ? r : 0;
			break;
		}
		r = flush_aged(conv, &wait_ms);
		if (r)
			break;
	}
	free(pfd);
	return r;
}
