// SPDX-License-Identifier: MIT
/* The guest's LAPIC as the engine sees it (engine_lapic.h). */
#include "engine.h"
#include "engine_lapic.h"

#include <string.h>
#include <sys/ioctl.h>

#include "vm.h"

#define APIC_TPR 0x80
#define APIC_ISR 0x100
#define APIC_IRR 0x200
#define APIC_LVTT 0x320
#define APIC_TMCCT 0x390
#define APIC_LVT_MASKED (1u << 16)

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
static int lapic_timer_due(struct vcpu *vcpu, const struct kvm_lapic_state *l)
{
	struct engine_vcpu *x = engine_of(vcpu);
	uint32_t lvtt = lapic_reg(l, APIC_LVTT), cur = lapic_reg(l, APIC_TMCCT);
	bool periodic = ((lvtt >> 17) & 3) == 1;

	if ((lvtt & APIC_LVT_MASKED) || ((lvtt >> 17) & 3) > 1) {
		x->timer_seen = false; /* masked, or TSC-deadline mode: not followed (see docs/vpmu.md) */
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
