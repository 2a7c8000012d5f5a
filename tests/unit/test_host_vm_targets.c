// SPDX-License-Identifier: MIT
/*
 * The table of VM kinds kvmprof profiles (host-profiler/vm_targets.c):
 * every row has its own option and getopt value, record, top and stat get
 * a getopt row for each, a given option chooses its row (two count as
 * two), and the usage errors list every kind from the rows.
 */
#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "vm_target_kind.h"

static void test_rows_are_distinct_and_complete(void **state)
{
	(void)state;
	assert_non_null(vm_target_kinds[0].option);
	for (const struct vm_target_kind *a = vm_target_kinds; a->option; a++) {
		assert_non_null(a->arg);
		assert_non_null(a->about);
		assert_non_null(a->open);
		assert_ptr_equal(vm_target_kind_of(a->option), a);
		for (const struct vm_target_kind *b = a + 1; b->option; b++) {
			assert_string_not_equal(a->option, b->option);
			assert_int_not_equal(a->val, b->val);
		}
	}
	assert_null(vm_target_kind_of("no-such-kind"));
}

static void test_longopts_and_choice(void **state)
{
	struct option opts[8] = { { "duration", required_argument, NULL, 'd' } };
	struct vm_target_choice c = { 0 };
	size_t n = vm_target_longopts(opts, 1, 7), kinds = 0;

	(void)state;
	while (vm_target_kinds[kinds].option)
		kinds++;
	assert_int_equal(n, 1 + kinds);
	for (size_t i = 1; i < n; i++) {
		assert_string_equal(opts[i].name, vm_target_kinds[i - 1].option);
		assert_int_equal(opts[i].has_arg, required_argument);
	}
	assert_int_equal(vm_target_longopts(opts, 7, 7), 7); /* no room: nothing written */
	assert_false(vm_target_option(&c, 'd', "5"));
	assert_int_equal(c.given, 0);
	assert_true(vm_target_option(&c, vm_target_kind_of("domain")->val, "web"));
	assert_ptr_equal(c.kind, vm_target_kind_of("domain"));
	assert_string_equal(c.arg, "web");
	assert_true(vm_target_option(&c, vm_target_kind_of("vm")->val, "/run/s"));
	assert_int_equal(c.given, 2);
}

static void test_choices_name_every_kind(void **state)
{
	char buf[512], tiny[10];

	(void)state;
	vm_target_choices(buf, sizeof(buf), NULL);
	assert_string_equal(buf, "--vm SOCKET (kvmprof-vmm --control SOCKET) or --domain NAME (a libvirt domain)");
	vm_target_choices(buf, sizeof(buf), "--all-domains");
	assert_string_equal(buf, "--vm SOCKET (kvmprof-vmm --control SOCKET), --domain NAME (a libvirt domain) or "
				 "--all-domains");
	vm_target_choices(tiny, sizeof(tiny), "--all-domains");
	assert_string_equal(tiny, "--vm SOCK");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_are_distinct_and_complete),
		cmocka_unit_test(test_longopts_and_choice),
		cmocka_unit_test(test_choices_name_every_kind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
