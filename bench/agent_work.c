// SPDX-License-Identifier: MIT
/*
 * agent-work MS: a CPU-bound program with a few hot functions and a call
 * chain two deep, for timing the reports of ~10^6 samples (bench/agent.sh).
 * Runs for MS milliseconds of CPU time (default 10000): work_mix (~50%),
 * work_hash (~30%) and work_sort (~20%), each called from its own caller.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t work_mix(uint64_t x, int n)
{
	for (int i = 0; i < n; i++)
		x = (x ^ (x >> 31)) * 0x9e3779b97f4a7c15ull + (uint64_t)i;
	return x;
}

__attribute__((noinline)) static uint64_t work_hash(const uint8_t *p, int n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (int i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

__attribute__((noinline)) static void work_sort(uint32_t *a, int n)
{
	for (int i = 1; i < n; i++) { /* insertion sort of a small shuffled array */
		uint32_t v = a[i];
		int j = i - 1;
		while (j >= 0 && a[j] > v) {
			a[j + 1] = a[j];
			j--;
		}
		a[j + 1] = v;
	}
}

__attribute__((noinline)) static void caller_mix(void) { sink += work_mix(sink, 50000); }
__attribute__((noinline)) static void caller_hash(const uint8_t *buf) { sink += work_hash(buf, 30000); }
__attribute__((noinline)) static void caller_sort(uint32_t *a)
{
	for (int i = 0; i < 48; i++)
		a[i] = (uint32_t)((sink + (uint64_t)i * 2654435761u) >> 7);
	work_sort(a, 48);
	sink += a[0];
}

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	double ms = argc > 1 ? atof(argv[1]) : 10000, end = cpu_ms() + ms;
	static uint8_t buf[30000];
	uint32_t a[48];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7);
	while (cpu_ms() < end) {
		caller_mix();
		caller_hash(buf);
		for (int i = 0; i < 60; i++)
			caller_sort(a);
	}
	printf("agent-work: %llx\n", (unsigned long long)sink);
	return 0;
}
