/* SPDX-License-Identifier: MIT */
/*
 * hello [args...]: prints its pid and arguments, checks that sleep and the
 * clock work, then exits 0 (1 if the clock misbehaves).
 */
#include "libc.h"

int main(int argc, char **argv)
{
	char line[512];
	size_t n = (size_t)snprintf(line, sizeof(line), "hello: pid %d argc %d", getpid(), argc);
	for (int i = 0; i < argc && n < sizeof(line); i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, " [%s]", argv[i]);
	printf("%s\n", line); /* one write: lines from other CPUs do not cut in */
	uint64_t t0 = clock_ns();
	sleep_ms(20);
	uint64_t t1 = clock_ns();
	yield();
	uint64_t dt = t1 - t0;
	int ok = t1 >= t0 && dt >= 19000000 && dt < 1000000000;
	printf("hello: slept 20 ms, clock advanced %s\n", ok ? "ok" : "WRONG");
	if (!ok)
		printf("hello: t0=%lu t1=%lu\n", t0, t1);
	return ok ? 0 : 1;
}
