/* SPDX-License-Identifier: MIT */
/*
 * badstack [ms] [write]: a hostile ring-3 program for the host's sampler. For `ms`
 * milliseconds (default 3000) it spins with RBP and RSP pointing wherever a
 * stack walker should fear to follow: nowhere, unmapped user pages, the
 * kernel (identity-mapped here, supervisor-only), non-canonical addresses,
 * a frame that points to itself, a chain of 4096 frames, a frame that ends
 * exactly at the end of its page, and back to a sane stack in between. The
 * loop touches neither stack (no call, push or memory operand), so it runs
 * fine on them; interrupts enter the kernel through the TSS's RSP0. With
 * "write", each stretch also makes one write() system call of 256 bytes
 * (ud2 needs no user stack either): its console OUT exit then has that
 * garbage as the user side of its guest stack (guest_callchain follows a
 * kernel stack into user code). Prints how many rounds it made.
 */
#include "libc.h"

#define DEEP 4096

static uint64_t self_frame[2];
static uint64_t deep[2 * DEEP + 2];
static uint64_t page_tail[512] __attribute__((aligned(4096)));

/* What each stretch writes: 256 bytes, 256 OUT exits, for one (slow, here) system call. */
static char dots[256];

/* Spins `n` iterations with RBP = bp and RSP = sp (writing one byte first if `write`), then puts both back. */
static void spin_on(uint64_t bp, uint64_t sp, uint64_t n, uint64_t write)
{
	__asm__ volatile("mov %%rbp, %%r12\n\t"
			 "mov %%rsp, %%r13\n\t"
			 "mov %0, %%rbp\n\t"
			 "mov %1, %%rsp\n\t"
			 "test %3, %3\n\t"
			 "jz 1f\n\t"
			 "mov %4, %%eax\n\t"
			 "mov $1, %%edi\n\t"
			 "mov %5, %%rsi\n\t"
			 "mov $256, %%edx\n\t"
			 "ud2\n\t"
			 "1: dec %2\n\t"
			 "jnz 1b\n\t"
			 "mov %%r13, %%rsp\n\t"
			 "mov %%r12, %%rbp"
			 : "+r"(bp), "+r"(sp), "+r"(n)
			 : "r"(write), "i"(SYS_write), "r"(dots)
			 : "r12", "r13", "rax", "rdi", "rsi", "rdx", "cc", "memory");
}

int main(int argc, char **argv)
{
	uint64_t ms = (uint64_t)atol_def(argc > 1 ? argv[1] : NULL, 3000);
	uint64_t write = argc > 2 && !strcmp(argv[2], "write");
	uint64_t t0 = clock_ns(), rounds = 0;
	uint64_t here = (uint64_t)__builtin_frame_address(0);
	/* RBP and RSP: garbage both, and believable chains with RSP just below them. */
	const uint64_t targets[][2] = {
		{ 0, 0 },
		{ 1, 0xdeadbeef },
		{ 0x00007ffffffff000ULL, 0x00007fffffffe000ULL }, /* the top of user space, unmapped */
		{ 0x0000000000100000ULL, 0x00000000000ff000ULL }, /* the guest kernel's text: supervisor-only */
		{ 0xffff800000000000ULL, 0xffff7ffffffff000ULL }, /* the upper half */
		{ 0x8000000000000000ULL, 0x7ffffffffffff000ULL }, /* non-canonical */
		{ 0xfffffffffffffff8ULL, 0xfffffffffffffff0ULL }, /* wraps on +8 */
		{ (uint64_t)self_frame, (uint64_t)self_frame - 64 }, /* a frame whose saved RBP is itself */
		{ (uint64_t)deep, (uint64_t)deep - 64 },            /* 4096 frames, then 0 */
		{ (uint64_t)&page_tail[511], (uint64_t)&page_tail[500] }, /* the frame's last word ends a page */
		{ here, here - 256 },                                /* a sane stack, for contrast */
	};

	self_frame[0] = (uint64_t)self_frame;
	self_frame[1] = (uint64_t)&main;
	for (unsigned int i = 0; i < DEEP; i++) {
		deep[2 * i] = (uint64_t)&deep[2 * i + 2];
		deep[2 * i + 1] = (uint64_t)&main + i;
	}
	deep[2 * DEEP] = 0;
	page_tail[511] = (uint64_t)&page_tail[0];
	memset(dots, '.', sizeof(dots));
	while (clock_ns() - t0 < ms * 1000000ull) {
		for (unsigned int i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
			spin_on(targets[i][0], targets[i][1], 200000, write);
		rounds++;
	}
	printf("badstack: %lu rounds in %lu ms\n", (unsigned long)rounds,
	       (unsigned long)((clock_ns() - t0) / 1000000ull));
	return 0;
}
