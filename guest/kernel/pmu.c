/* SPDX-License-Identifier: MIT */
/*
 * PMU driver: the virtual PMU the VMM offers (Intel architectural perfmon,
 * or AMD PerfCtrCore with or without PerfMonV2), found through CPUID run in
 * ring 0 (CPUID from ring 3 is not intercepted on this host).
 *
 * Counters belong to processes. A process's counters are on a CPU's
 * hardware only while it runs there (c->pmu_loaded): switching it out
 * disables them and folds their values into its slots; switching it in
 * programs them again. Counting counters restart from 0 on every load and
 * accumulate in software, so only 0 is ever written to them (which legacy
 * Intel PMC writes, 32 bits sign-extended, can do); a sampling counter is
 * written 2^W - remaining, remaining < 2^31.
 *
 * PMIs arrive as NMIs (LVTPC delivery mode NMI, as Linux does). An overflow
 * is recognised by the sampling counter having wrapped (value < 2^(W-1)),
 * on every model, so that the same overflow is never counted twice: by the
 * NMI handler, or by a save that finds it before its NMI arrives. An NMI
 * that lands while this file is touching the counters (c->pmu_busy) is
 * deferred and handled when that code is done.
 *
 * System-wide sampling (pmu_all.c) owns the last general-purpose counter
 * of every CPU (pmu_all_counter) while it runs: per-process sessions never
 * get that counter (on PMUs with PMU_SLOTS_ALL_MIN counters or more, so
 * they keep PMU_SLOTS), and every write of the global enable register here
 * keeps its bit (c->pmu_all_on). The NMI handler checks both sampling
 * counters; pmu_hw.h is what pmu_all.c uses of this file. Only system-wide
 * sampling's PMI path is throttled (pmu_throttle.c): a process's sampling
 * counter is pmutest's, whose cases count every overflow exactly (pmis =
 * events / period), it runs only while its process does, and a throttled
 * state would have to follow the process through its context switches.
 *
 * Every MSR access exits to the VMM and every ring-0 instruction is
 * emulated (~1.4 us): the paths here are kept short, and processes that do
 * not use the PMU pay one comparison per context switch.
 */
#include <kvmprof/vpmu_sbuf.h>

#include "kernel.h"
#include "pmu_hw.h"

#define LAPIC_LVTPC 0x340
#define LVT_DELIVERY_NMI 0x400

#define MSR_IA32_PMC0 0xc1u
#define MSR_IA32_PERFEVTSEL0 0x186u
#define MSR_IA32_PERF_CAPABILITIES 0x345u
#define MSR_IA32_FIXED_CTR0 0x309u
#define MSR_IA32_FIXED_CTR_CTRL 0x38du
#define MSR_IA32_GLOBAL_CTRL 0x38fu
#define MSR_IA32_GLOBAL_OVF_CTRL 0x390u
#define MSR_AMD_PERF_CTL0 0xc0010200u /* CTLn = base + 2n, CTRn = base + 2n + 1 */
#define MSR_AMD_GLOBAL_CTL 0xc0000301u
#define MSR_AMD_GLOBAL_STATUS_CLR 0xc0000302u

#define EVTSEL_USR (1ULL << 16)
#define EVTSEL_OS (1ULL << 17)
#define EVTSEL_INT (1ULL << 20)
#define EVTSEL_EN (1ULL << 22)
#define FIXED_OS 1u
#define FIXED_USR 2u

static struct {
	int model;      /* PMU_MODEL_* */
	int version;
	int gp, fixed;
	int width;
	int full_width;
	int has_global; /* Intel v2+ GLOBAL_CTRL / AMD PerfMonV2 GLOBAL_CTL */
	uint32_t unavailable; /* Intel CPUID 0xA EBX: architectural events absent */
	uint64_t mask, half;
	uint64_t all_status; /* every status bit of the model */
	uint32_t sbuf_msr;   /* kvmprof's sample buffer: its first MSR (KP_MSR_SBUF_CTL), 0 if not offered */
} pmu;

#define barrier() __asm__ volatile("" ::: "memory")

/* ---- detection ------------------------------------------------------------ */

void pmu_init(void)
{
	uint32_t r[4];
	cpuid(0, 0, r);
	if (r[0] >= 0xa) {
		cpuid(0xa, 0, r);
		int ver = r[0] & 0xff, gp = (r[0] >> 8) & 0xff, len = (r[0] >> 24) & 0xff;
		if (ver >= 1 && gp >= 1) {
			pmu.model = PMU_MODEL_INTEL;
			pmu.version = ver;
			pmu.gp = gp > 8 ? 8 : gp;
			pmu.width = (r[0] >> 16) & 0xff;
			pmu.unavailable = r[1] | (len < 7 ? ~((1u << len) - 1) : 0);
			if (ver >= 2) {
				pmu.fixed = r[3] & 0x1f;
				if (pmu.fixed > 3)
					pmu.fixed = 3;
				pmu.has_global = 1;
			}
			uint64_t caps;
			if (msr_read_safe(MSR_IA32_PERF_CAPABILITIES, &caps) == 0 && (caps & (1u << 13)))
				pmu.full_width = 1;
		}
	}
	if (!pmu.model) {
		cpuid(0x80000000, 0, r);
		uint32_t max = r[0];
		int core = 0, v2 = 0, n = 0;
		if (max >= 0x80000001) {
			cpuid(0x80000001, 0, r);
			core = (r[2] >> 23) & 1;
		}
		if (max >= 0x80000022) {
			cpuid(0x80000022, 0, r);
			v2 = r[0] & 1;
			n = r[1] & 0xf;
		}
		if (core || v2) {
			pmu.model = PMU_MODEL_AMD;
			pmu.version = v2 ? 2 : 1;
			pmu.gp = v2 && n ? n : 6;
			if (pmu.gp > 6)
				pmu.gp = 6;
			pmu.width = 48;
			pmu.has_global = v2;
		}
	}
	if (!pmu.model) {
		kinfo("kvmprof guest: no pmu\n");
		return;
	}
	cpuid(KP_CPUID_LEAF, 0, r);
	if (r[0] >= KP_CPUID_FEATURES && r[1] == KP_CPUID_SIG_EBX && r[2] == KP_CPUID_SIG_ECX &&
	    r[3] == KP_CPUID_SIG_EDX) {
		cpuid(KP_CPUID_FEATURES, 0, r);
		if (r[0] & KP_CPUID_SBUF)
			pmu.sbuf_msr = r[1];
	}
	if (pmu.width < 32 || pmu.width > 48)
		pmu.width = 48;
	pmu.mask = (1ULL << pmu.width) - 1;
	pmu.half = 1ULL << (pmu.width - 1);
	pmu.all_status = (1ULL << pmu.gp) - 1;
	if (pmu.model == PMU_MODEL_INTEL) {
		pmu.all_status |= ((1ULL << pmu.fixed) - 1) << 32;
		kinfo("kvmprof guest: pmu intel v%d, %d+%d counters, %d bits%s\n", pmu.version, pmu.gp,
		      pmu.fixed, pmu.width, pmu.full_width ? ", full-width writes" : "");
	} else {
		kinfo("kvmprof guest: pmu amd %s, %d counters\n", pmu.has_global ? "perfmon-v2" : "core",
		      pmu.gp);
	}
	if (pmu.sbuf_msr)
		kinfo("kvmprof guest: pmu sample buffer at msr 0x%x\n", pmu.sbuf_msr);
	pmu_cpu_init();
}

void pmu_cpu_init(void)
{
	if (pmu.model)
		lapic_write(LAPIC_LVTPC, LVT_DELIVERY_NMI);
}

/* ---- hardware access --------------------------------------------------- */

static int intel(void)
{
	return pmu.model == PMU_MODEL_INTEL;
}

static uint32_t msr_ctl(int hw)
{
	return intel() ? MSR_IA32_PERFEVTSEL0 + hw : MSR_AMD_PERF_CTL0 + 2 * hw;
}

static uint32_t msr_ctr(int hw)
{
	if (hw >= PMU_HW_FIXED)
		return MSR_IA32_FIXED_CTR0 + (hw - PMU_HW_FIXED);
	return intel() ? MSR_IA32_PMC0 + hw : MSR_AMD_PERF_CTL0 + 2 * hw + 1;
}

static uint64_t hw_bit(int hw)
{
	return hw >= PMU_HW_FIXED ? 1ULL << (32 + hw - PMU_HW_FIXED) : 1ULL << hw;
}

/* Arms a general-purpose counter to overflow after `left` (< 2^31) events. */
static void write_period(int hw, uint64_t left)
{
	if (intel()) /* legacy write: bits 31:0, sign-extended to the width */
		wrmsr(msr_ctr(hw), (uint32_t)-(uint32_t)left);
	else
		wrmsr(msr_ctr(hw), (0 - left) & pmu.mask);
}

static void clear_status(void)
{
	if (!pmu.has_global)
		return;
	wrmsr(intel() ? MSR_IA32_GLOBAL_OVF_CTRL : MSR_AMD_GLOBAL_STATUS_CLR, pmu.all_status);
}

static int any_running(const struct proc *p)
{
	for (int i = 0; i < PMU_SLOTS; i++)
		if (p->pmu.slot[i].running)
			return 1;
	return 0;
}

/* Overflow of p's sampling counter, seen with the counter at `v` past zero. */
static void take_overflow(struct proc *p, uint64_t v, uint64_t user_rip)
{
	struct pmu_proc *m = &p->pmu;
	struct pmu_slot *s = &m->slot[PMU_SAMPLE_SLOT];
	m->st.pmis++;
	m->st.overshoot_sum += v;
	if (v > m->st.overshoot_max)
		m->st.overshoot_max = v;
	if (user_rip && m->nrips < PMU_SAMPLE_BUF) {
		m->rips[m->nrips++] = user_rip;
		m->st.recorded++;
	}
	s->remaining = m->period;
	if ((m->sflags & PMU_SAMPLE_KEEP_OVERSHOOT) && v < m->period)
		s->remaining = m->period - v;
}

/* The global enable bits that stay on whichever process runs: system-wide sampling's. */
static uint64_t all_bits(const struct cpu *c)
{
	return c->pmu_all_on ? hw_bit(pmu_all_counter()) : 0;
}

static void hw_disable(struct cpu *c, const struct proc *p)
{
	if (pmu.has_global) {
		wrmsr(intel() ? MSR_IA32_GLOBAL_CTRL : MSR_AMD_GLOBAL_CTL, all_bits(c));
		return;
	}
	for (int i = 0; i < PMU_SLOTS; i++) {
		const struct pmu_slot *s = &p->pmu.slot[i];
		if (s->running && s->hw < PMU_HW_FIXED)
			wrmsr(msr_ctl(s->hw), 0);
	}
}

/* Stops p's counters on this CPU and folds them into its slots. */
static void hw_save(struct cpu *c, struct proc *p, uint64_t user_rip)
{
	int ovf = 0;
	hw_disable(c, p);
	for (int i = 0; i < PMU_SLOTS; i++) {
		struct pmu_slot *s = &p->pmu.slot[i];
		if (!s->running)
			continue;
		uint64_t v = rdmsr(msr_ctr(s->hw)) & pmu.mask;
		if (i != PMU_SAMPLE_SLOT) {
			s->total += v;
		} else if (v < pmu.half) { /* wrapped; its PMI has not been handled */
			take_overflow(p, v, user_rip);
			ovf = 1;
		} else {
			s->remaining = pmu.mask + 1 - v;
		}
	}
	if (ovf)
		clear_status();
	c->pmu_loaded = NULL;
}

/* Programs p's running counters on this CPU and enables them. */
static void hw_load(struct cpu *c, struct proc *p)
{
	uint64_t global = all_bits(c), fixed_ctrl = 0;
	int fixed = 0, sampling = 0;
	for (int i = 0; i < PMU_SLOTS; i++) {
		struct pmu_slot *s = &p->pmu.slot[i];
		if (!s->running)
			continue;
		global |= hw_bit(s->hw);
		if (i == PMU_SAMPLE_SLOT) {
			write_period(s->hw, s->remaining);
			sampling = 1;
		} else {
			wrmsr(msr_ctr(s->hw), 0);
		}
		if (s->hw >= PMU_HW_FIXED) {
			fixed_ctrl |= s->ctl << (4 * (s->hw - PMU_HW_FIXED));
			fixed = 1;
		} else {
			wrmsr(msr_ctl(s->hw), s->ctl | EVTSEL_EN);
		}
	}
	if (fixed)
		wrmsr(MSR_IA32_FIXED_CTR_CTRL, fixed_ctrl);
	if (sampling && intel()) /* the VMM masks LVTPC after each PMI, as hardware does */
		lapic_write(LAPIC_LVTPC, LVT_DELIVERY_NMI);
	if (pmu.has_global)
		wrmsr(intel() ? MSR_IA32_GLOBAL_CTRL : MSR_AMD_GLOBAL_CTL, global);
	c->pmu_loaded = p;
}

/*
 * The PMI proper: count and re-arm an overflow of the loaded process's
 * sampling counter and of system-wide sampling's; (rip, cs) were interrupted.
 */
static void nmi_body(struct cpu *c, uint64_t rip, uint64_t cs)
{
	struct proc *p = c->pmu_loaded;
	/*
	 * Unmask first (the VMM masks LVTPC after each PMI, as hardware does):
	 * an overflow after the re-arm below but before a late unmask was
	 * dropped, and the counter never overflowed again. Unmasked now, its
	 * PMI waits until this NMI's IRET.
	 */
	if (intel())
		lapic_write(LAPIC_LVTPC, LVT_DELIVERY_NMI);
	if (p && p->pmu.slot[PMU_SAMPLE_SLOT].running) {
		struct pmu_slot *s = &p->pmu.slot[PMU_SAMPLE_SLOT];
		uint64_t v = rdmsr(msr_ctr(s->hw)) & pmu.mask;
		if (v < pmu.half) {
			take_overflow(p, v, (cs & 3) == 3 ? rip : 0);
			write_period(s->hw, s->remaining);
		}
	}
	if (c->pmu_all_on)
		pmu_all_nmi(c, rip, cs);
	clear_status();
}

void pmu_enter(struct cpu *c)
{
	c->pmu_busy = 1;
	barrier();
}

void pmu_leave(struct cpu *c)
{
	for (;;) {
		barrier();
		c->pmu_busy = 0;
		barrier();
		if (!c->pmu_deferred)
			return;
		c->pmu_busy = 1;
		c->pmu_deferred = 0;
		barrier();
		nmi_body(c, c->pmu_deferred_rip, c->pmu_deferred_cs);
	}
}

void pmu_nmi(struct cpu *c, struct trapframe *tf)
{
	c->nmis++;
	if (!pmu.model) {
		kprintf("kvmprof guest: NMI on cpu %d at rip=0x%lx (ignored)\n", c->id, tf->rip);
		return;
	}
	if (c->pmu_busy) {
		c->pmu_deferred_rip = tf->rip;
		c->pmu_deferred_cs = tf->cs;
		c->pmu_deferred = 1;
		return;
	}
	pmu_enter(c);
	nmi_body(c, tf->rip, tf->cs);
	pmu_leave(c);
}

int pmu_fixup(struct trapframe *tf)
{
	if (tf->rip == (uint64_t)msr_read_insn || tf->rip == (uint64_t)msr_write_insn || tf->rip == (uint64_t)rdpmc_insn) {
		tf->rip = (uint64_t)msr_safe_fixup;
		return 1;
	}
	return 0;
}

/* ---- context switch ---------------------------------------------------- */

void pmu_proc_reset(struct proc *p)
{
	memset(&p->pmu, 0, sizeof(p->pmu));
}

void pmu_switch_out(struct cpu *c, struct proc *p, uint64_t user_rip)
{
	if (c->pmu_loaded != p)
		return;
	pmu_enter(c);
	hw_save(c, p, user_rip);
	pmu_leave(c);
}

void pmu_switch_in(struct cpu *c, struct proc *p)
{
	if (!pmu.model || !any_running(p))
		return;
	pmu_enter(c);
	hw_load(c, p);
	pmu_leave(c);
}

void pmu_exit(struct cpu *c, struct proc *p)
{
	if (c->pmu_loaded != p)
		return;
	pmu_enter(c);
	hw_disable(c, p);
	c->pmu_loaded = NULL;
	pmu_leave(c);
}

/* Stops the caller's counters so that its slots can be changed; see reload(). */
static void unload(struct cpu *c, struct proc *p, struct trapframe *tf)
{
	pmu_enter(c);
	if (c->pmu_loaded == p)
		hw_save(c, p, tf->rip);
}

static void reload(struct cpu *c, struct proc *p)
{
	if (any_running(p))
		hw_load(c, p);
	pmu_leave(c);
}

/* ---- system calls -------------------------------------------------------- */

/* Returns v from the system call (tf is the handler's trap frame). */
#define RET(v)                                   \
	do {                                     \
		tf->rax = (uint64_t)(long)(v);   \
		return;                          \
	} while (0)

/*
 * Event select (without EN) for an event, and which fixed counter could
 * count it (-1: none). Returns 0 or -EINVAL.
 */
static int event_ctl(const struct pmu_event *e, uint64_t *ctl, int *fixed)
{
	static const struct {
		uint8_t intel_ev, intel_umask, intel_bit;
		uint16_t amd_ev;
		int8_t fixed;
	} named[PMU_KIND_MAX + 1] = {
		[PMU_INSTRUCTIONS] = { 0xc0, 0x00, 1, 0xc0, 0 },
		[PMU_CYCLES] = { 0x3c, 0x00, 0, 0x76, 1 },
		[PMU_BRANCHES] = { 0xc4, 0x00, 5, 0xc2, -1 },
		[PMU_BRANCH_MISSES] = { 0xc5, 0x00, 6, 0xc3, -1 },
		[PMU_LLC_REFS] = { 0x2e, 0x4f, 3, 0, -1 },
		[PMU_LLC_MISSES] = { 0x2e, 0x41, 4, 0, -1 },
	};
	uint64_t ev, umask;
	if (e->kind > PMU_KIND_MAX || (e->flags & ~PMU_FLAGS_ALL) || !(e->flags & (PMU_USR | PMU_OS)))
		return -GUEST_EINVAL;
	*fixed = -1;
	if (e->kind == PMU_RAW) {
		if (e->event > (intel() ? 0xff : 0xfff))
			return -GUEST_EINVAL;
		ev = e->event;
		umask = e->umask;
	} else if (intel()) {
		if (pmu.unavailable & (1u << named[e->kind].intel_bit))
			return -GUEST_EINVAL;
		ev = named[e->kind].intel_ev;
		umask = named[e->kind].intel_umask;
		if (!(e->flags & PMU_NOFIXED))
			*fixed = named[e->kind].fixed;
	} else {
		if (!named[e->kind].amd_ev)
			return -GUEST_EINVAL;
		ev = named[e->kind].amd_ev;
		umask = 0;
	}
	*ctl = (ev & 0xff) | (umask << 8) | ((ev >> 8) << 32) |
	       (e->flags & PMU_USR ? EVTSEL_USR : 0) | (e->flags & PMU_OS ? EVTSEL_OS : 0);
	return 0;
}

static int first_free_gp(uint64_t used)
{
	int n = pmu_all_counter() >= 0 ? pmu_all_counter() : pmu.gp; /* the last is system-wide sampling's */
	for (int i = 0; i < n; i++)
		if (!(used & (1ULL << i)))
			return i;
	return -1;
}

static uint64_t used_hw(const struct proc *p, int from, int to)
{
	uint64_t used = 0;
	for (int i = from; i < to; i++)
		if (p->pmu.slot[i].used)
			used |= hw_bit(p->pmu.slot[i].hw);
	return used;
}

void sys_pmu_info(struct cpu *c, struct trapframe *tf)
{
	struct pmu_info info = { 0 };
	if (!user_range_ok(c->cur, tf->rdi, sizeof(info)))
		RET(-GUEST_EFAULT);
	info.model = (unsigned)pmu.model;
	info.version = (unsigned)pmu.version;
	info.gp = (unsigned)pmu.gp;
	info.fixed = (unsigned)pmu.fixed;
	info.width = (unsigned)pmu.width;
	info.full_width = (unsigned)pmu.full_width;
	info.test = (unsigned)pmu_test_enabled;
	memcpy((void *)tf->rdi, &info, sizeof(info));
	RET(pmu.model ? 0 : -GUEST_ENODEV);
}

void sys_pmu_open(struct cpu *c, struct trapframe *tf)
{
	struct proc *p = c->cur;
	struct pmu_event ev[PMU_MAX_EVENTS];
	struct pmu_slot ns[PMU_MAX_EVENTS];
	uint64_t n = tf->rsi;
	if (!pmu.model)
		RET(-GUEST_ENODEV);
	if (n < 1 || n > PMU_MAX_EVENTS)
		RET(-GUEST_EINVAL);
	if (!user_range_ok(p, tf->rdi, n * sizeof(ev[0])))
		RET(-GUEST_EFAULT);
	memcpy(ev, (const void *)tf->rdi, n * sizeof(ev[0]));
	memset(ns, 0, sizeof(ns));
	uint64_t used = used_hw(p, PMU_SAMPLE_SLOT, PMU_SLOTS);
	for (uint64_t i = 0; i < n; i++) {
		int fixed, hw;
		uint64_t ctl;
		int r = event_ctl(&ev[i], &ctl, &fixed);
		if (r)
			RET(r);
		if (fixed >= 0 && fixed < pmu.fixed && !(used & hw_bit(PMU_HW_FIXED + fixed))) {
			hw = PMU_HW_FIXED + fixed;
			ctl = (ev[i].flags & PMU_USR ? FIXED_USR : 0) | (ev[i].flags & PMU_OS ? FIXED_OS : 0);
		} else if ((hw = first_free_gp(used)) < 0) {
			RET(-GUEST_EINVAL);
		}
		used |= hw_bit(hw);
		ns[i].used = 1;
		ns[i].hw = (uint8_t)hw;
		ns[i].ctl = ctl;
	}
	unload(c, p, tf);
	memcpy(p->pmu.slot, ns, sizeof(ns));
	p->pmu.nevents = (int)n;
	reload(c, p);
	RET(0);
}

static void set_counting(struct cpu *c, struct trapframe *tf, int run)
{
	struct proc *p = c->cur;
	if (!pmu.model)
		RET(-GUEST_ENODEV);
	if (!p->pmu.nevents)
		RET(-GUEST_EINVAL);
	unload(c, p, tf);
	for (int i = 0; i < p->pmu.nevents; i++)
		p->pmu.slot[i].running = (uint8_t)run;
	reload(c, p);
	RET(0);
}

void sys_pmu_start(struct cpu *c, struct trapframe *tf)
{
	set_counting(c, tf, 1);
}

void sys_pmu_stop(struct cpu *c, struct trapframe *tf)
{
	set_counting(c, tf, 0);
}

void sys_pmu_read(struct cpu *c, struct trapframe *tf)
{
	struct proc *p = c->cur;
	uint64_t n = tf->rsi;
	if (!pmu.model)
		RET(-GUEST_ENODEV);
	if (!p->pmu.nevents)
		RET(-GUEST_EINVAL);
	if (n > (uint64_t)p->pmu.nevents)
		n = (uint64_t)p->pmu.nevents;
	if (!user_range_ok(p, tf->rdi, n * 8))
		RET(-GUEST_EFAULT);
	if (p->pmu.slot[0].running) { /* fold the live counts in */
		unload(c, p, tf);
		reload(c, p);
	}
	uint64_t *out = (uint64_t *)tf->rdi;
	for (uint64_t i = 0; i < n; i++)
		out[i] = p->pmu.slot[i].total;
	RET((long)n);
}

void sys_pmu_close(struct cpu *c, struct trapframe *tf)
{
	struct proc *p = c->cur;
	if (!pmu.model)
		RET(-GUEST_ENODEV);
	unload(c, p, tf);
	memset(p->pmu.slot, 0, PMU_MAX_EVENTS * sizeof(p->pmu.slot[0]));
	p->pmu.nevents = 0;
	reload(c, p);
	RET(0);
}

void sys_pmu_sample_start(struct cpu *c, struct trapframe *tf)
{
	struct proc *p = c->cur;
	struct pmu_event ev;
	uint64_t period = tf->rsi, flags = tf->rdx, ctl;
	int fixed, hw;
	if (!pmu.model)
		RET(-GUEST_ENODEV);
	if (p->pmu.slot[PMU_SAMPLE_SLOT].used)
		RET(-GUEST_EBUSY);
	if (period < PMU_PERIOD_MIN || period > PMU_PERIOD_MAX || (flags & ~PMU_SAMPLE_KEEP_OVERSHOOT))
		RET(-GUEST_EINVAL);
	if (!user_range_ok(p, tf->rdi, sizeof(ev)))
		RET(-GUEST_EFAULT);
	memcpy(&ev, (const void *)tf->rdi, sizeof(ev));
	int r = event_ctl(&ev, &ctl, &fixed);
	if (r)
		RET(r);
	if ((hw = first_free_gp(used_hw(p, 0, PMU_MAX_EVENTS))) < 0)
		RET(-GUEST_EINVAL);
	unload(c, p, tf);
	struct pmu_slot *s = &p->pmu.slot[PMU_SAMPLE_SLOT];
	s->used = s->running = 1;
	s->hw = (uint8_t)hw;
	s->ctl = ctl | EVTSEL_INT;
	s->remaining = period;
	p->pmu.period = period;
	p->pmu.sflags = (unsigned)flags;
	memset(&p->pmu.st, 0, sizeof(p->pmu.st));
	p->pmu.nrips = 0;
	reload(c, p);
	RET(0);
}

void sys_pmu_sample_stop(struct cpu *c, struct trapframe *tf)
{
	struct proc *p = c->cur;
	if (!pmu.model)
		RET(-GUEST_ENODEV);
	if (!p->pmu.slot[PMU_SAMPLE_SLOT].used)
		RET(-GUEST_EINVAL);
	if (tf->rdi && !user_range_ok(p, tf->rdi, sizeof(p->pmu.st)))
		RET(-GUEST_EFAULT);
	unload(c, p, tf); /* counts an overflow whose PMI has not arrived yet */
	memset(&p->pmu.slot[PMU_SAMPLE_SLOT], 0, sizeof(p->pmu.slot[0]));
	reload(c, p);
	if (tf->rdi)
		memcpy((void *)tf->rdi, &p->pmu.st, sizeof(p->pmu.st));
	RET((long)p->pmu.st.pmis);
}

void sys_pmu_samples(struct cpu *c, struct trapframe *tf)
{
	struct proc *p = c->cur;
	uint64_t max = tf->rsi;
	if (!pmu.model)
		RET(-GUEST_ENODEV);
	if (max > PMU_SAMPLE_BUF)
		max = PMU_SAMPLE_BUF;
	if (!user_range_ok(p, tf->rdi, max * 8))
		RET(-GUEST_EFAULT);
	pmu_enter(c); /* the NMI handler appends */
	uint64_t n = (uint64_t)p->pmu.nrips < max ? (uint64_t)p->pmu.nrips : max;
	memcpy((void *)tf->rdi, p->pmu.rips, n * 8);
	memmove(p->pmu.rips, p->pmu.rips + n, (p->pmu.nrips - n) * 8);
	p->pmu.nrips -= (int)n;
	pmu_leave(c);
	RET((long)n);
}

/* ---- what system-wide sampling uses (pmu_hw.h) ------------------------- */

int pmu_present(void)
{
	return pmu.model != 0;
}

int pmu_all_counter(void)
{
	return pmu.gp >= PMU_SLOTS_ALL_MIN ? pmu.gp - 1 : -1;
}

int pmu_sampling_ctl(const struct pmu_event *e, uint64_t *ctl)
{
	int fixed;
	int r = event_ctl(e, ctl, &fixed);
	if (r == 0)
		*ctl |= EVTSEL_INT;
	return r;
}

struct proc *pmu_suspend(struct cpu *c)
{
	struct proc *p = c->pmu_loaded;
	if (p)
		hw_save(c, p, 0);
	return p;
}

void pmu_resume(struct cpu *c, struct proc *p)
{
	if (p)
		hw_load(c, p);
	else if (pmu.has_global)
		wrmsr(intel() ? MSR_IA32_GLOBAL_CTRL : MSR_AMD_GLOBAL_CTL, all_bits(c));
}

void pmu_counter_stop(int hw)
{
	wrmsr(msr_ctl(hw), 0);
}

void pmu_counter_start(int hw, uint64_t ctl, uint64_t period)
{
	write_period(hw, period);
	wrmsr(msr_ctl(hw), ctl | EVTSEL_EN);
	if (intel()) /* the VMM masks LVTPC after each PMI */
		lapic_write(LAPIC_LVTPC, LVT_DELIVERY_NMI);
}

int pmu_counter_wrapped(int hw, uint64_t *past)
{
	*past = rdmsr(msr_ctr(hw)) & pmu.mask;
	return *past < pmu.half;
}

void pmu_counter_rearm(int hw, uint64_t left)
{
	write_period(hw, left);
}

int pmu_sbuf_offered(void)
{
	return pmu.sbuf_msr != 0;
}

void pmu_sbuf_write(uint32_t reg, uint64_t val)
{
	wrmsr(pmu.sbuf_msr + (reg - KP_MSR_SBUF_CTL), val);
}

void pmu_handle_nmi(struct cpu *c, uint64_t rip, uint64_t cs)
{
	nmi_body(c, rip, cs);
}
