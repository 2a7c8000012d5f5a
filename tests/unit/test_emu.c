// SPDX-License-Identifier: MIT
/*
 * The emulation engine (vmm/engine/emu.c) against hand-assembled guest code in a
 * fake guest RAM with hand-built 4-level page tables: exact instruction and
 * branch counts (the loops are assembler, so the counts are known), stops
 * at the exact instruction for watches, hand-backs before the instructions
 * and accesses KVM must do, the guest's page permissions, accessed and
 * dirty bits, state that moves in and out (SSE, FS base), REP strings,
 * self-modifying code, and code in the kernel half at CPL 0.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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
#define PS (1ULL << 7)
#define XD (1ULL << 63)
#define MiB (1024ULL * 1024)
#define RAM_SIZE (16 * MiB)

/* Guest-physical layout. */
#define PML4 0x1000ULL
#define PDPT_LO 0x2000ULL
#define PD_LO 0x3000ULL
#define PT_LO 0x4000ULL
#define PDPT_HI 0x5000ULL
#define PD_HI 0x6000ULL

/* Guest-virtual layout (the user pages are 4 KiB pages of PT_LO). */
#define UCODE 0x400000ULL   /* user, read-only, executable */
#define UDATA 0x401000ULL   /* user, writable, NX */
#define URO 0x402000ULL     /* user, read-only, NX */
#define KPAGE 0x403000ULL   /* supervisor, writable */
#define NOTPRESENT 0x404000ULL
#define USTACK 0x405000ULL  /* user, writable, NX */
#define UCODE_RW 0x406000ULL /* user, writable, executable: self-modifying code */
#define UCODE2 0x407000ULL  /* user, executable: remapped by a test */
#define KCODE 0xffffffff81000000ULL /* a 2 MiB supervisor page at physical 0x200000 */
#define UMMIO 0x408000ULL   /* user, writable: mapped past RAM (a device's registers) */

static struct guest_mem mem;
static struct emu *emu;

static uint64_t *pte(uint64_t table, uint64_t index)
{
	return (uint64_t *)(mem.host + table + 8 * index);
}

static uint64_t phys_of(uint64_t va)
{
	return 0x100000 + (va - UCODE);
}

static void map_user(uint64_t va, uint64_t flags)
{
	*pte(PT_LO, (va >> 12) & 511) = phys_of(va) | P | flags;
}

static int setup(void **state)
{
	char err[128];

	(void)state;
	mem.size = RAM_SIZE;
	mem.host = aligned_alloc(4096, RAM_SIZE);
	assert_non_null(mem.host);
	memset(mem.host, 0, RAM_SIZE);
	*pte(PML4, 0) = PDPT_LO | P | RW | US;
	*pte(PDPT_LO, 0) = PD_LO | P | RW | US;
	*pte(PD_LO, 2) = PT_LO | P | RW | US; /* 0x400000-0x5fffff */
	map_user(UCODE, US);
	map_user(UDATA, US | RW | XD);
	map_user(URO, US | XD);
	map_user(KPAGE, RW);
	map_user(USTACK, US | RW | XD);
	map_user(UCODE_RW, US | RW);
	map_user(UCODE2, US);
	*pte(PT_LO, (UMMIO >> 12) & 511) = RAM_SIZE | P | US | RW | XD;
	*pte(PML4, 511) = PDPT_HI | P | RW;
	*pte(PDPT_HI, 510) = PD_HI | P | RW;
	*pte(PD_HI, 8) = 0x200000 | P | RW | PS; /* 0xffffffff81000000 */
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

static void put_code(uint64_t va, const uint8_t *code, size_t len)
{
	uint64_t pa = va >= KCODE ? 0x200000 + (va - KCODE) : phys_of(va);

	memcpy(mem.host + pa, code, len);
}

static struct emu_state user_state(uint64_t rip)
{
	struct emu_state st;

	memset(&st, 0, sizeof(st));
	st.regs.rip = rip;
	st.regs.rsp = USTACK + 0x1000;
	st.regs.rflags = 0x202;
	st.sregs.cs = (struct kvm_segment){ .selector = 0x2b, .type = 0xb, .present = 1, .dpl = 3, .s = 1, .l = 1 };
	st.sregs.ss = (struct kvm_segment){ .selector = 0x23, .type = 0x3, .present = 1, .dpl = 3, .s = 1 };
	st.sregs.cr0 = 0x80050033; /* PG, WP, AM, NE, ET, MP, PE */
	st.sregs.cr3 = PML4;
	st.sregs.cr4 = 0x20; /* PAE */
	st.sregs.efer = 0xd00; /* NXE, LMA, LME */
	st.fpu.fcw = 0x37f;
	st.fpu.mxcsr = 0x1f80;
	return st;
}

static struct emu_state kernel_state(uint64_t rip)
{
	struct emu_state st = user_state(rip);

	st.sregs.cs.dpl = 0;
	st.sregs.cs.selector = 0x10;
	st.sregs.ss.dpl = 0;
	st.regs.rsp = KCODE + 0x100000;
	return st;
}

static const struct emu_run_args plain = { .max_insns = UINT64_MAX };

/* mov ecx, n; 1: dec ecx; jnz 1b; ud2 */
static void put_loop(uint64_t va, uint32_t n)
{
	uint8_t code[] = { 0xb9, 0, 0, 0, 0, 0xff, 0xc9, 0x75, 0xfc, 0x0f, 0x0b };

	memcpy(code + 1, &n, 4);
	put_code(va, code, sizeof(code));
}

static void run_ok(struct emu_state *st, const struct emu_run_args *a, struct emu_result *r)
{
	assert_int_equal(emu_run(emu, st, a, r), 0);
}

static void test_loop_counts_exact(void **state)
{
	static const uint32_t sizes[] = { 1, 2, 1000, 10000000 };

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct emu_state st = user_state(UCODE);
		struct emu_result r;
		uint64_t n = sizes[i];

		emu_invalidate(emu);
		put_loop(UCODE, sizes[i]);
		run_ok(&st, &plain, &r);
		assert_int_equal(r.stop, EMU_STOP_HANDBACK);
		assert_int_equal(r.handback, EMU_HB_SYSTEM); /* the ud2 */
		assert_int_equal(st.regs.rip, UCODE + 9);
		assert_int_equal(st.regs.rcx, 0);
		assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 1 + 2 * n);
		assert_int_equal(r.counts.ev[0][EMU_EV_BRANCHES], n);
		assert_int_equal(r.counts.ev[0][EMU_EV_TAKEN], n - 1);
		assert_int_equal(r.counts.ev[1][EMU_EV_INSNS], 0);
	}
}

/* mov ecx, 300; 1: inc eax; loop 1b; ud2: LOOP is a conditional branch too. */
static void test_loop_instruction(void **state)
{
	static const uint8_t code[] = { 0xb9, 0x2c, 1, 0, 0, 0xff, 0xc0, 0xe2, 0xfc, 0x0f, 0x0b };
	struct emu_state st = user_state(UCODE);
	struct emu_result r;

	(void)state;
	emu_invalidate(emu);
	put_code(UCODE, code, sizeof(code));
	run_ok(&st, &plain, &r);
	assert_int_equal(st.regs.rax, 300);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 601);
	assert_int_equal(r.counts.ev[0][EMU_EV_BRANCHES], 300);
	assert_int_equal(r.counts.ev[0][EMU_EV_TAKEN], 299);
}

static void test_kernel_half_ring0(void **state)
{
	struct emu_state st = kernel_state(KCODE + 0x10);
	struct emu_result r;

	(void)state;
	emu_invalidate(emu);
	put_loop(KCODE + 0x10, 1000);
	run_ok(&st, &plain, &r);
	assert_int_equal(r.stop, EMU_STOP_HANDBACK);
	assert_int_equal(st.regs.rip, KCODE + 0x19);
	assert_int_equal(r.counts.ev[1][EMU_EV_INSNS], 2001);
	assert_int_equal(r.counts.ev[1][EMU_EV_BRANCHES], 1000);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 0);
	/* The same code from ring 3 is a supervisor page: a fault before the first instruction. */
	st = user_state(KCODE + 0x10);
	run_ok(&st, &plain, &r);
	assert_int_equal(r.stop, EMU_STOP_HANDBACK);
	assert_int_equal(r.handback, EMU_HB_FAULT);
	assert_int_equal(st.regs.rip, KCODE + 0x10);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 0);
}

/*
 * A CR3 write with CR4.PGE keeps global pages (a Linux kernel's text and
 * direct map) mapped and decoded, as a TLB keeps their entries, and drops
 * the rest: the user code at UCODE, remapped to other bytes, runs anew;
 * the kernel's loop is neither mapped nor decoded again. Without PGE, or
 * for a page without G, nothing stays.
 */
static void test_flush_keeps_global(void **state)
{
	uint64_t *pde = pte(PD_HI, 8), *code_pte = pte(PT_LO, (UCODE >> 12) & 511), saved = *code_pte;
	static const uint8_t mov1[] = { 0xb8, 1, 0, 0, 0, 0x0f, 0x0b }; /* mov eax,1; ud2 */
	static const uint8_t mov2[] = { 0xb8, 2, 0, 0, 0, 0x0f, 0x0b }; /* mov eax,2; ud2 */
	struct emu_stats before, after;
	struct emu_state st;
	struct emu_result r;

	(void)state;
	put_loop(KCODE + 0x10, 10);
	put_code(UCODE, mov1, sizeof(mov1));
	put_code(UCODE2, mov2, sizeof(mov2));
	for (int pge = 1; pge >= 0; pge--) {
		*pde |= 1ULL << 8; /* G */
		emu_invalidate(emu);
		*code_pte = saved;
		st = kernel_state(KCODE + 0x10);
		st.sregs.cr4 |= pge ? 0x80 : 0;
		run_ok(&st, &plain, &r);
		st = user_state(UCODE);
		st.sregs.cr4 |= pge ? 0x80 : 0;
		run_ok(&st, &plain, &r);
		assert_int_equal(st.regs.rax, 1);
		/* The user page now names other bytes (the CR3 write's new tables, in effect). */
		*code_pte = (*code_pte & ~0x000ffffffffff000ULL) | phys_of(UCODE2);
		emu_flush_nonglobal(emu);
		emu_get_stats(emu, &before);
		st = kernel_state(KCODE + 0x10);
		st.sregs.cr4 |= pge ? 0x80 : 0;
		run_ok(&st, &plain, &r);
		assert_int_equal(r.counts.ev[1][EMU_EV_INSNS], 21);
		emu_get_stats(emu, &after);
		assert_int_equal(after.blocks_decoded - before.blocks_decoded, pge ? 0 : 3); /* the loop's two and the UD2 */
		assert_int_equal(after.pages_mapped - before.pages_mapped, pge ? 0 : 1);
		st = user_state(UCODE);
		st.sregs.cr4 |= pge ? 0x80 : 0;
		run_ok(&st, &plain, &r);
		assert_int_equal(st.regs.rax, 2);
	}
	/* A global page's mapping without PGE: dropped as any other. */
	*pde &= ~(1ULL << 8);
	*code_pte = saved;
	emu_invalidate(emu);
}

/*
 * A guest large page is one mapping in the emulator: code and data 1 MiB
 * apart in KCODE's 2 MiB page map once, and the first write to it (its
 * dirty bit clear) makes all of it writable and sets the large page's
 * dirty bit.
 */
static void test_large_page_one_mapping(void **state)
{
	/* mov rax, [rbx]; mov [rbx+8], rax; mov [rbx+0x1000], rax; ud2 */
	static const uint8_t code[] = { 0x48, 0x8b, 0x03, 0x48, 0x89, 0x43, 0x08, 0x48, 0x89, 0x83, 0x00, 0x10, 0x00, 0x00,
					0x0f, 0x0b };
	uint64_t *pde = pte(PD_HI, 8), data = KCODE + 0x100000;
	struct emu_state st = kernel_state(KCODE + 0x40);
	struct emu_stats before, after;
	struct emu_result r;

	(void)state;
	*pde &= ~(A | D);
	emu_invalidate(emu);
	put_code(KCODE + 0x40, code, sizeof(code));
	*(uint64_t *)(mem.host + 0x200000 + 0x100000) = 0x1122334455667788ULL;
	st.regs.rbx = data;
	emu_get_stats(emu, &before);
	run_ok(&st, &plain, &r);
	emu_get_stats(emu, &after);
	assert_int_equal(r.stop, EMU_STOP_HANDBACK);
	assert_int_equal(st.regs.rip, KCODE + 0x40 + sizeof(code) - 2);
	assert_int_equal(r.counts.ev[1][EMU_EV_INSNS], 3);
	assert_int_equal(after.pages_mapped - before.pages_mapped, 1);
	assert_true(*pde & A);
	assert_true(*pde & D);
	assert_int_equal(*(uint64_t *)(mem.host + 0x200000 + 0x100008), 0x1122334455667788ULL);
	assert_int_equal(*(uint64_t *)(mem.host + 0x200000 + 0x101000), 0x1122334455667788ULL);
}

/*
 * Ring 0 with SMEP and SMAP (a Linux kernel's CR4): a user page read faults
 * unless RFLAGS.AC is set, each run anew; a jump to user code faults at its
 * fetch; and the kernel's own mappings stay from run to run (dropping them
 * made every run of a Linux kernel in the engine map and translate anew).
 */
static void test_smep_smap_ring0(void **state)
{
	static const uint8_t load[] = { 0x48, 0x8b, 0x03, 0x0f, 0x0b }; /* mov rax, [rbx]; ud2 */
	static const uint8_t jump[] = { 0xff, 0xe3 };                   /* jmp rbx */
	const uint64_t smep_smap = (1ULL << 20) | (1ULL << 21), ac = 1ULL << 18;
	struct emu_stats before, after;
	struct emu_state st;
	struct emu_result r;

	(void)state;
	emu_invalidate(emu);
	put_code(KCODE + 0x80, load, sizeof(load));
	put_code(KCODE + 0xa0, jump, sizeof(jump));
	for (int i = 0; i < 3; i++) {
		bool allowed = i == 1;

		st = kernel_state(KCODE + 0x80);
		st.sregs.cr4 |= smep_smap;
		st.regs.rbx = UDATA;
		if (allowed)
			st.regs.rflags |= ac;
		emu_get_stats(emu, &before);
		run_ok(&st, &plain, &r);
		emu_get_stats(emu, &after);
		assert_int_equal(r.stop, EMU_STOP_HANDBACK);
		assert_int_equal(r.handback, allowed ? EMU_HB_SYSTEM : EMU_HB_FAULT);
		assert_int_equal(st.regs.rip, KCODE + 0x80 + (allowed ? 3 : 0));
		if (i == 2) /* the kernel's page is still mapped; the user page is not mapped again */
			assert_int_equal(after.pages_mapped, before.pages_mapped);
	}
	st = kernel_state(KCODE + 0xa0);
	st.sregs.cr4 |= smep_smap;
	st.regs.rbx = UCODE;
	run_ok(&st, &plain, &r);
	assert_int_equal(r.handback, EMU_HB_FAULT);
	assert_int_equal(st.regs.rip, UCODE);
	assert_int_equal(r.counts.ev[1][EMU_EV_INSNS], 1); /* the jump retired */
}

/* An instruction watch stops right after its target instruction, wherever that is in a block. */
static void test_watch_instructions(void **state)
{
	(void)state;
	for (uint64_t target = 1; target <= 12; target++) {
		struct emu_state st = user_state(UCODE);
		struct emu_run_args a = { .max_insns = UINT64_MAX, .nwatch = 1,
					  .watch = { { EMU_EV_INSNS, EMU_RING_USER, target } } };
		struct emu_result r;
		uint64_t total;

		emu_invalidate(emu);
		put_loop(UCODE, 1000);
		run_ok(&st, &a, &r);
		assert_int_equal(r.stop, EMU_STOP_WATCH);
		assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], target);
		/* After mov and k whole iterations RIP is at dec; after a dec, at jnz. */
		assert_int_equal(st.regs.rip, target % 2 ? UCODE + 5 : UCODE + 7);
		assert_int_equal(st.regs.rcx, 1000 - target / 2);
		/* The rest runs to the ud2: the two runs add up to the whole loop. */
		total = r.counts.ev[0][EMU_EV_INSNS];
		run_ok(&st, &plain, &r);
		assert_int_equal(r.stop, EMU_STOP_HANDBACK);
		assert_int_equal(total + r.counts.ev[0][EMU_EV_INSNS], 2001);
	}
	/* A watch for ring 0 does not fire in ring 3. */
	{
		struct emu_state st = user_state(UCODE);
		struct emu_run_args a = { .max_insns = UINT64_MAX, .nwatch = 1,
					  .watch = { { EMU_EV_INSNS, EMU_RING_KERNEL, 5 } } };
		struct emu_result r;

		run_ok(&st, &a, &r);
		assert_int_equal(r.stop, EMU_STOP_HANDBACK);
		assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 2001);
	}
}

static void test_watch_branches(void **state)
{
	struct emu_state st = user_state(UCODE);
	struct emu_run_args a = { .max_insns = UINT64_MAX, .nwatch = 2,
				  .watch = { { EMU_EV_BRANCHES, EMU_RING_USER, 5 },
					     { EMU_EV_INSNS, EMU_RING_USER, 1000000 } } };
	struct emu_result r;

	(void)state;
	emu_invalidate(emu);
	put_loop(UCODE, 1000);
	run_ok(&st, &a, &r);
	assert_int_equal(r.stop, EMU_STOP_WATCH);
	assert_int_equal(r.watch_hit, 0);
	assert_int_equal(r.counts.ev[0][EMU_EV_BRANCHES], 5);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 11);
	assert_int_equal(st.regs.rip, UCODE + 5);
	assert_int_equal(st.regs.rcx, 995);
	/* Taken branches: the last jnz falls through. */
	st = user_state(UCODE);
	a.watch[0] = (struct emu_watch){ EMU_EV_TAKEN, EMU_RING_USER, 999 };
	run_ok(&st, &a, &r);
	assert_int_equal(r.stop, EMU_STOP_WATCH);
	assert_int_equal(r.counts.ev[0][EMU_EV_TAKEN], 999);
	assert_int_equal(st.regs.rip, UCODE + 5);
	assert_int_equal(st.regs.rcx, 1);
}

static void test_budget(void **state)
{
	struct emu_state st = user_state(UCODE);
	struct emu_run_args a = { .max_insns = 100 };
	struct emu_result r;

	(void)state;
	emu_invalidate(emu);
	put_loop(UCODE, 100000);
	run_ok(&st, &a, &r);
	assert_int_equal(r.stop, EMU_STOP_BUDGET);
	/* At a block boundary at or past the budget: one iteration is one block here. */
	assert_true(r.counts.ev[0][EMU_EV_INSNS] >= 100 && r.counts.ev[0][EMU_EV_INSNS] <= 102);
	assert_int_equal(st.regs.rcx, 100000 - (r.counts.ev[0][EMU_EV_INSNS] - 1) / 2);
}

/* mov rbx, addr; <op on [rbx]>; ud2 */
static void put_access(const uint8_t *op, size_t oplen, uint64_t addr)
{
	uint8_t code[32] = { 0x48, 0xbb };

	memcpy(code + 2, &addr, 8);
	memcpy(code + 10, op, oplen);
	code[10 + oplen] = 0x0f;
	code[11 + oplen] = 0x0b;
	put_code(UCODE, code, 12 + oplen);
}

static void test_permissions(void **state)
{
	static const uint8_t store[] = { 0x89, 0x03 }; /* mov [rbx], eax */
	static const uint8_t load[] = { 0x8b, 0x03 };  /* mov eax, [rbx] */
	static const uint8_t jump[] = { 0xff, 0xe3 };  /* jmp rbx */
	/*
	 * page_fault: the guest's tables refuse the access (KVM raises #PF), not
	 * a mapping outside RAM (MMIO). pf: the #PF a CPU raises there, CR2 in
	 * the page that refused (the second, for an access across two pages),
	 * and its error code; -1 where there is none to name (#GP for a
	 * non-canonical address, MMIO).
	 */
	static const struct {
		const uint8_t *op;
		uint64_t addr;
		enum emu_handback want;
		uint64_t insns, rip;
		bool page_fault;
		int pf_code;
		uint64_t cr2;
	} cases[] = {
		{ store, UDATA + 8, EMU_HB_SYSTEM, 2, UCODE + 12, false, -1, 0 }, /* allowed: runs to the ud2 */
		{ store, URO + 8, EMU_HB_FAULT, 1, UCODE + 10, true, 7, URO + 8 }, /* read-only: P W U */
		{ load, URO + 8, EMU_HB_SYSTEM, 2, UCODE + 12, false, -1, 0 },
		{ load, KPAGE, EMU_HB_FAULT, 1, UCODE + 10, true, 5, KPAGE }, /* supervisor page from ring 3: P U */
		{ load, NOTPRESENT, EMU_HB_FAULT, 1, UCODE + 10, true, 4, NOTPRESENT }, /* U */
		{ load, 0x0000800000000000ULL, EMU_HB_FAULT, 1, UCODE + 10, true, -1, 0 }, /* not canonical */
		{ load, 16 * MiB - 2, EMU_HB_FAULT, 1, UCODE + 10, true, 4, 16 * MiB - 2 }, /* unmapped */
		{ load, URO + 0xffe, EMU_HB_FAULT, 1, UCODE + 10, true, 5, KPAGE },   /* across into the supervisor page */
		{ store, UDATA + 0xffe, EMU_HB_FAULT, 1, UCODE + 10, true, 7, URO },  /* across into the read-only page */
		{ jump, UDATA, EMU_HB_FAULT, 2, UDATA, true, 0x15, UDATA }, /* NX: the jump retires, the fetch faults: P U I */
		{ store, UMMIO + 0xb0, EMU_HB_FAULT, 1, UCODE + 10, false, -1, 0 }, /* MMIO: KVM does it */
		{ load, UMMIO, EMU_HB_FAULT, 1, UCODE + 10, false, -1, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct emu_state st = user_state(UCODE);
		struct emu_result r;

		emu_invalidate(emu);
		put_access(cases[i].op, 2, cases[i].addr);
		st.regs.rax = 0x1234;
		run_ok(&st, &plain, &r);
		assert_int_equal(r.stop, EMU_STOP_HANDBACK);
		assert_int_equal(r.handback, cases[i].want);
		assert_int_equal(r.page_fault, cases[i].page_fault);
		assert_int_equal(r.pf_valid, cases[i].pf_code >= 0);
		if (r.pf_valid) {
			assert_int_equal(r.pf_code, cases[i].pf_code);
			assert_int_equal(r.pf_addr, cases[i].cr2);
		}
		assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], cases[i].insns);
		assert_int_equal(st.regs.rip, cases[i].rip);
	}
	assert_int_equal(*(uint32_t *)(mem.host + phys_of(UDATA + 8)), 0x1234);
	assert_int_equal(*(uint32_t *)(mem.host + phys_of(URO + 8)), 0);
}

static void test_accessed_dirty(void **state)
{
	static const uint8_t load[] = { 0x8b, 0x03 };
	static const uint8_t store[] = { 0x89, 0x03 };
	uint64_t *data = pte(PT_LO, (UDATA >> 12) & 511);
	struct emu_state st;
	struct emu_result r;

	(void)state;
	*data &= ~(A | D);
	*pte(PD_LO, 2) &= ~A;
	emu_invalidate(emu);
	put_access(load, 2, UDATA);
	st = user_state(UCODE);
	run_ok(&st, &plain, &r);
	assert_true(*data & A);
	assert_false(*data & D);
	assert_true(*pte(PD_LO, 2) & A);
	assert_false(*pte(PD_LO, 2) & D); /* only the last level has a dirty bit */
	/* A write to the page now mapped read-only: the dirty bit, then the write. */
	put_access(store, 2, UDATA);
	emu_invalidate(emu);
	st = user_state(UCODE);
	run_ok(&st, &plain, &r); /* maps the code page, reads... */
	assert_true(*data & D);
	/* Read first, write second in one run: the page goes from read-only to writable. */
	{
		static const uint8_t both[] = { 0x8b, 0x0b, 0x89, 0x03 }; /* mov ecx,[rbx]; mov [rbx],eax */

		*data &= ~(A | D);
		emu_invalidate(emu);
		put_access(both, 4, UDATA + 64);
		st = user_state(UCODE);
		st.regs.rax = 77;
		run_ok(&st, &plain, &r);
		assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 3);
		assert_true(*data & D);
		assert_int_equal(*(uint32_t *)(mem.host + phys_of(UDATA + 64)), 77);
	}
}

/*
 * A store that stops Unicorn inside a block (the first write to a clean
 * page, a page the guest has not mapped): the instructions after it in
 * the block must not have run. Unicorn 2.0.1's store path leaves the
 * block running on after the faulting store (cpu_exit without leaving
 * the block), so a Linux guest's process, re-run from the store, did the
 * block's later instructions twice and crashed.
 */
static void test_store_fault_mid_block(void **state)
{
	/* mov [rbx],eax; add ecx,1; add ecx,1; ud2 */
	static const uint8_t store_then_adds[] = { 0x89, 0x03, 0x83, 0xc1, 0x01, 0x83, 0xc1, 0x01 };
	uint64_t *data = pte(PT_LO, (UDATA >> 12) & 511);
	struct emu_state st;
	struct emu_result r;

	(void)state;
	/* A clean page: mapped read-only, made writable at the first write, the run going on. */
	*data &= ~(A | D);
	emu_invalidate(emu);
	put_access(store_then_adds, sizeof(store_then_adds), UDATA + 128);
	st = user_state(UCODE);
	st.regs.rax = 0x5eed;
	st.regs.rcx = 0;
	run_ok(&st, &plain, &r);
	assert_int_equal(r.stop, EMU_STOP_HANDBACK);
	assert_int_equal(r.handback, EMU_HB_SYSTEM); /* the ud2 */
	assert_int_equal(st.regs.rcx, 2);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 4);
	assert_int_equal(*(uint32_t *)(mem.host + phys_of(UDATA + 128)), 0x5eed);
	/* A page the guest has not mapped: the fault hands back at the store, nothing after it done. */
	emu_invalidate(emu);
	put_access(store_then_adds, sizeof(store_then_adds), NOTPRESENT);
	st = user_state(UCODE);
	st.regs.rcx = 0;
	run_ok(&st, &plain, &r);
	assert_int_equal(r.stop, EMU_STOP_HANDBACK);
	assert_int_equal(r.handback, EMU_HB_FAULT);
	assert_int_equal(st.regs.rip, UCODE + 10);
	assert_int_equal(st.regs.rcx, 0);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 1);
	/*
	 * As a Linux guest's static busybox sets up its TLS (glibc): a store
	 * through FS to a page not present yet, the block going on into an
	 * SSE loop. The fault hands back at the store with nothing after it done.
	 */
	{
		static const uint8_t tls[] = {
			0x64, 0x48, 0x89, 0x08,                   /* mov %rcx,%fs:(%rax) */
			0x48, 0x83, 0xc1, 0x60,                   /* add $0x60,%rcx */
			0x48, 0x89, 0xc8,                         /* mov %rcx,%rax */
			0x48, 0x8d, 0x91, 0x40, 0x00, 0x00, 0x00, /* lea 0x40(%rcx),%rdx */
			0x66, 0x48, 0x0f, 0x6e, 0xc0,             /* 1: movq %rax,%xmm0 */
			0x48, 0x83, 0xc0, 0x10,                   /* add $0x10,%rax */
			0x66, 0x0f, 0x6c, 0xc0,                   /* punpcklqdq %xmm0,%xmm0 */
			0x0f, 0x29, 0x00,                         /* movaps %xmm0,(%rax) */
			0x48, 0x39, 0xd0,                         /* cmp %rdx,%rax */
			0x75, 0xeb,                               /* jne 1b */
			0x0f, 0x0b,
		};

		emu_invalidate(emu);
		put_code(UCODE, tls, sizeof(tls));
		st = user_state(UCODE);
		st.sregs.fs.base = NOTPRESENT + 0x58;
		st.regs.rax = (uint64_t)-0x58;
		st.regs.rcx = UDATA;
		st.regs.rdx = 0;
		run_ok(&st, &plain, &r);
		assert_int_equal(r.stop, EMU_STOP_HANDBACK);
		assert_int_equal(r.handback, EMU_HB_FAULT);
		assert_int_equal(st.regs.rip, UCODE);
		assert_int_equal(st.regs.rax, (uint64_t)-0x58);
		assert_int_equal(st.regs.rcx, UDATA);
		assert_int_equal(st.regs.rdx, 0);
		assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 0);
		/* The TLS store done, the SSE store in the loop faults: the hand-back is at the MOVAPS. */
		emu_invalidate(emu);
		st = user_state(UCODE);
		st.sregs.fs.base = UDATA + 0x58;
		st.regs.rax = (uint64_t)-0x58;
		st.regs.rcx = NOTPRESENT - 0x60;
		run_ok(&st, &plain, &r);
		assert_int_equal(r.stop, EMU_STOP_HANDBACK);
		assert_int_equal(r.handback, EMU_HB_FAULT);
		assert_int_equal(st.regs.rip, UCODE + 31);
		assert_int_equal(st.regs.rax, NOTPRESENT + 0x10);
		assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 7);
	}
}

/* A run of the code at UCODE with RBX = addr: where it stops, and how many instructions ran. */
static void run_store(uint64_t addr, enum emu_handback hb, uint64_t rip, uint64_t insns)
{
	struct emu_state st = user_state(UCODE);
	struct emu_result r;

	st.regs.rbx = addr;
	st.regs.rax = 0x5eed;
	run_ok(&st, &plain, &r);
	assert_int_equal(r.stop, EMU_STOP_HANDBACK);
	assert_int_equal(r.handback, hb);
	assert_int_equal(st.regs.rip, rip);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], insns);
}

/*
 * A store that faults right before a hand-back site (an instruction whose
 * code hook stops Unicorn): the fault is the store's, RIP at it, nothing
 * after it done; a first write to a clean page there goes on with the
 * store done. In a Linux guest the kernel's signal frame write, STAC;
 * FXSAVE64 (%rbp); CLAC, faulted on a copy-on-write stack page with the
 * #PF's RIP at the CLAC: no exception-table entry, an Oops.
 */
static void test_fault_before_site(void **state)
{
	static const uint8_t gp[] = { 0x90, 0x89, 0x03, 0x0f, 0x0b };                   /* nop; mov %eax,(%rbx); ud2 */
	static const uint8_t fx[] = { 0x90, 0x48, 0x0f, 0xae, 0x03, 0x0f, 0x0b };       /* nop; fxsave64 (%rbx); ud2 */
	static const struct {
		const uint8_t *code;
		size_t len;
	} cases[] = { { gp, sizeof(gp) }, { fx, sizeof(fx) } };
	uint64_t *data = pte(PT_LO, (UDATA >> 12) & 511);
	struct emu_state st;
	struct emu_result r;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (int pass = 0; pass < 2; pass++) {
			/* Twice: translated afresh, then with its hooks in place. */
			emu_invalidate(emu);
			put_code(UCODE, cases[i].code, cases[i].len);
			run_store(NOTPRESENT, EMU_HB_FAULT, UCODE + 1, 1);
		}
		/* A clean page: the store is done and the run goes on to the site. */
		*data &= ~(A | D);
		emu_invalidate(emu);
		memset(mem.host + phys_of(UDATA), 0, 512);
		run_store(UDATA, EMU_HB_SYSTEM, UCODE + cases[i].len - 2, 2);
		/* mov stores EAX; FXSAVE stores FCW (0x37f) first. */
		assert_int_equal(*(uint16_t *)(mem.host + phys_of(UDATA)), i == 0 ? 0x5eed : 0x37f);
		assert_true(*data & D);
	}
	/*
	 * A clean page mapped read-only by a read, then written by an
	 * instruction Unicorn runs through a helper: the store is done, and
	 * the run goes on (SLUB's per-CPU CMPXCHG16B in a Linux guest lost its
	 * store so).
	 */
	{
		/* mov (%rbx),%esi; cmpxchg16b (%rbx); setz %cl; fxsave64 0x200(%rbx); ud2 */
		static const uint8_t code[] = { 0x8b, 0x33, 0x48, 0x0f, 0xc7, 0x0b, 0x0f, 0x94, 0xc1,
						0x48, 0x0f, 0xae, 0x83, 0x00, 0x02, 0x00, 0x00, 0x0f, 0x0b };

		*data &= ~(A | D);
		emu_invalidate(emu);
		memset(mem.host + phys_of(UDATA), 0, 4096);
		put_code(UCODE, code, sizeof(code));
		st = user_state(UCODE);
		st.regs.rbx = UDATA;
		st.regs.rax = 0; /* RDX:RAX 0 matches the zeroed memory: RCX:RBX go in */
		st.regs.rdx = 0;
		st.regs.rcx = 0x1234;
		run_ok(&st, &plain, &r);
		assert_int_equal(r.stop, EMU_STOP_HANDBACK);
		assert_int_equal(r.handback, EMU_HB_SYSTEM);
		assert_int_equal(st.regs.rip, UCODE + sizeof(code) - 2);
		assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 4);
		assert_int_equal(*(uint64_t *)(mem.host + phys_of(UDATA)), UDATA);
		assert_int_equal(*(uint64_t *)(mem.host + phys_of(UDATA) + 8), 0x1234);
		assert_int_equal(st.regs.rcx, 0x1201); /* ZF: it matched */
		assert_int_equal(*(uint16_t *)(mem.host + phys_of(UDATA) + 0x200), 0x37f);
		assert_true(*data & D);
	}
}

/*
 * An instruction Unicorn runs through a helper (CMPXCHG16B, FXSAVE, an x87
 * 80-bit store) whose store the guest refuses, followed by instructions
 * without a code hook. Unicorn 2.0.1 leaves a helper at a refused load at
 * once, but after a refused store the helper goes on (popping the x87
 * stack, loading RDX:RAX), and so does Unicorn, through the register-only
 * instructions and the next store, before it stops. The #PF must find the
 * state as it was before the helper: none of that done, as on the CPU,
 * which checks the whole operand first (an FXSAVE across into a read-only
 * page stores nothing). The refused loads (FXRSTOR, FLDT, CMPXCHG16B's
 * read) are here too. (A Linux guest's perf died of it, in libc's printf.)
 */
static void test_helper_fault_undone(void **state)
{
#define THEN_ADD_STORE 0x48, 0x83, 0xc1, 0x01, 0x48, 0x89, 0x0e, 0x0f, 0x0b /* add $1,%rcx; mov %rcx,(%rsi); ud2 */
	static const uint8_t cx[] = { 0x48, 0x0f, 0xc7, 0x0b, THEN_ADD_STORE }; /* cmpxchg16b (%rbx) */
	static const uint8_t fxs[] = { 0x48, 0x0f, 0xae, 0x03, THEN_ADD_STORE }; /* fxsave64 (%rbx) */
	static const uint8_t fxr[] = { 0x48, 0x0f, 0xae, 0x0b, THEN_ADD_STORE }; /* fxrstor64 (%rbx) */
	static const uint8_t fst[] = { 0xdb, 0x3b, THEN_ADD_STORE };             /* fstpt (%rbx) */
	static const uint8_t fld[] = { 0xdb, 0x2b, THEN_ADD_STORE };             /* fldt (%rbx) */
	static const uint8_t env[] = { 0xd9, 0x33, THEN_ADD_STORE };             /* fnstenv (%rbx) */
#undef THEN_ADD_STORE
	static const struct {
		const uint8_t *code;
		size_t len;
		uint64_t addr;
	} cases[] = {
		{ cx, sizeof(cx), URO + 0x10 },        /* read done, store refused */
		{ cx, sizeof(cx), NOTPRESENT + 0x10 }, /* read refused */
		{ fxs, sizeof(fxs), NOTPRESENT },
		{ fxs, sizeof(fxs), UDATA + 0xf00 },   /* the first 256 bytes allowed, the rest refused (URO) */
		{ fxr, sizeof(fxr), NOTPRESENT },
		{ fxr, sizeof(fxr), URO + 0xf00 },     /* the x87 part loadable, the XMM part refused (KPAGE) */
		{ fst, sizeof(fst), URO + 0x10 },
		{ fld, sizeof(fld), NOTPRESENT + 0x10 },
		{ env, sizeof(env), URO + 0x10 },
	};

	(void)state;
	memset(mem.host + phys_of(URO), 0x5a, 4096);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(mem.host + phys_of(UDATA) + 0xf00, 0xa5, 256);
		for (int pass = 0; pass < 2; pass++) {
			struct emu_state st;
			struct emu_result r;

			emu_invalidate(emu);
			put_code(UCODE, cases[i].code, cases[i].len);
			memset(mem.host + phys_of(UDATA), 0xa5, 16);
			st = user_state(UCODE);
			st.regs.rbx = cases[i].addr;
			st.regs.rsi = UDATA;
			st.regs.rcx = 0x1000;
			st.regs.rax = 0x1111;
			st.regs.rdx = 0x2222;
			st.fpu.ftwx = 0x80;    /* physical register 7 valid... */
			st.fpu.fsw = 7u << 11; /* ...and the top: ST(0) */
			st.fpu.fpr[0][0] = 0x42;
			st.fpu.fpr[0][9] = 0x3f;
			st.fpu.xmm[3][0] = 0x77;
			run_ok(&st, &plain, &r);
			assert_int_equal(r.stop, EMU_STOP_HANDBACK);
			assert_int_equal(r.handback, EMU_HB_FAULT);
			assert_int_equal(st.regs.rip, UCODE);
			assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 0);
			assert_int_equal(st.regs.rcx, 0x1000);
			assert_int_equal(st.regs.rax, 0x1111);
			assert_int_equal(st.regs.rdx, 0x2222);
			assert_int_equal(st.fpu.fsw, 7u << 11);
			assert_int_equal(st.fpu.ftwx, 0x80);
			assert_int_equal(st.fpu.fpr[0][0], 0x42);
			assert_int_equal(st.fpu.fpr[0][9], 0x3f);
			assert_int_equal(st.fpu.xmm[3][0], 0x77);
			assert_int_equal(st.fpu.fcw, 0x37f);
			assert_int_equal(*(uint64_t *)(mem.host + phys_of(UDATA)), 0xa5a5a5a5a5a5a5a5ULL);
			assert_int_equal(*(uint64_t *)(mem.host + phys_of(UDATA) + 0xf00), 0xa5a5a5a5a5a5a5a5ULL);
		}
	}
}

static void test_handback_mid_block(void **state)
{
	/* mov eax,1; mov ebx,2; cpuid; ud2 */
	static const uint8_t code[] = { 0xb8, 1, 0, 0, 0, 0xbb, 2, 0, 0, 0, 0x0f, 0xa2, 0x0f, 0x0b };
	/* mov eax,1; rdtsc */
	static const uint8_t tsc[] = { 0xb8, 1, 0, 0, 0, 0x0f, 0x31 };
	/* mov eax,1; vpaddd ymm0,ymm1,ymm2 */
	static const uint8_t avx[] = { 0xb8, 1, 0, 0, 0, 0xc5, 0xf5, 0xfe, 0xc2 };
	/* mov eax,1; in al,0x60 */
	static const uint8_t io[] = { 0xb8, 1, 0, 0, 0, 0xe4, 0x60 };
	/* mov eax,1; mov ds,ax */
	static const uint8_t seg[] = { 0xb8, 1, 0, 0, 0, 0x8e, 0xd8 };
	/* mov eax,1; rdpkru */
	static const uint8_t pkru[] = { 0xb8, 1, 0, 0, 0, 0x0f, 0x01, 0xee };
	/* mov eax,1; bytes that decode to nothing */
	static const uint8_t bad[] = { 0xb8, 1, 0, 0, 0, 0x06 }; /* push es: none in 64-bit mode */
	static const struct {
		const uint8_t *code;
		size_t len;
		uint64_t insns, rip;
		enum emu_handback why;
	} cases[] = {
		{ code, sizeof(code), 2, UCODE + 10, EMU_HB_HOST_VALUE },
		{ tsc, sizeof(tsc), 1, UCODE + 5, EMU_HB_HOST_VALUE },
		{ avx, sizeof(avx), 1, UCODE + 5, EMU_HB_UNMODELED },
		{ io, sizeof(io), 1, UCODE + 5, EMU_HB_SYSTEM },
		{ seg, sizeof(seg), 1, UCODE + 5, EMU_HB_SYSTEM },
		{ pkru, sizeof(pkru), 1, UCODE + 5, EMU_HB_HOST_VALUE },
	};
	struct emu_state st;
	struct emu_result r;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		emu_invalidate(emu);
		put_code(UCODE, cases[i].code, cases[i].len);
		st = user_state(UCODE);
		run_ok(&st, &plain, &r);
		assert_int_equal(r.stop, EMU_STOP_HANDBACK);
		assert_int_equal(r.handback, cases[i].why);
		assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], cases[i].insns);
		assert_int_equal(st.regs.rip, cases[i].rip);
		assert_int_equal(st.regs.rax, 1);
	}
	emu_invalidate(emu);
	put_code(UCODE, bad, sizeof(bad));
	st = user_state(UCODE);
	run_ok(&st, &plain, &r);
	assert_int_equal(r.stop, EMU_STOP_HANDBACK);
	assert_true(r.handback == EMU_HB_UNDECODABLE || r.handback == EMU_HB_REFUSED);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 1);
	assert_int_equal(st.regs.rip, UCODE + 5);
}

/*
 * Each ring keeps its own mappings and translations: ring-3 and ring-0 runs
 * taking turns (a system call's way) map and decode nothing after the first
 * of each. The kernel's pages were dropped at every ring-3 run before.
 */
static void test_rings_keep_their_mappings(void **state)
{
	struct emu_stats before, after;
	struct emu_state st;
	struct emu_result r;

	(void)state;
	emu_invalidate(emu);
	put_loop(UCODE, 10);
	put_loop(KCODE + 0x10, 10);
	for (int i = 0; i < 3; i++) {
		if (i == 1)
			emu_get_stats(emu, &before);
		st = user_state(UCODE);
		run_ok(&st, &plain, &r);
		assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 21);
		st = kernel_state(KCODE + 0x10);
		run_ok(&st, &plain, &r);
		assert_int_equal(r.counts.ev[1][EMU_EV_INSNS], 21);
	}
	emu_get_stats(emu, &after);
	assert_int_equal(after.pages_mapped, before.pages_mapped);
	assert_int_equal(after.blocks_decoded, before.blocks_decoded);
}

/*
 * A hand-back inside a block stops Unicorn through a code hook on its
 * address: the instructions before it counted, RIP at it, and the flags of
 * the last one that set them right (the hook's stop syncs them), the first
 * time (when the hook is added) and every time after.
 */
static void test_handback_site_hook(void **state)
{
	/* add eax, ebx; cli */
	static const uint8_t code[] = { 0x01, 0xd8, 0xfa };
	struct emu_stats before, after;
	struct emu_state st;
	struct emu_result r;

	(void)state;
	emu_invalidate(emu);
	put_code(UCODE, code, sizeof(code));
	for (int i = 0; i < 3; i++) {
		if (i == 1)
			emu_get_stats(emu, &before);
		st = user_state(UCODE);
		st.regs.rax = 0xffffffff;
		st.regs.rbx = 1;
		run_ok(&st, &plain, &r);
		assert_int_equal(r.stop, EMU_STOP_HANDBACK);
		assert_int_equal(r.handback, EMU_HB_SYSTEM);
		assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 1);
		assert_int_equal(st.regs.rip, UCODE + 2);
		assert_int_equal(st.regs.rax, 0);
		assert_int_equal(st.regs.rflags & 0x8d5, 0x55); /* CF PF AF ZF */
	}
	/* Translated and decoded once: no part-way runs, whose "until" made Unicorn translate the block anew. */
	emu_get_stats(emu, &after);
	assert_int_equal(after.blocks_decoded, before.blocks_decoded);
}

/*
 * A stop at a block's start once a code hook exists (test_handback_site_hook
 * made one): Unicorn then leaves RIP as a chained jump left it, stale, and
 * the run must go on from the block's start all the same. The budget stops
 * the loop at a block boundary; the rest runs to the exact total.
 */
static void test_budget_with_code_hooks(void **state)
{
	/* A: dec ecx; jmp B; B: test ecx, ecx; jnz A; ud2 (two blocks a loop, chained) */
	static const uint8_t code[] = { 0xff, 0xc9, 0xeb, 0x07, 0, 0, 0, 0, 0, 0, 0, 0x85, 0xc9, 0x75, 0xf1, 0x0f, 0x0b };
	struct emu_state st = user_state(UCODE + 0x105);
	struct emu_run_args a = { .max_insns = 98 };
	struct emu_result r;
	uint64_t insns;

	(void)state;
	put_code(UCODE + 0x105, code, sizeof(code));
	st.regs.rcx = 1000;
	run_ok(&st, &a, &r);
	assert_int_equal(r.stop, EMU_STOP_BUDGET);
	/* 49 blocks: 25 As and 24 Bs, the next one B. */
	insns = r.counts.ev[0][EMU_EV_INSNS];
	assert_int_equal(insns, 98);
	assert_int_equal(st.regs.rip, UCODE + 0x110);
	assert_int_equal(st.regs.rcx, 1000 - 25);
	run_ok(&st, &plain, &r);
	assert_int_equal(r.stop, EMU_STOP_HANDBACK);
	assert_int_equal(st.regs.rip, UCODE + 0x114);
	assert_int_equal(st.regs.rcx, 0);
	assert_int_equal(insns + r.counts.ev[0][EMU_EV_INSNS], 4000);
}

/* emu_run_args.in_place for test_in_place: RDTSC reads 0x1234 (declined when the test says so). */
static int in_place_calls;
static bool in_place_decline;

static bool fake_rdtsc(void *opaque, enum emu_handback why, struct kvm_regs *regs, struct kvm_sregs *sregs)
{
	(void)opaque;
	(void)sregs;
	in_place_calls++;
	if (in_place_decline || why != EMU_HB_HOST_VALUE)
		return false;
	regs->rax = 0x1234;
	regs->rdx = 0;
	regs->rip += 2;
	return true;
}

/*
 * A hand-back the caller does in the emulator's place (the VMM's RDTSC)
 * does not end the run: it counts as one instruction of the run, a watch
 * can end on it, and a declined one is an ordinary hand-back.
 */
static void test_in_place(void **state)
{
	/* mov ebx, 2; rdtsc; mov ecx, 3; ud2 */
	static const uint8_t code[] = { 0xbb, 2, 0, 0, 0, 0x0f, 0x31, 0xb9, 3, 0, 0, 0, 0x0f, 0x0b };
	struct emu_run_args a = { .max_insns = UINT64_MAX, .in_place = fake_rdtsc };
	struct emu_state st;
	struct emu_result r;

	(void)state;
	emu_invalidate(emu);
	put_code(UCODE + 0x200, code, sizeof(code));
	in_place_calls = 0;
	in_place_decline = false;
	st = user_state(UCODE + 0x200);
	run_ok(&st, &a, &r);
	assert_int_equal(r.stop, EMU_STOP_HANDBACK);
	assert_int_equal(r.handback, EMU_HB_SYSTEM); /* the ud2 */
	assert_int_equal(st.regs.rip, UCODE + 0x20c);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 3);
	assert_int_equal(st.regs.rax, 0x1234);
	assert_int_equal(st.regs.rbx, 2);
	assert_int_equal(st.regs.rcx, 3);
	assert_int_equal(in_place_calls, 2); /* the RDTSC, done; the UD2, declined */
	/* A watch of 2 instructions ends right after it. */
	a.nwatch = 1;
	a.watch[0] = (struct emu_watch){ EMU_EV_INSNS, EMU_RING_USER, 2 };
	st = user_state(UCODE + 0x200);
	run_ok(&st, &a, &r);
	assert_int_equal(r.stop, EMU_STOP_WATCH);
	assert_int_equal(st.regs.rip, UCODE + 0x207);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 2);
	/* Declined: a hand-back before it, as without in_place. */
	a.nwatch = 0;
	in_place_decline = true;
	st = user_state(UCODE + 0x200);
	run_ok(&st, &a, &r);
	assert_int_equal(r.stop, EMU_STOP_HANDBACK);
	assert_int_equal(r.handback, EMU_HB_HOST_VALUE);
	assert_int_equal(st.regs.rip, UCODE + 0x205);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 1);
}

/* emu_run_args.in_place for test_in_place_gs_base: the first SYSTEM hand-back is WRGSBASE to UDATA. */
static bool fake_wrgsbase(void *opaque, enum emu_handback why, struct kvm_regs *regs, struct kvm_sregs *sregs)
{
	(void)opaque;
	if (why != EMU_HB_SYSTEM || in_place_calls++)
		return false;
	sregs->gs.base = UDATA;
	regs->rip += 5;
	return true;
}

/*
 * A base the caller changes in place (SWAPGS, WRGSBASE) is the one the
 * rest of the run addresses with, and the one the run returns.
 */
static void test_in_place_gs_base(void **state)
{
	/* wrgsbase rax; mov eax, gs:[8]; ud2 */
	static const uint8_t code[] = { 0xf3, 0x48, 0x0f, 0xae, 0xd8, 0x65, 0x8b, 0x04, 0x25, 8, 0, 0, 0, 0x0f, 0x0b };
	struct emu_run_args a = { .max_insns = UINT64_MAX, .in_place = fake_wrgsbase };
	struct emu_state st;
	struct emu_result r;
	uint32_t v = 0xabcd;

	(void)state;
	emu_invalidate(emu);
	put_code(UCODE + 0x300, code, sizeof(code));
	memcpy(mem.host + phys_of(UDATA + 8), &v, sizeof(v));
	in_place_calls = 0;
	st = user_state(UCODE + 0x300);
	st.sregs.gs.base = 0;
	run_ok(&st, &a, &r);
	assert_int_equal(r.stop, EMU_STOP_HANDBACK);
	assert_int_equal(r.handback, EMU_HB_SYSTEM); /* the ud2 */
	assert_int_equal(st.regs.rip, UCODE + 0x30d);
	assert_int_equal(st.regs.rax, 0xabcd);
	assert_int_equal(st.sregs.gs.base, UDATA);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 2);
}

/* emu_run_args.in_place for test_cli_then_flags_repair: the first SYSTEM hand-back is CLI. */
static bool fake_cli(void *opaque, enum emu_handback why, struct kvm_regs *regs, struct kvm_sregs *sregs)
{
	(void)opaque;
	(void)sregs;
	if (why != EMU_HB_SYSTEM || in_place_calls++)
		return false;
	regs->rflags &= ~0x200ULL;
	regs->rip += 1;
	return true;
}

/* emu_run_args.in_place for test_stac_clac_in_run: STAC, then CLAC. */
static bool fake_stac_clac(void *opaque, enum emu_handback why, struct kvm_regs *regs, struct kvm_sregs *sregs)
{
	(void)opaque;
	(void)sregs;
	if (why != EMU_HB_SYSTEM || in_place_calls > 1)
		return false;
	if (in_place_calls++)
		regs->rflags &= ~(1ULL << 18);
	else
		regs->rflags |= 1ULL << 18;
	regs->rip += 3;
	return true;
}

/*
 * STAC and CLAC done in place change SMAP for the rest of the run: a user
 * page ring 0 reads after STAC, and faults on after CLAC (its mapping,
 * made while AC was set, dropped at the CLAC).
 */
static void test_stac_clac_in_run(void **state)
{
	/* stac; mov rax, [rbx]; clac; mov rax, [rbx]; ud2 */
	static const uint8_t code[] = { 0x0f, 0x01, 0xcb, 0x48, 0x8b, 0x03, 0x0f, 0x01, 0xca, 0x48, 0x8b, 0x03, 0x0f, 0x0b };
	struct emu_run_args a = { .max_insns = UINT64_MAX, .in_place = fake_stac_clac };
	uint64_t v = 0x5eed;
	struct emu_state st;
	struct emu_result r;

	(void)state;
	emu_invalidate(emu);
	put_code(KCODE + 0x200, code, sizeof(code));
	memcpy(mem.host + phys_of(UDATA + 0x40), &v, sizeof(v));
	in_place_calls = 0;
	st = kernel_state(KCODE + 0x200);
	st.sregs.cr4 |= (1ULL << 20) | (1ULL << 21); /* SMEP, SMAP */
	st.regs.rbx = UDATA + 0x40;
	run_ok(&st, &a, &r);
	assert_int_equal(in_place_calls, 2);
	assert_int_equal(st.regs.rax, 0x5eed);
	assert_int_equal(r.stop, EMU_STOP_HANDBACK);
	assert_int_equal(r.handback, EMU_HB_FAULT);
	assert_int_equal(st.regs.rip, KCODE + 0x209);
	assert_int_equal(st.regs.rflags & (1ULL << 18), 0);
}

/*
 * IF as CLI in place left it, after a page fault later in the same run
 * made the engine recompute the flags (emu_flags.h): the repair took the
 * run's starting IF, undoing the CLI (a Linux guest then took an interrupt
 * inside a spinlock held with interrupts off, and its vCPUs deadlocked).
 */
static void test_cli_then_flags_repair(void **state)
{
	/* cli; add rax, rbx; mov [rcx], rax; ud2 */
	static const uint8_t code[] = { 0xfa, 0x48, 0x01, 0xd8, 0x48, 0x89, 0x01, 0x0f, 0x0b };
	struct emu_run_args a = { .max_insns = UINT64_MAX, .in_place = fake_cli };
	struct emu_state st;
	struct emu_result r;

	(void)state;
	emu_invalidate(emu);
	put_code(UCODE + 0x400, code, sizeof(code));
	in_place_calls = 0;
	st = user_state(UCODE + 0x400);
	st.regs.rax = ~0ULL;
	st.regs.rbx = 1;
	st.regs.rcx = NOTPRESENT;
	run_ok(&st, &a, &r);
	assert_int_equal(r.stop, EMU_STOP_HANDBACK);
	assert_int_equal(r.handback, EMU_HB_FAULT);
	assert_int_equal(st.regs.rip, UCODE + 0x404);
	assert_int_equal(st.regs.rax, 0);
	assert_int_equal(st.regs.rflags, 0x2 | 0x1 | 0x4 | 0x10 | 0x40); /* CF, PF, AF, ZF; IF clear */
}

/*
 * RFLAGS where a memory access stops a block part-way (emu_flags.h): after
 * ADD of -1 and 1 (zero: CF, PF, AF, ZF set) the guest's #PF hand-back
 * carries those flags, and after the first write to a clean page (the run
 * stops there to set the dirty bit, then goes on) the instructions that
 * read them see them. Unicorn 2.0.1 alone gives the flags the block started
 * with, computed from ADD's operands (0x203 here).
 */
static void test_flags_after_mid_block_fault(void **state)
{
	/* add rax, rbx; mov [rcx], rax; ud2 */
	static const uint8_t fault[] = { 0x48, 0x01, 0xd8, 0x48, 0x89, 0x01, 0x0f, 0x0b };
	/* mov rdx, [rcx]; add rax, rbx; mov [rcx], rax; setc dl; setz dh; ud2 */
	static const uint8_t clean[] = { 0x48, 0x8b, 0x11, 0x48, 0x01, 0xd8, 0x48, 0x89, 0x01,
					 0x0f, 0x92, 0xc2, 0x0f, 0x94, 0xc6, 0x0f, 0x0b };
	/* add rax, rbx; shl rdx, cl; mov [rsi], rax; ud2 */
	static const uint8_t shift[] = { 0x48, 0x01, 0xd8, 0x48, 0xd3, 0xe2, 0x48, 0x89, 0x06, 0x0f, 0x0b };
	const uint64_t zero_flags = 0x202 | 0x1 | 0x4 | 0x10 | 0x40; /* IF, CF, PF, AF, ZF */
	uint64_t *data = pte(PT_LO, (UDATA >> 12) & 511);
	struct emu_state st;
	struct emu_result r;

	(void)state;
	emu_invalidate(emu);
	put_code(UCODE, fault, sizeof(fault));
	st = user_state(UCODE);
	st.regs.rax = ~0ULL;
	st.regs.rbx = 1;
	st.regs.rcx = NOTPRESENT;
	run_ok(&st, &plain, &r);
	assert_int_equal(r.stop, EMU_STOP_HANDBACK);
	assert_int_equal(r.handback, EMU_HB_FAULT);
	assert_int_equal(st.regs.rip, UCODE + 3);
	assert_int_equal(st.regs.rax, 0);
	assert_int_equal(st.regs.rflags, zero_flags);

	*data &= ~(A | D);
	emu_invalidate(emu);
	put_code(UCODE, clean, sizeof(clean));
	st = user_state(UCODE);
	st.regs.rax = ~0ULL;
	st.regs.rbx = 1;
	st.regs.rcx = UDATA + 16;
	run_ok(&st, &plain, &r);
	assert_int_equal(r.stop, EMU_STOP_HANDBACK);
	assert_int_equal(st.regs.rip, UCODE + sizeof(clean) - 2);
	assert_true(*data & D);
	assert_int_equal(st.regs.rdx & 0xffff, 0x0101); /* SETC and SETZ after the stop saw CF and ZF */
	assert_int_equal(st.regs.rflags, zero_flags);

	/*
	 * A block the scratch CPU cannot run as is (Linux's, seen in a guest:
	 * its DIV makes the IDIV's divisor 0 on scratch values): the repair
	 * steps over the IDIV's #DE there and still finds the flags.
	 */
	{
		/* xor edx,edx; div edi; imul esi,eax,0xfa; mov ecx,eax; mov eax,1e9; cqo; movsxd r8,esi; idiv r8;
		   add rbx,0; mov [rbx],edi; ud2 */
		static const uint8_t divs[] = { 0x31, 0xd2, 0xf7, 0xf7, 0x69, 0xf0, 0xfa, 0x00, 0x00, 0x00, 0x89, 0xc1,
						0xb8, 0x00, 0xca, 0x9a, 0x3b, 0x48, 0x99, 0x4c, 0x63, 0xc6, 0x49, 0xf7,
						0xf8, 0x48, 0x83, 0xc3, 0x00, 0x89, 0x3b, 0x0f, 0x0b };
		struct emu_stats before, after;

		emu_invalidate(emu);
		put_code(UCODE, divs, sizeof(divs));
		st = user_state(UCODE);
		st.regs.rax = 1000;
		st.regs.rdi = 10;
		st.regs.rbx = NOTPRESENT;
		emu_get_stats(emu, &before);
		run_ok(&st, &plain, &r);
		emu_get_stats(emu, &after);
		assert_int_equal(r.handback, EMU_HB_FAULT);
		assert_int_equal(st.regs.rip, UCODE + 29);
		assert_int_equal(st.regs.rax, 40000);
		assert_int_equal(after.flags_unknown, before.flags_unknown);
		/* ADD of 0 to NOTPRESENT (0x404000): every flag clear but PF (0x00 has no bits set: even) */
		assert_int_equal(st.regs.rflags, 0x206);
	}

	/*
	 * No flag-setting instruction before the stop in its block: the flags
	 * are the previous block's TEST's, whose operation QEMU stored when
	 * that block ended (seen in Linux: test $1,%bl; jne; then loads and a
	 * CALL whose push hit a clean stack page; the repair took the runs'
	 * starting operation for the translator's and made 0x1432 of them).
	 */
	{
		/*
		 * test bl, 1; jne 1f (not taken: ends the block); 1: mov rdi, [rsi]; mov rax, [rcx]; jmp 2f; 2: ud2
		 * (the second block ends in a JMP, not a hand-back, so it runs whole, not as a run of its own)
		 */
		static const uint8_t prev[] = { 0xf6, 0xc3, 0x01, 0x75, 0x00, 0x48, 0x8b, 0x3e, 0x48, 0x8b, 0x01,
						0xeb, 0x00, 0x0f, 0x0b };

		emu_invalidate(emu);
		put_code(UCODE, prev, sizeof(prev));
		st = user_state(UCODE);
		st.regs.rbx = 0x10; /* TEST: ZF and PF set */
		st.regs.rsi = UDATA;
		st.regs.rcx = NOTPRESENT;
		run_ok(&st, &plain, &r);
		assert_int_equal(r.handback, EMU_HB_FAULT);
		assert_int_equal(st.regs.rip, UCODE + 8);
		assert_int_equal(st.regs.rflags, 0x246);
	}

	/* A shift by CL: 0 keeps ADD's flags (QEMU decides at run time), 1 makes its own. */
	for (uint64_t cl = 0; cl < 2; cl++) {
		emu_invalidate(emu);
		put_code(UCODE, shift, sizeof(shift));
		st = user_state(UCODE);
		st.regs.rax = ~0ULL;
		st.regs.rbx = 1;
		st.regs.rcx = cl;
		st.regs.rdx = 1;
		st.regs.rsi = NOTPRESENT;
		run_ok(&st, &plain, &r);
		assert_int_equal(r.handback, EMU_HB_FAULT);
		assert_int_equal(st.regs.rip, UCODE + 6);
		assert_int_equal(st.regs.rdx, 1ULL << cl);
		if (cl == 0)
			assert_int_equal(st.regs.rflags, zero_flags);
		else /* 1 << 1 = 2: CF (the bit shifted out), ZF, SF and OF clear, PF clear (one bit set) */
			assert_int_equal(st.regs.rflags & ~0x10ULL, 0x202); /* AF undefined */
	}
}

static void test_rep_string_counts_once(void **state)
{
	/* mov esi, UDATA; mov edi, UDATA+0x800; mov ecx, 100; rep movsb; ud2 */
	uint8_t code[] = { 0xbe, 0, 0, 0, 0, 0xbf, 0, 0, 0, 0, 0xb9, 100, 0, 0, 0, 0xf3, 0xa4, 0x0f, 0x0b };
	uint32_t src = (uint32_t)UDATA, dst = (uint32_t)UDATA + 0x800;
	struct emu_state st;
	struct emu_result r;

	(void)state;
	memcpy(code + 1, &src, 4);
	memcpy(code + 6, &dst, 4);
	for (int i = 0; i < 100; i++)
		mem.host[phys_of(UDATA) + i] = (uint8_t)(i + 1);
	emu_invalidate(emu);
	put_code(UCODE, code, sizeof(code));
	st = user_state(UCODE);
	run_ok(&st, &plain, &r);
	assert_int_equal(r.handback, EMU_HB_SYSTEM);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 4);
	assert_int_equal(r.counts.ev[0][EMU_EV_BRANCHES], 0);
	assert_memory_equal(mem.host + phys_of(UDATA), mem.host + phys_of(UDATA) + 0x800, 100);
	assert_int_equal(st.regs.rcx, 0);
}

static void test_sse_and_fs_state(void **state)
{
	/* paddd xmm0, xmm1; mov rax, fs:[8]; ud2 */
	static const uint8_t code[] = { 0x66, 0x0f, 0xfe, 0xc1, 0x64, 0x48, 0x8b, 0x04, 0x25, 8, 0, 0, 0, 0x0f, 0x0b };
	uint32_t a[4] = { 1, 2, 3, 4 }, b[4] = { 10, 20, 30, 40 }, sum[4] = { 11, 22, 33, 44 };
	uint64_t v = 0x1122334455667788ULL;
	struct emu_state st;
	struct emu_result r;

	(void)state;
	emu_invalidate(emu);
	put_code(UCODE, code, sizeof(code));
	memcpy(mem.host + phys_of(UDATA) + 0x108, &v, 8);
	st = user_state(UCODE);
	memcpy(st.fpu.xmm[0], a, 16);
	memcpy(st.fpu.xmm[1], b, 16);
	memset(st.fpu.xmm[15], 0xab, 16);
	st.sregs.fs.base = UDATA + 0x100;
	run_ok(&st, &plain, &r);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 2);
	assert_memory_equal(st.fpu.xmm[0], sum, 16);
	assert_memory_equal(st.fpu.xmm[1], b, 16);
	assert_int_equal(st.fpu.xmm[15][7], 0xab);
	assert_int_equal(st.fpu.mxcsr, 0x1f80);
	assert_int_equal(st.fpu.fcw, 0x37f);
	assert_int_equal(st.regs.rax, v);
}

/*
 * The x87 stack with its top not at physical register 0, in and out of a
 * run: KVM's image holds ST(i) in stack order (FXSAVE's layout) and tags
 * by physical register. Two values pushed (top 6): fstpl (%rbx) stores
 * ST(0), fstpl 8(%rbx) then ST(1); a third run of fld1 leaves 1.0 in ST(0)
 * and the old ST(0) in ST(1), both back in KVM's order.
 */
static void test_x87_stack_state(void **state)
{
	static const uint8_t store2[] = { 0xdd, 0x1b, 0xdd, 0x5b, 0x08, 0x0f, 0x0b }; /* fstpl (%rbx); fstpl 8(%rbx); ud2 */
	static const uint8_t push1[] = { 0xd9, 0xe8, 0x0f, 0x0b };                    /* fld1; ud2 */
	/* 80-bit 2.0 and 3.0: sign/exponent 0x4000, significands 0x8000... and 0xc000... */
	static const uint8_t two[10] = { 0, 0, 0, 0, 0, 0, 0, 0x80, 0x00, 0x40 };
	static const uint8_t three[10] = { 0, 0, 0, 0, 0, 0, 0, 0xc0, 0x00, 0x40 };
	static const uint8_t one[10] = { 0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0x3f };
	double d[2];
	struct emu_state st;
	struct emu_result r;

	(void)state;
	emu_invalidate(emu);
	put_code(UCODE, store2, sizeof(store2));
	st = user_state(UCODE);
	st.regs.rbx = UDATA;
	st.fpu.fsw = 6u << 11; /* top 6: ST(0) is physical register 6, ST(1) register 7 */
	st.fpu.ftwx = 0xc0;
	memcpy(st.fpu.fpr[0], two, 10);
	memcpy(st.fpu.fpr[1], three, 10);
	run_ok(&st, &plain, &r);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 2);
	memcpy(d, mem.host + phys_of(UDATA), sizeof(d));
	assert_true(d[0] == 2.0);
	assert_true(d[1] == 3.0);
	assert_int_equal((st.fpu.fsw >> 11) & 7, 0);
	assert_int_equal(st.fpu.ftwx, 0);

	emu_invalidate(emu);
	put_code(UCODE, push1, sizeof(push1));
	st = user_state(UCODE);
	st.fpu.fsw = 7u << 11; /* one value, 2.0, in physical register 7 */
	st.fpu.ftwx = 0x80;
	memcpy(st.fpu.fpr[0], two, 10);
	run_ok(&st, &plain, &r);
	assert_int_equal((st.fpu.fsw >> 11) & 7, 6);
	assert_int_equal(st.fpu.ftwx, 0xc0);
	assert_memory_equal(st.fpu.fpr[0], one, 10);
	assert_memory_equal(st.fpu.fpr[1], two, 10);
}

/*
 * FXSAVE and FXRSTOR save and load MXCSR and the XMM registers when the
 * guest's CR4.OSFXSR is set, and only then (Unicorn's follow its own CR4,
 * which the engine sets from the guest's). Without them a Linux guest
 * that switches tasks with FXSAVE/FXRSTOR gave each task the XMM
 * registers of the one before.
 */
static void test_fxsave_xmm(void **state)
{
	/* fxsave64 (%rbx); fxrstor64 0x200(%rbx); ud2 */
	static const uint8_t code[] = { 0x48, 0x0f, 0xae, 0x03, 0x48, 0x0f, 0xae, 0x8b, 0x00, 0x02, 0x00, 0x00, 0x0f, 0x0b };
	uint8_t *area = mem.host + phys_of(UDATA);

	(void)state;
	put_code(UCODE, code, sizeof(code));
	for (int osfxsr = 1; osfxsr >= 0; osfxsr--) {
		struct emu_state st = user_state(UCODE);
		struct emu_result r;
		uint32_t mxcsr = 0x1fa0;

		emu_invalidate(emu);
		memset(area, 0x5c, 1024);
		/* The image FXRSTOR loads: FCW 0x37f, MXCSR 0x1fa0, XMM7 all 0x42. */
		memset(area + 0x200, 0, 512);
		area[0x200] = 0x7f;
		area[0x201] = 0x03;
		memcpy(area + 0x200 + 24, &mxcsr, 4);
		memset(area + 0x200 + 160 + 7 * 16, 0x42, 16);
		if (osfxsr)
			st.sregs.cr4 |= 0x600; /* OSFXSR, OSXMMEXCPT */
		st.regs.rbx = UDATA;
		st.fpu.mxcsr = 0x1f80;
		memset(st.fpu.xmm[3], 0x33, 16);
		memset(st.fpu.xmm[7], 0x77, 16);
		run_ok(&st, &plain, &r);
		assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 2);
		if (osfxsr) {
			uint32_t saved;

			memcpy(&saved, area + 24, 4);
			assert_int_equal(saved, 0x1f80);
			assert_int_equal(area[160 + 3 * 16], 0x33);
			assert_int_equal(area[160 + 7 * 16 + 15], 0x77);
			assert_int_equal(st.fpu.mxcsr, 0x1fa0);
			assert_int_equal(st.fpu.xmm[7][0], 0x42);
			assert_int_equal(st.fpu.xmm[3][0], 0); /* loaded from the image too */
		} else {
			/* The x87 part only: MXCSR and the XMM registers neither saved nor loaded. */
			assert_int_equal(area[24], 0x5c);
			assert_int_equal(area[160 + 3 * 16], 0x5c);
			assert_int_equal(st.fpu.mxcsr, 0x1f80);
			assert_int_equal(st.fpu.xmm[7][0], 0x77);
			assert_int_equal(st.fpu.xmm[3][0], 0x33);
		}
	}
}

static void test_self_modifying_code(void **state)
{
	/* mov rbx, X+1; mov byte [rbx], 2; X: mov eax, 1; ud2 */
	uint8_t code[] = { 0x48, 0xbb, 0, 0, 0, 0, 0, 0, 0, 0, 0xc6, 0x03, 0x02, 0xb8, 1, 0, 0, 0, 0x0f, 0x0b };
	uint64_t x1 = UCODE_RW + 14;
	struct emu_state st;
	struct emu_result r;

	(void)state;
	memcpy(code + 2, &x1, 8);
	emu_invalidate(emu);
	put_code(UCODE_RW, code, sizeof(code));
	st = user_state(UCODE_RW);
	run_ok(&st, &plain, &r);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 3);
	assert_int_equal(st.regs.rax, 2);
	/* The host (KVM's side) rewrites it again: after emu_invalidate the engine runs the new bytes. */
	mem.host[phys_of(UCODE_RW) + 14] = 3;
	emu_invalidate(emu);
	st = user_state(UCODE_RW + 13);
	run_ok(&st, &plain, &r);
	assert_int_equal(st.regs.rax, 3);
}

static void test_remapped_page(void **state)
{
	struct emu_state st;
	struct emu_result r;

	(void)state;
	emu_invalidate(emu);
	put_loop(UCODE2, 10);
	st = user_state(UCODE2);
	run_ok(&st, &plain, &r);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 21);
	/* The guest points the page elsewhere (the loop with 20); the VMM invalidates, as after any KVM run. */
	put_loop(UCODE_RW, 20);
	*pte(PT_LO, (UCODE2 >> 12) & 511) = phys_of(UCODE_RW) | P | US;
	emu_invalidate(emu);
	st = user_state(UCODE2);
	run_ok(&st, &plain, &r);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 41);
	map_user(UCODE2, US);
}

/*
 * A page the engine mapped read-only at a read, whose entry the guest then
 * pointed at another page (copy-on-write) with no TLB flush the VMM saw:
 * the first write goes to the page the entry names now, as a CPU's does
 * (it walks the tables again at a write its TLB entry does not allow),
 * never to the old one, which for a private file mapping is the page
 * cache's, shared by every process that maps the file.
 */
static void test_write_after_unseen_remap(void **state)
{
	static const uint8_t both[] = { 0x8b, 0x0b, 0x89, 0x03 }; /* mov ecx,[rbx]; mov [rbx],eax */
	static const uint8_t store[] = { 0x89, 0x03 };
	uint64_t *entry = pte(PT_LO, (UDATA >> 12) & 511), old = *entry, copy = 0x108000;
	struct emu_stats before, after;
	struct emu_state st;
	struct emu_result r;

	(void)state;
	*entry &= ~(A | D);
	emu_invalidate(emu);
	emu_get_stats(emu, &before);
	/* Read of a clean page: mapped read-only (the dirty bit waits for a write). */
	put_access(both, 2, UDATA + 16);
	st = user_state(UCODE);
	run_ok(&st, &plain, &r);
	*(uint32_t *)(mem.host + phys_of(UDATA) + 16) = 5;
	*(uint32_t *)(mem.host + copy + 16) = 5;
	*entry = copy | P | US | RW | XD;
	/* The store from another code page: UCODE's translation stays as it was. */
	{
		uint8_t code[14] = { 0x48, 0xbb };
		uint64_t addr = UDATA + 16;

		memcpy(code + 2, &addr, 8);
		memcpy(code + 10, store, 2);
		code[12] = 0x0f;
		code[13] = 0x0b;
		put_code(UCODE_RW, code, sizeof(code));
	}
	st = user_state(UCODE_RW);
	st.regs.rax = 99;
	run_ok(&st, &plain, &r);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 2);
	assert_int_equal(*(uint32_t *)(mem.host + copy + 16), 99);
	assert_int_equal(*(uint32_t *)(mem.host + phys_of(UDATA) + 16), 5);
	emu_get_stats(emu, &after);
	assert_int_equal(after.stale_mappings - before.stale_mappings, 1);
	*entry = old;
	emu_invalidate(emu);
}

/*
 * Flags live across a hand-back inside a block: the run stops at the
 * hand-back's code hook, and RFLAGS must be the compare's, on the first
 * translation of the block and on every later one.
 */
static void test_flags_at_handback_site(void **state)
{
	/* mov eax, 5; cmp eax, 5; rdtsc */
	static const uint8_t code[] = { 0xb8, 5, 0, 0, 0, 0x83, 0xf8, 5, 0x0f, 0x31 };
	struct emu_state st;
	struct emu_result r;

	(void)state;
	put_code(UCODE, code, sizeof(code));
	for (int i = 0; i < 4; i++) {
		emu_invalidate(emu);
		st = user_state(UCODE);
		run_ok(&st, &plain, &r);
		assert_int_equal(r.stop, EMU_STOP_HANDBACK);
		assert_int_equal(st.regs.rip, UCODE + 8);
		assert_int_equal(st.regs.rflags & 0x8d5, 0x44); /* ZF, PF: equal */
	}
	/*
	 * The same with an SSE load's code hook (a precise-RIP site) before it,
	 * and PUSHFQ between, which stores the lazy flags' kind at run time:
	 * mov rbx, UDATA; mov eax, 5; cmp eax, 5; movdqu xmm0, [rbx];
	 * add eax, 1; pushfq; cmp eax, eax; rdtsc
	 */
	{
		uint8_t c2[32] = { 0x48, 0xbb };
		uint64_t data = UDATA;
		static const uint8_t rest[] = { 0xb8, 5, 0, 0, 0, 0x83, 0xf8, 5, 0xf3, 0x0f, 0x6f, 0x03,
						0x83, 0xc0, 0x01, 0x9c, 0x39, 0xc0, 0x0f, 0x31 };

		memcpy(c2 + 2, &data, 8);
		memcpy(c2 + 10, rest, sizeof(rest));
		put_code(UCODE, c2, 10 + sizeof(rest));
		for (int i = 0; i < 4; i++) {
			emu_invalidate(emu);
			st = user_state(UCODE);
			run_ok(&st, &plain, &r);
			assert_int_equal(r.stop, EMU_STOP_HANDBACK);
			assert_int_equal(st.regs.rip, UCODE + 10 + sizeof(rest) - 2);
			assert_int_equal(st.regs.rflags & 0x8d5, 0x44);
		}
	}
}

static void test_unsupported_modes(void **state)
{
	struct emu_state st = user_state(UCODE);
	struct emu_result r;

	(void)state;
	put_loop(UCODE, 10);
	st.regs.rflags |= 1u << 8; /* TF: the guest is single-stepping itself */
	run_ok(&st, &plain, &r);
	assert_int_equal(r.stop, EMU_STOP_HANDBACK);
	assert_int_equal(r.handback, EMU_HB_MODE);
	assert_int_equal(st.regs.rip, UCODE);
	st = user_state(UCODE);
	st.sregs.cs.l = 0; /* compatibility mode */
	run_ok(&st, &plain, &r);
	assert_int_equal(r.handback, EMU_HB_MODE);
	st = user_state(UCODE);
	st.sregs.cs.dpl = 1;
	run_ok(&st, &plain, &r);
	assert_int_equal(r.handback, EMU_HB_MODE);
}

static void test_locked_on_smp(void **state)
{
	/* mov rbx, UDATA; lock inc dword [rbx]; ud2 */
	static const uint8_t op[] = { 0xf0, 0xff, 0x03 };
	struct emu *smp;
	struct emu_state st;
	struct emu_result r;
	char err[128];

	(void)state;
	put_access(op, 3, UDATA);
	emu_invalidate(emu);
	st = user_state(UCODE);
	run_ok(&st, &plain, &r);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 2);
	assert_int_equal(emu_create(&smp, &mem, true, err, sizeof(err)), 0);
	st = user_state(UCODE);
	assert_int_equal(emu_run(smp, &st, &plain, &r), 0);
	assert_int_equal(r.handback, EMU_HB_LOCKED);
	assert_int_equal(r.counts.ev[0][EMU_EV_INSNS], 1);
	assert_int_equal(st.regs.rip, UCODE + 10);
	emu_destroy(smp);
}

/* What the VMM learns of one instruction before KVM runs it in the engine's place. */
static void test_decode_one(void **state)
{
	static const struct {
		uint8_t code[15];
		size_t len;
		uint8_t want_len;
		enum emu_handback hb;
		int vector;
		bool flush, wrmsr, iret, ret, target;
		uint64_t to;
	} cases[] = {
		{ .code = { 0x0f, 0x0b }, .len = 2, .want_len = 2, .hb = EMU_HB_SYSTEM, .vector = 6 },      /* ud2 */
		{ .code = { 0xcc }, .len = 1, .want_len = 1, .hb = EMU_HB_SYSTEM, .vector = 3 },            /* int3 */
		{ .code = { 0xcd, 0x80 }, .len = 2, .want_len = 2, .hb = EMU_HB_SYSTEM, .vector = 0x80 },   /* int 0x80 */
		{ .code = { 0x0f, 0x30 }, .len = 2, .want_len = 2, .hb = EMU_HB_SYSTEM, .vector = -1, .wrmsr = true },
		{ .code = { 0x0f, 0x22, 0xd8 }, .len = 3, .want_len = 3, .hb = EMU_HB_SYSTEM, .vector = -1, .flush = true },
		{ .code = { 0x0f, 0x01, 0x38 }, .len = 3, .want_len = 3, .hb = EMU_HB_SYSTEM, .vector = -1, .flush = true },
		{ .code = { 0x48, 0xcf }, .len = 2, .want_len = 2, .hb = EMU_HB_SYSTEM, .vector = -1, .iret = true },
		{ .code = { 0xc3 }, .len = 1, .want_len = 1, .hb = EMU_HB_NONE, .vector = -1, .ret = true },
		{ .code = { 0xe8, 0x10, 0, 0, 0 }, .len = 5, .want_len = 5, .hb = EMU_HB_NONE, .vector = -1, .target = true,
		  .to = 0x1015 }, /* call */
		{ .code = { 0x75, 0xfc }, .len = 2, .want_len = 2, .hb = EMU_HB_NONE, .vector = -1, .target = true,
		  .to = 0xffe }, /* jnz */
		{ .code = { 0x0f, 0xa2 }, .len = 2, .want_len = 2, .hb = EMU_HB_HOST_VALUE, .vector = -1 }, /* cpuid */
		{ .code = { 0x06 }, .len = 1, .want_len = 0, .hb = EMU_HB_UNDECODABLE, .vector = 6 }, /* push es: none in 64-bit */
		/* RDPKRU and WRPKRU, which Capstone 4 cannot decode: known, so that KVM steps of them flush only for WRPKRU */
		{ .code = { 0x0f, 0x01, 0xee }, .len = 3, .want_len = 3, .hb = EMU_HB_HOST_VALUE, .vector = -1 },
		{ .code = { 0x0f, 0x01, 0xef }, .len = 3, .want_len = 3, .hb = EMU_HB_SYSTEM, .vector = -1, .flush = true },
		/*
		 * VEX, EVEX and XOP encodings go to KVM, whatever Capstone's groups:
		 * Unicorn 2.0.1 runs them wrong (emu_decode.c, vex_encoded).
		 */
		{ .code = { 0xc5, 0xf9, 0xef, 0xc8 }, .len = 4, .want_len = 4, .hb = EMU_HB_UNMODELED, .vector = -1 }, /* vpxor xmm1, xmm0, xmm0 */
		{ .code = { 0xc4, 0xe2, 0x78, 0xf5, 0xc0 }, .len = 5, .want_len = 5, .hb = EMU_HB_UNMODELED, .vector = -1 }, /* bzhi eax, eax, eax */
		{ .code = { 0xc4, 0xe2, 0xe3, 0xf5, 0xc8 }, .len = 5, .want_len = 5, .hb = EMU_HB_UNMODELED, .vector = -1 }, /* pdep rcx, rbx, rax */
		{ .code = { 0x62, 0xe1, 0x7f, 0x48, 0x6f, 0x0f }, .len = 6, .want_len = 6, .hb = EMU_HB_UNMODELED, .vector = -1 }, /* vmovdqu8 zmm17, [rdi] */
		{ .code = { 0x67, 0xc5, 0xfe, 0x6f, 0x00 }, .len = 5, .want_len = 5, .hb = EMU_HB_UNMODELED, .vector = -1 }, /* vmovdqu ymm0, [eax] */
		{ .code = { 0x8f, 0xc0 }, .len = 2, .want_len = 2, .hb = EMU_HB_NONE, .vector = -1 }, /* pop rax (8F /0): not XOP */
		{ .code = { 0xf3, 0x48, 0x0f, 0xbc, 0xd8 }, .len = 5, .want_len = 5, .hb = EMU_HB_NONE, .vector = -1 }, /* tzcnt rbx, rax: no VEX */
		/* PCMPESTRI/PCMPISTRM in equal-ordered mode: Unicorn's results differ from the CPU's */
		{ .code = { 0x66, 0x0f, 0x3a, 0x61, 0xd1, 0x0c }, .len = 6, .want_len = 6, .hb = EMU_HB_UNMODELED, .vector = -1 },
		{ .code = { 0x66, 0x0f, 0x3a, 0x62, 0xd1, 0x4c }, .len = 6, .want_len = 6, .hb = EMU_HB_UNMODELED, .vector = -1 },
		{ .code = { 0x66, 0x0f, 0x3a, 0x63, 0xd1, 0x1a }, .len = 6, .want_len = 6, .hb = EMU_HB_NONE, .vector = -1 }, /* pcmpistri, equal each */
	};
	struct emu_decoder *d;

	(void)state;
	assert_int_equal(emu_decoder_open(&d), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct emu_insn_info in;

		emu_decode_one(d, 0x1000, cases[i].code, cases[i].len, false, &in);
		assert_int_equal(in.len, cases[i].want_len);
		assert_int_equal(in.handback, cases[i].hb);
		assert_int_equal(in.vector, cases[i].vector);
		assert_int_equal(in.flushes_tlb, cases[i].flush);
		assert_int_equal(in.is_wrmsr, cases[i].wrmsr);
		assert_int_equal(in.is_iret, cases[i].iret);
		assert_int_equal(in.is_ret, cases[i].ret);
		assert_int_equal(in.has_target, cases[i].target);
		if (cases[i].target)
			assert_int_equal(in.target, cases[i].to);
	}
	emu_decoder_close(d);
}

/* The operands helper_access_ok() checks, and the helper stores it leaves to KVM. */
static void test_helper_access_decode(void **state)
{
	static const struct {
		uint8_t code[12];
		size_t len;
		int rc;
		uint16_t size;
		bool write, rip_relative, addr32;
		int base, index, scale, seg;
		int64_t disp;
	} cases[] = {
		/* cmpxchg16b %gs:0x10 */
		{ { 0x65, 0x48, 0x0f, 0xc7, 0x0c, 0x25, 0x10, 0, 0, 0 }, 10, 0, 16, true, false, false, -1, -1, 1, 5, 0x10 },
		/* fxsave64 0x100(%rip) */
		{ { 0x48, 0x0f, 0xae, 0x05, 0x00, 0x01, 0, 0 }, 8, 0, 512, true, true, false, -1, -1, 1, 0, 0x100 },
		/* fnstenv 8(%rbx,%rcx,4), and with an operand-size prefix (the 14-byte form) */
		{ { 0xd9, 0x74, 0x8b, 0x08 }, 4, 0, 28, true, false, false, 3, 1, 4, 0, 8 },
		{ { 0x66, 0xd9, 0x74, 0x8b, 0x08 }, 5, 0, 14, true, false, false, 3, 1, 4, 0, 8 },
		/* frstor -8(%r13) */
		{ { 0x41, 0xdd, 0x65, 0xf8 }, 4, 0, 108, false, false, false, 13, -1, 1, 0, -8 },
		/* fldt (%rsi); fstpt (%rdi) */
		{ { 0xdb, 0x2e }, 2, 0, 10, false, false, false, 6, -1, 1, 0, 0 },
		{ { 0xdb, 0x3f }, 2, 0, 10, true, false, false, 7, -1, 1, 0, 0 },
		/* cmpxchg8b (%ebx): an address-size prefix */
		{ { 0x67, 0x0f, 0xc7, 0x0b }, 4, 0, 8, true, false, true, 3, -1, 1, 0, 0 },
		/* fldl (%rax), fstps (%rax), movups (%rax),%xmm0: loaded and stored inline, none of these */
		{ { 0xdd, 0x00 }, 2, -ENOENT, 0, false, false, false, 0, 0, 0, 0, 0 },
		{ { 0xd9, 0x18 }, 2, -ENOENT, 0, false, false, false, 0, 0, 0, 0, 0 },
		{ { 0x0f, 0x10, 0x00 }, 3, -ENOENT, 0, false, false, false, 0, 0, 0, 0, 0 },
	};
	static const struct {
		uint8_t code[8];
		size_t len;
		enum emu_handback hb;
	} kvm[] = {
		{ { 0x66, 0x0f, 0xf7, 0xc1 }, 4, EMU_HB_UNMODELED }, /* maskmovdqu %xmm1,%xmm0 */
		{ { 0x0f, 0xf7, 0xc1 }, 3, EMU_HB_UNMODELED },       /* maskmovq %mm1,%mm0 */
		{ { 0xc8, 0x10, 0x00, 0x01 }, 4, EMU_HB_UNMODELED }, /* enter $16,$1: copies frame pointers */
		{ { 0xc8, 0x10, 0x00, 0x00 }, 4, EMU_HB_NONE },      /* enter $16,$0 */
	};
	struct emu_decoder *d;

	(void)state;
	assert_int_equal(emu_decoder_open(&d), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct emu_mem_operand op;

		assert_int_equal(emu_decode_helper_access(d, 0x1000, cases[i].code, cases[i].len, &op), cases[i].rc);
		if (cases[i].rc)
			continue;
		assert_int_equal(op.len, cases[i].len);
		assert_int_equal(op.size, cases[i].size);
		assert_int_equal(op.write, cases[i].write);
		assert_int_equal(op.rip_relative, cases[i].rip_relative);
		assert_int_equal(op.addr32, cases[i].addr32);
		assert_int_equal(op.base, cases[i].base);
		assert_int_equal(op.index, cases[i].index);
		assert_int_equal(op.scale, cases[i].scale);
		assert_int_equal(op.seg, cases[i].seg);
		assert_int_equal(op.disp, cases[i].disp);
	}
	for (size_t i = 0; i < sizeof(kvm) / sizeof(kvm[0]); i++) {
		struct emu_insn_info in;

		emu_decode_one(d, 0x1000, kvm[i].code, kvm[i].len, false, &in);
		assert_int_equal(in.len, kvm[i].len);
		assert_int_equal(in.handback, kvm[i].hb);
	}
	emu_decoder_close(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loop_counts_exact),
		cmocka_unit_test(test_loop_instruction),
		cmocka_unit_test(test_kernel_half_ring0),
		cmocka_unit_test(test_flush_keeps_global),
		cmocka_unit_test(test_watch_instructions),
		cmocka_unit_test(test_watch_branches),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_permissions),
		cmocka_unit_test(test_rings_keep_their_mappings),
		cmocka_unit_test(test_handback_site_hook),
		cmocka_unit_test(test_budget_with_code_hooks),
		cmocka_unit_test(test_in_place),
		cmocka_unit_test(test_in_place_gs_base),
		cmocka_unit_test(test_cli_then_flags_repair),
		cmocka_unit_test(test_stac_clac_in_run),
		cmocka_unit_test(test_accessed_dirty),
		cmocka_unit_test(test_store_fault_mid_block),
		cmocka_unit_test(test_fault_before_site),
		cmocka_unit_test(test_helper_fault_undone),
		cmocka_unit_test(test_handback_mid_block),
		cmocka_unit_test(test_rep_string_counts_once),
		cmocka_unit_test(test_sse_and_fs_state),
		cmocka_unit_test(test_x87_stack_state),
		cmocka_unit_test(test_fxsave_xmm),
		cmocka_unit_test(test_self_modifying_code),
		cmocka_unit_test(test_remapped_page),
		cmocka_unit_test(test_write_after_unseen_remap),
		cmocka_unit_test(test_flags_at_handback_site),
		cmocka_unit_test(test_unsupported_modes),
		cmocka_unit_test(test_locked_on_smp),
		cmocka_unit_test(test_decode_one),
		cmocka_unit_test(test_helper_access_decode),
		cmocka_unit_test(test_flags_after_mid_block_fault),
		cmocka_unit_test(test_large_page_one_mapping),
		cmocka_unit_test(test_smep_smap_ring0),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
