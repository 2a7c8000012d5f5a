/* SPDX-License-Identifier: MIT */
/* A general register by its encoding number, for the instructions the VMM decodes itself. */
#ifndef KVMPROF_EMU_GPR_H
#define KVMPROF_EMU_GPR_H

#include <linux/kvm.h>
#include <stdint.h>

/* The 64-bit register with encoding number n (RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8-R15). */
static inline __u64 *emu_gpr(struct kvm_regs *r, unsigned int n)
{
	__u64 *const regs[16] = { &r->rax, &r->rcx, &r->rdx, &r->rbx, &r->rsp, &r->rbp, &r->rsi, &r->rdi,
				  &r->r8,  &r->r9,  &r->r10, &r->r11, &r->r12, &r->r13, &r->r14, &r->r15 };

	return regs[n & 15];
}

/*
 * A 64-bit mode memory operand's address: [base + index * scale + disp]
 * (base and index encoding numbers, -1 for none), RIP-relative from
 * next_rip if that is not 0, plus the FS or GS base for seg 4 or 5.
 */
static inline uint64_t emu_operand_address(const struct kvm_regs *r, int base, int index, unsigned int scale,
					   int64_t disp, uint64_t next_rip, int seg, uint64_t fs_base, uint64_t gs_base)
{
	uint64_t a = (uint64_t)disp + next_rip;

	if (base >= 0)
		a += *emu_gpr((struct kvm_regs *)r, (unsigned int)base);
	if (index >= 0)
		a += *emu_gpr((struct kvm_regs *)r, (unsigned int)index) * scale;
	if (seg == 4)
		a += fs_base;
	else if (seg == 5)
		a += gs_base;
	return a;
}

#endif
