/* SPDX-License-Identifier: MIT */
#include "collection/procfs.h"

#include "symbols/kallsyms.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int procfs_parse_maps_line(const char *line, struct procfs_map *m)
{
	char perms[5];
	int pathpos = -1;
	size_t len;

	memset(m, 0, sizeof(*m));
	/* "start-end perms offset major:minor inode   path" */
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 "%n", &m->start, &m->end,
		   perms, &m->pgoff, &m->dev_major, &m->dev_minor, &m->inode, &pathpos) != 7 ||
	    pathpos < 0 || strlen(perms) != 4 || m->end < m->start)
		return -EINVAL;
	m->prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
		  (perms[2] == 'x' ? PROT_EXEC : 0);
	m->flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
	line += pathpos;
	while (*line == ' ' || *line == '\t')
		line++;
	/* The path runs to the end of the line and may hold spaces. */
	len = strcspn(line, "\n");
	if (len >= sizeof(m->path))
		return -EINVAL;
	memcpy(m->path, line, len);
	m->path[len] = 0;
	return 0;
}

int procfs_read_maps(pid_t pid, int (*fn)(const struct procfs_map *m, void *ctx), void *ctx)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	struct procfs_map *m;
	FILE *f;
	int r = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	m = malloc(sizeof(*m));
	if (!m) {
		fclose(f);
		return -ENOMEM;
	}
	while (getline(&line, &cap, f) > 0) {
		/* A line we cannot parse is skipped: one odd mapping must not lose the rest. */
		if (procfs_parse_maps_line(line, m))
			continue;
		r = fn(m, ctx);
		if (r)
			break;
	}
	free(line);
	free(m);
	fclose(f);
	return r;
}

static int read_small_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	close(fd);
	buf[n] = 0;
	return 0;
}

int procfs_read_comm(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[64];
	int r;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	r = read_small_file(path, buf, len);
	if (!r)
		buf[strcspn(buf, "\n")] = 0;
	return r;
}

int procfs_thread_group(pid_t tid, pid_t *tgid)
{
	char path[64], buf[4096], *p;
	long v;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	r = read_small_file(path, buf, sizeof(buf));
	if (r)
		return r == -ENOENT ? -ESRCH : r;
	p = strstr(buf, "\nTgid:");
	if (!p)
		return -EBADMSG;
	v = strtol(p + 6, NULL, 10);
	if (v <= 0 || v > INT32_MAX)
		return -EBADMSG;
	*tgid = (pid_t)v;
	return 0;
}

int procfs_cpu_times(pid_t pid, pid_t tid, uint64_t *ut, uint64_t *st, uint64_t *gt)
{
	char path[64], buf[2048], *p;
	unsigned long long v[41];
	FILE *f;
	size_t n;
	int field = 3, i = 0;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
	if (!p)
		return -EINVAL;
	p++;
	/* Field 3 is the state letter; skip it, then read numbers from field 4 on. */
	while (*p == ' ')
		p++;
	while (*p && *p != ' ')
		p++;
	field = 4;
	while (*p && i < 41) {
		char *end;

		v[i++] = strtoull(p, &end, 10);
		if (end == p)
			break;
		p = end;
		field++;
	}
	/* v[0] is field 4: utime = v[10], stime = v[11], guest_time = v[39]. */
	if (i < 12)
		return -EINVAL;
	*ut = v[10];
	*st = v[11];
	*gt = i >= 40 ? v[39] : 0;
	(void)field;
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int procfs_list_ids(const char *dir, pid_t **out, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	pid_t *ids = NULL;
	size_t cap = 0, cnt = 0;

	*out = NULL;
	*n = 0;
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((de = readdir(d))) {
		char *end;
		long v;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		v = strtol(de->d_name, &end, 10);
		if (*end || v <= 0)
			continue;
		if (cnt == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			pid_t *t = realloc(ids, ncap * sizeof(*ids));

			if (!t) {
				free(ids);
				closedir(d);
				return -ENOMEM;
			}
			ids = t;
			cap = ncap;
		}
		ids[cnt++] = (pid_t)v;
	}
	closedir(d);
	if (cnt)
		qsort(ids, cnt, sizeof(*ids), cmp_pid);
	*out = ids;
	*n = cnt;
	return 0;
}

int procfs_parse_cpu_list(const char *text, int *cpus, int max)
{
	int n = 0;
	const char *p = text;

	while (*p && *p != '\n') {
		char *end;
		long a = strtol(p, &end, 10), b;

		if (end == p || a < 0)
			return -EINVAL;
		/* A CPU number is an int; a larger one (strtol saturates at LONG_MAX) is not a CPU. */
		if (a > INT_MAX)
			return -ERANGE;
		b = a;
		p = end;
		if (*p == '-') {
			p++;
			b = strtol(p, &end, 10);
			if (end == p || b < a)
				return -EINVAL;
			if (b > INT_MAX)
				return -ERANGE;
			p = end;
		}
		for (long c = a; c <= b; c++) {
			if (n == max)
				return -E2BIG;
			cpus[n++] = (int)c;
		}
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			return -EINVAL;
	}
	return n ? n : -EINVAL;
}

int procfs_online_cpus(int *cpus, int max)
{
	char buf[4096];
	int r = read_small_file("/sys/devices/system/cpu/online", buf, sizeof(buf));

	if (r) {
		/* No sysfs (a minimal initramfs): count what the scheduler says. */
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		if (n < 1)
			return r;
		if (n > max)
			return -E2BIG;
		for (int i = 0; i < n; i++)
			cpus[i] = i;
		return (int)n;
	}
	return procfs_parse_cpu_list(buf, cpus, max);
}

bool procfs_kallsyms_hidden(const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t i = 0;

		/* An address is a run of hex digits; any nonzero digit means they are shown. */
		while (p + i < end && isxdigit((unsigned char)p[i])) {
			if (p[i] != '0')
				return false;
			i++;
		}
		p = nl ? nl + 1 : end;
	}
	return true;
}

int procfs_read_kallsyms(char **text, size_t *len, bool *no_addresses)
{
	int fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	size_t cap = 1 << 20, n = 0;
	char *buf;

	*text = NULL;
	*len = 0;
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t got;

		if (n == cap) {
			char *t = realloc(buf, cap * 2);

			if (!t) {
				free(buf);
				close(fd);
				return -ENOMEM;
			}
			buf = t;
			cap *= 2;
		}
		got = read(fd, buf + n, cap - n);
		if (got < 0) {
			int e = -errno;

			if (e == -EINTR)
				continue;
			free(buf);
			close(fd);
			return e;
		}
		if (!got)
			break;
		n += (size_t)got;
	}
	close(fd);
	*text = buf;
	*len = n;
	*no_addresses = procfs_kallsyms_hidden(buf, n);
	return 0;
}

/*
 * Keeps the lines of kallsyms text whose symbol type is text (T, t) or weak
 * (W, w, mostly weak functions), in place. Program counters only ever land
 * in code, so this is all a report needs, and it halves what crosses the
 * agent channel.
 */
size_t procfs_kallsyms_keep_text(char *text, size_t len)
{
	size_t out = 0, i = 0;

	while (i < len) {
		char *nl = memchr(text + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - text) + 1 : len;
		const char *sp = memchr(text + i, ' ', end - i);
		char type = sp && sp + 1 < text + end ? sp[1] : 0;

		if (kallsyms_is_text(type)) {
			memmove(text + out, text + i, end - i);
			out += end - i;
		}
		i = end;
	}
	return out;
}
