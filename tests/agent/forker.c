/* SPDX-License-Identifier: MIT */
/*
 * Fixture for the agent tests: a parent that forks and execs a short-lived
 * child (agent-child, next to this program), waits for it, then works a
 * little itself, so the child has exited long before the recording ends.
 * Its samples must still resolve to the child's own symbols.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void forker_parent_work(double seconds)
{
	double end = cpu_seconds() + seconds;
	uint64_t x = 1;

	while (cpu_seconds() < end)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

int main(int argc, char **argv)
{
	char path[PATH_MAX];
	const char *slash = strrchr(argv[0], '/');
	int status;
	pid_t pid;

	(void)argc;
	snprintf(path, sizeof(path), "%.*sagent-child", slash ? (int)(slash - argv[0] + 1) : 0, argv[0]);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (!pid) {
		execl(path, "agent-child", (char *)NULL);
		perror(path);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "forker: child failed\n");
		return 1;
	}
	forker_parent_work(0.1);
	return 0;
}
