/* SPDX-License-Identifier: MIT */
/*
 * Locked read-modify-write instructions done by the VMM on the guest's RAM
 * with the host CPU's own locked instruction, so that they stay atomic
 * against the other vCPUs (in KVM or in their engines) without a KVM step.
 * The emulator cannot do them: its locked instructions are plain loads and
 * stores (emu_decode.h's EMU_HB_LOCKED). A Linux kernel on SMP runs one at
 * every spinlock, reference count and bit operation.
 *
 * The forms: LOCK ADD/OR/ADC/SBB/AND/SUB/XOR with a register or an
 * immediate, LOCK NOT/NEG/INC/DEC, LOCK XADD, LOCK CMPXCHG, LOCK
 * CMPXCHG8B/CMPXCHG16B, LOCK BTS/BTR/BTC with a register or an immediate
 * bit offset, and XCHG with memory (locked without the prefix); every
 * operand size; any 64-bit addressing form with an FS or GS override.
 * Anything else (an address-size override, a REP prefix, a register
 * destination, which the CPU refuses with #UD) is not decoded, and KVM
 * runs it. Pure code over bytes and registers: the unit tests drive it.
 */
#ifndef KVMPROF_EMU_LOCKED_H
#define KVMPROF_EMU_LOCKED_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum emu_locked_op {
	LOCKED_ADD, LOCKED_OR, LOCKED_ADC, LOCKED_SBB, LOCKED_AND, LOCKED_SUB, LOCKED_XOR, /* group 1's order */
	LOCKED_NOT, LOCKED_NEG, LOCKED_INC, LOCKED_DEC,
	LOCKED_XADD, LOCKED_XCHG, LOCKED_CMPXCHG, LOCKED_CMPXCHG2, /* CMPXCHG8B or CMPXCHG16B */
	LOCKED_BTS, LOCKED_BTR, LOCKED_BTC,
	LOCKED_OP_COUNT,
};

struct emu_locked {
	uint8_t len;  /* of the instruction, in bytes */
	enum emu_locked_op op;
	uint8_t size; /* of the memory operand: 1, 2, 4, 8 or 16 */
	int reg;      /* the register operand (0-15 in encoding order: RAX, RCX, RDX, RBX, ...), or -1 */
	bool high8;   /* reg is AH, CH, DH or BH (a byte register with no REX prefix) */
	bool has_imm;
	uint64_t imm; /* sign-extended to the operand size; BTx: the bit offset */
	/* The address: [base + index * scale + disp], RIP-relative from the next instruction, plus FS or GS. */
	int base, index; /* -1: none */
	uint8_t scale;
	bool rip_relative;
	int64_t disp;
	int seg; /* 0: none; 4: FS, 5: GS */
};

/* Decodes one of the forms above from code[0..n); 0, or -EINVAL for anything else. */
int emu_locked_decode(const uint8_t *code, size_t n, struct emu_locked *out);

/*
 * The guest-virtual address the instruction accesses, for the registers r
 * and the segment bases: for BTS/BTR/BTC with a register bit offset, the
 * operand-sized piece that holds the bit (the offset is signed and reaches
 * beyond the operand). rip is the instruction's address.
 */
uint64_t emu_locked_address(const struct emu_locked *in, const struct kvm_regs *r, uint64_t rip, uint64_t fs_base,
			    uint64_t gs_base);

/*
 * Executes it on mem (the host address of the operand, in guest RAM) with
 * the host's own locked instruction, and updates r: the register operands
 * as the CPU writes them and the arithmetic flags of RFLAGS, which are the
 * host CPU's, undefined ones included. RIP is left to the caller.
 */
void emu_locked_exec(const struct emu_locked *in, void *mem, struct kvm_regs *r);

#endif
