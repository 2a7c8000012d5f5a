/* SPDX-License-Identifier: MIT */
/* lib/perf_open: the one door to perf_event_open, the no-PMU decision, the cpu-clock description. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "kvmprof/sample_format.h"
#include "common/perf_open.h"
#include "cli/record_cli.h"
#include "cli/record_fallback.h"

static void test_no_pmu_decision(void **state)
{
	struct perf_event_attr hw = { .type = PERF_TYPE_HARDWARE, .config = PERF_COUNT_HW_CPU_CYCLES };
	struct perf_event_attr cache = { .type = PERF_TYPE_HW_CACHE };
	struct perf_event_attr raw = { .type = PERF_TYPE_RAW, .config = 0xc0 };
	struct perf_event_attr sw = { .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_CPU_CLOCK };
	struct perf_event_attr tp = { .type = PERF_TYPE_TRACEPOINT };

	(void)state;
	assert_true(perf_attr_is_hardware(&hw));
	assert_true(perf_attr_is_hardware(&cache));
	assert_true(perf_attr_is_hardware(&raw));
	assert_false(perf_attr_is_hardware(&sw));
	assert_false(perf_attr_is_hardware(&tp));
	/* The errors of a host without a PMU, for events that need one... */
	assert_true(perf_open_no_pmu(&hw, ENOENT));
	assert_true(perf_open_no_pmu(&hw, EOPNOTSUPP));
	assert_true(perf_open_no_pmu(&raw, ENODEV));
	assert_true(perf_open_no_pmu(&cache, ENXIO));
	/* ...not a refusal, a bad attr or a thread gone, and never for the clock itself. */
	assert_false(perf_open_no_pmu(&hw, EACCES));
	assert_false(perf_open_no_pmu(&hw, EINVAL));
	assert_false(perf_open_no_pmu(&hw, ESRCH));
	assert_false(perf_open_no_pmu(&sw, ENOENT));
}

static void test_describe_pmu(void **state)
{
	char buf[192];

	(void)state;
	perf_open_describe_pmu(buf, sizeof(buf), true, "cycles", 0);
	assert_string_equal(buf, "hardware");
	perf_open_describe_pmu(buf, sizeof(buf), false, "cpu-clock", 0);
	assert_string_equal(buf, "software events only");
	perf_open_describe_pmu(buf, sizeof(buf), true, "cycles", ENOENT);
	assert_string_equal(buf, "none (perf_event_open cycles: No such file or directory); cpu-clock fallback");
	/* Cut, never overrun. */
	perf_open_describe_pmu(buf, 8, true, "cycles", ENOENT);
	assert_string_equal(buf, "none (p");
}

static void test_open_clock_and_errors(void **state)
{
	struct perf_event_attr clock = {
		.size = sizeof(clock), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_TASK_CLOCK,
		.exclude_kernel = 1, .exclude_hv = 1,
	};
	struct perf_event_attr bad = clock;
	int fd;

	(void)state;
	fd = perf_open(&clock, 0, -1, -1);
	if (fd == -EACCES || fd == -EPERM)
		skip(); /* perf_event_paranoid forbids even a thread's own task-clock */
	assert_true(fd >= 0);
	/* Every descriptor is close-on-exec: a profiled command must not inherit them. */
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);

	bad.type = 0x7fffffff;
	assert_true(perf_open(&bad, 0, -1, -1) < 0);
	bad = clock;
	bad.sample_period = 1;
	bad.freq = 1;
	bad.sample_freq = UINT64_MAX; /* above any perf_event_max_sample_rate */
	assert_int_equal(perf_open(&bad, 0, -1, -1), -EINVAL);
	/* A thread that does not exist. */
	assert_int_equal(perf_open(&clock, 0x7ffffff0, -1, -1), -ESRCH);
}

static void test_probe_pmu(void **state)
{
	struct perf_event_attr instructions = {
		.size = sizeof(instructions), .type = PERF_TYPE_HARDWARE, .config = PERF_COUNT_HW_INSTRUCTIONS,
		.exclude_kernel = 1, .exclude_hv = 1,
	};
	char why[256] = "";
	int rc = perf_open_probe_pmu(why, sizeof(why));
	int fd = perf_open(&instructions, 0, -1, -1);

	(void)state;
	/* The probe agrees with a plain open of the same counter, and says why when it fails. */
	if (fd >= 0) {
		close(fd);
		assert_int_equal(rc, 0);
	} else {
		assert_int_equal(rc, fd);
		assert_non_null(strstr(why, "no hardware PMU perf can use"));
		assert_non_null(strstr(why, strerror(-fd)));
	}
}

static volatile sig_atomic_t overflows;

static void on_overflow(int sig)
{
	(void)sig;
	overflows++;
}

static void test_signal_thread(void **state)
{
	struct perf_event_attr clock = {
		.size = sizeof(clock), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_TASK_CLOCK,
		.sample_period = 1000000, /* 1 ms of this thread's time */
		.exclude_kernel = 1, .exclude_hv = 1, .wakeup_events = 1,
	};
	struct sigaction sa = { .sa_handler = on_overflow }, old;
	struct timespec t0, t;
	int fd;

	(void)state;
	fd = perf_open(&clock, 0, -1, -1);
	if (fd == -EACCES || fd == -EPERM)
		skip();
	assert_true(fd >= 0);
	sigaction(SIGUSR2, &sa, &old);
	overflows = 0;
	assert_int_equal(perf_open_signal_thread(fd, (pid_t)syscall(SYS_gettid), SIGUSR2), 0);
	/* Spin until the clock has run out a few times; the 20 s bound only stops a hang. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while (overflows < 3 && t.tv_sec - t0.tv_sec < 20);
	close(fd);
	sigaction(SIGUSR2, &old, NULL);
	assert_true(overflows >= 3);
	/* Not a perf descriptor: F_SETSIG on a closed fd fails cleanly. */
	assert_int_equal(perf_open_signal_thread(fd, (pid_t)syscall(SYS_gettid), SIGUSR2), -EBADF);
}

/* Both record commands stand cpu-clock in for a hardware event the same way. */
static void test_record_fallback(void **state)
{
	struct events_event ev = { .name = "cycles", .attr = { .type = PERF_TYPE_HARDWARE } };
	uint32_t flags = 0;
	uint64_t rate = 0;
	char pmu[192];

	(void)state;
	record_fall_back_to_clock(&ev, &flags, &rate, 0, true, ENOENT, pmu, sizeof(pmu), "test", false);
	assert_int_equal(ev.attr.type, PERF_TYPE_SOFTWARE);
	assert_int_equal(ev.attr.config, PERF_COUNT_SW_CPU_CLOCK);
	assert_string_equal(ev.name, "cycles"); /* what the user asked for, flagged as stood in for */
	assert_int_equal(flags, KP_EVENT_FREQ | KP_EVENT_FALLBACK);
	assert_int_equal(rate, RECORD_DEFAULT_HZ);
	assert_string_equal(pmu, "none (perf_event_open cycles: No such file or directory); cpu-clock fallback");

	/* A default event nobody typed is named for what samples: the clock; -F carries over. */
	ev = (struct events_event){ .name = "cycles", .attr = { .type = PERF_TYPE_HARDWARE } };
	record_fall_back_to_clock(&ev, &flags, &rate, 4000, false, EOPNOTSUPP, pmu, sizeof(pmu), "test", false);
	assert_string_equal(ev.name, "cpu-clock");
	assert_int_equal(rate, 4000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_pmu_decision),
		cmocka_unit_test(test_describe_pmu),
		cmocka_unit_test(test_open_clock_and_errors),
		cmocka_unit_test(test_probe_pmu),
		cmocka_unit_test(test_signal_thread),
		cmocka_unit_test(test_record_fallback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
