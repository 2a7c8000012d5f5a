/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_VMM_PMU_H
#define KVMPROF_VMM_PMU_H

#include <stdbool.h>
#include <time.h>

#include "../vpmu/backend_exact.h"
#include "../vpmu/backend_perf.h"
#include "../vpmu/vpmu.h"

struct vm;
struct vcpu;

enum vmm_vpmu_backend {
	VPMU_BACKEND_AUTO,
	VPMU_BACKEND_EMULATED,
	VPMU_BACKEND_KVM,
	VPMU_BACKEND_CLOCK,
	VPMU_BACKEND_EXACT,
};

/* What the command line asked for. */
struct vmm_vpmu_options {
	int model;                /* enum vpmu_model, or -1: the host's vendor */
	unsigned int counters;    /* 0: the model's maximum */
	enum vmm_vpmu_backend backend;
	enum vpmu_mode mode;
	const char *filter_path;
	bool stats;
};

/* Per-VM state: the resolved configuration. */
struct vmm_pmu {
	struct vpmu_config cfg;
	struct vpmu_filter filter;
	enum vmm_vpmu_backend backend; /* resolved: EMULATED or KVM (or model OFF) */
};

/* Per-vCPU state. */
struct vcpu_pmu {
	struct vpmu_vcpu v;
	struct vpmu_perf_backend perf;
	struct vpmu_exact_backend exact;
	timer_t exit_timer;
	bool timer_created, timer_armed;
	uint64_t exits;
};

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
/* KVM_EXIT_X86_RDMSR / WRMSR. */
void vcpu_pmu_handle_msr(struct vcpu *vcpu);

void vmm_pmu_print_stats(struct vm *vm);

#endif
