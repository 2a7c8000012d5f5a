// SPDX-License-Identifier: MIT
/* System instructions done within the engine's run (emu_sysinsn.h). */
#include <stdbool.h>

#include "emu_sysinsn.h"

#define REX_W 8u
#define REX_R 4u
#define REX_B 1u

/* The 64-bit register with encoding number n (RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8-R15). */
static __u64 *gpr(struct kvm_regs *r, unsigned int n)
{
	__u64 *const regs[16] = { &r->rax, &r->rcx, &r->rdx, &r->rbx, &r->rsp, &r->rbp, &r->rsi, &r->rdi,
				  &r->r8,  &r->r9,  &r->r10, &r->r11, &r->r12, &r->r13, &r->r14, &r->r15 };

	return regs[n & 15];
}

struct sreg_form {
	size_t len;
	bool size16;
	uint8_t rex, modrm;
};

/* 66? REX? 8C modrm with mod 3; false for anything else. */
static bool sreg_form(const uint8_t *code, size_t n, struct sreg_form *f)
{
	size_t i = 0;

	*f = (struct sreg_form){ 0 };
	if (i < n && code[i] == 0x66) {
		f->size16 = true;
		i++;
	}
	if (i < n && (code[i] & 0xf0) == 0x40)
		f->rex = code[i++];
	if (i + 2 > n || code[i] != 0x8c || (code[i + 1] >> 6) != 3)
		return false;
	f->modrm = code[i + 1];
	f->len = i + 2;
	return true;
}

enum emu_sysinsn emu_sysinsn_decode(const uint8_t *code, size_t n, size_t *len)
{
	struct sreg_form f;

	*len = 0;
	if (!n)
		return EMU_SYS_NONE;
	if (code[0] == 0xfa || code[0] == 0xfb) {
		*len = 1;
		return code[0] == 0xfa ? EMU_SYS_CLI : EMU_SYS_STI;
	}
	if (sreg_form(code, n, &f)) {
		*len = f.len;
		return EMU_SYS_MOV_SREG;
	}
	return EMU_SYS_NONE;
}

bool emu_mov_from_sreg(const uint8_t *code, size_t n, const struct kvm_sregs *s, struct kvm_regs *r)
{
	const struct kvm_segment *const segs[6] = { &s->es, &s->cs, &s->ss, &s->ds, &s->fs, &s->gs };
	unsigned int sreg, dst;
	struct sreg_form f;
	__u64 *reg;

	if (!sreg_form(code, n, &f) || (f.rex & REX_R))
		return false;
	sreg = (f.modrm >> 3) & 7;
	if (sreg > 5)
		return false;
	dst = (f.modrm & 7) | ((f.rex & REX_B) ? 8 : 0);
	reg = gpr(r, dst);
	/* REX.W wins over 66 for the operand size; either way the selector is zero-extended past 16 bits. */
	if (f.size16 && !(f.rex & REX_W))
		*reg = (*reg & ~0xffffULL) | segs[sreg]->selector;
	else
		*reg = segs[sreg]->selector;
	r->rip += f.len;
	return true;
}
