// SPDX-License-Identifier: MIT
/* The x87/SSE state through KVM's XSAVE image (vmm/engine/emu_fpu.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/emu_fpu.h"

static uint64_t xstate_bv(const struct kvm_xsave *x)
{
	uint64_t bv;

	memcpy(&bv, (const uint8_t *)x->region + 512, 8);
	return bv;
}

/* Every field at its FXSAVE offset, both ways; the other components' bytes untouched. */
static void test_round_trip(void **state)
{
	struct kvm_xsave x, y;
	struct kvm_fpu f = { 0 }, g;
	uint8_t *b = (uint8_t *)x.region;
	uint32_t mxcsr;
	uint16_t fcw;

	(void)state;
	memset(&x, 0xa5, sizeof(x));
	memset(b + 512, 0, 64);             /* header: nothing in use */
	memset(b + 28, 0, 4);               /* MXCSR_MASK: 0xffff */
	b[28] = b[29] = 0xff;
	b[576] = 0x77;                      /* the first byte past the header (AVX state) */
	f.fcw = 0x37f;
	f.fsw = 0x1234;
	f.ftwx = 0x81;
	f.last_opcode = 0x55;
	f.last_ip = 0x1122334455667788ULL;
	f.last_dp = 0x99aabbccddeeff00ULL;
	f.mxcsr = 0x9fc0;
	for (int i = 0; i < 8; i++)
		f.fpr[i][0] = (uint8_t)(i + 1);
	for (int i = 0; i < 16; i++)
		f.xmm[i][15] = (uint8_t)(0x10 + i);
	emu_fpu_to_xsave(&f, &x);
	memcpy(&fcw, b, 2);
	memcpy(&mxcsr, b + 24, 4);
	assert_int_equal(fcw, 0x37f);
	assert_int_equal(b[4], 0x81);
	assert_int_equal(mxcsr, 0x9fc0);
	assert_int_equal(b[32], 1);        /* ST0 */
	assert_int_equal(b[32 + 7 * 16], 8);
	assert_int_equal(b[160 + 15], 0x10); /* XMM0's top byte */
	assert_int_equal(b[160 + 15 * 16 + 15], 0x1f);
	assert_int_equal(b[28], 0xff);     /* MXCSR_MASK: KVM's, kept */
	assert_int_equal(b[30], 0);
	assert_int_equal(b[576], 0x77);
	/* Marked in use, so that XRSTOR loads them and does not zero them. */
	assert_int_equal(xstate_bv(&x), EMU_XSAVE_X87 | EMU_XSAVE_SSE);
	y = x;
	emu_fpu_from_xsave(&y, &g);
	assert_memory_equal(&g, &f, sizeof(f));
}

/* Other components' XSTATE_BV bits stay as KVM had them. */
static void test_keeps_other_components(void **state)
{
	struct kvm_xsave x;
	struct kvm_fpu f = { .fcw = 0x37f, .mxcsr = 0x1f80 };
	uint64_t bv = 0x4 | 0x200; /* AVX, PKRU */

	(void)state;
	memset(&x, 0, sizeof(x));
	memcpy((uint8_t *)x.region + 512, &bv, 8);
	emu_fpu_to_xsave(&f, &x);
	assert_int_equal(xstate_bv(&x), bv | EMU_XSAVE_X87 | EMU_XSAVE_SSE);
}

/* MXCSR goes in with the bits MXCSR_MASK allows only (KVM refuses the image otherwise); 0 stands for 0xffbf. */
static void test_mxcsr_mask(void **state)
{
	struct kvm_xsave x;
	struct kvm_fpu f = { .mxcsr = 0x1ffc0 }; /* DAZ (bit 6) and a reserved bit 16 */
	uint32_t mask = 0xffff, mxcsr;

	(void)state;
	memset(&x, 0, sizeof(x));
	memcpy((uint8_t *)x.region + 28, &mask, 4);
	emu_fpu_to_xsave(&f, &x);
	memcpy(&mxcsr, (uint8_t *)x.region + 24, 4);
	assert_int_equal(mxcsr, 0xffc0);
	memset(&x, 0, sizeof(x));
	emu_fpu_to_xsave(&f, &x);
	memcpy(&mxcsr, (uint8_t *)x.region + 24, 4);
	assert_int_equal(mxcsr, 0xff80);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_keeps_other_components),
		cmocka_unit_test(test_mxcsr_mask),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
