/* SPDX-License-Identifier: MIT */
/*
 * The emulation engine in the run loop: the VMM's own, for whatever needs
 * a vCPU's code run instruction by instruction. While one of its clients
 * (struct engine_client: the exact vPMU backend's counters, say) needs
 * a vCPU in some ring, the vCPU runs in the emulator (emu.h) instead of
 * KVM, in ring 3 and ring 0 alike, stopping where the clients' watches say
 * and telling them exactly what retired. KVM still does what
 * only it can: an instruction the engine hands back, and the delivery of
 * interrupts and NMIs (PMIs). That is a "KVM step": the vCPU enters KVM
 * with hardware breakpoints on the places it can come back to (the next
 * instruction, a branch or IRETQ target, the handler of the exception the
 * instruction raises, the handler of a pending NMI or interrupt), and the
 * first breakpoint hit brings it back to the engine. The stepped
 * instruction counts once if it completed (a breakpoint after it hit),
 * not at all if it faulted.
 *
 * Where the vCPU goes somewhere no breakpoint covers (a handler KVM ran
 * natively that switches processes, say), it has "escaped": the VMM finds
 * it at the next exit (a 1 ms timer makes one), goes back to the engine,
 * and counts the escape; what ran natively meanwhile is not counted.
 */
#ifndef KVMPROF_ENGINE_H
#define KVMPROF_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "emu.h"
#include "guest_debug.h"
#include "vcpu_hooks.h"

struct vcpu;
struct vm;

/*
 * What uses the engine. Rings are EMU_RING_USER and EMU_RING_KERNEL. Every
 * callback is on the vCPU's thread; any may be NULL.
 */
struct engine_client {
	const char *name;    /* for messages: "the exact vPMU backend" */
	const char *instead; /* where the engine is refused: what does without it (NULL: nothing to say) */
	/* Whether this VM uses the client at all (decided at VM setup; NULL: always). */
	bool (*wanted)(const struct vm *vm);
	/* The rings in which it needs the vCPU run in the engine now; 0: none (KVM may run it). */
	unsigned int (*rings)(struct vcpu *vcpu);
	/* Where a run must stop: up to max watches (an event count reaching its target); how many. */
	unsigned int (*watches)(struct vcpu *vcpu, struct emu_watch *w, unsigned int max);
	/* What retired since the last call, by ring: in the engine, in a KVM step, or done by the VMM. */
	void (*counted)(struct vcpu *vcpu, const struct emu_counts *c);
	/*
	 * A RDMSR (write false: fill *val) or WRMSR (*val) in ring 0 that the
	 * engine would hand to KVM: true if the client answered it here, as an
	 * MSR exit would have (its own registers); false leaves it to KVM.
	 */
	bool (*msr)(struct vcpu *vcpu, uint32_t msr, bool write, uint64_t *val);
	/*
	 * An RDPMC the guest may execute (ring 0, or CR4.PCE set): true with
	 * the counter ECX names in *val; false: there is no such counter, and
	 * the engine raises the #GP hardware raises. A VM none of whose clients
	 * has this leaves RDPMC to KVM.
	 */
	bool (*rdpmc)(struct vcpu *vcpu, uint32_t ecx, uint64_t *val);
};

/* Every client, NULL-terminated (vm_features.c): a new one is a file with a struct engine_client and a row. */
extern const struct engine_client *const engine_clients[];

#define ENGINE_CLIENTS_MAX 4

struct engine_stats {
	uint64_t engine_runs, steps, step_insns, steps_faulted, escapes, engine_errors, irets, msrs_in_place, tsc_in_place;
	uint64_t rdpmcs_in_place, locked_in_place, cli_in_place, sti_in_place, sreg_reads_in_place, gs_in_place, ac_in_place;
	uint64_t apic_msrs_in_place, pkru_in_place;
	uint64_t serializing_flushes; /* IRETQs to themselves (sync_core) that dropped the translated code */
	/* Why the engine dropped its mappings and decoded blocks (each time counted once, at the first reason). */
	uint64_t flushes_step;   /* a KVM step of an instruction that changes translations (MOV CR3, INVLPG...) */
	uint64_t flushes_native; /* the guest ran natively: an escape, or the vCPU out of the engine for a while */
	uint64_t xsave_refused;       /* state transfers KVM_SET_XSAVE refused (KVM_SET_FPU instead) */
	uint64_t halts, halt_wakes_by_vmm; /* HLTs KVM held halted after a single step; of them, woken by an event the VMM delivered */
	uint64_t events_delivered; /* NMIs and interrupts KVM delivered in a step */
	uint64_t events_by_vmm;    /* NMIs, interrupts and exceptions the VMM delivered itself (vmm_events) */
	uint64_t page_faults_by_vmm; /* of them, #PFs of accesses the guest's tables refused */
	uint64_t syscalls_in_place;   /* SYSCALLs done by the VMM (vmm_events: engine_syscall) */
	uint64_t sysrets_in_place;    /* SYSRETs done by the VMM (vmm_events: engine_sysret) */
	uint64_t step_tf_cleared;     /* frames of an event KVM delivered in a single step, cleared of the step's TF */
	uint64_t ack_runs;         /* KVM_RUNs that only had KVM acknowledge an interrupt (vmm_events) */
	uint64_t transfer_ns;      /* in engine_run around the engine: state in and out, checks */
	uint64_t step_ns;          /* from a step's start to its breakpoint */
};

struct engine_vcpu {
	bool enabled;      /* some client is wanted in this VM */
	const struct engine_client *client[ENGINE_CLIENTS_MAX]; /* those clients, NULL-terminated */
	struct emu *emu;   /* started when a client first needs it */
	struct emu_decoder *dec;
	bool stepping;     /* breakpoints are armed and KVM runs the vCPU */
	bool flush;        /* the guest may have changed translations in KVM: the engine's mappings go */
	bool flush_nonglobal; /* a KVM step wrote CR3: all but the global mappings go */
	bool exit_unfinished; /* KVM's last exit completes at the next KVM_RUN (I/O, MMIO, MSR) */
	struct emu_state state; /* the vCPU's state as the engine left it */
	bool state_valid;       /* state is current (KVM has not run since) */
	bool kvm_stale;         /* KVM's registers and FPU are older than state */
	/*
	 * The engine ran the instruction after an STI or MOV SS whose interrupt
	 * shadow KVM still reports (KVM clears it only when it runs the vCPU).
	 */
	bool shadow_spent;
	/*
	 * An STI done in place in this run, and the RIP after it: if the run
	 * stops there, the instruction after it has not run yet and KVM is
	 * given STI's interrupt shadow (STI; HLT must not miss its wake-up).
	 */
	bool sti_in_run;
	uint64_t sti_next_rip;
	/*
	 * SWAPGS and WR{FS,GS}BASE done in place: KERNEL_GS_BASE as the last
	 * SWAPGS left it (read from KVM at the first one after KVM ran), and
	 * whether the bases changed since KVM last had them (state_to_kvm
	 * writes them as MSRs before KVM runs the guest).
	 */
	bool kgs_valid, bases_dirty;
	uint64_t kernel_gs_base;
	/* KVM's XSAVE image from the last look (the state's x87/SSE part goes back in it: emu_fpu.h; RDPKRU reads it). */
	bool xsave_valid;
	struct kvm_xsave xsave;
	/*
	 * A single step of HLT returned with KVM holding the vCPU halted
	 * (KVM_MP_STATE_HALTED): until it wakes, the engine must not run it
	 * (engine.c, still_halted).
	 */
	bool halted;
	bool step_hlt; /* the single step is of HLT: only that one can leave KVM holding the vCPU halted */
	bool step_fault; /* the single step is of an access the guest's page tables refuse (emu_result.page_fault) */
	uint64_t bp[4];
	unsigned int nbp;
	unsigned int bp_after; /* bp[0..bp_after) lie after the stepped instruction: it completed */
	int bp_vector[4];      /* the vector whose handler bp[i] is, or -1 */
	bool single_step;      /* the step uses the trap flag (guest ring 3 runs natively here) */
	/*
	 * Where hardware breakpoints do not fire (engine_probe.h): every step is
	 * a single step, and events that would start a handler KVM cannot be
	 * stopped in (NMIs, interrupts, the exceptions of UD2, INT3 and INT n)
	 * are delivered by the VMM itself, KVM only acknowledging interrupts.
	 */
	bool vmm_events;
	bool blockirq;         /* KVM_GUESTDBG_BLOCKIRQ: no interrupt delivered inside a single step */
	bool tr_busy_reported; /* KVM_GET_SREGS says TR is busy whatever KVM holds (engine_probe.h) */
	bool step_rep;         /* the stepped instruction has a REP prefix: a single step may end inside it */
	bool step_branch, step_taken_bp[4];
	unsigned int step_ring; /* EMU_RING_* of the stepped instruction */
	uint64_t step_rip;      /* where it is */
	struct kvm_regs step_regs; /* the registers KVM got for the step */
	uint16_t step_cs, step_ss; /* and its code and stack selectors */
	unsigned int step_len;  /* its length; 0: an event delivery, or not decoded */
	uint64_t owed[EMU_EV_COUNT]; /* events of a completed step, told the clients at the next run */
	unsigned int owed_ring;
	bool timer_seen;     /* timer_cur holds the LAPIC timer's count at the last look */
	uint32_t timer_cur;
	bool timer_due;      /* it expired while the vCPU was in the engine */
	/*
	 * TSC-deadline mode: KVM's deadline was read since KVM last ran or the
	 * guest last wrote a timer register, and when (CLOCK_MONOTONIC) the
	 * guest's TSC reaches it; 0: no deadline armed (engine_lapic.c).
	 */
	bool deadline_known;
	uint64_t deadline_ns;
	long tsc_khz; /* the vCPU's TSC rate (KVM_GET_TSC_KHZ); 0: not read yet */
	int irr_vector;      /* the highest IRR bit at the last look, or -1 */
	/* The guest's NMI handler runs (NMIs blocked until its IRETQ), as of the run's start and what the VMM did since. */
	bool nmi_blocked;
	uint64_t step_start_ns;
	struct engine_stats stats;
};

int engine_vcpu_init(struct vcpu *vcpu);
void engine_vcpu_destroy(struct vcpu *vcpu);

/* The vCPU's state as the engine left it after its last run, or NULL if KVM ran the vCPU since. */
const struct emu_state *engine_guest_state(struct vcpu *vcpu);

/* Whether the guest is inside its NMI handler, for an access the engine hands a client (engine_client.msr). */
bool engine_nmi_blocked(struct vcpu *vcpu);

/* Whether the vCPU runs through engine_run() rather than a plain KVM_RUN now. */
bool engine_active(struct vcpu *vcpu);

/*
 * Runs the vCPU once: in the engine (returns 0 with *kvm_ran false: no exit
 * to handle) or as a KVM step (returns KVM_RUN's result, *kvm_ran true).
 */
int engine_run(struct vcpu *vcpu, bool *kvm_ran);

/* A KVM_EXIT_DEBUG: true if it is a step's breakpoint (handled). */
bool engine_debug_exit(struct vcpu *vcpu);

/* After any other exit of a step: finds an escaped vCPU. */
void engine_after_exit(struct vcpu *vcpu);

void engine_print_stats(struct vm *vm);

/* The engine's place in each vCPU's life (vcpu_hooks.h): it takes the runs its clients need. Its state there. */
extern const struct vcpu_hooks engine_hooks;
/* Its KVM steps as a client of the guest debug owner (guest_debug.h). */
extern const struct guest_debug_client engine_debug_client;

static inline struct engine_vcpu *engine_of(const struct vcpu *vcpu)
{
	return vcpu_feature(vcpu, &engine_hooks);
}

/*
 * The vCPU's registers at this exit, when the engine holds them (KVM's are
 * stale while it runs the vCPU): true with *regs and *sregs set.
 */
static inline bool engine_regs(const struct vcpu *vcpu, const struct kvm_regs **regs, const struct kvm_sregs **sregs)
{
	const struct engine_vcpu *x = engine_of(vcpu);

	if (!x || !x->enabled || !x->state_valid)
		return false;
	*regs = &x->state.regs;
	*sregs = &x->state.sregs;
	return true;
}

#endif
