/* SPDX-License-Identifier: MIT */
/*
 * Shared by the libFuzzer harnesses: the input as a file that readers
 * which take a path can open (a memfd, named through /proc/self/fd), and
 * a sink for rendered output.
 */
#ifndef KVMPROF_FUZZ_COMMON_H
#define KVMPROF_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* Writes the bytes into a fresh memfd; its path goes to path. -1 on failure. */
static inline int fuzz_memfd(const uint8_t *data, size_t size, char path[64])
{
	int fd = memfd_create("fuzz-input", MFD_CLOEXEC);
	size_t done = 0;

	if (fd < 0)
		return -1;
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);

		if (n <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)n;
	}
	snprintf(path, 64, "/proc/self/fd/%d", fd);
	return fd;
}

/* /dev/null as a stream: renderers write everything, nothing is kept. */
static inline FILE *fuzz_sink(void)
{
	static FILE *f;

	if (!f)
		f = fopen("/dev/null", "w");
	return f;
}

#endif
