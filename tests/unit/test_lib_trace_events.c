// SPDX-License-Identifier: MIT
/* The trace event table: ids stable and unique, names, argument lists, and --trace-events globs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

#include "common/trace_event_table.h"

/*
 * The ids trace files hold: written out here so that renumbering an event
 * (which would misread every older file) fails this test. Append only.
 */
static const char *const stable_ids[] = {
	"vcpu_start", "vcpu_stop", "vm_exit", "vm_entry", "pio", "mmio", "msr_read", "msr_write",
	"cpuid", "hlt", "pmu_counter_program", "pmu_overflow", "pmi_inject", "guest_sample",
	"guest_process_switch", "control_request", "vm_run_end", "rdpmc",
};

static void test_ids_are_stable_and_dense(void **state)
{
	(void)state;
	assert_true(KVMPROF_TRACE_EVENT_COUNT >= sizeof(stable_ids) / sizeof(stable_ids[0]));
	for (unsigned int i = 0; i < sizeof(stable_ids) / sizeof(stable_ids[0]); i++) {
		const struct trace_event_info *e = trace_event_info(i);

		assert_non_null(e);
		assert_int_equal(e->id, i);
		assert_string_equal(e->name, stable_ids[i]);
	}
	for (unsigned int i = 0; i < KVMPROF_TRACE_EVENT_COUNT; i++)
		assert_non_null(trace_event_info(i));
	assert_null(trace_event_info(KVMPROF_TRACE_EVENT_COUNT));
	assert_null(trace_event_info(0xffff));
	/* The enum the emit macro uses agrees with the table. */
	assert_int_equal(KVMPROF_TRACE_vm_exit, 2);
	assert_int_equal(KVMPROF_TRACE_control_request, 15);
	assert_int_equal(KVMPROF_TRACE_vm_run_end, 16);
	assert_int_equal(KVMPROF_TRACE_rdpmc, 17);
}

static void test_names_unique_and_described(void **state)
{
	(void)state;
	for (unsigned int i = 0; i < KVMPROF_TRACE_EVENT_COUNT; i++) {
		const struct trace_event_info *e = trace_event_info(i);

		assert_true(strlen(e->desc) > 10);
		for (unsigned int j = i + 1; j < KVMPROF_TRACE_EVENT_COUNT; j++)
			assert_string_not_equal(e->name, trace_event_info(j)->name);
	}
}

/* Every declared argument parses, with a known type, and there are exactly nargs of them. */
static void test_argument_lists(void **state)
{
	char name[32], type;

	(void)state;
	for (unsigned int i = 0; i < KVMPROF_TRACE_EVENT_COUNT; i++) {
		const struct trace_event_info *e = trace_event_info(i);
		unsigned int n = 0;

		assert_true(e->nargs <= KVMPROF_TRACE_MAX_ARGS);
		while (trace_event_arg(e, n, name, &type))
			n++;
		assert_int_equal(n, e->nargs);
		/* The spec holds no more arguments than nargs says. */
		unsigned int commas = 0;
		for (const char *p = e->args; *p; p++)
			commas += *p == ',';
		assert_int_equal(e->nargs ? commas + 1 : strlen(e->args), e->nargs);
	}
	assert_true(trace_event_arg(trace_event_info(KVMPROF_TRACE_pio), 0, name, &type));
	assert_string_equal(name, "port");
	assert_int_equal(type, 'x');
	assert_true(trace_event_arg(trace_event_info(KVMPROF_TRACE_pio), 2, name, &type));
	assert_string_equal(name, "out");
	assert_int_equal(type, 'u');
	assert_false(trace_event_arg(trace_event_info(KVMPROF_TRACE_pio), 4, name, &type));
}

static unsigned int count_enabled(const bool *on)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < KVMPROF_TRACE_EVENT_COUNT; i++)
		n += on[i];
	return n;
}

static void test_patterns(void **state)
{
	bool on[KVMPROF_TRACE_EVENT_COUNT];
	char err[128];

	(void)state;
	memset(on, 0, sizeof(on));
	assert_int_equal(trace_events_match(NULL, on, err, sizeof(err)), 0);
	assert_int_equal(count_enabled(on), KVMPROF_TRACE_EVENT_COUNT);

	memset(on, 0, sizeof(on));
	assert_int_equal(trace_events_match("pio", on, err, sizeof(err)), 0);
	assert_int_equal(count_enabled(on), 1);
	assert_true(on[KVMPROF_TRACE_pio]);

	memset(on, 0, sizeof(on));
	assert_int_equal(trace_events_match("msr_*,vm_*", on, err, sizeof(err)), 0);
	assert_int_equal(count_enabled(on), 5);
	assert_true(on[KVMPROF_TRACE_msr_read] && on[KVMPROF_TRACE_msr_write]);
	assert_true(on[KVMPROF_TRACE_vm_exit] && on[KVMPROF_TRACE_vm_entry] && on[KVMPROF_TRACE_vm_run_end]);

	memset(on, 0, sizeof(on));
	assert_int_equal(trace_events_match("pmi_inject,pmi_inject", on, err, sizeof(err)), 0);
	assert_int_equal(count_enabled(on), 1);
}

static void test_pattern_errors(void **state)
{
	bool on[KVMPROF_TRACE_EVENT_COUNT] = { 0 };
	char err[128];

	(void)state;
	assert_int_equal(trace_events_match("pio,nothing_*", on, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'nothing_*' matches no event"));
	assert_int_equal(trace_events_match("", on, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "empty pattern"));
	assert_int_equal(trace_events_match("pio,,mmio", on, err, sizeof(err)), -1);
	assert_int_equal(trace_events_match("pio,", on, err, sizeof(err)), -1);
	assert_int_equal(trace_events_match("PIO", on, err, sizeof(err)), -1); /* names are case-sensitive */
	char longglob[100];
	memset(longglob, '*', sizeof(longglob) - 1);
	longglob[sizeof(longglob) - 1] = '\0';
	assert_int_equal(trace_events_match(longglob, on, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "too long"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ids_are_stable_and_dense),
		cmocka_unit_test(test_names_unique_and_described),
		cmocka_unit_test(test_argument_lists),
		cmocka_unit_test(test_patterns),
		cmocka_unit_test(test_pattern_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
