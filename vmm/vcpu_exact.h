/* SPDX-License-Identifier: MIT */
/*
 * The exact vPMU backend's side of the run loop. While one of a vCPU's
 * enabled counters counts instructions or branches, the vCPU runs in the
 * emulation engine (emu.h) instead of KVM, in ring 3 and ring 0 alike,
 * and the engine's exact counts feed the counters. KVM still does what
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
#ifndef KVMPROF_VCPU_EXACT_H
#define KVMPROF_VCPU_EXACT_H

#include <stdbool.h>
#include <stdint.h>

#include "emu.h"
#include "guest_debug.h"
#include "vcpu_hooks.h"
#include "vpmu.h"

struct vcpu;
struct vm;

struct vcpu_exact_stats {
	uint64_t engine_runs, steps, step_insns, steps_faulted, escapes, engine_errors, irets, msrs_in_place, tsc_in_place;
	uint64_t events_delivered; /* NMIs and interrupts KVM delivered in a step */
	uint64_t events_by_vmm;    /* NMIs, interrupts and exceptions the VMM delivered itself (vmm_events) */
	uint64_t ack_runs;         /* KVM_RUNs that only had KVM acknowledge an interrupt (vmm_events) */
	uint64_t transfer_ns;      /* in vcpu_exact_run around the engine: state in and out, checks */
	uint64_t step_ns;          /* from a step's start to its breakpoint */
};

struct vcpu_exact {
	bool enabled;      /* the VM uses the exact backend */
	struct emu *emu;   /* started when a counter first needs it */
	struct emu_decoder *dec;
	bool stepping;     /* breakpoints are armed and KVM runs the vCPU */
	bool flush;        /* the guest may have changed translations in KVM: the engine's mappings go */
	bool exit_unfinished; /* KVM's last exit completes at the next KVM_RUN (I/O, MMIO, MSR) */
	struct emu_state state; /* the vCPU's state as the engine left it */
	bool state_valid;       /* state is current (KVM has not run since) */
	bool kvm_stale;         /* KVM's registers and FPU are older than state */
	uint64_t bp[4];
	unsigned int nbp;
	unsigned int bp_after; /* bp[0..bp_after) lie after the stepped instruction: it completed */
	int bp_vector[4];      /* the vector whose handler bp[i] is, or -1 */
	bool single_step;      /* the step uses the trap flag (guest ring 3 runs natively here) */
	/*
	 * Where hardware breakpoints do not fire (exact_probe.h): every step is
	 * a single step, and events that would start a handler KVM cannot be
	 * stopped in (NMIs, interrupts, the exceptions of UD2, INT3 and INT n)
	 * are delivered by the VMM itself, KVM only acknowledging interrupts.
	 */
	bool vmm_events;
	bool blockirq;         /* KVM_GUESTDBG_BLOCKIRQ: no interrupt delivered inside a single step */
	bool step_rep;         /* the stepped instruction has a REP prefix: a single step may end inside it */
	bool step_branch, step_taken_bp[4];
	unsigned int step_ring; /* VPMU_EXACT_RING_* of the stepped instruction */
	uint64_t step_rip;      /* where it is */
	struct kvm_regs step_regs; /* the registers KVM got for the step */
	unsigned int step_len;  /* its length; 0: an event delivery, or not decoded */
	uint64_t owed[VPMU_EXACT_TAKEN + 1]; /* events of a completed step, added at the next run */
	unsigned int owed_ring;
	bool timer_seen;     /* timer_cur holds the LAPIC timer's count at the last look */
	uint32_t timer_cur;
	bool timer_due;      /* it expired while the vCPU was in the engine */
	int irr_vector;      /* the highest IRR bit at the last look, or -1 */
	uint64_t step_start_ns;
	struct vcpu_exact_stats stats;
};

int vcpu_exact_init(struct vcpu *vcpu);
void vcpu_exact_destroy(struct vcpu *vcpu);

/* Whether the vCPU runs through vcpu_exact_run() rather than a plain KVM_RUN now. */
bool vcpu_exact_active(struct vcpu *vcpu);

/*
 * Runs the vCPU once: in the engine (returns 0 with *kvm_ran false: no exit
 * to handle) or as a KVM step (returns KVM_RUN's result, *kvm_ran true).
 */
int vcpu_exact_run(struct vcpu *vcpu, bool *kvm_ran);

/* A KVM_EXIT_DEBUG: true if it is a step's breakpoint (handled). */
bool vcpu_exact_debug_exit(struct vcpu *vcpu);

/* After any other exit of a step: finds an escaped vCPU. */
void vcpu_exact_after_exit(struct vcpu *vcpu);

void vcpu_exact_print_stats(struct vm *vm);

/* The engine's place in each vCPU's life (vcpu_hooks.h): it takes the runs of counting vCPUs. Its state there. */
extern const struct vcpu_hooks vcpu_exact_hooks;
/* Its KVM steps as a client of the guest debug owner (guest_debug.h). */
extern const struct guest_debug_client vcpu_exact_debug_client;

static inline struct vcpu_exact *vcpu_exact_of(const struct vcpu *vcpu)
{
	return vcpu_feature(vcpu, &vcpu_exact_hooks);
}

#endif
