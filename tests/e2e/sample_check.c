// SPDX-License-Identifier: MIT
/*
 * sample_check FILE [-s]: checks a sample file the bundled guest's agent
 * wrote, through the one reader (lib/format/sample_file.c), beyond what the reader
 * itself checks: written by the bundled guest, one EVENT, every sampled pid
 * named by a COMM, every user sample inside an MMAP of its pid, every
 * kernel sample inside the kernel's MMAP (KP_PID_KERNEL).
 *
 * Prints one line per process, "proc PID COMM PATH samples=N", then
 * "check: ok records=N samples=N kernel=N user=N lost=N exits=N"; with -s
 * also "sample PID CPL IP" per sample (for the e2e test to symbolize with
 * addr2line). Exit 0, or 1 with "check: FAIL ..." on stderr.
 *
 * Built by make (tests/tests.mk), linked with libkvmprof.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/sample_file.h"

#define MAX_PIDS 256

struct map {
	uint32_t pid;
	uint64_t start, len;
	char path[128];
	char comm[KP_COMM_MAX + 4];
	bool has_comm, has_map;
	unsigned long samples;
};

static struct map maps[MAX_PIDS + 1]; /* the last: the kernel */
static int nmaps;

static struct map *find(uint32_t pid, bool create)
{
	for (int i = 0; i < nmaps; i++)
		if (maps[i].pid == pid)
			return &maps[i];
	if (!create || nmaps == MAX_PIDS)
		return NULL;
	maps[nmaps].pid = pid;
	return &maps[nmaps++];
}

#define FAIL(...) (fprintf(stderr, "check: FAIL " __VA_ARGS__), fputc('\n', stderr), 1)

int main(int argc, char **argv)
{
	struct kp_reader *r;
	struct kp_record rec;
	char err[512];
	bool dump = argc > 2 && !strcmp(argv[2], "-s");
	unsigned long records = 0, samples = 0, kernel = 0, user = 0, lost = 0, exits = 0, events = 0;
	struct map *kmap = &maps[MAX_PIDS];
	int rc;

	if (argc < 2) {
		fprintf(stderr, "usage: sample_check FILE [-s]\n");
		return 2;
	}
	if (kp_reader_open(&r, argv[1], err, sizeof(err))) {
		fprintf(stderr, "check: FAIL %s\n", err);
		return 1;
	}
	if (kp_reader_header(r)->source != KP_SOURCE_BUNDLED_GUEST)
		return FAIL("source %u, expected %u (bundled guest)", kp_reader_header(r)->source,
			    KP_SOURCE_BUNDLED_GUEST);
	while ((rc = kp_reader_next(r, &rec, err, sizeof(err))) == 1) {
		records++;
		if (rec.type == KP_REC_EVENT) {
			events++;
		} else if (rec.type == KP_REC_COMM) {
			struct map *m = find(rec.comm->pid, true);
			if (!m)
				return FAIL("more than %d processes", MAX_PIDS);
			m->has_comm = true;
			memcpy(m->comm, rec.comm->comm, sizeof(m->comm));
		} else if (rec.type == KP_REC_MMAP) {
			struct map *m = rec.mmap->pid == KP_PID_KERNEL ? kmap : find(rec.mmap->pid, true);
			if (!m)
				return FAIL("more than %d processes", MAX_PIDS);
			m->pid = rec.mmap->pid;
			m->has_map = true;
			m->start = rec.mmap->start;
			m->len = rec.mmap->len;
			snprintf(m->path, sizeof(m->path), "%s", rec.mmap->filename);
		} else if (rec.type == KP_REC_SAMPLE) {
			const struct kp_rec_sample *s = rec.sample;
			struct map *m = find(s->pid, false);
			samples++;
			if (s->event_id != 0)
				return FAIL("sample of event %u, only event 0 exists", s->event_id);
			if (!m || !m->has_comm)
				return FAIL("sample of pid %u without a COMM before it (ip 0x%lx)", s->pid,
					    (unsigned long)s->ip);
			if (s->cpl == KP_CPL_KERNEL) {
				kernel++;
				if (!kmap->has_map || s->ip - kmap->start >= kmap->len)
					return FAIL("kernel sample at 0x%lx outside the kernel's MMAP (pid %u)",
						    (unsigned long)s->ip, s->pid);
			} else {
				user++;
				if (!m->has_map || s->ip - m->start >= m->len)
					return FAIL("user sample at 0x%lx outside pid %u's MMAP", (unsigned long)s->ip,
						    s->pid);
			}
			m->samples++;
			if (dump)
				printf("sample %u %u 0x%lx %u\n", s->pid, s->cpl, (unsigned long)s->ip, s->cpu);
		} else if (rec.type == KP_REC_EXIT) {
			exits++;
		} else if (rec.type == KP_REC_LOST) {
			lost += rec.lost->lost;
		}
	}
	kp_reader_close(r);
	if (rc < 0) {
		fprintf(stderr, "check: FAIL %s\n", err);
		return 1;
	}
	if (events != 1)
		return FAIL("%lu EVENT records, expected 1", events);
	if (!kmap->has_map || strcmp(kmap->path, "/kernel.elf"))
		return FAIL("no MMAP of /kernel.elf for pid KP_PID_KERNEL");
	for (int i = 0; i < nmaps; i++)
		printf("proc %u %s %s samples=%lu\n", maps[i].pid, maps[i].comm,
		       maps[i].has_map ? maps[i].path : "-", maps[i].samples);
	printf("check: ok records=%lu samples=%lu kernel=%lu user=%lu lost=%lu exits=%lu\n", records,
	       samples, kernel, user, lost, exits);
	return 0;
}
