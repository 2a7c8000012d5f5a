/* SPDX-License-Identifier: MIT */
/*
 * System-wide sampling: one event sampled on every CPU, whatever runs there
 * (user processes, the kernel, the idle loop), for the in-guest agent.
 *
 * It owns the last general-purpose counter of every CPU while it runs,
 * programmed through pmu.c's hardware access (pmu_hw.h). Each CPU has a
 * ring of struct pmu_record written only by its own NMI handler (pmu.c
 * calls pmu_all_nmi), so the producer needs no lock and
 * never waits: a full ring drops the record and counts it. Readers drain
 * all rings under all_lock; a reader only moves `tail`, the producer only
 * `head`, so draining while sampling runs is safe.
 *
 * A CPU can only program its own counters: start and stop publish the
 * wanted state with a new generation number, apply it on the calling CPU,
 * interrupt the others (the wake-up IPI, whose handler and the timer tick
 * call pmu_all_poll) and wait, bounded, until each has applied it. Start,
 * stop and read take all_lock with a try: a second caller gets -EBUSY
 * instead of spinning with interrupts off against a CPU that waits for it.
 *
 * With PMU_ALL_BUFFER, and the VMM offering it, the samples go to the VMM's
 * sample buffer instead (pmu_sbuf.c): the VMM writes each record and
 * re-arms the counter, the rings here stay empty, the NMIs are the
 * buffers' watermark PMIs, and pmu_all_read_buf drains.
 *
 * On the PMI path a CPU takes at most a budget of PMIs per timer tick
 * (pmu_throttle.c): the PMI that reaches it stops the counter, and the
 * next tick starts it again, as Linux's perf throttles an event past
 * max_samples_per_tick. The buffered path is not throttled by sample
 * count: the VMM writes each record and re-arms the counter without
 * entering the guest, whose only cost per sample is the exit at the
 * overflow; its PMIs come per watermark crossing (half a buffer), so a
 * short period does not multiply guest handlers, and stopping the counter
 * there would only lose samples the VMM records cheaply.
 */
#include "kernel.h"
#include "pmu_hw.h"

/* Bound on waiting for the other CPUs (~20 us per round in emulated ring 0). */
#define SYNC_ROUNDS 50000

struct all_ring {
	volatile uint32_t head; /* records written since the start: this CPU's NMIs only */
	volatile uint32_t tail; /* records drained: readers only, under all_lock */
	uint64_t pmis, drops;   /* this CPU's NMIs only */
	uint64_t late;          /* overflows the tick took for a lost PMI */
	uint64_t throttled;     /* PMI budgets used up: the counter stopped until the next tick */
	struct pmu_record rec[PMU_ALL_RING];
} __attribute__((aligned(64)));

static struct all_ring rings[MAX_CPUS];
static volatile int all_lock;
static volatile int all_want;          /* 1 sampling, 0 stopped */
static volatile unsigned int all_gen;  /* bumped by every start and stop */
static int all_cpus;                   /* CPUs that applied the last start */

/* The counter, configured while no CPU has it armed. */
static struct {
	int hw;          /* general-purpose counter: pmu_all_counter() */
	uint64_t ctl;    /* event select with INT, without EN */
	uint64_t period;
	unsigned int flags; /* PMU_SAMPLE_KEEP_OVERSHOOT, PMU_ALL_CALLCHAIN */
	int buffered;       /* the VMM's sample buffer takes the samples */
} all;

#define RET(v)                                 \
	do {                                   \
		tf->rax = (uint64_t)(long)(v); \
		return;                        \
	} while (0)

static void pmu_all_record(struct cpu *c, uint64_t rip, unsigned int cpl, uint64_t time)
{
	struct all_ring *r = &rings[c->id];
	uint32_t h = r->head;
	r->pmis++;
	if (h - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) >= PMU_ALL_RING) {
		r->drops++;
		return;
	}
	struct pmu_record *e = &r->rec[h % PMU_ALL_RING];
	e->rip = rip;
	e->time = time;
	e->pid = c->cur ? (unsigned int)c->cur->pid : 0;
	e->cpu = (unsigned short)c->id;
	e->cpl = (unsigned char)cpl;
	e->reserved = 0;
	__atomic_store_n(&r->head, h + 1, __ATOMIC_RELEASE);
}

/* An overflow the tick found without its PMI. */
static void pmu_all_late(struct cpu *c)
{
	rings[c->id].late++;
}

/* ---- the counter ------------------------------------------------------- */

static int pmu_all_config(const struct pmu_event *ev, uint64_t period, unsigned int flags)
{
	uint64_t ctl;
	if (!pmu_present())
		return -GUEST_ENODEV;
	if (pmu_all_counter() < 0)
		return -GUEST_EBUSY;
	if (period < PMU_PERIOD_MIN || period > PMU_PERIOD_MAX ||
	    (flags & ~(PMU_SAMPLE_KEEP_OVERSHOOT | PMU_ALL_BUFFER | PMU_ALL_CALLCHAIN)))
		return -GUEST_EINVAL;
	int buffered = (flags & PMU_ALL_BUFFER) && pmu_sbuf_usable();
	if ((flags & PMU_ALL_CALLCHAIN) && !buffered)
		return -GUEST_EINVAL; /* the NMI path records no stacks */
	int r = pmu_sampling_ctl(ev, &ctl);
	if (r)
		return r;
	all.hw = pmu_all_counter();
	all.ctl = ctl;
	all.period = period;
	all.flags = flags;
	all.buffered = buffered;
	return 0;
}

/*
 * Arms (on) or stops the counter on this CPU. The loaded process's counters
 * are saved and loaded around it, so that the global enable register gets
 * both; an overflow found at the stop is not recorded (its PMI is lost with
 * the stop, as with perf's disable).
 */
static void pmu_all_cpu_set(struct cpu *c, int on)
{
	if (!pmu_present() || c->pmu_all_on == on)
		return;
	pmu_enter(c);
	struct proc *p = pmu_suspend(c);
	pmu_counter_stop(all.hw);
	c->pmu_all_throttled = 0;
	if (all.buffered && !on)
		pmu_sbuf_disarm();
	c->pmu_all_on = (uint8_t)on;
	if (all.buffered && on)
		pmu_sbuf_arm(c, all.hw, all.period, (all.flags & PMU_ALL_CALLCHAIN) != 0);
	if (on)
		pmu_counter_start(all.hw, all.ctl, all.period);
	pmu_resume(c, p);
	pmu_leave(c);
}

void pmu_all_nmi(struct cpu *c, uint64_t rip, uint64_t cs)
{
	uint64_t v;
	if (all.buffered) { /* the VMM recorded the samples: this is the watermark's PMI */
		rings[c->id].pmis++;
		pmu_sbuf_pmi();
		return;
	}
	if (pmu_counter_wrapped(all.hw, &v)) {
		uint32_t timer;
		pmu_all_record(c, rip, (unsigned)(cs & 3), clock_ns_timer(&timer));
		pmu_counter_rearm(all.hw, (all.flags & PMU_SAMPLE_KEEP_OVERSHOOT) && v < all.period ?
						  all.period - v : all.period);
		if (c->pmu_all_throttled) {
			/*
			 * It wrapped again between the re-arm and the stop of the
			 * PMI that used up the budget (on the clock backend that
			 * handler outlasts a short period): a sample, not another
			 * budget; the counter stays stopped until the next tick.
			 */
			pmu_counter_stop(all.hw);
		} else if (pmu_throttle_pmi(c, timer)) { /* re-armed first: stopped, it looks wrapped only if it wrapped before */
			pmu_counter_stop(all.hw);
			c->pmu_all_throttled = 1;
			rings[c->id].throttled++;
		}
	}
}

/* A new tick: a new PMI budget, and a counter throttled in the last one runs again. */
static void pmu_all_unthrottle(struct cpu *c)
{
	if (!pmu_throttle_tick(c) || !c->pmu_all_throttled)
		return;
	pmu_enter(c);
	c->pmu_all_throttled = 0;
	pmu_counter_start(all.hw, all.ctl, all.period);
	pmu_leave(c);
}

/*
 * At each tick while system-wide sampling runs: a counter that wrapped
 * without its PMI being handled would never overflow again (it counts up
 * from 0 for 2^47 events), so take the overflow here: a safety net for a
 * lost PMI (the Intel model drops one that comes while LVTPC is masked;
 * see pmu.c's nmi_body). Costs one RDMSR, but only on a tick with no NMI
 * since the last one: while PMIs keep coming the counter is evidently
 * re-armed, and at the usual periods (a PMI per millisecond, a tick per 4)
 * that skips nearly every check; a lost PMI is still caught within two
 * ticks.
 */
static void pmu_all_watchdog(struct cpu *c, struct trapframe *tf)
{
	uint64_t v;
	/* The VMM re-arms a buffered counter itself: no PMI per overflow to lose. */
	if (all.buffered)
		return;
	if (c->nmis != c->pmu_all_nmis_seen) {
		c->pmu_all_nmis_seen = c->nmis;
		return;
	}
	pmu_enter(c);
	if (pmu_counter_wrapped(all.hw, &v)) {
		/*
		 * The RDMSR exit may itself have found the overflow, and its PMI
		 * arrived (deferred) right after: not late. Taken here either
		 * way; the deferred NMI then finds the counter re-armed.
		 */
		if (!c->pmu_deferred)
			pmu_all_late(c);
		pmu_handle_nmi(c, tf->rip, tf->cs); /* records, re-arms, clears status, unmasks */
	}
	pmu_leave(c);
}

void pmu_all_tick(struct cpu *c, struct trapframe *tf)
{
	/* Busy: the tick interrupted pmu.c's own counter work; the next tick does this. */
	if (!c->pmu_all_on || c->pmu_busy)
		return;
	pmu_all_unthrottle(c);
	pmu_all_watchdog(c, tf);
}

/* ---- applying the configuration on every CPU, the system calls ------- */

void pmu_all_poll(struct cpu *c)
{
	unsigned int g = __atomic_load_n(&all_gen, __ATOMIC_ACQUIRE);
	if (c->pmu_all_gen == g)
		return;
	pmu_all_cpu_set(c, all_want);
	__atomic_store_n(&c->pmu_all_gen, g, __ATOMIC_RELEASE);
}

/* Makes every CPU apply all_want; returns how many did within the bound. */
static int sync_cpus(struct cpu *c)
{
	unsigned int g = all_gen + 1;
	int n = ncpus_online(), done = 0;
	__atomic_store_n(&all_gen, g, __ATOMIC_RELEASE);
	pmu_all_poll(c);
	if (n > 1)
		smp_kick_others();
	for (long round = 0; round < SYNC_ROUNDS; round++) {
		done = 0;
		for (int i = 0; i < n; i++)
			done += __atomic_load_n(&cpu_get(i)->pmu_all_gen, __ATOMIC_ACQUIRE) == g;
		if (done == n)
			break;
		cpu_relax();
	}
	return done;
}

void sys_pmu_all_start(struct cpu *c, struct trapframe *tf)
{
	struct pmu_event ev;
	if (!user_range_ok(c->cur, tf->rdi, sizeof(ev)))
		RET(-GUEST_EFAULT);
	memcpy(&ev, (const void *)tf->rdi, sizeof(ev));
	if (!spin_trylock_bounded(&all_lock, 1))
		RET(-GUEST_EBUSY);
	int r = all_want ? -GUEST_EBUSY : pmu_all_config(&ev, tf->rsi, (unsigned int)tf->rdx);
	if (r == 0) {
		/* Every CPU has stopped (the last stop waited for them): no producer runs. */
		for (int i = 0; i < ncpus_online(); i++) {
			rings[i].head = rings[i].tail = 0;
			rings[i].pmis = rings[i].drops = rings[i].late = rings[i].throttled = 0;
		}
		all_want = 1;
		r = all_cpus = sync_cpus(c);
	}
	spin_unlock(&all_lock);
	RET(r);
}

void sys_pmu_all_stop(struct cpu *c, struct trapframe *tf)
{
	struct pmu_all_stats st = { 0 };
	if (tf->rdi && !user_range_ok(c->cur, tf->rdi, sizeof(st)))
		RET(-GUEST_EFAULT);
	if (!spin_trylock_bounded(&all_lock, 1))
		RET(-GUEST_EBUSY);
	if (!all_want) {
		spin_unlock(&all_lock);
		RET(-GUEST_EINVAL);
	}
	all_want = 0;
	sync_cpus(c);
	for (int i = 0; i < ncpus_online(); i++) {
		st.pmis += rings[i].pmis;
		st.records += rings[i].head;
		st.drops += rings[i].drops;
		st.late += rings[i].late;
		st.throttled += rings[i].throttled;
	}
	if (all.buffered)
		pmu_sbuf_totals(ncpus_online(), &st.records, &st.drops);
	st.buffered = (unsigned long)all.buffered;
	st.cpus = (unsigned long)all_cpus;
	spin_unlock(&all_lock);
	if (tf->rdi)
		memcpy((void *)tf->rdi, &st, sizeof(st));
	RET((long)st.pmis);
}

void sys_pmu_all_read(struct cpu *c, struct trapframe *tf)
{
	uint64_t max = tf->rsi, n = 0;
	if (max > (uint64_t)PMU_ALL_RING * MAX_CPUS)
		max = (uint64_t)PMU_ALL_RING * MAX_CPUS;
	if (!user_range_ok(c->cur, tf->rdi, max * sizeof(struct pmu_record)))
		RET(-GUEST_EFAULT);
	if (!spin_trylock_bounded(&all_lock, 1))
		RET(-GUEST_EBUSY);
	struct pmu_record *out = (struct pmu_record *)tf->rdi;
	for (int i = 0; i < ncpus_online() && n < max; i++) {
		struct all_ring *r = &rings[i];
		uint32_t t = r->tail, h = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		while (t != h && n < max) { /* contiguous runs: memcpy is rep movs */
			uint32_t run = h - t, to_end = PMU_ALL_RING - t % PMU_ALL_RING;
			if (run > to_end)
				run = to_end;
			if (run > max - n)
				run = (uint32_t)(max - n);
			memcpy(out + n, &r->rec[t % PMU_ALL_RING], run * sizeof(*out));
			n += run;
			t += run;
		}
		__atomic_store_n(&r->tail, t, __ATOMIC_RELEASE);
	}
	spin_unlock(&all_lock);
	RET((long)n);
}

void sys_pmu_all_read_buf(struct cpu *c, struct trapframe *tf)
{
	uint64_t room = tf->rsi;
	if (room > (uint64_t)1 << 30)
		room = (uint64_t)1 << 30;
	if (!user_range_ok(c->cur, tf->rdi, room))
		RET(-GUEST_EFAULT);
	if (!spin_trylock_bounded(&all_lock, 1))
		RET(-GUEST_EBUSY);
	uint64_t n = all.buffered ? pmu_sbuf_drain(ncpus_online(), (uint8_t *)tf->rdi, room) : 0;
	spin_unlock(&all_lock);
	RET((long)n);
}
