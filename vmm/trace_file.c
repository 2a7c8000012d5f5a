// SPDX-License-Identifier: MIT
/* The --trace subscriber: per-context rings, a writer thread, a trailer with the losses (trace_file_writer.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kvmprof/trace_file.h"
#include "trace.h"
#include "trace_file_writer.h"

/* How often the writer drains: the rings hold far more than this much tracing. */
#define TRACE_FILE_DRAIN_NS 1000000L

/* One context's records: it alone produces (head), the writer alone consumes (tail). */
struct trace_ring {
	uint64_t head, tail;
	uint64_t lost_full;
	struct kvmprof_trace_record rec[TRACE_FILE_RING_RECORDS];
};

struct trace_file {
	struct trace_subscriber sub;
	int fd;
	pthread_t writer;
	bool stop;
	bool write_failed;       /* after the first failed write, records are counted, not written */
	uint64_t records, lost_write;
	struct trace_ring *ring[TRACE_MAX_CTX];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void trace_file_record(void *opaque, const struct trace_ctx *ctx, unsigned int event, const uint64_t *args,
			      unsigned int nargs)
{
	struct trace_file *tf = opaque;
	struct trace_ring *r = ctx->slot < TRACE_MAX_CTX ? tf->ring[ctx->slot] : NULL;
	struct kvmprof_trace_record *rec;
	uint64_t head;

	if (!r)
		return;
	head = r->head;
	if (head - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) >= TRACE_FILE_RING_RECORDS) {
		__atomic_add_fetch(&r->lost_full, 1, __ATOMIC_RELAXED);
		return;
	}
	rec = &r->rec[head % TRACE_FILE_RING_RECORDS];
	*rec = (struct kvmprof_trace_record){ .event = (uint16_t)event, .vcpu = ctx->vcpu, .nargs = nargs,
					      .time_ns = now_ns() };
	memcpy(rec->args, args, nargs * sizeof(args[0]));
	__atomic_store_n(&r->head, head + 1, __ATOMIC_RELEASE);
}

/* Writes n records; counts those that did not make it whole, and stops writing after a failure. */
static void write_records(struct trace_file *tf, const struct kvmprof_trace_record *rec, uint64_t n)
{
	size_t len = n * sizeof(*rec), done = 0;

	while (!tf->write_failed && done < len) {
		ssize_t w = write(tf->fd, (const char *)rec + done, len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			tf->write_failed = true;
		else
			done += (size_t)w;
	}
	tf->records += done / sizeof(*rec);
	tf->lost_write += n - done / sizeof(*rec);
}

static void drain(struct trace_file *tf)
{
	for (unsigned int c = 0; c < TRACE_MAX_CTX; c++) {
		struct trace_ring *r = tf->ring[c];
		uint64_t tail, head;

		if (!r)
			continue;
		tail = r->tail;
		head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		while (tail != head) {
			uint64_t at = tail % TRACE_FILE_RING_RECORDS;
			uint64_t n = head - tail;

			if (n > TRACE_FILE_RING_RECORDS - at)
				n = TRACE_FILE_RING_RECORDS - at; /* up to the ring's end, then from its start */
			write_records(tf, &r->rec[at], n);
			tail += n;
		}
		__atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
	}
}

static void *trace_file_writer(void *arg)
{
	struct trace_file *tf = arg;
	struct timespec ts = { 0, TRACE_FILE_DRAIN_NS };

	while (!__atomic_load_n(&tf->stop, __ATOMIC_ACQUIRE)) {
		drain(tf);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void trace_file_free(struct trace_file *tf)
{
	for (unsigned int c = 0; c < TRACE_MAX_CTX; c++)
		free(tf->ring[c]);
	if (tf->fd >= 0)
		close(tf->fd);
	free(tf);
}

int trace_file_open(struct trace_file **out, const char *path, const bool enabled[KVMPROF_TRACE_EVENT_COUNT],
		    unsigned int ncpus, char *err, size_t errsz)
{
	struct trace_file *tf = calloc(1, sizeof(*tf));
	struct kvmprof_trace_header h = { .magic = KVMPROF_TRACE_MAGIC, .version = KVMPROF_TRACE_VERSION,
					  .record_size = sizeof(struct kvmprof_trace_record),
					  .event_count = KVMPROF_TRACE_EVENT_COUNT, .ncpus = ncpus,
					  .start_ns = now_ns() };
	int rc;

	if (!TRACE_COMPILED_IN) {
		free(tf);
		snprintf(err, errsz, "--trace %s: " TRACE_COMPILED_OUT_MESSAGE, path);
		return -ENOTSUP;
	}
	if (!tf) {
		snprintf(err, errsz, "--trace %s: out of memory", path);
		return -ENOMEM;
	}
	tf->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (tf->fd < 0) {
		rc = -errno;
		snprintf(err, errsz, "--trace %s: %s", path, strerror(-rc));
		trace_file_free(tf);
		return rc;
	}
	/* Rings are zero pages until used: a ring per possible context costs address space only. */
	for (unsigned int c = 0; c < TRACE_MAX_CTX; c++) {
		tf->ring[c] = calloc(1, sizeof(*tf->ring[c]));
		if (!tf->ring[c]) {
			snprintf(err, errsz, "--trace %s: out of memory for the trace buffers", path);
			trace_file_free(tf);
			return -ENOMEM;
		}
	}
	if (write(tf->fd, &h, sizeof(h)) != (ssize_t)sizeof(h)) {
		rc = errno ? -errno : -EIO;
		snprintf(err, errsz, "--trace %s: writing the header: %s", path, strerror(-rc));
		trace_file_free(tf);
		return rc;
	}
	tf->sub.cb = trace_file_record;
	tf->sub.opaque = tf;
	memcpy(tf->sub.events, enabled, sizeof(tf->sub.events));
	rc = -pthread_create(&tf->writer, NULL, trace_file_writer, tf);
	if (rc) {
		snprintf(err, errsz, "--trace %s: starting the writer: %s", path, strerror(-rc));
		trace_file_free(tf);
		return rc;
	}
	pthread_setname_np(tf->writer, "trace-writer");
	rc = trace_subscribe(&tf->sub);
	if (rc) {
		snprintf(err, errsz, "--trace %s: too many subscribers for an event", path);
		__atomic_store_n(&tf->stop, true, __ATOMIC_RELEASE);
		pthread_join(tf->writer, NULL);
		trace_file_free(tf);
		return rc;
	}
	*out = tf;
	return 0;
}

void trace_file_close(struct trace_file *tf, struct trace_file_totals *totals)
{
	struct kvmprof_trace_trailer t = { .magic = KVMPROF_TRACE_END_MAGIC };
	bool at_record_end = true;

	/* After this no record arrives: the last drain below sees them all. */
	trace_unsubscribe(&tf->sub);
	__atomic_store_n(&tf->stop, true, __ATOMIC_RELEASE);
	pthread_join(tf->writer, NULL);
	drain(tf);
	t.records = tf->records;
	t.lost_write = tf->lost_write;
	for (unsigned int c = 0; c < TRACE_MAX_CTX; c++)
		t.lost_full += tf->ring[c]->lost_full;
	/* A failed write may have left part of a record: the trailer goes right after the last whole one. */
	if (tf->write_failed)
		at_record_end = ftruncate(tf->fd, (off_t)(sizeof(struct kvmprof_trace_header) +
							   tf->records * sizeof(struct kvmprof_trace_record))) == 0 &&
				lseek(tf->fd, 0, SEEK_END) >= 0;
	*totals = (struct trace_file_totals){ .records = t.records, .lost_full = t.lost_full,
					      .lost_write = t.lost_write };
	totals->trailer_written = at_record_end && write(tf->fd, &t, sizeof(t)) == (ssize_t)sizeof(t);
	trace_file_free(tf);
}
