/* SPDX-License-Identifier: MIT */
/*
 * The hottest-symbols table kvmprof report and kvmprof top share
 * (hot_table.c), and the live profile top feeds it (profile_update,
 * profile_drop_samples), on the small system-wide world of
 * profile_exit_fixture.h.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>
#include <linux/perf_event.h>

#include "hot_table.h"
#include "profile_exit_fixture.h"

#define MS 1000000ull

static void guest_sample(struct profile *p, uint32_t pid, uint64_t t, uint64_t ip)
{
	pf_sample(p, KP_DOMAIN_GUEST, pid, pid, t, 1, ip, KP_CPL_USER, NULL, 0);
}

/* spam in alpha 3 times, pmu in beta twice, the host kernel's handle_io twice, the VMM's alpha once. */
static void add_window(struct profile *p, uint64_t t0)
{
	for (int i = 0; i < 3; i++)
		guest_sample(p, PF_SPAM_PID, t0 + (uint64_t)i * MS, FX_ALPHA + 1);
	guest_sample(p, PF_PMU_PID, t0 + 4 * MS, FX_BETA + 1);
	guest_sample(p, PF_PMU_PID, t0 + 5 * MS, FX_BETA + 2);
	pf_host_sample(p, 101, t0 + 6 * MS, PF_HANDLE_IO + 8, KP_CPL_KERNEL, NULL, 0);
	pf_host_sample(p, 101, t0 + 7 * MS, PF_HANDLE_IO + 9, KP_CPL_KERNEL, NULL, 0);
	pf_host_sample(p, 101, t0 + 8 * MS, FX_ALPHA + 1, KP_CPL_USER, NULL, 0);
}

static char *row_text(const struct profile *p, const struct hot_table *t, size_t i, size_t width)
{
	struct hot_columns c = HOT_COLUMNS_REPORT(true);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	c.width = width;
	hot_table_print_row(f, p, t, &t->rows[i], &c);
	fclose(f);
	return buf;
}

static void check_window_table(const struct profile *p, struct hot_table *t)
{
	static const struct {
		uint32_t layer, pid;
		const char *comm, *func;
		uint64_t count;
	} want[] = {
		{ HOST_LAYER_GUEST_USER, PF_SPAM_PID, "spam", "alpha", 3 },
		/* 2 and 2: the guest's row first (domains in table order), then the host kernel's */
		{ HOST_LAYER_GUEST_USER, PF_PMU_PID, "pmu", "beta", 2 },
		{ HOST_LAYER_HOST_KERNEL, PF_VMM_PID, "vmm", "handle_io", 2 },
		{ HOST_LAYER_VMM_USER, PF_VMM_PID, "vmm", "alpha", 1 },
	};
	uint64_t sum = 0;

	assert_int_equal(hot_table_build(t, p, true), 0);
	assert_int_equal(t->nr, 4);
	assert_int_equal(t->total, 8);
	for (size_t i = 0; i < t->nr; i++) {
		const struct hot_row *r = &t->rows[i];

		assert_int_equal(r->layer, want[i].layer);
		assert_int_equal(r->pid, want[i].pid);
		assert_string_equal(p->comms[r->comm], want[i].comm);
		assert_string_equal(p->funcs[r->func].name, want[i].func);
		assert_int_equal(r->count, want[i].count);
		sum += r->count;
	}
	assert_int_equal(sum, t->total);
	assert_int_equal(t->by_layer[HOST_LAYER_GUEST_USER], 5);
	assert_int_equal(t->by_layer[HOST_LAYER_GUEST_KERNEL], 0);
	assert_int_equal(t->by_layer[HOST_LAYER_VMM_USER], 1);
	assert_int_equal(t->by_layer[HOST_LAYER_HOST_KERNEL], 2);
}

/* A finished profile: rows by (domain, process, function), hottest first, adding up to the total. */
static void test_table_of_finished_profile(void **state)
{
	struct profile_options opt = { .guest_root = pf_dir };
	struct hot_table t = { 0 };
	struct profile *p;
	char *line;

	(void)state;
	assert_int_equal(profile_new(&p, &opt), 0);
	pf_world(p, pf_native_elf);
	pf_event(p, 0, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 1000, KP_EVENT_FREQ);
	add_window(p, 10 * MS);
	assert_int_equal(profile_finish(p), 0);
	check_window_table(p, &t);
	line = row_text(p, &t, 0, 0);
	assert_string_equal(line, "         3   37.50%  guest user    spam [7]                     fx                   alpha");
	free(line);
	/* Without processes: the VMM's alpha and the guest's stay apart by domain. */
	assert_int_equal(hot_table_build(&t, p, false), 0);
	assert_int_equal(t.nr, 4);
	assert_int_equal(t.rows[0].count, 3);
	hot_table_free(&t);
	profile_free(p);
}

/*
 * kvmprof top's profile: each window's samples alone; what the first
 * resolved (functions, locations) is reused, not resolved again; a
 * process named after the first window names the second's samples.
 */
static void test_live_profile_windows(void **state)
{
	struct profile_options opt = { .guest_root = pf_dir };
	struct hot_table t = { 0 };
	struct profile *p;
	size_t funcs, locs;

	(void)state;
	assert_int_equal(profile_new(&p, &opt), 0);
	pf_world(p, pf_native_elf);
	pf_event(p, 0, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 1000, KP_EVENT_FREQ);
	add_window(p, 10 * MS);
	assert_int_equal(profile_update(p), 0);
	check_window_table(p, &t);
	assert_int_equal(p->events[0].samples, 8);
	funcs = p->nr_funcs;
	locs = p->nr_locs;
	profile_drop_samples(p);
	assert_int_equal(p->nr_samples, 0);
	assert_int_equal(p->events[0].samples, 0);

	/* The same addresses again: the same table, nothing new to resolve. */
	add_window(p, 1000 * MS);
	assert_int_equal(profile_update(p), 0);
	check_window_table(p, &t);
	assert_int_equal(p->events[0].samples, 8);
	assert_int_equal(p->nr_funcs, funcs);
	assert_int_equal(p->nr_locs, locs);
	profile_drop_samples(p);

	/* A guest process that starts in the third window, with its own mapping. */
	pf_comm(p, 9, "late", true);
	pf_mmap(p, 9, "/bin/fx", true);
	guest_sample(p, 9, 2000 * MS, FX_BETA + 1);
	assert_int_equal(profile_update(p), 0);
	assert_int_equal(hot_table_build(&t, p, true), 0);
	assert_int_equal(t.nr, 1);
	assert_int_equal(t.total, 1);
	assert_string_equal(p->comms[t.rows[0].comm], "late");
	assert_string_equal(p->funcs[t.rows[0].func].name, "beta");
	hot_table_free(&t);
	profile_free(p);
}

/* A guest's names reach the terminal as printable text only; a cut line keeps no half character. */
static void test_hostile_names(void **state)
{
	struct profile_options opt = { .guest_root = pf_dir };
	struct hot_table t = { 0 };
	struct profile *p;
	char *line;

	(void)state;
	assert_int_equal(profile_new(&p, &opt), 0);
	pf_world(p, pf_native_elf);
	pf_event(p, 0, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 1000, KP_EVENT_FREQ);
	pf_comm(p, 9, "ev\x1b]0;x\x07il\xc3\xa9", true);
	pf_mmap(p, 9, "/bin/fx", true);
	guest_sample(p, 9, 10 * MS, FX_ALPHA + 1);
	assert_int_equal(profile_update(p), 0);
	assert_int_equal(hot_table_build(&t, p, true), 0);
	line = row_text(p, &t, 0, 0);
	assert_null(strchr(line, '\x1b'));
	assert_null(strchr(line, '\x07'));
	assert_non_null(strstr(line, "ev?]0;x?il\xc3\xa9 [9]"));
	free(line);
	/* Cut inside the two bytes of the é: neither is left. */
	line = row_text(p, &t, 0, 46);
	assert_int_equal(strlen(line), 46);
	assert_null(strchr(line, '\xc3'));
	free(line);
	hot_table_free(&t);
	profile_free(p);
}

/* A terminal's columns: a long process name gives way to its pid, the image is cut, the symbol stays whole. */
static void test_terminal_columns(void **state)
{
	struct profile_options opt = { .guest_root = pf_dir };
	struct hot_columns c = { .process = true, .image = true, .process_width = 12, .image_width = 1, .cut = true };
	struct hot_table t = { 0 };
	struct profile *p;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(profile_new(&p, &opt), 0);
	pf_world(p, pf_native_elf);
	pf_event(p, 0, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 1000, KP_EVENT_FREQ);
	pf_comm(p, 9, "long-process-nm", true);
	pf_mmap(p, 9, "/bin/fx", true);
	guest_sample(p, 9, 10 * MS, FX_BETA + 1);
	assert_int_equal(profile_update(p), 0);
	assert_int_equal(hot_table_build(&t, p, true), 0);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	hot_table_print_heading(f, &c);
	fputc('\n', f);
	hot_table_print_row(f, p, &t, &t.rows[0], &c);
	fclose(f);
	assert_string_equal(buf, "   samples        %  domain        process      i symbol\n"
				 "         1  100.00%  guest user    long-pr~ [9] f beta");
	free(buf);
	hot_table_free(&t);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_of_finished_profile),
		cmocka_unit_test(test_live_profile_windows),
		cmocka_unit_test(test_hostile_names),
		cmocka_unit_test(test_terminal_columns),
	};

	return cmocka_run_group_tests(tests, pf_setup, pf_teardown);
}
