// SPDX-License-Identifier: MIT
#include "emu_decode.h"

#include <capstone/capstone.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct emu_decoder {
	csh cs;
	cs_insn *insn;
};

const char *emu_handback_name(enum emu_handback why)
{
	static const char *const names[EMU_HB_COUNT] = {
		[EMU_HB_NONE] = "none",
		[EMU_HB_SYSTEM] = "system instruction",
		[EMU_HB_HOST_VALUE] = "value from the host CPU",
		[EMU_HB_UNMODELED] = "not modelled by the emulator",
		[EMU_HB_LOCKED] = "locked instruction on SMP",
		[EMU_HB_UNDECODABLE] = "undecodable bytes",
		[EMU_HB_FAULT] = "page fault or MMIO",
		[EMU_HB_MODE] = "not 64-bit mode, TF/AC set, or EFER.FFXSR",
		[EMU_HB_REFUSED] = "refused by the emulator",
	};

	return why < EMU_HB_COUNT ? names[why] : "?";
}

int emu_decoder_open(struct emu_decoder **out)
{
	struct emu_decoder *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &d->cs) != CS_ERR_OK) {
		free(d);
		return -EINVAL;
	}
	/* Operands and groups: segment and control-register operands, AVX groups. */
	cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
	d->insn = cs_malloc(d->cs);
	if (!d->insn) {
		cs_close(&d->cs);
		free(d);
		return -ENOMEM;
	}
	*out = d;
	return 0;
}

void emu_decoder_close(struct emu_decoder *d)
{
	if (!d)
		return;
	cs_free(d->insn, 1);
	cs_close(&d->cs);
	free(d);
}

static bool is_system_reg(x86_reg r)
{
	return (r >= X86_REG_CR0 && r <= X86_REG_CR15) || (r >= X86_REG_DR0 && r <= X86_REG_DR15) ||
	       r == X86_REG_CS || r == X86_REG_DS || r == X86_REG_ES || r == X86_REG_FS || r == X86_REG_GS ||
	       r == X86_REG_SS;
}

/* MOV to or from a control, debug or segment register; POP of a segment register. */
static bool touches_system_reg(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	if (in->id != X86_INS_MOV && in->id != X86_INS_POP && in->id != X86_INS_PUSH)
		return false;
	for (uint8_t i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_REG && is_system_reg(x->operands[i].reg))
			return true;
	return false;
}

/*
 * Whether the instruction at code is VEX-, EVEX- or XOP-encoded (in 64-bit
 * mode C4/C5, 62 and 8F with a non-zero ModRM.reg after the legacy
 * prefixes and REX). Unicorn 2.0.1 gets many of them wrong instead of
 * refusing them, so none runs in it, whatever Capstone's groups say:
 * - a VEX.128 vector instruction runs as its legacy SSE form, ignoring
 *   the extra source and leaving the destination's upper half as it was
 *   (VPXOR xmm1, xmm0, xmm0 gave xmm1 ^ xmm0, not 0);
 * - the BMI1/BMI2 ones compute wrong results or flags: BZHI, PDEP, PEXT,
 *   32-bit BEXTR, BLSI's CF. glibc's AVX2 string functions mask their
 *   matches with BZHI, so a Linux guest's programs in the engine got
 *   wrong string lengths and comparisons;
 * - AVX-512BW's VMOVDQU8 ran as something else, and Capstone 4 puts it
 *   and the others glibc's EVEX string functions use (VPMINUB, VPCMPEQB,
 *   VPTESTNMD) in no AVX group.
 * Found by running each instruction of libc, ld.so, busybox and perf
 * both in Unicorn and on the host CPU and comparing registers, flags and
 * memory. KVM runs them instead.
 */
static bool vex_encoded(const uint8_t *code, size_t len)
{
	size_t i = 0;

	while (i < len && i < 14) {
		switch (code[i]) {
		case 0x66: case 0x67: case 0xf2: case 0xf3: case 0xf0:
		case 0x2e: case 0x36: case 0x3e: case 0x26: case 0x64: case 0x65:
			i++;
			continue;
		default:
			break;
		}
		break;
	}
	if (i < len && (code[i] & 0xf0) == 0x40)
		i++; /* REX: a VEX prefix after it is #UD, which KVM raises just as well */
	if (i >= len)
		return false;
	if (code[i] == 0xc4 || code[i] == 0xc5 || code[i] == 0x62)
		return true;
	return code[i] == 0x8f && i + 1 < len && ((code[i + 1] >> 3) & 7) != 0; /* POP r/m64 is 8F /0 */
}

/*
 * PCMPESTRI/M and PCMPISTRI/M in their "equal ordered" mode (substring
 * search, imm8 bits 3:2 = 11): Unicorn 2.0.1's index and mask differ from
 * the CPU's where a match runs into the end of a string (ECX 16 for 15,
 * CF clear for set), found as vex_encoded()'s were. The other modes agree.
 */
static bool equal_ordered_string_compare(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	if (in->id != X86_INS_PCMPESTRI && in->id != X86_INS_PCMPESTRM && in->id != X86_INS_PCMPISTRI &&
	    in->id != X86_INS_PCMPISTRM)
		return false;
	for (uint8_t i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_IMM)
			return (x->operands[i].imm & 0x0c) == 0x0c;
	return true;
}

static enum emu_handback classify(csh cs, const cs_insn *in, bool smp)
{
	const cs_x86 *x = &in->detail->x86;

	switch (in->id) {
	case X86_INS_CLI: case X86_INS_STI: case X86_INS_HLT:
	case X86_INS_IN: case X86_INS_INSB: case X86_INS_INSW: case X86_INS_INSD:
	case X86_INS_OUT: case X86_INS_OUTSB: case X86_INS_OUTSW: case X86_INS_OUTSD:
	case X86_INS_POPF: case X86_INS_POPFD: case X86_INS_POPFQ:
	case X86_INS_IRET: case X86_INS_IRETD: case X86_INS_IRETQ:
	case X86_INS_INT: case X86_INS_INT1: case X86_INS_INT3: case X86_INS_INTO:
	case X86_INS_UD0: case X86_INS_UD2: case X86_INS_UD2B:
	case X86_INS_SYSCALL: case X86_INS_SYSRET: case X86_INS_SYSENTER: case X86_INS_SYSEXIT:
	case X86_INS_LJMP: case X86_INS_LCALL: case X86_INS_RETF: case X86_INS_RETFQ:
	case X86_INS_RDMSR: case X86_INS_WRMSR: case X86_INS_RDPMC:
	case X86_INS_LGDT: case X86_INS_LIDT: case X86_INS_LLDT: case X86_INS_LTR:
	case X86_INS_SGDT: case X86_INS_SIDT: case X86_INS_SLDT: case X86_INS_STR:
	case X86_INS_SMSW: case X86_INS_LMSW: case X86_INS_CLTS:
	case X86_INS_INVLPG: case X86_INS_INVLPGA: case X86_INS_INVPCID: case X86_INS_WBINVD: case X86_INS_INVD:
	case X86_INS_SWAPGS: case X86_INS_RDFSBASE: case X86_INS_RDGSBASE: case X86_INS_WRFSBASE:
	case X86_INS_WRGSBASE: case X86_INS_MONITOR: case X86_INS_MWAIT:
	case X86_INS_LAR: case X86_INS_LSL: case X86_INS_VERR: case X86_INS_VERW:
	case X86_INS_LDS: case X86_INS_LES: case X86_INS_LFS: case X86_INS_LGS: case X86_INS_LSS:
	case X86_INS_CLAC: case X86_INS_STAC: case X86_INS_RSM: case X86_INS_SKINIT:
	case X86_INS_XSETBV:
		return EMU_HB_SYSTEM;
	case X86_INS_CPUID: case X86_INS_RDTSC: case X86_INS_RDTSCP: case X86_INS_RDRAND: case X86_INS_RDSEED:
	case X86_INS_XGETBV:
		return EMU_HB_HOST_VALUE;
	case X86_INS_XSAVE: case X86_INS_XSAVE64: case X86_INS_XSAVEC: case X86_INS_XSAVEC64:
	case X86_INS_XSAVEOPT: case X86_INS_XSAVEOPT64: case X86_INS_XSAVES: case X86_INS_XSAVES64:
	case X86_INS_XRSTOR: case X86_INS_XRSTOR64: case X86_INS_XRSTORS: case X86_INS_XRSTORS64:
	case X86_INS_XBEGIN: case X86_INS_XEND: case X86_INS_XABORT: case X86_INS_XTEST:
	case X86_INS_ENCLS: case X86_INS_ENCLU:
	/*
	 * Their stores go through Unicorn helpers that go on past a refused
	 * one (emu_mem_operand), and, unlike those of emu_decode_helper_access,
	 * not over a span the CPU checks first: MASKMOV's bytes depend on the
	 * mask, ENTER's frame copy on its nesting level. Rare in 64-bit code.
	 */
	case X86_INS_MASKMOVQ: case X86_INS_MASKMOVDQU:
		return EMU_HB_UNMODELED;
	case X86_INS_ENTER:
		if (x->op_count == 2 && x->operands[1].type == X86_OP_IMM && (x->operands[1].imm & 0x1f))
			return EMU_HB_UNMODELED;
		break;
	default:
		break;
	}
	if (cs_insn_group(cs, in, X86_GRP_PRIVILEGE) || cs_insn_group(cs, in, X86_GRP_INT) ||
	    cs_insn_group(cs, in, X86_GRP_IRET) || cs_insn_group(cs, in, X86_GRP_VM) ||
	    cs_insn_group(cs, in, X86_GRP_FSGSBASE) || cs_insn_group(cs, in, X86_GRP_SMAP) ||
	    touches_system_reg(in))
		return EMU_HB_SYSTEM;
	if (vex_encoded(in->bytes, in->size) || equal_ordered_string_compare(in))
		return EMU_HB_UNMODELED;
	if (cs_insn_group(cs, in, X86_GRP_AVX) || cs_insn_group(cs, in, X86_GRP_AVX2) ||
	    cs_insn_group(cs, in, X86_GRP_AVX512) || cs_insn_group(cs, in, X86_GRP_FMA) ||
	    cs_insn_group(cs, in, X86_GRP_FMA4) || cs_insn_group(cs, in, X86_GRP_F16C) ||
	    cs_insn_group(cs, in, X86_GRP_XOP) || cs_insn_group(cs, in, X86_GRP_RTM) ||
	    cs_insn_group(cs, in, X86_GRP_SGX) || cs_insn_group(cs, in, X86_GRP_3DNOW))
		return EMU_HB_UNMODELED;
	if (smp) {
		bool mem_operand = false;

		for (uint8_t i = 0; i < x->op_count; i++)
			mem_operand |= x->operands[i].type == X86_OP_MEM;
		/* XCHG with memory is locked without the prefix. */
		if (x->prefix[0] == X86_PREFIX_LOCK || (in->id == X86_INS_XCHG && mem_operand))
			return EMU_HB_LOCKED;
	}
	return EMU_HB_NONE;
}

/*
 * RDPKRU (0f 01 ee) and WRPKRU (0f 01 ef), which Capstone 4 does not decode:
 * a Linux kernel with protection keys reads PKRU at every context switch.
 * RDPKRU's value is the vCPU's (KVM's); WRPKRU changes what ring 3 may
 * access. 0 if code is neither.
 */
static enum emu_handback pkru_insn(const uint8_t *code, size_t len)
{
	if (len < 3 || code[0] != 0x0f || code[1] != 0x01 || (code[2] != 0xee && code[2] != 0xef))
		return EMU_HB_NONE;
	return code[2] == 0xee ? EMU_HB_HOST_VALUE : EMU_HB_SYSTEM;
}

static enum emu_branch branch_kind(csh cs, const cs_insn *in)
{
	switch (in->id) {
	case X86_INS_JMP: case X86_INS_CALL: case X86_INS_RET:
		return EMU_BR_UNCOND;
	/* Capstone 4 puts LOOP in no JUMP group. */
	case X86_INS_LOOP: case X86_INS_LOOPE: case X86_INS_LOOPNE: case X86_INS_JRCXZ: case X86_INS_JECXZ:
		return EMU_BR_COND;
	default:
		break;
	}
	if (cs_insn_group(cs, in, X86_GRP_JUMP))
		return EMU_BR_COND; /* Jcc */
	return EMU_BR_NONE;
}

static bool is_rep_string(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	if (x->prefix[0] != X86_PREFIX_REP && x->prefix[0] != X86_PREFIX_REPNE)
		return false;
	switch (in->id) {
	case X86_INS_MOVSB: case X86_INS_MOVSW: case X86_INS_MOVSD: case X86_INS_MOVSQ:
	case X86_INS_STOSB: case X86_INS_STOSW: case X86_INS_STOSD: case X86_INS_STOSQ:
	case X86_INS_LODSB: case X86_INS_LODSW: case X86_INS_LODSD: case X86_INS_LODSQ:
	case X86_INS_SCASB: case X86_INS_SCASW: case X86_INS_SCASD: case X86_INS_SCASQ:
	case X86_INS_CMPSB: case X86_INS_CMPSW: case X86_INS_CMPSD: case X86_INS_CMPSQ:
		return true;
	default:
		return false;
	}
}

void emu_decode_one(struct emu_decoder *d, uint64_t addr, const uint8_t *code, size_t len, bool smp,
		    struct emu_insn_info *out)
{
	const uint8_t *p = code;
	size_t left = len;
	uint64_t pc = addr;
	const cs_x86 *x;

	memset(out, 0, sizeof(*out));
	out->vector = -1;
	out->handback = pkru_insn(code, len);
	if (out->handback != EMU_HB_NONE) {
		out->len = 3;
		out->flushes_tlb = code[2] == 0xef; /* WRPKRU: the engine's ring-3 mappings were made under the old keys */
		return;
	}
	if (!cs_disasm_iter(d->cs, &p, &left, &pc, d->insn)) {
		out->handback = EMU_HB_UNDECODABLE;
		out->vector = 6;
		return;
	}
	x = &d->insn->detail->x86;
	out->len = (uint8_t)d->insn->size;
	out->handback = classify(d->cs, d->insn, smp);
	out->branch = branch_kind(d->cs, d->insn);
	out->is_ret = d->insn->id == X86_INS_RET;
	out->is_iret = d->insn->id == X86_INS_IRETQ || d->insn->id == X86_INS_IRET || d->insn->id == X86_INS_IRETD;
	if (out->branch != EMU_BR_NONE && x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
		out->has_target = true;
		out->target = (uint64_t)x->operands[0].imm;
	}
	switch (d->insn->id) {
	case X86_INS_INVLPG: case X86_INS_INVLPGA: case X86_INS_INVPCID: case X86_INS_LMSW:
		out->flushes_tlb = true;
		break;
	case X86_INS_WRMSR:
		out->is_wrmsr = true;
		break;
	case X86_INS_MOV:
		out->flushes_tlb = x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
				   x->operands[0].reg >= X86_REG_CR0 && x->operands[0].reg <= X86_REG_CR15;
		out->keeps_global = out->flushes_tlb && x->operands[0].reg == X86_REG_CR3;
		break;
	case X86_INS_UD0: case X86_INS_UD2: case X86_INS_UD2B:
		out->vector = 6;
		break;
	case X86_INS_INT3:
		out->vector = 3;
		break;
	case X86_INS_INT:
		if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM)
			out->vector = (int)(x->operands[0].imm & 0xff);
		break;
	default:
		break;
	}
}

static bool vector_or_x87_reg(x86_reg r)
{
	return (r >= X86_REG_MM0 && r <= X86_REG_MM7) || (r >= X86_REG_ST0 && r <= X86_REG_ST7) ||
	       (r >= X86_REG_FP0 && r <= X86_REG_FP7) || (r >= X86_REG_XMM0 && r <= X86_REG_ZMM31);
}

/*
 * An instruction whose memory access, if it faults, leaves Unicorn 2.0.1's
 * RIP where an earlier instruction of the block put it: Unicorn stores RIP
 * before the accesses of the general-purpose instructions (its
 * gen_op_ld_v, gen_op_st_v), not before those of SSE, MMX and x87
 * instructions, FXSAVE/FXRSTOR, LDMXCSR/STMXCSR, CMPXCHG8B/16B or the
 * atomic ones (LOCK, XCHG), which load and store through other paths. A
 * fault there came back with the registers of the faulting instruction
 * and the RIP of an earlier one: the guest, resumed there, ran the
 * instructions between twice (a Linux guest's glibc crashed so, in the
 * SSE loop that fills its TLS).
 */
static bool unsynced_memory(csh cs, const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;
	bool mem = false, vec = false;

	switch (in->id) {
	case X86_INS_LEA: case X86_INS_NOP:
	case X86_INS_PREFETCH: case X86_INS_PREFETCHNTA: case X86_INS_PREFETCHT0: case X86_INS_PREFETCHT1:
	case X86_INS_PREFETCHT2: case X86_INS_PREFETCHW: case X86_INS_CLFLUSH: case X86_INS_CLFLUSHOPT:
		return false; /* an address, no access */
	default:
		break;
	}
	for (uint8_t i = 0; i < x->op_count; i++) {
		mem |= x->operands[i].type == X86_OP_MEM;
		vec |= x->operands[i].type == X86_OP_REG && vector_or_x87_reg(x->operands[i].reg);
	}
	if (!mem)
		return false;
	if (vec || x->prefix[0] == X86_PREFIX_LOCK)
		return true;
	switch (in->id) {
	case X86_INS_XCHG: case X86_INS_CMPXCHG8B: case X86_INS_CMPXCHG16B:
	case X86_INS_FXSAVE: case X86_INS_FXSAVE64: case X86_INS_FXRSTOR: case X86_INS_FXRSTOR64:
	case X86_INS_LDMXCSR: case X86_INS_STMXCSR:
		return true;
	default:
		break;
	}
	return cs_insn_group(cs, in, X86_GRP_SSE1) || cs_insn_group(cs, in, X86_GRP_SSE2) ||
	       cs_insn_group(cs, in, X86_GRP_SSE3) || cs_insn_group(cs, in, X86_GRP_SSSE3) ||
	       cs_insn_group(cs, in, X86_GRP_SSE41) || cs_insn_group(cs, in, X86_GRP_SSE42) ||
	       cs_insn_group(cs, in, X86_GRP_SSE4A) || cs_insn_group(cs, in, X86_GRP_MMX) ||
	       cs_insn_group(cs, in, X86_GRP_FPU) || cs_insn_group(cs, in, X86_GRP_AES) ||
	       cs_insn_group(cs, in, X86_GRP_PCLMUL) || cs_insn_group(cs, in, X86_GRP_SHA) ||
	       in->mnemonic[0] == 'f'; /* x87: capstone does not group them all */
}

/* The operand size of an instruction Unicorn runs through a memory-accessing helper; 0 for any other. */
static unsigned int helper_access_size(const cs_insn *in, bool *write)
{
	const cs_x86 *x = &in->detail->x86;
	bool opsize16 = x->prefix[2] == X86_PREFIX_OPSIZE;
	unsigned int mem_size = 0;

	for (uint8_t i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_MEM)
			mem_size = x->operands[i].size;
	if (!mem_size && in->id != X86_INS_FNSTENV && in->id != X86_INS_FLDENV && in->id != X86_INS_FNSAVE &&
	    in->id != X86_INS_FRSTOR)
		return 0;
	*write = true;
	switch (in->id) {
	case X86_INS_CMPXCHG8B: return 8;
	case X86_INS_CMPXCHG16B: return 16;
	case X86_INS_FXSAVE: case X86_INS_FXSAVE64: return 512;
	case X86_INS_FBSTP: return 10;
	case X86_INS_FSTP: return mem_size == 10 ? 10 : 0; /* m32 and m64 are stored inline */
	case X86_INS_FNSTENV: return opsize16 ? 14 : 28;
	case X86_INS_FNSAVE: return opsize16 ? 94 : 108;
	default: break;
	}
	*write = false;
	switch (in->id) {
	case X86_INS_FXRSTOR: case X86_INS_FXRSTOR64: return 512;
	case X86_INS_FBLD: return 10;
	case X86_INS_FLD: return mem_size == 10 ? 10 : 0;
	case X86_INS_FLDENV: return opsize16 ? 14 : 28;
	case X86_INS_FRSTOR: return opsize16 ? 94 : 108;
	default: return 0;
	}
}

/* A general register's number in encoding order, for a 64- or 32-bit address register; -1 for none. */
static int address_reg(x86_reg r)
{
	static const x86_reg r64[16] = { X86_REG_RAX, X86_REG_RCX, X86_REG_RDX, X86_REG_RBX, X86_REG_RSP, X86_REG_RBP,
					 X86_REG_RSI, X86_REG_RDI, X86_REG_R8,  X86_REG_R9,  X86_REG_R10, X86_REG_R11,
					 X86_REG_R12, X86_REG_R13, X86_REG_R14, X86_REG_R15 };
	static const x86_reg r32[16] = { X86_REG_EAX, X86_REG_ECX, X86_REG_EDX, X86_REG_EBX, X86_REG_ESP, X86_REG_EBP,
					 X86_REG_ESI, X86_REG_EDI, X86_REG_R8D, X86_REG_R9D, X86_REG_R10D, X86_REG_R11D,
					 X86_REG_R12D, X86_REG_R13D, X86_REG_R14D, X86_REG_R15D };

	for (int i = 0; i < 16; i++)
		if (r == r64[i] || r == r32[i])
			return i;
	return -1;
}

int emu_decode_helper_access(struct emu_decoder *d, uint64_t addr, const uint8_t *code, size_t len,
			     struct emu_mem_operand *out)
{
	const uint8_t *p = code;
	size_t left = len;
	uint64_t pc = addr;
	const cs_x86 *x;
	bool write = false;
	unsigned int size;

	memset(out, 0, sizeof(*out));
	if (!cs_disasm_iter(d->cs, &p, &left, &pc, d->insn))
		return -ENOENT;
	size = helper_access_size(d->insn, &write);
	if (!size)
		return -ENOENT;
	x = &d->insn->detail->x86;
	for (uint8_t i = 0; i < x->op_count; i++) {
		const x86_op_mem *m = &x->operands[i].mem;

		if (x->operands[i].type != X86_OP_MEM)
			continue;
		out->len = (uint8_t)d->insn->size;
		out->size = (uint16_t)size;
		out->write = write;
		out->rip_relative = m->base == X86_REG_RIP || m->base == X86_REG_EIP;
		out->base = out->rip_relative ? -1 : address_reg(m->base);
		out->index = address_reg(m->index);
		out->scale = (uint8_t)(m->scale > 0 ? m->scale : 1);
		out->disp = m->disp;
		out->addr32 = x->prefix[3] == X86_PREFIX_ADDRSIZE;
		out->seg = m->segment == X86_REG_FS ? 4 : m->segment == X86_REG_GS ? 5 : 0;
		if ((m->base != X86_REG_INVALID && out->base < 0 && !out->rip_relative) ||
		    (m->index != X86_REG_INVALID && out->index < 0))
			return -ENOENT; /* an address register this cannot name: not one the CPU has in 64-bit mode */
		return 0;
	}
	return -ENOENT;
}

void emu_decode_block(struct emu_decoder *d, uint64_t addr, const uint8_t *code, size_t len, bool smp,
		      struct emu_block_info *info)
{
	const uint8_t *p = code;
	size_t left = len;
	uint64_t pc = addr;

	memset(info, 0, offsetof(struct emu_block_info, offset));
	info->addr = addr;
	info->size = (uint32_t)len;
	info->offset[0] = 0;
	while (left && info->ninsns < EMU_BLOCK_MAX_INSNS) {
		info->handback = pkru_insn(p, left);
		if (info->handback != EMU_HB_NONE)
			break;
		if (!cs_disasm_iter(d->cs, &p, &left, &pc, d->insn)) {
			info->handback = EMU_HB_UNDECODABLE;
			break;
		}
		info->handback = classify(d->cs, d->insn, smp);
		if (info->handback != EMU_HB_NONE)
			break;
		info->branch = branch_kind(d->cs, d->insn);
		if (unsynced_memory(d->cs, d->insn)) {
			bool write;

			if (info->nsync < EMU_BLOCK_SYNC_MAX) {
				if (helper_access_size(d->insn, &write))
					info->sync_helper |= 1u << info->nsync;
				info->sync[info->nsync++] = info->ninsns;
			} else
				info->sync_overflow = true;
		}
		if (info->ninsns == 0)
			info->rep_string = is_rep_string(d->insn);
		else
			info->rep_string = false;
		info->ninsns++;
		info->offset[info->ninsns] = (uint16_t)(p - code);
	}
	if (info->handback != EMU_HB_NONE)
		info->branch = EMU_BR_NONE; /* the block's end is not reached in the emulator */
	if (info->ninsns != 1)
		info->rep_string = false;
}
