// SPDX-License-Identifier: MIT
/*
 * RDPMC: the counter ECX names, as the CPU's own instruction reads it.
 * KVM gives userspace no exit for RDPMC, so the VMM serves it where the
 * guest runs in its emulation engine (vmm/engine/); elsewhere KVM raises
 * the #GP a PMU-less vCPU gets. Which ECX values exist follows the model:
 *
 *   Intel (architectural perfmon): ECX[31:16] is the counter type, 0 for
 *   general-purpose and 0x4000 (bit 30) for fixed-function counters, and
 *   ECX[15:0] its index; Linux reads fixed counter i with (1 << 30) | i.
 *   Any other type, or an index past the counters offered: #GP.
 *   AMD: ECX is the counter number, 0 to the counters offered minus one
 *   (the legacy four, then PerfCtrCore's two); anything else: #GP.
 *
 * The value is the whole counter (VPMU_WIDTH bits), as RDMSR reads it.
 */
#include "vpmu.h"

#define INTEL_RDPMC_TYPE_SHIFT 16
#define INTEL_RDPMC_GP 0x0000u
#define INTEL_RDPMC_FIXED 0x4000u

/* The counter ECX names (VPMU_FIXED_BASE + i for fixed counter i), or -1. */
static int rdpmc_counter(const struct vpmu_config *cfg, uint32_t ecx)
{
	uint32_t type = ecx >> INTEL_RDPMC_TYPE_SHIFT, idx = ecx & 0xffffu;

	if (cfg->model == VPMU_MODEL_AMD)
		return ecx < cfg->n_gp ? (int)ecx : -1;
	if (cfg->model != VPMU_MODEL_INTEL)
		return -1;
	if (type == INTEL_RDPMC_GP && idx < cfg->n_gp)
		return (int)idx;
	if (type == INTEL_RDPMC_FIXED && idx < cfg->n_fixed)
		return VPMU_FIXED_BASE + (int)idx;
	return -1;
}

/* A read of a disabled counter, outside an NMI handler's stop: perhaps Linux's last (vpmu_rdpmc_drain). */
static void rdpmc_seen(struct vpmu_vcpu *v, unsigned int idx)
{
	struct vpmu_counter *c = &v->ctr[idx];

	if (c->live && !vpmu_ctl_enables(idx, c->ctl) && !c->stopped_in_nmi)
		c->read_stopped = true;
}

int vpmu_rdpmc(struct vpmu_vcpu *v, uint32_t ecx, uint64_t *val)
{
	int idx = rdpmc_counter(v->cfg, ecx);

	v->stats.rdpmcs++;
	if (idx < 0) {
		v->stats.rdpmc_gp++;
		return VPMU_MSR_GP;
	}
	*val = v->ctr[idx].count;
	rdpmc_seen(v, (unsigned int)idx);
	return VPMU_MSR_OK;
}

bool vpmu_rdpmc_live(const struct vpmu_vcpu *v)
{
	for (unsigned int i = 0; i < VPMU_MAX_COUNTERS; i++)
		if (v->ctr[i].live)
			return true;
	return false;
}

unsigned int vpmu_rdpmc_drain(struct vpmu_vcpu *v)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < VPMU_MAX_COUNTERS; i++) {
		struct vpmu_counter *c = &v->ctr[i];

		if (c->live && c->read_stopped && !c->stopped_in_nmi && !vpmu_ctl_enables(i, c->ctl)) {
			c->live = false;
			c->read_stopped = false;
			n++;
		}
	}
	v->stats.rdpmc_drained += n;
	return n;
}
