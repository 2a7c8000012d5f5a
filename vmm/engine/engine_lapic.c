// SPDX-License-Identifier: MIT
/* The guest's LAPIC as the engine sees it (engine_lapic.h). */
#include "engine.h"
#include "engine_lapic.h"

#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>

#include "engine_guest.h"
#include "vm.h"

#define APIC_TPR 0x80
#define APIC_ISR 0x100
#define APIC_IRR 0x200
#define APIC_LVTT 0x320
#define APIC_TMCCT 0x390
#define APIC_LVT_MASKED (1u << 16)
#define APIC_TIMER_TSC_DEADLINE 2 /* LVTT bits 18:17 */
#define MSR_IA32_TSC 0x10
#define MSR_IA32_TSC_DEADLINE 0x6e0
#define MSR_X2APIC_EOI 0x80b
#define MSR_X2APIC_ICR 0x830
#define MSR_X2APIC_LVTT 0x832
#define MSR_X2APIC_TMICT 0x838
#define MSR_X2APIC_TDCR 0x83e
#define MSR_X2APIC_SELF_IPI 0x83f

static uint32_t lapic_reg(const struct kvm_lapic_state *l, unsigned int off)
{
	uint32_t v;

	memcpy(&v, l->regs + off, 4);
	return v;
}

/*
 * Whether the LAPIC timer has expired since the last look. KVM turns an
 * expiry into an IRR bit only when the vCPU next enters KVM_RUN, which a
 * vCPU in the engine does not: the VMM follows the timer itself, from
 * the count KVM reports (one-shot and periodic modes), and returns the
 * timer's vector when it is due.
 */
/*
 * TSC-deadline mode: due once the guest's TSC reached the deadline KVM
 * holds (KVM clears it when it turns the expiry into an IRR bit, at an
 * entry). Read from KVM once after each entry or timer write: until then
 * the host's monotonic clock, at the vCPU's TSC rate, says when the TSC
 * gets there, and KVM is asked again only then (never due early: KVM's
 * TSC decides; at most a clock drift late).
 */
static bool tsc_deadline_due(struct vcpu *vcpu)
{
	struct engine_vcpu *x = engine_of(vcpu);
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e[2];
	} m = { .hdr.nmsrs = 2, .e = { { .index = MSR_IA32_TSC_DEADLINE }, { .index = MSR_IA32_TSC } } };
	uint64_t deadline, tsc, now = engine_now_ns();
	unsigned __int128 wait_ns;

	if (x->deadline_known && (!x->deadline_ns || now < x->deadline_ns))
		return false;
	x->deadline_known = false;
	if (ioctl(vcpu->fd, KVM_GET_MSRS, &m) != 2)
		return false;
	deadline = m.e[0].data;
	tsc = m.e[1].data;
	if (deadline && tsc >= deadline)
		return true;
	if (!x->tsc_khz)
		x->tsc_khz = ioctl(vcpu->fd, KVM_GET_TSC_KHZ, 0);
	if (deadline && x->tsc_khz <= 0)
		return false; /* no rate: ask KVM at every look */
	wait_ns = deadline ? (unsigned __int128)(deadline - tsc) * 1000000u / (unsigned long)x->tsc_khz : 0;
	x->deadline_ns = !deadline ? 0 : wait_ns > UINT64_MAX - now ? UINT64_MAX : now + (uint64_t)wait_ns;
	x->deadline_known = true;
	return false;
}

void engine_lapic_forget(struct engine_vcpu *x)
{
	x->timer_due = false;
	x->timer_seen = false;
	x->deadline_known = false;
}

static int lapic_timer_due(struct vcpu *vcpu, const struct kvm_lapic_state *l)
{
	struct engine_vcpu *x = engine_of(vcpu);
	uint32_t lvtt = lapic_reg(l, APIC_LVTT), cur = lapic_reg(l, APIC_TMCCT);
	unsigned int mode = (lvtt >> 17) & 3;
	bool periodic = mode == 1;

	if (lvtt & APIC_LVT_MASKED) {
		x->timer_seen = false;
		return -1;
	}
	if (mode == APIC_TIMER_TSC_DEADLINE) {
		x->timer_seen = false;
		x->timer_due = x->timer_due || tsc_deadline_due(vcpu);
		return x->timer_due && (lvtt & 0xff) >= 16 ? (int)(lvtt & 0xff) : -1;
	}
	if (mode > 1) {
		x->timer_seen = false; /* reserved mode: no timer */
		return -1;
	}
	/*
	 * KVM reports the count left to the timer's next expiry; its timer
	 * callback moves that expiry a period on (periodic) or to none
	 * (one-shot). A count that went up, or to 0, is that callback having
	 * run: the tick is pending in KVM.
	 */
	if (x->timer_seen && ((periodic && cur > x->timer_cur) || (!periodic && !cur && x->timer_cur)))
		x->timer_due = true;
	x->timer_seen = true;
	x->timer_cur = cur;
	return x->timer_due && (lvtt & 0xff) >= 16 ? (int)(lvtt & 0xff) : -1;
}

/*
 * The highest vector requested in the LAPIC's IRR, or -1; *deliverable if
 * its class beats TPR and ISR; *timer_vector: the LAPIC timer's, or -1.
 */
int engine_lapic_pending(struct vcpu *vcpu, bool *deliverable, int *timer_vector)
{
	struct kvm_lapic_state lapic;
	int irr = -1, isr = -1, timer;
	uint32_t tpr;

	*deliverable = false;
	*timer_vector = -1;
	if (ioctl(vcpu->fd, KVM_GET_LAPIC, &lapic) < 0)
		return -1;
	timer = lapic_timer_due(vcpu, &lapic);
	if (!(lapic_reg(&lapic, APIC_LVTT) & APIC_LVT_MASKED) && (lapic_reg(&lapic, APIC_LVTT) & 0xff) >= 16)
		*timer_vector = (int)(lapic_reg(&lapic, APIC_LVTT) & 0xff);
	for (int i = 7; i >= 0 && (irr < 0 || isr < 0); i--) {
		uint32_t r, s;

		memcpy(&r, lapic.regs + APIC_IRR + 16 * i, 4);
		memcpy(&s, lapic.regs + APIC_ISR + 16 * i, 4);
		if (r && irr < 0)
			irr = 32 * i + 31 - __builtin_clz(r);
		if (s && isr < 0)
			isr = 32 * i + 31 - __builtin_clz(s);
	}
	memcpy(&tpr, lapic.regs + APIC_TPR, 4);
	engine_of(vcpu)->irr_vector = irr;
	/* An expired timer is an IRR bit KVM will set at the next entry. */
	if (timer > irr)
		irr = timer;
	if (irr >= 16)
		*deliverable = (irr >> 4) > (int)((tpr & 0xff) >> 4) && (isr < 0 || (irr >> 4) > (isr >> 4));
	return irr >= 16 ? irr : -1;
}

/*
 * The LAPIC registers a kernel writes all the time (EOI, IPIs, the timer).
 * Not TPR: KVM_SET_SREGS (event delivery and IRETQ done by the VMM) sets it
 * from CR8 as the engine last read it.
 */
static bool lapic_msr_in_place(uint32_t msr)
{
	switch (msr) {
	case MSR_IA32_TSC_DEADLINE:
	case MSR_X2APIC_EOI:
	case MSR_X2APIC_ICR:
	case MSR_X2APIC_LVTT:
	case MSR_X2APIC_TMICT:
	case MSR_X2APIC_TDCR:
	case MSR_X2APIC_SELF_IPI:
		return true;
	default:
		return false;
	}
}

/*
 * WRMSR in ring 0 to an x2APIC register (EOI, ICR, the timer's) or to the
 * TSC deadline: the same write KVM makes for the guest
 * (kvm_x2apic_msr_write, kvm_set_lapic_tscdeadline_msr), through
 * KVM_SET_MSRS, without a KVM step. A write KVM refuses (a read-only or
 * reserved register, reserved bits set, the APIC not in x2APIC mode) is
 * left to the step, in which KVM raises the #GP.
 */
bool engine_lapic_wrmsr_in_place(struct vcpu *vcpu, struct emu_state *st)
{
	uint32_t msr = (uint32_t)st->regs.rcx;
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e;
	} m = { .hdr.nmsrs = 1, .e.index = msr, .e.data = (st->regs.rdx << 32) | (uint32_t)st->regs.rax };
	struct guest_paging pg;
	uint8_t b[2];

	if (st->sregs.cs.dpl != 0 || !lapic_msr_in_place(msr))
		return false;
	if (engine_paging(st, &pg) || engine_read_virt(vcpu, &pg, st->regs.rip, b, 2) || b[0] != 0x0f || b[1] != 0x30)
		return false;
	if (ioctl(vcpu->fd, KVM_SET_MSRS, &m) != 1)
		return false;
	/*
	 * The timer re-armed: its count starts afresh (lapic_timer_due must
	 * not take the jump for an expiry). An expiry already due stays
	 * pending in KVM all the same.
	 */
	if (msr != MSR_X2APIC_EOI && msr != MSR_X2APIC_ICR && msr != MSR_X2APIC_SELF_IPI) {
		engine_of(vcpu)->timer_seen = false;
		engine_of(vcpu)->deadline_known = false;
	}
	st->regs.rip += 2;
	engine_count_insn(vcpu, EMU_RING_KERNEL);
	return true;
}
