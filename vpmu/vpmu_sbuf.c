// SPDX-License-Identifier: MIT
/*
 * The sample buffer's registers and ring (include/kvmprof/vpmu_sbuf.h):
 * pure code, like the rest of the register model. What goes into a record
 * (registers, process, call stack) is the VMM's (vmm/pmu_sbuf.c).
 *
 * Every value the guest writes is checked before it is kept, and the whole
 * set again when the buffer is armed, so that an armed buffer always lies
 * wholly in guest RAM: the VMM then writes to it through a plain pointer.
 */
#include "kvmprof/vpmu_sbuf.h"
#include "common/ring_append.h"
#include "vpmu.h"

bool vpmu_sbuf_msr(const struct vpmu_config *cfg, uint32_t msr)
{
	return cfg->sbuf && msr >= KP_MSR_SBUF_CTL && msr - KP_MSR_SBUF_CTL < KP_SBUF_MSRS;
}

bool vpmu_sbuf_takes(const struct vpmu_vcpu *v, unsigned int idx)
{
	return (v->sbuf.ctl & KP_SBUF_CTL_EN) &&
	       (v->sbuf.ctl & KP_SBUF_CTL_COUNTER_MASK) >> KP_SBUF_CTL_COUNTER_SHIFT == idx;
}

int vpmu_sbuf_msr_read(struct vpmu_vcpu *v, uint32_t msr, uint64_t *val)
{
	const struct vpmu_sbuf *b = &v->sbuf;

	switch (msr) {
	case KP_MSR_SBUF_CTL: *val = b->ctl; break;
	case KP_MSR_SBUF_BASE: *val = b->base; break;
	case KP_MSR_SBUF_SIZE: *val = b->size; break;
	case KP_MSR_SBUF_WATERMARK: *val = b->watermark; break;
	case KP_MSR_SBUF_RELOAD: *val = b->reload; break;
	case KP_MSR_SBUF_TIME: *val = b->guest_time; break;
	default: return VPMU_MSR_GP;
	}
	return VPMU_MSR_OK;
}

/* Whether the programmed set may be armed: all of it in RAM, the watermark inside, a counter that exists. */
static bool sbuf_settings_ok(const struct vpmu_vcpu *v, uint64_t ctl)
{
	const struct vpmu_sbuf *b = &v->sbuf;
	uint64_t counter = (ctl & KP_SBUF_CTL_COUNTER_MASK) >> KP_SBUF_CTL_COUNTER_SHIFT;

	return b->base && b->size && b->reload && b->watermark && b->watermark <= b->size &&
	       counter < v->cfg->n_gp && b->base <= v->cfg->ram_size &&
	       KP_SBUF_PAGE + b->size <= v->cfg->ram_size - b->base;
}

static int sbuf_ctl_write(struct vpmu_vcpu *v, uint64_t val)
{
	struct vpmu_sbuf *b = &v->sbuf;

	if ((val & ~KP_SBUF_CTL_VALID) || ((val & KP_SBUF_CTL_EN) && !sbuf_settings_ok(v, val)))
		return VPMU_MSR_GP;
	if ((val & KP_SBUF_CTL_EN) && !(b->ctl & KP_SBUF_CTL_EN)) {
		/* A fresh ring: the guest set its tail to 0 (vpmu_sbuf.h). */
		b->head = b->written = b->lost = 0;
	}
	b->due = 0;
	b->ctl = val;
	return VPMU_MSR_OK;
}

int vpmu_sbuf_msr_write(struct vpmu_vcpu *v, uint32_t msr, uint64_t val)
{
	struct vpmu_sbuf *b = &v->sbuf;
	int rc = VPMU_MSR_OK;

	if (msr == KP_MSR_SBUF_CTL)
		rc = sbuf_ctl_write(v, val);
	else if (msr == KP_MSR_SBUF_TIME)
		b->guest_time = val;
	else if (b->ctl & KP_SBUF_CTL_EN)
		rc = VPMU_MSR_GP; /* the armed buffer's placement and period are fixed */
	else if (msr == KP_MSR_SBUF_BASE && !(val % KP_SBUF_PAGE) && val < v->cfg->ram_size)
		b->base = val;
	else if (msr == KP_MSR_SBUF_SIZE && val >= KP_SBUF_SIZE_MIN && val <= KP_SBUF_SIZE_MAX && !(val & (val - 1)))
		b->size = val;
	else if (msr == KP_MSR_SBUF_WATERMARK && val >= 1 && val <= KP_SBUF_SIZE_MAX)
		b->watermark = val;
	else if (msr == KP_MSR_SBUF_RELOAD && val >= 1 && val <= KP_SBUF_RELOAD_MAX)
		b->reload = val;
	else
		rc = VPMU_MSR_GP;
	if (rc == VPMU_MSR_GP)
		v->stats.sbuf_refused++;
	return rc;
}

uint64_t vpmu_sbuf_guest_time(const struct vpmu_vcpu *v, uint64_t now_ns)
{
	const struct vpmu_sbuf *b = &v->sbuf;

	return b->guest_time + (b->guest_time_at && now_ns > b->guest_time_at ? now_ns - b->guest_time_at : 0);
}

void vpmu_sbuf_put(struct vpmu_vcpu *v, uint8_t *ctl_page, const uint8_t *rec, uint32_t size, uint64_t now_ns)
{
	struct vpmu_sbuf *b = &v->sbuf;
	struct kp_ring_ctl *ctl = (struct kp_ring_ctl *)ctl_page;
	bool was_below = ring_unread(ctl, b->size, b->head) < b->watermark, lost = false;

	if (ring_append(ctl, ctl_page + KP_SBUF_PAGE, b->size, &b->head, rec, size, 0)) {
		b->written++;
		v->stats.sbuf_records++;
	} else {
		b->lost++;
		v->stats.sbuf_lost++;
		lost = true;
	}
	/* Published in the order a reader needs: what head covers is written before head. */
	__atomic_store_n(&ctl->lost, b->lost, __ATOMIC_RELAXED);
	__atomic_store_n(&ctl->written, b->written, __ATOMIC_RELAXED);
	__atomic_store_n(&ctl->head, b->head, __ATOMIC_RELEASE);
	/*
	 * A crossing: below the watermark before this record, at or above it
	 * (or full) after. It raises a PMI unless one is pending already:
	 * another vCPU's reader may drain this buffer between two of this
	 * vCPU's exits, so two crossings can come before one entry, and the
	 * guest sees one PMI. Counted as the guest sees them.
	 */
	if (was_below && (lost || ring_unread(ctl, b->size, b->head) >= b->watermark)) {
		if (!v->pmi_pending) {
			v->stats.sbuf_pmis++;
			v->pmi_overflow_time = now_ns;
		}
		v->pmi_pending = true;
	}
}
