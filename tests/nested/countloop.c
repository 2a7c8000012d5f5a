// SPDX-License-Identifier: MIT
/*
 * The perf case's counted workload in L2: a ring-3 loop whose instruction
 * and branch counts per iteration are known, so that two runs differing
 * only in the iteration count differ by exactly that many of each.
 *
 * Usage: countloop N [SYSCALLS]
 *
 * The loop is two instructions, DEC and JNZ (one branch), N times. SYSCALLS
 * (default 0) getppid() calls follow it, each one SYSCALL in ring 3 and the
 * same kernel path every time, for the kernel-side (:k) difference. Give
 * the numbers with the same count of digits in both runs: the parsing of
 * the arguments is counted too. Built static: no dynamic loader whose work
 * could differ between runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static long parse(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < 0) {
		fprintf(stderr, "countloop: '%s' is not a count\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long n, calls = 0;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: countloop N [SYSCALLS]\n");
		return 2;
	}
	n = parse(argv[1]);
	if (argc == 3)
		calls = parse(argv[2]);
	if (n > 0)
		__asm__ volatile("1: dec %0\n\tjnz 1b" : "+r"(n) : : "cc");
	/* The raw system call: glibc may cache or wrap the library call. */
	for (long i = 0; i < calls; i++)
		__asm__ volatile("syscall" : : "a"((long)SYS_getppid) : "rcx", "r11", "memory");
	return 0;
}
