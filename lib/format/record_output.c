/* SPDX-License-Identifier: MIT */
#include "format/record_output.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

int record_output_close(struct kp_writer *w, int *fd, uint64_t lost, uint64_t duration_ns, uint64_t *bytes)
{
	struct stat st;
	int r;

	*bytes = kp_writer_bytes(w);
	r = kp_writer_close(w, lost, duration_ns);
	if (r)
		return r;
	if (!fstat(*fd, &st) && S_ISREG(st.st_mode))
		*bytes = (uint64_t)st.st_size;
	if (*fd != 1 && close(*fd)) {
		*fd = -1;
		return -errno;
	}
	*fd = -1;
	return 0;
}
