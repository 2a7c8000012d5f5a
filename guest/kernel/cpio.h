/* SPDX-License-Identifier: MIT */
/*
 * cpio "newc" (SVR4, magic 070701/070702) archive reader. Pure code with no
 * dependencies, shared by the guest kernel and the host unit tests
 * (tests/unit/test_cpio.c). The archive is untrusted: every size and offset
 * is checked against the archive length before use.
 */
#ifndef GUEST_CPIO_H
#define GUEST_CPIO_H

#include <stddef.h>
#include <stdint.h>

#define CPIO_HEADER_SIZE 110

enum cpio_error {
	CPIO_OK = 0,
	CPIO_END = 1,       /* cpio_next: TRAILER!!! reached */
	CPIO_ENOENT = -1,   /* cpio_find: no such file */
	CPIO_ETRUNC = -2,   /* header, name or data runs past the end */
	CPIO_EMAGIC = -3,   /* not a newc header */
	CPIO_EFORMAT = -4,  /* bad hex digit, empty or unterminated name */
};

struct cpio_entry {
	const char *name;  /* NUL-terminated, inside the archive */
	size_t namelen;    /* without the NUL */
	const void *data;
	size_t size;
	uint32_t mode;
};

/*
 * Reads the entry at *offset (a multiple of 4) of archive[0..len). On
 * CPIO_OK fills *e and advances *offset to the next header. Returns
 * CPIO_END at the trailer, or a negative cpio_error.
 */
int cpio_next(const void *archive, size_t len, size_t *offset, struct cpio_entry *e);

/*
 * Finds a regular file by path. Leading "/" and "./" are ignored on both
 * sides, so "/bin/hash", "bin/hash" and "./bin/hash" are the same name.
 * Returns CPIO_OK, CPIO_ENOENT, or the error that stopped the walk.
 */
int cpio_find(const void *archive, size_t len, const char *path, struct cpio_entry *e);

#endif
