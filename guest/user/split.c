/* SPDX-License-Identifier: MIT */
/*
 * split [rounds] [pause_ms]: CPU time split 75/25 between two functions, the known
 * answer of the system-wide attribution benchmark (bench/host.sh), like the
 * host's tests/agent/split.c. Both run the same loop body;
 * split_three_quarters does three times the iterations of split_one_quarter,
 * and the two alternate in slices of a few microseconds, so any sampling
 * rate sees the 3:1 ratio whatever the CPU speed. Prints
 * `split: rounds=N x=0x... ms=N.NNN` (ms: guest time of the loop).
 *
 * pause_ms (default 0): sleep that long before the loop and again after it,
 * so that a profiler attaching from the host is in place before the timed
 * loop starts, and can stop (sample-stop) before the guest powers off.
 */
#include "libc.h"

#define SLICE 1000 /* iterations per quarter slice */

static volatile uint64_t sink;

/*
 * Each hot function calls this first: gcc gives leaf functions no frame even
 * with -fno-omit-frame-pointer, and a frame-pointer walk then skips their
 * caller. A call makes them non-leaf; it costs nothing next to the loop.
 */
__attribute__((noinline)) uint64_t split_mix(uint64_t x)
{
	return x | 1;
}

__attribute__((noinline)) uint64_t split_three_quarters(uint64_t x)
{
	x = split_mix(x);
	for (unsigned i = 0; i < 3 * SLICE; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

__attribute__((noinline)) uint64_t split_one_quarter(uint64_t x)
{
	x = split_mix(x);
	for (unsigned i = 0; i < SLICE; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

int main(int argc, char **argv)
{
	long rounds = atol_def(argc > 1 ? argv[1] : NULL, 150000);
	long pause = atol_def(argc > 2 ? argv[2] : NULL, 0);
	uint64_t x = 88172645463325252ull, t0, t1;

	if (rounds < 1 || pause < 0) {
		printf("usage: split [rounds (>= 1)] [pause_ms]\n");
		return 2;
	}
	if (pause)
		sleep_ms((unsigned long)pause);
	t0 = clock_ns();
	for (long r = 0; r < rounds; r++) {
		x = split_three_quarters(x);
		x = split_one_quarter(x);
	}
	t1 = clock_ns();
	sink = x;
	printf("split: rounds=%ld x=0x%016lx ms=%lu.%03lu\n", rounds, x, (unsigned long)((t1 - t0) / 1000000),
	       (unsigned long)((t1 - t0) / 1000 % 1000));
	if (pause)
		sleep_ms((unsigned long)pause);
	return 0;
}
