/* SPDX-License-Identifier: MIT */
/*
 * The arithmetic flags after a memory access stopped Unicorn in the middle
 * of a translated block (emu.c's page-fault hand-backs and first writes to
 * a clean page).
 *
 * QEMU's TCG keeps x86 flags lazily: the last flag-setting operation's
 * operands (CC_DST, CC_SRC, CC_SRC2) and which operation it was (cc_op),
 * from which RFLAGS is computed on demand. Inside a block the translator
 * knows cc_op statically and stores it only when the block ends; QEMU
 * restores it from the block's per-instruction records when an access
 * faults. Unicorn 2.0.1 (Debian 12's) does not on the fault its memory
 * hooks raise: every register and RIP come out right, but cc_op is the one
 * the block started with, so RFLAGS reads wrong (reserved bits set from a
 * stale operand, a wrong ZF or CF) and the guest would get it: in the #PF
 * frame KVM pushes, and after it in every branch on those flags. Unicorn
 * 2.1.4 restores it (upstream's "fix load_helper & store_helper for PC
 * sync"); Debian 12 has no such package.
 *
 * The repair asks Unicorn's own translator: a second, scratch Unicorn runs
 * the same instructions, from the block's start to the stop, on scratch
 * memory, and its cc_op at the stop (where a run's end stores it) is the
 * one the translator had there. With it patched into a saved copy of the
 * main CPU state (and EFLAGS' other bits, where leaving the run stored the
 * wrong flags), Unicorn computes the right RFLAGS, which goes back in.
 * Where the instructions before the stop set no flags, or the last that
 * does is a shift or rotate by CL (QEMU picks its cc_op at run time: a
 * count of 0 leaves the flags as they were, and stores it as it runs), the
 * main CPU's cc_op is right already; two scratch runs that differ in the
 * cc_op they start with (every Unicorn run starts with CC_OP_EFLAGS; the
 * second first runs an ADD and jumps to the block) and in CL tell these
 * from a cc_op the translator knows, which both end with. The copy is read at QEMU's
 * CPUX86State offsets (registers, EIP, EFLAGS, CC_DST, CC_SRC, CC_SRC2,
 * cc_op, in that order since QEMU 0.10), which emu_flags_open() checks
 * against this Unicorn before the engine trusts them.
 */
#ifndef KVMPROF_EMU_FLAGS_H
#define KVMPROF_EMU_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unicorn/unicorn.h>

#include "emu_decode.h"

struct emu_flags;

/* The scratch Unicorn, after checking the CPU state layout; err says why not. */
int emu_flags_open(struct emu_flags **out, uc_engine *main_uc, char *err, size_t err_size);
void emu_flags_close(struct emu_flags *f);

/* Forgets what it learnt about code that may have changed. */
void emu_flags_forget(struct emu_flags *f);

/*
 * uc (a Unicorn of the engine's, with the CPU model main_uc has) stopped at
 * rip, inside the translated block block (its bytes readable through uc),
 * on a memory access or (at_hook) in a code hook: sets its RFLAGS right.
 * At a code hook Unicorn (2.0.1 to 2.1.4) stores cc_op only if it differs
 * from the one at the last hook it translated (DisasContext.last_cc_op,
 * never initialised, and not updated where cc_op is stored otherwise), so
 * there the repair runs whatever a fault does. sys_rflags: RFLAGS as the
 * run began, for the bits no instruction the engine runs changes (IF,
 * IOPL, AC...). 1 if they were wrong, 0 if they were right, -1 if the
 * repair could not run (the flags are then unknown).
 */
int emu_flags_fix(struct emu_flags *f, uc_engine *uc, const struct emu_block_info *block, uint64_t rip,
		  uint64_t sys_rflags, bool at_hook);

/* Makes uc report a faulting access at its instruction, not its block's start (a never-called memory hook). */
int emu_precise_faults(uc_engine *uc, uc_hook *hook);

/* Why the last emu_flags_fix() returned -1. */
const char *emu_flags_why(const struct emu_flags *f);

#endif
