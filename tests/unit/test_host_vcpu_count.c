// SPDX-License-Identifier: MIT
/*
 * The report header's guest-sampling line counts vCPUs in English: "its
 * 1 vCPU", not "each of its 1 vCPUs" (issue 31). The other places that
 * count vCPUs (kvmprof list domains, the domain sampler's summary, the
 * VMM's vPMU statistics, exit_histogram) need a VM or libvirt and follow
 * the same rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "host_report.h"

static char *guest_sampling_line(const char *status)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	host_report_guest_sampling(f, status);
	fclose(f);
	return buf;
}

static void test_one_and_two(void **state)
{
	char *line;

	(void)state;
	line = guest_sampling_line("on: 1 vCPU rings");
	assert_string_equal(line, "guest samples: on: taken by the VMM on its 1 vCPU\n");
	free(line);
	line = guest_sampling_line("on: 2 vCPU rings, 3 lost");
	assert_string_equal(line, "guest samples: on: taken by the VMM on each of its 2 vCPUs, 3 lost\n");
	free(line);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_and_two),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
