// SPDX-License-Identifier: MIT
/*
 * The engine's run of guest code cut into pieces ends where one uncut run
 * does: the same registers, flags, x87/SSE state, memory and instruction
 * count. A Linux guest's program is cut all the time: by the page faults
 * of its first touches (not present, a clean page's first write, a
 * read-only page the kernel then makes writable, a copy-on-write page the
 * kernel replaces and flushes), by a counter's watch, by the slice's end.
 * Each cut hands state out of Unicorn and back (emu.c's state_save and
 * state_load, its flags repair after a stop inside a block, its checks
 * before a helper's access), and what goes wrong there goes wrong silently
 * in the guest: a flag, an x87 register, a store done twice or not at all.
 *
 * The code: short hand-written pieces (the assembly below) that keep state
 * live across their memory accesses, on four data pages in a row with
 * accesses across their boundaries. This test plays the guest kernel: at
 * each #PF the engine reports it changes the page table entry as Linux
 * would and runs on from the faulting instruction.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine/emu.h"
#include "guest_mem.h"

#define P (1ULL << 0)
#define RW (1ULL << 1)
#define US (1ULL << 2)
#define A (1ULL << 5)
#define D (1ULL << 6)
#define XD (1ULL << 63)
#define RAM_SIZE (16ULL << 20)

#define PML4 0x1000ULL
#define PDPT 0x2000ULL
#define PD 0x3000ULL
#define PT 0x4000ULL
#define CODE 0x400000ULL
#define DATA 0x410000ULL /* four pages: RBX points at the first; the stack is in the last */
#define NDATA 4
#define SPARE_PHYS 0x800000ULL /* fresh pages for copy-on-write */

/* The pieces, between their labels; each ends in UD2, where the runs stop. */
__asm__(".pushsection .rodata\n"
	/* Flags live across loads and stores, accesses across page boundaries, the stack. */
	"cut_flags_begin:\n"
	"cmp %rcx, %rdx\n"
	"mov (%rbx), %rax\n"
	"adc 8(%rbx), %rax\n"
	"setc %r8b\n"
	"sbb %r9, %r9\n"
	"mov %rax, 0x1000(%rbx)\n"
	"inc %rcx\n"
	"cmovc %rdx, %r10\n"
	"mov 0x1008(%rbx), %r11\n"
	"jc 1f\n"
	"add $1, %r12\n"
	"1: sub 0x2000(%rbx), %r13\n"
	"mov %r13, 0x2008(%rbx)\n"
	"rcl $1, %r14\n"
	"mov 0xffc(%rbx), %r15\n"
	"shl %cl, %rsi\n"
	"mov %rsi, 0x2ffc(%rbx)\n"
	"adc $0, %rdi\n"
	"push %rax\n"
	"pushfq\n"
	"pop %rbp\n"
	"pop %rax\n"
	"xadd %rax, 0x1010(%rbx)\n"
	"setg %dl\n"
	"ud2\n"
	"cut_flags_end:\n"
	/* SSE loads and stores, one across each boundary, flags from UCOMISD. */
	"cut_sse_begin:\n"
	"movdqu (%rbx), %xmm0\n"
	"paddq 0x10(%rbx), %xmm0\n"
	"movdqu %xmm0, 0x1000(%rbx)\n"
	"movdqu 0xff8(%rbx), %xmm1\n"
	"pcmpeqb %xmm0, %xmm1\n"
	"pmovmskb %xmm1, %eax\n"
	"movsd 0x2000(%rbx), %xmm2\n"
	"ucomisd 0x18(%rbx), %xmm2\n"
	"seta %cl\n"
	"setp %ch\n"
	"cvttsd2si %xmm2, %rdx\n"
	"movaps %xmm2, 0x2010(%rbx)\n"
	"pshufd $0x1b, %xmm0, %xmm3\n"
	"movdqu %xmm3, 0x2ff8(%rbx)\n"
	"paddd 0x1020(%rbx), %xmm3\n"
	"stmxcsr 0x1030(%rbx)\n"
	"ud2\n"
	"cut_sse_end:\n"
	/* x87 with values on the stack across the faults, 80-bit loads and stores through helpers. */
	"cut_x87_begin:\n"
	"fldl (%rbx)\n"
	"fldl 0x1000(%rbx)\n"
	"fld1\n"
	"faddp %st, %st(2)\n"
	"fldt 0x2000(%rbx)\n"
	"fxch %st(1)\n"
	"fstpl 0x2010(%rbx)\n"
	"fildq 0x20(%rbx)\n"
	"fistpq 0x1010(%rbx)\n"
	"fstpt 0x2ffa(%rbx)\n"
	"fnstsw %ax\n"
	"fnstcw 0x1020(%rbx)\n"
	"fldz\n"
	"fnstenv 0x3100(%rbx)\n"
	"fldl 0x28(%rbx)\n"
	"ud2\n"
	"cut_x87_end:\n"
	/* Instructions Unicorn runs through helpers, their results used after. */
	"cut_helpers_begin:\n"
	"mov (%rbx), %rax\n"
	"mov 8(%rbx), %rdx\n"
	"cmpxchg16b 0x1000(%rbx)\n"
	"setz %r8b\n"
	"cmpxchg8b 0x2000(%rbx)\n"
	"setz %r9b\n"
	"fxsave 0x2200(%rbx)\n"
	"add %rax, %rdx\n"
	"fxrstor 0x2200(%rbx)\n"
	"mov %rdx, 0x3000(%rbx)\n"
	"cmpxchg16b 0x3010(%rbx)\n"
	"adc %rax, %r10\n"
	"ud2\n"
	"cut_helpers_end:\n"
	/* REP strings across page boundaries (each faults part-way in some runs). */
	"cut_strings_begin:\n"
	"lea 0xf80(%rbx), %rsi\n"
	"lea 0x1f00(%rbx), %rdi\n"
	"mov $0x100, %ecx\n"
	"cld\n"
	"rep movsb\n"
	"lea 0x2f00(%rbx), %rdi\n"
	"mov $0x40, %ecx\n"
	"mov %r12, %rax\n"
	"rep stosq\n"
	"mov %rbx, %rsi\n"
	"lea 0x1000(%rbx), %rdi\n"
	"mov $0x20, %ecx\n"
	"repe cmpsb\n"
	"setz %al\n"
	"ud2\n"
	"cut_strings_end:\n"
	".popsection\n");

extern const uint8_t cut_flags_begin[], cut_flags_end[], cut_sse_begin[], cut_sse_end[], cut_x87_begin[],
	cut_x87_end[], cut_helpers_begin[], cut_helpers_end[], cut_strings_begin[], cut_strings_end[];

static const struct piece {
	const char *name;
	const uint8_t *begin, *end;
} pieces[] = {
	{ "flags", cut_flags_begin, cut_flags_end },
	{ "sse", cut_sse_begin, cut_sse_end },
	{ "x87", cut_x87_begin, cut_x87_end },
	{ "helpers", cut_helpers_begin, cut_helpers_end },
	{ "strings", cut_strings_begin, cut_strings_end },
};

/* How the data pages start, and what the "kernel" does at a #PF. */
enum cut_mode {
	CUT_NONE,        /* present, writable, dirty: the uncut reference */
	CUT_NOT_PRESENT, /* not present: the fault maps them writable */
	CUT_CLEAN,       /* writable, accessed and dirty clear: the engine's first writes set them */
	CUT_READ_ONLY,   /* read-only: a write fault makes the entry writable (no TLB flush, as Linux) */
	CUT_COW,         /* read-only: a write fault copies the page to a new one, writable, and flushes */
	CUT_MODES,
};

static const char *const mode_names[CUT_MODES] = { "none", "not-present", "clean", "read-only", "copy-on-write" };

struct outcome {
	struct emu_state st;
	uint64_t insns, pieces;
	uint8_t data[NDATA][4096];
};

static struct guest_mem mem;
static struct emu *emu;
static uint64_t spare_next;

static uint64_t *pte(uint64_t table, uint64_t index)
{
	return (uint64_t *)(mem.host + table + 8 * index);
}

static uint64_t *data_pte(unsigned int i)
{
	return pte(PT, ((DATA >> 12) & 511) + i);
}

static uint64_t phys_of(uint64_t va)
{
	return 0x100000 + (va - CODE);
}

static int setup(void **state)
{
	char err[128];

	(void)state;
	mem.size = RAM_SIZE;
	mem.host = aligned_alloc(4096, RAM_SIZE);
	assert_non_null(mem.host);
	if (emu_create(&emu, &mem, false, err, sizeof(err)))
		fail_msg("emu_create: %s", err);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	emu_destroy(emu);
	free(mem.host);
	return 0;
}

/* Fresh memory, tables, code and data for one run of piece p in mode m. */
static void prepare(const struct piece *p, enum cut_mode m, struct emu_state *st)
{
	uint64_t flags = P | US | XD;

	memset(mem.host, 0, RAM_SIZE);
	spare_next = SPARE_PHYS;
	*pte(PML4, 0) = PDPT | P | RW | US;
	*pte(PDPT, 0) = PD | P | RW | US;
	*pte(PD, 2) = PT | P | RW | US;
	*pte(PT, 0) = phys_of(CODE) | P | US | A;
	memcpy(mem.host + phys_of(CODE), p->begin, (size_t)(p->end - p->begin));
	switch (m) {
	case CUT_NONE: flags |= RW | A | D; break;
	case CUT_NOT_PRESENT: flags = 0; break;
	case CUT_CLEAN: flags |= RW; break;
	case CUT_READ_ONLY: case CUT_COW: flags |= A; break;
	default: break;
	}
	for (unsigned int i = 0; i < NDATA; i++) {
		uint64_t pa = phys_of(DATA) + 4096ULL * i;

		*data_pte(i) = pa | flags;
		/* Doubles between 1 and 2 in the first words (the x87 and SSE pieces), then a pattern. */
		for (unsigned int w = 0; w < 512; w++) {
			uint64_t v = 0x3ff0000000000000ULL | ((0x9e3779b97f4a7c15ULL * (i * 512 + w + 1)) >> 12);

			memcpy(mem.host + pa + 8 * w, &v, 8);
		}
	}
	emu_invalidate(emu);

	memset(st, 0, sizeof(*st));
	st->regs = (struct kvm_regs){ .rax = 0x1111, .rcx = 0x2240, .rdx = 0x2240, .rbx = DATA, .rsi = 0x0123456789abcdefULL,
				      .rdi = 0xfedcba9876543210ULL, .rbp = 0x5555, .rsp = DATA + 0x3f00, .r8 = 8, .r9 = 9,
				      .r10 = 10, .r11 = 11, .r12 = 0x1212121212121212ULL, .r13 = 13, .r14 = 14, .r15 = 15,
				      .rip = CODE, .rflags = 0x203 };
	st->sregs.cs = (struct kvm_segment){ .selector = 0x2b, .type = 0xb, .present = 1, .dpl = 3, .s = 1, .l = 1 };
	st->sregs.ss = (struct kvm_segment){ .selector = 0x23, .type = 0x3, .present = 1, .dpl = 3, .s = 1 };
	st->sregs.cr0 = 0x80050033;
	st->sregs.cr3 = PML4;
	st->sregs.cr4 = 0x620; /* PAE, OSFXSR, OSXMMEXCPT */
	st->sregs.efer = 0xd00;
	st->fpu.fcw = 0x37f;
	st->fpu.mxcsr = 0x1f80;
	for (unsigned int i = 0; i < 16; i++)
		for (unsigned int b = 0; b < 16; b++)
			st->fpu.xmm[i][b] = (uint8_t)(i * 16 + b + 1);
}

/* What the guest kernel does at a #PF at addr (err: EMU_PF_*) in mode m. */
static void handle_fault(enum cut_mode m, uint64_t addr, uint32_t err)
{
	unsigned int i = (unsigned int)((addr - DATA) >> 12);
	uint64_t *e;

	if (addr < DATA || i >= NDATA)
		fail_msg("#PF at %#llx, outside the data pages", (unsigned long long)addr);
	e = data_pte(i);
	switch (m) {
	case CUT_NOT_PRESENT:
		assert_false(err & EMU_PF_P);
		*e = (phys_of(DATA) + 4096ULL * i) | P | RW | US | XD;
		break;
	case CUT_READ_ONLY:
		assert_true((err & (EMU_PF_P | EMU_PF_W)) == (EMU_PF_P | EMU_PF_W));
		*e |= RW;
		break;
	case CUT_COW: {
		uint64_t from = *e & 0x000ffffffffff000ULL, to = spare_next;

		assert_true((err & (EMU_PF_P | EMU_PF_W)) == (EMU_PF_P | EMU_PF_W));
		spare_next += 4096;
		memcpy(mem.host + to, mem.host + from, 4096);
		memset(mem.host + from, 0xee, 4096); /* the old page reused: a write landing there is lost */
		*e = to | P | RW | US | A | XD;
		emu_invalidate(emu); /* the kernel's INVLPG */
		break;
	}
	default:
		fail_msg("a #PF at %#llx (error %#x) in mode %s", (unsigned long long)addr, err, mode_names[m]);
	}
}

/*
 * Runs the piece from st to its UD2, in pieces of at most cut_every
 * instructions (0: no cut), the faults handled for mode m.
 */
static void run_piece(const struct piece *p, enum cut_mode m, uint64_t cut_every, struct outcome *out)
{
	uint64_t ud2 = CODE + (uint64_t)(p->end - p->begin) - 2;

	memset(out, 0, sizeof(*out));
	prepare(p, m, &out->st);
	for (;;) {
		struct emu_run_args a = { .max_insns = UINT64_MAX };
		struct emu_result r;

		if (cut_every) {
			a.nwatch = 1;
			a.watch[0] = (struct emu_watch){ EMU_EV_INSNS, EMU_RING_USER | EMU_RING_KERNEL, cut_every };
		}
		assert_int_equal(emu_run(emu, &out->st, &a, &r), 0);
		out->insns += r.counts.ev[0][EMU_EV_INSNS];
		if (++out->pieces > 10000)
			fail_msg("%s, %s: no end", p->name, mode_names[m]);
		if (r.stop == EMU_STOP_WATCH)
			continue;
		assert_int_equal(r.stop, EMU_STOP_HANDBACK);
		if (r.handback == EMU_HB_FAULT) {
			assert_true(r.page_fault && r.pf_valid);
			handle_fault(m, r.pf_addr, r.pf_code);
			continue;
		}
		if (r.handback != EMU_HB_SYSTEM || out->st.regs.rip != ud2)
			fail_msg("%s, %s: stopped at %#llx (%s), not the UD2", p->name, mode_names[m],
				 (unsigned long long)out->st.regs.rip, emu_handback_name(r.handback));
		break;
	}
	for (unsigned int i = 0; i < NDATA; i++)
		memcpy(out->data[i], mem.host + (*data_pte(i) & 0x000ffffffffff000ULL), 4096);
}

static void same_outcome(const char *what, const struct outcome *ref, const struct outcome *o)
{
	const struct kvm_regs *a = &ref->st.regs, *b = &o->st.regs;
	const struct kvm_fpu *f = &ref->st.fpu, *g = &o->st.fpu;

	if (memcmp(a, b, sizeof(*a))) {
		const uint64_t *x = (const uint64_t *)a, *y = (const uint64_t *)b;

		for (size_t i = 0; i < sizeof(*a) / 8; i++)
			if (x[i] != y[i])
				fail_msg("%s: register %zu (kvm_regs order) %#llx, uncut %#llx", what, i,
					 (unsigned long long)y[i], (unsigned long long)x[i]);
	}
	if (f->fcw != g->fcw || f->fsw != g->fsw || f->ftwx != g->ftwx || f->mxcsr != g->mxcsr)
		fail_msg("%s: FCW %#x FSW %#x tags %#x MXCSR %#x, uncut %#x %#x %#x %#x", what, g->fcw, g->fsw, g->ftwx,
			 g->mxcsr, f->fcw, f->fsw, f->ftwx, f->mxcsr);
	for (unsigned int i = 0; i < 8; i++)
		if (memcmp(f->fpr[i], g->fpr[i], 10))
			fail_msg("%s: ST(%u) differs", what, i);
	for (unsigned int i = 0; i < 16; i++)
		if (memcmp(f->xmm[i], g->xmm[i], 16))
			fail_msg("%s: XMM%u differs", what, i);
	for (unsigned int i = 0; i < NDATA; i++)
		for (unsigned int b = 0; b < 4096; b++)
			if (ref->data[i][b] != o->data[i][b])
				fail_msg("%s: data page %u byte %#x: %#x, uncut %#x", what, i, b, o->data[i][b],
					 ref->data[i][b]);
	if (ref->insns != o->insns)
		fail_msg("%s: %llu instructions, uncut %llu", what, (unsigned long long)o->insns,
			 (unsigned long long)ref->insns);
}

static void test_cuts(void **state)
{
	static struct outcome ref, o;

	(void)state;
	for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
		const struct piece *p = &pieces[i];

		run_piece(p, CUT_NONE, 0, &ref);
		assert_int_equal(ref.pieces, 1);
		for (int m = CUT_NONE; m < CUT_MODES; m++) {
			/* Uncut but for the faults, then also cut every 1, 2, 3 and 5 instructions. */
			static const uint64_t every[] = { 0, 1, 2, 3, 5 };

			for (size_t k = 0; k < sizeof(every) / sizeof(every[0]); k++) {
				char what[96];

				if (m == CUT_NONE && every[k] == 0)
					continue;
				snprintf(what, sizeof(what), "%s, %s, cut every %llu", p->name, mode_names[m],
					 (unsigned long long)every[k]);
				run_piece(p, (enum cut_mode)m, every[k], &o);
				same_outcome(what, &ref, &o);
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cuts),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
