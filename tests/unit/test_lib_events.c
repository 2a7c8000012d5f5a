// SPDX-License-Identifier: MIT
/*
 * The event parser both profilers share (lib/collection/events.c): generic and libpfm4
 * names, OProfile's syntax, periods, errors, suggestions.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "collection/events.h"
#include "common/suggest.h"

static char err[256], unknown[KP_EVENT_NAME_MAX];

static int parse(const char *spec, struct events_event *ev)
{
	err[0] = 0;
	return events_parse(spec, ev, unknown, sizeof(unknown), err, sizeof(err));
}

static void test_generic(void **state)
{
	struct events_event ev;

	(void)state;
	assert_int_equal(parse("cycles", &ev), 0);
	assert_int_equal(ev.attr.type, PERF_TYPE_HARDWARE);
	assert_int_equal(ev.attr.config, PERF_COUNT_HW_CPU_CYCLES);
	assert_int_equal(ev.period, 0);
	assert_string_equal(ev.name, "cycles");
	assert_false(ev.attr.exclude_user || ev.attr.exclude_kernel);

	assert_int_equal(parse("cpu-clock", &ev), 0);
	assert_int_equal(ev.attr.type, PERF_TYPE_SOFTWARE);
	assert_int_equal(ev.attr.config, PERF_COUNT_SW_CPU_CLOCK);

	assert_int_equal(parse("branch-misses", &ev), 0);
	assert_int_equal(ev.attr.config, PERF_COUNT_HW_BRANCH_MISSES);
	assert_int_equal(parse("LLC-load-misses", &ev), 0);
	assert_int_equal(ev.attr.type, PERF_TYPE_HW_CACHE);
}

static void test_period_and_modifiers(void **state)
{
	struct events_event ev;

	(void)state;
	assert_int_equal(parse("instructions:100000", &ev), 0);
	assert_int_equal(ev.attr.config, PERF_COUNT_HW_INSTRUCTIONS);
	assert_int_equal(ev.period, 100000);
	assert_string_equal(ev.name, "instructions"); /* the period is not part of the name */

	assert_int_equal(parse("cycles:u", &ev), 0);
	assert_true(ev.attr.exclude_kernel);
	assert_false(ev.attr.exclude_user);
	assert_string_equal(ev.name, "cycles:u");

	assert_int_equal(parse("cycles:k:5000", &ev), 0);
	assert_true(ev.attr.exclude_user);
	assert_false(ev.attr.exclude_kernel);
	assert_int_equal(ev.period, 5000);
	assert_string_equal(ev.name, "cycles:k");

	assert_int_equal(parse("cycles:pp", &ev), 0);
	assert_int_equal(ev.attr.precise_ip, 2);
}

static void test_oprofile(void **state)
{
	struct events_event ev;

	(void)state;
	/* event:count */
	assert_int_equal(parse("CPU_CLK_UNHALTED:100000", &ev), 0);
	assert_int_equal(ev.attr.type, PERF_TYPE_HARDWARE);
	assert_int_equal(ev.attr.config, PERF_COUNT_HW_CPU_CYCLES);
	assert_int_equal(ev.period, 100000);
	assert_string_equal(ev.name, "CPU_CLK_UNHALTED");

	/* event:count:unitmask:kernel:user, user only */
	assert_int_equal(parse("INST_RETIRED:50000:0:0:1", &ev), 0);
	assert_int_equal(ev.period, 50000);
	assert_true(ev.attr.exclude_kernel);
	assert_false(ev.attr.exclude_user);

	/* kernel only, hex unit mask 0 */
	assert_int_equal(parse("cycles:2000:0x0:1:0", &ev), 0);
	assert_false(ev.attr.exclude_kernel);
	assert_true(ev.attr.exclude_user);
	assert_int_equal(ev.period, 2000);

	/* a nonzero numeric unit mask needs a raw event */
	assert_int_equal(parse("cycles:2000:0x41", &ev), -EINVAL);
	assert_non_null(strstr(err, "raw"));
	assert_int_equal(parse("cycles:2000:0x100", &ev), -EINVAL);
	assert_non_null(strstr(err, "unit mask"));
	assert_int_equal(parse("cycles:2000:0:2", &ev), -EINVAL);
	assert_non_null(strstr(err, "kernel field"));
	assert_int_equal(parse("cycles:2000:0:1:x", &ev), -EINVAL);
	assert_non_null(strstr(err, "user field"));
	assert_int_equal(parse("cycles:2000:0:0:0", &ev), -EINVAL);
	assert_non_null(strstr(err, "count nothing"));
	assert_int_equal(parse("cycles:2000:0:1:1:1", &ev), -EINVAL);
	assert_non_null(strstr(err, "too many fields"));
}

static void test_pfm(void **state)
{
	struct events_event ev;

	(void)state;
	/* libpfm4's perf PMU is there whatever the CPU */
	assert_int_equal(parse("perf::instructions", &ev), 0);
	assert_int_equal(ev.attr.type, PERF_TYPE_HARDWARE);
	assert_int_equal(ev.attr.config, PERF_COUNT_HW_INSTRUCTIONS);
	assert_false(ev.attr.exclude_guest); /* libpfm4 sets it; the agent does not want it */
	assert_string_equal(ev.name, "perf::instructions");

	assert_int_equal(parse("perf::cpu-clock:20000", &ev), 0);
	assert_int_equal(ev.attr.type, PERF_TYPE_SOFTWARE);
	assert_int_equal(ev.period, 20000);
	assert_string_equal(ev.name, "perf::cpu-clock");

	assert_int_equal(parse("perf::cycles:u", &ev), 0);
	assert_true(ev.attr.exclude_kernel);
	assert_false(ev.attr.exclude_user);

	assert_int_equal(parse("perf::cycles:bogus", &ev), -EINVAL);
	assert_non_null(strstr(err, "perf::cycles:bogus"));
}

static void test_errors(void **state)
{
	struct events_event ev;
	char big[300];

	(void)state;
	assert_int_equal(parse("", &ev), -EINVAL);
	assert_string_equal(err, "empty event name");
	assert_int_equal(parse("cycles:", &ev), -EINVAL);
	assert_non_null(strstr(err, "empty field"));
	assert_int_equal(parse("cycles::u", &ev), -ENOENT); /* "cycles::u" reads as PMU cycles, event u */
	assert_int_equal(parse("cycles:0", &ev), -EINVAL);
	assert_non_null(strstr(err, "at least 1"));
	assert_int_equal(parse("cycles:u:100:k", &ev), -EINVAL);
	assert_non_null(strstr(err, "period goes last"));
	assert_int_equal(parse("cycles:q", &ev), -EINVAL);
	assert_non_null(strstr(err, "unknown modifier 'q'"));
	assert_int_equal(parse("cycles:-5", &ev), -EINVAL);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	assert_int_equal(parse(big, &ev), -EINVAL);
	assert_non_null(strstr(err, "too long"));

	assert_int_equal(parse("cycels", &ev), -ENOENT);
	assert_string_equal(unknown, "cycels");
	assert_string_equal(err, "unknown event 'cycels'");
	assert_int_equal(parse("cycels:1000", &ev), -ENOENT);
	assert_string_equal(unknown, "cycels");
}

static void test_suggest(void **state)
{
	char out[512];

	(void)state;
	assert_true(events_suggest("cycels", 5, out, sizeof(out)) >= 1);
	assert_string_equal(strtok(out, ","), "cycles"); /* the closest first */
	assert_true(events_suggest("instrucions", 3, out, sizeof(out)) >= 1);
	assert_non_null(strstr(out, "instructions"));
	assert_true(events_suggest("cpu-clok", 3, out, sizeof(out)) >= 1);
	assert_non_null(strstr(out, "cpu-clock"));
	assert_true(events_suggest("CPU_CLK_UNHALTD", 3, out, sizeof(out)) >= 1);
	assert_non_null(strstr(out, "CPU_CLK_UNHALTED"));
	assert_int_equal(events_suggest("zzzzzzzzzzzzzzzzzzzzzzzz", 3, out, sizeof(out)), 0);
	assert_string_equal(out, "");
	/* at most `max` */
	assert_true(events_suggest("cache", 2, out, sizeof(out)) <= 2);
}

static void test_distance(void **state)
{
	(void)state;
	assert_int_equal(suggest_distance("cycles", "cycles"), 0);
	assert_int_equal(suggest_distance("cycels", "cycles"), 1); /* a transposition is one edit */
	assert_int_equal(suggest_distance("CYCLES", "cycles"), 0);
	assert_int_equal(suggest_distance("", "abc"), 3);
	assert_int_equal(suggest_distance("kitten", "sitting"), 3);
}

static void test_cpu_clock(void **state)
{
	struct events_event ev;

	(void)state;
	events_cpu_clock(&ev);
	assert_int_equal(ev.attr.type, PERF_TYPE_SOFTWARE);
	assert_int_equal(ev.attr.config, PERF_COUNT_SW_CPU_CLOCK);
	assert_string_equal(ev.name, "cpu-clock");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generic),  cmocka_unit_test(test_period_and_modifiers),
		cmocka_unit_test(test_oprofile), cmocka_unit_test(test_pfm),
		cmocka_unit_test(test_errors),   cmocka_unit_test(test_suggest),
		cmocka_unit_test(test_distance), cmocka_unit_test(test_cpu_clock),
	};

	return cmocka_run_group_tests_name("lib_events", tests, NULL, NULL);
}
