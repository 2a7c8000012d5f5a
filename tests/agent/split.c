/* SPDX-License-Identifier: MIT */
/*
 * Fixture for the agent tests: CPU time split 75/25 between two functions.
 * Both run the same loop body; split_three_quarters does three times the
 * iterations of split_one_quarter, and the two alternate in slices of a few
 * microseconds, so any sampling rate sees the 3:1 ratio whatever the CPU
 * speed. Built -O1 -fno-omit-frame-pointer; noinline keeps the symbols.
 *
 * usage: split [ROUNDS]   (default 150000 rounds of a few microseconds each)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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
	long rounds = argc > 1 ? strtol(argv[1], NULL, 0) : 150000;
	uint64_t x = 88172645463325252ull;

	for (long r = 0; r < rounds; r++) {
		x = split_three_quarters(x);
		x = split_one_quarter(x);
	}
	sink = x;
	printf("split: %ld rounds done\n", rounds);
	return 0;
}
