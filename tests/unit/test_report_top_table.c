/* SPDX-License-Identifier: MIT */
/*
 * The table kvmprof top refreshes: kvmprof report's (lib/report/report_table.c
 * with host_report_table_defaults), fitted to a terminal
 * (report_table_print_fit); and the live profile top feeds it
 * (profile_update, profile_drop_samples), on the small system-wide world
 * of profile_exit_fixture.h.
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
#include <linux/perf_event.h>

#include "host_report.h"
#include "profile_exit_fixture.h"
#include "report/report_table.h"

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

static struct report_table_options top_options(void)
{
	struct report_table_options o = { 0 };

	host_report_table_defaults(&o);
	return o;
}

/* The table as printed (fit NULL: as the report prints it), heading and rows. */
static char *table_text(const struct profile *p, const struct report_table *t, const struct report_table_options *o,
			const struct report_table_fit *fit)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(report_table_print_fit(f, p, t, 0, t->nr, p->nr_samples, o, REPORT_STYLE_HOST, fit), 0);
	fclose(f);
	return buf;
}

/* Line n (0: the heading) of text, without its newline, in a buffer of its own. */
static char *line_of(const char *text, unsigned n)
{
	const char *nl;

	while (n-- && (nl = strchr(text, '\n')))
		text = nl + 1;
	nl = strchr(text, '\n');
	return strndup(text, nl ? (size_t)(nl - text) : strlen(text));
}

static void check_window_table(const struct profile *p, struct report_table *t)
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
	struct report_table_options o = top_options();
	uint64_t sum = 0;

	report_table_free(t);
	assert_int_equal(report_table_build(t, p, &o), 0);
	assert_int_equal(t->nr, 4);
	assert_int_equal(t->total[0], 8);
	assert_int_equal(t->kept[0], 8);
	for (size_t i = 0; i < t->nr; i++) {
		const struct report_row *r = &t->rows[i];

		assert_int_equal(r->domain, want[i].layer);
		assert_int_equal(r->pid, want[i].pid);
		assert_string_equal(p->comms[r->comm], want[i].comm);
		assert_string_equal(p->funcs[r->func].name, want[i].func);
		assert_int_equal(r->count, want[i].count);
		sum += r->count;
	}
	assert_int_equal(sum, t->total[0]);
}

/* A finished profile: rows by (domain, process, function), hottest first, adding up to the total. */
static void test_table_of_finished_profile(void **state)
{
	struct profile_options opt = { .guest_root = pf_dir };
	struct report_table_options o = top_options();
	struct report_table t = { 0 };
	struct profile *p;
	char *text, *line;
	char err[200];

	(void)state;
	assert_int_equal(profile_new(&p, &opt), 0);
	pf_world(p, pf_native_elf);
	pf_event(p, 0, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 1000, KP_EVENT_FREQ);
	add_window(p, 10 * MS);
	assert_int_equal(profile_finish(p), 0);
	check_window_table(p, &t);
	/* Unfitted, the report's lines exactly: nothing cut. */
	text = table_text(p, &t, &o, NULL);
	line = line_of(text, 0);
	assert_string_equal(line, "   samples        %  domain        process                      image                symbol");
	free(line);
	line = line_of(text, 1);
	assert_string_equal(line, "         3   37.50%  guest user    spam [7]                     fx                   alpha");
	free(line);
	free(text);
	/* Without processes (--sort domain,sym): the VMM's alpha and the guest's stay apart by domain. */
	assert_int_equal(report_keys_parse("domain,sym", HOST_REPORT_KEYS, &o.keys, err, sizeof(err)), 0);
	report_table_free(&t);
	assert_int_equal(report_table_build(&t, p, &o), 0);
	assert_int_equal(t.nr, 4);
	assert_int_equal(t.rows[0].count, 3);
	report_table_free(&t);
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
	struct report_table_options o = top_options();
	struct report_table t = { 0 };
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
	report_table_free(&t);
	assert_int_equal(report_table_build(&t, p, &o), 0);
	assert_int_equal(t.nr, 1);
	assert_int_equal(t.total[0], 1);
	assert_string_equal(p->comms[t.rows[0].comm], "late");
	assert_string_equal(p->funcs[t.rows[0].func].name, "beta");
	report_table_free(&t);
	profile_free(p);
}

/* A guest's names reach the terminal as printable text only; a cut line keeps no half character. */
static void test_hostile_names(void **state)
{
	struct profile_options opt = { .guest_root = pf_dir };
	struct report_table_options o = top_options();
	struct report_table_fit fit = { .width = 46 };
	struct report_table t = { 0 };
	struct profile *p;
	char *text, *line;

	(void)state;
	assert_int_equal(profile_new(&p, &opt), 0);
	pf_world(p, pf_native_elf);
	pf_event(p, 0, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 1000, KP_EVENT_FREQ);
	pf_comm(p, 9, "ev\x1b]0;x\x07il\xc3\xa9", true);
	pf_mmap(p, 9, "/bin/fx", true);
	guest_sample(p, 9, 10 * MS, FX_ALPHA + 1);
	assert_int_equal(profile_update(p), 0);
	assert_int_equal(report_table_build(&t, p, &o), 0);
	text = table_text(p, &t, &o, NULL);
	assert_null(strchr(text, '\x1b'));
	assert_null(strchr(text, '\x07'));
	assert_non_null(strstr(text, "ev?]0;x?il\xc3\xa9 [9]"));
	free(text);
	/* Cut inside the two bytes of the \xc3\xa9: neither is left, every line 46 bytes. */
	text = table_text(p, &t, &o, &fit);
	for (unsigned i = 0; i < 2; i++) {
		line = line_of(text, i);
		assert_int_equal(strlen(line), 46);
		free(line);
	}
	assert_null(strchr(text, '\xc3'));
	free(text);
	report_table_free(&t);
	profile_free(p);
}

/*
 * A terminal's columns: a long process name gives way to its pid, the
 * image is cut, titles with their columns, the symbol stays whole; a
 * narrow terminal leaves the image out.
 */
static void test_terminal_columns(void **state)
{
	struct profile_options opt = { .guest_root = pf_dir };
	struct report_table_options o = top_options();
	struct report_table_fit fit = { .cut = true, .process_width = 12, .image_width = 1 };
	struct report_table t = { 0 };
	struct profile *p;
	char *text;

	(void)state;
	assert_int_equal(profile_new(&p, &opt), 0);
	pf_world(p, pf_native_elf);
	pf_event(p, 0, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 1000, KP_EVENT_FREQ);
	pf_comm(p, 9, "long-process-nm", true);
	pf_mmap(p, 9, "/bin/fx", true);
	guest_sample(p, 9, 10 * MS, FX_BETA + 1);
	assert_int_equal(profile_update(p), 0);
	assert_int_equal(report_table_build(&t, p, &o), 0);
	text = table_text(p, &t, &o, &fit);
	assert_string_equal(text, "   samples        %  domain        process      i symbol\n"
				  "         1  100.00%  guest user    long-pr~ [9] f beta\n");
	free(text);
	fit.no_sym_image = true;
	fit.process_width = 22;
	text = table_text(p, &t, &o, &fit);
	assert_string_equal(text, "   samples        %  domain        process                symbol\n"
				  "         1  100.00%  guest user    long-process-nm [9]    beta\n");
	free(text);
	/* Fitted without a width or cut: the report's table. */
	fit = (struct report_table_fit){ 0 };
	text = table_text(p, &t, &o, &fit);
	assert_string_equal(text, "   samples        %  domain        process                      image                symbol\n"
				  "         1  100.00%  guest user    long-process-nm [9]          fx                   beta\n");
	free(text);
	report_table_free(&t);
	profile_free(p);
}

/*
 * A process name longer than the column (a QEMU thread's, tagged with its
 * layer and role) widens the column for every row, as perf widens its
 * columns: it overflowed, and its row's image and symbol stood out of line.
 */
static void test_long_process_widens_column(void **state)
{
	struct profile_options opt = { .guest_root = pf_dir };
	struct report_table_options o = top_options();
	struct report_table t = { 0 };
	struct profile *p;
	char *text;

	(void)state;
	assert_int_equal(profile_new(&p, &opt), 0);
	pf_world(p, pf_native_elf);
	pf_event(p, 0, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 1000, KP_EVENT_FREQ);
	pf_comm(p, 9, "qemu-system-x86", true);
	pf_mmap(p, 9, "/bin/fx", true);
	guest_sample(p, 9, 10 * MS, FX_BETA + 1);
	pf_comm(p, 8, "short", true);
	pf_mmap(p, 8, "/bin/fx", true);
	guest_sample(p, 8, 11 * MS, FX_ALPHA + 1);
	assert_int_equal(profile_update(p), 0);
	/* As kvmprof report tags a command with its layer and the thread's role (host-profiler/report.c). */
	for (size_t i = 0; i < p->nr_samples; i++)
		if (p->samples[i].pid == 9)
			p->samples[i].comm = profile_comm(p, "[vmm] qemu-system-x86 (vCPU 0)");
	assert_int_equal(report_table_build(&t, p, &o), 0);
	text = table_text(p, &t, &o, NULL);
	assert_string_equal(text, "   samples        %  domain        process                            image                symbol\n"
				  "         1   50.00%  guest user    short [8]                          fx                   alpha\n"
				  "         1   50.00%  guest user    [vmm] qemu-system-x86 (vCPU 0) [9] fx                   beta\n");
	free(text);
	report_table_free(&t);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_of_finished_profile),
		cmocka_unit_test(test_live_profile_windows),
		cmocka_unit_test(test_hostile_names),
		cmocka_unit_test(test_terminal_columns),
		cmocka_unit_test(test_long_process_widens_column),
	};

	return cmocka_run_group_tests(tests, pf_setup, pf_teardown);
}
