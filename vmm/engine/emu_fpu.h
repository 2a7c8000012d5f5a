/* SPDX-License-Identifier: MIT */
/*
 * The x87/SSE state between KVM and the engine, through KVM's XSAVE image
 * (KVM_GET_XSAVE / KVM_SET_XSAVE, standard format) rather than
 * KVM_GET_FPU / KVM_SET_FPU. Those two copy the legacy FXSAVE area of
 * KVM's buffer as it lies, without its XSTATE_BV: a component in its init
 * state (the x87 or SSE registers all zero, which XSAVE records only as a
 * clear XSTATE_BV bit) reads back as whatever the area held before, and a
 * value written there is ignored by the XRSTOR that loads the guest's
 * state, which zeroes the component (and KVM_SET_FPU, as read, copies no
 * MXCSR into the buffer).
 * KVM_GET_XSAVE gives init components their init values, and the engine
 * writes the area back with both components marked in use.
 */
#ifndef KVMPROF_EMU_FPU_H
#define KVMPROF_EMU_FPU_H

#include <linux/kvm.h>

#define EMU_XSAVE_X87 (1ULL << 0)
#define EMU_XSAVE_SSE (1ULL << 1)

/* The legacy area of an XSAVE image (its first 512 bytes) as struct kvm_fpu. */
void emu_fpu_from_xsave(const struct kvm_xsave *x, struct kvm_fpu *fpu);

/*
 * fpu into the image's legacy area, MXCSR included (to the bits its
 * MXCSR_MASK allows), with XSTATE_BV's x87 and SSE bits set.
 */
void emu_fpu_to_xsave(const struct kvm_fpu *fpu, struct kvm_xsave *x);

#endif
