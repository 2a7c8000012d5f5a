/* SPDX-License-Identifier: MIT */
/* What the VMM does in the guest's place for the exact backend (see exact_guest.c). */
#ifndef KVMPROF_EXACT_GUEST_H
#define KVMPROF_EXACT_GUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "emu.h"
#include "guest_walk.h"

struct vcpu;

#define RFLAGS_TF (1ULL << 8)
#define RFLAGS_RF (1ULL << 16)

/* The paging a state's control registers describe; -EINVAL outside long mode. */
int exact_paging(const struct emu_state *st, struct guest_paging *pg);

/* guest_read_virt of this vCPU's guest RAM. */
int exact_read_virt(struct vcpu *vcpu, const struct guest_paging *pg, uint64_t gva, void *buf, uint64_t len);

/* The handler address of IDT vector vec (a 64-bit gate), or 0. */
uint64_t exact_idt_handler(struct vcpu *vcpu, const struct emu_state *st, unsigned int vec);

/* Whether the CPU pushes an error code for vector vec. */
bool exact_pushes_error_code(int vec);

/* Clears flags in an interrupt frame's RFLAGS image at gva (RF, or the TF of a single step). */
void exact_clear_frame_flags(struct vcpu *vcpu, const struct guest_paging *pg, uint64_t gva, uint64_t flags);

/* Whether the instruction at RIP is IRETQ (48 cf). */
bool exact_is_iretq(struct vcpu *vcpu, const struct emu_state *st, const struct guest_paging *pg);

/* IRETQ from ring 0 to ring 3, done by the VMM; false if the frame is not a plain 64-bit return to ring 3. */
bool exact_iret_to_user(struct vcpu *vcpu, struct emu_state *st, const struct guest_paging *pg);

/*
 * Delivers interrupt or exception vec through the guest's IDT in the VMM
 * (64-bit mode), as the CPU would: frame pushed with return address
 * ret_rip and error code err (none if negative), the handler's CS, stack
 * and RFLAGS loaded, KVM's registers set. soft: INT n or INT3 (the gate's
 * DPL is checked). False, and nothing changed, where a plain delivery
 * cannot be done (KVM must deliver it).
 */
bool exact_deliver_event(struct vcpu *vcpu, struct emu_state *st, unsigned int vec, uint64_t ret_rip, int64_t err,
			 bool soft);

/* RDMSR or WRMSR of a vPMU register in ring 0, answered in place; false for anything else. */
bool exact_pmu_msr(struct vcpu *vcpu, struct emu_state *st);

/* RDTSC or RDTSCP from KVM's guest TSC; false where it must fault (CR4.TSD in ring 3). */
bool exact_rdtsc(struct vcpu *vcpu, struct emu_state *st);

#endif
