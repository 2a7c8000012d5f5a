/* SPDX-License-Identifier: MIT */
/*
 * Deterministic streams of every kind of record, for the sample-file tests:
 * tests/fixtures/sample-files/ holds these streams as older writers wrote
 * them (see the README there), and the tests check that today's reader
 * hands out exactly what today's writer is given for the same calls.
 *
 * Samples are pseudo-random (a fixed xorshift seed) but shaped like real
 * ones: a few threads and CPUs, times mostly rising by about a period,
 * user and kernel addresses near each other, call chains that share their
 * outer frames, and now and then an extreme value in every field.
 */
#ifndef SAMPLE_FIXTURE_H
#define SAMPLE_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "format/sample_file.h"

static inline uint64_t fixture_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

union fixture_sample {
	struct kp_rec_sample s;
	unsigned char bytes[sizeof(struct kp_rec_sample) + KP_CALLCHAIN_MAX * sizeof(uint64_t)];
};

/* The next sample after `s` (which holds the previous one, or zeros); returns its length in bytes. */
static inline size_t fixture_sample_next(uint64_t *x, union fixture_sample *u, bool chains, bool guest)
{
	struct kp_rec_sample *s = &u->s;
	uint64_t *chain = (uint64_t *)(u->bytes + sizeof(*s));
	uint64_t r = fixture_rand(x), r2 = fixture_rand(x);
	bool wild = r % 97 == 0;

	if (r % 7 == 0 || !s->pid) {
		s->pid = wild ? (uint32_t)r2 : 100 + (uint32_t)(r2 % 4);
		s->tid = r2 % 3 ? s->pid : s->pid + 1 + (uint32_t)(r2 >> 8) % 3;
	}
	if (r % 5 == 0)
		s->cpu = wild ? 0xffffffffu : (uint32_t)(r2 >> 16) % 4;
	if (r % 31 == 0)
		s->event_id = (uint32_t)(r2 >> 24) % 3;
	if (r % 29 == 0 || !s->period)
		s->period = wild ? UINT64_MAX : 10000 + (r2 >> 32) % 3;
	s->time = wild && r2 % 2 ? (r2 % 3 ? 0 : UINT64_MAX) : s->time + 9000 + (r2 >> 40) % 2000 - (r % 11 == 0 ? 30000 : 0);
	s->cpl = (r >> 8) % 4 == 0 ? KP_CPL_KERNEL : KP_CPL_USER;
	s->domain = guest && (r >> 10) % 3 == 0 ? KP_DOMAIN_GUEST : KP_DOMAIN_NATIVE;
	s->ip = wild ? r2 : s->cpl == KP_CPL_KERNEL ? 0xffffffff81000000ull + (r2 >> 12) % 0x100000
						 : 0x401000 + (r2 >> 12) % 0x3000;
	if (!chains) {
		s->nr_callchain = 0;
	} else {
		/* Keep some outer frames of the last chain, as a program's main and its callers. */
		unsigned keep = s->nr_callchain ? (unsigned)(r2 % (s->nr_callchain + 1u)) : 0;
		unsigned nr = wild ? (unsigned)(r2 % (KP_CALLCHAIN_MAX + 1)) : keep + (unsigned)(r >> 20) % 6;
		uint64_t outer[KP_CALLCHAIN_MAX];

		if (nr > KP_CALLCHAIN_MAX)
			nr = KP_CALLCHAIN_MAX;
		if (keep > nr)
			keep = nr;
		memcpy(outer, chain + s->nr_callchain - keep, keep * sizeof(uint64_t));
		for (unsigned i = 0; i < nr - keep; i++)
			chain[i] = wild && i % 2 ? fixture_rand(x)
					       : s->ip + (fixture_rand(x) % 0x4000) - 0x2000 + i * 0x100;
		memcpy(chain + nr - keep, outer, keep * sizeof(uint64_t));
		s->nr_callchain = (uint16_t)nr;
	}
	return sizeof(*s) + s->nr_callchain * sizeof(uint64_t);
}

/*
 * The fixture stream: every record type of minor version `minor` (0 or 5:
 * what 1.0 and 1.5 had), samples in runs between them. Returns 0 or the
 * first writer error.
 */
static inline int fixture_write(struct kp_writer *w, int minor)
{
	struct kp_rec_event ev = { .id = 0, .type = 1, .period = 10000, .name = "cpu-clock" };
	struct kp_rec_comm comm = { .pid = 100, .tid = 100, .time = 5, .flags = KP_COMM_EXEC, .comm = "work" };
	union {
		struct kp_rec_mmap m;
		char bytes[sizeof(struct kp_rec_mmap) + 32];
	} mm = { .m = { .pid = 100, .tid = 100, .time = 6, .start = 0x400000, .len = 0x10000, .prot = 5 } };
	struct kp_rec_task fork = { .pid = 100, .ppid = 1, .tid = 101, .ptid = 100, .time = 7 };
	const char ksyms[] = "ffffffff81000000 T _stext\nffffffff81000100 t helper\n";
	struct kp_rec_lost lost = { .event_id = 0, .lost = 3 };
	union fixture_sample u = { .s = { 0 } };
	uint64_t x = 0x9e3779b97f4a7c15ull;
	int rc = kp_writer_meta(w, "hostname", "fixture");

	strcpy(mm.m.filename, "/usr/bin/work");
	if (!rc)
		rc = kp_writer_add(w, KP_REC_EVENT, &ev, sizeof(ev));
	ev.id = 1;
	strcpy(ev.name, "cycles");
	if (!rc)
		rc = kp_writer_add(w, KP_REC_EVENT, &ev, sizeof(ev));
	if (!rc)
		rc = kp_writer_add(w, KP_REC_EVENT, &ev, sizeof(ev)); /* ids 0, 1, 1: the reader does not care */
	if (!rc)
		rc = kp_writer_add(w, KP_REC_COMM, &comm, sizeof(comm));
	if (!rc)
		rc = kp_writer_add(w, KP_REC_MMAP, &mm, sizeof(mm.m) + strlen(mm.m.filename) + 1);
	if (!rc)
		rc = minor >= 1 ? kp_writer_ksyms(w, ksyms, strlen(ksyms))
				: kp_writer_add(w, KP_REC_KSYMS, &(struct { struct kp_rec_ksyms k; char t[56]; }){
						.k = { .seq = 0, .len = sizeof(ksyms) - 1 } }, 8 + sizeof(ksyms) - 1);
	for (int run = 0; run < 40 && !rc; run++) {
		int n = run % 4 == 0 ? 1 : (int)(fixture_rand(&x) % 80);

		for (int i = 0; i < n && !rc; i++) {
			size_t len = fixture_sample_next(&x, &u, run % 3 != 0, minor >= 2);
			rc = kp_writer_add(w, KP_REC_SAMPLE, &u, len);
		}
		if (rc)
			break;
		switch (run % 5) {
		case 0:
			rc = kp_writer_add(w, KP_REC_FORK, &fork, sizeof(fork));
			break;
		case 1:
			comm.time = u.s.time;
			rc = kp_writer_add(w, KP_REC_COMM, &comm, sizeof(comm));
			break;
		case 2:
			mm.m.time = u.s.time;
			rc = kp_writer_add(w, KP_REC_MMAP, &mm, sizeof(mm.m) + strlen(mm.m.filename) + 1);
			break;
		case 3:
			rc = kp_writer_add(w, KP_REC_LOST, &lost, sizeof(lost));
			break;
		case 4:
			if (minor >= 5) {
				struct {
					struct kp_rec_user_stack u;
					uint64_t copy[2];
				} st = { .u = { .pid = u.s.pid, .tid = u.s.tid, .time = u.s.time, .size = 16 },
					 .copy = { 0x401234, 0x7ffc0000 } };
				struct {
					struct kp_rec_vm_exit x;
					uint64_t chain[1];
				} ex = { .x = { .pid = 1, .tid = 1, .cpu = 0, .host_tid = 200, .time = u.s.time,
						.end = u.s.time + 5, .ip = 0xffffffff81000010ull, .detail = 0x3f8,
						.kind = KP_EXIT_IO_OUT, .size = 1, .nr_callchain = 1 },
					 .chain = { 0xffffffff81000200ull } };
				st.u.regs[KP_DWARF_RSP] = 0x7ffbfff0;
				rc = kp_writer_add(w, KP_REC_USER_STACK, &st, sizeof(st));
				if (!rc)
					rc = kp_writer_add(w, KP_REC_VM_EXIT, &ex, sizeof(ex));
			} else {
				rc = kp_writer_add(w, KP_REC_EXIT, &fork, sizeof(fork));
			}
			break;
		}
	}
	return rc;
}

#endif
