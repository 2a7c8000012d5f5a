// SPDX-License-Identifier: MIT
/*
 * Locked instructions done by the VMM (vmm/engine/emu_locked.c): decoding
 * of hand-assembled forms (prefixes, REX, SIB, RIP-relative, FS/GS, the
 * byte registers AH-BH, immediates), the refusals, the address with a
 * register bit offset, and execution on a buffer: memory, the registers
 * the CPU writes, and the arithmetic flags (values worked out by hand).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "engine/emu_locked.h"

#define CF 0x001ULL
#define PF 0x004ULL
#define AF 0x010ULL
#define ZF 0x040ULL
#define SF 0x080ULL
#define OF 0x800ULL
#define ARITH (CF | PF | AF | ZF | SF | OF)

static struct emu_locked decode(const uint8_t *code, size_t n)
{
	struct emu_locked in;

	assert_int_equal(emu_locked_decode(code, n, &in), 0);
	return in;
}

static void test_decode_forms(void **state)
{
	(void)state;
	{
		/* lock add [rax], ebx */
		const uint8_t c[] = { 0xf0, 0x01, 0x18 };
		struct emu_locked in = decode(c, sizeof(c));

		assert_int_equal(in.op, LOCKED_ADD);
		assert_int_equal(in.size, 4);
		assert_int_equal(in.reg, 3);
		assert_int_equal(in.base, 0);
		assert_int_equal(in.index, -1);
		assert_int_equal(in.len, 3);
	}
	{
		/* lock xadd [rdi], rax */
		const uint8_t c[] = { 0xf0, 0x48, 0x0f, 0xc1, 0x07 };
		struct emu_locked in = decode(c, sizeof(c));

		assert_int_equal(in.op, LOCKED_XADD);
		assert_int_equal(in.size, 8);
		assert_int_equal(in.reg, 0);
		assert_int_equal(in.base, 7);
		assert_int_equal(in.len, 5);
	}
	{
		/* lock inc qword gs:[rip + 0x100] (Linux's per-CPU counters) */
		const uint8_t c[] = { 0x65, 0xf0, 0x48, 0xff, 0x05, 0x00, 0x01, 0x00, 0x00 };
		struct emu_locked in = decode(c, sizeof(c));

		assert_int_equal(in.op, LOCKED_INC);
		assert_int_equal(in.size, 8);
		assert_true(in.rip_relative);
		assert_int_equal(in.disp, 0x100);
		assert_int_equal(in.seg, 5);
		assert_int_equal(in.len, 9);
	}
	{
		/* lock or byte [rsp + 8], 1: SIB with base RSP, disp8, imm8 */
		const uint8_t c[] = { 0xf0, 0x80, 0x4c, 0x24, 0x08, 0x01 };
		struct emu_locked in = decode(c, sizeof(c));

		assert_int_equal(in.op, LOCKED_OR);
		assert_int_equal(in.size, 1);
		assert_int_equal(in.base, 4);
		assert_int_equal(in.index, -1);
		assert_int_equal(in.disp, 8);
		assert_true(in.has_imm);
		assert_int_equal(in.imm, 1);
		assert_int_equal(in.len, 6);
	}
	{
		/* lock sub dword [rbx + rcx*4], -1: imm8 sign-extended to the operand size */
		const uint8_t c[] = { 0xf0, 0x83, 0x2c, 0x8b, 0xff };
		struct emu_locked in = decode(c, sizeof(c));

		assert_int_equal(in.op, LOCKED_SUB);
		assert_int_equal(in.base, 3);
		assert_int_equal(in.index, 1);
		assert_int_equal(in.scale, 4);
		assert_int_equal(in.imm, 0xffffffffULL);
	}
	{
		/* lock add word [rax], 0x1234 */
		const uint8_t c[] = { 0xf0, 0x66, 0x81, 0x00, 0x34, 0x12 };
		struct emu_locked in = decode(c, sizeof(c));

		assert_int_equal(in.size, 2);
		assert_int_equal(in.imm, 0x1234);
		assert_int_equal(in.len, 6);
	}
	{
		/* xchg [rdi], ah: no LOCK needed; AH is register 4 without REX */
		const uint8_t c[] = { 0x86, 0x27 };
		struct emu_locked in = decode(c, sizeof(c));

		assert_int_equal(in.op, LOCKED_XCHG);
		assert_true(in.high8);
		assert_int_equal(in.reg, 0);
	}
	{
		/* lock cmpxchg [rax + r12], ebx: REX.X makes index 4 R12, not "none" */
		const uint8_t c[] = { 0xf0, 0x42, 0x0f, 0xb1, 0x1c, 0x20 };
		struct emu_locked in = decode(c, sizeof(c));

		assert_int_equal(in.op, LOCKED_CMPXCHG);
		assert_int_equal(in.base, 0);
		assert_int_equal(in.index, 12);
		assert_int_equal(in.reg, 3);
	}
	{
		/* lock cmpxchg16b [rsi]; lock bts dword [rdx], 63 (the immediate wraps at 32) */
		const uint8_t c16[] = { 0xf0, 0x48, 0x0f, 0xc7, 0x0e };
		const uint8_t bts[] = { 0xf0, 0x0f, 0xba, 0x2a, 0x3f };
		struct emu_locked in = decode(c16, sizeof(c16));

		assert_int_equal(in.op, LOCKED_CMPXCHG2);
		assert_int_equal(in.size, 16);
		in = decode(bts, sizeof(bts));
		assert_int_equal(in.op, LOCKED_BTS);
		assert_int_equal(in.imm, 31);
	}
}

static void test_decode_refused(void **state)
{
	static const struct {
		uint8_t n, c[8];
	} bad[] = {
		{ 3, { 0xf0, 0x01, 0xc3 } },       /* lock add ebx, eax: register destination (#UD) */
		{ 4, { 0x67, 0xf0, 0x01, 0x18 } }, /* 32-bit addressing */
		{ 3, { 0xf0, 0x39, 0x18 } },       /* lock cmp: not lockable */
		{ 2, { 0x01, 0x18 } },             /* add without LOCK */
		{ 4, { 0xf2, 0xf0, 0x01, 0x18 } }, /* XACQUIRE */
		{ 4, { 0xf0, 0x0f, 0xa3, 0x07 } }, /* lock bt: not lockable */
		{ 2, { 0xf0, 0x01 } },             /* cut short */
		{ 4, { 0xf0, 0x83, 0x2c, 0x8b } }, /* no immediate */
		{ 5, { 0x64, 0x65, 0xf0, 0x01, 0x18 } }, /* two segment overrides */
	};
	struct emu_locked in;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(emu_locked_decode(bad[i].c, bad[i].n, &in), -EINVAL);
}

static void test_address(void **state)
{
	struct kvm_regs r = { 0 };
	const uint8_t rip_rel[] = { 0x65, 0xf0, 0x48, 0xff, 0x05, 0x00, 0x01, 0x00, 0x00 };
	const uint8_t sib[] = { 0xf0, 0x83, 0x2c, 0x8b, 0xff };
	const uint8_t bts_reg[] = { 0xf0, 0x0f, 0xab, 0x07 };    /* lock bts dword [rdi], eax */
	const uint8_t bts_reg64[] = { 0xf0, 0x48, 0x0f, 0xab, 0x07 }; /* lock bts qword [rdi], rax */
	struct emu_locked in;

	(void)state;
	in = decode(rip_rel, sizeof(rip_rel));
	assert_int_equal(emu_locked_address(&in, &r, 0x1000, 0x7000, 0x900000), 0x900000 + 0x1000 + 9 + 0x100);
	in = decode(sib, sizeof(sib));
	r.rbx = 0x5000;
	r.rcx = 3;
	assert_int_equal(emu_locked_address(&in, &r, 0, 0, 0), 0x500c);
	/* A register bit offset reaches the piece holding the bit: 35 is bit 3 of the next dword, -1 bit 31 of the one before. */
	in = decode(bts_reg, sizeof(bts_reg));
	r.rdi = 0x8000;
	r.rax = 35;
	assert_int_equal(emu_locked_address(&in, &r, 0, 0, 0), 0x8004);
	r.rax = 0xffffffffULL; /* -1 as a 32-bit offset */
	assert_int_equal(emu_locked_address(&in, &r, 0, 0, 0), 0x7ffc);
	in = decode(bts_reg64, sizeof(bts_reg64));
	r.rax = 130;
	assert_int_equal(emu_locked_address(&in, &r, 0, 0, 0), 0x8010);
}

/* Decodes code and runs it on mem with r. */
static void run(const uint8_t *code, size_t n, void *mem, struct kvm_regs *r)
{
	struct emu_locked in = decode(code, n);

	emu_locked_exec(&in, mem, r);
}

static void test_exec_arith_flags(void **state)
{
	struct kvm_regs r = { 0 };
	uint32_t d;
	uint64_t q;

	(void)state;
	{
		/* lock add [rax], ebx: 0x7fffffff + 1 = 0x80000000, OF SF AF PF */
		const uint8_t c[] = { 0xf0, 0x01, 0x18 };

		d = 0x7fffffff;
		r.rbx = 1;
		r.rflags = 0x202 | CF | ZF; /* replaced */
		run(c, sizeof(c), &d, &r);
		assert_int_equal(d, 0x80000000u);
		assert_int_equal(r.rflags, 0x202 | OF | SF | AF | PF);
	}
	{
		/* lock inc dword [rax]: 0xffffffff + 1 = 0, CF kept from before */
		const uint8_t c[] = { 0xf0, 0xff, 0x00 };

		d = 0xffffffff;
		r.rflags = 0x202 | CF;
		run(c, sizeof(c), &d, &r);
		assert_int_equal(d, 0);
		assert_int_equal(r.rflags & ARITH, CF | ZF | AF | PF);
	}
	{
		/* lock sbb qword [rax], 0 with CF in: the borrow reaches memory */
		const uint8_t c[] = { 0xf0, 0x48, 0x83, 0x18, 0x00 };

		q = 0;
		r.rflags = 0x202 | CF;
		run(c, sizeof(c), &q, &r);
		assert_int_equal(q, ~0ULL);
		assert_int_equal(r.rflags & (CF | ZF | SF), CF | SF);
	}
	{
		/* lock neg byte [rax]: 1 -> 0xff, CF set (non-zero source) */
		const uint8_t c[] = { 0xf0, 0xf6, 0x18 };
		uint8_t b = 1;

		r.rflags = 0x202;
		run(c, sizeof(c), &b, &r);
		assert_int_equal(b, 0xff);
		assert_int_equal(r.rflags & (CF | ZF | SF), CF | SF);
	}
	/* Flags outside the arithmetic ones stay the guest's: IF, DF, AC, and the rest. */
	{
		const uint8_t c[] = { 0xf0, 0x09, 0x18 }; /* lock or [rax], ebx */

		d = 0;
		r.rbx = 0;
		r.rflags = 0x202 | (1ULL << 10) | (1ULL << 18);
		run(c, sizeof(c), &d, &r);
		assert_int_equal(r.rflags, 0x202 | (1ULL << 10) | (1ULL << 18) | ZF | PF);
	}
}

static void test_exec_registers(void **state)
{
	struct kvm_regs r = { 0 };
	uint32_t d;
	uint64_t q;

	(void)state;
	{
		/* lock xadd [rdi], rax */
		const uint8_t c[] = { 0xf0, 0x48, 0x0f, 0xc1, 0x07 };

		q = 40;
		r.rax = 2;
		run(c, sizeof(c), &q, &r);
		assert_int_equal(q, 42);
		assert_int_equal(r.rax, 40);
	}
	{
		/* lock xadd [rdi], eax: the 32-bit register write clears the top half */
		const uint8_t c[] = { 0xf0, 0x0f, 0xc1, 0x07 };

		d = 7;
		r.rax = 0xdead000000000001ULL;
		run(c, sizeof(c), &d, &r);
		assert_int_equal(d, 8);
		assert_int_equal(r.rax, 7);
	}
	{
		/* xchg [rdi], ah: only AH changes */
		const uint8_t c[] = { 0x86, 0x27 };
		uint8_t b = 0x5a;

		r.rax = 0x1111111111113344ULL;
		run(c, sizeof(c), &b, &r);
		assert_int_equal(b, 0x33);
		assert_int_equal(r.rax, 0x1111111111115a44ULL);
	}
	{
		/* xchg [rdi], cx (66 87 0f): only CX changes */
		const uint8_t c[] = { 0x66, 0x87, 0x0f };
		uint16_t w = 0xbeef;

		r.rcx = 0x2222222222221234ULL;
		run(c, sizeof(c), &w, &r);
		assert_int_equal(w, 0x1234);
		assert_int_equal(r.rcx, 0x222222222222beefULL);
	}
	{
		/* lock cmpxchg [rdi], edx: fails (EAX loaded, ZF clear), then succeeds (stored, ZF set) */
		const uint8_t c[] = { 0xf0, 0x0f, 0xb1, 0x17 };

		d = 7;
		r.rax = 5;
		r.rdx = 9;
		run(c, sizeof(c), &d, &r);
		assert_int_equal(d, 7);
		assert_int_equal(r.rax, 7);
		assert_int_equal(r.rflags & ZF, 0);
		run(c, sizeof(c), &d, &r);
		assert_int_equal(d, 9);
		assert_int_equal(r.rflags & ZF, ZF);
	}
	{
		/* lock cmpxchg16b [rsi] */
		const uint8_t c[] = { 0xf0, 0x48, 0x0f, 0xc7, 0x0e };
		_Alignas(16) uint64_t o[2] = { 1, 2 };

		r.rax = 1;
		r.rdx = 2;
		r.rbx = 3;
		r.rcx = 4;
		run(c, sizeof(c), o, &r);
		assert_int_equal(o[0], 3);
		assert_int_equal(o[1], 4);
		assert_int_equal(r.rflags & ZF, ZF);
		run(c, sizeof(c), o, &r); /* now different: RDX:RAX loaded */
		assert_int_equal(r.rax, 3);
		assert_int_equal(r.rdx, 4);
		assert_int_equal(r.rflags & ZF, 0);
	}
	{
		/* lock bts dword [rdi], eax with EAX 35: bit 3 of the dword the address points at, CF the old bit */
		const uint8_t c[] = { 0xf0, 0x0f, 0xab, 0x07 };

		d = 0;
		r.rax = 35;
		run(c, sizeof(c), &d, &r);
		assert_int_equal(d, 8);
		assert_int_equal(r.rflags & CF, 0);
		run(c, sizeof(c), &d, &r);
		assert_int_equal(r.rflags & CF, CF);
		assert_int_equal(r.rax, 35); /* the offset register is not written */
	}
	{
		/* lock btr qword [rdx], 63 */
		const uint8_t c[] = { 0xf0, 0x48, 0x0f, 0xba, 0x32, 0x3f };

		q = ~0ULL;
		run(c, sizeof(c), &q, &r);
		assert_int_equal(q, ~0ULL >> 1);
		assert_int_equal(r.rflags & CF, CF);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_forms),
		cmocka_unit_test(test_decode_refused),
		cmocka_unit_test(test_address),
		cmocka_unit_test(test_exec_arith_flags),
		cmocka_unit_test(test_exec_registers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
