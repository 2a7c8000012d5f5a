// SPDX-License-Identifier: MIT
/*
 * The virtual PMU's register model and its accounting around VM entries.
 *
 * Each virtual counter keeps the guest-visible value as of the last sync
 * point. A sync reads the backend's raw counts once for all counters and
 * adds the delta since the previous sync; in cpu-switch mode the delta
 * between a VM exit and the next entry (the VMM's own work) is dropped, in
 * domain-switch mode it is kept. Overflow is computed from values, never
 * from the number of host signals, so coalesced notifications lose nothing.
 */
#include <errno.h>
#include <string.h>

#include "kvmprof/vpmu_sbuf.h"
#include "vpmu.h"

static void arm_counter(struct vpmu_vcpu *v, unsigned int idx);

/*
 * AMD: writable event-select bits; the rest are ignored on write, as AMD
 * hardware does. HostOnly/GuestOnly (bits 41:40) mean nothing inside a guest
 * and are dropped, as KVM does.
 */
#define AMD_EVTSEL_VALID (EVTSEL_EVENT | EVTSEL_UMASK | EVTSEL_USR | EVTSEL_OS | EVTSEL_EDGE | \
			  EVTSEL_INT | EVTSEL_EN | EVTSEL_INV | EVTSEL_CMASK | AMD_EVTSEL_EVENT_HI)
/* Intel perfmon v2: bits 63:32 and AnyThread (v3+) are reserved and #GP. */
#define INTEL_EVTSEL_RESERVED 0xffffffff00200000ULL
#define FIXED_FIELD_VALID 0xbULL /* OS, USR, PMI; AnyThread is v3+ */
#define FIXED_FIELD_PMI 0x8ULL
#define PERF_CAP_VALUE PERF_CAP_FW_WRITES

static bool is_amd(const struct vpmu_vcpu *v)
{
	return v->cfg->model == VPMU_MODEL_AMD;
}

static unsigned int status_bit(unsigned int idx)
{
	return idx >= VPMU_FIXED_BASE ? 32 + (idx - VPMU_FIXED_BASE) : idx;
}

static uint64_t valid_global_bits(const struct vpmu_config *cfg)
{
	uint64_t gp = (1ULL << cfg->n_gp) - 1;
	uint64_t fixed = ((1ULL << cfg->n_fixed) - 1) << 32;

	return gp | fixed;
}

static bool counter_exists(const struct vpmu_vcpu *v, unsigned int idx)
{
	if (idx < VPMU_FIXED_BASE)
		return idx < v->cfg->n_gp;
	return idx - VPMU_FIXED_BASE < v->cfg->n_fixed;
}

static bool counter_wants_pmi(const struct vpmu_vcpu *v, unsigned int idx)
{
	const struct vpmu_counter *c = &v->ctr[idx];

	return idx >= VPMU_FIXED_BASE ? (c->ctl & FIXED_FIELD_PMI) : (c->ctl & EVTSEL_INT);
}

static bool counter_event_allowed(const struct vpmu_vcpu *v, unsigned int idx)
{
	const struct vpmu_filter *f = v->cfg->filter;
	uint64_t ctl = v->ctr[idx].ctl;

	if (!f)
		return true;
	if (idx >= VPMU_FIXED_BASE)
		return vpmu_filter_allows_fixed(f, idx - VPMU_FIXED_BASE);
	return vpmu_filter_allows_event(f, (uint16_t)((ctl & EVTSEL_EVENT) |
						      (is_amd(v) ? (ctl & AMD_EVTSEL_EVENT_HI) >> 24 : 0)),
					(uint8_t)((ctl & EVTSEL_UMASK) >> 8));
}

bool vpmu_counter_enabled(const struct vpmu_vcpu *v, unsigned int idx)
{
	const struct vpmu_counter *c = &v->ctr[idx];

	if (!counter_exists(v, idx) || !(v->global_ctrl & (1ULL << status_bit(idx))))
		return false;
	if (idx >= VPMU_FIXED_BASE)
		return (c->ctl & 3) != 0;
	return (c->ctl & EVTSEL_EN) && (c->ctl & (EVTSEL_USR | EVTSEL_OS));
}

void vpmu_vcpu_init(struct vpmu_vcpu *v, const struct vpmu_config *cfg, unsigned int id,
		    const struct vpmu_backend_ops *ops, void *backend,
		    bool (*inject_pmi)(void *ctx), void *pmi_ctx)
{
	memset(v, 0, sizeof(*v));
	v->cfg = cfg;
	v->id = id;
	v->ops = ops;
	v->backend = backend;
	v->inject_pmi = inject_pmi;
	v->pmi_ctx = pmi_ctx;
	/*
	 * Intel: PERF_GLOBAL_CTRL resets to one bit per GP counter. AMD: legacy
	 * guests never touch PerfMonV2's GLOBAL_CTL, so it starts with every
	 * counter enabled (KVM does the same).
	 */
	v->global_ctrl = (1ULL << cfg->n_gp) - 1;
	v->maybe_in_nmi = true;
}

void vpmu_vcpu_release(struct vpmu_vcpu *v)
{
	for (unsigned int i = 0; i < VPMU_MAX_COUNTERS; i++) {
		if (v->ctr[i].programmed)
			v->ops->release(v, i);
		v->ctr[i].programmed = false;
	}
}

static bool any_programmed(const struct vpmu_vcpu *v)
{
	for (unsigned int i = 0; i < VPMU_MAX_COUNTERS; i++)
		if (v->ctr[i].programmed)
			return true;
	return false;
}

/* Adds delta events to counter idx, which ran from entry_time to now. */
static void counter_advance(struct vpmu_vcpu *v, unsigned int idx, uint64_t delta, uint64_t now)
{
	struct vpmu_counter *c = &v->ctr[idx];
	uint64_t old = c->count, sum = old + delta;

	c->last_delta = delta;
	c->last_interval = now > v->entry_time ? now - v->entry_time : 0;
	if (sum <= VPMU_COUNTER_MASK) {
		c->count = sum;
		return;
	}
	c->count = sum & VPMU_COUNTER_MASK;
	v->stats.overflows++;
	v->stats.events_past_sum += c->count;
	if (c->count > v->stats.events_past_max)
		v->stats.events_past_max = c->count;
	if (vpmu_sbuf_takes(v, idx)) {
		/* The VMM writes the record (vpmu_sbuf.due) and re-arms the counter, as PEBS's reset value does. */
		c->count = VPMU_COUNTER_MASK + 1 - v->sbuf.reload;
		v->sbuf.due++;
		arm_counter(v, idx);
		return; /* no status bit: the guest learns of samples from the buffer, as with PEBS */
	}
	v->global_status |= 1ULL << status_bit(idx);
	if (counter_wants_pmi(v, idx)) {
		/* Where in [entry, now] the overflow fell, assuming a steady rate. */
		uint64_t distance = VPMU_COUNTER_MASK + 1 - old;
		uint64_t t = v->entry_time +
			     (uint64_t)((double)c->last_interval * (double)distance / (double)delta);
		if (!v->pmi_pending || t < v->pmi_overflow_time)
			v->pmi_overflow_time = t;
		v->pmi_pending = true;
	}
}

static void vpmu_sync(struct vpmu_vcpu *v, bool attribute, uint64_t now)
{
	uint64_t raw[VPMU_MAX_COUNTERS];

	if (!any_programmed(v) || v->ops->read(v, raw))
		return;
	for (unsigned int i = 0; i < VPMU_MAX_COUNTERS; i++) {
		struct vpmu_counter *c = &v->ctr[i];
		uint64_t delta;

		if (!c->programmed)
			continue;
		delta = raw[i] - c->raw_last;
		c->raw_last = raw[i];
		if (attribute && delta)
			counter_advance(v, i, delta, now);
	}
}

uint64_t vpmu_counter_pmi_distance(const struct vpmu_vcpu *v, unsigned int idx)
{
	if (idx >= VPMU_MAX_COUNTERS || !v->ctr[idx].programmed || !counter_wants_pmi(v, idx))
		return 0;
	return VPMU_COUNTER_MASK + 1 - v->ctr[idx].count;
}

static void arm_counter(struct vpmu_vcpu *v, unsigned int idx)
{
	if (v->ops->arm && v->ctr[idx].programmed)
		v->ops->arm(v, idx, counter_wants_pmi(v, idx) ? VPMU_COUNTER_MASK + 1 - v->ctr[idx].count : 0);
}

/* Brings host counters in line with the guest's event selects and enables. */
static void vpmu_reprogram(struct vpmu_vcpu *v)
{
	v->reprogram = false;
	v->stats.reprograms++;
	for (unsigned int i = 0; i < VPMU_MAX_COUNTERS; i++) {
		struct vpmu_counter *c = &v->ctr[i];
		struct vpmu_event ev;
		bool want = vpmu_counter_enabled(v, i);

		if (c->programmed && (!want || c->programmed_ctl != c->ctl)) {
			v->ops->release(v, i);
			c->programmed = false;
		}
		c->unsupported = false;
		if (!want || c->programmed)
			continue;
		if (!counter_event_allowed(v, i)) {
			v->stats.filtered_events++;
			continue; /* a filtered event counts nothing */
		}
		if (vpmu_event_translate(v->cfg, i, c->ctl, &ev)) {
			c->unsupported = true;
			v->stats.unsupported_events++;
			continue;
		}
		switch (v->ops->program(v, i, &ev)) {
		case 0:
			break;
		case -EOPNOTSUPP: /* this backend cannot count the event at all */
			c->unsupported = true;
			v->stats.unsupported_events++;
			continue;
		default:
			v->stats.program_failures++;
			continue;
		}
		c->programmed = true;
		c->programmed_ctl = c->ctl;
		c->raw_last = 0;
		arm_counter(v, i);
	}
}

void vpmu_vcpu_prepare_entry(struct vpmu_vcpu *v, uint64_t now_ns)
{
	if (v->cfg->model == VPMU_MODEL_OFF)
		return;
	if (v->reprogram) {
		/* Counts up to here belong to the old settings. */
		vpmu_sync(v, v->cfg->mode == VPMU_MODE_DOMAIN_SWITCH, now_ns);
		vpmu_reprogram(v);
	}
	if (v->pmi_pending) {
		v->pmi_pending = false;
		if (v->inject_pmi && v->inject_pmi(v->pmi_ctx)) {
			uint64_t lat = now_ns > v->pmi_overflow_time ? now_ns - v->pmi_overflow_time : 0;
			unsigned int b = 0;

			v->stats.pmis_injected++;
			v->stats.latency_sum_ns += lat;
			if (lat > v->stats.latency_max_ns)
				v->stats.latency_max_ns = lat;
			/* Buckets: < 1, 2, 4, ... 1024 µs, then the rest. */
			for (uint64_t us = lat / 1000; us && b < VPMU_LATENCY_BUCKETS - 1; us >>= 1)
				b++;
			v->stats.latency_us[b]++;
		} else {
			v->stats.pmis_masked++;
		}
		for (unsigned int i = 0; i < VPMU_MAX_COUNTERS; i++)
			if (v->ctr[i].programmed && counter_wants_pmi(v, i))
				arm_counter(v, i);
	}
}

void vpmu_vcpu_enter(struct vpmu_vcpu *v, uint64_t now_ns)
{
	if (v->cfg->model == VPMU_MODEL_OFF)
		return;
	if (v->cfg->mode == VPMU_MODE_CPU_SWITCH)
		vpmu_sync(v, false, now_ns);
	v->entry_time = now_ns;
}

void vpmu_vcpu_before_run(struct vpmu_vcpu *v, uint64_t now_ns)
{
	vpmu_vcpu_prepare_entry(v, now_ns);
	vpmu_vcpu_enter(v, now_ns);
}

void vpmu_vcpu_after_run(struct vpmu_vcpu *v, uint64_t now_ns)
{
	vpmu_vcpu_sync(v, now_ns);
}

void vpmu_vcpu_sync(struct vpmu_vcpu *v, uint64_t now_ns)
{
	if (v->cfg->model != VPMU_MODEL_OFF)
		vpmu_sync(v, true, now_ns);
}

uint64_t vpmu_vcpu_exit_deadline(const struct vpmu_vcpu *v, uint64_t now_ns)
{
	const uint64_t min_ns = 20000, max_ns = 4000000;
	uint64_t best = 0;

	(void)now_ns;
	for (unsigned int i = 0; i < VPMU_MAX_COUNTERS; i++) {
		const struct vpmu_counter *c = &v->ctr[i];
		uint64_t remaining, t;

		if (!c->programmed || !counter_wants_pmi(v, i))
			continue;
		remaining = VPMU_COUNTER_MASK + 1 - c->count;
		if (c->last_delta && c->last_interval)
			t = (uint64_t)((double)remaining * (double)c->last_interval / (double)c->last_delta);
		else
			t = 1000000; /* no rate known yet: look again in 1 ms */
		if (t < min_ns)
			t = min_ns;
		if (t > max_ns)
			t = max_ns;
		if (!best || t < best)
			best = t;
	}
	return best;
}

/* --- MSR access ----------------------------------------------------------- */

/* Maps an MSR to a counter: *is_ctl tells event select from count. Returns -1 if none. */
static int amd_counter_of(uint32_t msr, bool *is_ctl)
{
	if (msr >= MSR_K7_EVNTSEL0 && msr < MSR_K7_EVNTSEL0 + 4) {
		*is_ctl = true;
		return (int)(msr - MSR_K7_EVNTSEL0);
	}
	if (msr >= MSR_K7_PERFCTR0 && msr < MSR_K7_PERFCTR0 + 4) {
		*is_ctl = false;
		return (int)(msr - MSR_K7_PERFCTR0);
	}
	if (msr >= MSR_F15H_PERF_CTL0 && msr < MSR_F15H_PERF_CTL0 + 2 * VPMU_AMD_MAX_GP) {
		*is_ctl = !((msr - MSR_F15H_PERF_CTL0) & 1);
		return (int)((msr - MSR_F15H_PERF_CTL0) / 2);
	}
	return -1;
}

static void counter_write(struct vpmu_vcpu *v, unsigned int idx, uint64_t value)
{
	struct vpmu_counter *c = &v->ctr[idx];

	/* The written value replaces everything counted so far, including unsynced VMM time. */
	if (c->programmed) {
		uint64_t raw[VPMU_MAX_COUNTERS];
		if (v->ops->read(v, raw) == 0)
			c->raw_last = raw[idx];
	}
	c->count = value & VPMU_COUNTER_MASK;
	if (!c->count && !c->ctl)
		c->live = false; /* the guest resets it: no RDPMC of it follows */
	else if (c->count && c->ctl) {
		/* Being started again (x86_perf_event_set_period), its enable perhaps deferred: readable. */
		c->live = true;
		c->read_stopped = false;
	}
	arm_counter(v, idx);
}

static void ctl_write(struct vpmu_vcpu *v, unsigned int idx, uint64_t value)
{
	struct vpmu_counter *c = &v->ctr[idx];

	if (c->ctl != value) {
		c->ctl = value;
		v->reprogram = true;
		c->read_stopped = false;
	}
	if (vpmu_ctl_enables(idx, value))
		c->stopped_in_nmi = false;
	else if (c->live && v->maybe_in_nmi)
		c->stopped_in_nmi = true;
	if (value)
		c->live = true;
}

static int amd_msr_read(struct vpmu_vcpu *v, uint32_t msr, uint64_t *val)
{
	bool is_ctl;
	int idx = amd_counter_of(msr, &is_ctl);

	if (idx >= 0) {
		/* Counters beyond the offered number read as zero, as unimplemented ones do. */
		*val = (unsigned int)idx >= v->cfg->n_gp ? 0 :
		       is_ctl ? v->ctr[idx].ctl : v->ctr[idx].count;
		return VPMU_MSR_OK;
	}
	switch (msr) {
	case MSR_AMD64_PERF_CNTR_GLOBAL_STATUS:
		*val = v->global_status;
		return VPMU_MSR_OK;
	case MSR_AMD64_PERF_CNTR_GLOBAL_CTL:
		*val = v->global_ctrl;
		return VPMU_MSR_OK;
	case MSR_AMD64_PERF_CNTR_GLOBAL_STATUS_CLR:
	case MSR_AMD64_PERF_CNTR_GLOBAL_STATUS_SET:
		*val = 0;
		return VPMU_MSR_OK;
	default:
		return VPMU_MSR_GP; /* an Intel PMU register on an AMD-model CPU */
	}
}

static int amd_msr_write(struct vpmu_vcpu *v, uint32_t msr, uint64_t val)
{
	uint64_t valid = valid_global_bits(v->cfg);
	bool is_ctl;
	int idx = amd_counter_of(msr, &is_ctl);

	if (idx >= 0) {
		if ((unsigned int)idx >= v->cfg->n_gp)
			return VPMU_MSR_OK;
		if (is_ctl)
			ctl_write(v, (unsigned int)idx, val & AMD_EVTSEL_VALID);
		else
			counter_write(v, (unsigned int)idx, val);
		return VPMU_MSR_OK;
	}
	switch (msr) {
	case MSR_AMD64_PERF_CNTR_GLOBAL_STATUS:
		return VPMU_MSR_OK; /* read-only: ignored */
	case MSR_AMD64_PERF_CNTR_GLOBAL_CTL:
		if ((val & valid) != v->global_ctrl) {
			v->global_ctrl = val & valid;
			v->reprogram = true;
		}
		return VPMU_MSR_OK;
	case MSR_AMD64_PERF_CNTR_GLOBAL_STATUS_CLR:
		v->global_status &= ~(val & valid);
		return VPMU_MSR_OK;
	case MSR_AMD64_PERF_CNTR_GLOBAL_STATUS_SET:
		v->global_status |= val & valid;
		return VPMU_MSR_OK;
	default:
		return VPMU_MSR_GP;
	}
}

static int intel_msr_read(struct vpmu_vcpu *v, uint32_t msr, uint64_t *val)
{
	const struct vpmu_config *cfg = v->cfg;

	if (msr >= MSR_IA32_PMC0 && msr < MSR_IA32_PMC0 + cfg->n_gp) {
		*val = v->ctr[msr - MSR_IA32_PMC0].count;
	} else if (msr >= MSR_IA32_PMC0_FULL && msr < MSR_IA32_PMC0_FULL + cfg->n_gp) {
		*val = v->ctr[msr - MSR_IA32_PMC0_FULL].count;
	} else if (msr >= MSR_IA32_PERFEVTSEL0 && msr < MSR_IA32_PERFEVTSEL0 + cfg->n_gp) {
		*val = v->ctr[msr - MSR_IA32_PERFEVTSEL0].ctl;
	} else if (msr >= MSR_CORE_PERF_FIXED_CTR0 && msr < MSR_CORE_PERF_FIXED_CTR0 + cfg->n_fixed) {
		*val = v->ctr[VPMU_FIXED_BASE + msr - MSR_CORE_PERF_FIXED_CTR0].count;
	} else {
		switch (msr) {
		case MSR_CORE_PERF_FIXED_CTR_CTRL:
			*val = v->fixed_ctrl;
			break;
		case MSR_CORE_PERF_GLOBAL_STATUS:
			*val = v->global_status;
			break;
		case MSR_CORE_PERF_GLOBAL_CTRL:
			*val = v->global_ctrl;
			break;
		case MSR_CORE_PERF_GLOBAL_OVF_CTRL:
			*val = 0;
			break;
		case MSR_IA32_PERF_CAPABILITIES:
			*val = PERF_CAP_VALUE;
			break;
		default:
			return VPMU_MSR_GP; /* missing counter, or an AMD register */
		}
	}
	return VPMU_MSR_OK;
}

static int intel_msr_write(struct vpmu_vcpu *v, uint32_t msr, uint64_t val)
{
	const struct vpmu_config *cfg = v->cfg;
	uint64_t valid = valid_global_bits(cfg);

	if (msr >= MSR_IA32_PMC0 && msr < MSR_IA32_PMC0 + cfg->n_gp) {
		/* Legacy counter writes sign-extend from bit 31. */
		counter_write(v, msr - MSR_IA32_PMC0, (uint64_t)(int64_t)(int32_t)(uint32_t)val);
	} else if (msr >= MSR_IA32_PMC0_FULL && msr < MSR_IA32_PMC0_FULL + cfg->n_gp) {
		if (val & ~VPMU_COUNTER_MASK)
			return VPMU_MSR_GP;
		counter_write(v, msr - MSR_IA32_PMC0_FULL, val);
	} else if (msr >= MSR_IA32_PERFEVTSEL0 && msr < MSR_IA32_PERFEVTSEL0 + cfg->n_gp) {
		if (val & INTEL_EVTSEL_RESERVED)
			return VPMU_MSR_GP;
		ctl_write(v, msr - MSR_IA32_PERFEVTSEL0, val);
	} else if (msr >= MSR_CORE_PERF_FIXED_CTR0 && msr < MSR_CORE_PERF_FIXED_CTR0 + cfg->n_fixed) {
		if (val & ~VPMU_COUNTER_MASK)
			return VPMU_MSR_GP;
		counter_write(v, VPMU_FIXED_BASE + msr - MSR_CORE_PERF_FIXED_CTR0, val);
	} else {
		switch (msr) {
		case MSR_CORE_PERF_FIXED_CTR_CTRL: {
			uint64_t valid_fixed = 0;
			for (unsigned int i = 0; i < cfg->n_fixed; i++)
				valid_fixed |= FIXED_FIELD_VALID << (4 * i);
			if (val & ~valid_fixed)
				return VPMU_MSR_GP;
			v->fixed_ctrl = val;
			for (unsigned int i = 0; i < cfg->n_fixed; i++)
				ctl_write(v, VPMU_FIXED_BASE + i, (val >> (4 * i)) & 0xf);
			break;
		}
		case MSR_CORE_PERF_GLOBAL_CTRL:
			if (val & ~valid)
				return VPMU_MSR_GP;
			if (val != v->global_ctrl) {
				v->global_ctrl = val;
				v->reprogram = true;
			}
			break;
		case MSR_CORE_PERF_GLOBAL_OVF_CTRL:
			/* Bits 62 (OvfBuf) and 63 (CondChgd) exist on v2 as well. */
			if (val & ~(valid | (3ULL << 62)))
				return VPMU_MSR_GP;
			v->global_status &= ~val;
			break;
		default:
			/* GLOBAL_STATUS and PERF_CAPABILITIES are read-only; missing counters do not exist. */
			return VPMU_MSR_GP;
		}
	}
	return VPMU_MSR_OK;
}

int vpmu_msr_read(struct vpmu_vcpu *v, uint32_t msr, uint64_t *val)
{
	int rc;

	if (!vpmu_msr_owned(v->cfg, msr))
		return VPMU_MSR_NOT_PMU;
	v->stats.msr_reads++;
	rc = vpmu_sbuf_msr(v->cfg, msr) ? vpmu_sbuf_msr_read(v, msr, val) :
	     is_amd(v) ? amd_msr_read(v, msr, val) : intel_msr_read(v, msr, val);
	if (rc == VPMU_MSR_GP)
		v->stats.msr_gp++;
	return rc;
}

int vpmu_msr_write(struct vpmu_vcpu *v, uint32_t msr, uint64_t val)
{
	int rc;

	if (!vpmu_msr_owned(v->cfg, msr))
		return VPMU_MSR_NOT_PMU;
	v->stats.msr_writes++;
	rc = vpmu_sbuf_msr(v->cfg, msr) ? vpmu_sbuf_msr_write(v, msr, val) :
	     is_amd(v) ? amd_msr_write(v, msr, val) : intel_msr_write(v, msr, val);
	if (rc == VPMU_MSR_GP)
		v->stats.msr_gp++;
	return rc;
}

void vpmu_stats_add(struct vpmu_stats *sum, const struct vpmu_stats *s)
{
	const uint64_t *src = (const uint64_t *)s;
	uint64_t *dst = (uint64_t *)sum;
	uint64_t lat_max = s->latency_max_ns > sum->latency_max_ns ? s->latency_max_ns : sum->latency_max_ns;
	uint64_t past_max = s->events_past_max > sum->events_past_max ? s->events_past_max : sum->events_past_max;

	/* Every field is a uint64_t total except the two maxima, put right after. */
	_Static_assert(sizeof(*s) % sizeof(uint64_t) == 0, "vpmu_stats holds only uint64_t");
	for (size_t i = 0; i < sizeof(*s) / sizeof(uint64_t); i++)
		dst[i] += src[i];
	sum->latency_max_ns = lat_max;
	sum->events_past_max = past_max;
}
