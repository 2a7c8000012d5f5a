/* SPDX-License-Identifier: MIT */
/*
 * hash [iterations] [size]: FNV-1a (64-bit) over a buffer, the hot function
 * is hash_block. Prints `hash: size=S iters=I hash=0x...`.
 */
#include "libc.h"

#define MAX_SIZE (256 * 1024)

static unsigned char buf[MAX_SIZE];

__attribute__((noinline)) uint64_t hash_block(const unsigned char *p, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static void hash_fill(unsigned char *p, size_t n)
{
	uint32_t x = 12345;
	for (size_t i = 0; i < n; i++) {
		x = x * 1664525u + 1013904223u;
		p[i] = (unsigned char)(x >> 24);
	}
}

int main(int argc, char **argv)
{
	long iters = atol_def(argc > 1 ? argv[1] : NULL, 300);
	long size = atol_def(argc > 2 ? argv[2] : NULL, 65536);
	if (iters < 1 || size < 1 || size > MAX_SIZE) {
		printf("usage: hash [iterations] [size (1..%d)]\n", MAX_SIZE);
		return 2;
	}
	hash_fill(buf, (size_t)size);
	uint64_t h = 0xcbf29ce484222325ull;
	long pmu = pmu_count_insn_cycles(); /* user-mode counts of the hot loop */
	for (long it = 0; it < iters; it++) {
		h = hash_block(buf, (size_t)size, h);
		buf[it % size] ^= (unsigned char)h; /* feed back */
	}
	uint64_t counts[2];
	pmu = pmu_stop_insn_cycles(pmu, counts);
	printf("hash: size=%ld iters=%ld hash=0x%016lx\n", size, iters, h);
	pmu_print_insn_cycles("hash", pmu, counts);
	return 0;
}
