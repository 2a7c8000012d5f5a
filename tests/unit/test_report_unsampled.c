/* SPDX-License-Identifier: MIT */
/*
 * kvmprof report over hand-made libvirt recordings (written with the
 * library's writer, reported through host_report_main as the command line
 * would):
 *   - guest time with no register sample near it (META
 *     guest_time_unattributed) is a row of the table, "[guest] [not
 *     sampled]", and of the folded stacks, so every share is of the whole;
 *   - with a guest export, the guest processes whose pid has no memory map
 *     in it are named under the table, with the remedy; one with maps is not.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "host_report.h"
#include "lib_fixture.h"
#include "format/sample_file.h"

#define PERIOD 1000000u /* cpu-clock's ns per sample */
#define VMM_PID 500u
#define HOTLOOP_PID 7u /* in the export, with /bin/fx mapped */
#define LATE_PID 9u    /* started after the export: named, no map */

static char *dir; /* the fixture's ELF as the guest's /bin/fx, the files */
static char rec_path[300], export_path[300], out_path[300];

static int setup(void **state)
{
	(void)state;
	dir = fx_mkdir();
	if (!dir || fx_build(dir, NULL))
		return -1;
	snprintf(rec_path, sizeof(rec_path), "%s/rec.data", dir);
	snprintf(export_path, sizeof(export_path), "%s/guest.export", dir);
	snprintf(out_path, sizeof(out_path), "%s/report.out", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fx_rmdir(dir);
	return 0;
}

static void add(struct kp_writer *w, uint32_t type, const void *payload, size_t len)
{
	assert_int_equal(kp_writer_add(w, type, payload, len), 0);
}

static void sample(struct kp_writer *w, uint8_t domain, uint32_t pid, uint64_t time, uint64_t ip, uint8_t cpl)
{
	struct kp_rec_sample s = { .pid = pid, .tid = pid, .time = time, .ip = ip, .period = PERIOD, .cpl = cpl,
				   .domain = domain };

	add(w, KP_REC_SAMPLE, &s, sizeof(s));
}

static void comm(struct kp_writer *w, uint32_t pid, const char *name, uint32_t flags)
{
	struct kp_rec_comm c = { .pid = pid, .tid = pid, .time = 1, .flags = flags };

	snprintf(c.comm, sizeof(c.comm), "%s", name);
	add(w, KP_REC_COMM, &c, sizeof(c));
}

/*
 * A libvirt recording of QEMU (pid 500): 4 guest user samples of hotloop
 * [7] in alpha, 2 of late [9] at the same address, 2 guest kernel samples,
 * 3 host samples; 11 guest-time host samples, of which `unattributed` had
 * no register sample near them (8 became guest samples: 11 - 8 = 3 at most).
 */
static void write_recording(uint64_t unattributed, const char *in_guest)
{
	struct kp_rec_event ev = { .id = 0, .type = 1, .config = 0, .period = PERIOD, .name = "cpu-clock" };
	struct kp_writer *w;
	uint64_t t = 1000;
	int fd = open(rec_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(kp_writer_open(&w, fd, KP_SOURCE_HOST_PROFILER), 0);
	assert_int_equal(kp_writer_meta(w, "vmm", "qemu"), 0);
	assert_int_equal(kp_writer_meta(w, "domain", "web"), 0);
	add(w, KP_REC_EVENT, &ev, sizeof(ev));
	comm(w, VMM_PID, "qemu-system-x86", 0);
	comm(w, HOTLOOP_PID, "hotloop", KP_COMM_GUEST);
	comm(w, LATE_PID, "late", KP_COMM_GUEST);
	for (int i = 0; i < 4; i++)
		sample(w, KP_DOMAIN_GUEST, HOTLOOP_PID, t += PERIOD, FX_ALPHA + 1, KP_CPL_USER);
	for (int i = 0; i < 2; i++)
		sample(w, KP_DOMAIN_GUEST, LATE_PID, t += PERIOD, FX_ALPHA + 1, KP_CPL_USER);
	for (int i = 0; i < 2; i++)
		sample(w, KP_DOMAIN_GUEST, HOTLOOP_PID, t += PERIOD, 0xffffffff81000010ull, KP_CPL_KERNEL);
	for (int i = 0; i < 3; i++)
		sample(w, KP_DOMAIN_NATIVE, VMM_PID, t += PERIOD, 0xffffffff81000010ull, KP_CPL_KERNEL);
	if (in_guest)
		assert_int_equal(kp_writer_meta(w, "host_samples_in_guest", in_guest), 0);
	assert_int_equal(kp_writer_meta_u64(w, "guest_time_unattributed", unattributed), 0);
	assert_int_equal(kp_writer_close(w, 0, t), 0);
	close(fd);
}

/* The guest's export, taken while hotloop ran and before late started: hotloop's comm and map only. */
static void write_export(void)
{
	struct kp_writer *w;
	int fd = open(export_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(kp_writer_open(&w, fd, KP_SOURCE_LINUX_AGENT), 0);
	comm(w, HOTLOOP_PID, "hotloop", 0);
	assert_int_equal(fx_mmap(w, HOTLOOP_PID, 1, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0), 0);
	assert_int_equal(kp_writer_close(w, 0, 1), 0);
	close(fd);
}

/* kvmprof report with these arguments (after "report -i REC -o OUT --guest-root DIR"): its output, to free. */
static char *report(const char *arg1, const char *arg2)
{
	char *argv[12] = { "report", "-i", rec_path, "-o", out_path, "--guest-root", dir };
	int argc = 7;
	char *text;
	long len;
	FILE *f;

	if (arg1)
		argv[argc++] = (char *)arg1;
	if (arg2)
		argv[argc++] = (char *)arg2;
	assert_int_equal(host_report_main(argc, argv), 0);
	f = fopen(out_path, "r");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)len + 1);
	assert_non_null(text);
	assert_int_equal(fread(text, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	return text;
}

/* The line of text that starts with prefix, without its newline (a static buffer), or "". */
static const char *line_starting(const char *text, const char *prefix)
{
	static char line[400];

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, prefix, strlen(prefix))) {
			snprintf(line, sizeof(line), "%.*s", (int)strcspn(l, "\n"), l);
			return line;
		}
	return "";
}

/*
 * 3 samples of guest time had no register sample near them: the table
 * holds 8 guest + 3 host + 3 of them = 14, each share of 14 (hotloop's 4
 * are 28.57%, not 4 of 11's 36.36%), the domain table adds up to 14, and
 * the header says where they are.
 */
static void test_unattributed_row(void **state)
{
	char *text;

	(void)state;
	write_recording(3, "11");
	text = report(NULL, NULL);
	assert_string_equal(line_starting(text, "guest user "), "guest user              6   42.86%");
	assert_string_equal(line_starting(text, "guest kernel "), "guest kernel            2   14.29%");
	assert_string_equal(line_starting(text, "guest unknown "), "guest unknown           3   21.43%");
	assert_string_equal(line_starting(text, "host kernel "), "host kernel             3   21.43%");
	assert_string_equal(line_starting(text, "total "), "total                  14  100.00%");
	assert_non_null(strstr(text, "guest time with no register sample near it: 3 host samples (QEMU's monitor fell "
				     "behind or failed; in the table as [guest] [not sampled]"));
	assert_non_null(strstr(text, "         3   21.43%  guest unknown [guest] [not sampled] [0]    [not sampled]        [not sampled]\n"));
	assert_non_null(strstr(text, "         4   28.57%  guest user    [guest] hotloop [7]"));
	free(text);

	/* In the folded stacks, a frame of its own with its 3 samples, beside hotloop's 4: the same shares. */
	text = report("--format", "folded");
	assert_non_null(strstr(text, "\n[guest]_[not_sampled];[not_sampled]`[not_sampled] 3\n"));
	free(text);
}

/* Nothing unattributed: no such row, and the domain table is as it always was. */
static void test_no_unattributed_no_row(void **state)
{
	char *text;

	(void)state;
	write_recording(0, "8");
	text = report(NULL, NULL);
	assert_string_equal(line_starting(text, "guest unknown"), "");
	assert_null(strstr(text, "not sampled"));
	assert_string_equal(line_starting(text, "total "), "total                  11  100.00%");
	free(text);
}

/* A count the recording contradicts (more than its guest-time host samples) is not made a row. */
static void test_contradicted_count_not_a_row(void **state)
{
	char *text;

	(void)state;
	write_recording(12, "11");
	text = report(NULL, NULL);
	assert_string_equal(line_starting(text, "total "), "total                  11  100.00%");
	assert_non_null(strstr(text, "guest time with no register sample near it: 12 host samples (QEMU's monitor fell "
				     "behind or failed; not in the table)"));
	free(text);
}

/*
 * --all-domains: a domain's guest time with no register sample near it is
 * in its samples and a guest unknown column of its own (the row adds up:
 * 14 = 6 + 2 + 3 + 0 + 3); the other domain has 0 there.
 */
static void test_all_domains_column(void **state)
{
	char all[320], path[340], *argv[] = { "report", "-i", all, "-o", out_path };
	FILE *f;
	char line[300];
	bool head = false, a = false, b = false;

	(void)state;
	snprintf(all, sizeof(all), "%s/all", dir);
	assert_int_equal(mkdir(all, 0755), 0);
	write_recording(3, "11");
	snprintf(path, sizeof(path), "%s/a.data", all);
	assert_int_equal(rename(rec_path, path), 0);
	write_recording(0, "8");
	snprintf(path, sizeof(path), "%s/b.data", all);
	assert_int_equal(rename(rec_path, path), 0);
	assert_int_equal(host_report_main(5, argv), 0);
	f = fopen(out_path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		head |= !strcmp(line, "domain                     QEMU CPU s       %    samples  guest user  guest kernel  "
				      "guest unknown  VMM user  host kernel\n");
		a |= !strcmp(line, "web                                 ?                 14           6             2      "
				   "        3         0            3\n");
		b |= !strcmp(line, "web                                 ?                 11           6             2      "
				   "        0         0            3\n");
	}
	fclose(f);
	assert_true(head);
	assert_true(a);
	assert_true(b);
}

/*
 * With the export: late [9], which it has no map of, is named under the
 * table with its 2 samples and the remedy; hotloop [7], which it maps
 * (its samples in alpha), is not.
 */
static void test_unmapped_process_note(void **state)
{
	char *text, expect[600];

	(void)state;
	write_recording(0, "8");
	write_export();
	text = report("--guest-export", export_path);
	assert_non_null(strstr(text, "[guest] hotloop [7]"));
	assert_non_null(strstr(text, "alpha"));
	snprintf(expect, sizeof(expect),
		 "\nguest processes with no memory map in the guest export, their code without symbols: late [9] "
		 "(2 samples)\n(started after the export %s was taken: run kvmprof-agent export in the guest while it runs, "
		 "and report with that export)\n", export_path);
	assert_non_null(strstr(text, expect));
	assert_null(strstr(text, "hotloop [7] ("));
	free(text);

	/* Without an export every process lacks maps, and this remedy is not the one: no note. */
	text = report(NULL, NULL);
	assert_null(strstr(text, "no memory map in the guest export"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unattributed_row),
		cmocka_unit_test(test_no_unattributed_no_row),
		cmocka_unit_test(test_contradicted_count_not_a_row),
		cmocka_unit_test(test_all_domains_column),
		cmocka_unit_test(test_unmapped_process_note),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
