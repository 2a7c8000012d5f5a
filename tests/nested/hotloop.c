// SPDX-License-Identifier: MIT
/*
 * The workload the nested agent case profiles inside L2: it spends nearly
 * all of its CPU time in one function, hotloop_spin(), for MS milliseconds
 * of its own CPU time (argument 1, default 1500), then prints how many
 * iterations it managed.
 *
 * Usage: hotloop [MS]
 *
 * It stops on CPU time, not on an iteration count, because the speed of
 * ring-3 code in L2 depends on the stack it runs in (QEMU-TCG under a
 * paravirtual KVM here, real hardware elsewhere): a fixed count would be
 * either too short for a few hundred samples or too slow for `make test`.
 * Built static, with frame pointers and its symbol table, so the agent's
 * report can name the function and walk its callers.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c17 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Global and noinline: it must exist as its own symbol in the symtab. */
__attribute__((noinline)) uint64_t hotloop_spin(uint64_t n, uint64_t x)
{
	/*
	 * An xorshift chain: each step depends on the last, so the compiler
	 * can neither vectorize nor fold it, and the loop body is all ALU.
	 */
	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? strtol(argv[1], NULL, 10) : 1500;
	if (ms <= 0 || ms > 600000) {
		fprintf(stderr, "hotloop: MS must be 1..600000, got '%s'\n", argv[1]);
		return 2;
	}
	/*
	 * Chunks of 2^20 iterations keep the clock reads (system calls) a
	 * negligible share of the time even at TCG speed, where one chunk
	 * takes a few milliseconds.
	 */
	const uint64_t chunk = 1u << 20;
	uint64_t end = cpu_ns() + (uint64_t)ms * 1000000u, x = 88172645463325252u, chunks = 0;

	do {
		x = hotloop_spin(chunk, x);
		chunks++;
	} while (cpu_ns() < end);
	printf("hotloop: %llu iterations in %ld ms of CPU time (x=%llx)\n",
	       (unsigned long long)(chunks * chunk), ms, (unsigned long long)x);
	return 0;
}
