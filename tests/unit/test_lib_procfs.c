// SPDX-License-Identifier: MIT
/*
 * The /proc readers both profilers share (lib/collection/procfs.c): maps lines, CPU
 * lists, kallsyms, and the real files of this process.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "collection/emit.h"
#include "collection/procfs.h"

static void test_maps_lines(void **state)
{
	struct procfs_map m;

	(void)state;
	assert_int_equal(procfs_parse_maps_line("55d7db360000-55d7db361000 r-xp 00001000 08:01 1234567    "
						"/usr/bin/split\n",
						&m),
			 0);
	assert_int_equal(m.start, 0x55d7db360000ull);
	assert_int_equal(m.end, 0x55d7db361000ull);
	assert_int_equal(m.pgoff, 0x1000);
	assert_int_equal(m.prot, PROT_READ | PROT_EXEC);
	assert_int_equal(m.flags, MAP_PRIVATE);
	assert_int_equal(m.dev_major, 8);
	assert_int_equal(m.dev_minor, 1);
	assert_int_equal(m.inode, 1234567);
	assert_string_equal(m.path, "/usr/bin/split");

	/* spaces inside the path, no newline, shared writable */
	assert_int_equal(procfs_parse_maps_line("7f0000000000-7f0000002000 rwxs 00000000 00:2a 9 /tmp/my file (deleted)", &m), 0);
	assert_int_equal(m.prot, PROT_READ | PROT_WRITE | PROT_EXEC);
	assert_int_equal(m.flags, MAP_SHARED);
	assert_string_equal(m.path, "/tmp/my file (deleted)");

	/* anonymous memory and pseudo paths */
	assert_int_equal(procfs_parse_maps_line("7ffc1000-7ffc3000 rw-p 00000000 00:00 0 \n", &m), 0);
	assert_string_equal(m.path, "");
	assert_int_equal(m.prot, PROT_READ | PROT_WRITE);
	assert_int_equal(procfs_parse_maps_line("7ffc5000-7ffc7000 r-xp 00000000 00:00 0                  [vdso]", &m), 0);
	assert_string_equal(m.path, "[vdso]");
	assert_int_equal(procfs_parse_maps_line("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]", &m), 0);
	assert_int_equal(m.prot, PROT_EXEC);
	assert_int_equal(m.end - m.start, 0x1000);

	/* malformed */
	assert_int_equal(procfs_parse_maps_line("", &m), -EINVAL);
	assert_int_equal(procfs_parse_maps_line("garbage", &m), -EINVAL);
	assert_int_equal(procfs_parse_maps_line("1000-2000 r-xp 0 08:01", &m), -EINVAL);
	assert_int_equal(procfs_parse_maps_line("2000-1000 r-xp 00000000 08:01 1 /x", &m), -EINVAL); /* end < start */
	assert_int_equal(procfs_parse_maps_line("1000-2000 r-x 00000000 08:01 1 /x", &m), -EINVAL);  /* 3 perm chars */
}

static void test_long_path(void **state)
{
	size_t n = KP_PATH_MAX + 100;
	char *line = malloc(n + 64);
	struct procfs_map m;

	(void)state;
	assert_non_null(line);
	int k = snprintf(line, 64, "1000-2000 r-xp 00000000 08:01 1 /");

	memset(line + k, 'a', n);
	line[k + n] = 0;
	assert_int_equal(procfs_parse_maps_line(line, &m), -EINVAL);
	free(line);
}

static void test_cpu_list(void **state)
{
	int cpus[8];

	(void)state;
	assert_int_equal(procfs_parse_cpu_list("0\n", cpus, 8), 1);
	assert_int_equal(cpus[0], 0);
	assert_int_equal(procfs_parse_cpu_list("0-3,6\n", cpus, 8), 5);
	assert_int_equal(cpus[3], 3);
	assert_int_equal(cpus[4], 6);
	assert_int_equal(procfs_parse_cpu_list("1,3-4", cpus, 8), 3);
	assert_int_equal(cpus[0], 1);
	assert_int_equal(cpus[2], 4);
	assert_int_equal(procfs_parse_cpu_list("0-8", cpus, 8), -E2BIG);
	assert_int_equal(procfs_parse_cpu_list("", cpus, 8), -EINVAL);
	assert_int_equal(procfs_parse_cpu_list("3-1", cpus, 8), -EINVAL);
	assert_int_equal(procfs_parse_cpu_list("a", cpus, 8), -EINVAL);
	assert_int_equal(procfs_parse_cpu_list("1;2", cpus, 8), -EINVAL);
	/* Numbers past int (and past long, where strtol saturates): refused, no overflow (UBSan). */
	assert_int_equal(procfs_parse_cpu_list("99999999999999999999999", cpus, 8), -ERANGE);
	assert_int_equal(procfs_parse_cpu_list("9223372036854775807", cpus, 8), -ERANGE);
	assert_int_equal(procfs_parse_cpu_list("0-99999999999999999999999", cpus, 8), -ERANGE);
	assert_int_equal(procfs_parse_cpu_list("2147483647", cpus, 8), 1);
	assert_int_equal(cpus[0], INT_MAX);
	assert_true(procfs_online_cpus(cpus, 8) >= 1 || procfs_online_cpus(cpus, 8) == -E2BIG);
}

static void test_kallsyms_hidden(void **state)
{
	static const char shown[] = "0000000000000000 A fixed_percpu_data\nffffffff81000000 T _stext\n";
	static const char hidden[] = "0000000000000000 T _stext\n0000000000000000 t foo [mod]\n";

	(void)state;
	assert_false(procfs_kallsyms_hidden(shown, sizeof(shown) - 1));
	assert_true(procfs_kallsyms_hidden(hidden, sizeof(hidden) - 1));
	assert_true(procfs_kallsyms_hidden("", 0));
}

struct find_exe {
	char exe[KP_PATH_MAX];
	int exec_maps, exe_found;
};

static int count_map(const struct procfs_map *m, void *ctx)
{
	struct find_exe *f = ctx;

	if (m->prot & PROT_EXEC) {
		f->exec_maps++;
		f->exe_found |= !strcmp(m->path, f->exe);
	}
	return 0;
}

static int stop_at_first(const struct procfs_map *m, void *ctx)
{
	(void)m;
	(*(int *)ctx)++;
	return 42;
}

static void test_this_process(void **state)
{
	struct find_exe f = { .exec_maps = 0 };
	ssize_t n = readlink("/proc/self/exe", f.exe, sizeof(f.exe) - 1);
	char comm[32];
	pid_t *ids;
	size_t nids;
	int calls = 0;

	(void)state;
	assert_true(n > 0);
	f.exe[n] = 0;
	assert_int_equal(procfs_read_maps(getpid(), count_map, &f), 0);
	assert_true(f.exec_maps >= 1);
	assert_true(f.exe_found);
	assert_int_equal(procfs_read_maps(getpid(), stop_at_first, &calls), 42);
	assert_int_equal(calls, 1);
	assert_int_equal(procfs_read_maps(2147483646, count_map, &f), -ESRCH);

	assert_int_equal(procfs_read_comm(getpid(), getpid(), comm, sizeof(comm)), 0);
	assert_null(strchr(comm, '\n'));
	assert_true(strlen(comm) > 0);
	assert_int_equal(procfs_read_comm(2147483646, 2147483646, comm, sizeof(comm)), -ESRCH);

	assert_int_equal(procfs_list_ids("/proc/self/task", &ids, &nids), 0);
	assert_true(nids >= 1);
	assert_int_equal(ids[0], getpid());
	free(ids);
	assert_int_equal(procfs_list_ids("/proc", &ids, &nids), 0);
	assert_true(nids >= 1);
	for (size_t i = 1; i < nids; i++)
		assert_true(ids[i - 1] < ids[i]);
	free(ids);
	assert_int_equal(procfs_list_ids("/proc/2147483646/task", &ids, &nids), -ESRCH);
}

static void test_build_id(void **state)
{
	uint8_t id[KP_BUILD_ID_MAX];

	(void)state;
	/* gcc on Debian links with --build-id (sha1, 20 bytes) */
	assert_int_equal(emit_read_build_id("/proc/self/exe", id), 20);
	assert_int_equal(emit_read_build_id("/nonexistent", id), -ENOENT);
	/* not an ELF file: no build-id, not an error */
	assert_true(emit_read_build_id("/proc/self/maps", id) <= 0);
}

/* export keeps only code symbols: what a program counter can land on. */
static void test_kallsyms_keep_text(void **state)
{
	(void)state;
	char text[] = "ffffffff81000000 T _stext\n"
		      "ffffffff82000000 D jiffies\n"
		      "ffffffff81000100 t helper\t[mod]\n"
		      "ffffffff83000000 b bss_thing\n"
		      "ffffffff81000200 W weak_fn\n"
		      "garbage-line\n"
		      "ffffffff81000300 w weak2";
	size_t n = procfs_kallsyms_keep_text(text, strlen(text));

	assert_int_equal(n, strlen("ffffffff81000000 T _stext\nffffffff81000100 t helper\t[mod]\n"
				   "ffffffff81000200 W weak_fn\nffffffff81000300 w weak2"));
	assert_memory_equal(text, "ffffffff81000000 T _stext\nffffffff81000100 t helper\t[mod]\n"
			    "ffffffff81000200 W weak_fn\nffffffff81000300 w weak2", n);
	assert_int_equal(procfs_kallsyms_keep_text(text, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maps_lines),      cmocka_unit_test(test_long_path),
		cmocka_unit_test(test_cpu_list),        cmocka_unit_test(test_kallsyms_hidden),
		cmocka_unit_test(test_kallsyms_keep_text),
		cmocka_unit_test(test_this_process),    cmocka_unit_test(test_build_id),
	};

	return cmocka_run_group_tests_name("lib_procfs", tests, NULL, NULL);
}
