// SPDX-License-Identifier: MIT
/*
 * System instructions done within the engine's run (vmm/engine/
 * emu_sysinsn.c): which bytes are which, and MOV r, Sreg on registers:
 * each operand size's effect on the bits above the selector, REX.B
 * registers, and the forms refused (memory destination, segment 6 and 7,
 * REX.R, other prefixes), which must leave the registers alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "engine/emu_sysinsn.h"

#define FILL 0x1122334455667788ULL

static struct kvm_sregs sregs(void)
{
	struct kvm_sregs s;

	memset(&s, 0, sizeof(s));
	s.es.selector = 0x2b;
	s.cs.selector = 0x10;
	s.ss.selector = 0x18;
	s.ds.selector = 0x2b;
	s.fs.selector = 0x63;
	s.gs.selector = 0x7b;
	return s;
}

static struct kvm_regs regs(void)
{
	struct kvm_regs r;

	memset(&r, 0, sizeof(r));
	r.rax = r.rcx = r.rdx = r.rbx = r.rsi = r.rdi = r.r8 = r.r13 = FILL;
	r.rip = 0x1000;
	return r;
}

static void test_decode(void **state)
{
	const uint8_t cli[] = { 0xfa }, sti[] = { 0xfb, 0x90 }, mov[] = { 0x66, 0x8c, 0xe0 }, rex[] = { 0x41, 0x8c, 0xe5 };
	const uint8_t mem[] = { 0x8c, 0x20 }, nop[] = { 0x90 }, cut[] = { 0x66, 0x8c };
	size_t len;

	(void)state;
	assert_int_equal(emu_sysinsn_decode(cli, sizeof(cli), &len), EMU_SYS_CLI);
	assert_int_equal(len, 1);
	assert_int_equal(emu_sysinsn_decode(sti, sizeof(sti), &len), EMU_SYS_STI);
	assert_int_equal(len, 1);
	assert_int_equal(emu_sysinsn_decode(mov, sizeof(mov), &len), EMU_SYS_MOV_SREG);
	assert_int_equal(len, 3);
	assert_int_equal(emu_sysinsn_decode(rex, sizeof(rex), &len), EMU_SYS_MOV_SREG);
	assert_int_equal(len, 3);
	assert_int_equal(emu_sysinsn_decode(mem, sizeof(mem), &len), EMU_SYS_NONE);
	assert_int_equal(emu_sysinsn_decode(nop, sizeof(nop), &len), EMU_SYS_NONE);
	assert_int_equal(emu_sysinsn_decode(cut, sizeof(cut), &len), EMU_SYS_NONE);
	assert_int_equal(emu_sysinsn_decode(cut, 0, &len), EMU_SYS_NONE);
	assert_int_equal(len, 0);
}

static void test_mov_sizes(void **state)
{
	const struct kvm_sregs s = sregs();

	(void)state;
	{
		/* mov eax, fs: zero-extended */
		const uint8_t c[] = { 0x8c, 0xe0 };
		struct kvm_regs r = regs();

		assert_true(emu_mov_from_sreg(c, sizeof(c), &s, &r));
		assert_int_equal(r.rax, 0x63);
		assert_int_equal(r.rip, 0x1002);
	}
	{
		/* mov ax, gs: the bits above 16 kept */
		const uint8_t c[] = { 0x66, 0x8c, 0xe8 };
		struct kvm_regs r = regs();

		assert_true(emu_mov_from_sreg(c, sizeof(c), &s, &r));
		assert_int_equal(r.rax, 0x112233445566007bULL);
		assert_int_equal(r.rip, 0x1003);
	}
	{
		/* mov rdx, ss (REX.W) */
		const uint8_t c[] = { 0x48, 0x8c, 0xd2 };
		struct kvm_regs r = regs();

		assert_true(emu_mov_from_sreg(c, sizeof(c), &s, &r));
		assert_int_equal(r.rdx, 0x18);
		assert_int_equal(r.rax, FILL);
	}
	{
		/* 66 REX.W: REX.W decides, 64 bits */
		const uint8_t c[] = { 0x66, 0x48, 0x8c, 0xc3 };
		struct kvm_regs r = regs();

		assert_true(emu_mov_from_sreg(c, sizeof(c), &s, &r));
		assert_int_equal(r.rbx, 0x2b);
		assert_int_equal(r.rip, 0x1004);
	}
	{
		/* mov r13d, gs (REX.B); mov r8w, es */
		const uint8_t c[] = { 0x41, 0x8c, 0xed }, d[] = { 0x66, 0x41, 0x8c, 0xc0 };
		struct kvm_regs r = regs();

		assert_true(emu_mov_from_sreg(c, sizeof(c), &s, &r));
		assert_int_equal(r.r13, 0x7b);
		assert_true(emu_mov_from_sreg(d, sizeof(d), &s, &r));
		assert_int_equal(r.r8, 0x112233445566002bULL);
		assert_int_equal(r.rip, 0x1007);
	}
	{
		/* mov ecx, cs; mov esi, ds */
		const uint8_t c[] = { 0x8c, 0xc9 }, d[] = { 0x8c, 0xde };
		struct kvm_regs r = regs();

		assert_true(emu_mov_from_sreg(c, sizeof(c), &s, &r));
		assert_true(emu_mov_from_sreg(d, sizeof(d), &s, &r));
		assert_int_equal(r.rcx, 0x10);
		assert_int_equal(r.rsi, 0x2b);
	}
}

static void test_mov_refused(void **state)
{
	const struct kvm_sregs s = sregs();
	const uint8_t mem[] = { 0x8c, 0x20 },        /* mov [rax], fs */
		seg6[] = { 0x8c, 0xf0 },            /* segment 6: #UD */
		seg7[] = { 0x8c, 0xf8 },            /* segment 7: #UD */
		rexr[] = { 0x44, 0x8c, 0xe0 },      /* REX.R */
		lock[] = { 0xf0, 0x8c, 0xe0 },      /* LOCK: #UD */
		seg[] = { 0x64, 0x8c, 0xe0 },       /* a segment override */
		to_sreg[] = { 0x8e, 0xe0 },         /* mov fs, eax: a write */
		cut[] = { 0x66, 0x8c };
	const uint8_t *forms[] = { mem, seg6, seg7, rexr, lock, seg, to_sreg, cut };
	const size_t sizes[] = { sizeof(mem), sizeof(seg6), sizeof(seg7), sizeof(rexr), sizeof(lock), sizeof(seg),
				 sizeof(to_sreg), sizeof(cut) };

	(void)state;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		struct kvm_regs r = regs(), before = r;

		assert_false(emu_mov_from_sreg(forms[i], sizes[i], &s, &r));
		assert_memory_equal(&r, &before, sizeof(r));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_mov_sizes),
		cmocka_unit_test(test_mov_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
