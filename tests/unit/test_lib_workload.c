/* SPDX-License-Identifier: MIT */
/*
 * lib/workload: a command held before its exec until released, then run;
 * a program that cannot be run comes back as its exec's errno, reaped; a
 * command killed before its release is a send error, not SIGPIPE.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "collection/workload.h"

static void test_runs_after_release(void **state)
{
	char *argv[] = { "sh", "-c", "exit 7", NULL };
	struct workload w;
	int status;

	(void)state;
	assert_int_equal(workload_start(&w, argv, NULL, NULL), 0);
	assert_true(w.pid > 0);
	/* Held: it has not exec'd, so it has not exited. */
	usleep(20000);
	assert_int_equal(waitpid(w.pid, &status, WNOHANG), 0);
	assert_int_equal(workload_release(&w), 0);
	assert_int_equal(waitpid(w.pid, &status, 0), w.pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 7);
	workload_close_fds(&w);
}

static void test_cannot_run(void **state)
{
	char *argv[] = { "/nonexistent/program", NULL };
	struct workload w;

	(void)state;
	assert_int_equal(workload_start(&w, argv, NULL, NULL), 0);
	assert_int_equal(workload_release(&w), ENOENT);
	assert_int_equal(w.pid, 0); /* reaped */
	workload_close_fds(&w);
}

static void test_killed_before_release(void **state)
{
	char *argv[] = { "true", NULL };
	struct workload w;
	pid_t pid;

	(void)state;
	assert_int_equal(workload_start(&w, argv, NULL, NULL), 0);
	pid = w.pid;
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_true(workload_release(&w) < 0);
	workload_close_fds(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runs_after_release),
		cmocka_unit_test(test_cannot_run),
		cmocka_unit_test(test_killed_before_release),
	};

	signal(SIGPIPE, SIG_DFL); /* a SIGPIPE on release would end this test: MSG_NOSIGNAL must prevent it */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
