/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_VMM_PMU_H
#define KVMPROF_VMM_PMU_H

#include <stdbool.h>
#include <time.h>

#include "backend_exact.h"
#include "backend_perf.h"
#include "backends.h"
#include "vpmu.h"
#include "vcpu_hooks.h"
#include "vpmu_names.h"

struct engine_client;

struct vm;
struct vcpu;

/* What the command line asked for. */
/* Per-VM state: the resolved configuration. */
struct vmm_pmu {
	struct vpmu_config cfg;
	struct vpmu_filter filter;
	const struct vpmu_backend_desc *backend; /* the one chosen; NULL when the model is off */
	char passed_over[2 * VPMU_ERR_MAX];      /* --vpmu-backend=auto: why it took none before, for the banner */
};

/* Per-vCPU state. */
struct vcpu_pmu {
	struct vpmu_vcpu v;
	void *backend;   /* the VMM's backend's state (its state_size bytes), NULL for KVM's */
	uint64_t exits;
	uint64_t overflows_traced; /* stats.overflows when the last pmu_overflow event went out */
	int sbuf_desc_entry;       /* the guest descriptor's entry of this vCPU, for sample-buffer records (-1: unknown) */
};

/*
 * The VMM implements the PMU itself (the emulated, clock or exact backend)
 * rather than KVM: only then does it keep figures of its own.
 */
static inline bool vmm_pmu_emulating(const struct vmm_pmu *pmu)
{
	return pmu->cfg.model != VPMU_MODEL_OFF && pmu->backend && !pmu->backend->in_kernel;
}

/* Whether instructions and branches come from the VMM's engine (the exact backend). */
static inline bool vmm_pmu_counts_in_engine(const struct vmm_pmu *pmu)
{
	return pmu->cfg.model != VPMU_MODEL_OFF && pmu->backend && pmu->backend->exact;
}

/* The backend's name for messages and the control socket: "none" when the model is off. */
static inline const char *vmm_pmu_backend_name(const struct vmm_pmu *pmu)
{
	return pmu->cfg.model == VPMU_MODEL_OFF || !pmu->backend ? "none" : vpmu_backend_name(pmu->backend->choice);
}

/* Decides model and backend, prints the choice; before any vCPU exists. */
int vmm_pmu_setup(struct vm *vm);
/* Per vCPU, after KVM_CREATE_VCPU and before its CPUID is set. */
int vcpu_pmu_init(struct vcpu *vcpu);
void vcpu_pmu_destroy(struct vcpu *vcpu);
/* Adds or adjusts the PMU's CPUID leaves in a vCPU's CPUID. Returns the new table (may be reallocated). */
struct kvm_cpuid2 *vmm_pmu_cpuid(const struct vm *vm, struct kvm_cpuid2 *cpuid);

/* Run-loop hooks, on the vCPU thread. */
void vcpu_pmu_before_run(struct vcpu *vcpu);
void vcpu_pmu_after_run(struct vcpu *vcpu);
/* Makes KVM_RUN return within ns (a one-shot timer signal to the vCPU thread). */
/* Writes the sample-buffer records of the overflows noticed at this exit (vmm/pmu_sbuf.c). */
void vcpu_pmu_sbuf_flush(struct vcpu *vcpu, uint64_t now_ns);
/* KVM_EXIT_X86_RDMSR / WRMSR. */
void vcpu_pmu_handle_msr(struct vcpu *vcpu);
/*
 * A guest access to a vPMU register, by an MSR exit or done in the
 * engine's place (pmu_engine.c): VPMU_MSR_OK (traced), or the #GP it
 * must raise, with nothing changed and nothing traced.
 */
int vcpu_pmu_msr(struct vcpu *vcpu, uint32_t msr, bool write, uint64_t *val);
/* RDPMC, done in the engine's place (KVM has no exit for it): VPMU_MSR_OK with *val, or VPMU_MSR_GP. */
int vcpu_pmu_rdpmc(struct vcpu *vcpu, uint32_t ecx, uint64_t *val);
/* Inside a run, before a read answered in place: the events counted so far reach the counters. */
void vcpu_pmu_sync(struct vcpu *vcpu);

void vmm_pmu_print_stats(struct vm *vm);

/* The vPMU's place in each vCPU's life (vcpu_hooks.h), and its state there. */
extern const struct vcpu_hooks vmm_pmu_hooks;
/* The exact backend's use of the emulation engine (pmu_engine.c). */
extern const struct engine_client vmm_pmu_engine_client;

static inline struct vmm_pmu *vmm_pmu_of(const struct vm *vm)
{
	return vm_feature(vm, &vmm_pmu_hooks);
}

static inline struct vcpu_pmu *vcpu_pmu_of(const struct vcpu *vcpu)
{
	return vcpu_feature(vcpu, &vmm_pmu_hooks);
}

#endif
