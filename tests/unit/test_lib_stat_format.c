/* SPDX-License-Identifier: MIT */
/*
 * lib/stat_format: perf stat's output, byte for byte where perf's layout
 * is fixed (perf 6.1's columns; lines end at their last field), from
 * counts given here: thousands separators, msec for the clocks, CPUs
 * utilized, rates per second of task-clock, the spread of -r runs (the
 * relative standard error of the mean), <not supported>, notes under
 * their event, and -x CSV with perf's fields. Also lib/stat_cli's parse.
 */
#include <linux/perf_event.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/stat_cli.h"
#include "stat/stat_format.h"

static void check_number(double v, int decimals, bool big, const char *want)
{
	char buf[64];

	stat_format_number(buf, sizeof(buf), v, decimals, big);
	assert_string_equal(buf, want);
}

static void test_thousands_separators(void **state)
{
	(void)state;
	check_number(0, 0, true, "0");
	check_number(999, 0, true, "999");
	check_number(1000, 0, true, "1,000");
	check_number(12345, 0, true, "12,345");
	check_number(1234567, 0, true, "1,234,567");
	check_number(1234.5678, 2, true, "1,234.57");
	check_number(123456.789, 2, true, "123,456.79");
	check_number(-1234567.5, 1, true, "-1,234,567.5");
	check_number(1234567, 0, false, "1234567");
	check_number(999.996, 2, true, "1,000.00"); /* the rounding carries into a new group */
}

static void test_spread(void **state)
{
	struct stat_spread s = { 0 };

	(void)state;
	stat_spread_add(&s, 10);
	assert_true(stat_spread_rel(&s) == 0); /* one run: no spread */
	stat_spread_add(&s, 12);
	stat_spread_add(&s, 14);
	/* mean 12, sample variance 4, standard error sqrt(4/3) = 1.1547, 9.62% of the mean */
	assert_true(s.mean == 12);
	assert_true(stat_spread_stderr(&s) > 1.15470 && stat_spread_stderr(&s) < 1.15471);
	assert_true(stat_spread_rel(&s) > 9.6225 && stat_spread_rel(&s) < 9.6226);
}

static struct stat_event_result event(const char *name, uint32_t type, uint64_t config, const double *runs, int n)
{
	struct stat_event_result e = { .type = type, .config = config, .state = STAT_COUNTED };

	snprintf(e.name, sizeof(e.name), "%s", name);
	for (int i = 0; i < n; i++) {
		stat_spread_add(&e.value, runs[i]);
		e.enabled += 2e6;
		e.running += 2e6;
	}
	if (!n)
		e.state = STAT_NOT_SUPPORTED;
	return e;
}

/* What stat_format_print writes for these events. */
static char *render(struct stat_output *o, const struct stat_event_result *ev, int n)
{
	char *buf = NULL;
	size_t len = 0;

	o->f = open_memstream(&buf, &len);
	assert_non_null(o->f);
	stat_format_print(o, ev, n);
	fclose(o->f);
	return buf;
}

static void test_table(void **state)
{
	const double tc[] = { 1234567890.0 }, pf[] = { 12345 }, cs[] = { 0 };
	struct stat_event_result ev[4] = {
		event("task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, tc, 1),
		event("page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, pf, 1),
		event("context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, cs, 1),
		event("cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, NULL, 0),
	};
	struct stat_output o = { .big_num = true, .target = "'true'", .runs = 1, .have_rusage = true,
				 .user_s = 1.0, .sys_s = 0.25 };
	char *s;

	(void)state;
	stat_spread_add(&o.elapsed_ns, 1259763153.0); /* 1234.57 ms of task-clock in it: 0.98 CPUs */
	ev[1].note = "a note about page-faults only";
	s = render(&o, ev, 4);
	assert_string_equal(s, "\n"
			       " Performance counter stats for 'true':\n"
			       "\n"
			       "          1,234.57 msec task-clock                       #    0.980 CPUs utilized\n"
			       "            12,345      page-faults                      #    9.999 K/sec\n"
			       "                        (a note about page-faults only)\n"
			       "                 0      context-switches                 #    0.000 /sec\n"
			       "   <not supported>      cycles\n"
			       "\n"
			       "       1.259763153 seconds time elapsed\n"
			       "\n"
			       "       1.000000000 seconds user\n"
			       "       0.250000000 seconds sys\n"
			       "\n");
	free(s);
	o.big_num = false;
	s = render(&o, ev, 1);
	assert_non_null(strstr(s, "\n           1234.57 msec task-clock "));
	free(s);
}

static void test_table_runs(void **state)
{
	const double tc[] = { 1e6, 1.2e6, 1.4e6 }, pf[] = { 48, 49, 50 }, cs[] = { 0, 0, 0 };
	struct stat_event_result ev[3] = {
		event("task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, tc, 3),
		event("page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, pf, 3),
		event("cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, cs, 3),
	};
	struct stat_output o = { .big_num = true, .target = "'true'", .runs = 3 };
	char *s;

	(void)state;
	stat_spread_add(&o.elapsed_ns, 2e6);
	stat_spread_add(&o.elapsed_ns, 2.4e6);
	stat_spread_add(&o.elapsed_ns, 2.8e6);
	s = render(&o, ev, 3);
	/*
	 * task-clock: mean 1.2 ms, standard error 0.11547 ms: 9.62%; page-faults
	 * mean 49, error 0.57735: 1.18%; a count of 0 has no spread. Elapsed:
	 * mean 2.4 ms, error 0.23094 ms, shown with 3 significant digits.
	 */
	assert_string_equal(s, "\n"
			       " Performance counter stats for 'true' (3 runs):\n"
			       "\n"
			       "              1.20 msec task-clock                       #    0.500 CPUs utilized"
			       "            ( +-  9.62% )\n"
			       "                49      page-faults                      #   40.833 K/sec"
			       "                    ( +-  1.18% )\n"
			       "                 0      cs                               #    0.000 /sec\n"
			       "\n"
			       "          0.002400 +- 0.000231 seconds time elapsed  ( +-  9.62% )\n"
			       "\n");
	free(s);
}

static void test_csv(void **state)
{
	const double tc[] = { 774461.0 }, pf[] = { 49 }, tc3[] = { 1e6, 1.2e6, 1.4e6 }, pf3[] = { 48, 49, 50 };
	struct stat_event_result ev[3] = {
		event("task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, tc, 1),
		event("page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, pf, 1),
		event("cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, NULL, 0),
	};
	struct stat_output o = { .sep = ",", .big_num = true, .target = "'true'", .runs = 1 };
	char *s;

	(void)state;
	ev[1].note = "never in CSV";
	ev[0].running = ev[1].running = 774461;
	ev[0].enabled = ev[1].enabled = 774461;
	stat_spread_add(&o.elapsed_ns, 1548922.0);
	s = render(&o, ev, 3);
	/* perf 6.1's -x, fields: value,unit,event,run-time,pct-running,metric-value,metric-unit */
	assert_string_equal(s, "0.77,msec,task-clock,774461,100.00,0.500,CPUs utilized\n"
			       "49,,page-faults,774461,100.00,63.270,K/sec\n"
			       "<not supported>,,cycles,0,100.00,,\n");
	free(s);

	/* -r: the spread comes after the event name; run-time is the mean per run. */
	ev[0] = event("task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, tc3, 3);
	ev[1] = event("page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, pf3, 3);
	ev[1].running = 3e6; /* ran half the time it was enabled */
	o.sep = ";";
	o.runs = 3;
	s = render(&o, ev, 3);
	assert_string_equal(s, "1.20;msec;task-clock;9.62%;2000000;100.00;0.775;CPUs utilized\n"
			       "49;;page-faults;1.18%;1000000;50.00;40.833;K/sec\n"
			       "<not supported>;;cycles;0.00%;0;100.00;;\n");
	free(s);
}

static void test_metrics(void **state)
{
	const double tc[] = { 2e9 }, cyc[] = { 6e9 }, ins[] = { 3e9 }, br[] = { 5e9 };
	struct stat_event_result ev[4] = {
		event("task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, tc, 1),
		event("cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, cyc, 1),
		event("instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, ins, 1),
		event("branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, br, 1),
	};
	double v;
	const char *unit;

	(void)state;
	assert_true(stat_format_metric(ev, 4, 0, 1e9, &v, &unit) && v == 2.0 && !strcmp(unit, "CPUs utilized"));
	assert_true(stat_format_metric(ev, 4, 1, 1e9, &v, &unit) && v == 3.0 && !strcmp(unit, "GHz"));
	assert_true(stat_format_metric(ev, 4, 2, 1e9, &v, &unit) && v == 0.5 && !strcmp(unit, "insn per cycle"));
	assert_true(stat_format_metric(ev, 4, 3, 1e9, &v, &unit) && v == 2.5 && !strcmp(unit, "G/sec"));
	/* Without task-clock there is no rate: perf prints none either. */
	assert_false(stat_format_metric(ev + 3, 1, 0, 1e9, &v, &unit));
	ev[0].state = STAT_NOT_COUNTED;
	assert_false(stat_format_metric(ev, 4, 0, 1e9, &v, &unit));
}

static void test_cli(void **state)
{
	static struct stat_opts o;
	const struct stat_cli cli = { .prog = "test", .usage = "usage\n", .help = "help\n" };
	char *ok[] = { "stat", "-e", "task-clock,page-faults", "-e", "cycles", "-r", "3", "-x", ";",
		       "--no-big-num", "--", "ls", "-l", NULL };
	char *cmd_opts[] = { "stat", "true", "-r", "5", NULL };
	char *bad_r[] = { "stat", "-r", "0", "true", NULL };
	char *bad_ev[] = { "stat", "-e", "no-such-event", "true", NULL };
	char *nothing[] = { "stat", NULL };
	char *dash_only[] = { "stat", "--", NULL };
	char *rep_pid[] = { "stat", "-r", "2", "-p", "1", NULL };

	(void)state;
	assert_int_equal(stat_cli_parse(&cli, 13, ok, &o), -1);
	assert_int_equal(o.nevents, 3);
	assert_string_equal(o.events[1].name, "page-faults");
	assert_int_equal(o.repeat, 3);
	assert_string_equal(o.sep, ";");
	assert_true(o.no_big_num);
	assert_string_equal(o.argv[0], "ls");
	assert_string_equal(o.argv[1], "-l");
	assert_int_equal(stat_cli_check_target(&cli, &o), -1);
	/* Options end at the command: its own -r is not ours. */
	assert_int_equal(stat_cli_parse(&cli, 4, cmd_opts, &o), -1);
	assert_int_equal(o.repeat, 0);
	assert_string_equal(o.argv[1], "-r");
	assert_int_equal(stat_cli_parse(&cli, 4, bad_r, &o), 2);
	assert_int_equal(stat_cli_parse(&cli, 4, bad_ev, &o), 2);
	assert_int_equal(stat_cli_parse(&cli, 1, nothing, &o), -1);
	assert_int_equal(stat_cli_check_target(&cli, &o), 2);
	assert_int_equal(stat_cli_parse(&cli, 2, dash_only, &o), 2);
	assert_int_equal(stat_cli_parse(&cli, 5, rep_pid, &o), -1);
	assert_int_equal(stat_cli_check_target(&cli, &o), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thousands_separators), cmocka_unit_test(test_spread),
		cmocka_unit_test(test_table),                cmocka_unit_test(test_table_runs),
		cmocka_unit_test(test_csv),                  cmocka_unit_test(test_metrics),
		cmocka_unit_test(test_cli),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
