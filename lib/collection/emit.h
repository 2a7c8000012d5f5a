/* SPDX-License-Identifier: MIT */
/*
 * Building kvmprof records that the agent (record, export) and the host
 * profiler (kvmprof record) share: COMM and MMAP (with the mapped file's
 * GNU build-id, read once per path), records synthesized from /proc for
 * processes that already run, kernel symbols, and the common META keys.
 */
#ifndef KVMPROF_EMIT_H
#define KVMPROF_EMIT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "format/sample_file.h"

struct emit_ctx {
	struct kp_writer *w;
	struct buildid_entry *cache; /* open-addressed by path hash */
	size_t cache_cap, cache_used;
	/* counts for summaries */
	uint64_t comms, mmaps, processes;
};

void emit_init(struct emit_ctx *e, struct kp_writer *w);
void emit_fini(struct emit_ctx *e);

int emit_comm(struct emit_ctx *e, uint32_t pid, uint32_t tid, uint64_t time, const char *comm, bool exec);
/* An executable mapping; the build-id is looked up for paths that name a file. */
int emit_mmap(struct emit_ctx *e, uint32_t pid, uint32_t tid, uint64_t time, uint64_t start, uint64_t len,
	      uint64_t pgoff, uint32_t prot, uint32_t flags, const char *filename);
int emit_task(struct emit_ctx *e, uint32_t type, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid,
	      uint64_t time);

/*
 * COMM for each thread and MMAP for each executable mapping of a process
 * that exists now, as perf synthesizes them. -ESRCH when it is gone.
 */
int emit_process(struct emit_ctx *e, pid_t pid, uint64_t time);
/* Every process in /proc; ones that exit meanwhile are skipped. */
int emit_all_processes(struct emit_ctx *e, uint64_t time);

/*
 * KSYMS records from /proc/kallsyms; *hidden tells that the addresses
 * were all zero (then nothing is written), *nsyms counts lines.
 */
int emit_kallsyms(struct emit_ctx *e, bool *hidden, uint64_t *nsyms, bool text_only);

/* META hostname, release and time. */
int emit_meta_system(struct emit_ctx *e);

/* The build-id of an ELF file (exposed for tests): size in bytes, 0 when it has none, or -errno. */
int emit_read_build_id(const char *path, uint8_t id[KP_BUILD_ID_MAX]);

/* CLOCK_MONOTONIC in ns: the clock the agent asks perf to stamp records with. */
uint64_t emit_now_ns(void);

#endif
