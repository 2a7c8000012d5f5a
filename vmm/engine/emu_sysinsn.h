/* SPDX-License-Identifier: MIT */
/*
 * System instructions the VMM does within the engine's run from their bytes
 * and the vCPU's registers, where the CPU's rule needs nothing more: they
 * would otherwise each end the run and cost a KVM step (a Linux kernel runs
 * them at every context switch and interrupt-enable). Pure code over bytes
 * and registers: the unit tests drive it; engine_guest.c decides when.
 */
#ifndef KVMPROF_EMU_SYSINSN_H
#define KVMPROF_EMU_SYSINSN_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum emu_sysinsn {
	EMU_SYS_NONE,     /* none of these: KVM runs it */
	EMU_SYS_CLI,      /* FA */
	EMU_SYS_STI,      /* FB */
	EMU_SYS_MOV_SREG, /* 8C /r with a register destination: MOV r16/r32/r64, Sreg */
	EMU_SYS_SWAPGS,   /* 0F 01 F8 */
	EMU_SYS_FSGSBASE, /* F3 REX? 0F AE /0-/3 with a register: RDFSBASE, RDGSBASE, WRFSBASE, WRGSBASE */
	EMU_SYS_CLAC,     /* 0F 01 CA */
	EMU_SYS_STAC,     /* 0F 01 CB */
};

/* Which of the above code[0..n) begins with, and its length. */
enum emu_sysinsn emu_sysinsn_decode(const uint8_t *code, size_t n, size_t *len);

/*
 * MOV r, Sreg: the selector into the register, RIP past it. With an
 * operand-size prefix only the low 16 bits are written; otherwise the
 * selector is zero-extended to 64 bits (a 32-bit destination clears the
 * upper half, as every 64-bit write of a 32-bit register does). Returns
 * false, nothing changed, for any other form: a memory destination, a
 * segment number above 5 (#UD), REX.R, another prefix.
 */
bool emu_mov_from_sreg(const uint8_t *code, size_t n, const struct kvm_sregs *s, struct kvm_regs *r);

/*
 * RDFSBASE/RDGSBASE/WRFSBASE/WRGSBASE on the registers and the FS and GS
 * bases in s, RIP past it: 64 bits with REX.W, else 32 (a read zero-
 * extended, a write's base zero-extended). False, nothing changed, where
 * the CPU raises #UD (CR4.FSGSBASE clear) or #GP (a non-canonical base
 * written), and for any other form.
 */
bool emu_fsgsbase(const uint8_t *code, size_t n, struct kvm_sregs *s, struct kvm_regs *r);

#endif
