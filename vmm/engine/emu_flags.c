// SPDX-License-Identifier: MIT
/* The arithmetic flags after a mid-block memory stop (emu_flags.h). */
#include "emu_flags.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

#define PAGE_SIZE 4096ULL
#define PAGE_MASK (~(PAGE_SIZE - 1))
#define RFLAGS_ARITH 0x8d5ULL /* OF SF ZF AF PF CF */
#define RFLAGS_DF 0x400ULL

/* QEMU's CPUX86State from its start: regs[16], eip, eflags, cc_dst, cc_src, cc_src2, cc_op. */
#define ENV_REGS 0
#define ENV_EFLAGS ((size_t)8 * 17)
#define ENV_CC_DST ((size_t)8 * 18)
#define ENV_CC_SRC (ENV_CC_DST + 8)
#define ENV_CC_OP (ENV_CC_DST + 24)
#define QEMU_R_ECX 1
#define QEMU_R_EBX 3

/* Scratch pages one repair may touch: code, stack, and what its operands point at. */
#define SCRATCH_PAGES_MAX 64
#define CACHE_SIZE 256 /* power of two */
/* The main CPU's cc_op is right (translator_op). */
#define OP_KEEP (-1)

/*
 * add rax, 0; jmp [rip]; .quad block: the block then starts with QEMU's
 * cc_op at CC_OP_ADDQ, not the CC_OP_EFLAGS every uc_emu_start() begins with.
 */
#define PREAMBLE_SIZE 18

struct emu_flags {
	uc_engine *scratch;
	uc_context *main_ctx, *scratch_ctx;
	size_t data_off; /* where CPUX86State starts in a saved context */
	bool needed;     /* this Unicorn loses cc_op on a memory fault */
	bool usable;     /* the repair works on this Unicorn (its state layout checked) */
	uc_hook map_hook, precise_hook;
	uint64_t page[SCRATCH_PAGES_MAX];
	unsigned int npages;
	uint8_t ones[PAGE_SIZE];
	char why[160]; /* why the last repair could not run */
	uc_hook intr_hook;
	/* The block being repaired: where its instructions start, to step over one that faults on scratch values. */
	const struct emu_block_info *block;
	unsigned int skips;
	uint64_t preamble; /* where the scratch CPU runs preamble_code */
	struct {
		uint64_t block, rip, sum;
		int op;
	} cache[CACHE_SIZE];
};

static uint64_t ctx_u64(const struct emu_flags *f, const uc_context *c, size_t off)
{
	uint64_t v;

	memcpy(&v, (const char *)c + f->data_off + off, sizeof(v));
	return v;
}

static int ctx_op(const struct emu_flags *f, const uc_context *c)
{
	int32_t v;

	memcpy(&v, (const char *)c + f->data_off + ENV_CC_OP, sizeof(v));
	return v;
}

/*
 * The flags' state as it should have been: cc_op, and EFLAGS' other bits as
 * the caller gives them (no instruction Unicorn runs changes them, only
 * CLI/STI and CLAC/STAC done in place; DF lives apart). Leaving a run
 * stores the flags computed with the stale cc_op in EFLAGS, where they
 * would stay.
 */
static void ctx_set_flags(const struct emu_flags *f, uc_context *c, int op, uint64_t sys_rflags)
{
	uint64_t eflags = (sys_rflags & ~(RFLAGS_ARITH | RFLAGS_DF)) | 2;
	int32_t v = op;

	memcpy((char *)c + f->data_off + ENV_EFLAGS, &eflags, sizeof(eflags));
	memcpy((char *)c + f->data_off + ENV_CC_OP, &v, sizeof(v));
}

/* Any page a scratch run touches becomes memory full of 0x01 bytes: nonzero divisors, valid pointers to more of it. */
static bool scratch_map(uc_engine *uc, uc_mem_type type, uint64_t addr, int size, int64_t value, void *opaque)
{
	struct emu_flags *f = opaque;
	uint64_t va = addr & PAGE_MASK;

	(void)type;
	(void)size;
	(void)value;
	if (f->npages == SCRATCH_PAGES_MAX)
		return false;
	if (uc_mem_map(uc, va, PAGE_SIZE, UC_PROT_ALL) != UC_ERR_OK || uc_mem_write(uc, va, f->ones, PAGE_SIZE) != UC_ERR_OK)
		return false;
	f->page[f->npages++] = va;
	return true;
}

/*
 * An instruction that faults on the scratch values (a DIV by a register the
 * scratch values made 0): go on after it. Its own effect on cc_op is none
 * (QEMU's DIV and IDIV leave it), and the exception stored the translator's
 * cc_op before it, so the one at the stop is what one block would have.
 */
static void scratch_exception(uc_engine *uc, uint32_t intno, void *opaque)
{
	struct emu_flags *f = opaque;
	const struct emu_block_info *b = f->block;
	uint64_t rip = 0;

	(void)intno;
	if (b && f->skips < 8 && uc_reg_read(uc, UC_X86_REG_RIP, &rip) == UC_ERR_OK) {
		for (unsigned int i = 0; i < b->ninsns; i++)
			if (b->addr + b->offset[i] == rip) {
				rip = b->addr + b->offset[i + 1];
				f->skips++;
				if (uc_reg_write(uc, UC_X86_REG_RIP, &rip) == UC_ERR_OK)
					return;
				break;
			}
	}
	uc_emu_stop(uc);
}

/*
 * Never called (its range is not canonical): with a memory hook present,
 * Unicorn 2.0.1 restores RIP to the faulting instruction on a memory fault
 * instead of the start of its block, whose earlier instructions have run.
 */
static void on_access_never(uc_engine *uc, uc_mem_type type, uint64_t addr, int size, int64_t value, void *opaque)
{
	(void)uc;
	(void)type;
	(void)addr;
	(void)size;
	(void)value;
	(void)opaque;
}

int emu_precise_faults(uc_engine *uc, uc_hook *hook)
{
	return uc_hook_add(uc, hook, UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, (void *)on_access_never, NULL,
			   0x8000000000000000ULL, 0x8000000000000001ULL) == UC_ERR_OK ? 0 : -1;
}

static void scratch_clear(struct emu_flags *f)
{
	for (unsigned int i = 0; i < f->npages; i++) {
		/* Blocks translated from one repair's code must not run in the next. */
		uc_ctl_remove_cache(f->scratch, f->page[i], f->page[i] + PAGE_SIZE);
		uc_mem_unmap(f->scratch, f->page[i], PAGE_SIZE);
	}
	f->npages = 0;
}

/* Puts len bytes of code at addr into the scratch Unicorn (its pages mapped as needed). */
static int scratch_code(struct emu_flags *f, uint64_t addr, const uint8_t *code, size_t len)
{
	for (uint64_t va = addr & PAGE_MASK; va < addr + len; va += PAGE_SIZE) {
		bool have = false;

		for (unsigned int i = 0; i < f->npages; i++)
			have |= f->page[i] == va;
		if (!have && !scratch_map(f->scratch, UC_MEM_FETCH_UNMAPPED, va, 1, 0, f))
			return -1;
	}
	return uc_mem_write(f->scratch, addr, code, len) == UC_ERR_OK ? 0 : -1;
}

/*
 * Runs [start, end) in the scratch Unicorn with CL = cl, cc_op at the start
 * being CC_OP_EFLAGS (what every run starts with), or with `preamble` that
 * of an ADD; its cc_op at end, or INT32_MIN if the run did not get there.
 */
static int scratch_op(struct emu_flags *f, uint64_t start, uint64_t end, uint8_t cl, bool preamble)
{
	static const int ids[] = { UC_X86_REG_RAX, UC_X86_REG_RBX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RSI,
				   UC_X86_REG_RDI, UC_X86_REG_RBP, UC_X86_REG_RSP, UC_X86_REG_R8,  UC_X86_REG_R9,
				   UC_X86_REG_R10, UC_X86_REG_R11, UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14,
				   UC_X86_REG_R15, UC_X86_REG_FS_BASE, UC_X86_REG_GS_BASE };
	uint64_t v[sizeof(ids) / sizeof(ids[0])], rip = 0, rflags = 2;
	void *p[sizeof(ids) / sizeof(ids[0])];
	uc_err ue;

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		v[i] = 0x100000 + 0x10000 * i; /* distinct, canonical, far from each other */
		p[i] = &v[i];
	}
	v[2] += cl;  /* RCX: the count of a shift by CL */
	v[3] = 0;    /* RDX: a DIV's high half, so that it cannot overflow */
	f->skips = 0;
	if (uc_reg_write_batch(f->scratch, (int *)ids, p, (int)(sizeof(ids) / sizeof(ids[0]))) != UC_ERR_OK ||
	    uc_reg_write(f->scratch, UC_X86_REG_RFLAGS, &rflags) != UC_ERR_OK)
		return INT32_MIN;
	ue = uc_emu_start(f->scratch, preamble ? f->preamble : start, end, 0, 0);
	uc_reg_read(f->scratch, UC_X86_REG_RIP, &rip);
	if (ue != UC_ERR_OK || rip != end) {
		snprintf(f->why, sizeof(f->why), "the block's first %llu bytes stopped at +%lld on scratch memory (%s)",
			 (unsigned long long)(end - start), (long long)(rip - start), uc_strerror(ue));
		return INT32_MIN;
	}
	if (uc_context_save(f->scratch, f->scratch_ctx) != UC_ERR_OK)
		return INT32_MIN;
	return ctx_op(f, f->scratch_ctx);
}

/*
 * The translator's cc_op at rip in the block at block, or OP_KEEP when the
 * main CPU's is right already: the instructions before rip set none (the
 * one stored when the last block ended holds), or the last that does is a
 * shift or rotate by CL, which stores it as it runs. Two runs differing in
 * both the cc_op they start with and CL tell these from a cc_op the
 * translator knows (the same in both), or INT32_MIN.
 */
static int translator_op(struct emu_flags *f, uint64_t block, uint64_t rip, const uint8_t *code)
{
	uint8_t pre[PREAMBLE_SIZE] = { 0x48, 0x83, 0xc0, 0x00, 0xff, 0x25, 0, 0, 0, 0 };
	int op0, op1;

	scratch_clear(f);
	if (scratch_code(f, block, code, rip - block)) {
		snprintf(f->why, sizeof(f->why), "the block's code cannot be put in the scratch CPU");
		return INT32_MIN;
	}
	/* A page of its own, below where Linux lets anything be mapped (vm.mmap_min_addr). */
	f->preamble = 0x1000;
	while (f->preamble + PAGE_SIZE > (block & PAGE_MASK) && f->preamble <= ((rip - 1) & PAGE_MASK))
		f->preamble += PAGE_SIZE;
	memcpy(pre + 10, &block, 8);
	if (scratch_code(f, f->preamble, pre, sizeof(pre))) {
		snprintf(f->why, sizeof(f->why), "the scratch CPU's preamble cannot be put in");
		return INT32_MIN;
	}
	op0 = scratch_op(f, block, rip, 0, false);
	op1 = op0 == INT32_MIN ? op0 : scratch_op(f, block, rip, 1, true);
	scratch_clear(f);
	if (op0 == INT32_MIN || op1 == INT32_MIN)
		return INT32_MIN;
	return op0 == op1 ? op0 : OP_KEEP;
}

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

int emu_flags_fix(struct emu_flags *f, uc_engine *uc, const struct emu_block_info *b, uint64_t rip, uint64_t sys_rflags,
		  bool at_hook)
{
	uint64_t block = b->addr;
	uint8_t code[512 * 15];
	uint64_t sum, rflags;
	unsigned int slot;
	int op;

	/* At a code hook every Unicorn so far may have it wrong (emu_flags.h), at a fault only some. */
	if (!(at_hook ? f->usable : f->needed) || rip == block)
		return 0; /* the block's start: cc_op is the one stored when the last block ended */
	if (rip < block || rip - block > sizeof(code) || uc_mem_read(uc, block, code, rip - block) != UC_ERR_OK) {
		snprintf(f->why, sizeof(f->why), "the block's code (%llu bytes) cannot be read",
			 (unsigned long long)(rip - block));
		return -1;
	}
	sum = fnv1a(code, rip - block);
	slot = (unsigned int)((block ^ (rip << 7) ^ sum) & (CACHE_SIZE - 1));
	if (f->cache[slot].block == block && f->cache[slot].rip == rip && f->cache[slot].sum == sum) {
		op = f->cache[slot].op;
	} else {
		f->block = b;
		op = translator_op(f, block, rip, code);
		f->block = NULL;
		if (op == INT32_MIN)
			return -1;
		f->cache[slot].block = block;
		f->cache[slot].rip = rip;
		f->cache[slot].sum = sum;
		f->cache[slot].op = op;
	}
	if (op == OP_KEEP)
		return 0;
	if (uc_context_save(uc, f->main_ctx) != UC_ERR_OK)
		return -1;
	if (ctx_op(f, f->main_ctx) == op)
		return 0;
	ctx_set_flags(f, f->main_ctx, op, sys_rflags);
	if (uc_context_reg_read(f->main_ctx, UC_X86_REG_RFLAGS, &rflags) != UC_ERR_OK ||
	    uc_reg_write(uc, UC_X86_REG_RFLAGS, &rflags) != UC_ERR_OK)
		return -1;
	return 1;
}

const char *emu_flags_why(const struct emu_flags *f)
{
	return f->why;
}

void emu_flags_forget(struct emu_flags *f)
{
	memset(f->cache, 0, sizeof(f->cache));
}

/*
 * Measures this Unicorn on a known case: ADD, then a store to a read-only
 * page. Finds the CPU state in a saved context by its register values,
 * checks CC_DST and CC_SRC where QEMU keeps them, and that the repair gives
 * the flags the hardware would; and whether the repair is needed at all.
 */
static int self_test(struct emu_flags *f, char *err, size_t err_size)
{
	static const uint8_t add[] = { 0x48, 0x01, 0xd8, 0x48, 0x89, 0x01 }; /* add rax, rbx; mov [rcx], rax */
	const uint64_t code = 0x10000, ro = 0x20000, a = 0x1111111111111111ULL, b = 0x2222222222222222ULL;
	/* a + b = 0x3333333333333333: CF ZF SF OF AF clear, PF set (0x33 has four bits); IF as loaded. */
	const uint64_t want = 0x206;
	uint64_t rax = a, rbx = b, rcx = ro, rflags = 0x202, got = 0, rip = 0;
	size_t size = uc_context_size(f->scratch);
	const char *why = NULL;
	int op;

	if (uc_mem_map(f->scratch, code, PAGE_SIZE, UC_PROT_ALL) != UC_ERR_OK ||
	    uc_mem_map(f->scratch, ro, PAGE_SIZE, UC_PROT_READ) != UC_ERR_OK ||
	    uc_mem_write(f->scratch, code, add, sizeof(add)) != UC_ERR_OK || uc_reg_write(f->scratch, UC_X86_REG_RAX, &rax) ||
	    uc_reg_write(f->scratch, UC_X86_REG_RBX, &rbx) || uc_reg_write(f->scratch, UC_X86_REG_RCX, &rcx) ||
	    uc_reg_write(f->scratch, UC_X86_REG_RFLAGS, &rflags)) {
		why = "cannot set up its probe";
		goto out;
	}
	if (uc_emu_start(f->scratch, code, code + sizeof(add), 0, 0) != UC_ERR_WRITE_PROT ||
	    uc_reg_read(f->scratch, UC_X86_REG_RIP, &rip) || rip != code + 3 ||
	    uc_reg_read(f->scratch, UC_X86_REG_RFLAGS, &got) || uc_context_save(f->scratch, f->main_ctx)) {
		why = "its probe did not stop at the store with RIP on it";
		goto out;
	}
	f->needed = got != want;
	/* The state's start: RAX (QEMU's register 0) then RCX, RDX, RBX. */
	for (f->data_off = 0; f->data_off + ENV_CC_OP + 4 <= size; f->data_off += 8)
		if (ctx_u64(f, f->main_ctx, ENV_REGS) == a + b && ctx_u64(f, f->main_ctx, (size_t)8 * QEMU_R_ECX) == ro &&
		    ctx_u64(f, f->main_ctx, (size_t)8 * QEMU_R_EBX) == b)
			break;
	if (f->data_off + ENV_CC_OP + 4 > size || f->data_off > 256) {
		why = "its saved CPU state does not hold the registers where QEMU's does";
		goto out;
	}
	if (ctx_u64(f, f->main_ctx, ENV_CC_DST) != a + b || ctx_u64(f, f->main_ctx, ENV_CC_SRC) != b) {
		why = "its saved CPU state does not hold the flags' operands where QEMU's does";
		goto out;
	}
	op = scratch_op(f, code, code + 3, 0, false);
	if (op == INT32_MIN) {
		why = "its translator's state at the end of a run could not be read";
		goto out;
	}
	ctx_set_flags(f, f->main_ctx, op, 0x202);
	if (uc_context_reg_read(f->main_ctx, UC_X86_REG_RFLAGS, &got) || got != want) {
		why = "the repaired flags are not the hardware's";
		goto out;
	}
out:
	uc_mem_unmap(f->scratch, code, PAGE_SIZE);
	uc_mem_unmap(f->scratch, ro, PAGE_SIZE);
	uc_ctl_remove_cache(f->scratch, code, code + PAGE_SIZE);
	if (why && f->needed) {
		snprintf(err, err_size,
			 "Unicorn loses the x86 flags on a memory fault inside a block, and the repair cannot run: %s", why);
		return -1;
	}
	if (why)
		f->needed = false; /* a Unicorn that keeps them: nothing to repair */
	f->usable = !why;
	return 0;
}

int emu_flags_open(struct emu_flags **out, uc_engine *main_uc, char *err, size_t err_size)
{
	struct emu_flags *f = calloc(1, sizeof(*f));

	if (!f) {
		snprintf(err, err_size, "out of memory");
		return -1;
	}
	memset(f->ones, 1, sizeof(f->ones));
	if (uc_open(UC_ARCH_X86, UC_MODE_64, &f->scratch) != UC_ERR_OK) {
		snprintf(err, err_size, "Unicorn: cannot open a second CPU for flag repairs");
		free(f);
		return -1;
	}
	/* The main engine's model: the same instructions translate the same way. */
	uc_ctl_set_cpu_model(f->scratch, EMU_UNICORN_CPU_MODEL);
	if (uc_context_alloc(main_uc, &f->main_ctx) != UC_ERR_OK ||
	    uc_context_alloc(f->scratch, &f->scratch_ctx) != UC_ERR_OK ||
	    emu_precise_faults(f->scratch, &f->precise_hook)) {
		snprintf(err, err_size, "Unicorn: cannot set up flag repairs");
		emu_flags_close(f);
		return -1;
	}
	if (self_test(f, err, err_size)) {
		emu_flags_close(f);
		return -1;
	}
	/* Only repairs map pages on demand and step over faults; the probe runs with neither. */
	if (uc_hook_add(f->scratch, &f->map_hook, UC_HOOK_MEM_UNMAPPED, (void *)scratch_map, f, 1, 0) != UC_ERR_OK ||
	    uc_hook_add(f->scratch, &f->intr_hook, UC_HOOK_INTR, (void *)scratch_exception, f, 1, 0) != UC_ERR_OK) {
		snprintf(err, err_size, "Unicorn: cannot set up flag repairs");
		emu_flags_close(f);
		return -1;
	}
	*out = f;
	return 0;
}

void emu_flags_close(struct emu_flags *f)
{
	if (!f)
		return;
	if (f->main_ctx)
		uc_context_free(f->main_ctx);
	if (f->scratch_ctx)
		uc_context_free(f->scratch_ctx);
	if (f->scratch)
		uc_close(f->scratch);
	free(f);
}
