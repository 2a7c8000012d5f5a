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

#include "cli/cli.h"
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
	static const struct option own[] = { { "duration", required_argument, NULL, 'd' } };
	struct option opts[CLI_OWN_LONGOPTS_MAX + 1];
	struct vm_target_choice c = { 0 };
	char usage[256], want[256] = "usage: x ";
	size_t kinds = 0;

	(void)state;
	vm_target_command(opts, own, 1, usage, sizeof(usage), "usage: x ", " [-d S]\n");
	while (vm_target_kinds[kinds].option) {
		const struct vm_target_kind *k = &vm_target_kinds[kinds];

		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s--%s %s", kinds ? " | " : "", k->option,
			 k->arg);
		kinds++;
	}
	strcat(want, " [-d S]\n");
	assert_string_equal(usage, want);
	assert_string_equal(opts[0].name, "duration");
	for (size_t i = 1; i <= kinds; i++) {
		assert_string_equal(opts[i].name, vm_target_kinds[i - 1].option);
		assert_int_equal(opts[i].has_arg, required_argument);
		assert_int_equal(opts[i].val, vm_target_kinds[i - 1].val);
	}
	assert_null(opts[kinds + 1].name);
	/* A usage buffer too small is cut, never overrun. */
	vm_target_command(opts, own, 1, usage, 12, "usage: x ", " [-d S]\n");
	assert_int_equal(strlen(usage), 11);
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

/* record's, top's and stat's --help list every row, its words included. */
static void test_help_lists_every_target(void **state)
{
	char buf[4096], item[96];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	(void)state;
	assert_non_null(f);
	vm_target_help(f);
	fclose(f);
	for (const struct vm_target_kind *k = vm_target_kinds; k->option; k++) {
		assert_non_null(k->help);
		snprintf(item, sizeof(item), "\n  --%s %s ", k->option, k->arg);
		assert_non_null(strstr(buf, item));
		/* its help's first words follow, on that line (wrapping comes later) */
		snprintf(item, sizeof(item), "\n  --%s %s%*s%.30s", k->option, k->arg,
			 (int)(22 - 5 - strlen(k->option) - strlen(k->arg)), "", k->help);
		assert_non_null(strstr(buf, item));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_are_distinct_and_complete),
		cmocka_unit_test(test_longopts_and_choice),
		cmocka_unit_test(test_help_lists_every_target),
		cmocka_unit_test(test_choices_name_every_kind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
