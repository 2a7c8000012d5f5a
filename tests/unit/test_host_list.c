// SPDX-License-Identifier: MIT
/*
 * kvmprof list's vPMU section (host-profiler/list_events.c): one line per
 * row of each model's table (vpmu/vpmu_model_events.c), no more, no fewer;
 * each raw name, parsed as the guest's kvmprof-agent record -e parses it
 * (lib/collection/events.c, through libpfm4), opens exactly that event select and
 * unit mask; a filter keeps only matching rows.
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

#include "collection/events.h"
#include "host_list.h"
#include "vpmu_model_events.h"

static char *list_models(const char *filter, unsigned int *shown)
{
	struct event_list l;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	event_list_init(&l, f, filter, false);
	host_list_vpmu_models(&l);
	fclose(f);
	*shown = l.shown;
	return buf;
}

/* Event lines ("  NAME") in the section that starts with heading. */
static unsigned int rows_under(const char *text, const char *heading)
{
	const char *p = strstr(text, heading);
	unsigned int n = 0;

	assert_non_null(p);
	for (p = strchr(p, '\n'); p && p[1] && p[1] != '\n' && strncmp(p + 1, "vPMU", 4); p = strchr(p + 1, '\n'))
		n += !strncmp(p + 1, "  ", 2) && p[3] != ' ';
	return n;
}

static void test_one_line_per_row(void **state)
{
	const struct vpmu_model_events *intel = vpmu_model_events(VPMU_MODEL_INTEL),
				       *amd = vpmu_model_events(VPMU_MODEL_AMD);
	unsigned int shown;
	char *text = list_models(NULL, &shown);

	(void)state;
	assert_int_equal(intel->count, 8);
	assert_int_equal(amd->count, 7);
	assert_int_equal(vpmu_model_events(VPMU_MODEL_OFF)->count, 0);
	assert_int_equal(shown, intel->count + amd->count);
	assert_int_equal(rows_under(text, "vPMU model intel (kvmprof-vmm --vpmu=intel)"), intel->count);
	assert_int_equal(rows_under(text, "vPMU model amd (kvmprof-vmm --vpmu=amd)"), amd->count);
	assert_non_null(strstr(text, "\n  cycles OR r003c\n       [event=0x3c,umask=0x00: UnHalted Core Cycles"));
	assert_non_null(strstr(text, "\n  r20c4\n       [event=0xc4,umask=0x20: "));
	assert_non_null(strstr(text, "\n  r00c4\n       [event=0xc4,umask=0x00: PMCx0C4"));
	free(text);
}

/* The raw spelling listed opens, through the agent's parser, the row's select and unit mask. */
static void test_raw_names_encode_the_row(void **state)
{
	(void)state;
	for (int m = VPMU_MODEL_AMD; m <= VPMU_MODEL_INTEL; m++) {
		const struct vpmu_model_events *t = vpmu_model_events((enum vpmu_model)m);

		for (size_t i = 0; i < t->count; i++) {
			struct events_event ev;
			char raw[24], err[256], unknown[64];

			vpmu_model_event_raw_name(&t->row[i], raw, sizeof(raw));
			assert_int_equal(events_parse(raw, &ev, unknown, sizeof(unknown), err, sizeof(err)), 0);
			assert_int_equal(ev.attr.type, PERF_TYPE_RAW);
			assert_int_equal(ev.attr.config, ((uint64_t)t->row[i].umask << 8) | t->row[i].select);
			if (t->row[i].linux_name) {
				assert_int_equal(events_parse(t->row[i].linux_name, &ev, unknown, sizeof(unknown), err,
							      sizeof(err)), 0);
				assert_int_equal(ev.attr.type, PERF_TYPE_HARDWARE);
			}
		}
	}
}

static void test_filter(void **state)
{
	unsigned int shown;
	char *text = list_models("taken", &shown);

	(void)state;
	/* The two taken-branch events, one per model. */
	assert_int_equal(shown, 2);
	assert_non_null(strstr(text, "  r20c4\n"));
	assert_non_null(strstr(text, "  r00c4\n"));
	free(text);
	text = list_models("cycles", &shown);
	/* Intel: cycles, bus-cycles (and its ref-cycles note); AMD: cycles. */
	assert_int_equal(shown, 3);
	free(text);
	text = list_models("r00c?", &shown);
	/* A glob on the raw names: c0 twice, c2, c3, c4 twice, c5. */
	assert_int_equal(shown, 7);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_line_per_row),
		cmocka_unit_test(test_raw_names_encode_the_row),
		cmocka_unit_test(test_filter),
	};

	return cmocka_run_group_tests_name("host_list", tests, NULL, NULL);
}
