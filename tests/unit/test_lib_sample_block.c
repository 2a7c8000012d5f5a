// SPDX-License-Identifier: MIT
/*
 * Compact sample blocks (KP_REC_SAMPLES, sample file 1.6; VM exits in them
 * since 1.7): the coder, the writer's blocks and the reader's checks. Every sample must come back
 * byte for byte where it was written among the other records, and a block
 * that is damaged, cut or lying must stop the stream before any of it is
 * handed out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kvmprof/sample_block.h"
#include "format/sample_file.h"
#include "sample_fixture.h"

#ifndef FIXTURE_DIR
#define FIXTURE_DIR "tests/fixtures/sample-files"
#endif

static char path[64], path2[64];

static int setup(void **state)
{
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/kp-block-XXXXXX");
	snprintf(path2, sizeof(path2), "/tmp/kp-block-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	fd = mkstemp(path2);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	unlink(path2);
	return 0;
}

/* What was given to the writer, in order, to compare with what the reader hands out. */
struct given {
	uint32_t type;
	uint32_t len;
	unsigned char *bytes;
};

struct log {
	struct given *v;
	size_t n, cap;
};

static void log_add(struct log *l, uint32_t type, const void *p, size_t len)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 1024;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		assert_non_null(l->v);
	}
	l->v[l->n] = (struct given){ .type = type, .len = (uint32_t)len, .bytes = malloc(len ? len : 1) };
	assert_non_null(l->v[l->n].bytes);
	memcpy(l->v[l->n].bytes, p, len);
	l->n++;
}

static void log_free(struct log *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].bytes);
	free(l->v);
}

static void add(struct kp_writer *w, struct log *l, uint32_t type, const void *p, size_t len)
{
	assert_int_equal(kp_writer_add(w, type, p, len), 0);
	log_add(l, type, p, len);
}

/* As the VMM's rings give records: whole, sealed with their CRC, in raw (room for the header and payload). */
static void add_raw(struct kp_writer *w, struct log *l, uint32_t type, const void *p, size_t len, unsigned char *raw)
{
	struct kp_rec_header h = { .type = type, .size = (uint32_t)(sizeof(h) + len) };

	h.crc = kp_crc32(kp_crc32(0, &h, 8), p, len);
	memcpy(raw, &h, sizeof(h));
	memcpy(raw + sizeof(h), p, len);
	assert_int_equal(kp_writer_add_raw(w, raw), 0);
	log_add(l, type, p, len);
}

/* Reads `file` and checks it hands out exactly the logged records (payloads padded to 8), then END. */
static void expect_records(const char *file, const struct log *l, uint64_t lost)
{
	struct kp_reader *r;
	struct kp_record rec;
	char err[256] = "";
	size_t i = 0;
	int rc;

	assert_int_equal(kp_reader_open(&r, file, err, sizeof(err)), 0);
	while ((rc = kp_reader_next(r, &rec, err, sizeof(err))) == 1) {
		const struct given *g = &l->v[i];
		uint32_t padded = (g->len + 7) & ~7u;

		assert_true(i < l->n);
		if (rec.type != g->type || rec.payload_len != padded || memcmp(rec.payload, g->bytes, g->len))
			fail_msg("record %zu: type %u len %u, written type %u len %u", i, rec.type, rec.payload_len,
				 g->type, g->len);
		i++;
	}
	if (rc)
		fail_msg("%s", err);
	assert_int_equal(i, l->n);
	assert_int_equal(rec.end->lost, lost);
	assert_int_equal(rec.end->records, l->n);
	kp_reader_close(r);
}

/* Counts the records of each type on the wire (SAMPLES blocks as one), and the largest block's data. */
static void wire_types(const char *file, unsigned *count, size_t ntypes, uint32_t *max_block_len)
{
	FILE *f = fopen(file, "rb");
	struct kp_rec_header h;

	assert_non_null(f);
	memset(count, 0, ntypes * sizeof(*count));
	*max_block_len = 0;
	assert_int_equal(fseek(f, sizeof(struct kp_file_header), SEEK_SET), 0);
	while (fread(&h, sizeof(h), 1, f) == 1) {
		struct kp_rec_samples b;

		if (h.type < ntypes)
			count[h.type]++;
		if (h.type == KP_REC_SAMPLES) {
			assert_int_equal(fread(&b, sizeof(b), 1, f), 1);
			if (b.len > *max_block_len)
				*max_block_len = b.len;
			assert_int_equal(fseek(f, (long)(h.size - sizeof(h) - sizeof(b)), SEEK_CUR), 0);
		} else {
			assert_int_equal(fseek(f, (long)(h.size - sizeof(h)), SEEK_CUR), 0);
		}
	}
	fclose(f);
}

static long file_size(const char *file)
{
	struct stat st;

	assert_int_equal(stat(file, &st), 0);
	return st.st_size;
}

/* One coded sample at a time: every field comes back, and every cut of its bytes is refused. */
static void test_coder_round_trip_and_cuts(void **state)
{
	struct kp_sample_coder enc, dec, tmp;
	union fixture_sample u = { .s = { 0 } }, out;
	unsigned char code[KP_SAMPLE_CODE_MAX];
	uint64_t x = 12345;

	(void)state;
	kp_sample_coder_reset(&enc);
	kp_sample_coder_reset(&dec);
	for (int i = 0; i < 20000; i++) {
		size_t len = fixture_sample_next(&x, &u, i % 3 != 0, true), n;

		assert_true(kp_sample_encodable(&u, len));
		n = kp_sample_encode(&enc, &u, code);
		assert_true(n >= 3 && n <= KP_SAMPLE_CODE_MAX);
		if (i % 50 == 0) {
			for (size_t cut = 0; cut < n; cut++) {
				tmp = dec;
				assert_int_equal(kp_sample_decode(&tmp, code, cut, &out.s), 0);
			}
		}
		assert_int_equal(kp_sample_decode(&dec, code, n, &out.s), n);
		assert_memory_equal(&out, &u, len);
	}
}

/* Samples with nothing the compact form cannot hold exactly are not encodable: they stay SAMPLE records. */
static void test_encodable(void **state)
{
	union fixture_sample u = { .s = { .cpl = KP_CPL_USER, .nr_callchain = 2 } };

	(void)state;
	assert_true(kp_sample_encodable(&u, sizeof(u.s) + 16));
	assert_false(kp_sample_encodable(&u, sizeof(u.s) + 8));  /* chain cut */
	assert_false(kp_sample_encodable(&u, sizeof(u.s) + 24)); /* bytes after the chain */
	assert_false(kp_sample_encodable(&u, 40));
	u.s.nr_callchain = KP_CALLCHAIN_MAX + 1;
	assert_false(kp_sample_encodable(&u, sizeof(u.s) + (KP_CALLCHAIN_MAX + 1) * 8));
	u.s.nr_callchain = 0;
	u.s.reserved = 1;
	assert_false(kp_sample_encodable(&u, sizeof(u.s)));
	u.s.reserved = 0;
	u.s.cpl = 1;
	assert_false(kp_sample_encodable(&u, sizeof(u.s)));
	u.s.cpl = KP_CPL_KERNEL;
	u.s.domain = 2;
	assert_false(kp_sample_encodable(&u, sizeof(u.s)));
}

union fixture_exit {
	struct kp_rec_vm_exit x;
	unsigned char bytes[sizeof(struct kp_rec_vm_exit) + KP_CALLCHAIN_MAX * sizeof(uint64_t)];
};

/* The next VM exit after `x` (the previous one, or zeros), as the VMM gives them; its length in bytes. */
static size_t exit_next(uint64_t *seed, union fixture_exit *u, uint64_t time)
{
	struct kp_rec_vm_exit *x = &u->x;
	uint64_t r = fixture_rand(seed), r2 = fixture_rand(seed), *chain = (uint64_t *)(u->bytes + sizeof(*x)), d;
	bool wild = r % 89 == 0;

	if (r % 3 == 0) {
		x->pid = wild ? (uint32_t)r2 : 1 + (uint32_t)(r2 % 5);
		x->tid = r2 % 4 ? x->pid : x->pid + (uint32_t)(r2 >> 8) % 3;
	}
	if (r % 4 == 0) {
		x->cpu = (uint32_t)(r2 >> 12) % 2;
		x->host_tid = wild ? 0xffffffffu : 2000 + x->cpu;
	}
	if (r % 5 == 0) {
		x->kind = (uint8_t)((r2 >> 16) % (KP_EXIT_KIND_MAX + 1));
		x->size = (uint8_t)(1u << (r2 >> 20) % 4);
		x->detail = wild ? r2 : 0x3f8 + (r2 >> 24) % 8;
	}
	x->time = wild && r2 % 2 ? UINT64_MAX - 3 : time;
	/* Up to the end of time, never past it. */
	d = wild && !(r2 % 2) ? UINT64_MAX : (r2 >> 30) % 20000;
	x->end = x->time + (d < UINT64_MAX - x->time ? d : UINT64_MAX - x->time);
	x->cpl = (r >> 8) % 3 ? KP_CPL_KERNEL : KP_CPL_USER;
	x->ip = wild ? r2 : 0xffffffff81000000ull + (r2 >> 36) % 0x10000;
	x->nr_callchain = (r >> 12) % 4 ? 0 : (uint16_t)(wild ? KP_CALLCHAIN_MAX : 1 + (r2 >> 40) % 6);
	for (unsigned i = 0; i < x->nr_callchain; i++)
		chain[i] = (r >> 14) % 2 && i ? chain[i] : 0xffffffff81100000ull + (fixture_rand(seed) >> 40);
	return sizeof(*x) + x->nr_callchain * sizeof(uint64_t);
}

/* Exits and samples coded alternately through one coder: each comes back, and every cut of an exit is refused. */
static void test_exit_coder_round_trip_and_cuts(void **state)
{
	struct kp_sample_coder enc, dec, tmp;
	union fixture_exit e = { .x = { 0 } }, out;
	union fixture_sample u = { .s = { 0 } }, outs;
	unsigned char code[KP_SAMPLE_CODE_MAX];
	uint64_t x = 4711;

	(void)state;
	kp_sample_coder_reset(&enc);
	kp_sample_coder_reset(&dec);
	for (int i = 0; i < 20000; i++) {
		size_t slen = fixture_sample_next(&x, &u, i % 2, true), len = exit_next(&x, &e, u.s.time + 100), n;

		assert_true(kp_exit_encodable(&e, len));
		n = kp_exit_encode(&enc, &e, code);
		assert_true(n >= 4 && n <= KP_SAMPLE_CODE_MAX);
		assert_true(code[0] & KP_XC_EXIT);
		if (i % 50 == 0) {
			for (size_t cut = 0; cut < n; cut++) {
				tmp = dec;
				assert_int_equal(kp_exit_decode(&tmp, code, cut, &out.x), 0);
			}
			/* A coded exit is not a sample, nor a coded sample an exit. */
			tmp = dec;
			assert_int_equal(kp_sample_decode(&tmp, code, n, &outs.s), 0);
		}
		assert_int_equal(kp_exit_decode(&dec, code, n, &out.x), n);
		assert_memory_equal(&out, &e, len);
		n = kp_sample_encode(&enc, &u, code);
		assert_false(code[0] & KP_XC_EXIT);
		tmp = dec;
		assert_int_equal(kp_exit_decode(&tmp, code, n, &out.x), 0);
		assert_int_equal(kp_sample_decode(&dec, code, n, &outs.s), n);
		assert_memory_equal(&outs, &u, slen);
	}
}

/* Exits the compact form cannot hold exactly stay VM_EXIT records. */
static void test_exit_encodable(void **state)
{
	union fixture_exit e = { .x = { .time = 10, .end = 20, .kind = KP_EXIT_KIND_MAX, .cpl = KP_CPL_USER,
					.nr_callchain = 2 } };

	(void)state;
	assert_true(kp_exit_encodable(&e, sizeof(e.x) + 16));
	assert_false(kp_exit_encodable(&e, sizeof(e.x) + 8));  /* chain cut */
	assert_false(kp_exit_encodable(&e, sizeof(e.x) + 24)); /* bytes after the chain */
	assert_false(kp_exit_encodable(&e, 40));
	e.x.nr_callchain = 0;
	e.x.reserved = 1;
	assert_false(kp_exit_encodable(&e, sizeof(e.x)));
	e.x.reserved = 0;
	e.x.reserved2 = 1;
	assert_false(kp_exit_encodable(&e, sizeof(e.x)));
	e.x.reserved2 = 0;
	e.x.cpl = 1;
	assert_false(kp_exit_encodable(&e, sizeof(e.x)));
	e.x.cpl = KP_CPL_KERNEL;
	e.x.kind = KP_EXIT_KIND_MAX + 1;
	assert_false(kp_exit_encodable(&e, sizeof(e.x)));
	e.x.kind = 0;
	e.x.end = 9;
	assert_false(kp_exit_encodable(&e, sizeof(e.x)));
	e.x.end = 10;
	assert_true(kp_exit_encodable(&e, sizeof(e.x)));
}

/*
 * Randomized samples of every shape, flat, with call chains and from
 * guests, between every other kind of record and through both add and
 * add_raw, come back byte for byte and in order.
 */
static void test_random_stream_round_trip(void **state)
{
	struct log l = { 0 };
	union fixture_sample u = { .s = { 0 } };
	struct kp_rec_comm comm = { .pid = 100, .tid = 100, .comm = "work" };
	struct kp_rec_task task = { .pid = 100, .ppid = 1, .tid = 102, .ptid = 100 };
	struct {
		struct kp_rec_user_stack u;
		uint64_t copy[1];
	} st = { .u = { .pid = 100, .tid = 100, .size = 8 }, .copy = { 0x401000 } };
	union fixture_exit ex = { .x = { 0 } };
	unsigned char raw[sizeof(struct kp_rec_header) + sizeof(ex)]; /* an exit is the larger */
	size_t exits = 0;
	unsigned types[16];
	uint32_t max_len;
	uint64_t x = 777;
	struct kp_writer *w;
	int fd = open(path, O_WRONLY | O_TRUNC);
	size_t samples = 0;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(kp_writer_open(&w, fd, KP_SOURCE_HOST_PROFILER), 0);
	for (int i = 0; i < 60000; i++) {
		uint64_t r = fixture_rand(&x);
		size_t len = fixture_sample_next(&x, &u, (i / 5000) % 2, (i / 10000) % 2);

		if (r % 5 == 0)
			add_raw(w, &l, KP_REC_SAMPLE, &u, len, raw);
		else
			add(w, &l, KP_REC_SAMPLE, &u, len);
		samples++;
		switch (r >> 8 & 511) {
		case 0: comm.time = u.s.time; add(w, &l, KP_REC_COMM, &comm, sizeof(comm)); break;
		case 1: task.time = u.s.time; add(w, &l, KP_REC_FORK, &task, sizeof(task)); break;
		case 2: st.u.time = u.s.time; add(w, &l, KP_REC_USER_STACK, &st, sizeof(st)); break;
		case 3: assert_int_equal(kp_writer_flush(w), 0); break;
		case 5: case 6: case 7: case 8: case 9: case 10: case 11: case 12: {
			/* VM exits, as the VMM's rings give them or added, into the blocks among the samples. */
			size_t xlen = exit_next(&x, &ex, u.s.time + 50);

			if (r % 2)
				add_raw(w, &l, KP_REC_VM_EXIT, &ex, xlen, raw);
			else
				add(w, &l, KP_REC_VM_EXIT, &ex, xlen);
			exits++;
			break;
		}
		case 4: {
			/* A sample the compact form cannot hold: a plain SAMPLE record, in its place. */
			struct kp_rec_sample odd = u.s;

			odd.reserved = 0xdead;
			odd.nr_callchain = 0;
			add(w, &l, KP_REC_SAMPLE, &odd, sizeof(odd));
			samples++;
			break;
		}
		}
	}
	assert_int_equal(kp_writer_samples(w), samples);
	assert_int_equal(kp_writer_close(w, 9, 1), 0);
	close(fd);
	expect_records(path, &l, 9);
	/* Blocks were used and kept within their bounds. */
	wire_types(path, types, 16, &max_len);
	assert_true(types[KP_REC_SAMPLES] > 60000 / KP_SAMPLES_MAX);
	assert_true(types[KP_REC_SAMPLE] > 0 && types[KP_REC_SAMPLE] < 300);
	/* Every exit went into a block. */
	assert_true(exits > 500);
	assert_int_equal(types[KP_REC_VM_EXIT], 0);
	assert_true(max_len <= KP_SAMPLES_BLOCK_BYTES + KP_SAMPLE_CODE_MAX);
	log_free(&l);
}

/* A block closes at KP_SAMPLES_MAX samples; samples alone in the stream still end up in blocks. */
static void test_block_bounds(void **state)
{
	struct kp_rec_sample s = { .pid = 1, .tid = 1, .ip = 0x1000, .period = 1, .cpl = KP_CPL_USER };
	struct log l = { 0 };
	unsigned types[16];
	uint32_t max_len;
	struct kp_writer *w;
	int fd = open(path, O_WRONLY | O_TRUNC);

	(void)state;
	assert_int_equal(kp_writer_open(&w, fd, KP_SOURCE_LINUX_AGENT), 0);
	for (unsigned i = 0; i < 2 * KP_SAMPLES_MAX + 1; i++) {
		s.time += 10000;
		add(w, &l, KP_REC_SAMPLE, &s, sizeof(s));
	}
	assert_int_equal(kp_writer_close(w, 0, 0), 0);
	close(fd);
	expect_records(path, &l, 0);
	wire_types(path, types, 16, &max_len);
	assert_int_equal(types[KP_REC_SAMPLES], 3);
	assert_int_equal(types[KP_REC_SAMPLE], 0);
	/* 2049 samples 10 us apart at one ip: 5 bytes each (flags, 3 of time, ip) after the first of each block. */
	assert_true(file_size(path) < 2049 * 5 + 3 * 64 + 100);
	log_free(&l);
}

/* Megabytes of samples with no flush between them: blocks close as the writer's buffer fills and empties. */
static void test_many_blocks_without_flush(void **state)
{
	union fixture_sample u = { .s = { 0 } };
	struct log l = { 0 };
	uint64_t x = 4242;
	unsigned types[16];
	uint32_t max_len;
	struct kp_writer *w;
	int fd = open(path, O_WRONLY | O_TRUNC);

	(void)state;
	assert_int_equal(kp_writer_open(&w, fd, KP_SOURCE_LINUX_AGENT), 0);
	for (int i = 0; i < 100000; i++) {
		size_t len = fixture_sample_next(&x, &u, true, false);
		add(w, &l, KP_REC_SAMPLE, &u, len);
	}
	assert_int_equal(kp_writer_close(w, 0, 0), 0);
	close(fd);
	assert_true(file_size(path) > 1 << 20);
	expect_records(path, &l, 0);
	wire_types(path, types, 16, &max_len);
	assert_true(types[KP_REC_SAMPLES] >= 100000 / KP_SAMPLES_MAX);
	log_free(&l);
}

/* Files written before 1.6 (tests/fixtures/sample-files) read as the same calls through today's writer. */
static void check_old_file(const char *name, int minor)
{
	char old[256];
	struct kp_reader *a, *b;
	struct kp_record ra, rb;
	char err[256] = "";
	struct kp_writer *w;
	int fd = open(path, O_WRONLY | O_TRUNC), rca, rcb;
	uint64_t n = 0;

	snprintf(old, sizeof(old), "%s/%s", FIXTURE_DIR, name);
	assert_int_equal(kp_writer_open(&w, fd, KP_SOURCE_LINUX_AGENT), 0);
	assert_int_equal(fixture_write(w, minor), 0);
	assert_int_equal(kp_writer_close(w, 3, 1000000), 0);
	close(fd);
	/* The compact form is smaller than the file written a record per sample. */
	assert_true(file_size(path) < file_size(old) / 2);
	assert_int_equal(kp_reader_open(&a, old, err, sizeof(err)), 0);
	assert_int_equal(kp_reader_header(a)->version_minor, minor);
	assert_int_equal(kp_reader_open(&b, path, err, sizeof(err)), 0);
	assert_int_equal(kp_reader_header(b)->version_minor, KP_FILE_VERSION_MINOR);
	do {
		rca = kp_reader_next(a, &ra, err, sizeof(err));
		if (rca < 0)
			fail_msg("%s", err);
		rcb = kp_reader_next(b, &rb, err, sizeof(err));
		if (rcb < 0)
			fail_msg("%s", err);
		assert_int_equal(rca, rcb);
		assert_int_equal(ra.type, rb.type);
		assert_int_equal(ra.payload_len, rb.payload_len);
		assert_memory_equal(ra.payload, rb.payload, ra.payload_len);
		n++;
	} while (rca == 1);
	assert_int_equal(ra.end->records, n - 1);
	assert_true(ra.end->samples > 1000);
	kp_reader_close(a);
	kp_reader_close(b);
}

static void test_old_files_read_the_same(void **state)
{
	(void)state;
	check_old_file("v1.5.data", 5);
	check_old_file("v1.0.data", 0);
}

/* A stream with one block of 200 samples with chains between two other records; the block's offset and size. */
static void write_block_file(long *block_off, long *block_size)
{
	struct kp_rec_comm comm = { .pid = 1, .tid = 1, .comm = "a" };
	union fixture_sample u = { .s = { 0 } };
	uint64_t x = 99;
	struct kp_writer *w;
	int fd = open(path, O_WRONLY | O_TRUNC);

	assert_int_equal(kp_writer_open(&w, fd, KP_SOURCE_LINUX_AGENT), 0);
	assert_int_equal(kp_writer_add(w, KP_REC_COMM, &comm, sizeof(comm)), 0);
	*block_off = (long)(sizeof(struct kp_file_header) + 16 + sizeof(comm));
	for (int i = 0; i < 200; i++) {
		size_t len = fixture_sample_next(&x, &u, true, false);
		assert_int_equal(kp_writer_add(w, KP_REC_SAMPLE, &u, len), 0);
	}
	assert_int_equal(kp_writer_add(w, KP_REC_COMM, &comm, sizeof(comm)), 0);
	assert_int_equal(kp_writer_close(w, 0, 0), 0);
	*block_size = file_size(path) - *block_off - 2 * 16 - (long)sizeof(comm) - (long)sizeof(struct kp_rec_end);
	close(fd);
}

/* How many records come out before the reader stops, and its status. */
static int read_count(const char *file, bool recover, uint64_t *n, char *err, size_t errlen)
{
	struct kp_reader *r;
	struct kp_record rec;
	int rc = kp_reader_open(&r, file, err, errlen);

	*n = 0;
	if (rc)
		return rc;
	if (recover)
		kp_reader_recover(r);
	while ((rc = kp_reader_next(r, &rec, err, errlen)) == 1)
		(*n)++;
	kp_reader_close(r);
	return rc;
}

/* Any flipped byte of a block, or any cut inside it, refuses the stream before a single sample of it. */
static void test_damaged_block_is_refused_whole(void **state)
{
	long off, size;
	uint64_t n;
	char err[256];

	(void)state;
	write_block_file(&off, &size);
	assert_int_equal(read_count(path, false, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 202);
	for (long at = off; at < off + size; at++) {
		FILE *f;
		int c;

		write_block_file(&off, &size);
		f = fopen(path, "r+b");
		assert_non_null(f);
		fseek(f, at, SEEK_SET);
		c = fgetc(f);
		fseek(f, at, SEEK_SET);
		fputc(c ^ (1 << (at % 8)), f);
		fclose(f);
		if (read_count(path, false, &n, err, sizeof(err)) != -EBADMSG)
			fail_msg("flipping byte %ld of the block went unnoticed", at - off);
		/* Recovering: only the COMM before it. */
		assert_int_equal(read_count(path, true, &n, err, sizeof(err)), 0);
		assert_int_equal(n, 1);
	}
	for (long cut = off; cut < off + size; cut++) {
		write_block_file(&off, &size);
		assert_int_equal(truncate(path, cut), 0);
		assert_int_equal(read_count(path, false, &n, err, sizeof(err)), -EBADMSG);
		assert_int_equal(read_count(path, true, &n, err, sizeof(err)), 0);
		assert_int_equal(n, 1);
	}
}

/* A block record (right CRC) with this payload: the reader's message must hold `want`. */
static void expect_bad_block(const void *payload, size_t len, const char *want)
{
	struct kp_writer *w;
	uint64_t n;
	char err[256] = "";
	int fd = open(path, O_WRONLY | O_TRUNC);

	assert_int_equal(kp_writer_open(&w, fd, KP_SOURCE_VMM), 0);
	assert_int_equal(kp_writer_add(w, KP_REC_SAMPLES, payload, len), 0);
	assert_int_equal(kp_writer_close(w, 0, 0), 0);
	close(fd);
	assert_int_equal(read_count(path, false, &n, err, sizeof(err)), -EBADMSG);
	assert_int_equal(n, 0);
	if (!strstr(err, want))
		fail_msg("wanted \"%s\", got \"%s\"", want, err);
}

/* A block with an exit in a file that says 1.6 (before exits went into blocks) is refused. */
static void test_exits_not_in_16_files(void **state)
{
	struct kp_rec_vm_exit x = { .pid = 1, .tid = 1, .time = 5, .end = 9, .kind = KP_EXIT_HLT };
	uint16_t minor = 6;
	struct kp_writer *w;
	uint64_t n;
	char err[256] = "";
	int fd = open(path, O_RDWR | O_TRUNC);

	(void)state;
	assert_int_equal(kp_writer_open(&w, fd, KP_SOURCE_VMM), 0);
	assert_int_equal(kp_writer_add(w, KP_REC_VM_EXIT, &x, sizeof(x)), 0);
	assert_int_equal(kp_writer_close(w, 0, 0), 0);
	assert_int_equal(read_count(path, false, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 1);
	assert_int_equal(pwrite(fd, &minor, sizeof(minor), offsetof(struct kp_file_header, version_minor)),
			 sizeof(minor));
	close(fd);
	assert_int_equal(read_count(path, false, &n, err, sizeof(err)), -EBADMSG);
	assert_int_equal(n, 0);
	assert_non_null(strstr(err, "a version 1.6 file cannot"));
}

static void test_lying_blocks_are_refused(void **state)
{
	struct {
		struct kp_rec_samples h;
		unsigned char d[32];
	} b;
	/* One minimal sample: flags 0, time +0, ip +0. */
	static const unsigned char one[] = { 0, 0, 0 };

	(void)state;
#define BLOCK(count_, ...)                                                     \
	do {                                                                   \
		static const unsigned char d_[] = { __VA_ARGS__ };             \
		memset(&b, 0, sizeof(b));                                      \
		b.h.count = (count_);                                          \
		b.h.len = sizeof(d_);                                          \
		memcpy(b.d, d_, sizeof(d_));                                   \
	} while (0)
	/* The well-formed one first: it reads. */
	BLOCK(1, 0, 0, 0);
	{
		struct kp_writer *w;
		uint64_t n;
		char err[256];
		int fd = open(path, O_WRONLY | O_TRUNC);

		assert_int_equal(kp_writer_open(&w, fd, KP_SOURCE_VMM), 0);
		assert_int_equal(kp_writer_add(w, KP_REC_SAMPLES, &b, sizeof(b.h) + sizeof(one)), 0);
		assert_int_equal(kp_writer_close(w, 0, 0), 0);
		close(fd);
		/* END says 1 record, 0 samples: this block holds one more of each than the writer counted. */
		assert_int_equal(read_count(path, false, &n, err, sizeof(err)), -EBADMSG);
		assert_int_equal(n, 1);
		assert_non_null(strstr(err, "END record's counts disagree"));
	}
	BLOCK(0, 0, 0, 0);
	expect_bad_block(&b, sizeof(b.h) + 3, "count out of range");
	BLOCK(KP_SAMPLES_MAX + 1, 0, 0, 0);
	expect_bad_block(&b, sizeof(b.h) + 3, "count out of range");
	BLOCK(1, 0, 0, 0);
	b.h.len = 100;
	expect_bad_block(&b, sizeof(b.h) + 3, "runs past its record");
	BLOCK(1, 0, 0, 5);
	b.h.len = 2; /* the third byte sits in the padding */
	expect_bad_block(&b, sizeof(b.h) + 3, "padding not zero");
	BLOCK(1, 0, 0, 0);
	expect_bad_block(&b, sizeof(b.h) + 3 + 8, "beyond the padding");
	/* More samples than stated: bytes left over. Fewer: cut short. */
	BLOCK(1, 0, 0, 0, 0, 0, 0);
	expect_bad_block(&b, sizeof(b.h) + 6, "bytes after its last entry");
	BLOCK(3, 0, 0, 0, 0, 0, 0);
	expect_bad_block(&b, sizeof(b.h) + 6, "does not decode");
	/* Exits: a reserved flag; cut short; a kind out of range; an end past 2^64. */
	BLOCK(1, KP_XC_EXIT | KP_XC_RESERVED, 0, 0, 0, 0, 0, 0, 0);
	expect_bad_block(&b, sizeof(b.h) + 8, "VM exit that does not decode");
	BLOCK(1, KP_XC_EXIT, 0, 0, 0, 0, 0, 0, 0);
	b.h.len = 3;
	expect_bad_block(&b, sizeof(b.h) + 8, "VM exit that does not decode");
	BLOCK(1, KP_XC_EXIT | KP_XC_KIND, KP_EXIT_KIND_MAX + 1, 0, 0, 0, 0, 0);
	expect_bad_block(&b, sizeof(b.h) + 8, "VM exit that does not decode");
	BLOCK(1, KP_XC_EXIT, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0, 0, 0, 0);
	b.h.len = 13;
	expect_bad_block(&b, sizeof(b.h) + 16, "VM exit that does not decode");
	/* An 11-byte varint; a 10th byte above 1; an overlong zero. */
	BLOCK(1, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0);
	expect_bad_block(&b, sizeof(b.h) + 13, "does not decode");
	BLOCK(1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0);
	expect_bad_block(&b, sizeof(b.h) + 12, "does not decode");
	BLOCK(1, 0, 0x80, 0x00, 0);
	expect_bad_block(&b, sizeof(b.h) + 4, "does not decode");
	/* A pid, cpu or event above 32 bits. */
	BLOCK(1, KP_SC_TASK, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0, 0);
	expect_bad_block(&b, sizeof(b.h) + 9, "does not decode");
	BLOCK(1, KP_SC_CPU, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0);
	expect_bad_block(&b, sizeof(b.h) + 8, "does not decode");
	BLOCK(1, KP_SC_EVENT, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0);
	expect_bad_block(&b, sizeof(b.h) + 8, "does not decode");
	/* Chains: 128 frames; none; keeping frames the first sample has no predecessor for; keep > nr. */
	BLOCK(1, KP_SC_CHAIN, 0, 0, 0x80, 0x01, 0);
	expect_bad_block(&b, sizeof(b.h) + 6, "does not decode");
	BLOCK(1, KP_SC_CHAIN, 0, 0, 0, 0);
	expect_bad_block(&b, sizeof(b.h) + 5, "does not decode");
	BLOCK(1, KP_SC_CHAIN, 0, 0, 1, 1);
	expect_bad_block(&b, sizeof(b.h) + 5, "does not decode");
	BLOCK(2, KP_SC_CHAIN, 0, 0, 1, 0, 2, KP_SC_CHAIN, 0, 0, 1, 2);
	expect_bad_block(&b, sizeof(b.h) + 12, "does not decode");
	/* A chain whose frames run out. */
	BLOCK(1, KP_SC_CHAIN, 0, 0, 3, 0, 2, 2);
	expect_bad_block(&b, sizeof(b.h) + 8, "does not decode");
#undef BLOCK
}

/* kp_reader_offset stays at a block until its last sample is out: a follower (kvmprof top) takes all of it. */
static void test_offset_covers_the_block(void **state)
{
	struct kp_rec_sample s = { .pid = 1, .tid = 1, .ip = 0x1000, .period = 1 };
	struct kp_writer *w;
	struct kp_reader *r;
	struct kp_record rec;
	char err[256];
	int fd = open(path, O_WRONLY | O_TRUNC);
	uint64_t start = sizeof(struct kp_file_header);

	(void)state;
	assert_int_equal(kp_writer_open(&w, fd, KP_SOURCE_LINUX_AGENT), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(kp_writer_add(w, KP_REC_SAMPLE, &s, sizeof(s)), 0);
	assert_int_equal(kp_writer_flush(w), 0);
	assert_int_equal(kp_reader_open(&r, path, err, sizeof(err)), 0);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(kp_reader_offset(r), start);
		assert_int_equal(kp_reader_next(r, &rec, err, sizeof(err)), 1);
		assert_int_equal(rec.offset, start);
	}
	assert_int_equal(kp_reader_offset(r), (uint64_t)file_size(path));
	kp_reader_close(r);
	kp_writer_abort(w);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_coder_round_trip_and_cuts),
		cmocka_unit_test(test_encodable),
		cmocka_unit_test(test_exit_coder_round_trip_and_cuts),
		cmocka_unit_test(test_exit_encodable),
		cmocka_unit_test_setup_teardown(test_exits_not_in_16_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_stream_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_block_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_blocks_without_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(test_old_files_read_the_same, setup, teardown),
		cmocka_unit_test_setup_teardown(test_damaged_block_is_refused_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lying_blocks_are_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_offset_covers_the_block, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
