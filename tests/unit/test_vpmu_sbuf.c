// SPDX-License-Identifier: MIT
/*
 * The vPMU's sample buffer (include/kvmprof/vpmu_sbuf.h, vpmu/vpmu_sbuf.c):
 * CPUID and MSR ranges only when offered, every hostile setting refused
 * with #GP and counted, overflows handed to the VMM with the counter
 * re-armed and no PMI, and the ring's exact counts: records written, lost
 * when full (never overwriting unread ones), one PMI per watermark crossing.
 */
#include "kvmprof/guest_ring.h"
#include "kvmprof/sample_format.h"
#include "kvmprof/vpmu_sbuf.h"
#include "vpmu_fixture.h"

#define RAM (64ULL << 20)
#define REC 72 /* a record size that does not divide the data area: the ring pads at the wrap */

static void setup_sbuf(struct tvcpu *t)
{
	setup_vcpu(t, VPMU_MODEL_INTEL, 0, VPMU_MODE_CPU_SWITCH, NULL);
	t->cfg.sbuf = true;
	t->cfg.ram_size = RAM;
}

/* Programs a valid buffer at base for GP counter 0 (not armed). */
static void program(struct vpmu_vcpu *v, uint64_t base, uint64_t size, uint64_t watermark, uint64_t reload)
{
	wr(v, KP_MSR_SBUF_BASE, base);
	wr(v, KP_MSR_SBUF_SIZE, size);
	wr(v, KP_MSR_SBUF_WATERMARK, watermark);
	wr(v, KP_MSR_SBUF_RELOAD, reload);
}

static void test_cpuid_and_ranges(void **state)
{
	struct tvcpu t;
	struct vpmu_msr_range r[VPMU_MAX_MSR_RANGES];
	struct vpmu_cpuid_leaf l = { KP_CPUID_FEATURES, ~0u, ~0u, ~0u, ~0u };
	unsigned int n;
	uint64_t val;

	(void)state;
	/* Not offered (the kvm backend): no leaf, no MSR. */
	setup_vcpu(&t, VPMU_MODEL_INTEL, 0, VPMU_MODE_CPU_SWITCH, NULL);
	vpmu_cpuid_adjust(&t.cfg, &l);
	assert_int_equal(l.eax | l.ebx | l.ecx | l.edx, 0);
	n = vpmu_msr_ranges(&t.cfg, r);
	for (unsigned int i = 0; i < n; i++)
		assert_false(r[i].base == KP_MSR_SBUF_CTL);
	assert_int_equal(vpmu_msr_read(&t.v, KP_MSR_SBUF_CTL, &val), VPMU_MSR_NOT_PMU);
	assert_int_equal(vpmu_msr_write(&t.v, KP_MSR_SBUF_BASE, 0x10000), VPMU_MSR_NOT_PMU);

	setup_sbuf(&t);
	l = (struct vpmu_cpuid_leaf){ KP_CPUID_LEAF, 0, 0, 0, 0 };
	vpmu_cpuid_adjust(&t.cfg, &l);
	assert_int_equal(l.eax, KP_CPUID_FEATURES);
	assert_memory_equal(&l.ebx, "kvmp", 4);
	assert_memory_equal(&l.ecx, "rof-", 4);
	assert_memory_equal(&l.edx, "vpmu", 4);
	l = (struct vpmu_cpuid_leaf){ KP_CPUID_FEATURES, 0, 0, 0, 0 };
	vpmu_cpuid_adjust(&t.cfg, &l);
	assert_int_equal(l.eax, KP_CPUID_SBUF);
	assert_int_equal(l.ebx, KP_MSR_SBUF_CTL);
	n = vpmu_msr_ranges(&t.cfg, r);
	assert_int_equal(r[n - 1].base, KP_MSR_SBUF_CTL);
	assert_int_equal(r[n - 1].count, KP_SBUF_MSRS);
	assert_true(vpmu_msr_owned(&t.cfg, KP_MSR_SBUF_TIME));
	assert_false(vpmu_msr_owned(&t.cfg, KP_MSR_SBUF_CTL + KP_SBUF_MSRS));
}

static void test_hostile_settings(void **state)
{
	struct tvcpu t;

	(void)state;
	setup_sbuf(&t);
	wr_gp(&t.v, KP_MSR_SBUF_BASE, 0x10010);         /* not page-aligned */
	wr_gp(&t.v, KP_MSR_SBUF_BASE, RAM);             /* outside RAM */
	wr_gp(&t.v, KP_MSR_SBUF_BASE, ~0ULL & ~0xfffULL);
	wr_gp(&t.v, KP_MSR_SBUF_SIZE, 0);
	wr_gp(&t.v, KP_MSR_SBUF_SIZE, 2048);             /* below the minimum */
	wr_gp(&t.v, KP_MSR_SBUF_SIZE, 3 * 4096);         /* not a power of two */
	wr_gp(&t.v, KP_MSR_SBUF_SIZE, 32ULL << 20);      /* above the maximum */
	wr_gp(&t.v, KP_MSR_SBUF_WATERMARK, 0);
	wr_gp(&t.v, KP_MSR_SBUF_WATERMARK, (16ULL << 20) + 1);
	wr_gp(&t.v, KP_MSR_SBUF_RELOAD, 0);
	wr_gp(&t.v, KP_MSR_SBUF_RELOAD, (1ULL << 47) + 1);
	wr_gp(&t.v, KP_MSR_SBUF_CTL, 1ULL << 2);         /* reserved bit */
	wr_gp(&t.v, KP_MSR_SBUF_CTL, KP_SBUF_CTL_EN);    /* nothing programmed */
	assert_int_equal(t.v.stats.sbuf_refused, 13);

	/* Each value fine alone, the set not: the data area runs past the end of RAM. */
	program(&t.v, RAM - 8192, 8192, 4096, 1000);
	wr_gp(&t.v, KP_MSR_SBUF_CTL, KP_SBUF_CTL_EN);
	/* The watermark above the size. */
	program(&t.v, 0x100000, 4096, 8192, 1000);
	wr_gp(&t.v, KP_MSR_SBUF_CTL, KP_SBUF_CTL_EN);
	/* A counter the model does not have. */
	program(&t.v, 0x100000, 4096, 4096, 1000);
	wr_gp(&t.v, KP_MSR_SBUF_CTL, KP_SBUF_CTL_EN | 8ULL << KP_SBUF_CTL_COUNTER_SHIFT);
	assert_int_equal(rd(&t.v, KP_MSR_SBUF_CTL), 0);
	assert_int_equal(t.v.stats.sbuf_refused, 16);

	/* Armed: the placement and period are fixed; CTL and TIME still take writes. */
	wr(&t.v, KP_MSR_SBUF_CTL, KP_SBUF_CTL_EN | KP_SBUF_CTL_CALLCHAIN);
	wr_gp(&t.v, KP_MSR_SBUF_BASE, 0x200000);
	wr_gp(&t.v, KP_MSR_SBUF_SIZE, 8192);
	wr_gp(&t.v, KP_MSR_SBUF_WATERMARK, 8);
	wr_gp(&t.v, KP_MSR_SBUF_RELOAD, 5);
	wr(&t.v, KP_MSR_SBUF_TIME, 12345);
	assert_int_equal(rd(&t.v, KP_MSR_SBUF_BASE), 0x100000);
	assert_int_equal(rd(&t.v, KP_MSR_SBUF_TIME), 12345);
	assert_int_equal(t.v.stats.sbuf_refused, 20);
	wr(&t.v, KP_MSR_SBUF_CTL, 0);
	wr(&t.v, KP_MSR_SBUF_BASE, 0x200000);
}

static void test_overflow_goes_to_buffer(void **state)
{
	struct tvcpu t;

	(void)state;
	setup_sbuf(&t);
	program(&t.v, 0x100000, 4096, 4096, 1000);
	wr(&t.v, KP_MSR_SBUF_CTL, KP_SBUF_CTL_EN | 1ULL << KP_SBUF_CTL_COUNTER_SHIFT);
	wr(&t.v, MSR_IA32_PMC0_FULL + 1, VPMU_COUNTER_MASK + 1 - 1000);
	wr(&t.v, MSR_IA32_PERFEVTSEL0 + 1, 0x3c | EN_ALL | EVTSEL_INT);
	run(&t.v, 999, 0);
	assert_int_equal(t.v.sbuf.due, 0);
	run(&t.v, 5, 0); /* overflows 4 events past: reloaded, the overshoot dropped */
	assert_int_equal(t.v.sbuf.due, 1);
	assert_int_equal(rd(&t.v, MSR_IA32_PMC0_FULL + 1), VPMU_COUNTER_MASK + 1 - 1000);
	assert_int_equal(rd(&t.v, MSR_CORE_PERF_GLOBAL_STATUS), 0);
	run(&t.v, 1000, 0);
	assert_int_equal(t.v.sbuf.due, 2);
	assert_int_equal(t.v.stats.overflows, 2);
	assert_int_equal(t.f.pmis, 0);
	/* Another counter overflows as before: status and PMI. */
	wr(&t.v, MSR_IA32_PMC0_FULL, VPMU_COUNTER_MASK);
	wr(&t.v, MSR_IA32_PERFEVTSEL0, 0x3c | EN_ALL | EVTSEL_INT);
	run(&t.v, 0, 0);
	run(&t.v, 1, 0);
	run(&t.v, 0, 0);
	assert_int_equal(t.f.pmis, 1);
	assert_int_equal(t.v.sbuf.due, 2);
	/* Disarmed: the overflows still due are dropped with it. */
	wr(&t.v, KP_MSR_SBUF_CTL, 0);
	assert_int_equal(t.v.sbuf.due, 0);
}

/* The guest's buffer: control page and data, 8-byte aligned like guest RAM. */
static uint64_t area[(KP_SBUF_PAGE + 4096) / 8];

static void put(struct tvcpu *t, unsigned int n)
{
	uint64_t rec[REC / 8] = { 0 };
	struct kp_rec_header h = { .type = KP_REC_SAMPLE, .size = REC };

	memcpy(rec, &h, sizeof(h));
	for (unsigned int i = 0; i < n; i++) {
		rec[2] = t->v.sbuf.written; /* a payload to recognise it by */
		vpmu_sbuf_put(&t->v, (uint8_t *)area, (const uint8_t *)rec, REC, now);
	}
}

static struct kp_ring_ctl *ctl(void)
{
	return (struct kp_ring_ctl *)area;
}

static void test_ring_counts(void **state)
{
	struct tvcpu t;
	const uint8_t *data = (const uint8_t *)area + KP_SBUF_PAGE;
	uint64_t first;

	(void)state;
	memset(area, 0, sizeof(area));
	setup_sbuf(&t);
	program(&t.v, 0x100000, 4096, 10 * REC, 1000);
	wr(&t.v, KP_MSR_SBUF_CTL, KP_SBUF_CTL_EN);
	/* 4096 bytes hold 56 records of 72 (4032 bytes). The 10th crosses the watermark. */
	put(&t, 9);
	assert_int_equal(t.v.stats.sbuf_pmis, 0);
	assert_false(t.v.pmi_pending);
	put(&t, 1);
	assert_int_equal(t.v.stats.sbuf_pmis, 1);
	assert_true(t.v.pmi_pending);
	t.v.pmi_pending = false;
	put(&t, 50); /* no new crossing: the guest has read nothing */
	assert_int_equal(t.v.stats.sbuf_pmis, 1);
	assert_int_equal(ctl()->written, 56);
	assert_int_equal(ctl()->head, 56 * REC);
	assert_int_equal(ctl()->lost, 4);
	assert_int_equal(t.v.stats.sbuf_records, 56);
	assert_int_equal(t.v.stats.sbuf_lost, 4);
	/* Unread records were not overwritten: the first is still record 0. */
	memcpy(&first, data + 16, 8);
	assert_int_equal(first, 0);

	/* The guest reads all but 5: below the watermark, so the next write... */
	ctl()->tail = 51 * REC;
	put(&t, 4); /* ...pads the end (64 bytes) and wraps to 0: 712 bytes unread, the pad included */
	assert_int_equal(t.v.stats.sbuf_pmis, 1);
	assert_int_equal(ctl()->head, 4096 + 4 * REC);
	assert_int_equal(((const struct kp_rec_header *)(data + 56 * REC))->type, KP_RING_PAD);
	assert_int_equal(((const struct kp_rec_header *)(data + 56 * REC))->size, 4096 - 56 * REC);
	put(&t, 1); /* 784 unread: a second crossing */
	assert_int_equal(t.v.stats.sbuf_pmis, 2);
	/*
	 * Drained by another vCPU's reader before this vCPU entered (its PMI
	 * still pending): the next crossing raises no second PMI, and none is
	 * counted: the guest will see one.
	 */
	assert_true(t.v.pmi_pending);
	ctl()->tail = ctl()->head;
	put(&t, 10);
	assert_int_equal(t.v.stats.sbuf_pmis, 2);
	assert_true(t.v.pmi_pending);

	/* A hostile tail (ahead of head, or too far behind) reads as a full buffer: lost, never a write. */
	ctl()->tail = ctl()->head + 8;
	put(&t, 3);
	ctl()->tail = 0;
	put(&t, 2);
	assert_int_equal(ctl()->lost, 9);
	assert_int_equal(t.v.stats.sbuf_records, 71);
	assert_int_equal(t.v.stats.sbuf_pmis, 2);

	/* Re-arming starts a fresh ring: the guest set its tail to 0. */
	wr(&t.v, KP_MSR_SBUF_CTL, 0);
	wr(&t.v, KP_MSR_SBUF_CTL, KP_SBUF_CTL_EN);
	put(&t, 1);
	assert_int_equal(ctl()->head, REC);
	assert_int_equal(ctl()->written, 1);
	assert_int_equal(ctl()->lost, 0);
}

static void test_guest_time(void **state)
{
	struct tvcpu t;

	(void)state;
	setup_sbuf(&t);
	wr(&t.v, KP_MSR_SBUF_TIME, 5000000);
	t.v.sbuf.guest_time_at = 1000; /* the VMM stamps the write with its own clock */
	assert_int_equal(vpmu_sbuf_guest_time(&t.v, 1000), 5000000);
	assert_int_equal(vpmu_sbuf_guest_time(&t.v, 4000), 5003000);
	assert_int_equal(vpmu_sbuf_guest_time(&t.v, 500), 5000000); /* never backwards of the write */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpuid_and_ranges),
		cmocka_unit_test(test_hostile_settings),
		cmocka_unit_test(test_overflow_goes_to_buffer),
		cmocka_unit_test(test_ring_counts),
		cmocka_unit_test(test_guest_time),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
