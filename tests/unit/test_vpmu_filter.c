// SPDX-License-Identifier: MIT
/* The vPMU event filter: its file format, every parse error, KVM's allow/deny semantics. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <perfmon/pfmlib.h>

#include "vpmu.h"

static int parse(const char *text, struct vpmu_filter *f, char *err)
{
	err[0] = '\0';
	return vpmu_filter_parse(text, strlen(text), f, err);
}

static void test_parse_good(void **state)
{
	static const char text[] = "# deny the L3 events of a shared cache\n"
				   "\n"
				   "action deny\n"
				   "event 0xc0\n"
				   "  event 0x04 0x3f   # trailing comment\n"
				   "event\t196\t0\n"
				   "event 0x1c0 0xff\n"
				   "fixed 0x5\r\n"
				   "event 0XFFF 0Xa\n";
	char err[VPMU_ERR_MAX];
	struct vpmu_filter f;

	(void)state;
	memset(&f, 0xaa, sizeof f);
	assert_int_equal(parse(text, &f, err), 0);
	assert_int_equal(f.action, VPMU_FILTER_DENY);
	assert_int_equal(f.nevents, 5);
	assert_int_equal(f.events[0].select, 0xc0);
	assert_int_equal(f.events[0].umask, 0);
	assert_int_equal(f.events[1].select, 0x04);
	assert_int_equal(f.events[1].umask, 0x3f);
	assert_int_equal(f.events[2].select, 196);
	assert_int_equal(f.events[2].umask, 0);
	assert_int_equal(f.events[3].select, 0x1c0);
	assert_int_equal(f.events[3].umask, 0xff);
	assert_int_equal(f.events[4].select, 0xfff);
	assert_int_equal(f.events[4].umask, 0xa);
	assert_int_equal(f.fixed_bitmap, 5);

	/* Minimal: just the action; no fixed line means bitmap 0; no newline at the end. */
	memset(&f, 0xaa, sizeof f);
	assert_int_equal(parse("action allow", &f, err), 0);
	assert_int_equal(f.action, VPMU_FILTER_ALLOW);
	assert_int_equal(f.nevents, 0);
	assert_int_equal(f.fixed_bitmap, 0);

	/* The action may come last; the same pair twice is stored once. */
	assert_int_equal(parse("event 0xc0\nevent 192 0\nevent 0xc0 1\naction ALLOW\n", &f, err), 0);
	assert_int_equal(f.nevents, 2);
}

struct bad_case {
	const char *text;
	const char *err;
	int rc;
};

static void test_parse_errors(void **state)
{
	static const struct bad_case cases[] = {
		{ "action allow\n\nevent 0x1000\n", "line 3: 'event 0x1000': event select above 0xfff", -ERANGE },
		{ "action allow\nevent 0xc0 0x100\n", "line 2: 'event 0xc0 0x100': unit mask above 0xff", -ERANGE },
		{ "action allow\nevent 0xc0 0x3 7\n", "line 2: 'event 0xc0 0x3 7': trailing '7'", -EINVAL },
		{ "action allow\nevent 0xc0 1 2 3 4\n", "line 2: 'event 0xc0 1 2 3 4': trailing '2 3 4'", -EINVAL },
		{ "action allow\nevent\n", "line 2: 'event': 'event' needs SELECT [UMASK] or a libpfm4 event name",
		  -EINVAL },
		{ "action allow\nevent 0xg0\n", "line 2: 'event 0xg0': bad event select '0xg0' (hex 0x.. or decimal)",
		  -EINVAL },
		{ "action allow\nevent 0x\n", "line 2: 'event 0x': bad event select '0x'", -EINVAL },
		{ "action allow\nevent 12a\n", "line 2: 'event 12a': bad event select '12a'", -EINVAL },
		{ "action allow\nevent 1 -1\n", "line 2: 'event 1 -1': bad unit mask '-1'", -EINVAL },
		{ "action allow\nevent 99999999999999999999999\n", "event select above 0xfff", -ERANGE },
		{ "action allow\naction deny\n", "line 2: 'action deny': duplicate 'action'", -EINVAL },
		{ "action allow\naction allow\n", "line 2: 'action allow': duplicate 'action'", -EINVAL },
		{ "action maybe\n", "line 1: 'action maybe': action 'maybe' is neither 'allow' nor 'deny'", -EINVAL },
		{ "# c\naction\n", "line 2: 'action': 'action' needs 'allow' or 'deny'", -EINVAL },
		{ "action deny please\n", "line 1: 'action deny please': trailing 'please'", -EINVAL },
		{ "action deny\ncounter 1\n",
		  "line 2: 'counter 1': unknown keyword 'counter' (expected action, event or fixed)", -EINVAL },
		{ "action deny\nfixed\n", "line 2: 'fixed': 'fixed' needs a BITMAP", -EINVAL },
		{ "action deny\nfixed 1 2\n", "line 2: 'fixed 1 2': trailing '2'", -EINVAL },
		{ "action deny   please  now\n", "line 1: 'action deny   please  now': trailing 'please  now'", -EINVAL },
		{ "action deny\nfixed 1\nfixed 2\n", "line 3: 'fixed 2': duplicate 'fixed'", -EINVAL },
		{ "action deny\nfixed 0x8\n", "line 2: 'fixed 0x8': bitmap names fixed counters above 2", -ERANGE },
		{ "action deny\nfixed 0x100000000\n", "line 2: 'fixed 0x100000000': bitmap names fixed counters above 2",
		  -ERANGE },
		{ "action deny\nfixed x\n", "line 2: 'fixed x': bad bitmap 'x'", -EINVAL },
		{ "action deny\nevent 0xc0 0x1 0x2\n", "trailing '0x2'", -EINVAL },
		{ "action deny\nevent RETIRED_INSTRUCTIONS 1\n",
		  "line 2: 'event RETIRED_INSTRUCTIONS 1': trailing '1' (a libpfm4 name takes no UMASK", -EINVAL },
		{ "action deny\nevent 0xc0\x01\n", "line 2: 'event 0xc0': unprintable byte 0x01", -EINVAL },
		{ "", "no 'action allow' or 'action deny' line (one is required)", -EINVAL },
		{ "# only comments\n\n", "no 'action allow' or 'action deny' line", -EINVAL },
		{ "event 0xc0\nfixed 1\n", "no 'action allow' or 'action deny' line", -EINVAL },
	};
	char err[VPMU_ERR_MAX];
	struct vpmu_filter f, before;

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		memset(&f, 0x5a, sizeof f);
		before = f;
		int rc = parse(cases[i].text, &f, err);
		if (rc != cases[i].rc || !strstr(err, cases[i].err))
			fail_msg("case %zu: rc %d (want %d), err \"%s\" (want \"%s\")", i, rc, cases[i].rc, err,
				 cases[i].err);
		/* A failed parse leaves the filter alone. */
		assert_memory_equal(&f, &before, sizeof f);
	}

	/* A NUL byte inside the text is an error of its line, not the end of the file. */
	static const char nul[] = "action deny\nevent 0xc0\0 junk\n";
	assert_int_equal(vpmu_filter_parse(nul, sizeof nul - 1, &f, err), -EINVAL);
	assert_non_null(strstr(err, "line 2:"));
	assert_non_null(strstr(err, "NUL byte"));

	/* An over-long line is quoted shortened. */
	char longline[400];
	snprintf(longline, sizeof longline, "action deny\nevent 0xc0 %0300dz\n", 1);
	assert_int_equal(parse(longline, &f, err), -EINVAL);
	assert_non_null(strstr(err, "line 2: 'event 0xc0 000000"));
	assert_non_null(strstr(err, "...'"));
	assert_true(strlen(err) < VPMU_ERR_MAX);
}

static char *events_text(unsigned int n, const char *action)
{
	size_t size = 64 + n * 24;
	char *t = malloc(size);
	size_t off;

	assert_non_null(t);
	off = (size_t)snprintf(t, size, "action %s\n", action);
	for (unsigned int i = 0; i < n; i++)
		off += (size_t)snprintf(t + off, size - off, "event %#x %#x\n", i & 0xfff, (i >> 4) & 0xff);
	return t;
}

static void test_event_limit(void **state)
{
	char err[VPMU_ERR_MAX];
	struct vpmu_filter f;
	char *t;

	(void)state;
	t = events_text(VPMU_FILTER_MAX_EVENTS, "allow");
	assert_int_equal(parse(t, &f, err), 0);
	assert_int_equal(f.nevents, VPMU_FILTER_MAX_EVENTS);
	free(t);

	t = events_text(VPMU_FILTER_MAX_EVENTS + 1, "allow");
	assert_int_equal(parse(t, &f, err), -E2BIG);
	assert_non_null(strstr(err, "line 302: 'event 0x12c 0x12': more than 300 events"));
	free(t);
}

static void test_allow_deny(void **state)
{
	char err[VPMU_ERR_MAX];
	struct vpmu_filter f;

	(void)state;
	assert_int_equal(parse("action allow\nevent 0xc0\nevent 0x2e 0x4f\nevent 0x1c0 1\nfixed 0x2\n", &f, err), 0);
	/* ALLOW: members count, non-members do not; select and unit mask must both match. */
	assert_true(vpmu_filter_allows_event(&f, 0xc0, 0));
	assert_true(vpmu_filter_allows_event(&f, 0x2e, 0x4f));
	assert_true(vpmu_filter_allows_event(&f, 0x1c0, 1));
	assert_false(vpmu_filter_allows_event(&f, 0xc0, 1));
	assert_false(vpmu_filter_allows_event(&f, 0x2e, 0x41));
	assert_false(vpmu_filter_allows_event(&f, 0xc0 | 0x100, 0)); /* AMD select bits 11:8 count */
	assert_false(vpmu_filter_allows_event(&f, 0x3c, 0));
	/* The bitmap alone decides fixed counters: set bits allowed under ALLOW. */
	assert_false(vpmu_filter_allows_fixed(&f, 0));
	assert_true(vpmu_filter_allows_fixed(&f, 1));
	assert_false(vpmu_filter_allows_fixed(&f, 2));
	assert_false(vpmu_filter_allows_fixed(&f, 40));

	assert_int_equal(parse("action deny\nevent 0xc0\nevent 0x2e 0x4f\nfixed 0x2\n", &f, err), 0);
	assert_false(vpmu_filter_allows_event(&f, 0xc0, 0));
	assert_false(vpmu_filter_allows_event(&f, 0x2e, 0x4f));
	assert_true(vpmu_filter_allows_event(&f, 0xc0, 1));
	assert_true(vpmu_filter_allows_event(&f, 0x1c0, 0));
	assert_true(vpmu_filter_allows_event(&f, 0x3c, 0));
	assert_true(vpmu_filter_allows_fixed(&f, 0));
	assert_false(vpmu_filter_allows_fixed(&f, 1));
	assert_true(vpmu_filter_allows_fixed(&f, 2));
	assert_true(vpmu_filter_allows_fixed(&f, 40));

	/* The event list does not touch fixed counters, even with the fixed counters' own events. */
	assert_int_equal(parse("action deny\nevent 0xc0\nevent 0x3c\nevent 0x00 0x03\n", &f, err), 0);
	for (unsigned int i = 0; i < VPMU_MAX_FIXED; i++)
		assert_true(vpmu_filter_allows_fixed(&f, i));
	assert_int_equal(parse("action allow\nevent 0xc0\nevent 0x3c\nevent 0x00 0x03\nfixed 0\n", &f, err), 0);
	for (unsigned int i = 0; i < VPMU_MAX_FIXED; i++)
		assert_false(vpmu_filter_allows_fixed(&f, i));

	/* An empty ALLOW list allows no GP event; an empty DENY list allows all. */
	assert_int_equal(parse("action allow\n", &f, err), 0);
	assert_false(vpmu_filter_allows_event(&f, 0xc0, 0));
	assert_int_equal(parse("action deny\n", &f, err), 0);
	assert_true(vpmu_filter_allows_event(&f, 0xc0, 0));
	assert_true(vpmu_filter_allows_fixed(&f, 0));

	/* No filter: everything allowed. */
	assert_true(vpmu_filter_allows_event(NULL, 0xc0, 0));
	assert_true(vpmu_filter_allows_fixed(NULL, 0));
}

/* Whether libpfm4, as the filter will use it, knows a hardware core PMU of this host. */
static bool host_has_core_pmu(void)
{
	return pfm_initialize() == PFM_SUCCESS && vpmu_filter_host_core_pmu();
}

static bool host_is_amd(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];
	bool amd = false;

	if (!f)
		return false;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "vendor_id", 9)) {
			amd = strstr(line, "AuthenticAMD") != NULL;
			break;
		}
	fclose(f);
	return amd;
}

/*
 * libpfm4 names as this host resolves them. libpfm4 4.13 does not know the
 * AMD family 0x1a (Zen 5) CPU here: it initializes with only perf's generic
 * PMUs, and a name must then give the clear error, not a wrong code.
 */
static void test_pfm_names_host(void **state)
{
	char err[VPMU_ERR_MAX];
	struct vpmu_filter f;
	const char *name = host_is_amd() ? "RETIRED_INSTRUCTIONS" : "INST_RETIRED:ANY_P";
	char text[128];
	int rc;

	(void)state;
	snprintf(text, sizeof text, "action deny\nevent %s\n", name);
	rc = parse(text, &f, err);
	print_message("libpfm4 on this host: event %s -> rc %d %s\n", name, rc, err);
	if (host_has_core_pmu()) {
		assert_int_equal(rc, 0);
		assert_int_equal(f.nevents, 1);
		assert_int_equal(f.events[0].select, 0xc0);
		assert_int_equal(f.events[0].umask, 0);
	} else {
		assert_int_equal(rc, -ENOENT);
		assert_non_null(strstr(err, "line 2: 'event "));
		assert_non_null(strstr(err, "libpfm4 knows no hardware PMU of this host CPU"));
	}
	/* A generic perf event is no event select: refused whatever the host. */
	rc = parse("action deny\nevent cycles\n", &f, err);
	print_message("event cycles -> rc %d %s\n", rc, err);
	assert_int_equal(rc, -EINVAL);
	assert_non_null(strstr(err, "line 2: 'event cycles': 'cycles' is not an event of a hardware core PMU"));
	/* An unknown name. */
	rc = parse("action deny\nevent NO_SUCH_EVENT_X\n", &f, err);
	assert_int_equal(rc, -ENOENT);
	assert_non_null(strstr(err, "line 2: 'event NO_SUCH_EVENT_X': "));
	/* Numeric events work whatever libpfm4 knows. */
	assert_int_equal(parse("action deny\nevent 0xc0\n", &f, err), 0);
}

/*
 * libpfm4 names with a PMU table forced (LIBPFM_FORCE_PMU, read by
 * pfm_initialize): in a child, since libpfm4 initializes once per process.
 */
static int forced_child(void)
{
	static const struct {
		const char *name;
		uint16_t select;
		uint8_t umask;
	} want[] = {
		{ "RETIRED_INSTRUCTIONS", 0xc0, 0x00 },
		{ "RETIRED_BRANCH_INSTRUCTIONS", 0xc2, 0x00 },
		{ "LS_DISPATCH:LD_DISPATCH", 0x29, 0x01 },
		{ "amd64_fam19h_zen4::RETIRED_INSTRUCTIONS:u", 0xc0, 0x00 },
	};
	char err[VPMU_ERR_MAX], text[128];
	struct vpmu_filter f;

	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		snprintf(text, sizeof text, "action allow\n# forced\nevent %s\n", want[i].name);
		if (vpmu_filter_parse(text, strlen(text), &f, err)) {
			fprintf(stderr, "forced PMU: %s: %s\n", want[i].name, err);
			return 1;
		}
		if (f.nevents != 1 || f.events[0].select != want[i].select || f.events[0].umask != want[i].umask) {
			fprintf(stderr, "forced PMU: %s -> %#x/%#x\n", want[i].name, f.events[0].select,
				f.events[0].umask);
			return 2;
		}
	}
	if (vpmu_filter_parse("action allow\nevent NOT_AN_EVENT\n", 33, &f, err) != -ENOENT ||
	    !strstr(err, "line 2: 'event NOT_AN_EVENT': libpfm4 cannot resolve 'NOT_AN_EVENT': ")) {
		fprintf(stderr, "forced PMU: unknown name: %s\n", err);
		return 3;
	}
	return 0;
}

static void test_pfm_names_forced(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		/* A fresh process: this one's libpfm4 is initialized already. */
		setenv("LIBPFM_FORCE_PMU", "amd64_fam19h_zen4", 1);
		execl("/proc/self/exe", "test_vpmu_filter", "--forced-pfm-child", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_load(void **state)
{
	char path[] = "/tmp/kvmprof-filter-XXXXXX";
	char err[VPMU_ERR_MAX];
	struct vpmu_filter f;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	static const char good[] = "action allow\nevent 0xc0\nfixed 1\n";
	assert_int_equal(write(fd, good, sizeof good - 1), (ssize_t)(sizeof good - 1));
	close(fd);
	assert_int_equal(vpmu_filter_load(path, &f, err), 0);
	assert_int_equal(f.nevents, 1);
	assert_int_equal(f.fixed_bitmap, 1);

	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	static const char bad[] = "action allow\nevent 0xc0\nevent 0x1000\n";
	assert_int_equal(write(fd, bad, sizeof bad - 1), (ssize_t)(sizeof bad - 1));
	close(fd);
	assert_int_equal(vpmu_filter_load(path, &f, err), -ERANGE);
	char want[128];
	snprintf(want, sizeof want, "%s: line 3: 'event 0x1000': event select above 0xfff", path);
	assert_string_equal(err, want);
	unlink(path);

	assert_int_equal(vpmu_filter_load(path, &f, err), -ENOENT);
	snprintf(want, sizeof want, "%s: No such file or directory", path);
	assert_string_equal(err, want);
	assert_int_equal(vpmu_filter_load("/tmp", &f, err), -EINVAL);
	assert_string_equal(err, "/tmp: not a regular file");
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--forced-pfm-child"))
		return forced_child();

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good),     cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_event_limit),    cmocka_unit_test(test_allow_deny),
		cmocka_unit_test(test_pfm_names_host), cmocka_unit_test(test_pfm_names_forced),
		cmocka_unit_test(test_load),
	};

	return cmocka_run_group_tests_name("vpmu_filter", tests, NULL, NULL);
}
