// SPDX-License-Identifier: MIT
/*
 * System instructions done within the engine's run (vmm/engine/
 * emu_sysinsn.c): which bytes are which, and MOV r, Sreg on registers:
 * each operand size's effect on the bits above the selector, REX.B
 * registers, and the forms refused (memory destination, segment 6 and 7,
 * REX.R, other prefixes), which must leave the registers alone;
 * RD/WR FS/GS BASE: both sizes, REX.B, the #UD without CR4.FSGSBASE and the
 * #GP of a non-canonical base (with 4- and 5-level paging) left to KVM.
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
	{
		const uint8_t swapgs[] = { 0x0f, 0x01, 0xf8 }, wrgs[] = { 0xf3, 0x48, 0x0f, 0xae, 0xd8 },
			      rdfs[] = { 0xf3, 0x0f, 0xae, 0xc0 }, clflush[] = { 0x0f, 0xae, 0x38 },
			      fsmem[] = { 0xf3, 0x0f, 0xae, 0x18 }, slash4[] = { 0xf3, 0x0f, 0xae, 0xe0 };

		assert_int_equal(emu_sysinsn_decode(swapgs, sizeof(swapgs), &len), EMU_SYS_SWAPGS);
		assert_int_equal(len, 3);
		assert_int_equal(emu_sysinsn_decode(swapgs, 2, &len), EMU_SYS_NONE);
		{
			const uint8_t clac[] = { 0x0f, 0x01, 0xca }, stac[] = { 0x0f, 0x01, 0xcb }, xgetbv[] = { 0x0f, 0x01, 0xd0 };

			assert_int_equal(emu_sysinsn_decode(clac, sizeof(clac), &len), EMU_SYS_CLAC);
			assert_int_equal(len, 3);
			assert_int_equal(emu_sysinsn_decode(stac, sizeof(stac), &len), EMU_SYS_STAC);
			assert_int_equal(emu_sysinsn_decode(xgetbv, sizeof(xgetbv), &len), EMU_SYS_NONE);
		}
		assert_int_equal(emu_sysinsn_decode(wrgs, sizeof(wrgs), &len), EMU_SYS_FSGSBASE);
		assert_int_equal(len, 5);
		assert_int_equal(emu_sysinsn_decode(rdfs, sizeof(rdfs), &len), EMU_SYS_FSGSBASE);
		assert_int_equal(len, 4);
		assert_int_equal(emu_sysinsn_decode(clflush, sizeof(clflush), &len), EMU_SYS_NONE);
		assert_int_equal(emu_sysinsn_decode(fsmem, sizeof(fsmem), &len), EMU_SYS_NONE);
		assert_int_equal(emu_sysinsn_decode(slash4, sizeof(slash4), &len), EMU_SYS_NONE);
	}
}

#define CR4_LA57 (1ULL << 12)
#define CR4_FSGSBASE (1ULL << 16)

static void test_fsgsbase(void **state)
{
	(void)state;
	{
		/* wrgsbase rax; rdgsbase rcx (REX.W) */
		const uint8_t w[] = { 0xf3, 0x48, 0x0f, 0xae, 0xd8 }, rd[] = { 0xf3, 0x48, 0x0f, 0xae, 0xc9 };
		struct kvm_sregs s = sregs();
		struct kvm_regs r = regs();

		s.cr4 = CR4_FSGSBASE;
		r.rax = 0xffff888012345000ULL;
		assert_true(emu_fsgsbase(w, sizeof(w), &s, &r));
		assert_int_equal(s.gs.base, 0xffff888012345000ULL);
		assert_int_equal(r.rip, 0x1005);
		assert_true(emu_fsgsbase(rd, sizeof(rd), &s, &r));
		assert_int_equal(r.rcx, 0xffff888012345000ULL);
		assert_int_equal(s.fs.base, 0);
	}
	{
		/* rdfsbase r9d: the low 32 bits, zero-extended; wrfsbase r9d: a zero-extended base */
		const uint8_t rd[] = { 0xf3, 0x41, 0x0f, 0xae, 0xc1 }, w[] = { 0xf3, 0x41, 0x0f, 0xae, 0xd1 };
		struct kvm_sregs s = sregs();
		struct kvm_regs r = regs();

		s.cr4 = CR4_FSGSBASE;
		s.fs.base = 0x00007f0012345678ULL;
		r.r9 = FILL;
		assert_true(emu_fsgsbase(rd, sizeof(rd), &s, &r));
		assert_int_equal(r.r9, 0x12345678);
		r.r9 = 0xffffffff87654321ULL;
		assert_true(emu_fsgsbase(w, sizeof(w), &s, &r));
		assert_int_equal(s.fs.base, 0x87654321);
		assert_int_equal(r.rip, 0x100a);
	}
	{
		/* #UD without CR4.FSGSBASE; #GP for a non-canonical base, which 5-level paging allows */
		const uint8_t w[] = { 0xf3, 0x48, 0x0f, 0xae, 0xd0 }; /* wrfsbase rax */
		struct kvm_sregs s = sregs(), before;
		struct kvm_regs r = regs(), rbefore;

		r.rax = 0x0080000000000000ULL;
		before = s;
		rbefore = r;
		assert_false(emu_fsgsbase(w, sizeof(w), &s, &r));
		s.cr4 = CR4_FSGSBASE;
		before.cr4 = s.cr4;
		assert_false(emu_fsgsbase(w, sizeof(w), &s, &r));
		assert_memory_equal(&s, &before, sizeof(s));
		assert_memory_equal(&r, &rbefore, sizeof(r));
		s.cr4 |= CR4_LA57;
		assert_true(emu_fsgsbase(w, sizeof(w), &s, &r));
		assert_int_equal(s.fs.base, 0x0080000000000000ULL);
		r.rax = 0x0100000000000000ULL;
		assert_false(emu_fsgsbase(w, sizeof(w), &s, &r));
	}
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
		cmocka_unit_test(test_fsgsbase),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
