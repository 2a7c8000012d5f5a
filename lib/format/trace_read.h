/* SPDX-License-Identifier: MIT */
/*
 * Reading kvmprof trace files (format: include/kvmprof/trace_file.h) as
 * hostile input: every header field, every record's event id, argument
 * count and vCPU, and the trailer (present, last, its record count right)
 * are checked. Errors are one line: "PATH: offset N: what".
 */
#ifndef KVMPROF_TRACE_READ_H
#define KVMPROF_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kvmprof/trace_file.h"

struct trace_reader {
	FILE *f;
	const char *path;
	uint64_t offset;   /* of the next record */
	uint64_t records;  /* records handed out */
	struct kvmprof_trace_header header;
	struct kvmprof_trace_trailer trailer; /* valid once trace_read_next returned 0 */
};

#define TRACE_READ_ERR_MAX 256

/* Reads and checks the header. 0, or -1 with err set. */
int trace_read_open(struct trace_reader *r, FILE *f, const char *path, char err[TRACE_READ_ERR_MAX]);
/* 1: a record in rec; 0: the trailer, checked, and nothing after it; -1: err set. */
int trace_read_next(struct trace_reader *r, struct kvmprof_trace_record *rec, char err[TRACE_READ_ERR_MAX]);

#endif
