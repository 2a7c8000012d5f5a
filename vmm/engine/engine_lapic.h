/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_ENGINE_LAPIC_H
#define KVMPROF_ENGINE_LAPIC_H

#include <stdbool.h>

struct vcpu;

/*
 * The highest vector requested in the LAPIC's IRR or by its expired timer,
 * or -1; *deliverable if its class beats TPR and ISR; *timer_vector: the
 * LAPIC timer's, or -1. Records the highest IRR bit in the engine's irr_vector.
 */
int engine_lapic_pending(struct vcpu *vcpu, bool *deliverable, int *timer_vector);

struct engine_vcpu;
/*
 * An entry into KVM lets it take an expired timer: forgets the expiry, the
 * count it was computed from and the TSC deadline read, lest a tick KVM
 * has delivered be taken as due.
 */
void engine_lapic_forget(struct engine_vcpu *x);

struct emu_state;
/* WRMSR in ring 0 to an x2APIC register or the TSC deadline, done through KVM_SET_MSRS; false: KVM's step does it. */
bool engine_lapic_wrmsr_in_place(struct vcpu *vcpu, struct emu_state *st);

#endif
