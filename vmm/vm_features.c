/* SPDX-License-Identifier: MIT */
/*
 * The features every VM takes at creation (vcpu_hooks.h), in calling
 * order: the guest sampler and the vPMU set up after the devices; the
 * vPMU, the exact backend's engine and the PMI tracer in each vCPU; a
 * debug exit goes to the engine's breakpoints before the tracer's. A new
 * feature is its own file with a struct vcpu_hooks, and a row here.
 */
#include "exit_stats.h"
#include "guest_sampler.h"
#include "pmi_trace.h"
#include "pmu.h"
#include "vcpu_exact.h"
#include "vcpu_hooks.h"

const struct vcpu_hooks *const vm_features[] = {
	&guest_sampler_hooks,
	&vmm_pmu_hooks,
	&vcpu_exact_hooks,
	&pmi_trace_hooks,
	&exit_stats_hooks,
	NULL,
};
