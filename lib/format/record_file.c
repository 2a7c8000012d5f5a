/* SPDX-License-Identifier: MIT */
#include "format/record_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* path.old into buf; false when it does not fit. */
static bool old_name(char *buf, size_t len, const char *path)
{
	return (size_t)snprintf(buf, len, "%s.old", path) < len;
}

int record_file_keep_old(const char *path, char *err, size_t errlen)
{
	char old[4200];
	struct stat st;

	/* perf's rule: stat, not lstat (a link to a recording keeps the recording), and only a file with data. */
	if (stat(path, &st) || !S_ISREG(st.st_mode) || !st.st_size)
		return 0;
	if (!old_name(old, sizeof(old), path)) {
		snprintf(err, errlen, "%s: too long a name to keep it as .old", path);
		return -ENAMETOOLONG;
	}
	/* rename replaces an earlier FILE.old in one step; a directory there makes it fail, and nothing moves. */
	if (rename(path, old)) {
		int e = errno;

		snprintf(err, errlen, "cannot keep the earlier %s as %s: %s", path, old, strerror(e));
		return -e;
	}
	return 1;
}

void record_file_undo(const char *path, bool kept_old)
{
	char old[4200];

	unlink(path);
	if (kept_old && old_name(old, sizeof(old), path))
		rename(old, path);
}

int record_file_create(const char *path, bool *kept_old, char *err, size_t errlen)
{
	int r = record_file_keep_old(path, err, errlen), fd;

	*kept_old = r > 0;
	if (r < 0)
		return r;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = errno;

		snprintf(err, errlen, "cannot create %s: %s", path, strerror(e));
		if (*kept_old) /* no new recording: the earlier one goes back where it was */
			record_file_undo(path, true);
		*kept_old = false;
		return -e;
	}
	return fd;
}
