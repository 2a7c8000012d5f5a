// SPDX-License-Identifier: MIT
/*
 * The VMM side of the virtual PMU: choosing model and backend, the KVM MSR
 * filter that sends PMU MSR accesses to userspace, CPUID, PMI delivery
 * through the guest's LVTPC, a per-vCPU timer that forces exits near
 * predicted overflows, and the statistics printed at exit.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "pmi_trace.h"
#include "vcpu_hooks.h"
#include "backend_kvm.h"
#include "kick.h"
#include "kvmprof/vpmu_sbuf.h"
#include "pmu.h"
#include "trace.h"
#include "vm.h"

#define APIC_LVTPC 0x340
#define APIC_LVT_MASKED (1u << 16)
#define APIC_DM_MASK 0x700u
#define APIC_DM_NMI 0x400u
#define APIC_DM_FIXED 0x000u

static int pmu_fail(const char *fmt, const char *arg)
{
	fprintf(stderr, "kvmprof-vmm: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	return -EINVAL;
}

/* Every PMU MSR of both vendors exits to userspace; everything else stays with KVM. */
static int pmu_install_msr_filter(struct vm *vm)
{
	static uint8_t deny[(2 * VPMU_AMD_MAX_GP + 7) / 8 + 8]; /* all zero: deny = exit */
	struct vpmu_msr_range r[VPMU_MAX_MSR_RANGES];
	unsigned int n = vpmu_msr_ranges(&vmm_pmu_of(vm)->cfg, r);
	struct kvm_enable_cap cap = { .cap = KVM_CAP_X86_USER_SPACE_MSR,
				      .args = { KVM_MSR_EXIT_REASON_FILTER } };
	struct kvm_msr_filter filter = { .flags = KVM_MSR_FILTER_DEFAULT_ALLOW };

	if (ioctl(vm->vm_fd, KVM_ENABLE_CAP, &cap) < 0)
		return pmu_fail("vPMU: KVM_CAP_X86_USER_SPACE_MSR: %s", strerror(errno));
	for (unsigned int i = 0; i < n; i++) {
		filter.ranges[i] = (struct kvm_msr_filter_range){
			.flags = KVM_MSR_FILTER_READ | KVM_MSR_FILTER_WRITE,
			.nmsrs = r[i].count,
			.base = r[i].base,
			.bitmap = deny,
		};
	}
	if (ioctl(vm->vm_fd, KVM_X86_SET_MSR_FILTER, &filter) < 0)
		return pmu_fail("vPMU: KVM_X86_SET_MSR_FILTER: %s", strerror(errno));
	return 0;
}

int vmm_pmu_setup(struct vm *vm)
{
	const struct vmm_vpmu_options *o = &vm->cfg->vpmu;
	struct vmm_pmu *pmu = vmm_pmu_of(vm);
	enum vpmu_host_vendor host = vpmu_host_vendor();
	enum vpmu_model model = o->model >= 0 ? (enum vpmu_model)o->model :
				host == VPMU_HOST_INTEL ? VPMU_MODEL_INTEL :
				host == VPMU_HOST_AMD ? VPMU_MODEL_AMD : VPMU_MODEL_OFF;
	char err[VPMU_ERR_MAX], reason[VPMU_ERR_MAX];

	if (vpmu_config_init(&pmu->cfg, model, o->counters, o->mode, host, err))
		return pmu_fail("%s", err);
	if (o->filter_path) {
		if (vpmu_filter_load(o->filter_path, &pmu->filter, err))
			return pmu_fail("%s", err);
		pmu->cfg.filter = &pmu->filter;
	}
	if (model == VPMU_MODEL_OFF) {
		pmu->backend = NULL;
		/* Best effort: some KVMs lack KVM_CAP_PMU_CAPABILITY; CPUID says "no PMU" anyway. */
		vpmu_kvm_setup(vm->vm_fd, &pmu->cfg, NULL, err);
		return 0;
	}
	if (o->backend != VPMU_BACKEND_AUTO) {
		const struct vpmu_backend_desc *b = vpmu_backend_desc_of(o->backend);

		if (!b)
			return pmu_fail("--vpmu-backend: no backend %s", vpmu_backend_name(o->backend));
		if (b->probe && b->probe(reason)) {
			fprintf(stderr, "kvmprof-vmm: --vpmu-backend=%s: %s%s%s%s%s\n", vpmu_backend_name(b->choice),
				b->unavailable ? b->unavailable : "", reason, b->instead ? " (" : "",
				b->instead ? b->instead : "", b->instead ? ")" : "");
			return -ENODEV;
		}
		pmu->backend = b;
	} else {
		/* The first that can run here; the last candidate (the exact backend) runs anywhere. */
		for (const struct vpmu_backend_desc *const *b = vpmu_backends; *b && !pmu->backend; b++) {
			if (!(*b)->auto_pick)
				continue;
			if (!(*b)->probe || !(*b)->probe(reason))
				pmu->backend = *b;
			else
				snprintf(pmu->passed_over + strlen(pmu->passed_over),
					 sizeof(pmu->passed_over) - strlen(pmu->passed_over), "%s%s unusable: %s",
					 *pmu->passed_over ? "; " : "", vpmu_backend_name((*b)->choice), reason);
		}
		if (!pmu->backend)
			return pmu_fail("%s", "--vpmu-backend=auto: no backend can run here");
	}
	/* That the PMI tracer cannot run beside it (both need the debug registers) is the guest debug owner's to say. */
	pmu->cfg.exact = pmu->backend->exact;
	if (pmu->backend->in_kernel) {
		if (pmu->backend->vm_setup && pmu->backend->vm_setup(vm->vm_fd, &pmu->cfg, err))
			return pmu_fail("vPMU: %s", err);
		return 0;
	}
	/* The sample buffer is the VMM's own: offered wherever the VMM implements the PMU. */
	pmu->cfg.sbuf = true;
	pmu->cfg.ram_size = vm->cfg->mem_size;
	return pmu_install_msr_filter(vm);
}

/* After every feature's setup: a refusal by another (the guest debug owner's) comes before it. */
static void vmm_pmu_announce(const struct vm *vm)
{
	const struct vmm_pmu *pmu = vmm_pmu_of(vm);
	char counters[32];

	if (pmu->cfg.model == VPMU_MODEL_OFF || !pmu->backend)
		return;
	/* KVM's own vPMU splits them as the host does; the VMM's offers general-purpose + fixed. */
	if (pmu->backend->in_kernel)
		snprintf(counters, sizeof(counters), "%u", pmu->cfg.n_gp + pmu->cfg.n_fixed);
	else
		snprintf(counters, sizeof(counters), "%u+%u", pmu->cfg.n_gp, pmu->cfg.n_fixed);
	fprintf(stderr, "kvmprof-vmm: vPMU: %s model, %s counters, %s, %s%s%s%s\n", vpmu_model_name(pmu->cfg.model),
		counters, pmu->backend->what, vpmu_mode_name(vm->cfg->vpmu.mode), *pmu->passed_over ? " (" : "",
		pmu->passed_over, *pmu->passed_over ? ")" : "");
}

/* Delivers a PMI as the guest's LVTPC says; on the Intel model masks LVTPC afterwards. */
static bool pmu_inject_pmi(void *ctx)
{
	struct vcpu *vcpu = ctx;
	struct kvm_lapic_state lapic;
	uint32_t lvtpc;

	if (ioctl(vcpu->fd, KVM_GET_LAPIC, &lapic) < 0)
		return false;
	memcpy(&lvtpc, lapic.regs + APIC_LVTPC, 4);
	if (lvtpc & APIC_LVT_MASKED)
		return false;
	if ((lvtpc & APIC_DM_MASK) == APIC_DM_NMI) {
		if (ioctl(vcpu->fd, KVM_NMI) < 0)
			return false;
	} else if ((lvtpc & APIC_DM_MASK) == APIC_DM_FIXED && (lvtpc & 0xff) >= 16) {
		struct kvm_msi msi = {
			.address_lo = (uint32_t)KVMPROF_LAPIC_BASE | (vcpu->id << 12),
			.data = lvtpc & 0xff,
		};
		if (ioctl(vcpu->vm->vm_fd, KVM_SIGNAL_MSI, &msi) < 0)
			return false;
	} else {
		return false; /* SMI, INIT, ExtINT or a reserved vector: nothing a PMI can become */
	}
	pmi_trace_injected(vcpu);
	TRACE(pmi_inject, (lvtpc & APIC_DM_MASK) == APIC_DM_NMI, (lvtpc & APIC_DM_MASK) == APIC_DM_NMI ? 2 : lvtpc & 0xff);
	if (vmm_pmu_of(vcpu->vm)->cfg.model == VPMU_MODEL_INTEL) {
		lvtpc |= APIC_LVT_MASKED;
		memcpy(lapic.regs + APIC_LVTPC, &lvtpc, 4);
		ioctl(vcpu->fd, KVM_SET_LAPIC, &lapic);
	}
	return true;
}

int vcpu_pmu_init(struct vcpu *vcpu)
{
	struct vcpu_pmu *p = vcpu_pmu_of(vcpu);
	const struct vmm_pmu *pmu = vmm_pmu_of(vcpu->vm);

	p->sbuf_desc_entry = -1;
	if (!vmm_pmu_emulating(pmu))
		return 0;
	p->backend = calloc(1, pmu->backend->state_size);
	if (!p->backend)
		return -ENOMEM;
	/* Counter overflows kick the vCPU thread out of KVM_RUN (kick.h). */
	pmu->backend->state_init(p->backend, KICK_SIGNO);
	vpmu_vcpu_init(&p->v, &pmu->cfg, vcpu->id, pmu->backend->ops, p->backend, pmu_inject_pmi, vcpu);
	return 0;
}

void vcpu_pmu_destroy(struct vcpu *vcpu)
{
	struct vcpu_pmu *p = vcpu_pmu_of(vcpu);

	if (!vcpu->vm || !vmm_pmu_emulating(vmm_pmu_of(vcpu->vm)) || !p->backend)
		return;
	vpmu_perf_backend_stats(&p->v);
	vpmu_vcpu_release(&p->v);
	free(p->backend);
	p->backend = NULL;
}

static struct kvm_cpuid_entry2 *cpuid_find(struct kvm_cpuid2 *c, uint32_t function)
{
	for (unsigned int i = 0; i < c->nent; i++)
		if (c->entries[i].function == function && c->entries[i].index == 0)
			return &c->entries[i];
	return NULL;
}

static struct kvm_cpuid2 *cpuid_add(struct kvm_cpuid2 *c, uint32_t function)
{
	struct kvm_cpuid2 *n = realloc(c, sizeof(*c) + (c->nent + 1) * sizeof(c->entries[0]));

	if (!n)
		return c;
	n->entries[n->nent++] = (struct kvm_cpuid_entry2){ .function = function };
	return n;
}

struct kvm_cpuid2 *vmm_pmu_cpuid(const struct vm *vm, struct kvm_cpuid2 *cpuid)
{
	static const uint32_t leaves[] = { 0x1, 0xa, 0x80000001, 0x80000022, KP_CPUID_LEAF, KP_CPUID_FEATURES };
	const struct vpmu_config *cfg = &vmm_pmu_of(vm)->cfg;

	for (size_t i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++) {
		struct kvm_cpuid_entry2 *e = cpuid_find(cpuid, leaves[i]);
		struct vpmu_cpuid_leaf leaf;

		if (!e && cfg->sbuf && (leaves[i] == KP_CPUID_LEAF || leaves[i] == KP_CPUID_FEATURES)) {
			/* kvmprof's own hypervisor leaves: no maximum leaf of KVM's to raise. */
			cpuid = cpuid_add(cpuid, leaves[i]);
			e = cpuid_find(cpuid, leaves[i]);
		}

		if (!e && cfg->model != VPMU_MODEL_OFF && (leaves[i] == 0xa || leaves[i] == 0x80000022)) {
			/* KVM lists no leaf it has nothing for: add it, and raise the maximum leaf. */
			struct kvm_cpuid_entry2 *max;
			cpuid = cpuid_add(cpuid, leaves[i]);
			e = cpuid_find(cpuid, leaves[i]);
			max = cpuid_find(cpuid, leaves[i] & 0x80000000);
			if (max && max->eax < leaves[i])
				max->eax = leaves[i];
		}
		if (!e)
			continue;
		leaf = (struct vpmu_cpuid_leaf){ e->function, e->eax, e->ebx, e->ecx, e->edx };
		vpmu_cpuid_adjust(cfg, &leaf);
		e->eax = leaf.eax;
		e->ebx = leaf.ebx;
		e->ecx = leaf.ecx;
		e->edx = leaf.edx;
	}
	return cpuid;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Overflows are found at a run's end and while MSR exits read counters: the event carries those since the last one. */
static void pmu_trace_overflows(struct vcpu_pmu *p)
{
	uint64_t seen = p->v.stats.overflows;

	if (seen == p->overflows_traced)
		return;
	TRACE(pmu_overflow, seen - p->overflows_traced);
	p->overflows_traced = seen;
}

void vcpu_pmu_before_run(struct vcpu *vcpu)
{
	struct vcpu_pmu *p = vcpu_pmu_of(vcpu);
	uint64_t now, deadline;

	if (!vmm_pmu_emulating(vmm_pmu_of(vcpu->vm)))
		return;
	uint64_t reprograms = p->v.stats.reprograms;

	pmu_trace_overflows(p);
	now = now_ns();
	vcpu_pmu_sbuf_flush(vcpu, now); /* overflows found since the run's end: their watermark PMI goes in now */
	vpmu_vcpu_prepare_entry(&p->v, now);
	if (p->v.stats.reprograms != reprograms)
		TRACE(pmu_counter_program, p->v.stats.reprograms - reprograms);
	/*
	 * After the reprogramming: a counter enabled by this exit's WRMSR needs
	 * its exit now, near its predicted overflow (this host notices counter
	 * overflows only at exits).
	 */
	deadline = vpmu_vcpu_exit_deadline(&p->v, now);
	vcpu_exit_within(vcpu, deadline);
	vpmu_vcpu_enter(&p->v, now);
}

void vcpu_pmu_after_run(struct vcpu *vcpu)
{
	struct vcpu_pmu *p = vcpu_pmu_of(vcpu);

	if (!vmm_pmu_emulating(vmm_pmu_of(vcpu->vm)))
		return;
	uint64_t now = now_ns();

	p->exits++;
	vpmu_vcpu_after_run(&p->v, now);
	vcpu_pmu_sbuf_flush(vcpu, now);
	pmu_trace_overflows(p);
}

static void trace_msr(bool write, uint32_t msr, uint64_t val, bool gp)
{
	if (write)
		TRACE(msr_write, msr, val, gp);
	else
		TRACE(msr_read, msr, val, gp);
}

int vcpu_pmu_msr(struct vcpu *vcpu, uint32_t msr, bool write, uint64_t *val)
{
	struct vcpu_pmu *p = vcpu_pmu_of(vcpu);
	int rc = write ? vpmu_msr_write(&p->v, msr, *val) : vpmu_msr_read(&p->v, msr, val);

	if (rc != VPMU_MSR_OK)
		return rc;
	/* The guest read its clock just before this write: records' times run on from here. */
	if (write && msr == KP_MSR_SBUF_TIME)
		p->v.sbuf.guest_time_at = now_ns();
	trace_msr(write, msr, *val, false);
	return rc;
}

int vcpu_pmu_rdpmc(struct vcpu *vcpu, uint32_t ecx, uint64_t *val)
{
	int rc = vpmu_rdpmc(&vcpu_pmu_of(vcpu)->v, ecx, val);

	TRACE(rdpmc, ecx, rc == VPMU_MSR_OK ? *val : 0, rc != VPMU_MSR_OK);
	return rc;
}

void vcpu_pmu_sync(struct vcpu *vcpu)
{
	vpmu_vcpu_sync(&vcpu_pmu_of(vcpu)->v, now_ns());
}

void vcpu_pmu_handle_msr(struct vcpu *vcpu)
{
	struct kvm_run *run = vcpu->run;
	bool write = run->exit_reason == KVM_EXIT_X86_WRMSR;
	uint64_t val = write ? run->msr.data : 0;
	int rc = vcpu_pmu_msr(vcpu, run->msr.index, write, &val);

	if (!write)
		run->msr.data = val;
	/* Anything that is not a PMU register of this model faults, as on a CPU without it. */
	if (rc != VPMU_MSR_OK)
		trace_msr(write, run->msr.index, val, true);
	run->msr.error = rc != VPMU_MSR_OK;
}

void vmm_pmu_print_stats(struct vm *vm)
{
	const struct vmm_pmu *pmu = vmm_pmu_of(vm);
	struct vpmu_stats s = { 0 };
	uint64_t exits = 0, pending = 0;

	if (!vm->cfg->vpmu.stats)
		return;
	if (!vmm_pmu_emulating(pmu)) {
		fprintf(stderr, "kvmprof-vmm: vPMU statistics: no emulated vPMU in this run\n");
		return;
	}
	for (unsigned int i = 0; i < vm->cfg->ncpus; i++) {
		struct vcpu_pmu *p = vcpu_pmu_of(&vm->vcpu[i]);

		vpmu_perf_backend_stats(&p->v);
		vpmu_stats_add(&s, &p->v.stats);
		exits += p->exits;
		/* Raised after the vCPU's last entry (the VM stopped first): never injected. */
		pending += p->v.pmi_pending;
	}
	fprintf(stderr,
		"kvmprof-vmm: vPMU statistics (%s model, %s, %u vCPU%s)\n"
		"  VM exits                 %llu\n"
		"  PMU MSR exits            %llu reads, %llu writes, %llu #GP\n"
		"  counter overflows        %llu\n"
		"  PMIs injected            %llu (%llu dropped: LVTPC masked, %llu pending when the VM stopped)\n"
		"  counter reprogrammings   %llu (%llu events filtered, %llu not countable here, %llu host failures)\n",
		vpmu_model_name(pmu->cfg.model),
		vpmu_mode_name(pmu->cfg.mode), vm->cfg->ncpus, vm->cfg->ncpus == 1 ? "" : "s",
		(unsigned long long)exits, (unsigned long long)s.msr_reads, (unsigned long long)s.msr_writes,
		(unsigned long long)s.msr_gp, (unsigned long long)s.overflows,
		(unsigned long long)s.pmis_injected, (unsigned long long)s.pmis_masked, (unsigned long long)pending,
		(unsigned long long)s.reprograms, (unsigned long long)s.filtered_events,
		(unsigned long long)s.unsupported_events, (unsigned long long)s.program_failures);
	if (s.overflows)
		fprintf(stderr, "  guest events past overflow at detection: mean %llu, max %llu\n",
			(unsigned long long)(s.events_past_sum / s.overflows),
			(unsigned long long)s.events_past_max);
	if (s.pmis_injected) {
		fprintf(stderr, "  overflow-to-PMI latency: mean %.1f us, max %.1f us\n    ",
			(double)s.latency_sum_ns / (double)s.pmis_injected / 1e3, (double)s.latency_max_ns / 1e3);
		for (unsigned int b = 0; b < VPMU_LATENCY_BUCKETS; b++) {
			if (b == VPMU_LATENCY_BUCKETS - 1)
				fprintf(stderr, ">=%u us: %llu", 1u << (b - 1), (unsigned long long)s.latency_us[b]);
			else
				fprintf(stderr, "<%u us: %llu, ", 1u << b, (unsigned long long)s.latency_us[b]);
		}
		fputc('\n', stderr);
	}
	if (s.rdpmcs)
		fprintf(stderr, "  RDPMC                    %llu read in the engine, %llu #GP (no such counter); "
			"%llu counters freed after their last read (the vCPU may leave the engine)\n",
			(unsigned long long)(s.rdpmcs - s.rdpmc_gp), (unsigned long long)s.rdpmc_gp,
			(unsigned long long)s.rdpmc_drained);
	if (s.sbuf_records || s.sbuf_lost || s.sbuf_refused)
		fprintf(stderr, "  sample buffer: %llu records written, %llu lost (buffer full), %llu watermark PMIs, "
			"%llu settings refused (#GP)\n",
			(unsigned long long)s.sbuf_records, (unsigned long long)s.sbuf_lost,
			(unsigned long long)s.sbuf_pmis, (unsigned long long)s.sbuf_refused);
	engine_print_stats(vm);
	if (s.time_enabled_ns)
		fprintf(stderr, "  host multiplexing: counters ran %.1f%% of the time they were enabled%s\n",
			100.0 * (double)s.time_running_ns / (double)s.time_enabled_ns,
			s.time_running_ns < s.time_enabled_ns ? " (counts are partial)" : "");
}

/* The MSR exits are the vPMU's: KVM's MSR filter (vmm_pmu_setup) sends only its registers here. */
static bool pmu_msr_exit(struct vcpu *vcpu)
{
	vcpu_pmu_handle_msr(vcpu);
	return true;
}

const struct vcpu_hooks vmm_pmu_hooks = {
	.name = "vPMU",
	.vm_size = sizeof(struct vmm_pmu),
	.vcpu_size = sizeof(struct vcpu_pmu),
	.vm_setup = vmm_pmu_setup,
	.announce = vmm_pmu_announce,
	.cpuid = vmm_pmu_cpuid,
	.init = vcpu_pmu_init,
	.destroy = vcpu_pmu_destroy,
	.before_run = vcpu_pmu_before_run,
	.after_run = vcpu_pmu_after_run,
	.msr_exit = pmu_msr_exit,
	.print_stats = vmm_pmu_print_stats,
};
