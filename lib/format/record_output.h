/* SPDX-License-Identifier: MIT */
/*
 * The end of a recording's output, as both record commands end theirs:
 * END written, the file closed, its size for the summary line.
 */
#ifndef KVMPROF_RECORD_OUTPUT_H
#define KVMPROF_RECORD_OUTPUT_H

#include <stdint.h>

#include "format/sample_file.h"

/*
 * Writes END (lost, duration_ns) and frees w; then closes *fd unless it is
 * standard output, and sets *fd to -1 either way. *bytes: the file's size
 * when it is a regular file, else what went through the writer. 0 or -errno
 * (the stream is then incomplete).
 */
int record_output_close(struct kp_writer *w, int *fd, uint64_t lost, uint64_t duration_ns, uint64_t *bytes);

#endif
