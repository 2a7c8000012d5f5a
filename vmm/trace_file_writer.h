/* SPDX-License-Identifier: MIT */
/*
 * The default "trace" subscriber: --trace FILE writes every record of the
 * chosen events into a trace file (include/kvmprof/trace_file.h).
 *
 * Each context (vCPU, control thread) fills its own ring; a writer thread
 * drains the rings into the file, so a vCPU never waits for the disk. A
 * record that finds its ring full, or that the file refused, is counted,
 * and the counts go into the trailer written at close.
 */
#ifndef KVMPROF_TRACE_FILE_WRITER_H
#define KVMPROF_TRACE_FILE_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvmprof/trace_events.h"

struct trace_file;

struct trace_file_totals {
	uint64_t records, lost_full, lost_write;
	bool trailer_written;
};

/* Records per context's ring: 512 KiB each, several ms of exits at full speed. */
#define TRACE_FILE_RING_RECORDS 8192u

/*
 * Creates path, writes the header, starts the writer and subscribes to the
 * events set in enabled. 0, or -errno with a one-line reason in err.
 */
int trace_file_open(struct trace_file **out, const char *path, const bool enabled[KVMPROF_TRACE_EVENT_COUNT],
		    unsigned int ncpus, char *err, size_t errsz);
/* Unsubscribes, drains every ring, writes the trailer, closes, frees. */
void trace_file_close(struct trace_file *tf, struct trace_file_totals *totals);

#endif
