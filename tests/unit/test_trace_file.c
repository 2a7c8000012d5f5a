// SPDX-License-Identifier: MIT
/* The --trace file: the VMM's writer against kvmprof's reader, the losses in the trailer, and the reader's refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "kvmprof/trace_file.h"
#include "trace.h"
#include "trace_file_writer.h"
#include "format/trace_read.h"

static char path[64];

static int setup(void **state)
{
	(void)state;
	snprintf(path, sizeof(path), "/tmp/kp-trace-XXXXXX");
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

static bool all_events[KVMPROF_TRACE_EVENT_COUNT];

static void enable_all(void)
{
	for (unsigned int i = 0; i < KVMPROF_TRACE_EVENT_COUNT; i++)
		all_events[i] = true;
}

/* Reads the whole file: its records into out (up to max), the trailer; returns the reader's last result. */
static int read_all(struct kvmprof_trace_record *out, size_t max, size_t *n, struct kvmprof_trace_trailer *trailer,
		    char err[TRACE_READ_ERR_MAX])
{
	FILE *f = fopen(path, "rb");
	struct trace_reader r;
	struct kvmprof_trace_record rec;
	int rc;

	assert_non_null(f);
	*n = 0;
	rc = trace_read_open(&r, f, path, err);
	if (!rc) {
		while ((rc = trace_read_next(&r, &rec, err)) == 1) {
			if (*n < max)
				out[*n] = rec;
			(*n)++;
		}
		if (rc == 0)
			*trailer = r.trailer;
	}
	fclose(f);
	return rc;
}

struct emitter {
	uint16_t vcpu;
	unsigned int count;
};

static void *emit_pio(void *arg)
{
	struct emitter *e = arg;
	struct trace_ctx ctx;

	if (trace_ctx_register(&ctx, e->vcpu, NULL, NULL))
		return NULL;
	TRACE(vcpu_start);
	for (unsigned int i = 0; i < e->count; i++)
		TRACE(pio, 0x3f8, 1, 1, i);
	TRACE(vcpu_stop);
	trace_ctx_unregister(&ctx);
	return NULL;
}

/* Two vCPUs write records; every one comes back, each vCPU's in order, with its time and arguments. */
static void test_round_trip_two_vcpus(void **state)
{
	static struct kvmprof_trace_record recs[4000];
	struct emitter e[2] = { { 0, 1000 }, { 1, 1500 } };
	struct trace_file_totals totals;
	struct kvmprof_trace_trailer trailer;
	struct trace_file *tf;
	char err[TRACE_READ_ERR_MAX];
	pthread_t t[2];
	size_t n;
	uint64_t next[2] = { 0, 0 }, last_time[2] = { 0, 0 };
	unsigned int starts[2] = { 0 }, stops[2] = { 0 };

	(void)state;
	enable_all();
	assert_int_equal(trace_file_open(&tf, path, all_events, 2, err, sizeof(err)), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, emit_pio, &e[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	trace_file_close(tf, &totals);
	assert_true(totals.trailer_written);
	assert_int_equal(totals.lost_full + totals.lost_write, 0);
	assert_int_equal(totals.records, 1000 + 1500 + 4);

	assert_int_equal(read_all(recs, 4000, &n, &trailer, err), 0);
	assert_int_equal(n, 2504);
	assert_int_equal(trailer.records, 2504);
	assert_int_equal(trailer.lost_full + trailer.lost_write, 0);
	for (size_t i = 0; i < n; i++) {
		const struct kvmprof_trace_record *r = &recs[i];

		assert_true(r->vcpu < 2);
		assert_true(r->time_ns >= last_time[r->vcpu]); /* one vCPU's records keep their order */
		last_time[r->vcpu] = r->time_ns;
		if (r->event == KVMPROF_TRACE_vcpu_start) {
			assert_int_equal(next[r->vcpu], 0);
			starts[r->vcpu]++;
		} else if (r->event == KVMPROF_TRACE_vcpu_stop) {
			assert_int_equal(next[r->vcpu], e[r->vcpu].count);
			stops[r->vcpu]++;
		} else {
			assert_int_equal(r->event, KVMPROF_TRACE_pio);
			assert_int_equal(r->nargs, 4);
			assert_int_equal(r->args[0], 0x3f8);
			assert_int_equal(r->args[3], next[r->vcpu]++);
		}
	}
	assert_true(starts[0] == 1 && starts[1] == 1 && stops[0] == 1 && stops[1] == 1);
}

/* Only the chosen events reach the file. */
static void test_only_enabled_events(void **state)
{
	bool only_stop[KVMPROF_TRACE_EVENT_COUNT] = { 0 };
	struct emitter e = { 0, 50 };
	struct trace_file_totals totals;
	struct kvmprof_trace_trailer trailer;
	struct kvmprof_trace_record recs[4];
	struct trace_file *tf;
	char err[TRACE_READ_ERR_MAX];
	size_t n;

	(void)state;
	only_stop[KVMPROF_TRACE_vcpu_stop] = true;
	assert_int_equal(trace_file_open(&tf, path, only_stop, 1, err, sizeof(err)), 0);
	emit_pio(&e);
	trace_file_close(tf, &totals);
	assert_int_equal(read_all(recs, 4, &n, &trailer, err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(recs[0].event, KVMPROF_TRACE_vcpu_stop);
}

/* Far more records than a ring holds, faster than the writer drains: what is not in the file is in lost_full. */
static void test_full_ring_counted(void **state)
{
	struct emitter e = { 0, 40 * TRACE_FILE_RING_RECORDS };
	struct trace_file_totals totals;
	struct kvmprof_trace_trailer trailer;
	struct trace_file *tf;
	char err[TRACE_READ_ERR_MAX];
	size_t n;

	(void)state;
	enable_all();
	assert_int_equal(trace_file_open(&tf, path, all_events, 1, err, sizeof(err)), 0);
	emit_pio(&e);
	trace_file_close(tf, &totals);
	assert_int_equal(read_all(NULL, 0, &n, &trailer, err), 0);
	assert_int_equal(n, trailer.records);
	assert_int_equal(trailer.records + trailer.lost_full, e.count + 2);
	assert_int_equal(trailer.lost_write, 0);
	assert_int_equal(totals.lost_full, trailer.lost_full);
}

/* The file may not grow past 10 records and a bit: the rest are write losses, and the trailer still lands. */
static void test_write_error_counted(void **state)
{
	const size_t room = sizeof(struct kvmprof_trace_header) + 10 * sizeof(struct kvmprof_trace_record) +
			    sizeof(struct kvmprof_trace_trailer) + 8;
	struct emitter e = { 0, 100 };
	struct trace_file_totals totals;
	struct kvmprof_trace_trailer trailer;
	struct trace_file *tf;
	struct rlimit old, lim;
	char err[TRACE_READ_ERR_MAX];
	size_t n;

	(void)state;
	enable_all();
	signal(SIGXFSZ, SIG_IGN); /* write() then fails with EFBIG instead of killing us */
	getrlimit(RLIMIT_FSIZE, &old);
	lim = (struct rlimit){ .rlim_cur = room, .rlim_max = old.rlim_max };
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_int_equal(trace_file_open(&tf, path, all_events, 1, err, sizeof(err)), 0);
	emit_pio(&e);
	trace_file_close(tf, &totals);
	setrlimit(RLIMIT_FSIZE, &old);
	assert_true(totals.trailer_written);
	assert_int_equal(totals.records, 10);
	assert_int_equal(totals.lost_write, 102 - 10);
	assert_int_equal(read_all(NULL, 0, &n, &trailer, err), 0);
	assert_int_equal(n, 10);
	assert_int_equal(trailer.lost_write, 92);
}

static void test_open_refuses_bad_path(void **state)
{
	struct trace_file *tf = NULL;
	char err[256];

	(void)state;
	assert_int_equal(trace_file_open(&tf, "/nonexistent-dir/t.bin", all_events, 1, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "--trace /nonexistent-dir/t.bin: No such file or directory"));
	assert_null(tf);
}

/* --- the reader's refusals, on files built by hand ------------------------------------------ */

static struct kvmprof_trace_header good_header(void)
{
	return (struct kvmprof_trace_header){ .magic = KVMPROF_TRACE_MAGIC, .version = KVMPROF_TRACE_VERSION,
					      .record_size = sizeof(struct kvmprof_trace_record),
					      .event_count = KVMPROF_TRACE_EVENT_COUNT, .ncpus = 2 };
}

static struct kvmprof_trace_record good_record(void)
{
	return (struct kvmprof_trace_record){ .event = KVMPROF_TRACE_pio, .vcpu = 1, .nargs = 4, .args = { 0x3f8, 1, 1, 65 } };
}

/* Writes header, nrec copies of rec, then the trailer (if given) and extra bytes; reads it back. */
static int build_and_read(const struct kvmprof_trace_header *h, size_t hlen, const struct kvmprof_trace_record *rec,
			  unsigned int nrec, size_t last_rec_len, const struct kvmprof_trace_trailer *t, size_t tlen,
			  size_t extra, char err[TRACE_READ_ERR_MAX])
{
	FILE *f = fopen(path, "wb");
	struct kvmprof_trace_trailer dummy;
	size_t n;

	assert_non_null(f);
	fwrite(h, 1, hlen, f);
	for (unsigned int i = 0; i < nrec; i++)
		fwrite(rec, 1, i + 1 == nrec ? last_rec_len : sizeof(*rec), f);
	if (t)
		fwrite(t, 1, tlen, f);
	for (size_t i = 0; i < extra; i++)
		fputc(0, f);
	fclose(f);
	return read_all(NULL, 0, &n, &dummy, err);
}

#define REFUSED(what, at) \
	do { \
		char want_[96]; \
		snprintf(want_, sizeof(want_), "offset %u: ", (unsigned int)(at)); \
		assert_non_null(strstr(err, want_)); \
		assert_non_null(strstr(err, what)); \
		assert_null(strchr(err, '\n')); \
	} while (0)

static void test_reader_refusals(void **state)
{
	const size_t H = sizeof(struct kvmprof_trace_header), R = sizeof(struct kvmprof_trace_record);
	const size_t T = sizeof(struct kvmprof_trace_trailer);
	struct kvmprof_trace_header h = good_header();
	struct kvmprof_trace_record rec = good_record();
	struct kvmprof_trace_trailer t = { .magic = KVMPROF_TRACE_END_MAGIC, .records = 3 };
	char err[TRACE_READ_ERR_MAX];

	(void)state;
	/* The intact file first: the refusals below are each one change away from it. */
	assert_int_equal(build_and_read(&h, H, &rec, 3, R, &t, T, 0, err), 0);

	assert_int_equal(build_and_read(&h, H - 1, NULL, 0, 0, NULL, 0, 0, err), -1);
	REFUSED("truncated header", H - 1);
	h.magic[0] = 'X';
	assert_int_equal(build_and_read(&h, H, &rec, 3, R, &t, T, 0, err), -1);
	REFUSED("not a kvmprof trace file", 0);
	h = good_header();
	h.version = 2;
	assert_int_equal(build_and_read(&h, H, &rec, 3, R, &t, T, 0, err), -1);
	REFUSED("version 2", 8);
	h = good_header();
	h.record_size = 48;
	assert_int_equal(build_and_read(&h, H, &rec, 3, R, &t, T, 0, err), -1);
	REFUSED("record size 48", 12);
	h = good_header();
	h.ncpus = 0;
	assert_int_equal(build_and_read(&h, H, &rec, 3, R, &t, T, 0, err), -1);
	REFUSED("vCPU count 0", 20);
	h = good_header();

	/* No trailer: killed VMM. */
	assert_int_equal(build_and_read(&h, H, &rec, 3, R, NULL, 0, 0, err), -1);
	REFUSED("no trailer", H + 3 * R);
	/* A record cut short. */
	assert_int_equal(build_and_read(&h, H, &rec, 3, R - 5, NULL, 0, 0, err), -1);
	REFUSED("truncated record", H + 2 * R);
	/* A trailer cut short. */
	assert_int_equal(build_and_read(&h, H, &rec, 3, R, &t, T - 1, 0, err), -1);
	REFUSED("truncated trailer", H + 3 * R);
	/* Bytes after the trailer, few or many. */
	assert_int_equal(build_and_read(&h, H, &rec, 3, R, &t, T, 1, err), -1);
	REFUSED("data after the trailer", H + 3 * R + T);
	assert_int_equal(build_and_read(&h, H, &rec, 3, R, &t, T, 100, err), -1);
	REFUSED("data after the trailer", H + 3 * R + T);
	/* A trailer that miscounts. */
	t.records = 4;
	assert_int_equal(build_and_read(&h, H, &rec, 3, R, &t, T, 0, err), -1);
	REFUSED("trailer counts 4 records, the file holds 3", H + 3 * R);
	t.records = 3;
	t.reserved = 1;
	assert_int_equal(build_and_read(&h, H, &rec, 3, R, &t, T, 0, err), -1);
	REFUSED("reserved", H + 3 * R);
	t.reserved = 0;

	/* Records: unknown event, wrong argument count, vCPU out of range. */
	rec.event = KVMPROF_TRACE_EVENT_COUNT;
	assert_int_equal(build_and_read(&h, H, &rec, 3, R, &t, T, 0, err), -1);
	REFUSED("unknown event id", H);
	rec = good_record();
	h.event_count = KVMPROF_TRACE_pio; /* the writer did not know pio: its records cannot hold it */
	assert_int_equal(build_and_read(&h, H, &rec, 3, R, &t, T, 0, err), -1);
	REFUSED("unknown event id 4", H);
	h = good_header();
	rec.nargs = 6;
	assert_int_equal(build_and_read(&h, H, &rec, 3, R, &t, T, 0, err), -1);
	REFUSED("pio record with 6 arguments, the event has 4", H);
	rec = good_record();
	rec.vcpu = 2;
	assert_int_equal(build_and_read(&h, H, &rec, 3, R, &t, T, 0, err), -1);
	REFUSED("vCPU 2", H);
	rec.vcpu = KVMPROF_TRACE_NO_VCPU; /* the control thread's records are fine */
	assert_int_equal(build_and_read(&h, H, &rec, 3, R, &t, T, 0, err), 0);
	/* An empty file. */
	assert_int_equal(build_and_read(&h, 0, NULL, 0, 0, NULL, 0, 0, err), -1);
	REFUSED("truncated header", 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip_two_vcpus, setup, teardown),
		cmocka_unit_test_setup_teardown(test_only_enabled_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_ring_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_error_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_refuses_bad_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reader_refusals, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
