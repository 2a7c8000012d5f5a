/* SPDX-License-Identifier: MIT */
/*
 * The emulation engine: runs a vCPU's guest code in an emulator (Unicorn 2,
 * QEMU's TCG as a library) instead of KVM, on the same guest memory, and
 * counts exactly what retires. The exact vPMU backend uses it for vCPUs
 * whose enabled counters only an emulator can count on this host; it knows
 * nothing about PMU models.
 *
 * What it guarantees:
 * - State: a run starts from the KVM register state it is given (general
 *   registers, RIP, RFLAGS, FS/GS bases, CR0/CR3/CR4/EFER, x87/SSE state as
 *   KVM_GET_FPU has it) and leaves the same structures updated, so that KVM
 *   resumes exactly where the engine stopped, at an instruction boundary.
 * - Memory: the emulator runs flat; every guest-virtual page it touches is
 *   translated by the page walker (vmi/guest_walk.h) under the run's CR3,
 *   checked against the guest's present, user/supervisor, write and NX bits
 *   (and SMEP/SMAP, CR0.WP in ring 0), its accessed bit set (and its dirty bit
 *   on the first write), and mapped onto the guest RAM itself: no copy.
 *   Mappings are the engine's TLB: they live until the CR3 changes or
 *   emu_invalidate(), which the VMM calls where the guest's own TLB would
 *   be flushed (MOV to a control register, INVLPG, INVPCID, WRMSR run in
 *   KVM) and whenever the guest ran in KVM for longer than one instruction.
 *   Ring 0 and ring 3 each have their own emulator, mappings and
 *   translated code, so that neither's survive only until the other runs.
 * - One privilege level per run: the engine never executes an instruction
 *   that can change CPL, so every instruction of a run counts in the run's
 *   ring (counts[0] ring 3, counts[1] ring 0).
 * - Hand-back: the engine stops *before* any instruction it must not run
 *   (emu_decode.h lists the classes: system instructions, values only the
 *   real CPU has, AVX and later, locked instructions with other vCPUs running,
 *   undecodable bytes) and before any memory access the guest's page tables
 *   refuse or that leaves RAM (KVM then raises the #PF or does the MMIO).
 *   KVM executes that instruction; the engine has counted nothing for it.
 * - Counting: instructions, near branches and taken near branches, exact.
 *   A REP string instruction counts once, when it completes.
 * - Watches: a run stops right after the instruction that brings a watched
 *   count to its target, so an overflow happens on the exact instruction.
 * - Budget: a run stops at the first block boundary at or past max_insns, so
 *   that the VMM can look for due interrupts; it is not exact.
 */
#ifndef KVMPROF_EMU_H
#define KVMPROF_EMU_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stdint.h>

#include "emu_decode.h"
#include "guest_mem.h"

/*
 * The CPU model the engine's Unicorn emulates (UC_CPU_X86_HASWELL of
 * <unicorn/unicorn.h>): what emu_decode's hand-backs were checked against
 * (test_emu_vs_cpu compares it with the host CPU).
 */
#define EMU_UNICORN_CPU_MODEL UC_CPU_X86_HASWELL

enum emu_event { EMU_EV_INSNS, EMU_EV_BRANCHES, EMU_EV_TAKEN, EMU_EV_COUNT };

#define EMU_RING_USER 1u   /* CPL 3 */
#define EMU_RING_KERNEL 2u /* CPL 0 */

struct emu_counts {
	uint64_t ev[2][EMU_EV_COUNT]; /* [0] ring 3, [1] ring 0 */
};

/* Stop once `target` more events of this kind retire in one of `rings`. */
struct emu_watch {
	enum emu_event event;
	unsigned int rings;
	uint64_t target; /* >= 1 */
};

#define EMU_MAX_WATCHES 11

struct emu_run_args {
	uint64_t max_insns; /* the budget: stop at a block boundary past it */
	/* Non-zero: stop at the next block boundary, as for the budget (a signal handler sets it). */
	const volatile uint8_t *stop_flag;
	unsigned int nwatch;
	struct emu_watch watch[EMU_MAX_WATCHES];
	/*
	 * Optional: does a hand-back instruction in the emulator's place
	 * without ending the run (the VMM's RDTSC, a locked instruction), from
	 * the general registers (RIP at it) and the run's system registers;
	 * true if done: registers updated, RIP past it. It then counts as an
	 * instruction that retired in the emulator, watches included. Only
	 * for instructions whose result needs nothing the run has not told
	 * the caller yet (not RDPMC, whose counter lags the run's counts).
	 * Of the system registers it may change the FS and GS bases only
	 * (SWAPGS, WRGSBASE): the run goes on with them and returns them.
	 */
	bool (*in_place)(void *opaque, enum emu_handback why, struct kvm_regs *regs, struct kvm_sregs *sregs);
	void *in_place_opaque;
};

/* A page fault's error code (Intel SDM vol. 3, 4.7; AMD APM vol. 2, 8.4.2). */
#define EMU_PF_P (1u << 0)    /* a present page refused the access (clear: not present) */
#define EMU_PF_W (1u << 1)    /* a write */
#define EMU_PF_U (1u << 2)    /* made at CPL 3 */
#define EMU_PF_RSVD (1u << 3) /* an entry with reserved bits set */
#define EMU_PF_I (1u << 4)    /* an instruction fetch (reported with EFER.NXE or CR4.SMEP) */

enum emu_stop {
	EMU_STOP_BUDGET,   /* max_insns reached */
	EMU_STOP_WATCH,    /* watch[watch_hit] reached its target */
	EMU_STOP_HANDBACK, /* the instruction at RIP must run in KVM: handback says why */
};

struct emu_result {
	enum emu_stop stop;
	enum emu_handback handback;
	unsigned int watch_hit;
	/* A FAULT hand-back the guest refuses (KVM raises #PF, or #GP if not canonical), not an access outside RAM (MMIO). */
	bool page_fault;
	/*
	 * The #PF a CPU raises there, where the engine can name it (pf_valid):
	 * the address (CR2: in the page that refused the access) and the error
	 * code (EMU_PF_*). Not for a non-canonical address (#GP), nor for
	 * tables outside RAM.
	 */
	bool pf_valid;
	uint64_t pf_addr;
	uint32_t pf_code;
	struct emu_counts counts; /* what retired in this run */
};

/* The vCPU state that moves between KVM and the engine. */
struct emu_state {
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct kvm_fpu fpu;
};

struct emu;

/* smp: other vCPUs may run at the same time (locked instructions go to KVM). */
int emu_create(struct emu **out, const struct guest_mem *mem, bool smp, char *err, size_t err_size);
void emu_destroy(struct emu *e);

/* Drops every mapping and decoded block: the guest's page tables or code may have changed. */
void emu_invalidate(struct emu *e);

/*
 * What a CR3 write with CR4.PGE flushes from a TLB: every mapping and
 * decoded block but those of global pages (in ring 0, a Linux kernel's
 * text and direct map), which the guest flushes itself (INVLPG, a CR4.PGE
 * toggle) when it changes them.
 */
void emu_flush_nonglobal(struct emu *e);

/*
 * Runs from st until a stop; st is updated to where it stopped. Returns 0
 * (the reason in r) or a negative errno when the engine itself failed (st is
 * then unchanged and the caller should run the vCPU in KVM).
 */
int emu_run(struct emu *e, struct emu_state *st, const struct emu_run_args *a, struct emu_result *r);

/* Engine statistics, for --vpmu-stats. */
struct emu_stats {
	uint64_t runs, insns, handbacks[EMU_HB_COUNT], pages_mapped, blocks_decoded, invalidations;
	uint64_t flags_repaired, flags_unknown; /* RFLAGS after a page fault inside a block (emu_flags.h) */
	uint64_t sites;        /* hand-backs inside blocks stopped at by a code hook */
	uint64_t sync_sites;   /* code hooks that only have Unicorn store RIP (emu_block_info.sync) */
	uint64_t unsynced_handbacks; /* blocks handed to KVM for want of such a hook */
	uint64_t partial_runs; /* blocks run part-way to an "until" address (retranslated) */
	uint64_t in_place;     /* hand-backs done by emu_run_args.in_place without ending the run */
	uint64_t stale_mappings; /* mappings found at a write to name another page than the guest's entry now does */
	uint64_t ran_past_fault; /* stops where Unicorn had gone on past the access that stopped it (fault_rip) */
	uint64_t cr3_invalidations; /* emu_run found a CR3 other than its mappings' (no flush seen before) */
	uint64_t nonglobal_flushes; /* of the flushes, emu_flush_nonglobal's (global pages kept) */
	uint64_t helper_faults_first; /* helper accesses refused before the instruction ran (helper_access_ok) */
	uint64_t run_ns; /* time inside emu_run */
	uint64_t map_ns, unmap_ns, decode_ns; /* of it: mapping pages, dropping every mapping (emu_invalidate), decoding blocks */
};

void emu_get_stats(const struct emu *e, struct emu_stats *s);

#endif
