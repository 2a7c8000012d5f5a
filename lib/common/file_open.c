// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/file_open.h"

/*
 * O_NONBLOCK so that opening a FIFO without a writer (or a device that
 * waits for carrier) returns at once; it means nothing for a regular file,
 * which is all that is kept.
 */
#define FILE_OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)

static int keep_if_regular(int fd)
{
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return FILE_NOT_REGULAR;
	}
	return fd;
}

int file_open_regular(const char *path)
{
	return keep_if_regular(open(path, FILE_OPEN_FLAGS));
}

int file_open_root(const char *dir)
{
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int file_open_in_root(int root_fd, const char *path)
{
	/*
	 * RESOLVE_IN_ROOT treats root_fd as "/" for the whole walk, symlinks
	 * included; magic links (/proc/self/fd/N) would escape, so they are refused.
	 */
	struct open_how how = {
		.flags = FILE_OPEN_FLAGS,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int tries = 0;
	long fd;

	/* EAGAIN: a rename raced the walk; the kernel asks for a retry. */
	do
		fd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
	while (fd < 0 && (errno == EAGAIN || errno == EINTR) && ++tries < 16);
	return keep_if_regular((int)fd);
}

const char *file_open_strerror(int rc)
{
	return rc == FILE_NOT_REGULAR ? "not a regular file" : strerror(-rc);
}
