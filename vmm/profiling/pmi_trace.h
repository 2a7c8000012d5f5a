/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_VMM_PMI_TRACE_H
#define KVMPROF_VMM_PMI_TRACE_H

/*
 * --vpmu-trace-pmi N: measures what one PMI costs the guest, for the
 * benchmarks. For the first N PMIs injected, the vCPU is single-stepped
 * (KVM_GUESTDBG_SINGLESTEP) from the injection until the guest is back in
 * ring 3: the single-step exits are the ring-0 instructions the guest ran
 * for the PMI, and the other exits in that window are the VM exits its
 * handler caused. At exit it prints min / median / max of both, and the
 * whole run's VM exits by reason.
 */
#include <stdbool.h>
#include <stdint.h>

#include "guest_debug.h"
#include "vcpu_hooks.h"

struct vcpu;
struct vm;

#define PMI_TRACE_MAX 100000

enum { T_PMI, T_TICK, T_KINDS };

struct pmi_trace_vcpu {
	bool armed;            /* breakpoints on the handlers' entries are set */
	bool stepping;         /* inside a traced handler */
	bool disturbed;        /* a PMI was injected into a traced tick: not counted */
	unsigned int kind;     /* T_PMI or T_TICK: what is being stepped */
	uint64_t entry[T_KINDS];     /* the handlers' addresses (IDT) */
	uint64_t steps, exits;       /* of the window being stepped */
	uint64_t first_rip[T_KINDS]; /* first step of the first window: a check */
	unsigned int traced[T_KINDS], traced3[T_KINDS], cap[T_KINDS];
	uint32_t *steps_of[T_KINDS], *exits_of[T_KINDS]; /* per window: ring-3 ones first, ring-0 ones from the end */
	uint64_t by_reason[8]; /* the run's exits, see pmi_trace.c */
	uint64_t stray;        /* windows abandoned or disturbed */
};

/*
 * Per vCPU, after KVM_CREATE_VCPU; 0 or a negative errno. The first one
 * subscribes the VM's tracer to vm_run_end (trace.h), where it counts each
 * KVM exit; the first pmi_trace_destroy unsubscribes it.
 */
int pmi_trace_init(struct vcpu *vcpu);
void pmi_trace_destroy(struct vcpu *vcpu);
/* A PMI was injected into this vCPU (its thread). */
void pmi_trace_injected(struct vcpu *vcpu);
/* KVM_EXIT_DEBUG: true if it was a trace step (and is handled). */
bool pmi_trace_debug_exit(struct vcpu *vcpu);
/* The tracer as a client of the guest debug owner (guest_debug.h). */
extern const struct guest_debug_client pmi_trace_debug_client;
void pmi_trace_print(struct vm *vm);

/* The tracer's place in each vCPU's life (vcpu_hooks.h), and its state there: per vCPU, and its vm_run_end subscriber. */
extern const struct vcpu_hooks pmi_trace_hooks;

static inline struct pmi_trace_vcpu *pmi_trace_vcpu_of(const struct vcpu *vcpu)
{
	return vcpu_feature(vcpu, &pmi_trace_hooks);
}

static inline struct trace_subscriber *pmi_trace_sub_of(const struct vm *vm)
{
	return vm_feature(vm, &pmi_trace_hooks);
}

#endif
