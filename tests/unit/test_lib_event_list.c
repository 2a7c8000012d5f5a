// SPDX-License-Identifier: MIT
/*
 * `list` (lib/cli/event_list.c): every generic name events_parse takes is
 * listed, with perf's tags and, without a hardware PMU, the cpu-clock note on
 * hardware events only; a filter keeps only matching events (substring of
 * name or description, or a glob on one name); every libpfm4 name listed
 * parses with -e as printed; the argument rules.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cmocka.h>

#include "cli/event_list.h"
#include "collection/events.h"

#define NOTE "not countable here: cpu-clock stands in"

/* The host listing as text, and how many events it printed. */
static char *list_host(const char *filter, bool hw, unsigned int *shown)
{
	struct event_list l;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	event_list_init(&l, f, filter, hw);
	event_list_host(&l, "Events");
	fclose(f);
	*shown = l.shown;
	return buf;
}

/* The line that lists name (its first " OR "-separated name, or an alias), or NULL. */
static const char *line_of(const char *text, const char *name, char *line, size_t size)
{
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char want[128];

		snprintf(line, size, "%.*s", (int)n, p);
		snprintf(want, sizeof(want), "  %s ", name);
		if (!strncmp(line, want, strlen(want)))
			return line;
		snprintf(want, sizeof(want), " OR %s ", name);
		if (!strncmp(line, "  ", 2) && strstr(line, want))
			return line;
		p += n + (nl ? 1 : 0);
	}
	return NULL;
}

static void test_generic_events_listed(void **state)
{
	unsigned int shown, shown_hw;
	char *text = list_host(NULL, false, &shown), *text_hw = list_host(NULL, true, &shown_hw);
	size_t n = events_generic_count();
	char line[512];

	(void)state;
	for (size_t i = 0; i < n; i++) {
		uint32_t type;
		uint64_t config;
		const char *name = events_generic(i, &type, &config);

		assert_non_null(line_of(text, name, line, sizeof(line)));
		if (type == PERF_TYPE_SOFTWARE) {
			assert_non_null(strstr(line, "[Software event]"));
		} else {
			assert_non_null(strstr(line, type == PERF_TYPE_HARDWARE ? "[Hardware event; " NOTE "]" :
										 "[Hardware cache event; " NOTE "]"));
			assert_non_null(line_of(text_hw, name, line, sizeof(line)));
			assert_null(strstr(line, NOTE));
		}
	}
	assert_non_null(line_of(text, "cycles", line, sizeof(line)));
	assert_string_equal(line, "  cycles OR cpu-cycles                               [Hardware event; " NOTE "]");
	assert_non_null(line_of(text, "cs", line, sizeof(line)));
	assert_string_equal(line, "  context-switches OR cs                             [Software event]");
	assert_int_equal(shown, shown_hw);
	assert_null(strstr(text_hw, NOTE));
	free(text);
	free(text_hw);
}

/* Every event printed under a filter: its name line and the description line after it. */
static void check_filtered(const char *filter, bool glob)
{
	unsigned int shown, all;
	char *text = list_host(filter, false, &shown), *everything = list_host(NULL, false, &all);
	unsigned int events = 0;
	char *save = NULL, *prev = NULL;

	assert_true(shown > 0);
	assert_true(shown < all);
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "       [", 8)) {
			/* A libpfm4 event: its name (the line before) or this description has it. */
			assert_non_null(prev);
			if (!glob)
				assert_true(strcasestr(prev, filter) || strcasestr(line, filter));
			prev = NULL;
			continue;
		}
		if (prev && !glob)
			assert_non_null(strcasestr(prev, filter));
		prev = strncmp(line, "  ", 2) ? NULL : line;
		events += prev != NULL;
	}
	assert_int_equal(events, shown);
	free(text);
	free(everything);
}

static void test_filter(void **state)
{
	unsigned int shown;
	char *text;
	char line[512];

	(void)state;
	check_filtered("cache", false);
	check_filtered("CACHE", false);
	text = list_host("cache", false, &shown);
	assert_non_null(line_of(text, "cache-misses", line, sizeof(line)));
	assert_non_null(line_of(text, "L1-dcache-loads", line, sizeof(line)));
	assert_null(line_of(text, "cpu-clock", line, sizeof(line)));
	free(text);

	/* A glob matches one name, an alias included: exactly the five -faults events. */
	text = list_host("*-faults", false, &shown);
	assert_int_equal(shown, 5);
	assert_non_null(line_of(text, "faults", line, sizeof(line)));
	assert_string_equal(line, "  page-faults OR faults                              [Software event]");
	free(text);
	text = list_host("cs", false, &shown);
	assert_non_null(line_of(text, "cs", line, sizeof(line)));
	free(text);

	text = list_host("no-such-event-anywhere", false, &shown);
	assert_int_equal(shown, 0);
	assert_string_equal(text, "");
	free(text);
}

/* Every libpfm4 name printed is one -e takes: the listing and the parser read the same tables. */
static void test_pfm_names_parse(void **state)
{
	unsigned int shown, parsed = 0;
	char *text = list_host(NULL, false, &shown), *save = NULL;

	(void)state;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct events_event ev;
		char err[256], unknown[64];

		if (strncmp(line, "  ", 2) || !strstr(line, "::") || strchr(line + 2, ' '))
			continue;
		/* Unit masks alone may need others with them; the event names must be known. */
		assert_int_not_equal(events_parse(line + 2, &ev, unknown, sizeof(unknown), err, sizeof(err)), -ENOENT);
		parsed++;
	}
	/* libpfm4 knows this machine's CPU model or not; with it, its events are listed. */
	if (!parsed)
		print_message("libpfm4 finds no model-specific PMU here: no PMU::EVENT lines to check\n");
	else
		print_message("%u libpfm4 names parsed\n", parsed);
	free(text);
}

static void test_args(void **state)
{
	struct event_list_args a;
	char *one[] = { "list", NULL }, *f[] = { "list", "cache", NULL }, *two[] = { "list", "a", "b", NULL },
	     *bad[] = { "list", "--bogus", NULL }, *empty[] = { "list", "", NULL },
	     *det[] = { "list", "--details", "taken", NULL };

	(void)state;
	assert_int_equal(event_list_parse_args("t list", "usage\n", "help\n", 1, one, &a), -1);
	assert_null(a.filter);
	assert_false(a.details);
	assert_int_equal(event_list_parse_args("t list", "usage\n", "help\n", 2, f, &a), -1);
	assert_string_equal(a.filter, "cache");
	assert_int_equal(event_list_parse_args("t list", "usage\n", "help\n", 3, det, &a), -1);
	assert_string_equal(a.filter, "taken");
	assert_true(a.details);
	assert_int_equal(event_list_parse_args("t list", "usage\n", "help\n", 3, two, &a), 2);
	assert_int_equal(event_list_parse_args("t list", "usage\n", "help\n", 2, bad, &a), 2);
	assert_int_equal(event_list_parse_args("t list", "usage\n", "help\n", 2, empty, &a), 2);
}

/*
 * --details: under each libpfm4 event, the encoding -e NAME opens, the
 * parser's own (events_parse of the name printed gives the same config).
 */
static void test_details(void **state)
{
	struct event_list l;
	char *buf = NULL, *save = NULL, *name = NULL;
	size_t len = 0;
	unsigned int checked = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_non_null(f);
	event_list_init(&l, f, NULL, false);
	l.details = true;
	event_list_host(&l, "Events");
	fclose(f);
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned int type;
		unsigned long long config;
		struct events_event ev;
		char err[256], unknown[64];

		if (!strncmp(line, "  ", 2) && line[2] != ' ') {
			name = strstr(line, "::") ? line + 2 : NULL;
			continue;
		}
		if (!name || sscanf(line, "       [perf type %u%*[^,], config %llx", &type, &config) != 2)
			continue;
		assert_int_equal(events_parse(name, &ev, unknown, sizeof(unknown), err, sizeof(err)), 0);
		assert_int_equal(ev.attr.type, type);
		assert_int_equal(ev.attr.config, config);
		checked++;
		name = NULL;
	}
	if (!checked)
		print_message("libpfm4 finds no model-specific PMU here: no encodings to check\n");
	else
		print_message("%u encodings match the parser's\n", checked);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generic_events_listed),
		cmocka_unit_test(test_filter),
		cmocka_unit_test(test_pfm_names_parse),
		cmocka_unit_test(test_args),
		cmocka_unit_test(test_details),
	};

	return cmocka_run_group_tests_name("lib_event_list", tests, NULL, NULL);
}
