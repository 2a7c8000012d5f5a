// SPDX-License-Identifier: MIT
/*
 * step_frame_find (vmm/engine/step_frame.c): the frame of an exception KVM
 * delivered inside a single step, with the step's TF, found among stack
 * qwords by the values from before the step; frames that differ in
 * anything but TF and RF, or lack TF, are not it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "engine/step_frame.h"

#define TF (1ULL << 8)
#define RF (1ULL << 16)

/* A ring-3 instruction at 0x401000 (3 bytes), its flags IF|ZF|PF, its stack at 0x7ffc0000f000. */
static const struct step_frame user_step = {
	.rip = 0x401000, .next_rip = 0x401003, .rflags = 0x246, .rsp = 0x7ffc0000f000, .cs = 0x33, .ss = 0x2b,
};

/* A stack of n qwords of filler with the five values written at i. */
static void put_frame(uint64_t *q, size_t i, uint64_t rip, uint64_t cs, uint64_t rflags, uint64_t rsp, uint64_t ss)
{
	q[i] = rip;
	q[i + 1] = cs;
	q[i + 2] = rflags;
	q[i + 3] = rsp;
	q[i + 4] = ss;
}

static void fill(uint64_t *q, size_t n)
{
	for (size_t i = 0; i < n; i++)
		q[i] = 0xffffffff81000000ULL + i * 0x18;
}

static size_t find_one(const uint64_t *q, size_t n, size_t *at)
{
	return step_frame_find(q, n, &user_step, at, 1);
}

/* A #GP's frame: its error code below RIP, RF and the step's TF in RFLAGS. */
static void test_fault_frame(void **state)
{
	uint64_t q[64];
	size_t at = 99;

	(void)state;
	fill(q, 64);
	q[19] = 0; /* error code */
	put_frame(q, 20, 0x401000, 0x33, 0x246 | TF | RF, 0x7ffc0000f000, 0x2b);
	assert_int_equal(find_one(q, 64, &at), 1);
	assert_int_equal(at, 20);
}

/* INT n traps past itself: RIP is the next instruction's; CS and SS with junk above the selector. */
static void test_trap_frame(void **state)
{
	uint64_t q[16];
	size_t at = 99;

	(void)state;
	fill(q, 16);
	put_frame(q, 3, 0x401003, 0xdead00000033ULL, 0x246 | TF, 0x7ffc0000f000, 0xbeef0000002bULL);
	assert_int_equal(find_one(q, 16, &at), 1);
	assert_int_equal(at, 3);
}

/* Without TF it is the guest's own frame (nothing of the step's); any other field off, another frame. */
static void test_not_the_step(void **state)
{
	const uint64_t rips[] = { 0x401000, 0x401000, 0x401000, 0x401000, 0x401001, 0x401000 };
	const uint64_t css[] = { 0x33, 0x33, 0x10, 0x33, 0x33, 0x33 };
	const uint64_t flags[] = { 0x246, 0x247 | TF, 0x246 | TF, 0x246 | TF, 0x246 | TF, 0x246 | TF };
	const uint64_t rsps[] = { 0x7ffc0000f000, 0x7ffc0000f000, 0x7ffc0000f000, 0x7ffc0000eff8, 0x7ffc0000f000,
				  0x7ffc0000f000 };
	const uint64_t sss[] = { 0x2b, 0x2b, 0x2b, 0x2b, 0x2b, 0x18 };
	uint64_t q[16];
	size_t at;

	(void)state;
	for (size_t k = 0; k < sizeof(rips) / sizeof(rips[0]); k++) {
		fill(q, 16);
		put_frame(q, 5, rips[k], css[k], flags[k], rsps[k], sss[k]);
		assert_int_equal(find_one(q, 16, &at), 0);
	}
}

/* Linux copies the frame from the entry stack to the task stack: both copies, up to max. */
static void test_two_copies_and_max(void **state)
{
	uint64_t q[128];
	size_t at[4];

	(void)state;
	fill(q, 128);
	put_frame(q, 10, 0x401000, 0x33, 0x246 | TF | RF, 0x7ffc0000f000, 0x2b);
	put_frame(q, 100, 0x401000, 0x33, 0x246 | TF | RF, 0x7ffc0000f000, 0x2b);
	assert_int_equal(step_frame_find(q, 128, &user_step, at, 4), 2);
	assert_int_equal(at[0], 10);
	assert_int_equal(at[1], 100);
	assert_int_equal(step_frame_find(q, 128, &user_step, at, 1), 1);
	assert_int_equal(at[0], 10);
}

/* At the very end of what could be read it is found; cut by the end, it is not. */
static void test_buffer_ends(void **state)
{
	uint64_t q[16];
	size_t at = 99;

	(void)state;
	fill(q, 16);
	put_frame(q, 11, 0x401000, 0x33, 0x246 | TF, 0x7ffc0000f000, 0x2b);
	assert_int_equal(find_one(q, 16, &at), 1);
	assert_int_equal(at, 11);
	assert_int_equal(find_one(q, 15, &at), 0);
	assert_int_equal(find_one(q, 0, &at), 0);
	assert_int_equal(find_one(q, 4, &at), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fault_frame),
		cmocka_unit_test(test_trap_frame),
		cmocka_unit_test(test_not_the_step),
		cmocka_unit_test(test_two_copies_and_max),
		cmocka_unit_test(test_buffer_ends),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
