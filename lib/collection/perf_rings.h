/* SPDX-License-Identifier: MIT */
/*
 * The perf events of a recording and their rings (perf_ring.h), as both
 * recorders lay them out: one ring per CPU, mapped on the first event
 * opened on that CPU; the other events there send their records to it
 * (PERF_EVENT_IOC_SET_OUTPUT), so N CPUs need N rings whatever the number
 * of events and threads. Every event's fd and id are kept: the fds to
 * enable and disable them together, the ids for convert_record to tell
 * the events' samples apart. Messages go to stderr, prefixed with prog.
 */
#ifndef KVMPROF_PERF_RINGS_H
#define KVMPROF_PERF_RINGS_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collection/convert.h"
#include "collection/perf_ring.h"

struct perf_rings {
	const char *prog;        /* messages start with it: "kvmprof-agent" */
	const int *cpus;         /* the CPU number of each slot, for messages */
	int ncpus;
	struct perf_ring *rings; /* per CPU slot; fd -1 when nothing opened there */
	int *fds;
	size_t nfds, capfds;
	struct convert_id *ids;  /* convert_ctx.ids, once every event is added */
	size_t nids;
};

/* An empty set over cpus[0 .. ncpus), which must outlive it. 0 or -ENOMEM. */
int perf_rings_init(struct perf_rings *s, const char *prog, const int *cpus, int ncpus);
/*
 * Takes an event opened with attr on CPU slot `slot` (s->cpus[slot]):
 * keeps fd (the set closes it, also when this fails) and its id as
 * `event`, with the layout its samples have (attr), and maps a ring of
 * `pages` data pages for it or sends its records to the slot's ring. 0,
 * or -errno after a message.
 */
int perf_rings_add(struct perf_rings *s, int slot, int fd, uint32_t event, const struct perf_event_attr *attr,
		   unsigned pages);
/* PERF_EVENT_IOC_ENABLE (on) or _DISABLE every event. */
void perf_rings_enable(struct perf_rings *s, bool on);
/*
 * Converts whatever the rings hold. A ring with a malformed record has its
 * contents skipped, with a message, and the others still read. 0 or
 * convert_record's -errno.
 */
int perf_rings_drain(struct perf_rings *s, struct convert_ctx *conv);
/* Unmaps the rings, closes the fds; s is empty (and may be freed twice). */
void perf_rings_free(struct perf_rings *s);

/*
 * How long a converted record may wait in the writer's buffer before the
 * loop writes it out: a recording killed with SIGKILL then loses at most
 * this plus one poll period of samples (0.6 s for the agent's 100 ms;
 * issue 31: it lost everything until 256 KiB had gathered, ~30 s at
 * 1 kHz). Two writes a second cost nothing measurable.
 */
#define PERF_RINGS_FLUSH_NS 500000000ull

/*
 * The record loop: polls the rings, and extra_fd when it is >= 0 (a pidfd,
 * the VMM's socket), every `poll_ms` at the latest, drains the rings into
 * conv, then calls step with extra_fd's revents (0 when poll returned
 * nothing) and the next poll's timeout (poll_ms), which it may shorten
 * (work due sooner), then writes out what the writer (conv->e->w) has held
 * for PERF_RINGS_FLUSH_NS (kp_writer_flush_aged), the step's records too.
 * step returns 0 to go on, > 0 to stop, < 0 (-errno) to fail.
 * A ring whose events' tasks all exited reports POLLHUP for good: it is
 * then no longer polled but still drained. 0 or -errno.
 */
int perf_rings_loop(struct perf_rings *s, struct convert_ctx *conv, int extra_fd, int poll_ms,
		    int (*step)(void *ctx, short extra_revents, int *next_poll_ms), void *ctx);

#endif
