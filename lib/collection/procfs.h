/* SPDX-License-Identifier: MIT */
/*
 * What the profilers read from /proc and /sys: process and thread lists,
 * names, executable mappings, kernel symbols, online CPUs. The parsers are
 * separate from the file reading so unit tests feed them text.
 */
#ifndef KVMPROF_PROCFS_H
#define KVMPROF_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kvmprof/sample_format.h"

struct procfs_map {
	uint64_t start, end, pgoff;
	uint32_t prot;  /* PROT_READ | PROT_WRITE | PROT_EXEC */
	uint32_t flags; /* MAP_PRIVATE or MAP_SHARED */
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	char path[KP_PATH_MAX]; /* "" for anonymous memory */
};

/* One line of /proc/PID/maps (with or without its newline). 0 or -EINVAL. */
int procfs_parse_maps_line(const char *line, struct procfs_map *m);

/*
 * Calls fn for every mapping of /proc/PID/maps, in order; stops at fn's
 * first nonzero return and passes it on. 0 or -errno (-ESRCH: no such process).
 */
int procfs_read_maps(pid_t pid, int (*fn)(const struct procfs_map *m, void *ctx), void *ctx);

/* A thread's name from /proc/PID/task/TID/comm, without the newline. */
int procfs_read_comm(pid_t pid, pid_t tid, char *buf, size_t len);

/*
 * The CPU time the kernel has accounted to thread tid of pid (tid 0: the
 * whole process), in clock ticks: utime, stime and guest_time (fields 14,
 * 15 and 43 of .../stat; guest time is part of user time on KVM). 0 or -errno.
 */
int procfs_cpu_times(pid_t pid, pid_t tid, uint64_t *ut, uint64_t *st, uint64_t *gt);

/* The process (thread group) of thread tid, from /proc/TID/status. 0 or -errno (-ESRCH: no such thread). */
int procfs_thread_group(pid_t tid, pid_t *tgid);

/* The numeric entries of a /proc directory ("/proc", "/proc/PID/task"), sorted; free(*out). */
int procfs_list_ids(const char *dir, pid_t **out, size_t *n);

/* A CPU list as in /sys/devices/system/cpu/online ("0-3,6"). Count, or -EINVAL / -E2BIG. */
int procfs_parse_cpu_list(const char *text, int *cpus, int max);
int procfs_online_cpus(int *cpus, int max);

/*
 * All of /proc/kallsyms; *no_addresses is true when every address reads
 * as zero (kernel.kptr_restrict hides them from this user). free(*text).
 */
int procfs_read_kallsyms(char **text, size_t *len, bool *no_addresses);

/* Keeps only text (T, t) and weak (W, w) symbol lines, in place; returns the new length. */
size_t procfs_kallsyms_keep_text(char *text, size_t len);

/* True when every symbol line of a kallsyms text has address 0. */
bool procfs_kallsyms_hidden(const char *text, size_t len);

#endif
