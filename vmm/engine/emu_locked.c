// SPDX-License-Identifier: MIT
#include "emu_locked.h"

#include <errno.h>
#include <string.h>

#include "emu_gpr.h"

#define REX_W 8u
#define REX_R 4u
#define REX_X 2u
#define REX_B 1u
/* CF, PF, AF, ZF, SF, OF: what these instructions write, and read (ADC, SBB; INC and DEC keep CF). */
#define FLAGS_ARITH 0x8d5ULL

static uint64_t gpr_value(const struct kvm_regs *r, int n)
{
	return *emu_gpr((struct kvm_regs *)r, n);
}

static uint64_t size_mask(unsigned int size)
{
	return size >= 8 ? ~0ULL : (1ULL << (size * 8)) - 1;
}

/* The ModRM memory operand at code[*i..n): base, index, scale, displacement. */
static int decode_address(const uint8_t *code, size_t n, size_t *i, uint8_t modrm, uint8_t rex, struct emu_locked *out)
{
	unsigned int mod = modrm >> 6, rm = modrm & 7;
	bool disp32 = mod == 2;

	if (mod == 3)
		return -EINVAL; /* a register destination: #UD with LOCK */
	if (rm == 4) {
		uint8_t sib;

		if (*i >= n)
			return -EINVAL;
		sib = code[(*i)++];
		out->scale = (uint8_t)(1u << (sib >> 6));
		out->index = (int)(((rex & REX_X) ? 8u : 0u) | ((sib >> 3) & 7u));
		if (out->index == 4)
			out->index = -1; /* no index (R12 with REX.X is one) */
		if ((sib & 7) == 5 && mod == 0)
			disp32 = true; /* no base */
		else
			out->base = (int)(((rex & REX_B) ? 8u : 0u) | (sib & 7u));
	} else if (rm == 5 && mod == 0) {
		out->rip_relative = true;
		disp32 = true;
	} else {
		out->base = (int)(((rex & REX_B) ? 8u : 0u) | rm);
	}
	if (mod == 1) {
		if (*i >= n)
			return -EINVAL;
		out->disp = (int8_t)code[(*i)++];
	} else if (disp32) {
		int32_t d;

		if (*i + 4 > n)
			return -EINVAL;
		memcpy(&d, code + *i, 4);
		*i += 4;
		out->disp = d;
	}
	return 0;
}

int emu_locked_decode(const uint8_t *code, size_t n, struct emu_locked *out)
{
	size_t i = 0;
	bool lock = false, opsize16 = false, byte = false, two = false, reg_operand = false;
	unsigned int imm_size = 0, nseg = 0;
	uint8_t rex = 0, op, modrm, ext;

	memset(out, 0, sizeof(*out));
	out->reg = out->base = out->index = -1;
	if (n > 15)
		n = 15;
	for (; i < n; i++) {
		uint8_t b = code[i];

		if (b == 0xf0)
			lock = true;
		else if (b == 0x66)
			opsize16 = true;
		else if (b == 0x64 || b == 0x65 || b == 0x2e || b == 0x36 || b == 0x3e || b == 0x26) {
			out->seg = b == 0x64 ? 4 : b == 0x65 ? 5 : 0; /* CS, SS, DS, ES: no base in 64-bit mode */
			nseg++;
		} else if (b == 0x67 || b == 0xf2 || b == 0xf3)
			return -EINVAL; /* 32-bit addressing; REP, or XACQUIRE/XRELEASE */
		else
			break;
	}
	if (nseg > 1)
		return -EINVAL;
	if (i < n && (code[i] & 0xf0) == 0x40)
		rex = code[i++];
	if (i >= n)
		return -EINVAL;
	op = code[i++];
	if (op == 0x0f) {
		if (i >= n)
			return -EINVAL;
		two = true;
		op = code[i++];
	}
	if (i >= n)
		return -EINVAL;
	modrm = code[i++];
	ext = (modrm >> 3) & 7;
	if (!two && op < 0x38 && (op & 7) <= 1) {
		out->op = (enum emu_locked_op)(op >> 3); /* ADD, OR, ADC, SBB, AND, SUB, XOR r/m, reg */
		byte = !(op & 1);
		reg_operand = true;
	} else if (!two && (op == 0x80 || op == 0x81 || op == 0x83) && ext != 7) {
		out->op = (enum emu_locked_op)ext;
		byte = op == 0x80;
		imm_size = op == 0x81 ? (opsize16 ? 2 : 4) : 1;
	} else if (!two && (op == 0x86 || op == 0x87)) {
		out->op = LOCKED_XCHG;
		byte = op == 0x86;
		reg_operand = true;
	} else if (!two && (op == 0xf6 || op == 0xf7) && (ext == 2 || ext == 3)) {
		out->op = ext == 2 ? LOCKED_NOT : LOCKED_NEG;
		byte = op == 0xf6;
	} else if (!two && (op == 0xfe || op == 0xff) && ext <= 1) {
		out->op = ext == 0 ? LOCKED_INC : LOCKED_DEC;
		byte = op == 0xfe;
	} else if (two && (op == 0xb0 || op == 0xb1)) {
		out->op = LOCKED_CMPXCHG;
		byte = op == 0xb0;
		reg_operand = true;
	} else if (two && (op == 0xc0 || op == 0xc1)) {
		out->op = LOCKED_XADD;
		byte = op == 0xc0;
		reg_operand = true;
	} else if (two && op == 0xc7 && ext == 1 && !opsize16) {
		out->op = LOCKED_CMPXCHG2;
	} else if (two && (op == 0xab || op == 0xb3 || op == 0xbb)) {
		out->op = op == 0xab ? LOCKED_BTS : op == 0xb3 ? LOCKED_BTR : LOCKED_BTC;
		reg_operand = true;
	} else if (two && op == 0xba && ext >= 5) {
		out->op = ext == 5 ? LOCKED_BTS : ext == 6 ? LOCKED_BTR : LOCKED_BTC;
		imm_size = 1;
	} else {
		return -EINVAL;
	}
	/* XCHG with memory is locked without the prefix; the rest are only with it. */
	if (!lock && out->op != LOCKED_XCHG)
		return -EINVAL;
	if (decode_address(code, n, &i, modrm, rex, out))
		return -EINVAL;
	if (out->op == LOCKED_CMPXCHG2)
		out->size = (rex & REX_W) ? 16 : 8;
	else
		out->size = byte ? 1 : (rex & REX_W) ? 8 : opsize16 ? 2 : 4;
	if (reg_operand) {
		out->reg = (int)(((rex & REX_R) ? 8u : 0u) | ext);
		if (byte && !rex && ext >= 4) {
			out->high8 = true; /* AH, CH, DH, BH */
			out->reg = (int)ext - 4;
		}
	}
	if (imm_size) {
		if (i + imm_size > n)
			return -EINVAL;
		if (imm_size == 1)
			out->imm = (uint64_t)(int64_t)(int8_t)code[i];
		else if (imm_size == 2)
			out->imm = (uint64_t)(int64_t)(int16_t)(code[i] | code[i + 1] << 8);
		else {
			int32_t v;

			memcpy(&v, code + i, 4);
			out->imm = (uint64_t)(int64_t)v;
		}
		i += imm_size;
		out->has_imm = true;
		if (out->op == LOCKED_BTS || out->op == LOCKED_BTR || out->op == LOCKED_BTC)
			out->imm &= out->size * 8u - 1; /* an immediate bit offset stays in the operand */
		else
			out->imm &= size_mask(out->size);
	}
	out->len = (uint8_t)i;
	return 0;
}

static bool is_bit_op(enum emu_locked_op op)
{
	return op == LOCKED_BTS || op == LOCKED_BTR || op == LOCKED_BTC;
}

uint64_t emu_locked_address(const struct emu_locked *in, const struct kvm_regs *r, uint64_t rip, uint64_t fs_base,
			    uint64_t gs_base)
{
	uint64_t a = emu_operand_address(r, in->base, in->index, in->scale, in->disp, in->rip_relative ? rip + in->len : 0,
					 in->seg, fs_base, gs_base);

	if (is_bit_op(in->op) && !in->has_imm) {
		/* A signed bit offset: the operand-sized piece holding the bit, before or after the operand. */
		uint64_t v = gpr_value(r, in->reg);
		int64_t off = in->size == 2 ? (int16_t)v : in->size == 4 ? (int32_t)v : (int64_t)v;
		unsigned int shift = in->size == 2 ? 4 : in->size == 4 ? 5 : 6;

		a += (uint64_t)((off >> shift) * (int64_t)in->size);
	}
	return a;
}

/*
 * One locked instruction on the host, between the guest's arithmetic flags
 * loaded with POPFQ and the result's read with PUSHFQ (below the red zone,
 * which the compiler may be using). fl carries the flags in and out.
 */
#define HOST_LOCKED(text, ...)                                                                     \
	__asm__ volatile("lea -128(%%rsp), %%rsp\n\t"                                              \
			 "pushq %[fl]\n\t"                                                         \
			 "popfq\n\t" text "\n\t"                                                   \
			 "pushfq\n\t"                                                              \
			 "popq %[fl]\n\t"                                                          \
			 "lea 128(%%rsp), %%rsp"                                                   \
			 : [fl] "+r"(fl), __VA_ARGS__)

/* The four operand sizes of one instruction with a register source: mnemonic without its suffix. */
#define SIZED_SRC(mn)                                                                              \
	switch (in->size) {                                                                        \
	case 1: HOST_LOCKED(mn "b %b[src], (%[p])", [src] "+r"(src) : [p] "r"(mem) : "cc", "memory"); break; \
	case 2: HOST_LOCKED(mn "w %w[src], (%[p])", [src] "+r"(src) : [p] "r"(mem) : "cc", "memory"); break; \
	case 4: HOST_LOCKED(mn "l %k[src], (%[p])", [src] "+r"(src) : [p] "r"(mem) : "cc", "memory"); break; \
	default: HOST_LOCKED(mn "q %q[src], (%[p])", [src] "+r"(src) : [p] "r"(mem) : "cc", "memory"); break; \
	}

/* The bit instructions have no byte form. */
#define SIZED_BIT(mn)                                                                              \
	switch (in->size) {                                                                        \
	case 2: HOST_LOCKED(mn "w %w[src], (%[p])", [src] "+r"(src) : [p] "r"(mem) : "cc", "memory"); break; \
	case 4: HOST_LOCKED(mn "l %k[src], (%[p])", [src] "+r"(src) : [p] "r"(mem) : "cc", "memory"); break; \
	default: HOST_LOCKED(mn "q %q[src], (%[p])", [src] "+r"(src) : [p] "r"(mem) : "cc", "memory"); break; \
	}

#define SIZED_UNARY(mn)                                                                            \
	switch (in->size) {                                                                        \
	case 1: HOST_LOCKED(mn "b (%[p])", "=m"(dummy) : [p] "r"(mem) : "cc", "memory"); break;  \
	case 2: HOST_LOCKED(mn "w (%[p])", "=m"(dummy) : [p] "r"(mem) : "cc", "memory"); break;  \
	case 4: HOST_LOCKED(mn "l (%[p])", "=m"(dummy) : [p] "r"(mem) : "cc", "memory"); break;  \
	default: HOST_LOCKED(mn "q (%[p])", "=m"(dummy) : [p] "r"(mem) : "cc", "memory"); break; \
	}

#define SIZED_CMPXCHG()                                                                            \
	switch (in->size) {                                                                        \
	case 1: HOST_LOCKED("lock cmpxchgb %b[src], (%[p])", [acc] "+a"(acc) : [src] "r"(src), [p] "r"(mem) : "cc", "memory"); break; \
	case 2: HOST_LOCKED("lock cmpxchgw %w[src], (%[p])", [acc] "+a"(acc) : [src] "r"(src), [p] "r"(mem) : "cc", "memory"); break; \
	case 4: HOST_LOCKED("lock cmpxchgl %k[src], (%[p])", [acc] "+a"(acc) : [src] "r"(src), [p] "r"(mem) : "cc", "memory"); break; \
	default: HOST_LOCKED("lock cmpxchgq %q[src], (%[p])", [acc] "+a"(acc) : [src] "r"(src), [p] "r"(mem) : "cc", "memory"); break; \
	}

void emu_locked_exec(const struct emu_locked *in, void *mem, struct kvm_regs *r)
{
	uint64_t fl = 0x202 | (r->rflags & FLAGS_ARITH), src = 0, acc = r->rax, dummy = 0;
	__u64 *reg = in->reg >= 0 ? emu_gpr(r, in->reg) : NULL;
	bool writes_reg = false;

	if (in->has_imm)
		src = in->imm;
	else if (reg)
		src = in->high8 ? *reg >> 8 : *reg;
	if (is_bit_op(in->op))
		src &= in->size * 8u - 1; /* the address already points at the piece holding the bit */
	switch (in->op) {
	case LOCKED_ADD: SIZED_SRC("lock add"); break;
	case LOCKED_OR: SIZED_SRC("lock or"); break;
	case LOCKED_ADC: SIZED_SRC("lock adc"); break;
	case LOCKED_SBB: SIZED_SRC("lock sbb"); break;
	case LOCKED_AND: SIZED_SRC("lock and"); break;
	case LOCKED_SUB: SIZED_SRC("lock sub"); break;
	case LOCKED_XOR: SIZED_SRC("lock xor"); break;
	case LOCKED_NOT: SIZED_UNARY("lock not"); break;
	case LOCKED_NEG: SIZED_UNARY("lock neg"); break;
	case LOCKED_INC: SIZED_UNARY("lock inc"); break;
	case LOCKED_DEC: SIZED_UNARY("lock dec"); break;
	case LOCKED_XADD: SIZED_SRC("lock xadd"); writes_reg = true; break;
	case LOCKED_XCHG: SIZED_SRC("xchg"); writes_reg = true; break;
	case LOCKED_CMPXCHG:
		SIZED_CMPXCHG();
		r->rax = acc;
		break;
	case LOCKED_CMPXCHG2: {
		uint64_t rdx = r->rdx;

		if (in->size == 16)
			HOST_LOCKED("lock cmpxchg16b (%[p])", "+a"(acc), "+d"(rdx)
				    : "b"(r->rbx), "c"(r->rcx), [p] "r"(mem) : "cc", "memory");
		else
			HOST_LOCKED("lock cmpxchg8b (%[p])", "+a"(acc), "+d"(rdx)
				    : "b"(r->rbx), "c"(r->rcx), [p] "r"(mem) : "cc", "memory");
		r->rax = acc;
		r->rdx = rdx;
		break;
	}
	case LOCKED_BTS: SIZED_BIT("lock bts"); break;
	case LOCKED_BTR: SIZED_BIT("lock btr"); break;
	case LOCKED_BTC: SIZED_BIT("lock btc"); break;
	default:
		return;
	}
	(void)dummy;
	if (writes_reg) {
		/* The host wrote src as the CPU writes the guest's register: a 32-bit write clears the top half. */
		if (in->high8)
			*reg = (*reg & ~0xff00ULL) | (src & 0xff) << 8;
		else
			*reg = src;
	}
	r->rflags = (r->rflags & ~FLAGS_ARITH) | (fl & FLAGS_ARITH);
}
