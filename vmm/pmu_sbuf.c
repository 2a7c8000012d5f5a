// SPDX-License-Identifier: MIT
/*
 * The VMM side of the vPMU's sample buffer (include/kvmprof/vpmu_sbuf.h):
 * the sample records the VMM writes into the guest's buffer for the
 * overflows vpmu_msr.c handed it (vpmu_sbuf.due), at the exit that noticed
 * them. A record is what the host-side guest sampler would take at that
 * exit (one mechanism, vmi/): the guest's RIP and CPL, its process from the
 * guest descriptor, and with KP_SBUF_CTL_CALLCHAIN the frame-pointer stack.
 */
#include <string.h>

#include "pmu.h"
#include "engine/engine.h"
#include "guest_sampler.h"
#include "guest_procs.h"
#include "guest_stack.h"
#include "kvmprof/vpmu_sbuf.h"
#include "common/ring_append.h"
#include "vm.h"

/* The registers at this exit: the engine holds them while KVM's copy is stale. */
static bool sbuf_regs(struct vcpu *vcpu, struct kvm_regs *rbuf, struct kvm_sregs *sbuf,
		      const struct kvm_regs **regs, const struct kvm_sregs **sregs)
{
	return engine_regs(vcpu, regs, sregs) || vcpu_exit_regs(vcpu, rbuf, sbuf, regs, sregs);
}

/* Builds the sample record at this exit into rec; returns its size. */
static uint32_t sbuf_record(struct vcpu *vcpu, uint8_t *rec, uint64_t now_ns)
{
	struct vpmu_vcpu *v = &vcpu_pmu_of(vcpu)->v;
	struct kp_rec_sample *smp = (struct kp_rec_sample *)(rec + sizeof(struct kp_rec_header));
	const struct vmi_mem ram = guest_mem_vmi(&vcpu->vm->mem);
	const struct guest_os os = guest_sampler_os(vcpu->vm);
	struct kvm_regs rbuf;
	struct kvm_sregs sbuf;
	const struct kvm_regs *regs;
	const struct kvm_sregs *sregs;
	struct guest_task task = { 0 };
	struct guest_paging pg;
	bool pg_ok;
	uint32_t size;

	*smp = (struct kp_rec_sample){ .cpu = vcpu->id, .time = vpmu_sbuf_guest_time(v, now_ns),
				       .period = v->sbuf.reload };
	if (!sbuf_regs(vcpu, &rbuf, &sbuf, &regs, &sregs))
		goto seal; /* cannot happen with a live vCPU; the record still counts the overflow */
	smp->ip = regs->rip;
	smp->cpl = vcpu_cpl(sregs) == 3 ? KP_CPL_USER : KP_CPL_KERNEL;
	pg_ok = guest_paging_init(&pg, sregs->cr0, sregs->cr3, sregs->cr4, sregs->efer) == 0;
	if (pg_ok && (os.desc || os.linux_layout))
		guest_procs_current(&os, &ram, &pg, vcpu->id, &vcpu_pmu_of(vcpu)->sbuf_desc_entry, &task);
	smp->pid = task.pid;
	smp->tid = task.tid;
	if (pg_ok && (v->sbuf.ctl & KP_SBUF_CTL_CALLCHAIN))
		smp->nr_callchain = (uint16_t)guest_callchain(&ram, &pg, smp->cpl == KP_CPL_USER, regs->rsp, regs->rbp,
							      sregs->tr.base, smp->callchain, KP_CALLCHAIN_MAX);
seal:
	size = (uint32_t)(sizeof(struct kp_rec_header) + sizeof(*smp) + smp->nr_callchain * sizeof(uint64_t));
	ring_seal(rec, KP_REC_SAMPLE, size);
	return size;
}

void vcpu_pmu_sbuf_flush(struct vcpu *vcpu, uint64_t now_ns)
{
	struct vpmu_vcpu *v = &vcpu_pmu_of(vcpu)->v;
	uint8_t rec[sizeof(struct kp_rec_header) + sizeof(struct kp_rec_sample) + KP_CALLCHAIN_MAX * sizeof(uint64_t)]
		__attribute__((aligned(8)));
	uint8_t *page;
	uint32_t size;

	if (!v->sbuf.due)
		return;
	/* Checked against guest RAM when the buffer was armed: always there. */
	page = guest_mem_ptr(&vcpu->vm->mem, v->sbuf.base, KP_SBUF_PAGE + v->sbuf.size);
	if (!page) {
		v->sbuf.due = 0;
		return;
	}
	/* Every due overflow was noticed at this exit: the same record for each. */
	size = sbuf_record(vcpu, rec, now_ns);
	for (; v->sbuf.due; v->sbuf.due--)
		vpmu_sbuf_put(v, page, rec, size, now_ns);
}
