/* SPDX-License-Identifier: MIT */
/*
 * The features every VM takes at creation (vcpu_hooks.h), in calling
 * order: the guest sampler and the vPMU set up after the devices, then
 * the guest debug owner (which needs the vPMU's backend chosen); the vPMU,
 * the emulation engine and the PMI tracer in each vCPU; a debug exit goes
 * to the owner, which offers it to the engine before the tracer. A new
 * feature is its own file with a struct vcpu_hooks, and a row here; a new
 * user of the engine or of the debug registers, a row in its clients.
 */
#include "engine/engine.h"
#include "exit_stats.h"
#include "guest_debug.h"
#include "guest_sampler.h"
#include "pmi_trace.h"
#include "pmu.h"
#include "vcpu_hooks.h"

/* What uses the emulation engine; its runs serve all of them at once. */
const struct engine_client *const engine_clients[] = {
	&vmm_pmu_engine_client,
	NULL,
};

/* The guest debug owner's clients, in the order a debug exit is offered to them. */
const struct guest_debug_client *const guest_debug_clients[] = {
	&engine_debug_client,
	&pmi_trace_debug_client,
	NULL,
};

const struct vcpu_hooks *const vm_features[] = {
	&guest_sampler_hooks,
	&vmm_pmu_hooks,
	&guest_debug_hooks,
	&engine_hooks,
	&pmi_trace_hooks,
	&exit_stats_hooks,
	NULL,
};
