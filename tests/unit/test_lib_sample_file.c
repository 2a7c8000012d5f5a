// SPDX-License-Identifier: MIT
/* The sample-file reader and writer: round trips, and every kind of damage the reader must refuse. */
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
#include <zlib.h>

#include "format/sample_file.h"

static char path[64];

static int setup(void **state)
{
	(void)state;
	snprintf(path, sizeof(path), "/tmp/kp-sample-XXXXXX");
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

/* A small but complete stream: meta, event, comm, mmap, 3 samples (one with a callchain), ksyms, lost, end. */
static void write_sample_file(void)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	struct kp_writer *w;
	struct kp_rec_event ev = { .id = 7, .type = 1, .config = 0, .period = 1000 };
	struct kp_rec_comm comm = { .pid = 42, .tid = 42, .time = 1 };
	unsigned char mmap_buf[sizeof(struct kp_rec_mmap) + 16] = { 0 };
	struct kp_rec_mmap *m = (void *)mmap_buf;
	struct {
		struct kp_rec_sample s;
		uint64_t chain[2];
	} sample = { .s = { .event_id = 7, .pid = 42, .tid = 42, .ip = 0x401000, .period = 1000, .cpl = KP_CPL_USER } };
	struct kp_rec_lost lost = { .event_id = 7, .lost = 5 };
	const char ksyms[] = "ffffffff81000000 T _stext\nffffffff81000100 t helper\n";

	assert_true(fd >= 0);
	assert_int_equal(kp_writer_open(&w, fd, KP_SOURCE_LINUX_AGENT), 0);
	assert_int_equal(kp_writer_meta(w, "hostname", "box"), 0);
	strcpy(ev.name, "cycles");
	assert_int_equal(kp_writer_add(w, KP_REC_EVENT, &ev, sizeof(ev)), 0);
	strcpy(comm.comm, "split");
	assert_int_equal(kp_writer_add(w, KP_REC_COMM, &comm, sizeof(comm)), 0);
	m->pid = 42;
	m->start = 0x400000;
	m->len = 0x1000;
	strcpy(m->filename, "/usr/bin/split");
	assert_int_equal(kp_writer_add(w, KP_REC_MMAP, m, sizeof(*m) + strlen(m->filename) + 1), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(kp_writer_add(w, KP_REC_SAMPLE, &sample.s, sizeof(sample.s)), 0);
	sample.s.nr_callchain = 2;
	sample.chain[0] = 0x401234;
	sample.chain[1] = 0x401567;
	assert_int_equal(kp_writer_add(w, KP_REC_SAMPLE, &sample, sizeof(sample)), 0);
	assert_int_equal(kp_writer_ksyms(w, ksyms, strlen(ksyms)), 0);
	assert_int_equal(kp_writer_add(w, KP_REC_LOST, &lost, sizeof(lost)), 0);
	assert_int_equal(kp_writer_samples(w), 3);
	assert_int_equal(kp_writer_close(w, 5, 123456789), 0);
	close(fd);
}

/* Reads the whole file; returns the reader's final status and fills err. */
static int read_all(char *err, size_t errlen, unsigned *types_seen, struct kp_rec_end *end)
{
	struct kp_reader *r;
	struct kp_record rec;
	int rc = kp_reader_open(&r, path, err, errlen);

	if (rc)
		return rc;
	while ((rc = kp_reader_next(r, &rec, err, errlen)) == 1)
		if (types_seen)
			*types_seen |= 1u << rec.type;
	if (rc == 0 && end)
		*end = *rec.end;
	kp_reader_close(r);
	return rc;
}

static void test_round_trip(void **state)
{
	(void)state;
	char err[256] = "";
	unsigned seen = 0;
	struct kp_rec_end end;
	struct kp_reader *r;
	struct kp_record rec;

	write_sample_file();
	assert_int_equal(read_all(err, sizeof(err), &seen, &end), 0);
	assert_int_equal(seen, (1u << KP_REC_META) | (1u << KP_REC_EVENT) | (1u << KP_REC_COMM) |
				       (1u << KP_REC_MMAP) | (1u << KP_REC_SAMPLE) | (1u << KP_REC_KSYMS) |
				       (1u << KP_REC_LOST));
	assert_int_equal(end.samples, 3);
	assert_int_equal(end.lost, 5);
	assert_int_equal(end.records, 9);
	assert_int_equal(end.duration_ns, 123456789);

	/* The callchain and strings come back intact. */
	assert_int_equal(kp_reader_open(&r, path, err, sizeof(err)), 0);
	assert_int_equal(kp_reader_header(r)->source, KP_SOURCE_LINUX_AGENT);
	int n = 0;
	while (kp_reader_next(r, &rec, err, sizeof(err)) == 1) {
		if (rec.type == KP_REC_SAMPLE && ++n == 3) {
			assert_int_equal(rec.sample->nr_callchain, 2);
			assert_int_equal(rec.sample->callchain[1], 0x401567);
		}
		if (rec.type == KP_REC_MMAP)
			assert_string_equal(rec.mmap->filename, "/usr/bin/split");
		if (rec.type == KP_REC_META)
			assert_string_equal(rec.meta->text, "hostname=box");
		if (rec.type == KP_REC_KSYMS)
			assert_memory_equal(rec.ksyms->text, "ffffffff81000000 T _stext\n", 26);
	}
	kp_reader_close(r);
}

static long file_size(void)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

static void patch(long off, const void *bytes, size_t len)
{
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, bytes, len, off), (ssize_t)len);
	close(fd);
}

static void test_every_truncation_is_refused(void **state)
{
	(void)state;
	char err[256];

	write_sample_file();
	long size = file_size();
	/* Every possible cut: none may read as a whole profile. */
	for (long cut = 0; cut < size; cut++) {
		write_sample_file();
		assert_int_equal(truncate(path, cut), 0);
		err[0] = '\0';
		assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
		assert_non_null(strstr(err, path));
	}
	write_sample_file();
	assert_int_equal(truncate(path, size - 40), 0);
	read_all(err, sizeof(err), NULL, NULL);
	assert_non_null(strstr(err, "truncated"));
}

static void test_every_flipped_byte_is_refused(void **state)
{
	(void)state;
	char err[256];

	write_sample_file();
	long size = file_size();
	/* The minor version, source and reserved words of the file header are the only free bytes. */
	for (long off = 0; off < size; off++) {
		if ((off >= 10 && off < 12) || (off >= 16 && off < 24))
			continue;
		write_sample_file();
		FILE *f = fopen(path, "r+b");
		assert_non_null(f);
		fseek(f, off, SEEK_SET);
		int c = fgetc(f);
		fseek(f, off, SEEK_SET);
		fputc(c ^ 0x20, f);
		fclose(f);
		err[0] = '\0';
		int rc = read_all(err, sizeof(err), NULL, NULL);
		if (rc == 0)
			fail_msg("flipping byte %ld went unnoticed", off);
		assert_true(strlen(err) > 0);
	}
}

/* The offsets of the intact file's records, END's last; returns how many. */
static int record_offsets(uint64_t *off, int max)
{
	struct kp_reader *r;
	struct kp_record rec;
	char err[256];
	int n = 0, rc;

	write_sample_file();
	assert_int_equal(kp_reader_open(&r, path, err, sizeof(err)), 0);
	while ((rc = kp_reader_next(r, &rec, err, sizeof(err))) >= 0 && n < max) {
		off[n++] = rec.offset;
		if (rc == 0)
			break;
	}
	kp_reader_close(r);
	return n;
}

/* Reads in recovery mode: the status, how many records came out, and the damage. */
static int read_recovering(struct kp_reader_damage *d, uint64_t *nrec, uint32_t *last_type)
{
	struct kp_reader *r;
	struct kp_record rec = { 0 };
	const struct kp_reader_damage *got;
	char err[256];
	int rc = kp_reader_open(&r, path, err, sizeof(err));

	if (rc)
		return rc;
	kp_reader_recover(r);
	*nrec = 0;
	while ((rc = kp_reader_next(r, &rec, err, sizeof(err))) == 1)
		(*nrec)++;
	*last_type = rec.type;
	got = kp_reader_damage(r);
	memset(d, 0, sizeof(*d));
	if (got)
		*d = *got;
	kp_reader_close(r);
	return rc;
}

/*
 * --recover: a file cut at any byte past its header gives exactly the
 * records that are whole before the cut, and says where the damage is and
 * how many bytes were not used; plain reading refuses it (-EBADMSG).
 */
static void test_every_truncation_is_recovered(void **state)
{
	uint64_t off[32], nrec;
	struct kp_reader_damage d;
	uint32_t last;
	int n = record_offsets(off, 32);
	char err[256];
	long size;

	(void)state;
	assert_true(n > 5);
	write_sample_file();
	size = file_size();
	for (long cut = (long)off[0]; cut < size; cut++) {
		int whole = 0;

		/*
		 * Record i ends where the next record at a greater offset starts
		 * (the samples of a SAMPLES block share its offset and come out
		 * together); END (the last) never fits before a cut.
		 */
		for (int next = whole + 1; next < n && off[next] <= (uint64_t)cut; next++)
			if (off[next] > off[whole])
				whole = next;
		write_sample_file();
		assert_int_equal(truncate(path, cut), 0);
		assert_int_equal(read_all(err, sizeof(err), NULL, NULL), -EBADMSG);
		assert_int_equal(read_recovering(&d, &nrec, &last), 0);
		assert_true(d.damaged);
		assert_true(d.end_missing);
		assert_int_equal(last, 0);
		/* Records 0..whole-1 end at or before the cut: exactly those come out. */
		assert_int_equal(nrec, whole);
		assert_int_equal(d.records, whole);
		assert_int_equal(d.offset, off[whole]);
		assert_int_equal(d.skipped, (uint64_t)cut - off[whole]);
	}
	/* The intact file: no damage. */
	write_sample_file();
	assert_int_equal(read_recovering(&d, &nrec, &last), 0);
	assert_false(d.damaged);
	assert_int_equal(last, KP_REC_END);
	assert_int_equal(nrec, n - 1);
}

/* A corrupt record in the middle: what precedes it is recovered, the rest is counted as skipped. */
static void test_corrupt_record_is_recovered(void **state)
{
	uint64_t off[32], nrec;
	struct kp_reader_damage d;
	uint32_t last;
	int n = record_offsets(off, 32);
	unsigned char c;
	char err[256];
	FILE *f;

	(void)state;
	f = fopen(path, "r+b");
	assert_non_null(f);
	fseek(f, (long)off[4] + 20, SEEK_SET);
	c = (unsigned char)fgetc(f);
	fseek(f, (long)off[4] + 20, SEEK_SET);
	fputc(c ^ 0x01, f);
	fclose(f);
	assert_int_equal(read_all(err, sizeof(err), NULL, NULL), -EBADMSG);
	assert_non_null(strstr(err, "CRC mismatch"));
	assert_int_equal(read_recovering(&d, &nrec, &last), 0);
	assert_int_equal(nrec, 4);
	assert_int_equal(d.offset, off[4]);
	assert_int_equal(d.skipped, (uint64_t)file_size() - off[4]);
	assert_non_null(strstr(d.what, "CRC mismatch"));
	assert_true(d.end_missing);
	(void)n;
}

/* `cat a.data a.data`, or garbage after END: refused; --recover reads the first recording and says so. */
static void test_data_after_end(void **state)
{
	uint64_t nrec;
	struct kp_reader_damage d;
	struct kp_rec_end end;
	uint32_t last;
	char err[256], cmd[512];
	long size;

	(void)state;
	write_sample_file();
	size = file_size();
	snprintf(cmd, sizeof(cmd), "cat %s %s > %s.2 && mv %s.2 %s", path, path, path, path, path);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(read_all(err, sizeof(err), NULL, &end), -EBADMSG);
	assert_non_null(strstr(err, "data after the END record"));
	assert_int_equal(read_recovering(&d, &nrec, &last), 0);
	assert_true(d.damaged);
	assert_false(d.end_missing);
	assert_int_equal(last, KP_REC_END);
	assert_int_equal(nrec, 9);
	assert_int_equal(d.offset, (uint64_t)size);
	assert_int_equal(d.skipped, (uint64_t)size);

	write_sample_file();
	patch(size, "x", 1);
	assert_int_equal(read_all(err, sizeof(err), NULL, &end), -EBADMSG);
	assert_int_equal(read_recovering(&d, &nrec, &last), 0);
	assert_int_equal(d.skipped, 1);
	assert_int_equal(d.offset, (uint64_t)size);
}

static void test_wrong_version_and_magic(void **state)
{
	(void)state;
	char err[256], want[64];
	uint16_t v = 2;

	write_sample_file();
	patch(offsetof(struct kp_file_header, version_major), &v, sizeof(v));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	snprintf(want, sizeof(want), "version 2.%d, this build reads version 1.x", KP_FILE_VERSION_MINOR);
	assert_non_null(strstr(err, want));

	write_sample_file();
	patch(0, "PERFILE2", 8);
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	assert_non_null(strstr(err, "not a kvmprof sample file"));
}

/* A record whose CRC is right but whose contents lie about their own lengths. */
static void write_single_record(uint32_t type, const void *payload, size_t len)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	struct kp_writer *w;

	assert_int_equal(kp_writer_open(&w, fd, KP_SOURCE_VMM), 0);
	assert_int_equal(kp_writer_add(w, type, payload, len), 0);
	assert_int_equal(kp_writer_close(w, 0, 0), 0);
	close(fd);
}

static void test_lying_records_are_refused(void **state)
{
	(void)state;
	char err[256];
	struct kp_rec_sample s = { .nr_callchain = 5, .cpl = KP_CPL_USER };
	struct {
		struct kp_rec_ksyms k;
		char text[8];
	} k = { .k = { .seq = 0, .len = 1000 }, .text = "abc\n" };
	unsigned char mm[sizeof(struct kp_rec_mmap) + 8];
	struct kp_rec_comm c;

	write_single_record(KP_REC_SAMPLE, &s, sizeof(s));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	assert_non_null(strstr(err, "callchain runs past"));

	s.nr_callchain = 0;
	s.domain = 2;
	write_single_record(KP_REC_SAMPLE, &s, sizeof(s));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	assert_non_null(strstr(err, "SAMPLE domain"));

	s.domain = KP_DOMAIN_GUEST;
	s.cpl = 1;
	write_single_record(KP_REC_SAMPLE, &s, sizeof(s));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	assert_non_null(strstr(err, "privilege level"));

	write_single_record(KP_REC_KSYMS, &k, sizeof(k));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	assert_non_null(strstr(err, "KSYMS chunk runs past"));

	memset(mm, 'A', sizeof(mm));
	((struct kp_rec_mmap *)mm)->build_id_size = 0;
	write_single_record(KP_REC_MMAP, mm, sizeof(mm));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	assert_non_null(strstr(err, "not terminated"));

	memset(&c, 'B', sizeof(c));
	write_single_record(KP_REC_COMM, &c, sizeof(c));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	assert_non_null(strstr(err, "COMM name not terminated"));

	write_single_record(KP_REC_META, "novalue", 8);
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	assert_non_null(strstr(err, "key=value"));
}

/* A megabyte of kallsyms crosses several compressed chunks and comes back byte for byte. */
static void test_large_kallsyms_round_trip(void **state)
{
	(void)state;
	size_t cap = 1u << 20, len = 0;
	char *text = malloc(cap), *back = malloc(cap), err[256];
	size_t got = 0;
	int fd = open(path, O_WRONLY | O_TRUNC), rc, chunks = 0;
	struct kp_writer *w;
	struct kp_reader *r;
	struct kp_record rec;

	assert_non_null(text);
	assert_non_null(back);
	for (unsigned i = 0; len + 64 < cap; i++)
		len += (size_t)sprintf(text + len, "ffffffff%08x T function_%u\n", i * 16, i);
	assert_int_equal(kp_writer_open(&w, fd, KP_SOURCE_LINUX_AGENT), 0);
	assert_int_equal(kp_writer_ksyms(w, text, len), 0);
	assert_int_equal(kp_writer_close(w, 0, 0), 0);
	close(fd);
	/* Compressed: far smaller than the text. */
	assert_true(file_size() < (long)len / 3);
	assert_int_equal(kp_reader_open(&r, path, err, sizeof(err)), 0);
	while ((rc = kp_reader_next(r, &rec, err, sizeof(err))) == 1) {
		assert_int_equal(rec.type, KP_REC_KSYMS);
		assert_int_equal(rec.ksyms->seq, chunks++);
		assert_true(got + rec.ksyms->len <= len);
		memcpy(back + got, rec.ksyms->text, rec.ksyms->len);
		got += rec.ksyms->len;
		assert_int_equal(back[got - 1], '\n');
	}
	assert_int_equal(rc, 0);
	kp_reader_close(r);
	assert_true(chunks >= 4);
	assert_int_equal(got, len);
	assert_memory_equal(back, text, len);
	free(text);
	free(back);
}

/*
 * kp_writer_flush_aged bounds what a writer killed mid-stream loses in
 * time: records wait in the buffer until max_age after a call first saw
 * them, then go out whole, so a reader in recovery mode finds them while
 * the writer still runs (issue 31: nothing reached the file until 256 KiB
 * had gathered). Times are made up: the writer reads no clock.
 */
static void test_flush_aged_bounds_the_loss(void **state)
{
	(void)state;
	int fd = open(path, O_WRONLY | O_TRUNC);
	struct kp_writer *w;
	struct kp_rec_sample s = { .event_id = 0, .pid = 42, .tid = 42, .ip = 0x401000, .period = 1000, .cpl = KP_CPL_USER };
	struct kp_reader_damage d;
	uint64_t wait, nrec;
	uint32_t last;
	long header;

	assert_true(fd >= 0);
	assert_int_equal(kp_writer_open(&w, fd, KP_SOURCE_LINUX_AGENT), 0);
	header = file_size();
	/* Nothing waits: nothing to write, and no deadline. */
	assert_int_equal(kp_writer_flush_aged(w, 1000, 500, &wait), 0);
	assert_int_equal(wait, UINT64_MAX);
	for (int i = 0; i < 10; i++) {
		s.time = (uint64_t)i;
		assert_int_equal(kp_writer_add(w, KP_REC_SAMPLE, &s, sizeof(s)), 0);
	}
	assert_int_equal(kp_writer_meta(w, "note", "a record after the samples"), 0);
	/* First seen at 2000: due at 2500, not before. */
	assert_int_equal(kp_writer_flush_aged(w, 2000, 500, &wait), 0);
	assert_int_equal(wait, 500);
	assert_int_equal(kp_writer_flush_aged(w, 2499, 500, &wait), 0);
	assert_int_equal(wait, 1);
	assert_int_equal(file_size(), header);
	for (int i = 10; i < 20; i++) {
		s.time = (uint64_t)i;
		assert_int_equal(kp_writer_add(w, KP_REC_SAMPLE, &s, sizeof(s)), 0);
	}
	/* Due: everything so far goes out, the open block of samples too. */
	assert_int_equal(kp_writer_flush_aged(w, 2500, 500, &wait), 0);
	assert_int_equal(wait, UINT64_MAX);
	assert_true(file_size() > header);
	/* The writer is "killed" here: no END. Recovery reads all 20 samples and the META between them. */
	assert_int_equal(read_recovering(&d, &nrec, &last), 0);
	assert_int_equal(nrec, 21);
	assert_true(d.damaged);
	assert_true(d.end_missing);
	assert_int_equal(d.samples, 20);
	assert_int_equal(d.skipped, 0);
	/* A new wait starts from the next call that sees records, not from the last write. */
	assert_int_equal(kp_writer_add(w, KP_REC_SAMPLE, &s, sizeof(s)), 0);
	assert_int_equal(kp_writer_flush_aged(w, 9000, 500, &wait), 0);
	assert_int_equal(wait, 500);
	assert_int_equal(kp_writer_close(w, 0, 0), 0);
	close(fd);
}

/* A compressed chunk whose stated size is a lie, or which is not zlib at all. */
static void test_lying_compressed_kallsyms_are_refused(void **state)
{
	(void)state;
	char err[256];
	const char *line = "ffffffff81000000 T _stext\n";
	struct {
		struct kp_rec_ksyms_z k;
		unsigned char data[128];
	} z = { 0 };
	uLongf zlen = sizeof(z.data);

	assert_int_equal(compress2(z.data, &zlen, (const Bytef *)line, strlen(line), 6), Z_OK);
	z.k.len = (uint32_t)zlen;
	z.k.raw_len = (uint32_t)strlen(line) + 1;
	write_single_record(KP_REC_KSYMS_Z, &z, sizeof(z));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	assert_non_null(strstr(err, "does not inflate to its stated size"));

	z.k.raw_len = KP_KSYMS_CHUNK_MAX + 1;
	write_single_record(KP_REC_KSYMS_Z, &z, sizeof(z));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	assert_non_null(strstr(err, "beyond the format's chunk size"));

	memset(z.data, 0x55, sizeof(z.data));
	z.k.raw_len = 10;
	write_single_record(KP_REC_KSYMS_Z, &z, sizeof(z));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	assert_non_null(strstr(err, "does not inflate"));
}

/* TASK_LAYOUT (1.3): read back whole; fields outside the task structure refused. */
static void test_task_layout_record(void **state)
{
	struct kp_rec_task_layout l = {
		.kind = KP_LAYOUT_LINUX_X86_64, .current_task = 0x20d40, .per_cpu_offset = 0xffffffff82a1e9a0ULL,
		.task_pid = 2416, .task_tgid = 2420, .task_comm = 2976, .task_comm_size = 16, .task_size = 9728,
	};
	struct kp_reader *r;
	struct kp_record rec;
	char err[256];

	(void)state;
	write_single_record(KP_REC_TASK_LAYOUT, &l, sizeof(l));
	assert_int_equal(kp_reader_open(&r, path, err, sizeof(err)), 0);
	assert_int_equal(kp_reader_next(r, &rec, err, sizeof(err)), 1);
	assert_int_equal(rec.type, KP_REC_TASK_LAYOUT);
	assert_memory_equal(rec.layout, &l, sizeof(l));
	assert_int_equal(kp_reader_next(r, &rec, err, sizeof(err)), 0);
	kp_reader_close(r);

	l.task_comm = 9720;
	write_single_record(KP_REC_TASK_LAYOUT, &l, sizeof(l));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	assert_non_null(strstr(err, "outside the task structure"));
	l.task_comm = 2976;
	l.task_tgid = 0xfffffffe;
	write_single_record(KP_REC_TASK_LAYOUT, &l, sizeof(l));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	l.task_tgid = 2420;
	l.task_comm_size = 0;
	write_single_record(KP_REC_TASK_LAYOUT, &l, sizeof(l));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	l.task_comm_size = 16;
	l.reserved = 1;
	write_single_record(KP_REC_TASK_LAYOUT, &l, sizeof(l));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	write_single_record(KP_REC_TASK_LAYOUT, &l, 40);
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	assert_non_null(strstr(err, "too short"));
}

/* VM_EXIT (1.4): read back whole with its call chain, through kp_record_check too; bad ones refused. */
static void test_vm_exit_record(void **state)
{
	struct {
		struct kp_rec_vm_exit x;
		uint64_t chain[2];
	} v = {
		.x = { .pid = 7, .tid = 7, .cpu = 1, .host_tid = 4242, .time = 1000, .end = 9000, .ip = 0x401000,
		       .detail = 0x3f8, .kind = KP_EXIT_IO_OUT, .cpl = KP_CPL_KERNEL, .size = 1, .nr_callchain = 2 },
		.chain = { 0x401234, 0x401500 },
	};
	struct kp_reader *r;
	struct kp_record rec;
	char err[256];

	(void)state;
	write_single_record(KP_REC_VM_EXIT, &v, sizeof(v));
	assert_int_equal(kp_reader_open(&r, path, err, sizeof(err)), 0);
	assert_int_equal(kp_reader_next(r, &rec, err, sizeof(err)), 1);
	assert_int_equal(rec.type, KP_REC_VM_EXIT);
	assert_memory_equal(rec.vm_exit, &v, sizeof(v));
	assert_int_equal(kp_reader_next(r, &rec, err, sizeof(err)), 0);
	kp_reader_close(r);

	v.x.end = 999;
	write_single_record(KP_REC_VM_EXIT, &v, sizeof(v));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	assert_non_null(strstr(err, "interval ends before it starts"));
	v.x.end = 9000;
	v.x.kind = KP_EXIT_KIND_MAX + 1;
	write_single_record(KP_REC_VM_EXIT, &v, sizeof(v));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	v.x.kind = KP_EXIT_IO_OUT;
	v.x.nr_callchain = 3;
	write_single_record(KP_REC_VM_EXIT, &v, sizeof(v));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	assert_non_null(strstr(err, "callchain runs past"));
	v.x.nr_callchain = 2;
	v.x.cpl = 1;
	write_single_record(KP_REC_VM_EXIT, &v, sizeof(v));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	v.x.cpl = KP_CPL_USER;
	v.x.reserved2 = 1;
	write_single_record(KP_REC_VM_EXIT, &v, sizeof(v));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	write_single_record(KP_REC_VM_EXIT, &v, 48);
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	assert_non_null(strstr(err, "too short"));
}

/* USER_STACK (1.5): read back with its copy; a copy longer than its record or the format, or reserved set, refused. */
static void test_user_stack_record(void **state)
{
	struct {
		struct kp_rec_user_stack u;
		uint64_t copy[3];
	} v = {
		.u = { .pid = 7, .tid = 8, .time = 1000, .size = 24 },
		.copy = { 0x401234, 0x7ffc0000, 0x401500 },
	};
	struct kp_reader *r;
	struct kp_record rec;
	char err[256];

	(void)state;
	v.u.regs[KP_DWARF_RIP] = 0x401000;
	v.u.regs[KP_DWARF_RSP] = 0x7ffbfff0;
	write_single_record(KP_REC_USER_STACK, &v, sizeof(v));
	assert_int_equal(kp_reader_open(&r, path, err, sizeof(err)), 0);
	assert_int_equal(kp_reader_next(r, &rec, err, sizeof(err)), 1);
	assert_int_equal(rec.type, KP_REC_USER_STACK);
	assert_memory_equal(rec.user_stack, &v, sizeof(v));
	assert_int_equal(kp_reader_next(r, &rec, err, sizeof(err)), 0);
	kp_reader_close(r);

	v.u.size = 32;
	write_single_record(KP_REC_USER_STACK, &v, sizeof(v));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	assert_non_null(strstr(err, "USER_STACK copy runs past its record"));
	v.u.size = KP_USER_STACK_MAX + 8;
	write_single_record(KP_REC_USER_STACK, &v, sizeof(v));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	assert_non_null(strstr(err, "larger than the format allows"));
	v.u.size = 24;
	v.u.reserved = 1;
	write_single_record(KP_REC_USER_STACK, &v, sizeof(v));
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	assert_non_null(strstr(err, "reserved word set"));
	write_single_record(KP_REC_USER_STACK, &v, 152);
	assert_true(read_all(err, sizeof(err), NULL, NULL) < 0);
	assert_non_null(strstr(err, "too short"));
}

static void test_unknown_record_types_are_skipped(void **state)
{
	(void)state;
	char err[256];
	unsigned seen = 0;
	uint64_t future[3] = { 1, 2, 3 };

	write_single_record(99, future, sizeof(future));
	assert_int_equal(read_all(err, sizeof(err), &seen, NULL), 0);
	assert_int_equal(seen, 0);
}

static void test_oversized_record_is_refused_by_writer(void **state)
{
	(void)state;
	struct kp_writer *w;
	int fd = open(path, O_WRONLY | O_TRUNC);
	static char big[KP_REC_MAX_SIZE];

	assert_int_equal(kp_writer_open(&w, fd, KP_SOURCE_VMM), 0);
	assert_int_equal(kp_writer_add(w, KP_REC_META, big, sizeof(big)), -E2BIG);
	kp_writer_abort(w);
	close(fd);
}

static void test_crc_matches_zlib(void **state)
{
	(void)state;
	const char *s = "123456789";

	/* The check value of CRC-32/ISO-HDLC, which the guest's own implementation must also give. */
	assert_int_equal(kp_crc32(0, s, 9), 0xcbf43926);
	assert_int_equal(kp_crc32(0, s, 9), crc32(0, (const Bytef *)s, 9));

	/*
	 * libdeflate folds 16 and 64 bytes at a time with PCLMULQDQ: every
	 * length up to 300 at every alignment up to 16, then 1 MiB in pieces
	 * chained through the running value, must give zlib's value.
	 */
	enum { BIG = 1 << 20 };
	unsigned char *buf = malloc(BIG + 16);
	uint32_t x = 12345, want, got;

	assert_non_null(buf);
	for (size_t i = 0; i < BIG + 16; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (unsigned char)(x >> 16);
	}
	for (size_t align = 0; align < 16; align++)
		for (size_t len = 0; len <= 300; len++)
			assert_int_equal(kp_crc32(0, buf + align, len), crc32(0, buf + align, (uInt)len));
	want = (uint32_t)crc32(0, buf, BIG);
	got = 0;
	for (size_t off = 0, step = 1; off < BIG; off += step, step = step * 3 + 1)
		got = kp_crc32(got, buf + off, off + step > BIG ? BIG - off : step);
	assert_int_equal(got, want);
	assert_int_equal(kp_crc32(0, buf, BIG), want);
	free(buf);
}

/* Reads every record before offset `until` (kp_reader_offset); the number read. */
static int read_until(struct kp_reader *r, uint64_t until)
{
	struct kp_record rec;
	char err[256];
	int n = 0;

	while (kp_reader_offset(r) < until) {
		assert_int_equal(kp_reader_next(r, &rec, err, sizeof(err)), 1);
		assert_int_equal(rec.type, KP_REC_SAMPLE);
		n++;
	}
	return n;
}

/*
 * A stream read while it is written (kvmprof top): after each flush the
 * reader takes what is there, up to the bytes written, and never reads at
 * the end (which would be a stream cut short); later records follow.
 */
static void test_follow_a_growing_stream(void **state)
{
	struct kp_rec_sample s = { .event_id = 1, .pid = 3, .tid = 3, .ip = 0x1000, .period = 1 };
	int fd = open(path, O_WRONLY | O_TRUNC);
	struct kp_writer *w;
	struct kp_reader *r;
	struct stat st;
	char err[256];

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(kp_writer_open(&w, fd, KP_SOURCE_HOST_PROFILER), 0);
	assert_int_equal(kp_reader_open(&r, path, err, sizeof(err)), 0);
	assert_int_equal(kp_reader_offset(r), sizeof(struct kp_file_header));
	for (int window = 0; window < 3; window++) {
		for (int i = 0; i <= window; i++)
			assert_int_equal(kp_writer_add(w, KP_REC_SAMPLE, &s, sizeof(s)), 0);
		assert_int_equal(kp_writer_flush(w), 0);
		assert_int_equal(fstat(fd, &st), 0);
		assert_int_equal(read_until(r, (uint64_t)st.st_size), window + 1);
		assert_int_equal(kp_reader_offset(r), (uint64_t)st.st_size);
	}
	/* Nothing new: nothing read. */
	assert_int_equal(read_until(r, (uint64_t)st.st_size), 0);
	kp_reader_close(r);
	kp_writer_abort(w);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_truncation_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_flipped_byte_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_truncation_is_recovered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_record_is_recovered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_data_after_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_version_and_magic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lying_records_are_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_large_kallsyms_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lying_compressed_kallsyms_are_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_layout_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vm_exit_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_user_stack_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_record_types_are_skipped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oversized_record_is_refused_by_writer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_follow_a_growing_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flush_aged_bounds_the_loss, setup, teardown),
		cmocka_unit_test(test_crc_matches_zlib),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
