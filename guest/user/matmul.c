/* SPDX-License-Identifier: MIT */
/*
 * matmul [n] [iterations]: integer matrix multiply, the hot function is
 * matmul_multiply. Prints `matmul: n=N iters=I checksum=0x...`.
 */
#include "libc.h"

#define MAX_N 256

static uint32_t a[MAX_N * MAX_N], b[MAX_N * MAX_N], c[MAX_N * MAX_N];

static void matmul_fill(uint32_t *m, int n, uint32_t seed)
{
	uint32_t x = seed;
	for (int i = 0; i < n * n; i++) {
		x = x * 1103515245u + 12345u;
		m[i] = (x >> 16) & 0xff;
	}
}

__attribute__((noinline)) void matmul_multiply(uint32_t *dst, const uint32_t *x,
					       const uint32_t *y, int n)
{
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < n; j++)
			dst[i * n + j] = 0;
		for (int k = 0; k < n; k++) {
			uint32_t xik = x[i * n + k];
			const uint32_t *yr = &y[k * n];
			uint32_t *dr = &dst[i * n];
			for (int j = 0; j < n; j++)
				dr[j] += xik * yr[j];
		}
	}
}

__attribute__((noinline)) static uint64_t matmul_checksum(const uint32_t *m, int n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (int i = 0; i < n * n; i++) {
		h ^= m[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

int main(int argc, char **argv)
{
	long n = atol_def(argc > 1 ? argv[1] : NULL, 128);
	long iters = atol_def(argc > 2 ? argv[2] : NULL, 20);
	if (n < 1 || n > MAX_N || iters < 1) {
		printf("usage: matmul [n (1..%d)] [iterations]\n", MAX_N);
		return 2;
	}
	matmul_fill(a, (int)n, 1);
	matmul_fill(b, (int)n, 2);
	uint64_t sum = 0;
	long pmu = pmu_count_insn_cycles(); /* user-mode counts of the hot loop */
	for (long it = 0; it < iters; it++) {
		matmul_multiply(c, a, b, (int)n);
		sum ^= matmul_checksum(c, (int)n) + (uint64_t)it;
		a[it % (n * n)] ^= c[(it * 7) % (n * n)] & 0xff; /* feed back */
	}
	uint64_t counts[2];
	pmu = pmu_stop_insn_cycles(pmu, counts);
	printf("matmul: n=%ld iters=%ld checksum=0x%016lx\n", n, iters, sum);
	pmu_print_insn_cycles("matmul", pmu, counts);
	return 0;
}
