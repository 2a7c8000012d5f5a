// SPDX-License-Identifier: MIT
/*
 * The exact backend's vPMU side (vpmu/backend_exact.c) without KVM or the
 * emulator: which guest events it counts exactly on either model and host,
 * how engine counts reach the guest's counters by ring, where the engine
 * must stop for an overflow (the watch), the overflow and PMI landing on
 * the event that crosses 2^48, and the Intel model's CPUID saying which
 * architectural events exist.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "backend_exact.h"

#define EN (1ULL << 22)
#define INT (1ULL << 20)
#define USR (1ULL << 16)
#define OS (1ULL << 17)

static unsigned int pmis;

static bool count_pmi(void *ctx)
{
	(void)ctx;
	pmis++;
	return true;
}

struct setup {
	struct vpmu_config cfg;
	struct vpmu_vcpu v;
	struct vpmu_exact_backend b;
};

static void setup_model(struct setup *s, enum vpmu_model model, enum vpmu_host_vendor host)
{
	char err[VPMU_ERR_MAX];

	memset(s, 0, sizeof(*s));
	assert_int_equal(vpmu_config_init(&s->cfg, model, 0, VPMU_MODE_CPU_SWITCH, host, err), 0);
	s->cfg.exact = true;
	vpmu_exact_backend_init(&s->b, 0);
	vpmu_vcpu_init(&s->v, &s->cfg, 0, &vpmu_exact_ops, &s->b, count_pmi, NULL);
	pmis = 0;
}

/* One run of the guest: the VMM's calls around it, with the engine's counts in between. */
static void run(struct setup *s, enum vpmu_exact_kind kind, unsigned int ring, uint64_t n)
{
	vpmu_vcpu_before_run(&s->v, 1000);
	vpmu_exact_add(&s->v, kind, ring, n);
	vpmu_vcpu_after_run(&s->v, 2000);
}

static uint64_t read_msr(struct setup *s, uint32_t msr)
{
	uint64_t v = 0;

	assert_int_equal(vpmu_msr_read(&s->v, msr, &v), VPMU_MSR_OK);
	return v;
}

/* Instructions, branches and taken branches are exact on both models and any host; cycles come from the clock. */
static void test_exact_kinds(void **state)
{
	static const struct {
		enum vpmu_model model;
		uint64_t ctl;
		enum vpmu_exact_kind kind;
	} cases[] = {
		{ VPMU_MODEL_AMD, 0xc0, VPMU_EXACT_INSNS },      { VPMU_MODEL_AMD, 0xc2, VPMU_EXACT_BRANCHES },
		{ VPMU_MODEL_AMD, 0xc4, VPMU_EXACT_TAKEN },      { VPMU_MODEL_AMD, 0x76, VPMU_EXACT_NONE },
		{ VPMU_MODEL_INTEL, 0xc0, VPMU_EXACT_INSNS },    { VPMU_MODEL_INTEL, 0xc4, VPMU_EXACT_BRANCHES },
		{ VPMU_MODEL_INTEL, 0x20c4, VPMU_EXACT_TAKEN },  { VPMU_MODEL_INTEL, 0xc5, VPMU_EXACT_NONE },
		{ VPMU_MODEL_INTEL, 0xc0 | (1ULL << 23), VPMU_EXACT_NONE }, /* inverted: not what retires */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (int host = VPMU_HOST_AMD; host <= VPMU_HOST_OTHER; host++) {
			struct setup s;
			struct vpmu_event ev;
			int rc;

			setup_model(&s, cases[i].model, (enum vpmu_host_vendor)host);
			rc = vpmu_event_translate(&s.cfg, 0, cases[i].ctl | EN | USR, &ev);
			if (cases[i].kind != VPMU_EXACT_NONE) {
				assert_int_equal(rc, 0);
				assert_int_equal(ev.exact, cases[i].kind);
			} else {
				assert_int_equal(ev.exact, VPMU_EXACT_NONE);
			}
		}
}

/* Engine counts go to the counters of their kind whose USR/OS bits match the ring they retired in. */
static void test_counts_by_ring(void **state)
{
	struct setup s;

	(void)state;
	setup_model(&s, VPMU_MODEL_AMD, VPMU_HOST_AMD);
	assert_int_equal(vpmu_msr_write(&s.v, MSR_K7_EVNTSEL0 + 0, 0xc0 | EN | USR), VPMU_MSR_OK);
	assert_int_equal(vpmu_msr_write(&s.v, MSR_K7_EVNTSEL0 + 1, 0xc0 | EN | OS), VPMU_MSR_OK);
	assert_int_equal(vpmu_msr_write(&s.v, MSR_K7_EVNTSEL0 + 2, 0xc2 | EN | USR | OS), VPMU_MSR_OK);
	assert_int_equal(vpmu_exact_rings(&s.v), 0); /* programmed at the next entry */
	run(&s, VPMU_EXACT_INSNS, VPMU_EXACT_RING_USER, 1000);
	assert_int_equal(vpmu_exact_rings(&s.v), VPMU_EXACT_RING_USER | VPMU_EXACT_RING_KERNEL);
	run(&s, VPMU_EXACT_INSNS, VPMU_EXACT_RING_USER, 2001);
	run(&s, VPMU_EXACT_INSNS, VPMU_EXACT_RING_KERNEL, 17);
	run(&s, VPMU_EXACT_BRANCHES, VPMU_EXACT_RING_USER, 5);
	run(&s, VPMU_EXACT_BRANCHES, VPMU_EXACT_RING_KERNEL, 7);
	/* The entry programs them, so the first run counts too: 1000 + 2001 user instructions. */
	assert_int_equal(read_msr(&s, MSR_K7_PERFCTR0 + 0), 3001);
	assert_int_equal(read_msr(&s, MSR_K7_PERFCTR0 + 1), 17);
	assert_int_equal(read_msr(&s, MSR_K7_PERFCTR0 + 2), 12);
	/* Disabled: no longer counted, and no longer a reason to run in the emulator. */
	assert_int_equal(vpmu_msr_write(&s.v, MSR_K7_EVNTSEL0 + 0, 0xc0 | USR), VPMU_MSR_OK);
	assert_int_equal(vpmu_msr_write(&s.v, MSR_K7_EVNTSEL0 + 1, 0), VPMU_MSR_OK);
	assert_int_equal(vpmu_msr_write(&s.v, MSR_K7_EVNTSEL0 + 2, 0), VPMU_MSR_OK);
	run(&s, VPMU_EXACT_INSNS, VPMU_EXACT_RING_USER, 50);
	assert_int_equal(read_msr(&s, MSR_K7_PERFCTR0 + 0), 3001);
	assert_int_equal(vpmu_exact_rings(&s.v), 0);
}

/* A counter with its interrupt bit is a watch at exactly the events left to 2^48; crossing it raises one PMI. */
static void test_watch_and_overflow(void **state)
{
	struct vpmu_exact_watch w[VPMU_MAX_COUNTERS];
	struct setup s;

	(void)state;
	setup_model(&s, VPMU_MODEL_INTEL, VPMU_HOST_AMD);
	assert_int_equal(vpmu_msr_write(&s.v, MSR_IA32_PMC0_FULL, VPMU_COUNTER_MASK + 1 - 1000), VPMU_MSR_OK);
	assert_int_equal(vpmu_msr_write(&s.v, MSR_IA32_PERFEVTSEL0, 0xc0 | EN | USR | INT), VPMU_MSR_OK);
	assert_int_equal(vpmu_msr_write(&s.v, MSR_IA32_PERFEVTSEL0 + 1, 0xc4 | EN | USR), VPMU_MSR_OK);
	vpmu_vcpu_before_run(&s.v, 1000);
	assert_int_equal(vpmu_exact_watches(&s.v, w), 1); /* the branch counter raises no PMI */
	assert_int_equal(w[0].kind, VPMU_EXACT_INSNS);
	assert_int_equal(w[0].rings, VPMU_EXACT_RING_USER);
	assert_int_equal(w[0].events, 1000);
	vpmu_exact_add(&s.v, VPMU_EXACT_INSNS, VPMU_EXACT_RING_USER, 400);
	/* Counted in this run but not yet synced: the watch is what is left. */
	assert_int_equal(vpmu_exact_watches(&s.v, w), 1);
	assert_int_equal(w[0].events, 600);
	vpmu_exact_add(&s.v, VPMU_EXACT_INSNS, VPMU_EXACT_RING_USER, 600);
	vpmu_vcpu_after_run(&s.v, 2000);
	assert_int_equal(read_msr(&s, MSR_CORE_PERF_GLOBAL_STATUS) & 1, 1);
	assert_int_equal(read_msr(&s, MSR_IA32_PMC0), 0);
	vpmu_vcpu_before_run(&s.v, 3000);
	assert_int_equal(pmis, 1);
}

/* Intel model, exact backend: leaf 0xA EBX marks LLC references, LLC misses and branch mispredicts unavailable. */
static void test_cpuid_events(void **state)
{
	struct setup s;
	struct vpmu_cpuid_leaf leaf = { .function = 0xa };

	(void)state;
	setup_model(&s, VPMU_MODEL_INTEL, VPMU_HOST_AMD);
	vpmu_cpuid_adjust(&s.cfg, &leaf);
	assert_int_equal(leaf.ebx, (1u << 3) | (1u << 4) | (1u << 6));
	assert_int_equal((leaf.eax >> 24) & 0xff, 7);
	s.cfg.exact = false;
	leaf = (struct vpmu_cpuid_leaf){ .function = 0xa };
	vpmu_cpuid_adjust(&s.cfg, &leaf);
	assert_int_equal(leaf.ebx, 0);
}

/* A read the VMM answers inside a run (RDPMC, RDMSR in place) sees the run's events so far, once. */
static void test_sync_mid_run(void **state)
{
	struct setup s;
	uint64_t val = 0;

	(void)state;
	setup_model(&s, VPMU_MODEL_INTEL, VPMU_HOST_OTHER);
	assert_int_equal(vpmu_msr_write(&s.v, MSR_IA32_PERFEVTSEL0, 0xc0 | EN | USR), VPMU_MSR_OK);
	run(&s, VPMU_EXACT_INSNS, VPMU_EXACT_RING_USER, 10);
	vpmu_vcpu_before_run(&s.v, 3000);
	vpmu_exact_add(&s.v, VPMU_EXACT_INSNS, VPMU_EXACT_RING_USER, 7);
	assert_int_equal(vpmu_rdpmc(&s.v, 0, &val), VPMU_MSR_OK);
	assert_int_equal(val, 10); /* the run's 7 have not reached the counter */
	vpmu_vcpu_sync(&s.v, 3500);
	assert_int_equal(vpmu_rdpmc(&s.v, 0, &val), VPMU_MSR_OK);
	assert_int_equal(val, 17);
	vpmu_exact_add(&s.v, VPMU_EXACT_INSNS, VPMU_EXACT_RING_USER, 5);
	vpmu_vcpu_after_run(&s.v, 4000);
	assert_int_equal(read_msr(&s, MSR_IA32_PMC0), 22);
}

/*
 * RDPMC may follow as long as a counter is live: from its first non-zero
 * control until the guest zeroes its value with the control 0. Linux's
 * disabling keeps an AMD control's event bits and clears an Intel fixed
 * counter's field, then reads the counter: both stay live.
 */
static void test_rdpmc_live(void **state)
{
	struct setup s;

	(void)state;
	setup_model(&s, VPMU_MODEL_AMD, VPMU_HOST_AMD);
	assert_false(vpmu_rdpmc_live(&s.v));
	assert_int_equal(vpmu_msr_write(&s.v, MSR_K7_PERFCTR0 + 1, 0xfffffff00000ULL), VPMU_MSR_OK);
	assert_false(vpmu_rdpmc_live(&s.v)); /* a value alone: no event, nothing to read */
	assert_int_equal(vpmu_msr_write(&s.v, MSR_K7_EVNTSEL0 + 1, 0xc0 | EN | USR), VPMU_MSR_OK);
	assert_true(vpmu_rdpmc_live(&s.v));
	assert_int_equal(vpmu_msr_write(&s.v, MSR_K7_EVNTSEL0 + 1, 0xc0 | USR), VPMU_MSR_OK); /* disabled */
	assert_true(vpmu_rdpmc_live(&s.v));
	assert_int_equal(vpmu_msr_write(&s.v, MSR_K7_EVNTSEL0 + 1, 0), VPMU_MSR_OK);
	assert_true(vpmu_rdpmc_live(&s.v)); /* its value may still be read */
	assert_int_equal(vpmu_msr_write(&s.v, MSR_K7_PERFCTR0 + 1, 0), VPMU_MSR_OK);
	assert_false(vpmu_rdpmc_live(&s.v)); /* reset: control and value 0 */

	setup_model(&s, VPMU_MODEL_INTEL, VPMU_HOST_INTEL);
	assert_int_equal(vpmu_msr_write(&s.v, MSR_CORE_PERF_FIXED_CTR_CTRL, 0x2), VPMU_MSR_OK); /* fixed 0, ring 3 */
	assert_true(vpmu_rdpmc_live(&s.v));
	assert_int_equal(vpmu_msr_write(&s.v, MSR_CORE_PERF_FIXED_CTR_CTRL, 0), VPMU_MSR_OK);
	assert_true(vpmu_rdpmc_live(&s.v)); /* x86_pmu_stop: the field cleared, then RDPMC */
	assert_int_equal(vpmu_msr_write(&s.v, MSR_CORE_PERF_FIXED_CTR0, 0), VPMU_MSR_OK);
	assert_false(vpmu_rdpmc_live(&s.v));
}

static void pmu_write(struct setup *s, uint32_t msr, uint64_t val)
{
	assert_int_equal(vpmu_msr_write(&s->v, msr, val), VPMU_MSR_OK);
}

static void rdpmc(struct setup *s, uint32_t ecx)
{
	uint64_t val;

	assert_int_equal(vpmu_rdpmc(&s->v, ecx, &val), VPMU_MSR_OK);
}

/*
 * A live counter is freed (vpmu_rdpmc_drain) by Linux's last read of it:
 * an RDPMC after its control disabled it, outside the NMI handler, with
 * no write to it since. The sequences are Linux 6.1's (arch/x86/events).
 */
static void test_rdpmc_drain(void **state)
{
	const uint64_t ev = 0xc0 | USR | INT;
	struct setup s;

	(void)state;
	setup_model(&s, VPMU_MODEL_AMD, VPMU_HOST_AMD);
	s.v.maybe_in_nmi = false;
	/* x86_pmu_start(RELOAD) of a counter never used: the period, then the enable. */
	pmu_write(&s, MSR_K7_PERFCTR0 + 1, 0xffff00000000ULL);
	assert_false(vpmu_rdpmc_live(&s.v));
	pmu_write(&s, MSR_K7_EVNTSEL0 + 1, ev | EN);
	rdpmc(&s, 1); /* x86_pmu_read of the running counter */
	assert_int_equal(vpmu_rdpmc_drain(&s.v), 0);
	/* Switched out: amd_pmu_disable_all, x86_pmu_stop's disable, its update. */
	pmu_write(&s, MSR_K7_EVNTSEL0 + 1, ev);
	assert_int_equal(vpmu_rdpmc_drain(&s.v), 0); /* not read yet */
	pmu_write(&s, MSR_K7_EVNTSEL0 + 1, ev);
	rdpmc(&s, 1);
	assert_int_equal(vpmu_rdpmc_drain(&s.v), 1);
	assert_false(vpmu_rdpmc_live(&s.v));

	/* Started again on it: the period written, its enable deferred to perf_pmu_enable. */
	pmu_write(&s, MSR_K7_PERFCTR0 + 1, 0xffff00000000ULL);
	assert_true(vpmu_rdpmc_live(&s.v));
	assert_int_equal(vpmu_rdpmc_drain(&s.v), 0);
	pmu_write(&s, MSR_K7_EVNTSEL0 + 1, ev | EN);

	/* perf_adjust_freq_unthr_context: stop and read, start without a reload, enable. */
	pmu_write(&s, MSR_K7_EVNTSEL0 + 1, ev);
	rdpmc(&s, 1);
	pmu_write(&s, MSR_K7_EVNTSEL0 + 1, ev | EN);
	assert_int_equal(vpmu_rdpmc_drain(&s.v), 0);

	/* A PMI: amd_pmu_handle_irq disables all, reads, sets the period, enables all. */
	s.v.maybe_in_nmi = true;
	pmu_write(&s, MSR_K7_EVNTSEL0 + 1, ev);
	rdpmc(&s, 1);
	pmu_write(&s, MSR_K7_PERFCTR0 + 1, 0xffff00000000ULL);
	pmu_write(&s, MSR_K7_EVNTSEL0 + 1, ev | EN);
	s.v.maybe_in_nmi = false;
	assert_int_equal(vpmu_rdpmc_drain(&s.v), 0);

	/* A throttling PMI: the event stopped in the handler stays assigned; read() reads it, twice. */
	s.v.maybe_in_nmi = true;
	pmu_write(&s, MSR_K7_EVNTSEL0 + 1, ev);
	rdpmc(&s, 1);
	pmu_write(&s, MSR_K7_PERFCTR0 + 1, 0xffff00000000ULL);
	pmu_write(&s, MSR_K7_EVNTSEL0 + 1, ev); /* x86_pmu_stop(event, 0) */
	s.v.maybe_in_nmi = false;
	rdpmc(&s, 1);
	assert_int_equal(vpmu_rdpmc_drain(&s.v), 0);
	rdpmc(&s, 1);
	assert_true(vpmu_rdpmc_live(&s.v));
	/* Unthrottled at the next tick (enable), then switched out: freed. */
	pmu_write(&s, MSR_K7_EVNTSEL0 + 1, ev | EN);
	pmu_write(&s, MSR_K7_EVNTSEL0 + 1, ev);
	rdpmc(&s, 1);
	assert_int_equal(vpmu_rdpmc_drain(&s.v), 1);
	assert_false(vpmu_rdpmc_live(&s.v));

	/* Where the VMM cannot tell the NMI state (an MSR exit), a disable is taken as the handler's. */
	pmu_write(&s, MSR_K7_EVNTSEL0 + 2, ev | EN);
	s.v.maybe_in_nmi = true;
	pmu_write(&s, MSR_K7_EVNTSEL0 + 2, ev);
	s.v.maybe_in_nmi = false;
	rdpmc(&s, 2);
	assert_int_equal(vpmu_rdpmc_drain(&s.v), 0);
	assert_true(vpmu_rdpmc_live(&s.v));

	/* Intel: a fixed counter's field cleared then read frees it alone; a global disable frees nothing. */
	setup_model(&s, VPMU_MODEL_INTEL, VPMU_HOST_INTEL);
	s.v.maybe_in_nmi = false;
	pmu_write(&s, MSR_CORE_PERF_FIXED_CTR_CTRL, 0x22); /* fixed 0 and 1, ring 3 */
	pmu_write(&s, MSR_IA32_PERFEVTSEL0, ev | EN);
	pmu_write(&s, MSR_CORE_PERF_GLOBAL_CTRL, 0);   /* intel_pmu_disable_all */
	rdpmc(&s, 0);
	rdpmc(&s, 1u << 30);
	assert_int_equal(vpmu_rdpmc_drain(&s.v), 0);
	pmu_write(&s, MSR_CORE_PERF_FIXED_CTR_CTRL, 0x02); /* intel_pmu_disable_fixed(1) */
	rdpmc(&s, (1u << 30) | 1);
	pmu_write(&s, MSR_CORE_PERF_FIXED_CTR_CTRL, 0x02);
	assert_int_equal(vpmu_rdpmc_drain(&s.v), 1);
	assert_false(s.v.ctr[VPMU_FIXED_BASE + 1].live);
	assert_true(s.v.ctr[VPMU_FIXED_BASE].live);
	assert_true(s.v.ctr[0].live);
	assert_int_equal(s.v.stats.rdpmc_drained, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_kinds),
		cmocka_unit_test(test_counts_by_ring),
		cmocka_unit_test(test_sync_mid_run),
		cmocka_unit_test(test_watch_and_overflow),
		cmocka_unit_test(test_cpuid_events),
		cmocka_unit_test(test_rdpmc_live),
		cmocka_unit_test(test_rdpmc_drain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
