/* SPDX-License-Identifier: MIT */
/*
 * The trace file kvmprof-vmm --trace writes and kvmprof trace reads.
 * Little-endian (x86 hosts only), in this order:
 *   header   struct kvmprof_trace_header, once
 *   records  struct kvmprof_trace_record, any number; one vCPU's records are
 *            in the order they happened, vCPUs interleave in flush order
 *   trailer  struct kvmprof_trace_trailer, once, last: a file without it was
 *            not finished (the VMM was killed, or the disk filled up)
 * A record's first word is an event id, never the trailer's magic word.
 */
#ifndef KVMPROF_TRACE_FILE_H
#define KVMPROF_TRACE_FILE_H

#include <stdint.h>

#include "kvmprof/trace_events.h"

#define KVMPROF_TRACE_MAGIC "KPTRACE"     /* 8 bytes with its NUL */
#define KVMPROF_TRACE_END_MAGIC 0x444e4554u /* "TEND": larger than any event id */
#define KVMPROF_TRACE_VERSION 1
/* A record's vcpu when no vCPU emitted it (the control socket's thread). */
#define KVMPROF_TRACE_NO_VCPU 0xffffu

struct kvmprof_trace_header {
	char magic[8];
	uint32_t version;
	uint32_t record_size;  /* sizeof(struct kvmprof_trace_record) */
	uint32_t event_count;  /* events the writer knew: ids below it */
	uint32_t ncpus;
	uint64_t start_ns;     /* CLOCK_MONOTONIC when tracing started */
};

struct kvmprof_trace_record {
	uint16_t event;
	uint16_t vcpu;         /* or KVMPROF_TRACE_NO_VCPU */
	uint32_t nargs;
	uint64_t time_ns;      /* CLOCK_MONOTONIC */
	uint64_t args[KVMPROF_TRACE_MAX_ARGS];
};

struct kvmprof_trace_trailer {
	uint32_t magic;        /* KVMPROF_TRACE_END_MAGIC */
	uint32_t reserved;
	uint64_t records;      /* records written before it */
	uint64_t lost_full;    /* records dropped: a vCPU's buffer was full */
	uint64_t lost_write;   /* records dropped: writing the file failed */
};

_Static_assert(sizeof(struct kvmprof_trace_header) == 32, "trace header layout");
_Static_assert(sizeof(struct kvmprof_trace_record) == 64, "trace record layout");
_Static_assert(sizeof(struct kvmprof_trace_trailer) == 32, "trace trailer layout");

#endif
