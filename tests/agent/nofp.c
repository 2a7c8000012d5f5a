// SPDX-License-Identifier: MIT
/*
 * nofp [SECONDS]: spins (default 1 s of CPU time) in nofp_leaf, called by
 * nofp_middle, called by nofp_outer, called by main, all built without
 * frame pointers (-O2 -fomit-frame-pointer), as distributions build most
 * programs. A frame-pointer walk (-g) cannot find the callers; an unwinder
 * reading the CFI in .eh_frame (--call-graph dwarf) finds all three.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The work after each call keeps gcc from turning it into a jump (a tail call leaves no frame). */
__attribute__((noinline)) uint64_t nofp_leaf(uint64_t x, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

__attribute__((noinline)) uint64_t nofp_middle(uint64_t x)
{
	return nofp_leaf(x, 1u << 20) * 3 + 1;
}

__attribute__((noinline)) uint64_t nofp_outer(uint64_t x)
{
	return nofp_middle(x) * 5 + 2;
}

int main(int argc, char **argv)
{
	double want = argc > 1 ? atof(argv[1]) : 1.0, t0 = cpu_seconds();
	volatile uint64_t sink = 1;

	while (cpu_seconds() - t0 < want)
		sink = nofp_outer(sink);
	return (int)(sink & 0);
}
