// SPDX-License-Identifier: MIT
/*
 * A recording's output file (lib/format/record_file.c), as perf record's
 * check_backup treats one that exists: a file with data becomes FILE.old,
 * replacing the FILE.old before it; an empty file or a missing one has
 * nothing to keep; a FILE.old that cannot be replaced stops the recording
 * before FILE is touched; a recording that never began puts the earlier
 * one back. kvmprof record (which needs a VM) and
 * kvmprof-agent record (tests/agent/run.sh, record-keeps-old) both open
 * their output through here.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "format/record_file.h"

static char dir[64], path[128], old[160];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/kvmprof-record-file.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	snprintf(old, sizeof(old), "%s/perf.data.old", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	rmdir(old);
	unlink(old);
	return rmdir(dir);
}

static void write_file(const char *p, const char *text)
{
	FILE *f = fopen(p, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* The file's text ("" when empty), or NULL when there is none. */
static char *read_file(const char *p)
{
	static char buf[64];
	FILE *f = fopen(p, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static void test_nothing_to_keep(void **state)
{
	char err[256] = "";

	(void)state;
	/* No FILE: nothing moves, and no FILE.old appears. */
	assert_int_equal(record_file_keep_old(path, err, sizeof(err)), 0);
	assert_null(read_file(old));
	/* An empty FILE is written over, as perf does: no FILE.old. */
	write_file(path, "");
	assert_int_equal(record_file_keep_old(path, err, sizeof(err)), 0);
	assert_null(read_file(old));
	assert_string_equal(read_file(path), "");
	/* Not a regular file (a device): written over in place, never renamed. */
	assert_int_equal(record_file_keep_old("/dev/null", err, sizeof(err)), 0);
	assert_string_equal(err, "");
}

static void test_keeps_the_earlier_recording(void **state)
{
	char err[256] = "";
	bool kept = false;
	int fd;

	(void)state;
	write_file(path, "first");
	fd = record_file_create(path, &kept, err, sizeof(err));
	assert_true(fd >= 0);
	assert_true(kept);
	assert_int_equal(write(fd, "second", 6), 6);
	assert_int_equal(close(fd), 0);
	assert_string_equal(read_file(old), "first");
	assert_string_equal(read_file(path), "second");
	/* The next recording: FILE.old is the one just before it, the first is gone (perf keeps one). */
	fd = record_file_create(path, &kept, err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(close(fd), 0);
	assert_string_equal(read_file(old), "second");
	assert_string_equal(read_file(path), "");
	assert_string_equal(err, "");
	/* An empty FILE: nothing kept, FILE.old stays the last one with data. */
	fd = record_file_create(path, &kept, err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(close(fd), 0);
	assert_false(kept);
	assert_string_equal(read_file(old), "second");
}

/* A recording that never began: its file goes, the earlier one comes back from FILE.old. */
static void test_undo_puts_the_earlier_back(void **state)
{
	char err[256] = "";
	bool kept = false;
	int fd;

	(void)state;
	write_file(path, "earlier");
	fd = record_file_create(path, &kept, err, sizeof(err));
	assert_true(fd >= 0);
	assert_true(kept);
	assert_int_equal(write(fd, "half", 4), 4);
	assert_int_equal(close(fd), 0);
	record_file_undo(path, kept);
	assert_string_equal(read_file(path), "earlier");
	assert_null(read_file(old));
	/* Nothing was kept (a new name): the new file goes, nothing else appears. */
	fd = record_file_create(old, &kept, err, sizeof(err)); /* perf.data.old as a name of its own */
	assert_true(fd >= 0);
	assert_false(kept);
	assert_int_equal(close(fd), 0);
	record_file_undo(old, kept);
	assert_null(read_file(old));
	assert_string_equal(read_file(path), "earlier");
}

static void test_old_cannot_be_replaced(void **state)
{
	char err[512] = "", want[512];
	bool kept = true;

	(void)state;
	write_file(path, "earlier");
	assert_int_equal(mkdir(old, 0755), 0);
	assert_int_equal(record_file_create(path, &kept, err, sizeof(err)), -EISDIR);
	snprintf(want, sizeof(want), "cannot keep the earlier %s as %s: %s", path, old, strerror(EISDIR));
	assert_string_equal(err, want);
	/* Nothing moved and nothing was truncated. */
	assert_false(kept);
	assert_string_equal(read_file(path), "earlier");
}

static void test_unwritable_place(void **state)
{
	char err[256] = "";
	bool kept = true;

	(void)state;
	assert_int_equal(record_file_create("/nonexistent-dir/perf.data", &kept, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "cannot create /nonexistent-dir/perf.data: No such file or directory");
	assert_false(kept);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_nothing_to_keep, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keeps_the_earlier_recording, setup, teardown),
		cmocka_unit_test_setup_teardown(test_undo_puts_the_earlier_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_old_cannot_be_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unwritable_place, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
