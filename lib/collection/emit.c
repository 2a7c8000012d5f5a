/* SPDX-License-Identifier: MIT */
#include "collection/emit.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "common/file_open.h"
#include "collection/procfs.h"

struct buildid_entry {
	char *path; /* NULL: free slot */
	uint8_t id[KP_BUILD_ID_MAX];
	uint8_t size;
};

void emit_init(struct emit_ctx *e, struct kp_writer *w)
{
	memset(e, 0, sizeof(*e));
	e->w = w;
}

void emit_fini(struct emit_ctx *e)
{
	for (size_t i = 0; i < e->cache_cap; i++)
		free(e->cache[i].path);
	free(e->cache);
	e->cache = NULL;
	e->cache_cap = e->cache_used = 0;
}

uint64_t emit_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int emit_read_build_id(const char *path, uint8_t id[KP_BUILD_ID_MAX])
{
	const void *note;
	ssize_t n;
	Elf *elf;
	int fd;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = file_open_regular(path);
	if (fd < 0)
		return fd;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		close(fd);
		return -EINVAL;
	}
	n = dwelf_elf_gnu_build_id(elf, &note);
	/* Build-ids are 16 (md5, uuid) or 20 (sha1) bytes; anything longer does not fit the record. */
	if (n <= 0 || n > KP_BUILD_ID_MAX)
		n = 0;
	else
		memcpy(id, note, (size_t)n);
	elf_end(elf);
	close(fd);
	return (int)n;
}

static uint64_t hash_path(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static int cache_grow(struct emit_ctx *e)
{
	size_t ncap = e->cache_cap ? e->cache_cap * 2 : 256;
	struct buildid_entry *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < e->cache_cap; i++) {
		if (!e->cache[i].path)
			continue;
		size_t j = hash_path(e->cache[i].path) & (ncap - 1);

		while (n[j].path)
			j = (j + 1) & (ncap - 1);
		n[j] = e->cache[i];
	}
	free(e->cache);
	e->cache = n;
	e->cache_cap = ncap;
	return 0;
}

/* Looked up once per path: a system-wide recording sees libc mapped hundreds of times. */
static int cached_build_id(struct emit_ctx *e, const char *path, uint8_t id[KP_BUILD_ID_MAX])
{
	size_t j;
	int n;

	if (e->cache_used * 2 >= e->cache_cap && cache_grow(e))
		return 0;
	j = hash_path(path) & (e->cache_cap - 1);
	while (e->cache[j].path) {
		if (!strcmp(e->cache[j].path, path)) {
			memcpy(id, e->cache[j].id, KP_BUILD_ID_MAX);
			return e->cache[j].size;
		}
		j = (j + 1) & (e->cache_cap - 1);
	}
	n = emit_read_build_id(path, id);
	if (n < 0)
		n = 0; /* unreadable now (deleted, another mount namespace): the report goes by path */
	e->cache[j].path = strdup(path);
	if (!e->cache[j].path)
		return n;
	memcpy(e->cache[j].id, id, KP_BUILD_ID_MAX);
	e->cache[j].size = (uint8_t)n;
	e->cache_used++;
	return n;
}

int emit_comm(struct emit_ctx *e, uint32_t pid, uint32_t tid, uint64_t time, const char *comm, bool exec)
{
	struct kp_rec_comm c;

	memset(&c, 0, sizeof(c));
	c.pid = pid;
	c.tid = tid;
	c.time = time;
	c.flags = exec ? KP_COMM_EXEC : 0;
	/* Linux names are at most 15 characters; a longer one is cut, as the kernel does. */
	memcpy(c.comm, comm, strnlen(comm, KP_COMM_MAX - 1));
	e->comms++;
	return kp_writer_add(e->w, KP_REC_COMM, &c, sizeof(c));
}

int emit_mmap(struct emit_ctx *e, uint32_t pid, uint32_t tid, uint64_t time, uint64_t start, uint64_t len,
	      uint64_t pgoff, uint32_t prot, uint32_t flags, const char *filename)
{
	size_t flen = strnlen(filename, KP_PATH_MAX - 1);
	union {
		struct kp_rec_mmap m;
		char bytes[sizeof(struct kp_rec_mmap) + KP_PATH_MAX];
	} u;

	memset(&u.m, 0, sizeof(u.m));
	u.m.pid = pid;
	u.m.tid = tid;
	u.m.time = time;
	u.m.start = start;
	u.m.len = len;
	u.m.pgoff = pgoff;
	u.m.prot = prot;
	u.m.flags = flags;
	memcpy(u.m.filename, filename, flen);
	u.m.filename[flen] = 0;
	if (filename[0] == '/' && !strstr(filename, " (deleted)"))
		u.m.build_id_size = (uint8_t)cached_build_id(e, u.m.filename, u.m.build_id);
	e->mmaps++;
	return kp_writer_add(e->w, KP_REC_MMAP, &u.m, sizeof(u.m) + flen + 1);
}

int emit_task(struct emit_ctx *e, uint32_t type, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid,
	      uint64_t time)
{
	struct kp_rec_task t = { .pid = pid, .ppid = ppid, .tid = tid, .ptid = ptid, .time = time };

	return kp_writer_add(e->w, type, &t, sizeof(t));
}

struct maps_walk {
	struct emit_ctx *e;
	pid_t pid;
	uint64_t time;
};

static int emit_map(const struct procfs_map *m, void *ctx)
{
	struct maps_walk *mw = ctx;

	if (!(m->prot & PROT_EXEC))
		return 0;
	/* perf's name for executable anonymous memory (JIT code). */
	return emit_mmap(mw->e, (uint32_t)mw->pid, (uint32_t)mw->pid, mw->time, m->start, m->end - m->start,
			 m->pgoff, m->prot, m->flags, m->path[0] ? m->path : "//anon");
}

int emit_process(struct emit_ctx *e, pid_t pid, uint64_t time)
{
	char dir[64], comm[64];
	struct maps_walk mw = { .e = e, .pid = pid, .time = time };
	pid_t *tids;
	size_t n;
	int r;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	r = procfs_list_ids(dir, &tids, &n);
	if (r)
		return r;
	for (size_t i = 0; i < n; i++) {
		/* A thread that exits meanwhile just has no COMM. */
		if (procfs_read_comm(pid, tids[i], comm, sizeof(comm)))
			continue;
		r = emit_comm(e, (uint32_t)pid, (uint32_t)tids[i], time, comm, false);
		if (r)
			break;
	}
	free(tids);
	if (r)
		return r;
	r = procfs_read_maps(pid, emit_map, &mw);
	/* Kernel threads have an empty maps file; a process gone now is not an error either. */
	if (r == -ESRCH || r == -EACCES)
		r = 0;
	if (!r)
		e->processes++;
	return r;
}

int emit_all_processes(struct emit_ctx *e, uint64_t time)
{
	pid_t *pids;
	size_t n;
	int r = procfs_list_ids("/proc", &pids, &n);

	if (r)
		return r;
	for (size_t i = 0; i < n && !r; i++) {
		r = emit_process(e, pids[i], time);
		if (r == -ESRCH)
			r = 0;
	}
	free(pids);
	return r;
}

int emit_kallsyms(struct emit_ctx *e, bool *hidden, uint64_t *nsyms, bool text_only)
{
	char *text;
	size_t len;
	int r = procfs_read_kallsyms(&text, &len, hidden);

	*nsyms = 0;
	if (r)
		return r;
	if (text_only)
		len = procfs_kallsyms_keep_text(text, len);
	for (size_t i = 0; i < len; i++)
		*nsyms += text[i] == '\n';
	if (!*hidden)
		r = kp_writer_ksyms(e->w, text, len);
	free(text);
	return r;
}

int emit_meta_system(struct emit_ctx *e)
{
	struct utsname u;
	char host[256], now[32];
	int r;

	if (gethostname(host, sizeof(host)))
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = 0;
	snprintf(now, sizeof(now), "%lld", (long long)time(NULL));
	r = kp_writer_meta(e->w, "hostname", host);
	if (!r && !uname(&u))
		r = kp_writer_meta(e->w, "release", u.release);
	if (!r)
		r = kp_writer_meta(e->w, "time", now);
	return r;
}
