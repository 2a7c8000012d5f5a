// SPDX-License-Identifier: MIT
/*
 * badframes [SECONDS]: spins (default 1 s of CPU time) with RBP pointing at
 * a chain of 120 fake frames whose return addresses lie in no mapping, as a
 * frame-pointer walk sees a function that uses RBP for data. perf's walker
 * follows such a chain; the report must cut it at its first unmapped caller
 * (issue 16) instead of drawing 120 [unknown] frames.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define FAKE_FRAMES 120

static uint64_t frames[2 * FAKE_FRAMES + 2] __attribute__((aligned(16)));

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The loop runs with RBP at the fake chain; RBP is saved and restored around it. */
__attribute__((noinline)) static uint64_t spin_with_bad_rbp(uint64_t n)
{
	uint64_t x = n, mul = 6364136223846793005ULL;

	__asm__ volatile("push %%rbp\n\t"
			 "mov %[chain], %%rbp\n\t"
			 "1: imul %[mul], %[x]\n\t"
			 "add $1442695, %[x]\n\t"
			 "dec %[n]\n\t"
			 "jnz 1b\n\t"
			 "pop %%rbp"
			 : [x] "+r"(x), [n] "+r"(n)
			 : [chain] "r"(frames), [mul] "r"(mul)
			 : "cc", "memory");
	return x;
}

int main(int argc, char **argv)
{
	double want = argc > 1 ? atof(argv[1]) : 1.0, t0 = cpu_seconds();
	volatile uint64_t sink = 0;

	/* Frame i: [saved RBP: frame i + 1][return address: unmapped, below the program]. */
	for (int i = 0; i < FAKE_FRAMES; i++) {
		frames[2 * i] = (uint64_t)(uintptr_t)&frames[2 * i + 2];
		frames[2 * i + 1] = 0x1000 + 0x40 * (uint64_t)i;
	}
	while (cpu_seconds() - t0 < want)
		sink += spin_with_bad_rbp(10000000);
	return (int)(sink & 0);
}
