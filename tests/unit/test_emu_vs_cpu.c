// SPDX-License-Identifier: MIT
/*
 * The engine's emulator against the CPU it stands in for: every
 * instruction of this process's libc and dynamic loader that the engine's
 * decoder lets Unicorn run (emu_decode_one: no hand-back) is run both in
 * Unicorn, in the engine's CPU model, and on the host CPU, from the same
 * registers, flags and memory, several times with different values; the
 * results must agree, flags the architecture leaves undefined aside. A
 * Linux guest runs exactly this code in the engine, and an instruction
 * Unicorn gets wrong is wrong in every counted program (glibc's AVX2
 * string functions mask with BZHI, which Unicorn 2.0.1 computes wrongly:
 * emu_decode.c, vex_encoded).
 *
 * Not covered: control transfers, the stack pointer, RIP-relative and
 * segment-based addresses (an address is not a result), x87 and MMX (their
 * state is not set up here), REP string instructions (a count in RCX), and
 * what the host CPU cannot run (it faults: the instruction is skipped).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <capstone/capstone.h>
#include <cmocka.h>
#include <link.h>
#include <unicorn/unicorn.h>

#include "engine/emu.h"
#include "engine/emu_decode.h"

#define ROUNDS 4
#define DATA_VA 0x5a5a00000000ULL /* the memory operands' page, the same address in both */
#define DATA_SIZE 0x2000
#define CODE_VA 0x1000
#define STACK_VA 0x3000
#define FLAGS_ARITH 0x8d5ULL /* CF PF AF ZF SF OF */
#define FLAG_OF 0x800ULL

/* Registers in KVM's order (RAX RCX RDX RBX RSP RBP RSI RDI R8-R15): what both sides load and store. */
struct cpu_state {
	uint64_t gpr[16];
	uint64_t rflags;
	uint8_t xmm[16][16];
};

/* Referenced by name from the assembly below. */
struct cpu_state test_in, test_out;
void *test_code;

static const int uc_gpr[16] = {
	UC_X86_REG_RAX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RBX, UC_X86_REG_RSP, UC_X86_REG_RBP,
	UC_X86_REG_RSI, UC_X86_REG_RDI, UC_X86_REG_R8,  UC_X86_REG_R9,  UC_X86_REG_R10, UC_X86_REG_R11,
	UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15,
};

static const x86_reg cs_gpr64[16] = {
	X86_REG_RAX, X86_REG_RCX, X86_REG_RDX, X86_REG_RBX, X86_REG_RSP, X86_REG_RBP, X86_REG_RSI, X86_REG_RDI,
	X86_REG_R8,  X86_REG_R9,  X86_REG_R10, X86_REG_R11, X86_REG_R12, X86_REG_R13, X86_REG_R14, X86_REG_R15,
};

_Static_assert(offsetof(struct cpu_state, rflags) == 128 && offsetof(struct cpu_state, xmm) == 136,
	       "the assembly below uses these offsets");

/*
 * Loads test_in into the CPU, calls the instruction at test_code (which
 * RETs), stores the CPU into test_out; RSP is the host's throughout.
 */
static void host_run(void)
{
	__asm__ volatile(
		"push %%rbp\n\tpush %%rbx\n\tpush %%r12\n\tpush %%r13\n\tpush %%r14\n\tpush %%r15\n\t"
		"movdqu test_in+136(%%rip), %%xmm0\n\tmovdqu test_in+152(%%rip), %%xmm1\n\t"
		"movdqu test_in+168(%%rip), %%xmm2\n\tmovdqu test_in+184(%%rip), %%xmm3\n\t"
		"movdqu test_in+200(%%rip), %%xmm4\n\tmovdqu test_in+216(%%rip), %%xmm5\n\t"
		"movdqu test_in+232(%%rip), %%xmm6\n\tmovdqu test_in+248(%%rip), %%xmm7\n\t"
		"movdqu test_in+264(%%rip), %%xmm8\n\tmovdqu test_in+280(%%rip), %%xmm9\n\t"
		"movdqu test_in+296(%%rip), %%xmm10\n\tmovdqu test_in+312(%%rip), %%xmm11\n\t"
		"movdqu test_in+328(%%rip), %%xmm12\n\tmovdqu test_in+344(%%rip), %%xmm13\n\t"
		"movdqu test_in+360(%%rip), %%xmm14\n\tmovdqu test_in+376(%%rip), %%xmm15\n\t"
		"pushq test_in+128(%%rip)\n\tpopfq\n\t"
		"mov test_in+0(%%rip), %%rax\n\tmov test_in+8(%%rip), %%rcx\n\tmov test_in+16(%%rip), %%rdx\n\t"
		"mov test_in+24(%%rip), %%rbx\n\tmov test_in+40(%%rip), %%rbp\n\tmov test_in+48(%%rip), %%rsi\n\t"
		"mov test_in+56(%%rip), %%rdi\n\tmov test_in+64(%%rip), %%r8\n\tmov test_in+72(%%rip), %%r9\n\t"
		"mov test_in+80(%%rip), %%r10\n\tmov test_in+88(%%rip), %%r11\n\tmov test_in+96(%%rip), %%r12\n\t"
		"mov test_in+104(%%rip), %%r13\n\tmov test_in+112(%%rip), %%r14\n\tmov test_in+120(%%rip), %%r15\n\t"
		"call *test_code(%%rip)\n\t"
		"pushfq\n\tpopq test_out+128(%%rip)\n\t"
		"mov %%rax, test_out+0(%%rip)\n\tmov %%rcx, test_out+8(%%rip)\n\tmov %%rdx, test_out+16(%%rip)\n\t"
		"mov %%rbx, test_out+24(%%rip)\n\tmov %%rbp, test_out+40(%%rip)\n\tmov %%rsi, test_out+48(%%rip)\n\t"
		"mov %%rdi, test_out+56(%%rip)\n\tmov %%r8, test_out+64(%%rip)\n\tmov %%r9, test_out+72(%%rip)\n\t"
		"mov %%r10, test_out+80(%%rip)\n\tmov %%r11, test_out+88(%%rip)\n\tmov %%r12, test_out+96(%%rip)\n\t"
		"mov %%r13, test_out+104(%%rip)\n\tmov %%r14, test_out+112(%%rip)\n\tmov %%r15, test_out+120(%%rip)\n\t"
		"movdqu %%xmm0, test_out+136(%%rip)\n\tmovdqu %%xmm1, test_out+152(%%rip)\n\t"
		"movdqu %%xmm2, test_out+168(%%rip)\n\tmovdqu %%xmm3, test_out+184(%%rip)\n\t"
		"movdqu %%xmm4, test_out+200(%%rip)\n\tmovdqu %%xmm5, test_out+216(%%rip)\n\t"
		"movdqu %%xmm6, test_out+232(%%rip)\n\tmovdqu %%xmm7, test_out+248(%%rip)\n\t"
		"movdqu %%xmm8, test_out+264(%%rip)\n\tmovdqu %%xmm9, test_out+280(%%rip)\n\t"
		"movdqu %%xmm10, test_out+296(%%rip)\n\tmovdqu %%xmm11, test_out+312(%%rip)\n\t"
		"movdqu %%xmm12, test_out+328(%%rip)\n\tmovdqu %%xmm13, test_out+344(%%rip)\n\t"
		"movdqu %%xmm14, test_out+360(%%rip)\n\tmovdqu %%xmm15, test_out+376(%%rip)\n\t"
		"cld\n\t"
		"pop %%r15\n\tpop %%r14\n\tpop %%r13\n\tpop %%r12\n\tpop %%rbx\n\tpop %%rbp"
		:
		:
		: "memory", "cc", "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "xmm0", "xmm1", "xmm2",
		  "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
		  "xmm15");
}

static sigjmp_buf host_fault;

static void on_host_fault(int sig)
{
	(void)sig;
	siglongjmp(host_fault, 1);
}

/* host_run(); 1 if the instruction faulted (the signal handlers above are in place). */
static __attribute__((noinline)) int host_run_guarded(void)
{
	if (sigsetjmp(host_fault, 1))
		return 1;
	host_run();
	return 0;
}

struct corpus {
	const uint8_t *start[4];
	size_t size[4];
	unsigned int n;
};

/* The executable segments of this process's libc and dynamic loader, as loaded. */
static int add_segments(struct dl_phdr_info *info, size_t size, void *data)
{
	struct corpus *c = data;

	(void)size;
	if (!info->dlpi_name || (!strstr(info->dlpi_name, "/libc.so") && !strstr(info->dlpi_name, "/ld-linux")))
		return 0;
	for (unsigned int i = 0; i < info->dlpi_phnum && c->n < 4; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];

		if (p->p_type == PT_LOAD && (p->p_flags & PF_X)) {
			c->start[c->n] = (const uint8_t *)(info->dlpi_addr + p->p_vaddr);
			c->size[c->n++] = p->p_memsz;
		}
	}
	return 0;
}

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static bool is_shift_or_rotate(unsigned int id)
{
	switch (id) {
	case X86_INS_SHL: case X86_INS_SAL: case X86_INS_SHR: case X86_INS_SAR: case X86_INS_ROL: case X86_INS_ROR:
	case X86_INS_RCL: case X86_INS_RCR: case X86_INS_SHLD: case X86_INS_SHRD:
		return true;
	default:
		return false;
	}
}

/*
 * Flags the architecture leaves undefined after in: Capstone's, OF after a
 * shift by more than 1, and those the SDM names where Capstone 4 may leave
 * them out (it did for MUL and IMUL: an AMD EPYC here set SF, ZF, AF and PF
 * otherwise than Unicorn in 157 IMULs of libc, another host's CPU did not).
 */
static uint64_t undefined_flags(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;
	uint64_t f = x->eflags, u = 0;

	if (f & X86_EFLAGS_UNDEFINED_OF)
		u |= FLAG_OF;
	if (f & X86_EFLAGS_UNDEFINED_SF)
		u |= 0x80;
	if (f & X86_EFLAGS_UNDEFINED_ZF)
		u |= 0x40;
	if (f & X86_EFLAGS_UNDEFINED_PF)
		u |= 0x4;
	if (f & X86_EFLAGS_UNDEFINED_AF)
		u |= 0x10;
	if (f & X86_EFLAGS_UNDEFINED_CF)
		u |= 0x1;
	switch (in->id) {
	case X86_INS_MUL: case X86_INS_IMUL:
		u |= 0x80 | 0x40 | 0x10 | 0x4;
		break;
	case X86_INS_DIV: case X86_INS_IDIV:
		u |= FLAG_OF | 0x80 | 0x40 | 0x10 | 0x4 | 0x1;
		break;
	case X86_INS_AND: case X86_INS_OR: case X86_INS_XOR: case X86_INS_TEST:
	case X86_INS_SHL: case X86_INS_SAL: case X86_INS_SHR: case X86_INS_SAR: case X86_INS_SHLD: case X86_INS_SHRD:
		u |= 0x10;
		break;
	case X86_INS_BT: case X86_INS_BTS: case X86_INS_BTR: case X86_INS_BTC:
		u |= FLAG_OF | 0x80 | 0x10 | 0x4;
		break;
	case X86_INS_BSF: case X86_INS_BSR:
		u |= FLAG_OF | 0x80 | 0x10 | 0x4 | 0x1;
		break;
	case X86_INS_LZCNT: case X86_INS_TZCNT:
		u |= FLAG_OF | 0x80 | 0x10 | 0x4;
		break;
	default:
		break;
	}
	if (is_shift_or_rotate(in->id)) {
		bool by_one = false;

		for (uint8_t i = 0; i < x->op_count; i++)
			by_one |= x->operands[i].type == X86_OP_IMM && x->operands[i].imm == 1;
		if (!by_one)
			u |= FLAG_OF;
	}
	return u;
}

static bool skipped_register(x86_reg r)
{
	return r == X86_REG_RSP || r == X86_REG_ESP || r == X86_REG_SP || r == X86_REG_SPL || r == X86_REG_RIP ||
	       r == X86_REG_CS || r == X86_REG_DS || r == X86_REG_ES || r == X86_REG_FS || r == X86_REG_GS ||
	       r == X86_REG_SS || (r >= X86_REG_MM0 && r <= X86_REG_MM7) || (r >= X86_REG_ST0 && r <= X86_REG_ST7) ||
	       (r >= X86_REG_FP0 && r <= X86_REG_FP7);
}

struct checker {
	uc_engine *uc;
	csh cs;
	cs_insn *insn;
	struct emu_decoder *dec;
	uint8_t *host_data;
	uint8_t data_in[DATA_SIZE], data_uc[DATA_SIZE];
	unsigned long tested, compared, differ;
	char first[512];
};

/* Whether the instruction can be run here, and where its memory operand's base and index are. */
static bool runnable(const cs_insn *in, int *base, int *index, int64_t *disp, unsigned int *scale)
{
	const cs_x86 *x = &in->detail->x86;

	*base = *index = -1;
	if (in->mnemonic[0] == 'f' || x->prefix[0] == X86_PREFIX_REP || x->prefix[0] == X86_PREFIX_REPNE)
		return false; /* x87; REP string instructions (REPNE BND JMP is a jump, skipped below) */
	for (uint8_t i = 0; i < in->detail->groups_count; i++) {
		switch (in->detail->groups[i]) {
		case X86_GRP_JUMP: case X86_GRP_CALL: case X86_GRP_RET: case X86_GRP_INT: case X86_GRP_IRET:
		case X86_GRP_BRANCH_RELATIVE: case X86_GRP_MMX: case X86_GRP_3DNOW:
			return false;
		default:
			break;
		}
	}
	switch (in->id) {
	case X86_INS_PUSH: case X86_INS_POP: case X86_INS_PUSHF: case X86_INS_POPF: case X86_INS_PUSHFQ:
	case X86_INS_POPFQ: case X86_INS_LEAVE: case X86_INS_ENTER: case X86_INS_STD: case X86_INS_LOOP:
	case X86_INS_LOOPE: case X86_INS_LOOPNE: case X86_INS_JRCXZ: case X86_INS_LDMXCSR: case X86_INS_FXRSTOR:
	case X86_INS_FXRSTOR64: case X86_INS_FXSAVE: case X86_INS_FXSAVE64: case X86_INS_EMMS:
		return false;
	default:
		break;
	}
	for (uint8_t i = 0; i < x->op_count; i++) {
		const cs_x86_op *o = &x->operands[i];

		if (o->type == X86_OP_REG && skipped_register(o->reg))
			return false;
		if (o->type != X86_OP_MEM)
			continue;
		if (o->mem.segment != X86_REG_INVALID || o->mem.base == X86_REG_INVALID || skipped_register(o->mem.base))
			return false;
		for (int k = 0; k < 16; k++) {
			if (o->mem.base == cs_gpr64[k])
				*base = k;
			if (o->mem.index == cs_gpr64[k])
				*index = k;
		}
		if (*base < 0 || (o->mem.index != X86_REG_INVALID && *index < 0) || *base == *index)
			return false; /* a 32-bit address, say */
		*disp = o->mem.disp;
		*scale = (unsigned int)o->mem.scale;
	}
	return true;
}

static void report(struct checker *k, const cs_insn *in, const char *fmt, ...)
{
	va_list ap;
	char what[256];

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	k->differ++;
	fprintf(stderr, "  differs: %s %s (", in->mnemonic, in->op_str);
	for (uint16_t i = 0; i < in->size; i++)
		fprintf(stderr, "%02x", in->bytes[i]);
	fprintf(stderr, "): %s\n", what);
	if (!k->first[0])
		snprintf(k->first, sizeof(k->first), "%s %s: %s", in->mnemonic, in->op_str, what);
}

/* Runs in in Unicorn and on the CPU, ROUNDS times from the same random state, and compares. */
static void check_one(struct checker *k, const cs_insn *in)
{
	int base, index;
	int64_t disp = 0;
	unsigned int scale = 1;
	uint64_t undef = undefined_flags(in);

	if (!runnable(in, &base, &index, &disp, &scale))
		return;
	memcpy(test_code, in->bytes, in->size);
	((uint8_t *)test_code)[in->size] = 0xc3; /* RET back to host_run */
	if (uc_mem_write(k->uc, CODE_VA, in->bytes, in->size) != UC_ERR_OK)
		fail_msg("cannot write the instruction into Unicorn");
	uc_ctl_remove_cache(k->uc, CODE_VA, CODE_VA + 64);
	k->tested++;
	for (unsigned int round = 0; round < ROUNDS; round++) {
		struct cpu_state uc_out;
		uint64_t rsp = STACK_VA, rip;
		uint32_t mxcsr = 0x1f80;
		bool text = round & 1; /* small values and string-like bytes: zeros, few distinct letters */
		uc_err ue;
		int host_faulted;

		for (int i = 0; i < 16; i++) {
			test_in.gpr[i] = next_random();
			if (text)
				test_in.gpr[i] &= 0x3f;
			for (int j = 0; j < 16; j++)
				test_in.xmm[i][j] = text ? (next_random() % 3 ? (uint8_t)('a' + next_random() % 3) : 0)
							 : (uint8_t)next_random();
		}
		test_in.rflags = 0x202 | (next_random() & FLAGS_ARITH);
		if (base >= 0) {
			/* The operand 16-byte aligned (SSE's alignment rule) inside the data page. */
			if (index >= 0)
				test_in.gpr[index] = next_random() % 8;
			test_in.gpr[base] = DATA_VA + DATA_SIZE / 2 - (uint64_t)disp -
					    (index >= 0 ? test_in.gpr[index] * scale : 0) - (next_random() % 4) * 16;
		}
		for (size_t i = 0; i < DATA_SIZE; i++)
			k->data_in[i] = text ? (next_random() % 4 ? (uint8_t)('a' + next_random() % 4) : 0)
					     : (uint8_t)next_random();
		/* Unicorn, in the engine's CPU model. */
		for (int i = 0; i < 16; i++)
			if (i != 4)
				uc_reg_write(k->uc, uc_gpr[i], &test_in.gpr[i]);
		uc_reg_write(k->uc, UC_X86_REG_RSP, &rsp);
		uc_reg_write(k->uc, UC_X86_REG_RFLAGS, &test_in.rflags);
		uc_reg_write(k->uc, UC_X86_REG_MXCSR, &mxcsr);
		for (int i = 0; i < 16; i++)
			uc_reg_write(k->uc, UC_X86_REG_XMM0 + i, test_in.xmm[i]);
		uc_mem_write(k->uc, DATA_VA, k->data_in, DATA_SIZE);
		ue = uc_emu_start(k->uc, CODE_VA, CODE_VA + in->size, 0, 0);
		/*
		 * Unicorn may also return without running it (after an earlier run's
		 * exception, an invalid opcode comes back so): the engine then hands
		 * the instruction at that RIP to KVM as well (emu_run).
		 */
		if (ue == UC_ERR_OK && (uc_reg_read(k->uc, UC_X86_REG_RIP, &rip) != UC_ERR_OK || rip != (uint64_t)CODE_VA + in->size))
			ue = UC_ERR_INSN_INVALID;
		for (int i = 0; i < 16; i++)
			uc_reg_read(k->uc, uc_gpr[i], &uc_out.gpr[i]);
		uc_reg_read(k->uc, UC_X86_REG_RFLAGS, &uc_out.rflags);
		for (int i = 0; i < 16; i++)
			uc_reg_read(k->uc, UC_X86_REG_XMM0 + i, uc_out.xmm[i]);
		uc_mem_read(k->uc, DATA_VA, k->data_uc, DATA_SIZE);
		/* The host CPU. */
		memcpy(k->host_data, k->data_in, DATA_SIZE);
		host_faulted = host_run_guarded();
		if (host_faulted && ue != UC_ERR_OK)
			continue; /* both refuse: a #DE, say (the engine hands a refused instruction to KVM) */
		if (host_faulted)
			return; /* the host cannot run it (a feature it lacks, or this operand): nothing to compare */
		k->compared++;
		if (ue != UC_ERR_OK)
			continue; /* Unicorn refuses it: the engine hands it to KVM */
		for (int i = 0; i < 16; i++) {
			if (i != 4 && uc_out.gpr[i] != test_out.gpr[i]) {
				report(k, in, "register %d: %#llx in Unicorn, %#llx on the CPU", i,
				       (unsigned long long)uc_out.gpr[i], (unsigned long long)test_out.gpr[i]);
				return;
			}
			if (memcmp(uc_out.xmm[i], test_out.xmm[i], 16)) {
				report(k, in, "xmm%d", i);
				return;
			}
		}
		if ((uc_out.rflags ^ test_out.rflags) & FLAGS_ARITH & ~undef) {
			report(k, in, "flags %#llx in Unicorn, %#llx on the CPU",
			       (unsigned long long)(uc_out.rflags & FLAGS_ARITH), (unsigned long long)(test_out.rflags & FLAGS_ARITH));
			return;
		}
		if (memcmp(k->data_uc, k->host_data, DATA_SIZE)) {
			report(k, in, "memory");
			return;
		}
	}
}

/* A hash set of the encodings seen: each is checked once. */
#define SEEN_SLOTS (1u << 17)

static bool seen_before(uint64_t *seen, const cs_insn *in)
{
	uint64_t h = 1469598103934665603ULL;
	unsigned int slot;

	for (uint16_t i = 0; i < in->size; i++)
		h = (h ^ in->bytes[i]) * 1099511628211ULL;
	h |= 1;
	for (slot = (unsigned int)h & (SEEN_SLOTS - 1); seen[slot]; slot = (slot + 1) & (SEEN_SLOTS - 1))
		if (seen[slot] == h)
			return true;
	seen[slot] = h;
	return false;
}

static void test_libc_instructions_agree(void **state)
{
	struct corpus c = { 0 };
	struct checker *k = calloc(1, sizeof(*k));
	uint64_t *seen = calloc(SEEN_SLOTS, sizeof(*seen));
	struct sigaction sa = { .sa_handler = on_host_fault }, old[4];
	const int sigs[4] = { SIGSEGV, SIGILL, SIGFPE, SIGBUS };

	(void)state;
	assert_non_null(k);
	assert_non_null(seen);
	dl_iterate_phdr(add_segments, &c);
	if (c.n == 0)
		skip(); /* not linked with a libc found by name (a static build) */
	k->host_data = mmap((void *)DATA_VA, DATA_SIZE, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	assert_true(k->host_data == (void *)DATA_VA);
	test_code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(test_code != MAP_FAILED);
	assert_int_equal(uc_open(UC_ARCH_X86, UC_MODE_64, &k->uc), UC_ERR_OK);
	assert_int_equal(uc_ctl_set_cpu_model(k->uc, EMU_UNICORN_CPU_MODEL), UC_ERR_OK);
	assert_int_equal(uc_mem_map(k->uc, CODE_VA, 0x1000, UC_PROT_ALL), UC_ERR_OK);
	assert_int_equal(uc_mem_map(k->uc, STACK_VA - 0x1000, 0x2000, UC_PROT_ALL), UC_ERR_OK);
	assert_int_equal(uc_mem_map(k->uc, DATA_VA, DATA_SIZE, UC_PROT_ALL), UC_ERR_OK);
	assert_int_equal(cs_open(CS_ARCH_X86, CS_MODE_64, &k->cs), CS_ERR_OK);
	cs_option(k->cs, CS_OPT_DETAIL, CS_OPT_ON);
	k->insn = cs_malloc(k->cs);
	assert_non_null(k->insn);
	assert_int_equal(emu_decoder_open(&k->dec), 0);
	for (int i = 0; i < 4; i++)
		sigaction(sigs[i], &sa, &old[i]);
	for (unsigned int s = 0; s < c.n; s++) {
		const uint8_t *p = c.start[s];
		size_t left = c.size[s];
		uint64_t pc = (uint64_t)(uintptr_t)p;

		while (left) {
			struct emu_insn_info info;

			if (!cs_disasm_iter(k->cs, &p, &left, &pc, k->insn)) {
				p++;
				left--;
				pc++;
				continue;
			}
			if (seen_before(seen, k->insn))
				continue;
			emu_decode_one(k->dec, CODE_VA, k->insn->bytes, k->insn->size, false, &info);
			if (info.handback != EMU_HB_NONE || info.len != k->insn->size)
				continue; /* KVM runs it, not Unicorn */
			check_one(k, k->insn);
		}
	}
	for (int i = 0; i < 4; i++)
		sigaction(sigs[i], &old[i], NULL);
	fprintf(stderr, "  %lu instructions the engine runs in Unicorn, %lu compared with the CPU, %lu differ\n",
		k->tested, k->compared, k->differ);
	/* The corpus is what the engine runs in a Linux guest: it must hold thousands of them. */
	assert_true(k->compared > 1000);
	if (k->differ)
		fail_msg("%lu instructions differ; the first: %s", k->differ, k->first);
	emu_decoder_close(k->dec);
	cs_free(k->insn, 1);
	cs_close(&k->cs);
	uc_close(k->uc);
	munmap(test_code, 4096);
	munmap(k->host_data, DATA_SIZE);
	free(seen);
	free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_libc_instructions_agree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
