/* SPDX-License-Identifier: MIT */
/*
 * lib/profile's profile_options.aggregate (a flat report's samples held
 * once per group, with a count): each file is loaded with and without it,
 * and the flat buckets (command, pid, tid, image, function, privilege
 * level: the table's keys) must hold the same counts; whether aggregation
 * held or profile_load fell back to the plain path (sample_counts NULL) is
 * checked too, and the functions' and commands' order (the table's last
 * tie-breaks). Records out of time order within the window, a sample
 * earlier than its mmap (before it or after it in the file), fork/comm/exit between samples, a process table
 * written after the samples, and a window overflowed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lib_fixture.h"
#include "profile/profile.h"

/* More than the loader's window (AGG_WINDOW, 65536 samples). */
#define OVER_WINDOW 70000

static char *dir;
static char data_path[600];
static int nr_warnings;

static int setup(void **state)
{
	(void)state;
	dir = fx_mkdir();
	if (!dir || fx_build(dir, NULL))
		return -1;
	snprintf(data_path, sizeof(data_path), "%s/test.data", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fx_rmdir(dir);
	return 0;
}

static void count_warning(void *ctx, const char *msg)
{
	(void)ctx;
	(void)msg;
	nr_warnings++;
}

static struct profile *load(bool aggregate)
{
	struct profile_options opt = { .root = dir, .warn = count_warning, .aggregate = aggregate };
	struct profile *p = NULL;
	char err[512];

	if (profile_load(&p, data_path, &opt, err, sizeof(err)))
		fail_msg("profile_load: %s", err);
	return p;
}

struct bucket_line {
	char *key;
	uint32_t count;
};

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct bucket_line *)a)->key, ((const struct bucket_line *)b)->key);
}

/*
 * The flat buckets of p, "comm pid tid image func cpl: count" lines,
 * sorted, in buf: each count the sum of its samples' counts.
 */
static void buckets(const struct profile *p, char *buf, size_t len)
{
	struct bucket_line *lines = calloc(p->nr_samples + 1, sizeof(*lines));
	size_t i, j, off = 0;

	assert_non_null(lines);
	for (i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		const struct profile_loc *l = &p->locs[p->frames[s->first_frame]];
		const char *fn = p->funcs[l->func].name;

		assert_int_not_equal(asprintf(&lines[i].key, "%s %u %u %s %s %u",
					      s->comm != PROFILE_NONE ? p->comms[s->comm] : "-", s->pid, s->tid,
					      p->images[l->image].name, fn ? fn : "[unknown]", s->cpl),
				     -1);
		lines[i].count = profile_sample_count(p, i);
	}
	qsort(lines, p->nr_samples, sizeof(*lines), cmp_line);
	buf[0] = '\0';
	for (i = 0; i < p->nr_samples; i = j) {
		uint64_t count = 0;

		for (j = i; j < p->nr_samples && !strcmp(lines[j].key, lines[i].key); j++)
			count += lines[j].count;
		off += (size_t)snprintf(buf + off, len - off, "%s: %llu\n", lines[i].key, (unsigned long long)count);
		assert_true(off < len);
	}
	for (i = 0; i < p->nr_samples; i++)
		free(lines[i].key);
	free(lines);
}

/*
 * data_path loaded both ways: the same buckets, events' counts and warnings;
 * aggregated says whether aggregation held (else profile_load read it
 * again the plain way). The buckets are left in out.
 */
static void check_same(bool aggregated, char *out, size_t len)
{
	static char plain_b[1 << 16];
	struct profile *plain, *agg;
	int plain_warnings;

	nr_warnings = 0;
	plain = load(false);
	plain_warnings = nr_warnings;
	nr_warnings = 0;
	agg = load(true);
	assert_null(plain->sample_counts);
	if (aggregated)
		assert_non_null(agg->sample_counts);
	else
		assert_null(agg->sample_counts);
	buckets(plain, plain_b, sizeof(plain_b));
	buckets(agg, out, len);
	assert_string_equal(out, plain_b);
	assert_int_equal(agg->nr_events, plain->nr_events);
	for (size_t e = 0; e < plain->nr_events; e++) {
		assert_int_equal(agg->events[e].samples, plain->events[e].samples);
		assert_int_equal(agg->events[e].weight, plain->events[e].weight);
		assert_int_equal(agg->events[e].unresolved, plain->events[e].unresolved);
	}
	assert_int_equal(agg->unresolved, plain->unresolved);
	assert_int_equal(nr_warnings, plain_warnings);
	/* Functions and commands made in the same order: the table's last tie-breaks are their indices. */
	assert_int_equal(agg->nr_funcs, plain->nr_funcs);
	for (size_t f = 0; f < plain->nr_funcs; f++) {
		assert_int_equal(agg->funcs[f].image, plain->funcs[f].image);
		assert_string_equal(agg->funcs[f].name ? agg->funcs[f].name : "-", plain->funcs[f].name ? plain->funcs[f].name : "-");
	}
	assert_int_equal(agg->nr_comms, plain->nr_comms);
	for (size_t c = 0; c < plain->nr_comms; c++)
		assert_string_equal(agg->comms[c], plain->comms[c]);
	profile_free(plain);
	profile_free(agg);
}

/*
 * Two CPUs' rings drained in turn: CPU 1's samples (times 60, 70) come in
 * the file before CPU 0's exec of time 50 and the new program's mmap (51)
 * over the old one's addresses. Replay puts those first, so the two
 * samples are the new program's (a file that is missing: unresolved);
 * the sample of time 40 (before the exec in both orders) is the old
 * one's. Same-ip samples are one group each side of the records.
 */
static void test_out_of_order_in_window(void **state)
{
	static char b[1 << 16];
	struct kp_writer *w;
	int fd;

	(void)state;
	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(fx_comm(w, 10, 10, 1, KP_COMM_EXEC, "old"), 0);
	assert_int_equal(fx_mmap(w, 10, 2, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 10, 40, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 10, 60, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 10, 70, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_comm(w, 10, 10, 50, KP_COMM_EXEC, "new"), 0);
	assert_int_equal(fx_mmap(w, 10, 51, 0x40000000, 0x40000, 0, "/bin/missing", NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 10, 80, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 10, 90, FX_BETA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_close(w, fd), 0);
	check_same(true, b, sizeof(b));
	assert_string_equal(b, "new 10 10 missing [unknown] 3: 4\n"
			       "old 10 10 fx alpha 3: 1\n");
}

/*
 * agent-work's recording: CPU 0's ring (samples from time 100, an mmap at
 * 105) is written before CPU 1's, which holds the exec at 50. Records out
 * of time order among themselves, within the window: it still
 * aggregates, and the exec's empty address space is replayed before the
 * mmap, which comes after it in time.
 */
static void test_records_out_of_order(void **state)
{
	static char b[1 << 16];
	struct kp_writer *w;
	int fd;

	(void)state;
	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(fx_sample(w, 1, 13, 100, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_mmap(w, 13, 105, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 13, 110, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 13, 111, FX_BETA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_comm(w, 13, 13, 50, KP_COMM_EXEC, "exe"), 0);
	assert_int_equal(fx_sample(w, 1, 13, 60, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_close(w, fd), 0);
	check_same(true, b, sizeof(b));
	assert_string_equal(b, "exe 13 13 fx alpha 3: 3\n"
			       "exe 13 13 fx beta 3: 1\n");
}

/*
 * Samples earlier in time than their process's only mmap, in the file
 * before it and after it (a sample of time 5 after an mmap of time 10):
 * as the plain path has them (a process's maps recorded after its samples
 * still resolve them).
 */
static void test_sample_before_mmap(void **state)
{
	static char b[1 << 16];
	struct kp_writer *w;
	int fd;

	(void)state;
	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(fx_sample(w, 1, 11, 5, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_mmap(w, 11, 10, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 11, 20, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 11, 21, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_close(w, fd), 0);
	check_same(true, b, sizeof(b));
	assert_string_equal(b, ":11 11 11 fx alpha 3: 3\n");

	/*
	 * One earlier than an mmap that comes in the file before it (another
	 * CPU's ring drained later): its epoch is the records of time <= its
	 * own, none, as replay has it.
	 */
	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(fx_mmap(w, 11, 10, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 11, 20, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 11, 5, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_close(w, fd), 0);
	check_same(true, b, sizeof(b));
	assert_string_equal(b, ":11 11 11 fx alpha 3: 2\n");
}

/*
 * A sample earlier than a record before it in the file (beta at 30 and
 * alpha at 10 come before a renaming at 20): alpha's epoch is before the
 * record, beta's after it; groups are resolved in the file's order, so
 * beta's function is made first, as plain loading makes it.
 */
static void test_first_sample_order(void **state)
{
	static char b[1 << 16];
	struct kp_writer *w;
	struct profile *p;
	int fd;

	(void)state;
	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(fx_mmap(w, 12, 1, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 12, 30, FX_BETA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 12, 10, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_comm(w, 12, 12, 20, 0, "named"), 0);
	assert_int_equal(fx_sample(w, 1, 12, 40, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_close(w, fd), 0);
	check_same(true, b, sizeof(b));
	assert_string_equal(b, "named 12 12 fx alpha 3: 2\n"
			       "named 12 12 fx beta 3: 1\n");
	p = load(true);
	assert_string_equal(p->funcs[0].name, "beta");
	profile_free(p);
}

/*
 * fork, exec (comm), exit and a renaming between samples: the child
 * inherits the parent's maps, loses them at exec; the parent's samples
 * before and after keep theirs. Samples of one ip on either side of a
 * record are counted apart and land in their own buckets.
 */
static void test_fork_exec_exit_between(void **state)
{
	static char b[1 << 16];
	struct kp_writer *w;
	int fd;

	(void)state;
	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(fx_comm(w, 20, 20, 1, KP_COMM_EXEC, "parent"), 0);
	assert_int_equal(fx_mmap(w, 20, 2, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 20, 3, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 20, 4, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_task(w, KP_REC_FORK, 21, 20, 5), 0);
	assert_int_equal(fx_sample(w, 1, 21, 6, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 20, 6, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_comm(w, 21, 21, 7, KP_COMM_EXEC, "child"), 0);
	assert_int_equal(fx_sample(w, 1, 21, 8, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 21, 8, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_task(w, KP_REC_EXIT, 21, 20, 9), 0);
	assert_int_equal(fx_comm(w, 20, 20, 10, 0, "renamed"), 0);
	assert_int_equal(fx_sample(w, 1, 20, 11, FX_BETA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 20, 12, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_close(w, fd), 0);
	check_same(true, b, sizeof(b));
	assert_string_equal(b, "child 21 21 [unknown] [unknown] 3: 2\n"
			       "parent 20 20 fx alpha 3: 3\n"
			       "parent 21 21 fx alpha 3: 1\n"
			       "renamed 20 20 fx alpha 3: 1\n"
			       "renamed 20 20 fx beta 3: 1\n");
}

/* The bundled guest's way: the process table after the samples, at time 0. Within the window, aggregation holds. */
static void test_process_table_after(void **state)
{
	static char b[1 << 16];
	struct kp_writer *w;
	int fd;

	(void)state;
	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	for (uint64_t t = 100; t < 1100; t++)
		assert_int_equal(fx_sample(w, 1, 30, t, t & 1 ? FX_ALPHA : FX_BETA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_comm(w, 30, 30, 0, 0, "late"), 0);
	assert_int_equal(fx_mmap(w, 30, 0, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0), 0);
	assert_int_equal(fx_close(w, fd), 0);
	check_same(true, b, sizeof(b));
	assert_string_equal(b, "late 30 30 fx alpha 3: 500\n"
			       "late 30 30 fx beta 3: 500\n");
}

/*
 * More samples than the window before an mmap earlier than all of them:
 * the first ones were let through before it came, so the order check
 * fails and profile_load reads the file again without aggregation.
 */
static void test_window_overflow(void **state)
{
	static char b[1 << 16];
	struct kp_writer *w;
	int fd;

	(void)state;
	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(fx_comm(w, 40, 40, 1, KP_COMM_EXEC, "big"), 0);
	for (uint64_t t = 1000; t < 1000 + OVER_WINDOW; t++)
		assert_int_equal(fx_sample(w, 1, 40, t, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_mmap(w, 40, 500, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 40, 1000 + OVER_WINDOW, FX_BETA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_close(w, fd), 0);
	check_same(false, b, sizeof(b));
	assert_string_equal(b, "big 40 40 fx alpha 3: 70000\n"
			       "big 40 40 fx beta 3: 1\n");

	/* The same samples with the mmap first: one group of 70000. */
	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(fx_comm(w, 40, 40, 1, KP_COMM_EXEC, "big"), 0);
	assert_int_equal(fx_mmap(w, 40, 500, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0), 0);
	for (uint64_t t = 1000; t < 1000 + OVER_WINDOW; t++)
		assert_int_equal(fx_sample(w, 1, 40, t, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_close(w, fd), 0);
	check_same(true, b, sizeof(b));
	assert_string_equal(b, "big 40 40 fx alpha 3: 70000\n");
	{
		struct profile *p = load(true);

		assert_int_equal(p->nr_samples, 1);
		assert_int_equal(p->sample_counts[0], OVER_WINDOW);
		assert_int_equal(p->events[0].samples, OVER_WINDOW);
		profile_free(p);
	}
}

/* A sample with a call chain: a flat table would not need it, but the plain path is taken (chains can be cut, warned of). */
static void test_callchain_reads_plain(void **state)
{
	static char b[1 << 16];
	uint64_t chain[] = { FX_BETA + 8 };
	struct kp_writer *w;
	int fd;

	(void)state;
	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(fx_mmap(w, 50, 1, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 50, 2, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 50, 3, FX_ALPHA, KP_CPL_USER, chain, 1), 0);
	assert_int_equal(fx_close(w, fd), 0);
	check_same(false, b, sizeof(b));
	assert_string_equal(b, ":50 50 50 fx alpha 3: 2\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_out_of_order_in_window),
		cmocka_unit_test(test_records_out_of_order),
		cmocka_unit_test(test_sample_before_mmap),
		cmocka_unit_test(test_first_sample_order),
		cmocka_unit_test(test_fork_exec_exit_between),
		cmocka_unit_test(test_process_table_after),
		cmocka_unit_test(test_window_overflow),
		cmocka_unit_test(test_callchain_reads_plain),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
