// SPDX-License-Identifier: MIT
/*
 * The perf-record conversion both profilers share (lib/collection/convert.c):
 * synthetic perf records in, kvmprof records out through the real writer
 * and the checked reader.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "collection/convert.h"

struct fixture {
	char path[64];
	int fd;
	struct kp_writer *w;
	struct emit_ctx e;
	struct convert_ctx c;
	struct kp_reader *r;
};

static const struct convert_id ids[] = { { 1001, 0, 0 }, { 2002, 1, 0 } };

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	snprintf(f->path, sizeof(f->path), "/tmp/test_lib_convert.XXXXXX");
	f->fd = mkstemp(f->path);
	assert_true(f->fd >= 0);
	assert_int_equal(kp_writer_open(&f->w, f->fd, KP_SOURCE_LINUX_AGENT), 0);
	emit_init(&f->e, f->w);
	f->c.e = &f->e;
	f->c.ids = ids;
	f->c.nids = 2;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (f->r)
		kp_reader_close(f->r);
	emit_fini(&f->e);
	close(f->fd);
	unlink(f->path);
	free(f);
	return 0;
}

/* Ends the stream and opens it for reading. */
static void finish(struct fixture *f)
{
	char err[256];

	assert_int_equal(kp_writer_close(f->w, f->c.lost, 1), 0);
	f->w = NULL;
	assert_int_equal(kp_reader_open(&f->r, f->path, err, sizeof(err)), 0);
}

static void next(struct fixture *f, struct kp_record *rec, uint32_t type)
{
	char err[256];

	assert_int_equal(kp_reader_next(f->r, rec, err, sizeof(err)), 1);
	assert_int_equal(rec->type, type);
}

static void at_end(struct fixture *f)
{
	struct kp_record rec;
	char err[256];

	assert_int_equal(kp_reader_next(f->r, &rec, err, sizeof(err)), 0);
}

/* A record under construction: header, then 64-bit words. */
struct rb {
	uint64_t w[64];
	unsigned n;
};

static void put(struct rb *b, uint64_t v)
{
	b->w[b->n++] = v;
}

static void put2(struct rb *b, uint32_t lo, uint32_t hi)
{
	put(b, (uint64_t)hi << 32 | lo);
}

static void put_str(struct rb *b, const char *s)
{
	size_t len = strlen(s) + 1, words = (len + 7) / 8;

	memset(&b->w[b->n], 0, words * 8);
	memcpy(&b->w[b->n], s, len);
	b->n += words;
}

/* sample_id_all trailer: pid/tid, time, cpu, identifier */
static void put_trailer(struct rb *b, uint32_t pid, uint32_t tid, uint64_t time, uint64_t id)
{
	put2(b, pid, tid);
	put(b, time);
	put2(b, 1, 0);
	put(b, id);
}

static int convert(struct fixture *f, struct rb *b, uint32_t type, uint16_t misc)
{
	struct perf_event_header *h = (struct perf_event_header *)&b->w[0];

	h->type = type;
	h->misc = misc;
	h->size = (uint16_t)(b->n * 8);
	return convert_record(&f->c, h);
}

static void test_sample(void **state)
{
	struct fixture *f = *state;
	struct kp_record rec;
	struct rb b = { .n = 1 };

	put(&b, 2002);              /* identifier: event 1 */
	put(&b, 0x401000);          /* ip */
	put2(&b, 42, 43);           /* pid, tid */
	put(&b, 123456789);         /* time */
	put2(&b, 3, 0);             /* cpu */
	put(&b, 1000000);           /* period */
	assert_int_equal(convert(f, &b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER), 0);

	b.n = 1;
	put(&b, 9999); /* unknown id: event 0 */
	put(&b, 0xffffffff81000010ull);
	put2(&b, 0, 0);
	put(&b, 5);
	put2(&b, 0, 0);
	put(&b, 1);
	assert_int_equal(convert(f, &b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL), 0);
	finish(f);

	next(f, &rec, KP_REC_SAMPLE);
	assert_int_equal(rec.sample->event_id, 1);
	assert_int_equal(rec.sample->ip, 0x401000);
	assert_int_equal(rec.sample->pid, 42);
	assert_int_equal(rec.sample->tid, 43);
	assert_int_equal(rec.sample->time, 123456789);
	assert_int_equal(rec.sample->cpu, 3);
	assert_int_equal(rec.sample->period, 1000000);
	assert_int_equal(rec.sample->cpl, KP_CPL_USER);
	assert_int_equal(rec.sample->nr_callchain, 0);
	next(f, &rec, KP_REC_SAMPLE);
	assert_int_equal(rec.sample->event_id, 0);
	assert_int_equal(rec.sample->cpl, KP_CPL_KERNEL);
	at_end(f);
}

/*
 * A fixed period: the layout asks no PERF_SAMPLE_PERIOD (with it the kernel
 * samples a software event at every occurrence, period 1), and the sample
 * takes its event's period. The call chain that follows is read from where
 * it really is, 8 bytes earlier than in frequency mode.
 */
static void test_fixed_period(void **state)
{
	static const struct convert_id fixed_ids[] = { { 1001, 0, 0 }, { 3003, 1, 100 } };
	struct fixture *f = *state;
	struct perf_event_attr a = { .sample_period = 100 };
	struct kp_record rec;
	struct rb b = { .n = 1 };

	convert_sample_layout(&a, 1, 0);
	assert_false(a.sample_type & PERF_SAMPLE_PERIOD);
	assert_int_equal(convert_fixed_period(&a), 100);
	a = (struct perf_event_attr){ .freq = 1, .sample_freq = 1000 };
	convert_sample_layout(&a, 1, 0);
	assert_true(a.sample_type & PERF_SAMPLE_PERIOD);
	assert_int_equal(convert_fixed_period(&a), 0);

	f->c.ids = fixed_ids;
	f->c.callchain = true;
	put(&b, 3003);     /* identifier: event 1, period 100, none in the sample */
	put(&b, 0x401000); /* ip */
	put2(&b, 42, 42);
	put(&b, 77);       /* time */
	put2(&b, 1, 0);    /* cpu */
	put(&b, 2);        /* nr: the ip, then its caller */
	put(&b, 0x401000);
	put(&b, 0x402000);
	assert_int_equal(convert(f, &b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER), 0);

	b.n = 1;
	put(&b, 1001); /* event 0, frequency mode: the period is in the sample */
	put(&b, 0x401000);
	put2(&b, 42, 42);
	put(&b, 78);
	put2(&b, 1, 0);
	put(&b, 250000); /* period */
	put(&b, 1);
	put(&b, 0x401000);
	assert_int_equal(convert(f, &b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER), 0);

	b.n = 1;
	put(&b, 3003); /* cut short: no room for the fixed fields */
	put(&b, 0x401000);
	put2(&b, 42, 42);
	put(&b, 79);
	assert_int_equal(convert(f, &b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER), 0);
	finish(f);

	next(f, &rec, KP_REC_SAMPLE);
	assert_int_equal(rec.sample->event_id, 1);
	assert_int_equal(rec.sample->time, 77);
	assert_int_equal(rec.sample->cpu, 1);
	assert_int_equal(rec.sample->period, 100);
	assert_int_equal(rec.sample->nr_callchain, 1);
	assert_int_equal(rec.sample->callchain[0], 0x402000);
	next(f, &rec, KP_REC_SAMPLE);
	assert_int_equal(rec.sample->event_id, 0);
	assert_int_equal(rec.sample->period, 250000);
	assert_int_equal(rec.sample->nr_callchain, 0);
	at_end(f);
}

static void test_callchain(void **state)
{
	struct fixture *f = *state;
	struct kp_record rec;
	struct rb b = { .n = 1 };

	f->c.callchain = true;
	put(&b, 1001);
	put(&b, 0xffffffff81000010ull);
	put2(&b, 7, 7);
	put(&b, 1);
	put2(&b, 0, 0);
	put(&b, 1);
	put(&b, 6); /* nr */
	put(&b, (uint64_t)PERF_CONTEXT_KERNEL);
	put(&b, 0xffffffff81000010ull); /* the ip again */
	put(&b, 0xffffffff81000200ull);
	put(&b, (uint64_t)PERF_CONTEXT_USER);
	put(&b, 0x401234);
	put(&b, 0x401500);
	assert_int_equal(convert(f, &b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL), 0);

	/* a chain that claims more entries than the record holds is cut to what is there */
	b.n = 1;
	put(&b, 1001);
	put(&b, 0x401000);
	put2(&b, 7, 7);
	put(&b, 1);
	put2(&b, 0, 0);
	put(&b, 1);
	put(&b, 1000);
	put(&b, (uint64_t)PERF_CONTEXT_USER);
	put(&b, 0x401000);
	put(&b, 0x401777);
	assert_int_equal(convert(f, &b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER), 0);
	finish(f);

	next(f, &rec, KP_REC_SAMPLE);
	assert_int_equal(rec.sample->nr_callchain, 3);
	assert_int_equal(rec.sample->callchain[0], 0xffffffff81000200ull);
	assert_int_equal(rec.sample->callchain[1], 0x401234);
	assert_int_equal(rec.sample->callchain[2], 0x401500);
	next(f, &rec, KP_REC_SAMPLE);
	assert_int_equal(rec.sample->nr_callchain, 1);
	assert_int_equal(rec.sample->callchain[0], 0x401777);
	at_end(f);
}

/* A --call-graph dwarf sample's fixed part and kernel chain (one frame). */
static void put_dwarf_sample_head(struct rb *b, uint32_t tid, uint64_t time)
{
	b->n = 1;
	put(b, 1001);
	put(b, 0x401000); /* ip: user mode */
	put2(b, 7, tid);
	put(b, time);
	put2(b, 0, 0);
	put(b, 1);
	put(b, 2); /* nr: the kernel's chain stops at the user boundary */
	put(b, (uint64_t)PERF_CONTEXT_USER);
	put(b, 0x401000);
}

/* PERF_SAMPLE_REGS_USER and _STACK_USER become a USER_STACK record after the sample, registers in DWARF order. */
static void test_user_stack(void **state)
{
	struct fixture *f = *state;
	struct kp_record rec;
	struct rb b;
	uint64_t copy[4] = { 0x1111, 0x2222, 0x3333, 0x4444 };

	f->c.callchain = true;
	f->c.user_stack = true;
	put_dwarf_sample_head(&b, 8, 100);
	put(&b, PERF_SAMPLE_REGS_ABI_64);
	/* perf's order: ax bx cx dx si di bp sp ip r8..r15; each value is 0x100 + its perf number. */
	for (int i = 0; i < 9; i++)
		put(&b, 0x100 + (uint64_t)i);
	for (int i = 16; i < 24; i++)
		put(&b, 0x100 + (uint64_t)i);
	put(&b, sizeof(copy)); /* size */
	for (int i = 0; i < 4; i++)
		put(&b, copy[i]);
	put(&b, 24); /* dyn_size: the kernel filled three words */
	assert_int_equal(convert(f, &b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER), 0);

	/* No user context (a kernel thread): ABI_NONE, no registers, an empty copy. */
	put_dwarf_sample_head(&b, 9, 200);
	put(&b, PERF_SAMPLE_REGS_ABI_NONE);
	put(&b, 0);
	assert_int_equal(convert(f, &b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL), 0);

	/* A copy whose size runs past the record is not trusted. */
	put_dwarf_sample_head(&b, 10, 300);
	put(&b, PERF_SAMPLE_REGS_ABI_64);
	for (int i = 0; i < KP_USER_REGS; i++)
		put(&b, 0);
	put(&b, 4096);
	put(&b, 0);
	assert_int_equal(convert(f, &b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER), 0);
	finish(f);

	next(f, &rec, KP_REC_SAMPLE);
	assert_int_equal(rec.sample->tid, 8);
	assert_int_equal(rec.sample->nr_callchain, 0);
	next(f, &rec, KP_REC_USER_STACK);
	assert_int_equal(rec.user_stack->pid, 7);
	assert_int_equal(rec.user_stack->tid, 8);
	assert_int_equal(rec.user_stack->time, 100);
	assert_int_equal(rec.user_stack->regs[0], 0x100);  /* rax: ax */
	assert_int_equal(rec.user_stack->regs[1], 0x103);  /* rdx: dx */
	assert_int_equal(rec.user_stack->regs[2], 0x102);  /* rcx: cx */
	assert_int_equal(rec.user_stack->regs[3], 0x101);  /* rbx: bx */
	assert_int_equal(rec.user_stack->regs[6], 0x106);  /* rbp: bp */
	assert_int_equal(rec.user_stack->regs[KP_DWARF_RSP], 0x107);
	assert_int_equal(rec.user_stack->regs[8], 0x110);  /* r8 */
	assert_int_equal(rec.user_stack->regs[15], 0x117); /* r15 */
	assert_int_equal(rec.user_stack->regs[KP_DWARF_RIP], 0x108);
	assert_int_equal(rec.user_stack->size, 24);
	assert_memory_equal(rec.user_stack->data, copy, 24);
	next(f, &rec, KP_REC_SAMPLE);
	assert_int_equal(rec.sample->tid, 9);
	next(f, &rec, KP_REC_SAMPLE);
	assert_int_equal(rec.sample->tid, 10);
	at_end(f);
}

static void test_side_band(void **state)
{
	struct fixture *f = *state;
	struct kp_record rec;
	struct rb b = { .n = 1 };

	/* MMAP2 of an executable, and one of the kernel (pid -1), which is skipped */
	put2(&b, 50, 51);
	put(&b, 0x7f0000000000ull);
	put(&b, 0x2000);
	put(&b, 0x1000);
	put2(&b, 8, 1);
	put(&b, 1234);
	put(&b, 0);
	put2(&b, PROT_READ | PROT_EXEC, MAP_PRIVATE);
	put_str(&b, "/nonexistent/libfoo.so");
	put_trailer(&b, 50, 51, 777, 1001);
	assert_int_equal(convert(f, &b, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER), 0);
	b.w[1] = (uint64_t)UINT32_MAX | (uint64_t)UINT32_MAX << 32;
	assert_int_equal(convert(f, &b, PERF_RECORD_MMAP2, PERF_RECORD_MISC_KERNEL), 0);

	/* COMM at exec */
	b.n = 1;
	put2(&b, 50, 51);
	put_str(&b, "worker");
	put_trailer(&b, 50, 51, 778, 1001);
	assert_int_equal(convert(f, &b, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC), 0);

	/* FORK, EXIT */
	b.n = 1;
	put2(&b, 60, 50);
	put2(&b, 60, 51);
	put(&b, 779);
	put_trailer(&b, 60, 60, 779, 1001);
	assert_int_equal(convert(f, &b, PERF_RECORD_FORK, 0), 0);
	assert_int_equal(convert(f, &b, PERF_RECORD_EXIT, 0), 0);

	/* LOST (id, count) and LOST_SAMPLES (count, trailer) both add up */
	b.n = 1;
	put(&b, 2002);
	put(&b, 5);
	put_trailer(&b, 0, 0, 780, 2002);
	assert_int_equal(convert(f, &b, PERF_RECORD_LOST, 0), 0);
	b.n = 1;
	put(&b, 7);
	put_trailer(&b, 0, 0, 781, 2002);
	assert_int_equal(convert(f, &b, PERF_RECORD_LOST_SAMPLES, 0), 0);
	assert_int_equal(f->c.lost, 12);

	/* kinds a report does not need, and records too short to hold their fields */
	b.n = 1;
	put(&b, 0);
	assert_int_equal(convert(f, &b, PERF_RECORD_THROTTLE, 0), 0);
	assert_int_equal(convert(f, &b, PERF_RECORD_SAMPLE, 0), 0);
	assert_int_equal(convert(f, &b, PERF_RECORD_MMAP2, 0), 0);
	assert_int_equal(convert(f, &b, PERF_RECORD_COMM, 0), 0);
	assert_int_equal(convert(f, &b, PERF_RECORD_FORK, 0), 0);
	assert_int_equal(convert(f, &b, PERF_RECORD_LOST, 0), 0);
	finish(f);

	next(f, &rec, KP_REC_MMAP);
	assert_int_equal(rec.mmap->pid, 50);
	assert_int_equal(rec.mmap->tid, 51);
	assert_int_equal(rec.mmap->time, 777);
	assert_int_equal(rec.mmap->start, 0x7f0000000000ull);
	assert_int_equal(rec.mmap->len, 0x2000);
	assert_int_equal(rec.mmap->pgoff, 0x1000);
	assert_int_equal(rec.mmap->prot, PROT_READ | PROT_EXEC);
	assert_int_equal(rec.mmap->build_id_size, 0); /* no such file */
	assert_string_equal(rec.mmap->filename, "/nonexistent/libfoo.so");
	next(f, &rec, KP_REC_COMM);
	assert_int_equal(rec.comm->pid, 50);
	assert_int_equal(rec.comm->time, 778);
	assert_int_equal(rec.comm->flags, KP_COMM_EXEC);
	assert_string_equal(rec.comm->comm, "worker");
	next(f, &rec, KP_REC_FORK);
	assert_int_equal(rec.task->pid, 60);
	assert_int_equal(rec.task->ppid, 50);
	assert_int_equal(rec.task->ptid, 51);
	assert_int_equal(rec.task->time, 779);
	next(f, &rec, KP_REC_EXIT);
	next(f, &rec, KP_REC_LOST);
	assert_int_equal(rec.lost->event_id, 1);
	assert_int_equal(rec.lost->lost, 5);
	next(f, &rec, KP_REC_LOST);
	assert_int_equal(rec.lost->event_id, 1);
	assert_int_equal(rec.lost->lost, 7);
	at_end(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sample, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fixed_period, setup, teardown),
		cmocka_unit_test_setup_teardown(test_callchain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_side_band, setup, teardown),
		cmocka_unit_test_setup_teardown(test_user_stack, setup, teardown),
	};

	return cmocka_run_group_tests_name("lib_convert", tests, NULL, NULL);
}
