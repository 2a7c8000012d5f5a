/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_VMM_PMU_H
#define KVMPROF_VMM_PMU_H

#include <stdbool.h>
#include <time.h>

#include "backend_exact.h"
#include "backend_perf.h"
#include "vpmu.h"
#include "vcpu_hooks.h"
#include "vpmu_names.h"

struct vm;
struct vcpu;

/* What the command line asked for. */
/* Per-VM state: the resolved configuration. */
struct vmm_pmu {
	struct vpmu_config cfg;
	struct vpmu_filter filter;
	enum vpmu_backend_choice backend; /* resolved: not AUTO (unless the model is off) */
	char kvm_reason[VPMU_ERR_MAX];    /* why the in-kernel vPMU was not taken, for the banner */
};

/* Per-vCPU state. */
struct vcpu_pmu {
	struct vpmu_vcpu v;
	struct vpmu_perf_backend perf;
	struct vpmu_exact_backend exact;
	timer_t exit_timer;
	bool timer_created, timer_armed;
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
	return pmu->cfg.model != VPMU_MODEL_OFF &&
	       (pmu->backend == VPMU_BACKEND_EMULATED || pmu->backend == VPMU_BACKEND_CLOCK ||
		pmu->backend == VPMU_BACKEND_EXACT);
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
void vcpu_pmu_force_exit(struct vcpu *vcpu, uint64_t ns);
/* Writes the sample-buffer records of the overflows noticed at this exit (vmm/pmu_sbuf.c). */
void vcpu_pmu_sbuf_flush(struct vcpu *vcpu, uint64_t now_ns);
/* KVM_EXIT_X86_RDMSR / WRMSR. */
void vcpu_pmu_handle_msr(struct vcpu *vcpu);

void vmm_pmu_print_stats(struct vm *vm);

/* The vPMU's place in each vCPU's life (vcpu_hooks.h), and its state there. */
extern const struct vcpu_hooks vmm_pmu_hooks;

static inline struct vmm_pmu *vmm_pmu_of(const struct vm *vm)
{
	return vm_feature(vm, &vmm_pmu_hooks);
}

static inline struct vcpu_pmu *vcpu_pmu_of(const struct vcpu *vcpu)
{
	return vcpu_feature(vcpu, &vmm_pmu_hooks);
}

#endif
