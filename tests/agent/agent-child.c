/* SPDX-License-Identifier: MIT */
/* The short-lived child of forker.c: about 200 ms of CPU in one uniquely named function. */
#include <stdint.h>
#include <time.h>

static volatile uint64_t sink;

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void kvmprof_child_hotspot(double seconds)
{
	double end = cpu_seconds() + seconds;
	uint64_t x = 88172645463325252ull;

	while (cpu_seconds() < end)
		for (int i = 0; i < 10000; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
	sink = x;
}

int main(void)
{
	kvmprof_child_hotspot(0.2);
	return 0;
}
