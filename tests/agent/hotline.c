/* SPDX-License-Identifier: MIT */
/*
 * Fixture for annotate: hotline_loop spends nearly all of its time on one
 * source line, a chain of 64-bit divisions by a divisor read from memory
 * (tens of cycles each, so the line's instructions take the samples), next
 * to a line of one cheap add. Built -O1 -g like the other fixtures, so the
 * listing has its source lines; noinline keeps the symbol.
 *
 * hotline [SECONDS]: runs (default 1 s of CPU time) and exits.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t divisor = 7, sink;

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) uint64_t hotline_loop(uint64_t n)
{
	uint64_t x = 1234567, y = 0;

	for (uint64_t i = 0; i < n; i++) {
		x = x / divisor + 1000003; /* HOTLINE: the divisions */
		y += i;
	}
	return x + y;
}

int main(int argc, char **argv)
{
	double want = argc > 1 ? atof(argv[1]) : 1.0, t0 = cpu_seconds();

	while (cpu_seconds() - t0 < want)
		sink += hotline_loop(100000);
	printf("%llu\n", (unsigned long long)sink);
	return 0;
}
