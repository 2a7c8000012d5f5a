// SPDX-License-Identifier: MIT
/*
 * Whether an export's kernel symbols are the running kernel's
 * (vmi/linux_kernel_fit.c): the IDT's exception handlers each start one of
 * the export's text symbols in the boot it was taken in, and none does once
 * KASLR has moved the kernel by a multiple of 2 MiB. Fake guest RAM with
 * paging off, malloc'd so ASan sees a read past it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "linux_kernel_fit.h"

#define RAM_SIZE (1u << 16)
#define IDT 0x1000u
#define TEXT 0xffffffff81000000ULL

/* The export's "symbols": one every 0x40 bytes from TEXT, for 64 KiB. */
static bool starts_symbol(uint64_t addr, void *ctx)
{
	uint64_t *asked = ctx;

	(*asked)++;
	return addr >= TEXT && addr < TEXT + 0x10000 && !(addr & 0x3f);
}

static void gate(uint8_t *ram, unsigned int vec, uint64_t h)
{
	uint8_t *g = ram + IDT + vec * 16;

	memset(g, 0, 16);
	g[0] = (uint8_t)h, g[1] = (uint8_t)(h >> 8);
	g[2] = 0x10;             /* __KERNEL_CS */
	g[5] = 0x8e;             /* present, DPL 0, interrupt gate */
	g[6] = (uint8_t)(h >> 16), g[7] = (uint8_t)(h >> 24);
	for (int i = 0; i < 4; i++)
		g[8 + i] = (uint8_t)(h >> (32 + 8 * i));
}

static void test_fit(void **state)
{
	uint8_t *ram = calloc(1, RAM_SIZE);
	struct vmi_mem mem = vmi_mem_mapped(ram, RAM_SIZE);
	struct guest_paging pg = { .mode = GUEST_PAGING_OFF };
	static const unsigned int vecs[] = { 0, 3, 6, 13, 14 };
	uint64_t asked = 0, h = 0, moved = 2ull << 20;
	unsigned int vec = 99;

	(void)state;
	assert_non_null(ram);
	/* No gate present yet (a guest still booting): nothing to tell. */
	assert_int_equal(linux_kernel_fit(&mem, &pg, IDT, 0xfff, starts_symbol, &asked, &vec, &h), LINUX_KERNEL_UNKNOWN);
	assert_int_equal(asked, 0);
	/* The boot the export was taken in: every handler on a symbol's start. */
	for (size_t i = 0; i < 5; i++)
		gate(ram, vecs[i], TEXT + 0x400 + vecs[i] * 0x40);
	assert_int_equal(linux_kernel_fit(&mem, &pg, IDT, 0xfff, starts_symbol, &asked, &vec, &h), LINUX_KERNEL_FITS);
	assert_int_equal(asked, 5);
	assert_int_equal(vec, 14);
	assert_int_equal(h, TEXT + 0x400 + 14 * 0x40);
	/* Another boot: the kernel 2 MiB further on, past the export's text. */
	for (size_t i = 0; i < 5; i++)
		gate(ram, vecs[i], TEXT + moved + 0x400 + vecs[i] * 0x40);
	assert_int_equal(linux_kernel_fit(&mem, &pg, IDT, 0xfff, starts_symbol, &asked, &vec, &h), LINUX_KERNEL_MOVED);
	assert_int_equal(vec, 0);
	assert_int_equal(h, TEXT + moved + 0x400);
	/* One handler off its symbol is enough, wherever it is in the list. */
	for (size_t i = 0; i < 5; i++)
		gate(ram, vecs[i], TEXT + 0x400 + vecs[i] * 0x40);
	gate(ram, 14, TEXT + 0x404);
	assert_int_equal(linux_kernel_fit(&mem, &pg, IDT, 0xfff, starts_symbol, &asked, &vec, &h), LINUX_KERNEL_MOVED);
	assert_int_equal(vec, 14);
	/* A limit that covers only #DE: that gate alone is read; an IDT past RAM: nothing to tell. */
	asked = 0;
	assert_int_equal(linux_kernel_fit(&mem, &pg, IDT, 15, starts_symbol, &asked, &vec, &h), LINUX_KERNEL_FITS);
	assert_int_equal(asked, 1);
	assert_int_equal(vec, 0);
	assert_int_equal(linux_kernel_fit(&mem, &pg, RAM_SIZE - 8, 0xfff, starts_symbol, &asked, &vec, &h),
			 LINUX_KERNEL_UNKNOWN);
	free(ram);
}

/* The names the stale-export message looks the moved handler up by: each checked vector's, in both eras. */
static void test_handler_names(void **state)
{
	(void)state;
	assert_string_equal(linux_kernel_fit_handler_name(0, 0), "asm_exc_divide_error");
	assert_string_equal(linux_kernel_fit_handler_name(14, 0), "asm_exc_page_fault");
	assert_string_equal(linux_kernel_fit_handler_name(14, 1), "page_fault");
	assert_string_equal(linux_kernel_fit_handler_name(13, 1), "general_protection");
	assert_null(linux_kernel_fit_handler_name(14, 2));
	assert_null(linux_kernel_fit_handler_name(2, 0)); /* NMI: not checked */
	for (unsigned int v = 0; v < 256; v++)
		assert_true(!linux_kernel_fit_handler_name(v, 0) == !(v == 0 || v == 3 || v == 6 || v == 13 || v == 14));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fit),
		cmocka_unit_test(test_handler_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
