// SPDX-License-Identifier: MIT
/*
 * boot-time: runs a VMM command and measures, from just before it is
 * spawned, when the first byte of its standard output (the guest's COM1)
 * arrives and when it exits. Optionally samples its resident memory once,
 * split into the largest mapping (guest RAM) and everything else (the VMM's
 * own overhead). The same harness measures kvmprof-vmm and QEMU, so the two
 * are timed the same way.
 *
 *   boot-time [--rss-at MS] [--kill-after-rss] -- COMMAND [ARGS...]
 *
 * Prints one line: first_byte_ms=.. exit_ms=.. status=.. [rss_kb=.. guest_ram_kb=..]
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Total Rss of a process and the Rss of its largest mapping, from /proc/PID/smaps. */
static int sample_rss(pid_t pid, long *total_kb, long *largest_kb)
{
	char path[64], line[512];
	unsigned long long lo, hi, largest_size = 0, cur_size = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	*total_kb = *largest_kb = 0;
	while (fgets(line, sizeof(line), f)) {
		long kb;

		if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2 && strchr(line, ' ') == line + strcspn(line, " ")) {
			cur_size = hi - lo;
			continue;
		}
		if (sscanf(line, "Rss: %ld kB", &kb) == 1) {
			*total_kb += kb;
			if (cur_size > largest_size) {
				largest_size = cur_size;
				*largest_kb = kb;
			}
		}
	}
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	double rss_at = -1, start, first = -1, end;
	int kill_after_rss = 0, argi = 1, pipefd[2], status;
	long rss_kb = -1, guest_kb = -1;
	posix_spawn_file_actions_t fa;
	pid_t pid;
	char buf[4096];

	for (; argi < argc; argi++) {
		if (!strcmp(argv[argi], "--rss-at") && argi + 1 < argc) {
			rss_at = atof(argv[++argi]);
		} else if (!strcmp(argv[argi], "--kill-after-rss")) {
			kill_after_rss = 1;
		} else if (!strcmp(argv[argi], "--")) {
			argi++;
			break;
		} else {
			fprintf(stderr, "boot-time: unknown option '%s'\n"
				"usage: boot-time [--rss-at MS] [--kill-after-rss] -- COMMAND [ARGS...]\n", argv[argi]);
			return 2;
		}
	}
	if (argi >= argc) {
		fprintf(stderr, "boot-time: no command given\n");
		return 2;
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		perror("boot-time: pipe");
		return 1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	start = now_ms();
	errno = posix_spawnp(&pid, argv[argi], &fa, NULL, argv + argi, environ);
	if (errno) {
		fprintf(stderr, "boot-time: cannot run %s: %s\n", argv[argi], strerror(errno));
		return 1;
	}
	close(pipefd[1]);
	for (;;) {
		struct pollfd p = { pipefd[0], POLLIN, 0 };
		int timeout = -1;
		ssize_t n;

		if (rss_at >= 0 && rss_kb < 0) {
			double left = start + rss_at - now_ms();
			timeout = left > 0 ? (int)left + 1 : 0;
		}
		if (poll(&p, 1, timeout) == 0 || (rss_at >= 0 && rss_kb < 0 && now_ms() >= start + rss_at)) {
			if (rss_kb < 0 && sample_rss(pid, &rss_kb, &guest_kb) == 0 && kill_after_rss)
				kill(pid, SIGTERM);
			if (rss_kb < 0)
				rss_kb = 0;
			continue;
		}
		n = read(pipefd[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (first < 0)
			first = now_ms();
	}
	waitpid(pid, &status, 0);
	end = now_ms();
	printf("first_byte_ms=%.2f exit_ms=%.2f status=%d", first < 0 ? -1.0 : first - start, end - start,
	       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	if (rss_kb >= 0)
		printf(" rss_kb=%ld guest_ram_kb=%ld", rss_kb, guest_kb);
	putchar('\n');
	return 0;
}
