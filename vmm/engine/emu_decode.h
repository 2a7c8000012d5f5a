/* SPDX-License-Identifier: MIT */
/*
 * What the emulation engine (emu.h) needs to know about the instructions of
 * one translated block, decoded once with Capstone: how many there are, where
 * each starts, whether the block ends in a branch (and of what kind), and the
 * first instruction the emulator must not run itself ("hand-back"), with the
 * reason. Pure code over a byte buffer: the unit tests drive it directly.
 */
#ifndef KVMPROF_EMU_DECODE_H
#define KVMPROF_EMU_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Why an instruction goes back to KVM instead of running in the emulator. */
enum emu_handback {
	EMU_HB_NONE,
	EMU_HB_SYSTEM,      /* privileged, I/O, CPL/IOPL-dependent, interrupts, far transfers, segment loads */
	EMU_HB_HOST_VALUE,  /* its result comes from the real CPU or KVM: CPUID, RDTSC(P), RDPID, RDRAND, RDSEED, XGETBV */
	EMU_HB_UNMODELED,   /* the emulator does not model it faithfully: VEX/EVEX/XOP-encoded (AVX and later, BMI), XSAVE family, TSX, SGX, MASKMOV, ENTER with a nesting level */
	EMU_HB_LOCKED,      /* a locked read-modify-write while other vCPUs run (the emulator's are not atomic) */
	EMU_HB_UNDECODABLE, /* no valid instruction at this address (KVM raises the #UD) */
	EMU_HB_FAULT,       /* a memory access the guest's page tables refuse, or outside RAM (KVM raises #PF or does MMIO) */
	EMU_HB_MODE,        /* the vCPU is not in 64-bit long mode, has TF/AC set, or EFER.FFXSR */
	EMU_HB_REFUSED,     /* the emulator refused it (an instruction its CPU model lacks) */
	EMU_HB_COUNT,
};

const char *emu_handback_name(enum emu_handback why);

enum emu_branch {
	EMU_BR_NONE,
	EMU_BR_COND,   /* Jcc, LOOP*, JRCXZ: taken or not */
	EMU_BR_UNCOND, /* near JMP, CALL, RET: always taken */
};

#define EMU_BLOCK_MAX_INSNS 512
#define EMU_BLOCK_SYNC_MAX 32

struct emu_block_info {
	uint64_t addr;
	uint32_t size;         /* bytes, as the emulator translated the block */
	uint16_t ninsns;       /* instructions decoded before the first hand-back (all if none) */
	enum emu_handback handback; /* of instruction number ninsns, if any */
	enum emu_branch branch;     /* of the last instruction, when there is no hand-back */
	bool rep_string;       /* the block is one REP-prefixed string instruction (the emulator loops it) */
	/*
	 * Instructions whose memory accesses Unicorn 2.0.1 does not tell the
	 * RIP of when they fault (emu_decode_unsynced): their numbers, the
	 * first EMU_BLOCK_SYNC_MAX of them (sync_overflow: more).
	 */
	uint8_t nsync;
	bool sync_overflow;
	uint16_t sync[EMU_BLOCK_SYNC_MAX];
	uint32_t sync_helper; /* bit i: sync[i] accesses memory through a Unicorn helper (emu_decode_helper_access) */
	uint16_t offset[EMU_BLOCK_MAX_INSNS + 1]; /* start of each instruction; offset[ninsns] its end */
};

struct emu_decoder;

int emu_decoder_open(struct emu_decoder **out);
void emu_decoder_close(struct emu_decoder *d);

/*
 * Decodes the block at addr whose bytes are code[0..len) (len: the block's
 * size). smp makes locked instructions hand-backs. Fills info; never fails (an undecodable byte ends
 * the block with EMU_HB_UNDECODABLE).
 */
void emu_decode_block(struct emu_decoder *d, uint64_t addr, const uint8_t *code, size_t len, bool smp,
		      struct emu_block_info *info);

/* One instruction, for the VMM when KVM runs it in the emulator's place. */
struct emu_insn_info {
	uint8_t len;              /* 0: undecodable */
	enum emu_handback handback;
	enum emu_branch branch;
	bool has_target;          /* a near branch with an immediate target */
	uint64_t target;
	bool is_ret, is_iret;     /* the next RIP is on the stack */
	int vector;               /* the exception or interrupt it raises for sure (#UD, #BP, INT n), or -1 */
	bool flushes_tlb;         /* MOV to a control register, INVLPG, INVPCID, LMSW: translations may change */
	bool keeps_global;        /* of those, MOV to CR3: with CR4.PGE global translations stay */
	bool is_wrmsr;
};

void emu_decode_one(struct emu_decoder *d, uint64_t addr, const uint8_t *code, size_t len, bool smp,
		    struct emu_insn_info *out);

/*
 * The memory operand of an instruction Unicorn 2.0.1 runs through a C
 * helper that loads and stores with cpu_ld*_data_ra / cpu_st*_data_ra
 * (CMPXCHG8B/16B, FXSAVE/FXRSTOR, the x87 80-bit, BCD, environment and
 * state loads and stores). A store such a helper makes that the memory
 * hook refuses does not stop it: the helper goes on (an FSTP pops, a
 * CMPXCHG16B loads RDX:RAX) and so does the block, up to its next check
 * for a stop, and a load refused part-way has set what it loaded before.
 * The engine checks the whole operand before the instruction runs
 * instead (emu.c's helper_access_ok). The size is the architectural
 * operand's, the span the CPU checks before it writes any of it.
 */
struct emu_mem_operand {
	uint8_t len;      /* of the instruction, in bytes */
	uint16_t size;    /* of the operand, in bytes */
	bool write;       /* stores (CMPXCHG8B/16B store even when they do not match) */
	int base, index;  /* general registers in encoding order (0: RAX ... 15: R15), or -1 */
	uint8_t scale;
	bool rip_relative; /* from the next instruction */
	bool addr32;      /* an address-size prefix: the address wraps at 4 GiB */
	int64_t disp;
	int seg;          /* 0: none; 4: FS, 5: GS (the others' bases are 0 in 64-bit mode) */
};

/* 0 and *out for such an instruction at code[0..len); -ENOENT for any other. */
int emu_decode_helper_access(struct emu_decoder *d, uint64_t addr, const uint8_t *code, size_t len,
			     struct emu_mem_operand *out);

#endif
