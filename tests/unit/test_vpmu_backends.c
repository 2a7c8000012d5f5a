// SPDX-License-Identifier: MIT
/*
 * The vPMU backend table (vpmu/backends.c): every backend but "auto" has one
 * row, each row has a name the command line takes, the VMM's own backends
 * carry what pmu.c needs to run them, and --vpmu-backend=auto always finds
 * one (its last candidate needs no probe). A new backend that misses a
 * piece fails here, not in a VM.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "backends.h"

static void test_every_choice_has_one_row(void **state)
{
	(void)state;
	for (size_t i = 0; i < vpmu_backend_names.count; i++) {
		enum vpmu_backend_choice c = (enum vpmu_backend_choice)vpmu_backend_names.row[i].value;
		unsigned int rows = 0;

		for (const struct vpmu_backend_desc *const *b = vpmu_backends; *b; b++)
			rows += (*b)->choice == c;
		assert_int_equal(rows, c == VPMU_BACKEND_AUTO ? 0 : 1);
		if (c != VPMU_BACKEND_AUTO)
			assert_int_equal(vpmu_backend_desc_of(c)->choice, c);
	}
	assert_null(vpmu_backend_desc_of(VPMU_BACKEND_AUTO));
}

static void test_rows_are_complete(void **state)
{
	(void)state;
	for (const struct vpmu_backend_desc *const *b = vpmu_backends; *b; b++) {
		assert_non_null((*b)->what);
		assert_string_not_equal(vpmu_backend_name((*b)->choice), "?");
		if ((*b)->probe)
			assert_non_null((*b)->unavailable);
		if ((*b)->in_kernel) {
			assert_null((*b)->ops);
			assert_false((*b)->exact);
			continue;
		}
		assert_non_null((*b)->ops);
		assert_true((*b)->state_size > 0);
		assert_non_null((*b)->state_init);
		assert_string_equal((*b)->ops->name, vpmu_backend_name((*b)->choice));
	}
}

static void test_auto_always_finds_one(void **state)
{
	const struct vpmu_backend_desc *last = NULL;

	(void)state;
	for (const struct vpmu_backend_desc *const *b = vpmu_backends; *b; b++)
		if ((*b)->auto_pick)
			last = *b;
	assert_non_null(last);
	assert_null(last->probe);
	/* With no hardware counters the emulator counts: the exact backend. */
	assert_int_equal(last->choice, VPMU_BACKEND_EXACT);
	assert_false(vpmu_backend_clock.auto_pick);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_choice_has_one_row),
		cmocka_unit_test(test_rows_are_complete),
		cmocka_unit_test(test_auto_always_finds_one),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
