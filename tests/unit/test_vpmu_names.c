// SPDX-License-Identifier: MIT
/*
 * The one table of vPMU names (vpmu/vpmu_names.c): every name the command
 * line takes parses to its value and prints back the same, and the lists
 * the option errors give stay what they were.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "vpmu_names.h"

static void assert_round_trip(const struct vpmu_names *t, const char *name, int value)
{
	int v = -1;

	assert_int_equal(vpmu_name_parse(t, name, &v), 0);
	assert_int_equal(v, value);
	assert_string_equal(vpmu_name_of(t, value), name);
}

static void test_models(void **state)
{
	(void)state;
	assert_round_trip(&vpmu_model_names, "off", VPMU_MODEL_OFF);
	assert_round_trip(&vpmu_model_names, "amd", VPMU_MODEL_AMD);
	assert_round_trip(&vpmu_model_names, "intel", VPMU_MODEL_INTEL);
	assert_string_equal(vpmu_model_name(VPMU_MODEL_INTEL), "intel");
}

static void test_backends(void **state)
{
	(void)state;
	assert_round_trip(&vpmu_backend_names, "auto", VPMU_BACKEND_AUTO);
	assert_round_trip(&vpmu_backend_names, "emulated", VPMU_BACKEND_EMULATED);
	assert_round_trip(&vpmu_backend_names, "kvm", VPMU_BACKEND_KVM);
	assert_round_trip(&vpmu_backend_names, "clock", VPMU_BACKEND_CLOCK);
	assert_round_trip(&vpmu_backend_names, "exact", VPMU_BACKEND_EXACT);
	assert_string_equal(vpmu_backend_name(VPMU_BACKEND_EXACT), "exact");
}

static void test_modes(void **state)
{
	(void)state;
	assert_round_trip(&vpmu_mode_names, "cpu-switch", VPMU_MODE_CPU_SWITCH);
	assert_round_trip(&vpmu_mode_names, "domain-switch", VPMU_MODE_DOMAIN_SWITCH);
	assert_string_equal(vpmu_mode_name(VPMU_MODE_DOMAIN_SWITCH), "domain-switch");
}

static void test_unknown_names_and_values(void **state)
{
	int v = 1234;

	(void)state;
	assert_int_equal(vpmu_name_parse(&vpmu_model_names, "AMD", &v), -EINVAL); /* names are exact */
	assert_int_equal(vpmu_name_parse(&vpmu_backend_names, "", &v), -EINVAL);
	assert_int_equal(vpmu_name_parse(&vpmu_mode_names, "cpu", &v), -EINVAL);
	assert_int_equal(v, 1234);
	assert_string_equal(vpmu_name_of(&vpmu_model_names, 99), "?");
}

static void test_choices_as_the_options_list_them(void **state)
{
	char buf[128], tiny[8];

	(void)state;
	vpmu_name_choices(&vpmu_model_names, buf, sizeof(buf));
	assert_string_equal(buf, "off, amd or intel");
	vpmu_name_choices(&vpmu_backend_names, buf, sizeof(buf));
	assert_string_equal(buf, "emulated, kvm, exact, clock or auto");
	vpmu_name_choices(&vpmu_mode_names, buf, sizeof(buf));
	assert_string_equal(buf, "cpu-switch or domain-switch");
	/* A short buffer holds a cut, terminated list. */
	vpmu_name_choices(&vpmu_backend_names, tiny, sizeof(tiny));
	assert_string_equal(tiny, "emulate");
}

/* --help lists every backend, its help's later lines under its first, in the name column's width. */
static void test_backend_help(void **state)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	(void)state;
	assert_non_null(out);
	vpmu_name_help(&vpmu_backend_names, out, 2);
	fclose(out);
	for (size_t i = 0; i < vpmu_backend_names.count; i++) {
		char line[32];

		snprintf(line, sizeof(line), "\n  %-8s  ", vpmu_backend_names.row[i].name);
		assert_non_null(vpmu_backend_names.row[i].help);
		assert_non_null(i ? strstr(text, line) : strstr(text, line + 1));
	}
	assert_non_null(strstr(text, "  exact     instructions and branches counted by\n            running counting"));
	assert_null(strstr(text, "off")); /* another table's */
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_models),
		cmocka_unit_test(test_backends),
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_unknown_names_and_values),
		cmocka_unit_test(test_choices_as_the_options_list_them),
		cmocka_unit_test(test_backend_help),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
