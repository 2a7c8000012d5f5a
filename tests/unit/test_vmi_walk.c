// SPDX-License-Identifier: MIT
/*
 * The guest-memory reader, the frame-pointer stack walker and its step from
 * a kernel stack into the interrupted user code (guest_callchain) against
 * page tables, stacks and a TSS built by hand in a fake guest RAM. The RAM
 * is malloc'd (not mmap'd as in the VMM) so that ASan puts redzones around
 * it: a read one byte past guest RAM is a test failure, not a silent success.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "guest_stack.h"
#include "guest_walk.h"
#include "vmi_mem.h"
#include "kvmprof/platform.h"
#include "kvmprof/sample_format.h"

#define P (1ULL << 0)
#define RW (1ULL << 1)
#define US (1ULL << 2)
#define PS (1ULL << 7)
#define XD (1ULL << 63)
#define KiB 1024ULL
#define MiB (1024ULL * KiB)
#define GiB (1024ULL * MiB)

#define RAM_SIZE (64 * MiB)
#define CR0_PG (1ULL << 31)
#define CR4_LA57 (1ULL << 12)
#define EFER_LMA (1ULL << 10)
#define EFER_NXE (1ULL << 11)

struct fake {
	struct vmi_mem mem;
	struct guest_paging pg;
	uint64_t next_table; /* bump allocator for page tables */
	unsigned int levels;
};

static struct fake *fake_new(uint64_t size, unsigned int levels)
{
	struct fake *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->mem.base = aligned_alloc(4096, size);
	assert_non_null(f->mem.base);
	memset(f->mem.base, 0, size);
	f->mem.size = size;
	/* Tables from 1 MiB up; test data pages sit in the first MiB or far above. */
	f->next_table = 1 * MiB;
	f->levels = levels;
	f->pg.mode = levels == 5 ? GUEST_PAGING_5LEVEL : GUEST_PAGING_4LEVEL;
	f->pg.nxe = true;
	f->pg.cr3 = f->next_table;
	f->next_table += 4096;
	return f;
}

static void fake_free(struct fake *f)
{
	free(f->mem.base);
	free(f);
}

static uint64_t *entry_at(struct fake *f, uint64_t gpa)
{
	uint64_t *e = vmi_mem_ptr(&f->mem, gpa, 8);

	assert_non_null(e);
	return e;
}

/* Maps gva to gpa with a leaf at level leaf_level (1: 4 KiB, 2: 2 MiB, 3: 1 GiB). */
static void map_page(struct fake *f, uint64_t gva, uint64_t gpa, unsigned int leaf_level,
		     uint64_t leaf_flags)
{
	uint64_t table = f->pg.cr3 & ~0xfffULL;

	for (unsigned int level = f->levels; level > leaf_level; level--) {
		uint64_t *e = entry_at(f, table + ((gva >> (12 + 9 * (level - 1))) & 511) * 8);

		if (!(*e & P)) {
			*e = f->next_table | P | RW | US;
			f->next_table += 4096;
			assert_true(f->next_table <= f->mem.size);
		}
		table = *e & 0x000ffffffffff000ULL;
	}
	*entry_at(f, table + ((gva >> (12 + 9 * (leaf_level - 1))) & 511) * 8) =
		gpa | leaf_flags | (leaf_level > 1 ? PS : 0);
}

/* The entry that maps gva at level (for corrupting it). */
static uint64_t *find_entry(struct fake *f, uint64_t gva, unsigned int at_level)
{
	uint64_t table = f->pg.cr3 & ~0xfffULL;

	for (unsigned int level = f->levels;; level--) {
		uint64_t *e = entry_at(f, table + ((gva >> (12 + 9 * (level - 1))) & 511) * 8);

		if (level == at_level)
			return e;
		table = *e & 0x000ffffffffff000ULL;
	}
}

static void expect_gpa(struct fake *f, uint64_t gva, uint64_t gpa, uint64_t page_size)
{
	struct guest_translation t;

	assert_int_equal(guest_walk_translate(&f->mem, &f->pg, gva, &t), 0);
	assert_int_equal(t.gpa, gpa);
	assert_int_equal(t.page_size, page_size);
}

static void expect_fault(struct fake *f, uint64_t gva)
{
	struct guest_translation t;

	assert_int_equal(guest_walk_translate(&f->mem, &f->pg, gva, &t), -EFAULT);
}

/* The tables map gva, but outside RAM (MMIO): not a fault, and not followed. */
static void expect_outside_ram(struct fake *f, uint64_t gva)
{
	struct guest_translation t;

	assert_int_equal(guest_walk_translate(&f->mem, &f->pg, gva, &t), -ENXIO);
}

static void test_paging_init(void **state)
{
	struct guest_paging pg;

	(void)state;
	assert_int_equal(guest_paging_init(&pg, 0x11, 0x1234, 0, 0), 0);
	assert_int_equal(pg.mode, GUEST_PAGING_OFF);
	assert_int_equal(guest_paging_init(&pg, CR0_PG | 1, 0x5000, 0x20, EFER_LMA | EFER_NXE), 0);
	assert_int_equal(pg.mode, GUEST_PAGING_4LEVEL);
	assert_int_equal(pg.cr3, 0x5000);
	assert_true(pg.nxe);
	assert_int_equal(guest_paging_init(&pg, CR0_PG | 1, 0x5000, CR4_LA57 | 0x20, EFER_LMA), 0);
	assert_int_equal(pg.mode, GUEST_PAGING_5LEVEL);
	assert_false(pg.nxe);
	/* 32-bit and PAE paging: not supported. */
	assert_int_equal(guest_paging_init(&pg, CR0_PG | 1, 0x5000, 0x20, 0), -EINVAL);
}

static void test_translate_4k(void **state)
{
	struct fake *f = fake_new(RAM_SIZE, 4);
	struct guest_translation t;

	(void)state;
	map_page(f, 0x40000000, 0x20000, 1, P | RW | US);
	map_page(f, 0xffffffff81000000ULL, 0x30000, 1, P);
	map_page(f, 0x40001000, 0x50000, 1, P | US | XD);

	expect_gpa(f, 0x40000000, 0x20000, 4096);
	expect_gpa(f, 0x40000abc, 0x20abc, 4096);
	expect_gpa(f, 0xffffffff81000fffULL, 0x30fff, 4096);

	assert_int_equal(guest_walk_translate(&f->mem, &f->pg, 0x40000010, &t), 0);
	assert_true(t.user && t.writable && !t.nx);
	assert_int_equal(guest_walk_translate(&f->mem, &f->pg, 0xffffffff81000010ULL, &t), 0);
	assert_true(!t.user && !t.writable && !t.nx);
	assert_int_equal(guest_walk_translate(&f->mem, &f->pg, 0x40001010, &t), 0);
	assert_true(t.user && !t.writable && t.nx);
	assert_int_equal(t.gpa, 0x50010);

	/* Neighbours not mapped; non-canonical addresses never walked. */
	expect_fault(f, 0x40002000);
	expect_fault(f, 0x3ffff000);
	expect_fault(f, 0);
	expect_fault(f, 0x0000800000000000ULL);
	expect_fault(f, 0xffff7fffffffffffULL);

	/* CR3's PCID bits and LAM bits do not move the table. */
	f->pg.cr3 |= 0x123 | (3ULL << 61);
	expect_gpa(f, 0x40000abc, 0x20abc, 4096);

	/* An unknown mode is refused, not guessed. */
	f->pg.mode = (enum guest_paging_mode)7;
	assert_int_equal(guest_walk_translate(&f->mem, &f->pg, 0x40000abc, &t), -EINVAL);
	fake_free(f);
}

static void test_translate_large(void **state)
{
	struct fake *f = fake_new(RAM_SIZE, 4);

	(void)state;
	/* 2 MiB page; bit 12 of a large-page entry is PAT, not address. */
	map_page(f, 0x600000, 0x2000000, 2, P | RW | (1ULL << 12));
	expect_gpa(f, 0x600000, 0x2000000, 2 * MiB);
	expect_gpa(f, 0x612345, 0x2012345, 2 * MiB);
	expect_gpa(f, 0x7fffff, 0x21fffff, 2 * MiB);
	expect_fault(f, 0x800000);

	/* 1 GiB page over the start of RAM: only the part inside RAM translates. */
	map_page(f, 0xffff888000000000ULL, 0, 3, P | RW);
	expect_gpa(f, 0xffff888000123456ULL, 0x123456, GiB);
	expect_gpa(f, 0xffff888000000000ULL + RAM_SIZE - 1, RAM_SIZE - 1, GiB);
	expect_outside_ram(f, 0xffff888000000000ULL + RAM_SIZE);
	expect_outside_ram(f, 0xffff88803fffffffULL);
	fake_free(f);
}

static void test_translate_5level(void **state)
{
	struct fake *f = fake_new(RAM_SIZE, 5);
	uint64_t gva = 0x00ab000040000000ULL; /* canonical only with LA57 */

	(void)state;
	map_page(f, gva, 0x20000, 1, P | RW | US);
	map_page(f, 0xff11000000000000ULL, 0x400000, 2, P | RW);
	expect_gpa(f, gva + 0x10, 0x20010, 4096);
	expect_gpa(f, 0xff11000000054321ULL, 0x454321, 2 * MiB);
	expect_fault(f, 0x0100000000000000ULL); /* not canonical for 57 bits */
	/* The same tables read as 4-level reject the 57-bit address. */
	f->pg.mode = GUEST_PAGING_4LEVEL;
	expect_fault(f, gva);
	fake_free(f);
}

static void test_paging_off(void **state)
{
	struct fake *f = fake_new(RAM_SIZE, 4);
	uint8_t buf[4];

	(void)state;
	f->pg.mode = GUEST_PAGING_OFF;
	memcpy(f->mem.base + 0x1234, "abcd", 4);
	expect_gpa(f, 0x1234, 0x1234, 4096);
	assert_int_equal(guest_read_virt(&f->mem, &f->pg, 0x1234, buf, 4), 0);
	assert_memory_equal(buf, "abcd", 4);
	expect_outside_ram(f, RAM_SIZE);
	expect_outside_ram(f, KVMPROF_LAPIC_BASE);
	expect_fault(f, 0x100000000ULL); /* past 32 bits without paging */
	fake_free(f);
}

static void test_read_virt(void **state)
{
	struct fake *f = fake_new(RAM_SIZE, 4);
	uint8_t buf[8192];

	(void)state;
	/* Two consecutive virtual pages, physically apart and out of order. */
	map_page(f, 0x40000000, 0x80000, 1, P | RW | US);
	map_page(f, 0x40001000, 0x30000, 1, P | RW | US);
	memset(f->mem.base + 0x80000, 'A', 4096);
	memset(f->mem.base + 0x30000, 'B', 4096);

	assert_int_equal(guest_read_virt(&f->mem, &f->pg, 0x40000ffc, buf, 8), 0);
	assert_memory_equal(buf, "AAAABBBB", 8);
	assert_int_equal(guest_read_virt(&f->mem, &f->pg, 0x40000000, buf, 8192), 0);
	assert_int_equal(buf[4095], 'A');
	assert_int_equal(buf[4096], 'B');
	assert_int_equal(buf[8191], 'B');

	/* Into the unmapped third page, and from an unmapped page. */
	assert_int_equal(guest_read_virt(&f->mem, &f->pg, 0x40001ffc, buf, 8), -EFAULT);
	assert_int_equal(guest_read_virt(&f->mem, &f->pg, 0x40001001, buf, 8192), -EFAULT);
	assert_int_equal(guest_read_virt(&f->mem, &f->pg, 0x3ffffffc, buf, 8), -EFAULT);

	/* Nothing asked, nothing read; a range wrapping past 2^64 is refused. */
	assert_int_equal(guest_read_virt(&f->mem, &f->pg, 0xdead, buf, 0), 0);
	assert_int_equal(guest_read_virt(&f->mem, &f->pg, UINT64_MAX - 3, buf, 8), -EFAULT);
	map_page(f, 0xfffffffffffff000ULL, 0x81000, 1, P | RW);
	map_page(f, 0, 0x82000, 1, P | RW);
	assert_int_equal(guest_read_virt(&f->mem, &f->pg, UINT64_MAX - 3, buf, 4), 0);
	assert_int_equal(guest_read_virt(&f->mem, &f->pg, UINT64_MAX - 3, buf, 8), -EFAULT);

	/* A 1 GiB page whose end runs past RAM: reads stop at RAM's end. */
	map_page(f, 0x80000000, 0, 3, P | RW);
	assert_int_equal(guest_read_virt(&f->mem, &f->pg, 0x80000000 + RAM_SIZE - 8, buf, 8), 0);
	assert_int_equal(guest_read_virt(&f->mem, &f->pg, 0x80000000 + RAM_SIZE - 4, buf, 8), -EFAULT);
	assert_int_equal(guest_read_virt(&f->mem, &f->pg, 0x80000000 + RAM_SIZE, buf, 1), -ENXIO);
	fake_free(f);
}

static void test_hostile_tables(void **state)
{
	struct fake *f = fake_new(RAM_SIZE, 4);
	uint64_t pml4 = f->pg.cr3;
	uint64_t *e;

	(void)state;
	map_page(f, 0x40000000, 0x20000, 1, P | RW | US);

	/*
	 * A PML4 slot pointing at the PML4 itself (the "recursive" trick):
	 * every level reads the same table and the walk still ends after four
	 * steps, at the PML4 page.
	 */
	*entry_at(f, pml4 + 511 * 8) = pml4 | P | RW;
	expect_gpa(f, 0xfffffffffffff000ULL, pml4, 4096);
	expect_gpa(f, 0xffffffffffffffffULL, pml4 + 0xfff, 4096);

	/* A table, or the page, beyond RAM or in the MMIO hole. */
	*entry_at(f, pml4 + 1 * 8) = (4 * GiB) | P | RW;
	expect_fault(f, 0x0000008000000000ULL);
	*entry_at(f, pml4 + 2 * 8) = KVMPROF_LAPIC_BASE | P | RW;
	expect_fault(f, 0x0000010000000000ULL);
	map_page(f, 0x40003000, KVMPROF_IOAPIC_BASE, 1, P | RW);
	expect_outside_ram(f, 0x40003000);
	map_page(f, 0x40004000, RAM_SIZE, 1, P | RW);
	expect_outside_ram(f, 0x40004000);
	map_page(f, 0x40005000, 0x000ffffffffff000ULL, 1, P | RW);
	expect_outside_ram(f, 0x40005000);
	map_page(f, 0x40400000, 0xfee00000ULL, 2, P | RW);
	expect_outside_ram(f, 0x40400000);

	/* CR3 itself outside RAM. */
	f->pg.cr3 = 3 * GiB;
	expect_fault(f, 0x40000000);
	f->pg.cr3 = pml4;
	expect_gpa(f, 0x40000000, 0x20000, 4096);

	/* Reserved bits: PS in a PML4 entry. */
	e = find_entry(f, 0x40000000, 4);
	*e |= PS;
	expect_fault(f, 0x40000000);
	*e &= ~PS;
	/* XD without EFER.NXE. */
	e = find_entry(f, 0x40000000, 1);
	*e |= XD;
	f->pg.nxe = false;
	expect_fault(f, 0x40000000);
	f->pg.nxe = true;
	expect_gpa(f, 0x40000000, 0x20000, 4096);
	*e &= ~XD;
	/* Bits between PAT and the frame of a 2 MiB and a 1 GiB page. */
	map_page(f, 0x40600000, 0x400000 | (1ULL << 13), 2, P | RW);
	expect_fault(f, 0x40600000);
	map_page(f, 0xffff888000000000ULL, 1ULL << 29, 3, P | RW);
	expect_fault(f, 0xffff888000000000ULL);
	/* Bits 62:52 are ignored (protection keys, software bits). */
	map_page(f, 0x40007000, 0x21000, 1, P | RW | (0x7ffULL << 52));
	expect_gpa(f, 0x40007008, 0x21008, 4096);

	/* Not present at each level. */
	for (unsigned int level = 4; level >= 1; level--) {
		e = find_entry(f, 0x40000000, level);
		*e &= ~P;
		expect_fault(f, 0x40000000);
		*e |= P;
		expect_gpa(f, 0x40000000, 0x20000, 4096);
	}

	/* The last bytes of RAM as a table: the entry read must not run past it. */
	f->pg.cr3 = RAM_SIZE - 4096;
	*entry_at(f, RAM_SIZE - 8) = (RAM_SIZE - 4096) | P | RW;
	expect_gpa(f, 0xfffffffffffffff8ULL, RAM_SIZE - 8, 4096);
	fake_free(f);
}

/* Stack walker fixtures: a user stack, user text, kernel stack and kernel text. */
#define USTACK 0x7ff00000ULL /* 4 pages */
#define UTEXT 0x40000000ULL
#define KSTACK 0xffffc90000010000ULL /* 4 pages */
#define KTEXT 0xffffffff81000000ULL
#define UNMAPPED_UTEXT 0x50000000ULL

static struct fake *stack_fake(void)
{
	struct fake *f = fake_new(RAM_SIZE, 4);

	/* Physically scattered, so page crossings are real. */
	for (unsigned int i = 0; i < 4; i++) {
		map_page(f, USTACK + i * 4096, 0x80000 - i * 0x10000, 1, P | RW | US | XD);
		map_page(f, KSTACK + i * 4096, 0x90000 + i * 0x2000, 1, P | RW | XD);
	}
	map_page(f, UTEXT, 0x20000, 1, P | US);
	map_page(f, KTEXT, 0x30000, 1, P);
	return f;
}

static void put(struct fake *f, uint64_t gva, uint64_t val)
{
	struct guest_translation t;

	assert_int_equal(guest_walk_translate(&f->mem, &f->pg, gva, &t), 0);
	memcpy(f->mem.base + t.gpa, &val, 8);
}

static void frame(struct fake *f, uint64_t rbp, uint64_t saved_rbp, uint64_t ret)
{
	put(f, rbp, saved_rbp);
	put(f, rbp + 8, ret);
}

static void test_stack_chain(void **state)
{
	struct fake *f = stack_fake();
	uint64_t rsp = USTACK + 0x100;
	uint64_t cs[KP_CALLCHAIN_MAX];

	(void)state;
	/* Three frames, the middle one straddling the first page boundary. */
	frame(f, USTACK + 0x140, USTACK + 0xff8, UTEXT + 0x10);
	frame(f, USTACK + 0xff8, USTACK + 0x1800, UTEXT + 0x20);
	frame(f, USTACK + 0x1800, 0, UTEXT + 0x30);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, rsp, USTACK + 0x140, cs, KP_CALLCHAIN_MAX), 3);
	assert_int_equal(cs[0], UTEXT + 0x10);
	assert_int_equal(cs[1], UTEXT + 0x20);
	assert_int_equal(cs[2], UTEXT + 0x30);

	/* The caller's bound is the depth bound. */
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, rsp, USTACK + 0x140, cs, 2), 2);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, rsp, USTACK + 0x140, cs, 0), 0);

	/* rbp == rsp is a frame (no locals); rbp below rsp or far above it is not. */
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, USTACK + 0x140, USTACK + 0x140, cs, 8), 3);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, USTACK + 0x148, USTACK + 0x140, cs, 8), 0);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, USTACK + 0x140 - GUEST_STACK_FRAME_MAX - 8,
					  USTACK + 0x140, cs, 8), 0);
	/* Misaligned rbp, even with a well-formed frame there. */
	frame(f, USTACK + 0x404, 0, UTEXT + 0x40);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, rsp, USTACK + 0x404, cs, 8), 0);
	frame(f, USTACK + 0x400, USTACK + 0x404, UTEXT + 0x50);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, rsp, USTACK + 0x400, cs, 8), 1);

	/* A user return address whose text page is not mapped (evicted) still counts. */
	frame(f, USTACK + 0x1800, 0, UNMAPPED_UTEXT);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, rsp, USTACK + 0x140, cs, 8), 3);
	assert_int_equal(cs[2], UNMAPPED_UTEXT);
	/* A zero return address ends the chain. */
	frame(f, USTACK + 0x1800, 0, 0);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, rsp, USTACK + 0x140, cs, 8), 2);
	/* A misaligned saved rbp ends it after that frame. */
	frame(f, USTACK + 0xff8, USTACK + 0x1804, UTEXT + 0x20);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, rsp, USTACK + 0x140, cs, 8), 2);
	/* A saved rbp into unmapped memory: the frame is read, the next one cannot be. */
	frame(f, USTACK + 0xff8, USTACK + 0x4000, UTEXT + 0x20);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, rsp, USTACK + 0x140, cs, 8), 2);
	/* A frame at the very top of the mapped stack whose return word is unmapped. */
	frame(f, USTACK + 0xff8, USTACK + 0x3ff8, UTEXT + 0x20);
	put(f, USTACK + 0x3ff8, USTACK + 0x5000);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, rsp, USTACK + 0x140, cs, 8), 2);
	/* A frame larger than the bound, though mapped and well-formed, ends the walk. */
	map_page(f, USTACK + 2 * MiB, 0xb0000, 1, P | RW | US);
	frame(f, USTACK + 2 * MiB, 0, UTEXT + 0x60);
	frame(f, USTACK + 0xff8, USTACK + 2 * MiB, UTEXT + 0x20);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, rsp, USTACK + 0x140, cs, 8), 2);
	/* Half a MiB is still a frame. */
	map_page(f, USTACK + 512 * KiB, 0xb1000, 1, P | RW | US);
	frame(f, USTACK + 512 * KiB, 0, UTEXT + 0x70);
	frame(f, USTACK + 0xff8, USTACK + 512 * KiB, UTEXT + 0x20);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, rsp, USTACK + 0x140, cs, 8), 3);
	assert_int_equal(cs[2], UTEXT + 0x70);
	fake_free(f);
}

static void test_stack_cycles(void **state)
{
	struct fake *f = stack_fake();
	uint64_t cs[KP_CALLCHAIN_MAX];
	uint64_t a = USTACK + 0x200, b = USTACK + 0x300;

	(void)state;
	/* rbp pointing at itself: one frame, then the walk stops. */
	frame(f, a, a, UTEXT + 1);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, a, a, cs, KP_CALLCHAIN_MAX), 1);
	/* Two frames pointing at each other. */
	frame(f, a, b, UTEXT + 1);
	frame(f, b, a, UTEXT + 2);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, a, a, cs, KP_CALLCHAIN_MAX), 2);
	assert_int_equal(cs[0], UTEXT + 1);
	assert_int_equal(cs[1], UTEXT + 2);
	/* Downward step. */
	frame(f, b, a - 16, UTEXT + 2);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, a, a, cs, KP_CALLCHAIN_MAX), 2);
	fake_free(f);
}

static void test_stack_depth(void **state)
{
	struct fake *f = stack_fake();
	uint64_t cs[KP_CALLCHAIN_MAX + 8];
	unsigned int i;

	(void)state;
	/* 200 frames of 64 bytes, across all four stack pages. */
	for (i = 0; i < 200; i++)
		frame(f, USTACK + 64 * i, i == 199 ? 0 : USTACK + 64 * (i + 1), UTEXT + i);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, USTACK, USTACK, cs, KP_CALLCHAIN_MAX),
			 KP_CALLCHAIN_MAX);
	for (i = 0; i < KP_CALLCHAIN_MAX; i++)
		assert_int_equal(cs[i], UTEXT + i);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, USTACK, USTACK, cs, KP_CALLCHAIN_MAX + 8),
			 KP_CALLCHAIN_MAX + 8);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, USTACK + 64 * 190, USTACK + 64 * 190, cs,
					  KP_CALLCHAIN_MAX), 10);
	fake_free(f);
}

static void test_stack_privilege(void **state)
{
	struct fake *f = stack_fake();
	uint64_t cs[16];

	(void)state;
	/* A kernel chain, ending where it would step into a user page. */
	frame(f, KSTACK + 0x100, KSTACK + 0x200, KTEXT + 0x10);
	frame(f, KSTACK + 0x200, KSTACK + 0x1000, KTEXT + 0x20);
	frame(f, KSTACK + 0x1000, 0, KTEXT + 0x30);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, false, KSTACK + 0x80, KSTACK + 0x100, cs, 16), 3);
	assert_int_equal(cs[2], KTEXT + 0x30);
	/* Sampled as user, the kernel stack is not readable at all. */
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, KSTACK + 0x80, KSTACK + 0x100, cs, 16), 0);
	/* A kernel return address pointing into user text ends a kernel chain. */
	frame(f, KSTACK + 0x200, KSTACK + 0x1000, UTEXT);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, false, KSTACK + 0x80, KSTACK + 0x100, cs, 16), 1);
	/* ... and an unmapped kernel return address too (kernel text is never paged out). */
	frame(f, KSTACK + 0x200, KSTACK + 0x1000, KTEXT + 0x1000);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, false, KSTACK + 0x80, KSTACK + 0x100, cs, 16), 1);

	/* A user chain whose return address points at kernel text, or is in the upper half. */
	frame(f, USTACK + 0x100, USTACK + 0x200, UTEXT + 0x10);
	frame(f, USTACK + 0x200, USTACK + 0x300, KTEXT);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, USTACK, USTACK + 0x100, cs, 16), 1);
	frame(f, USTACK + 0x200, USTACK + 0x300, 0xffff800000001000ULL);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, USTACK, USTACK + 0x100, cs, 16), 1);
	frame(f, USTACK + 0x200, USTACK + 0x300, 0x0000800000001000ULL); /* not canonical */
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, USTACK, USTACK + 0x100, cs, 16), 1);
	/* A user chain whose saved rbp leads into a supervisor page in the lower half. */
	map_page(f, 0x7ff10000, 0xa0000, 1, P | RW);
	frame(f, USTACK + 0x200, 0x7ff10000, UTEXT + 0x20);
	frame(f, 0x7ff10000, 0, UTEXT + 0x30);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, USTACK, USTACK + 0x100, cs, 16), 2);
	/* User registers in the upper half. */
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, 0xffff800000000000ULL,
					  0xffff800000000100ULL, cs, 16), 0);
	/* An rbp at the top of the address space cannot wrap. */
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, false, UINT64_MAX - 7 - 64, UINT64_MAX - 7, cs, 16), 0);
	fake_free(f);
}

/* xorshift64*: a fixed seed gives the same "random" tables on every run. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

/* Mostly canonical addresses: with random tables every index reads some random entry. */
static uint64_t rnd_gva(void)
{
	if ((rnd() & 3) == 0)
		return rnd();
	return (uint64_t)((int64_t)(rnd() << 16) >> 16);
}

static void test_fuzz(void **state)
{
	/* 256 KiB of RAM: 64 pages, all of them random page tables and stack. */
	struct fake *f = fake_new(256 * KiB, 4);
	uint64_t *words = (uint64_t *)f->mem.base;
	size_t nwords = f->mem.size / 8;
	uint64_t cs[KP_CALLCHAIN_MAX];
	uint8_t buf[3 * 4096];
	unsigned int ok = 0, frames = 0;

	(void)state;
	for (unsigned int iter = 0; iter < 4000; iter++) {
		if (iter % 100 == 0) {
			for (size_t i = 0; i < nwords; i++) {
				uint64_t r = rnd();

				switch (r & 15) {
				case 0:
					words[i] = rnd(); /* anything */
					break;
				case 1:
					words[i] = rnd_gva() & ~7ULL; /* looks like a frame pointer */
					break;
				case 2:
					words[i] = 0;
					break;
				default:
					/* A present entry to some page in or just past RAM. */
					words[i] = ((r >> 8) % 72) * 4096 | P | RW | US |
						   ((r >> 20) & 7 ? 0 : PS) | ((r >> 24) & 7 ? 0 : XD) |
						   ((r >> 28) & 15 ? 0 : 1ULL << (13 + (r >> 32) % 8));
					break;
				}
			}
		}
		f->pg.mode = (rnd() & 7) == 0 ? GUEST_PAGING_5LEVEL : GUEST_PAGING_4LEVEL;
		f->pg.nxe = rnd() & 1;
		f->pg.cr3 = (rnd() % 72) * 4096 | (rnd() & 0xfff);

		struct guest_translation t;
		uint64_t gva = rnd_gva();

		if (guest_walk_translate(&f->mem, &f->pg, gva, &t) == 0) {
			assert_true(t.gpa < f->mem.size);
			assert_int_equal(t.gpa & 0xfff, gva & 0xfff);
			ok++;
		}
		if (guest_read_virt(&f->mem, &f->pg, gva, buf, rnd() % sizeof(buf)) == 0)
			ok++;

		uint64_t rsp = rnd_gva() & ~7ULL;
		uint64_t rbp = rsp + (rnd() % 256) * 8;
		unsigned int n = guest_stack_walk(&f->mem, &f->pg, rnd() & 1, rsp, rbp, cs, KP_CALLCHAIN_MAX);

		assert_true(n <= KP_CALLCHAIN_MAX);
		frames += n;
	}
	/* Not a property, just a sign the fuzzer reaches past the first checks. */
	assert_true(ok > 0);
	print_message("fuzz: %u successful translations/reads, %u frames\n", ok, frames);
	fake_free(f);
}

/* Fills the fixture's user or kernel stack with words that look like frame pointers, return addresses, or neither. */
static void fill_random_stack(struct fake *f, bool user)
{
	uint64_t base = user ? USTACK : KSTACK;

	for (uint64_t off = 0; off < 4 * 4096; off += 8) {
		uint64_t r = rnd(), w;

		switch (r & 7) {
		case 0:
			w = rnd();
			break;
		case 1:
		case 2:
			w = base + (rnd() % (4 * 4096 + 64)) - 32; /* near or in the stack */
			break;
		case 3:
			w = (user ? UTEXT : KTEXT) + (rnd() & 0x1fff);
			break;
		case 4:
			w = 0;
			break;
		default:
			w = base + off + 8 + (rnd() % 64) * 8; /* a plausible next frame */
			break;
		}
		put(f, base + off, w);
	}
}

/* Random stack contents. */
static void test_fuzz_stack(void **state)
{
	struct fake *f = stack_fake();
	uint64_t cs[KP_CALLCHAIN_MAX];
	unsigned int frames = 0, deepest = 0;

	(void)state;
	for (unsigned int iter = 0; iter < 2000; iter++) {
		bool user = iter & 1;
		uint64_t base = user ? USTACK : KSTACK;

		fill_random_stack(f, user);
		uint64_t rsp = base + (rnd() % (4 * 4096));
		uint64_t rbp = rsp + (rnd() % 64) * (rnd() & 1 ? 8 : 1);
		unsigned int n = guest_stack_walk(&f->mem, &f->pg, user ^ ((rnd() & 15) == 0), rsp, rbp,
						  cs, KP_CALLCHAIN_MAX);

		assert_true(n <= KP_CALLCHAIN_MAX);
		frames += n;
		if (n > deepest)
			deepest = n;
	}
	assert_true(deepest > 3);
	print_message("stack fuzz: %u frames, deepest %u\n", frames, deepest);
	fake_free(f);
}

/*
 * guest_callchain fixtures: a kernel-mode sample that interrupted user code.
 * The TSS's RSP0 names the top of the kernel stack, where the CPU pushed the
 * interrupt frame (RIP, CS, RFLAGS, RSP, SS) on the way in from ring 3.
 */
#define TSS 0xfffffe0000003000ULL /* supervisor-only, as Linux's cpu_entry_area */
#define TSS_GPA 0xc0000ULL
#define KSTACK_TOP (KSTACK + 0x4000)
#define USER_CS 0x2bULL /* RPL 3 */
#define USER_RIP (UTEXT + 0x5)
#define USER_RSP (USTACK + 0x100)
#define TOP_PAGE 0xfffffffffffff000ULL
#define CHAIN_MAX 16
/* What guest_callchain must never write: entries past its count keep it. */
#define POISON 0x5a5a5a5a5a5a5a5aULL

static const uint64_t full_chain[] = {
	KTEXT + 0x10, KTEXT + 0x20, GUEST_STACK_CONTEXT_USER, USER_RIP + 1, UTEXT + 0x10, UTEXT + 0x20,
};

static void put_iret_frame(struct fake *f, uint64_t at, uint64_t rip, uint64_t cs, uint64_t rsp)
{
	put(f, at, rip);
	put(f, at + 8, cs);
	put(f, at + 16, 0x202);
	put(f, at + 24, rsp);
	put(f, at + 32, 0x23);
}

/*
 * The good case: two kernel frames, the outer one holding the user's RBP
 * (below the kernel stack, so the kernel walk stops there), RSP0 at the
 * kernel stack's top with a ring-3 interrupt frame under it, and two user
 * frames from that RBP.
 */
static struct fake *callchain_fake(void)
{
	struct fake *f = stack_fake();

	map_page(f, TSS, TSS_GPA, 1, P | RW | XD);
	put(f, TSS + 4, KSTACK_TOP);
	frame(f, KSTACK + 0x100, KSTACK + 0x200, KTEXT + 0x10);
	frame(f, KSTACK + 0x200, USTACK + 0x140, KTEXT + 0x20);
	put_iret_frame(f, KSTACK_TOP - 40, USER_RIP, USER_CS, USER_RSP);
	frame(f, USTACK + 0x140, USTACK + 0x200, UTEXT + 0x10);
	frame(f, USTACK + 0x200, 0, UTEXT + 0x20);
	return f;
}

/* The kernel-mode sample's callchain into callers[0..max), poisoned past that up to CHAIN_MAX. */
static unsigned int kernel_callchain(struct fake *f, uint64_t tss_base, uint64_t *callers, unsigned int max)
{
	for (unsigned int i = 0; i <= CHAIN_MAX; i++)
		callers[i] = POISON;
	return guest_callchain(&f->mem, &f->pg, false, KSTACK + 0x80, KSTACK + 0x100, tss_base, callers, max);
}

/*
 * The count of the kernel-mode sample's chain when that chain is the first
 * entries of full_chain with nothing written past them (a refusal: 2, the
 * kernel frames alone); -1 when it is anything else.
 */
static int chain_length(struct fake *f, uint64_t tss_base)
{
	uint64_t cs[CHAIN_MAX + 1];
	unsigned int n = kernel_callchain(f, tss_base, cs, CHAIN_MAX);

	if (n > sizeof(full_chain) / sizeof(full_chain[0]) || memcmp(cs, full_chain, n * sizeof(cs[0])))
		return -1;
	for (unsigned int i = n; i <= CHAIN_MAX; i++)
		if (cs[i] != POISON)
			return -1;
	return (int)n;
}

static void test_callchain_user_side(void **state)
{
	struct fake *f = callchain_fake();
	uint64_t cs[CHAIN_MAX + 1];

	(void)state;
	assert_int_equal(chain_length(f, TSS), 6);
	/* Linux's user CS (0x33) is ring 3 too; RSP0 is aligned down to 16 as the CPU does. */
	put(f, KSTACK_TOP - 32, 0x33);
	assert_int_equal(chain_length(f, TSS), 6);
	put(f, TSS + 4, KSTACK_TOP + 0xf);
	assert_int_equal(chain_length(f, TSS), 6);

	/* An interrupt frame straddling two physically apart kernel stack pages: each word on its own page. */
	put(f, TSS + 4, KSTACK + 0x1010);
	put_iret_frame(f, KSTACK + 0xfe8, USER_RIP, USER_CS, USER_RSP);
	assert_int_equal(chain_length(f, TSS), 6);
	put(f, TSS + 4, KSTACK_TOP);

	/* A user RIP whose page is not mapped (evicted text) is still the interrupted instruction. */
	put(f, KSTACK_TOP - 40, UNMAPPED_UTEXT);
	assert_int_equal(kernel_callchain(f, TSS, cs, CHAIN_MAX), 6);
	assert_int_equal(cs[3], UNMAPPED_UTEXT + 1);
	assert_int_equal(cs[5], UTEXT + 0x20);
	put(f, KSTACK_TOP - 40, USER_RIP);

	/* The RBP the kernel chain stopped at is a kernel one: the marker and RIP, no user frames from kernel memory. */
	frame(f, KSTACK + 0x200, KSTACK + 0x100, KTEXT + 0x20);
	assert_int_equal(chain_length(f, TSS), 4);
	fake_free(f);
}

/* The bundled guest: its kernel identity-mapped in the lower half, its stack under the user stack. */
static void test_callchain_low_kernel(void **state)
{
	struct fake *f = callchain_fake();
	uint64_t low_kstack = USTACK - 0x100000 + 0x1000; /* the user RBP is less than a frame bound above */
	uint64_t cs[CHAIN_MAX + 1];

	(void)state;
	map_page(f, low_kstack, 0xc2000, 1, P | RW | XD);
	frame(f, low_kstack + 0x100, low_kstack + 0x200, KTEXT + 0x10);
	/* The kernel walk steps up to the user's RBP and stops at its user page: that RBP is where the user chain goes on. */
	frame(f, low_kstack + 0x200, USTACK + 0x140, KTEXT + 0x20);
	put(f, TSS + 4, low_kstack + 0x1000);
	put_iret_frame(f, low_kstack + 0x1000 - 40, USER_RIP, USER_CS, USER_RSP);
	for (unsigned int i = 0; i <= CHAIN_MAX; i++)
		cs[i] = POISON;
	assert_int_equal(guest_callchain(&f->mem, &f->pg, false, low_kstack + 0x80, low_kstack + 0x100, TSS, cs,
					 CHAIN_MAX), 6);
	assert_memory_equal(cs, full_chain, sizeof(full_chain));
	assert_int_equal(cs[6], POISON);
	fake_free(f);
}

/* Guest RAM through a read function that notes whether the TSS's page was read. */
static bool tss_page_read;

static int read_noting_tss(void *opaque, uint64_t gpa, void *dst, uint64_t len)
{
	struct fake *f = opaque;

	if (gpa < TSS_GPA + 4096 && gpa + len > TSS_GPA)
		tss_page_read = true;
	memcpy(dst, f->mem.base + gpa, len);
	return 0;
}

static void test_callchain_user_sample(void **state)
{
	struct fake *f = callchain_fake();
	struct vmi_mem noting = { .size = f->mem.size, .read = read_noting_tss, .opaque = f };
	uint64_t cs[CHAIN_MAX], walked[CHAIN_MAX];

	(void)state;
	/* The reader sees the TSS when it is read. */
	tss_page_read = false;
	assert_int_equal(guest_callchain(&noting, &f->pg, false, KSTACK + 0x80, KSTACK + 0x100, TSS, cs, CHAIN_MAX), 6);
	assert_true(tss_page_read);

	/* A user-mode sample is guest_stack_walk's chain, and the TSS is not looked at. */
	tss_page_read = false;
	memset(cs, 0, sizeof(cs));
	memset(walked, 0, sizeof(walked));
	assert_int_equal(guest_callchain(&noting, &f->pg, true, USER_RSP, USTACK + 0x140, TSS, cs, CHAIN_MAX), 2);
	assert_false(tss_page_read);
	assert_int_equal(guest_stack_walk(&f->mem, &f->pg, true, USER_RSP, USTACK + 0x140, walked, CHAIN_MAX), 2);
	assert_memory_equal(cs, walked, sizeof(cs));
	assert_int_equal(cs[0], UTEXT + 0x10);
	assert_int_equal(cs[1], UTEXT + 0x20);
	/* Sampled as user on the kernel stack: nothing, as guest_stack_walk. */
	assert_int_equal(guest_callchain(&noting, &f->pg, true, KSTACK + 0x80, KSTACK + 0x100, TSS, cs, CHAIN_MAX), 0);
	assert_false(tss_page_read);
	fake_free(f);
}

static void test_callchain_refusals(void **state)
{
	struct fake *f = callchain_fake();
	static const uint64_t bad_rips[] = {
		0, KTEXT, 0xffff800000000000ULL, UINT64_MAX,
		0x0000800000000000ULL, /* not canonical: never a RIP the CPU ran at */
		0x7fffffffffffffffULL, /* not canonical, and +1 would leave the lower half */
	};
	static const uint64_t bad_rsp0s[] = {
		0, 8, 39,                /* no room for the frame below */
		KSTACK + 0x8000,         /* the frame on an unmapped page */
		USTACK + 0x1000,         /* a user page, where a user program could forge a frame */
	};

	(void)state;
	assert_int_equal(chain_length(f, TSS), 6);
	/* No TSS; an unmapped one; one on a user page. */
	assert_int_equal(chain_length(f, 0), 2);
	assert_int_equal(chain_length(f, TSS + 4096), 2);
	map_page(f, TSS, TSS_GPA, 1, P | RW | US);
	assert_int_equal(chain_length(f, TSS), 2);
	map_page(f, TSS, TSS_GPA, 1, P | RW | XD);
	assert_int_equal(chain_length(f, TSS), 6);

	put_iret_frame(f, USTACK + 0x1000 - 40, USER_RIP, USER_CS, USER_RSP);
	for (unsigned int i = 0; i < sizeof(bad_rsp0s) / sizeof(bad_rsp0s[0]); i++) {
		put(f, TSS + 4, bad_rsp0s[i]);
		assert_int_equal(chain_length(f, TSS), 2);
	}
	put(f, TSS + 4, KSTACK_TOP);

	/* Rings 0, 1 and 2: the kernel interrupted itself, there is no user code under it. */
	for (uint64_t sel = 0x10; sel <= 0x12; sel++) {
		put(f, KSTACK_TOP - 32, sel);
		assert_int_equal(chain_length(f, TSS), 2);
	}
	put(f, KSTACK_TOP - 32, USER_CS);

	for (unsigned int i = 0; i < sizeof(bad_rips) / sizeof(bad_rips[0]); i++) {
		put(f, KSTACK_TOP - 40, bad_rips[i]);
		assert_int_equal(chain_length(f, TSS), 2);
	}
	put(f, KSTACK_TOP - 40, USER_RIP);

	put(f, KSTACK_TOP - 16, KSTACK + 0x100);
	assert_int_equal(chain_length(f, TSS), 2);
	put(f, KSTACK_TOP - 16, 0xffff800000000000ULL);
	assert_int_equal(chain_length(f, TSS), 2);
	put(f, KSTACK_TOP - 16, USER_RSP);
	assert_int_equal(chain_length(f, TSS), 6);

	/* The kernel chain's outermost frame saved no RBP: no user frame pointer to go on from. */
	frame(f, KSTACK + 0x200, 0, KTEXT + 0x20);
	assert_int_equal(chain_length(f, TSS), 2);
	fake_free(f);
}

/* A chain of the maximum length never writes past it; the marker and RIP come with room for a user frame. */
static void test_callchain_max(void **state)
{
	struct fake *f = callchain_fake();
	/* Counts for max 0..7: the kernel frames fill up to 2, the user side needs 3 more places. */
	static const unsigned int expected[] = { 0, 1, 2, 2, 2, 5, 6, 6 };
	uint64_t cs[CHAIN_MAX + 1];

	(void)state;
	for (unsigned int max = 0; max < sizeof(expected) / sizeof(expected[0]); max++) {
		unsigned int n = kernel_callchain(f, TSS, cs, max);

		assert_int_equal(n, expected[max]);
		assert_memory_equal(cs, full_chain, n * sizeof(uint64_t));
		for (unsigned int i = n; i <= CHAIN_MAX; i++)
			assert_int_equal(cs[i], POISON);
	}
	fake_free(f);
}

/* RSP0 read at the last bytes of a page and of the address space. */
static void test_callchain_tss_edges(void **state)
{
	struct fake *f = callchain_fake();
	uint64_t top = KSTACK_TOP;

	(void)state;
	/* RSP0 as the page's last word; then one byte further, across into the next page (mapped, after it in RAM). */
	put(f, TSS + 0xff8, KSTACK_TOP);
	assert_int_equal(chain_length(f, TSS + 0xff4), 6);
	map_page(f, TSS + 4096, TSS_GPA + 4096, 1, P | RW | XD);
	memcpy(f->mem.base + TSS_GPA + 0xff9, &top, sizeof(top));
	assert_int_equal(chain_length(f, TSS + 0xff5), 2);
	memcpy(f->mem.base + TSS_GPA + 0xffc, &top, sizeof(top));
	assert_int_equal(chain_length(f, TSS + 0xff8), 2);

	/* The top page of the address space and page 0, both supervisor-only. */
	map_page(f, TOP_PAGE, 0xc4000, 1, P | RW | XD);
	map_page(f, 0, 0xc5000, 1, P | RW | XD);
	put(f, TOP_PAGE + 0xff8, KSTACK_TOP);
	assert_int_equal(chain_length(f, UINT64_MAX - 11), 6);
	/* tss_base + 4 past 2^64 wraps to page 0, where a valid RSP0 waits: refused. */
	put(f, 0, KSTACK_TOP);
	for (uint64_t back = 0; back <= 10; back++)
		assert_int_equal(chain_length(f, UINT64_MAX - back), 2);
	/* tss_base 0 says there is no TSS, even when page 0 would hold a valid RSP0. */
	put(f, 4, KSTACK_TOP);
	assert_int_equal(chain_length(f, 0), 2);
	fake_free(f);
}

/* The interrupt frame at the bottom of the address space: RSP0 48 fits it, 40..47 would wrap below 0. */
static void test_callchain_frame_wrap(void **state)
{
	struct fake *f = callchain_fake();

	(void)state;
	map_page(f, TOP_PAGE, 0xc4000, 1, P | RW | XD);
	map_page(f, 0, 0xc5000, 1, P | RW | XD);
	put_iret_frame(f, 8, USER_RIP, USER_CS, USER_RSP);
	put(f, TSS + 4, 48);
	assert_int_equal(chain_length(f, TSS), 6);
	/*
	 * RSP0 40 aligns down to 32; a frame 40 below that starts at 2^64 - 8,
	 * and its words would be read at 2^64 - 8 (RIP), 0 (CS) and 16 (RSP).
	 */
	put(f, TOP_PAGE + 0xff8, USER_RIP);
	put(f, 0, USER_CS);
	put(f, 16, USER_RSP);
	for (uint64_t rsp0 = 40; rsp0 < 48; rsp0++) {
		put(f, TSS + 4, rsp0);
		assert_int_equal(chain_length(f, TSS), 2);
	}
	fake_free(f);
}

/* A random interrupt-frame word: often right, often almost right, sometimes anything. */
static uint64_t rnd_frame_word(uint64_t good, uint64_t near)
{
	switch (rnd() & 7) {
	case 0:
		return rnd();
	case 1:
		return rnd_gva();
	case 2:
		return 0;
	case 3:
		return near + (rnd() & 0x3fff);
	default:
		return good;
	}
}

static void test_fuzz_callchain(void **state)
{
	struct fake *f = callchain_fake();
	uint64_t cs[KP_CALLCHAIN_MAX + 1];
	unsigned int user_sides = 0, user_frames = 0;

	(void)state;
	for (unsigned int iter = 0; iter < 2000; iter++) {
		fill_random_stack(f, false);
		fill_random_stack(f, true);
		for (uint64_t off = 0; off < 4096; off += 8)
			put(f, TSS + off, rnd_frame_word(KSTACK_TOP - (rnd() & 0xff), KSTACK));
		uint64_t rsp0 = rnd_frame_word(KSTACK_TOP - (rnd() & 0xff), KSTACK);
		uint64_t frame_at = (rsp0 & ~15ULL) - 40;

		put(f, TSS + 4, rsp0);
		if (frame_at >= KSTACK && frame_at <= KSTACK_TOP - 40)
			put_iret_frame(f, frame_at, rnd_frame_word(USER_RIP, UTEXT), rnd_frame_word(USER_CS, 0x10),
				       rnd_frame_word(USER_RSP, USTACK));

		uint64_t tss_base = (rnd() & 3) ? TSS : rnd_frame_word(UINT64_MAX - (rnd() & 15), TSS);
		uint64_t rsp = KSTACK + (rnd() % (4 * 4096));
		uint64_t rbp = rsp + (rnd() % 64) * 8;

		/* Half the time a kernel chain that ends at some RBP, often into the random user stack. */
		if (rnd() & 1) {
			frame(f, KSTACK + 0x100, KSTACK + 0x200, KTEXT + 0x10);
			frame(f, KSTACK + 0x200, rnd_frame_word(USTACK + (rnd() % (4 * 4096) & ~7ULL), USTACK),
			      KTEXT + 0x20);
			rsp = KSTACK + 0x80;
			rbp = KSTACK + 0x100;
		}
		unsigned int max = rnd() % (KP_CALLCHAIN_MAX + 1);
		unsigned int n, marker = max;

		cs[max] = POISON;
		n = guest_callchain(&f->mem, &f->pg, false, rsp, rbp, tss_base, cs, max);
		assert_true(n <= max);
		assert_int_equal(cs[max], POISON);
		for (unsigned int i = 0; i < n; i++) {
			if (cs[i] == GUEST_STACK_CONTEXT_USER) {
				/* One marker, followed by the RIP and room for a user frame, all in the lower half. */
				assert_int_equal(marker, max);
				marker = i;
				assert_true(i + 2 <= n && i + 3 <= max);
				user_sides++;
			} else if (marker < max) {
				assert_true(cs[i] != 0 && cs[i] >> 63 == 0);
				user_frames++;
			} else {
				assert_true(cs[i] >> 63 == 1); /* the fixture's kernel text */
			}
		}
	}
	/* Not a property: a sign the loop gets past the checks to the user side. */
	assert_true(user_sides > 0 && user_frames > user_sides);
	print_message("callchain fuzz: %u user sides, %u user frames\n", user_sides, user_frames);
	fake_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paging_init),
		cmocka_unit_test(test_translate_4k),
		cmocka_unit_test(test_translate_large),
		cmocka_unit_test(test_translate_5level),
		cmocka_unit_test(test_paging_off),
		cmocka_unit_test(test_read_virt),
		cmocka_unit_test(test_hostile_tables),
		cmocka_unit_test(test_stack_chain),
		cmocka_unit_test(test_stack_cycles),
		cmocka_unit_test(test_stack_depth),
		cmocka_unit_test(test_stack_privilege),
		cmocka_unit_test(test_fuzz),
		cmocka_unit_test(test_fuzz_stack),
		cmocka_unit_test(test_callchain_user_side),
		cmocka_unit_test(test_callchain_low_kernel),
		cmocka_unit_test(test_callchain_user_sample),
		cmocka_unit_test(test_callchain_refusals),
		cmocka_unit_test(test_callchain_max),
		cmocka_unit_test(test_callchain_tss_edges),
		cmocka_unit_test(test_callchain_frame_wrap),
		cmocka_unit_test(test_fuzz_callchain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
