// SPDX-License-Identifier: MIT
/* System instructions done within the engine's run (emu_sysinsn.h). */
#include <stdbool.h>

#include "emu_gpr.h"
#include "emu_sysinsn.h"

#define REX_W 8u
#define REX_R 4u
#define REX_B 1u
#define CR4_LA57 (1ULL << 12)
#define CR4_FSGSBASE (1ULL << 16)

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

struct fsgs_form {
	size_t len;
	uint8_t rex, modrm;
};

/* F3 REX? 0F AE modrm, mod 3 and /0-/3; false for anything else. */
static bool fsgs_form(const uint8_t *code, size_t n, struct fsgs_form *f)
{
	size_t i = 1;

	*f = (struct fsgs_form){ 0 };
	if (n < 1 || code[0] != 0xf3)
		return false;
	if (i < n && (code[i] & 0xf0) == 0x40)
		f->rex = code[i++];
	if (i + 3 > n || code[i] != 0x0f || code[i + 1] != 0xae || (code[i + 2] >> 6) != 3 ||
	    ((code[i + 2] >> 3) & 7) > 3)
		return false;
	f->modrm = code[i + 2];
	f->len = i + 3;
	return true;
}

enum emu_sysinsn emu_sysinsn_decode(const uint8_t *code, size_t n, size_t *len)
{
	struct sreg_form f;
	struct fsgs_form g;

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
	if (n >= 3 && code[0] == 0x0f && code[1] == 0x01 && (code[2] == 0xf8 || code[2] == 0xca || code[2] == 0xcb)) {
		*len = 3;
		return code[2] == 0xf8 ? EMU_SYS_SWAPGS : code[2] == 0xca ? EMU_SYS_CLAC : EMU_SYS_STAC;
	}
	if (fsgs_form(code, n, &g)) {
		*len = g.len;
		return EMU_SYS_FSGSBASE;
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
	reg = emu_gpr(r, dst);
	/* REX.W wins over 66 for the operand size; either way the selector is zero-extended past 16 bits. */
	if (f.size16 && !(f.rex & REX_W))
		*reg = (*reg & ~0xffffULL) | segs[sreg]->selector;
	else
		*reg = segs[sreg]->selector;
	r->rip += f.len;
	return true;
}

static bool canonical(uint64_t v, const struct kvm_sregs *s)
{
	unsigned int bits = (s->cr4 & CR4_LA57) ? 57 : 48;

	return (uint64_t)((int64_t)(v << (64 - bits)) >> (64 - bits)) == v;
}

bool emu_fsgsbase(const uint8_t *code, size_t n, struct kvm_sregs *s, struct kvm_regs *r)
{
	struct fsgs_form f;
	unsigned int op;
	__u64 *reg, *base;
	bool w;

	if (!fsgs_form(code, n, &f) || !(s->cr4 & CR4_FSGSBASE))
		return false;
	op = (f.modrm >> 3) & 7; /* 0 RDFSBASE, 1 RDGSBASE, 2 WRFSBASE, 3 WRGSBASE */
	w = (f.rex & REX_W) != 0;
	reg = emu_gpr(r, (f.modrm & 7) | ((f.rex & REX_B) ? 8 : 0));
	base = (op & 1) ? &s->gs.base : &s->fs.base;
	if (op < 2) {
		*reg = w ? *base : (uint32_t)*base;
	} else {
		uint64_t v = w ? *reg : (uint32_t)*reg;

		if (!canonical(v, s))
			return false;
		*base = v;
	}
	r->rip += f.len;
	return true;
}
