/* SPDX-License-Identifier: MIT */
/* A general register by its encoding number, for the instructions the VMM decodes itself. */
#ifndef KVMPROF_EMU_GPR_H
#define KVMPROF_EMU_GPR_H

#include <linux/kvm.h>

/* The 64-bit register with encoding number n (RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8-R15). */
static inline __u64 *emu_gpr(struct kvm_regs *r, unsigned int n)
{
	__u64 *const regs[16] = { &r->rax, &r->rcx, &r->rdx, &r->rbx, &r->rsp, &r->rbp, &r->rsi, &r->rdi,
				  &r->r8,  &r->r9,  &r->r10, &r->r11, &r->r12, &r->r13, &r->r14, &r->r15 };

	return regs[n & 15];
}

#endif
