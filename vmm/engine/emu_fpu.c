// SPDX-License-Identifier: MIT
/* The x87/SSE state as KVM's XSAVE image holds it (emu_fpu.h). */
#include "emu_fpu.h"

#include <stdint.h>
#include <string.h>

/* FXSAVE's layout, the first 512 bytes of an XSAVE image (Intel SDM vol. 1, 10.5.1). */
#define FX_FCW 0
#define FX_FSW 2
#define FX_FTW 4 /* abridged: one bit a register */
#define FX_FOP 6
#define FX_FIP 8
#define FX_FDP 16
#define FX_MXCSR 24
#define FX_MXCSR_MASK 28
#define MXCSR_MASK_DEFAULT 0xffbfu /* what a zero MXCSR_MASK stands for (SDM 11.6.6) */
#define FX_ST 32   /* 8 registers, 16 bytes apart */
#define FX_XMM 160 /* 16 registers, 16 bytes each */
#define XSAVE_HEADER 512

void emu_fpu_from_xsave(const struct kvm_xsave *x, struct kvm_fpu *fpu)
{
	const uint8_t *b = (const uint8_t *)x->region;

	memset(fpu, 0, sizeof(*fpu));
	memcpy(&fpu->fcw, b + FX_FCW, 2);
	memcpy(&fpu->fsw, b + FX_FSW, 2);
	fpu->ftwx = b[FX_FTW];
	memcpy(&fpu->last_opcode, b + FX_FOP, 2);
	memcpy(&fpu->last_ip, b + FX_FIP, 8);
	memcpy(&fpu->last_dp, b + FX_FDP, 8);
	memcpy(&fpu->mxcsr, b + FX_MXCSR, 4);
	memcpy(fpu->fpr, b + FX_ST, sizeof(fpu->fpr));
	memcpy(fpu->xmm, b + FX_XMM, sizeof(fpu->xmm));
}

void emu_fpu_to_xsave(const struct kvm_fpu *fpu, struct kvm_xsave *x)
{
	uint8_t *b = (uint8_t *)x->region;
	uint32_t mxcsr = fpu->mxcsr, mask;
	uint64_t bv;

	memcpy(b + FX_FCW, &fpu->fcw, 2);
	memcpy(b + FX_FSW, &fpu->fsw, 2);
	b[FX_FTW] = fpu->ftwx;
	memcpy(b + FX_FOP, &fpu->last_opcode, 2);
	memcpy(b + FX_FIP, &fpu->last_ip, 8);
	memcpy(b + FX_FDP, &fpu->last_dp, 8);
	/*
	 * Only the bits this CPU's MXCSR has (KVM refuses the image otherwise):
	 * the guest cannot set others (LDMXCSR raises #GP), the emulator may.
	 */
	memcpy(&mask, b + FX_MXCSR_MASK, 4);
	mxcsr &= mask ? mask : MXCSR_MASK_DEFAULT;
	memcpy(b + FX_MXCSR, &mxcsr, 4);
	memcpy(b + FX_ST, fpu->fpr, sizeof(fpu->fpr));
	memcpy(b + FX_XMM, fpu->xmm, sizeof(fpu->xmm));
	/* In use: XRSTOR then loads them instead of their init values. */
	memcpy(&bv, b + XSAVE_HEADER, 8);
	bv |= EMU_XSAVE_X87 | EMU_XSAVE_SSE;
	memcpy(b + XSAVE_HEADER, &bv, 8);
}
