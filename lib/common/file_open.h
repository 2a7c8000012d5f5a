/* SPDX-License-Identifier: MIT */
/*
 * Opening files named by outside input: a recording, a guest's mappings, a
 * user's option. Two promises:
 * - a name that is not a regular file (a FIFO, a device, a socket, a
 *   directory) is refused, and opening it never blocks;
 * - a guest's file name is resolved inside the guest's root directory:
 *   "..", absolute symlinks and relative symlinks are all taken relative to
 *   that root and can never leave it (openat2 RESOLVE_IN_ROOT, Linux 5.6+).
 */
#ifndef KVMPROF_FILE_OPEN_H
#define KVMPROF_FILE_OPEN_H

#include <errno.h>

/* What file_open_* return for a name that exists but is not a regular file. */
#define FILE_NOT_REGULAR (-EINVAL)

/* A read-only, close-on-exec descriptor of a regular file, or -errno (FILE_NOT_REGULAR). */
int file_open_regular(const char *path);
/* The directory that later lookups resolve inside: a descriptor, or -errno. */
int file_open_root(const char *dir);
/* `path` (guest-absolute or relative) resolved inside root_fd, as file_open_regular. */
int file_open_in_root(int root_fd, const char *path);
/* strerror for the above: "not a regular file" for FILE_NOT_REGULAR. */
const char *file_open_strerror(int rc);

#endif
