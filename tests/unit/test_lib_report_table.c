/* SPDX-License-Identifier: MIT */
/*
 * lib/report/report_keys.c, report_filter.c, report_table.c: --sort keys parsed
 * (perf's names, kvmprof's aliases, the refusals), samples grouped into
 * rows by any keys, --percent-limit, the filters (--comms, --pids, --dsos,
 * --symbols), on the synthetic profile test_lib_report.c uses: 7 samples,
 * matmul (pid 10): alpha x3, beta x1 in fx (user), kfunc x2 (kernel);
 * "a b;c" (pid 11): one sample at no mapping.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lib_fixture.h"
#include "report/report.h"
#include "cli/report_table_cli.h"

static char *dir;
static struct profile *prof;

static int setup(void **state)
{
	(void)state;
	return fx_report_profile("table.data", &dir, &prof);
}

static int teardown(void **state)
{
	(void)state;
	profile_free(prof);
	fx_rmdir(dir);
	return 0;
}

static struct report_keys keys(const char *s, unsigned accepted)
{
	struct report_keys k;
	char err[300];

	assert_int_equal(report_keys_parse(s, accepted, &k, err, sizeof(err)), 0);
	return k;
}

static void test_keys_parse(void **state)
{
	struct report_keys k;
	char err[300];

	(void)state;
	k = keys("comm,dso", REPORT_KEYS_COMMON);
	assert_int_equal(k.nr, 2);
	assert_int_equal(k.key[0], REPORT_KEY_COMM);
	assert_int_equal(k.key[1], REPORT_KEY_DSO);
	/* kvmprof's old names are aliases: image,symbol is dso,sym. */
	k = keys("image,symbol", REPORT_KEYS_COMMON);
	assert_int_equal(k.nr, 2);
	assert_int_equal(k.key[0], REPORT_KEY_DSO);
	assert_int_equal(k.key[1], REPORT_KEY_SYM);
	k = keys("sym,domain,pid", REPORT_KEYS_COMMON);
	assert_int_equal(k.nr, 3);
	assert_int_equal(k.key[2], REPORT_KEY_PID);
	k = keys("domain,process,symbol", REPORT_KEYS_COMMON | REPORT_KEY_BIT(REPORT_KEY_PROCESS));
	assert_int_equal(k.key[1], REPORT_KEY_PROCESS);

	/* process is kvmprof's: the agent does not take it, and says which keys it does. */
	assert_int_equal(report_keys_parse("comm,process", REPORT_KEYS_COMMON, &k, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "unknown sort key 'process' in 'comm,process' (valid keys: comm, pid, tid, dso (or "
				 "image), sym (or symbol), domain)");
	assert_int_equal(report_keys_parse("sym,symbol", REPORT_KEYS_COMMON, &k, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "sort key 'sym' given twice in 'sym,symbol'");
	assert_int_equal(report_keys_parse("", REPORT_KEYS_COMMON, &k, err, sizeof(err)), -EINVAL);
	assert_int_equal(report_keys_parse("comm,", REPORT_KEYS_COMMON, &k, err, sizeof(err)), -EINVAL);
	assert_int_equal(report_keys_parse("Comm", REPORT_KEYS_COMMON, &k, err, sizeof(err)), -EINVAL);
}

/* The table's rows as "count:first key's text" checks. */
static void build(struct report_table *t, const char *k, struct report_table_options *o)
{
	o->keys = keys(k, REPORT_KEYS_COMMON);
	assert_int_equal(report_table_build(t, prof, o), 0);
}

static uint64_t sum(const struct report_table *t)
{
	uint64_t n = 0;

	for (size_t i = 0; i < t->nr; i++)
		n += t->rows[i].count;
	return n;
}

static void test_grouping(void **state)
{
	struct report_table_options o = { 0 };
	struct report_table t;

	(void)state;
	build(&t, "comm", &o);
	assert_int_equal(t.nr, 2);
	assert_string_equal(prof->comms[t.rows[0].comm], "matmul");
	assert_int_equal(t.rows[0].count, 6);
	assert_string_equal(prof->comms[t.rows[1].comm], "a b;c");
	assert_int_equal(t.rows[1].count, 1);
	assert_int_equal(t.kept[0], 7);
	report_table_free(&t);

	build(&t, "dso", &o);
	assert_int_equal(t.nr, 3);
	assert_string_equal(prof->images[t.rows[0].image].name, "fx");
	assert_int_equal(t.rows[0].count, 4);
	assert_string_equal(prof->images[t.rows[1].image].name, "[kernel.kallsyms]");
	assert_int_equal(t.rows[1].count, 2);
	assert_int_equal(t.rows[2].count, 1);
	report_table_free(&t);

	/* The agent's domain: user or kernel by privilege level. */
	build(&t, "domain", &o);
	assert_int_equal(t.nr, 2);
	assert_int_equal(t.rows[0].domain, 0);
	assert_int_equal(t.rows[0].count, 5);
	assert_int_equal(t.rows[1].domain, 1);
	assert_int_equal(t.rows[1].count, 2);
	report_table_free(&t);

	build(&t, "comm,domain", &o);
	assert_int_equal(t.nr, 3);
	assert_int_equal(t.rows[0].count, 4);
	assert_int_equal(t.rows[1].count, 2);
	assert_int_equal(t.rows[2].count, 1);
	assert_int_equal(sum(&t), 7);
	assert_null(t.sample_row); /* not asked for */
	report_table_free(&t);

	/* One row per function; every sample is in the row its key says (sample_row: asked for, as -g does). */
	o.sample_rows = true;
	build(&t, "sym", &o);
	assert_int_equal(t.nr, 4);
	assert_int_equal(sum(&t), 7);
	for (size_t i = 0; i < prof->nr_samples; i++) {
		const struct profile_sample *s = &prof->samples[i];

		assert_int_equal(t.rows[t.sample_row[i]].func, prof->locs[prof->frames[s->first_frame]].func);
	}
	report_table_free(&t);

	/* Not per event: one table; the row's event is none. */
	o.per_event = true;
	build(&t, "pid,dso,sym", &o);
	assert_int_equal(t.nr, 4);
	assert_int_equal(t.rows[0].event, 0);
	report_table_free(&t);
}

static char *render_text(const struct report_options *opt)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(report_text(f, prof, opt), 0);
	fclose(f);
	return buf;
}

static void test_text_keys(void **state)
{
	struct report_options opt = { .table.keys = keys("comm,dso", REPORT_KEYS_COMMON) };
	char *out;

	(void)state;
	out = render_text(&opt);
	assert_string_equal(out,
			    "Event cycles (period 1000): 7 samples, 0 lost\n"
			    " samples       %  command  image\n"
			    "       4  57.14%  matmul   fx\n"
			    "       2  28.57%  matmul   [kernel.kallsyms]\n"
			    "       1  14.29%  a b;c    [unknown]\n"
			    "# 1 of 7 samples (14.29%) have no symbol\n");
	free(out);

	/* sym alone shows its image; domain by name; columns in the keys' order. */
	opt.table.keys = keys("domain,sym", REPORT_KEYS_COMMON);
	out = render_text(&opt);
	assert_string_equal(out,
			    "Event cycles (period 1000): 7 samples, 0 lost\n"
			    " samples       %  domain  image              symbol\n"
			    "       3  42.86%  user    fx                 alpha\n"
			    "       2  28.57%  kernel  [kernel.kallsyms]  kfunc\n"
			    "       1  14.29%  user    [unknown]          [unknown]\n"
			    "       1  14.29%  user    fx                 beta\n"
			    "# 1 of 7 samples (14.29%) have no symbol\n");
	free(out);

	/* Rows without a symbol: each chain ends in the sample's own function. */
	opt.table.keys = keys("comm", REPORT_KEYS_COMMON);
	opt.callgraph = true;
	out = render_text(&opt);
	assert_string_equal(out,
			    "Event cycles (period 1000): 7 samples, 0 lost\n"
			    " samples       %  command\n"
			    "       6  85.71%  matmul\n"
			    "       1  14.29%  a b;c\n"
			    "# 1 of 7 samples (14.29%) have no symbol\n"
			    "\n"
			    "Call chains of the top rows (outermost first):\n"
			    "\n"
			    "       6  85.71%  matmul\n"
			    "           50.00%  _start > beta > alpha\n"
			    "           33.33%  beta [fx] > kfunc\n"
			    "           16.67%  _start > beta\n"
			    "\n"
			    "       1  14.29%  a b;c\n"
			    "          100.00%  (no callers recorded): [unknown]\n");
	free(out);
}

static void test_percent_limit(void **state)
{
	struct report_options opt = { .table.keys = keys("sym", REPORT_KEYS_COMMON), .table.percent_limit = 20 };
	struct report_table t;
	char *out;

	(void)state;
	assert_int_equal(report_table_build(&t, prof, &opt.table), 0);
	assert_int_equal(report_table_shown(&t, 0, t.nr, 7, &opt.table), 2);
	report_table_free(&t);
	/* 42.86% and 28.57% shown; the two rows of 14.29% (2 samples) are not, and a line says so. */
	out = render_text(&opt);
	assert_string_equal(out,
			    "Event cycles (period 1000): 7 samples, 0 lost\n"
			    " samples       %  image              symbol\n"
			    "       3  42.86%  fx                 alpha\n"
			    "       2  28.57%  [kernel.kallsyms]  kfunc\n"
			    "# 2 rows under 20% not shown: 2 samples (28.57%)\n"
			    "# 1 of 7 samples (14.29%) have no symbol\n");
	free(out);
	/* A row exactly at the limit is shown. */
	opt.table.percent_limit = 28.57;
	assert_int_equal(report_table_build(&t, prof, &opt.table), 0);
	assert_int_equal(report_table_shown(&t, 0, t.nr, 7, &opt.table), 2);
	report_table_free(&t);
}

/* The samples of prof (total of them) that one filter keeps. */
static uint64_t kept_by_total(enum report_filter_kind kind, const char *list, uint64_t total)
{
	struct report_table_options o = { .keys = keys("sym", REPORT_KEYS_COMMON) };
	struct report_table t;
	char err[200];
	uint64_t n;

	assert_int_equal(report_filter_set(&o.filter, kind, list, err, sizeof(err)), 0);
	assert_int_equal(report_table_build(&t, prof, &o), 0);
	n = t.kept[0];
	assert_int_equal(sum(&t), n);
	assert_int_equal(t.total[0], total);
	report_table_free(&t);
	return n;
}

static uint64_t kept_by(enum report_filter_kind kind, const char *list)
{
	return kept_by_total(kind, list, 7);
}

static void test_filters(void **state)
{
	struct report_options opt = { .table.keys = keys("dso,sym", REPORT_KEYS_COMMON) };
	struct report_filter f = { 0 };
	struct profile_sample s;
	char err[200], *out;

	(void)state;
	assert_int_equal(kept_by(REPORT_FILTER_COMMS, "matmul"), 6);
	assert_int_equal(kept_by(REPORT_FILTER_COMMS, "a b;c,matmul"), 7);
	assert_int_equal(kept_by(REPORT_FILTER_COMMS, "matmu"), 0);
	assert_int_equal(kept_by(REPORT_FILTER_PIDS, "11"), 1);
	assert_int_equal(kept_by(REPORT_FILTER_PIDS, "10,99"), 6);
	assert_int_equal(kept_by(REPORT_FILTER_DSOS, "fx"), 4);
	assert_int_equal(kept_by(REPORT_FILTER_DSOS, "[kernel.kallsyms]"), 2);
	assert_int_equal(kept_by(REPORT_FILTER_SYMBOLS, "alpha,kfunc"), 5);
	assert_int_equal(kept_by(REPORT_FILTER_SYMBOLS, "[unknown]"), 1);

	/* A dso by its recorded path too. */
	assert_int_equal(report_filter_set(&f, REPORT_FILTER_DSOS, "/bin/fx", err, sizeof(err)), 0);
	s = prof->samples[0];
	assert_true(report_filter_keeps(&f, prof, &s));
	/* kvmprof tags commands with their layer: "[guest] matmul" is matmul's. */
	f = (struct report_filter){ 0 };
	assert_int_equal(report_filter_set(&f, REPORT_FILTER_COMMS, "matmul", err, sizeof(err)), 0);
	s.comm = profile_comm(prof, "[guest] matmul");
	assert_true(report_filter_keeps(&f, prof, &s));
	s.comm = profile_comm(prof, "[guest] matmul2");
	assert_false(report_filter_keeps(&f, prof, &s));

	assert_int_equal(report_filter_set(&f, REPORT_FILTER_PIDS, "1,x", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--pids: 'x' is not a pid");
	assert_int_equal(report_filter_set(&f, REPORT_FILTER_PIDS, "-1", err, sizeof(err)), -EINVAL);
	assert_int_equal(report_filter_set(&f, REPORT_FILTER_COMMS, "a,,b", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--comms: empty item in 'a,,b'");

	/*
	 * Two filters: both must hold. Shares are of all 7 samples, as perf's
	 * default --percentage absolute: a row's share is the one it has
	 * without the filter (alpha 3 of 7), and the header says what they are of.
	 */
	assert_int_equal(report_filter_set(&opt.table.filter, REPORT_FILTER_COMMS, "matmul", err, sizeof(err)), 0);
	assert_int_equal(report_filter_set(&opt.table.filter, REPORT_FILTER_DSOS, "fx", err, sizeof(err)), 0);
	out = render_text(&opt);
	assert_string_equal(out,
			    "Event cycles (period 1000): 7 samples, 0 lost\n"
			    "# filter --comms matmul --dsos fx: 4 of 7 samples kept (57.14%); percentages are of all 7\n"
			    " samples       %  image  symbol\n"
			    "       3  42.86%  fx     alpha\n"
			    "       1  14.29%  fx     beta\n"
			    "# 1 of 7 samples (14.29%) have no symbol\n");
	free(out);
	/* --percentage relative: of the 4 kept, adding up to 100. */
	opt.table.percent_relative = true;
	out = render_text(&opt);
	assert_string_equal(out,
			    "Event cycles (period 1000): 7 samples, 0 lost\n"
			    "# filter --comms matmul --dsos fx: 4 of 7 samples kept (57.14%); percentages are of those 4\n"
			    " samples       %  image  symbol\n"
			    "       3  75.00%  fx     alpha\n"
			    "       1  25.00%  fx     beta\n"
			    "# 1 of 7 samples (14.29%) have no symbol\n");
	free(out);
	/* --percent-limit applies to the shares shown: beta is 14.29% of all, 25% of those kept. */
	opt.table.percent_limit = 20;
	out = render_text(&opt);
	assert_non_null(strstr(out, "       1  25.00%  fx     beta\n"));
	free(out);
	opt.table.percent_relative = false;
	out = render_text(&opt);
	assert_null(strstr(out, "beta"));
	assert_non_null(strstr(out, "# 1 rows under 20% not shown: 1 samples (14.29%)\n"));
	free(out);
	/* Without a filter relative changes nothing: the samples kept are all of them. */
	opt = (struct report_options){ .table.keys = keys("dso,sym", REPORT_KEYS_COMMON), .table.percent_relative = true };
	out = render_text(&opt);
	assert_non_null(strstr(out, "       3  42.86%  fx                 alpha\n"));
	free(out);
}

/* One sample of thread tid of process pid, at ip, without a call chain. */
static int thread_sample(struct kp_writer *w, uint32_t pid, uint32_t tid, uint64_t time, uint64_t ip)
{
	struct kp_rec_sample smp = { .event_id = 1, .pid = pid, .tid = tid, .time = time, .ip = ip, .period = 1000,
				     .cpl = KP_CPL_USER };

	return kp_writer_add(w, KP_REC_SAMPLE, &smp, sizeof(smp));
}

/*
 * The tid key (perf's pid key: one row per thread) and the --tids filter,
 * on a process of three threads: pid 20 "prog" itself 1 sample, thread 21
 * (which names itself "worker") 3, thread 22 2; and pid 30, one thread, 1 sample.
 */
static void test_threads(void **state)
{
	struct report_options opt = { .table.keys = keys("tid", REPORT_KEYS_COMMON) };
	struct profile_options popt = { .root = dir };
	struct report_table t;
	struct profile *saved = prof, *tp;
	struct kp_writer *w;
	char path[600], err[512], *out;
	int fd, rc = 0, i;

	(void)state;
	snprintf(path, sizeof(path), "%s/threads.data", dir);
	w = fx_writer(path, &fd);
	assert_non_null(w);
	rc |= fx_event(w, 1, "cycles", 1000, 0);
	rc |= fx_comm(w, 20, 20, 1, 0, "prog");
	rc |= fx_mmap(w, 20, 2, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0);
	rc |= fx_comm(w, 20, 21, 3, 0, "worker");
	rc |= fx_comm(w, 20, 22, 3, 0, "prog");
	rc |= fx_comm(w, 30, 30, 3, 0, "other");
	rc |= thread_sample(w, 20, 20, 10, FX_ALPHA + 1);
	for (i = 0; i < 3; i++)
		rc |= thread_sample(w, 20, 21, 11 + i, FX_ALPHA + 1);
	for (i = 0; i < 2; i++)
		rc |= thread_sample(w, 20, 22, 20 + i, FX_BETA + 1);
	rc |= thread_sample(w, 30, 30, 30, 0x1234);
	rc |= fx_close(w, fd);
	assert_int_equal(rc, 0);
	assert_int_equal(profile_load(&tp, path, &popt, err, sizeof(err)), 0);
	prof = tp; /* render_text's and kept_by's profile */

	/*
	 * One row per thread, most samples first, ties by tid. The command is
	 * the process's: a thread's own name ("worker") does not rename its
	 * process, and kvmprof keeps no other (perf shows the thread's).
	 */
	out = render_text(&opt);
	assert_string_equal(out,
			    "Event cycles (period 1000): 7 samples, 0 lost\n"
			    " samples       %      tid  command\n"
			    "       3  42.86%       21  prog\n"
			    "       2  28.57%       22  prog\n"
			    "       1  14.29%       20  prog\n"
			    "       1  14.29%       30  other\n"
			    "# 1 of 7 samples (14.29%) have no symbol\n");
	free(out);
	/* With pid: the process's column and its command, then the thread's tid (ties by symbol first). */
	opt.table.keys = keys("pid,tid,sym", REPORT_KEYS_COMMON);
	out = render_text(&opt);
	assert_string_equal(out,
			    "Event cycles (period 1000): 7 samples, 0 lost\n"
			    " samples       %      pid  command      tid  image      symbol\n"
			    "       3  42.86%       20  prog          21  fx         alpha\n"
			    "       2  28.57%       20  prog          22  fx         beta\n"
			    "       1  14.29%       30  other         30  [unknown]  [unknown]\n"
			    "       1  14.29%       20  prog          20  fx         alpha\n"
			    "# 1 of 7 samples (14.29%) have no symbol\n");
	free(out);
	/* The process's threads by tid and pid agree: 21 and 22 are 5 of pid 20's 6. */
	opt.table.keys = keys("tid", REPORT_KEYS_COMMON);
	assert_int_equal(report_table_build(&t, prof, &opt.table), 0);
	assert_int_equal(t.nr, 4);
	report_table_free(&t);
	assert_int_equal(kept_by_total(REPORT_FILTER_TIDS, "21,22", 7), 5);
	assert_int_equal(kept_by_total(REPORT_FILTER_TIDS, "20", 7), 1);
	assert_int_equal(kept_by_total(REPORT_FILTER_PIDS, "20", 7), 6);
	assert_int_equal(kept_by_total(REPORT_FILTER_TIDS, "99", 7), 0);
	assert_int_equal(report_filter_set(&opt.table.filter, REPORT_FILTER_TIDS, "21,x", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--tids: 'x' is not a tid");
	prof = saved;
	profile_free(tp);
}

/* The options as both commands parse them. */
static void test_options(void **state)
{
	struct report_table_options o = { 0 };

	(void)state;
	assert_int_equal(report_table_option('s', "pid,sym", &o, REPORT_KEYS_COMMON, "t", ""), 0);
	assert_int_equal(o.keys.nr, 2);
	assert_int_equal(report_table_option('n', NULL, &o, REPORT_KEYS_COMMON, "t", ""), 0);
	assert_int_equal(report_table_option(REPORT_OPT_PERCENT_LIMIT, "2.5", &o, REPORT_KEYS_COMMON, "t", ""), 0);
	assert_true(o.percent_limit == 2.5);
	assert_int_equal(report_table_option(REPORT_OPT_SYMBOLS, "main", &o, REPORT_KEYS_COMMON, "t", ""), 0);
	assert_string_equal(o.filter.list[REPORT_FILTER_SYMBOLS], "main");
	assert_int_equal(report_table_option(REPORT_OPT_TIDS, "5,6", &o, REPORT_KEYS_COMMON, "t", ""), 0);
	assert_string_equal(o.filter.list[REPORT_FILTER_TIDS], "5,6");
	assert_int_equal(report_table_option('s', "tid,sym", &o, REPORT_KEYS_COMMON, "t", ""), 0);
	assert_int_equal(o.keys.key[0], REPORT_KEY_TID);
	/* Usage errors: exit status 2. */
	assert_int_equal(report_table_option('s', "bogus", &o, REPORT_KEYS_COMMON, "t", ""), 2);
	assert_int_equal(report_table_option(REPORT_OPT_PERCENT_LIMIT, "101", &o, REPORT_KEYS_COMMON, "t", ""), 2);
	assert_int_equal(report_table_option(REPORT_OPT_PERCENT_LIMIT, "5%", &o, REPORT_KEYS_COMMON, "t", ""), 0);
	assert_true(o.percent_limit == 5);
	assert_int_equal(report_table_option(REPORT_OPT_PERCENT_LIMIT, "5%%", &o, REPORT_KEYS_COMMON, "t", ""), 2);
	assert_int_equal(report_table_option(REPORT_OPT_PERCENT_LIMIT, "", &o, REPORT_KEYS_COMMON, "t", ""), 2);
	assert_int_equal(report_table_option(REPORT_OPT_PIDS, "x", &o, REPORT_KEYS_COMMON, "t", ""), 2);
	/* perf's --percentage: absolute (the default) or relative, nothing else. */
	assert_false(o.percent_relative);
	assert_int_equal(report_table_option(REPORT_OPT_PERCENTAGE, "relative", &o, REPORT_KEYS_COMMON, "t", ""), 0);
	assert_true(o.percent_relative);
	assert_int_equal(report_table_option(REPORT_OPT_PERCENTAGE, "absolute", &o, REPORT_KEYS_COMMON, "t", ""), 0);
	assert_false(o.percent_relative);
	assert_int_equal(report_table_option(REPORT_OPT_PERCENTAGE, "Relative", &o, REPORT_KEYS_COMMON, "t", ""), 2);
	assert_int_equal(report_table_option(REPORT_OPT_PERCENTAGE, "", &o, REPORT_KEYS_COMMON, "t", ""), 2);
	assert_int_equal(report_table_option('g', NULL, &o, REPORT_KEYS_COMMON, "t", ""), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys_parse), cmocka_unit_test(test_grouping),
		cmocka_unit_test(test_text_keys),  cmocka_unit_test(test_percent_limit),
		cmocka_unit_test(test_filters),    cmocka_unit_test(test_threads),
		cmocka_unit_test(test_options),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
