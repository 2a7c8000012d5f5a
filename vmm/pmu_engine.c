// SPDX-License-Identifier: MIT
/*
 * The exact vPMU backend as a client of the emulation engine
 * (engine/engine.h): a vCPU runs in the engine while one of its enabled
 * counters counts instructions or branches, in the rings that counter
 * counts; the engine stops where a counter overflows and tells the
 * counters what retired; the guest kernel's accesses to the PMU's
 * registers are answered in place, as their MSR exits would be.
 */
#include <asm/processor-flags.h>

#include "engine/engine.h"
#include "pmu.h"
#include "vm.h"

static bool pmu_engine_wanted(const struct vm *vm)
{
	const struct vmm_pmu *pmu = vmm_pmu_of(vm);

	return pmu && vmm_pmu_counts_in_engine(pmu);
}

/* VPMU_EXACT_RING_* as the engine's EMU_RING_*. */
static unsigned int engine_rings_of(unsigned int rings)
{
	return (rings & VPMU_EXACT_RING_USER ? EMU_RING_USER : 0) | (rings & VPMU_EXACT_RING_KERNEL ? EMU_RING_KERNEL : 0);
}

/*
 * Whether no kernel section with interrupts off can be open on the vCPU
 * where the engine left it (guest ring 3, or RFLAGS.IF set: Linux changes
 * its PMU's state only with interrupts off), and no user RDPMC is allowed
 * (CR4.PCE: a self-monitoring task preempted between reading its counter's
 * index and its RDPMC). Unknown (KVM ran since): no.
 */
static bool pmu_engine_at_rest(struct vcpu *vcpu)
{
	const struct emu_state *st = engine_guest_state(vcpu);

	return st && !(st->sregs.cr4 & X86_CR4_PCE) && (st->sregs.cs.dpl == 3 || (st->regs.rflags & X86_EFLAGS_IF));
}

/*
 * The rings its exact counters count in; and while the guest may read a
 * counter with RDPMC (vpmu_rdpmc_live), the vCPU stays in the engine even
 * when none counts: KVM has no RDPMC exit, and Linux reads a counter right
 * after disabling it (x86_perf_event_update), and a throttled one later.
 * The engine runs the whole vCPU while any ring is asked for (a ring-3
 * vCPU in KVM enters ring 0 unseen), so RDPMC in either ring is answered
 * in place. Counters Linux has freed (read once more after their disable,
 * its last read) stop keeping it there once the vCPU is at rest
 * (vpmu_rdpmc_drain): a vCPU that counted goes back to KVM when the counted
 * task is switched out, not only when the guest resets its PMU.
 */
static unsigned int pmu_engine_rings(struct vcpu *vcpu)
{
	struct vpmu_vcpu *v = &vcpu_pmu_of(vcpu)->v;
	unsigned int rings = engine_rings_of(vpmu_exact_rings(v));

	if (rings || !vpmu_rdpmc_live(v))
		return rings;
	if (pmu_engine_at_rest(vcpu) && vpmu_rdpmc_drain(v) && !vpmu_rdpmc_live(v))
		return 0;
	return EMU_RING_KERNEL;
}

static const enum vpmu_exact_kind kind_of[EMU_EV_COUNT] = {
	[EMU_EV_INSNS] = VPMU_EXACT_INSNS,
	[EMU_EV_BRANCHES] = VPMU_EXACT_BRANCHES,
	[EMU_EV_TAKEN] = VPMU_EXACT_TAKEN,
};

static enum emu_event event_of(enum vpmu_exact_kind k)
{
	for (unsigned int e = 0; e < EMU_EV_COUNT; e++)
		if (kind_of[e] == k)
			return (enum emu_event)e;
	return EMU_EV_INSNS;
}

/* Each exact counter's overflow, where the engine must stop so that its PMI lands on its instruction. */
static unsigned int pmu_engine_watches(struct vcpu *vcpu, struct emu_watch *w, unsigned int max)
{
	struct vpmu_exact_watch x[VPMU_MAX_COUNTERS];
	unsigned int n = vpmu_exact_watches(&vcpu_pmu_of(vcpu)->v, x), i;

	for (i = 0; i < n && i < max; i++)
		w[i] = (struct emu_watch){ event_of(x[i].kind), engine_rings_of(x[i].rings), x[i].events };
	return i;
}

static void pmu_engine_counted(struct vcpu *vcpu, const struct emu_counts *c)
{
	struct vpmu_vcpu *v = &vcpu_pmu_of(vcpu)->v;

	for (unsigned int e = 0; e < EMU_EV_COUNT; e++) {
		vpmu_exact_add(v, kind_of[e], VPMU_EXACT_RING_USER, c->ev[0][e]);
		vpmu_exact_add(v, kind_of[e], VPMU_EXACT_RING_KERNEL, c->ev[1][e]);
	}
}

/*
 * The vPMU's own registers (what its MSR filter sends to the VMM); a #GP is
 * left to KVM's exit. A read inside a run first takes the run's events so
 * far, so that it is exact at its instruction (an MSR exit comes after the
 * run, when they are already in).
 */
static bool pmu_engine_msr(struct vcpu *vcpu, uint32_t msr, bool write, uint64_t *val)
{
	if (!vpmu_msr_owned(&vmm_pmu_of(vcpu->vm)->cfg, msr))
		return false;
	struct vpmu_vcpu *v = &vcpu_pmu_of(vcpu)->v;
	int rc;

	if (!write)
		vcpu_pmu_sync(vcpu);
	v->maybe_in_nmi = engine_nmi_blocked(vcpu);
	rc = vcpu_pmu_msr(vcpu, msr, write, val);
	v->maybe_in_nmi = true; /* MSR exits: not known */
	return rc == VPMU_MSR_OK;
}

/* RDPMC, exact at its instruction as an in-place RDMSR; an ECX with no counter is KVM's #GP. */
static bool pmu_engine_rdpmc(struct vcpu *vcpu, uint32_t ecx, uint64_t *val)
{
	vcpu_pmu_sync(vcpu);
	return vcpu_pmu_rdpmc(vcpu, ecx, val) == VPMU_MSR_OK;
}

const struct engine_client vmm_pmu_engine_client = {
	.name = "the exact vPMU backend",
	.instead = "--vpmu-backend=clock counts without it",
	.wanted = pmu_engine_wanted,
	.rings = pmu_engine_rings,
	.watches = pmu_engine_watches,
	.counted = pmu_engine_counted,
	.msr = pmu_engine_msr,
	.rdpmc = pmu_engine_rdpmc,
};
