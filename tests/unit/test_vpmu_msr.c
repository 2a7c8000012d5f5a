// SPDX-License-Identifier: MIT
/*
 * The vPMU register model against vpmu.h, with a fake backend whose counts
 * the test sets. The cases follow what the Linux KVM selftests
 * (pmu_counters_test.c, pmu_event_filter_test.c) and kvm-unit-tests x86/pmu.c
 * assert of KVM's own vPMU, and the Intel SDM / AMD APM semantics condensed
 * in docs/references.md.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <cmocka.h>

#include "vpmu.h"
#include "vpmu_fixture.h"

/* --- configuration and CPUID ------------------------------------------------ */

static void test_config(void **state)
{
	struct vpmu_config cfg;
	char err[VPMU_ERR_MAX];

	(void)state;
	assert_int_equal(vpmu_config_init(&cfg, VPMU_MODEL_AMD, 0, VPMU_MODE_CPU_SWITCH, VPMU_HOST_AMD, err), 0);
	assert_int_equal(cfg.n_gp, 6);
	assert_int_equal(cfg.n_fixed, 0);
	assert_int_equal(vpmu_config_init(&cfg, VPMU_MODEL_INTEL, 0, VPMU_MODE_DOMAIN_SWITCH, VPMU_HOST_AMD, err),
			 0);
	assert_int_equal(cfg.n_gp, 8);
	assert_int_equal(cfg.n_fixed, 3);
	assert_int_equal(cfg.mode, VPMU_MODE_DOMAIN_SWITCH);
	assert_null(cfg.filter);
	assert_int_equal(vpmu_config_init(&cfg, VPMU_MODEL_INTEL, 2, VPMU_MODE_CPU_SWITCH, VPMU_HOST_INTEL, err), 0);
	assert_int_equal(cfg.n_gp, 2);
	err[0] = '\0';
	assert_int_equal(vpmu_config_init(&cfg, VPMU_MODEL_AMD, 7, VPMU_MODE_CPU_SWITCH, VPMU_HOST_AMD, err),
			 -EINVAL);
	assert_true(err[0] != '\0');
	assert_int_equal(vpmu_config_init(&cfg, VPMU_MODEL_INTEL, 9, VPMU_MODE_CPU_SWITCH, VPMU_HOST_AMD, err),
			 -EINVAL);
	assert_int_equal(vpmu_config_init(&cfg, VPMU_MODEL_OFF, 0, VPMU_MODE_CPU_SWITCH, VPMU_HOST_AMD, err), 0);
	assert_int_equal(cfg.n_gp, 0);
	assert_int_equal(cfg.n_fixed, 0);
}

static struct vpmu_cpuid_leaf leaf_of(const struct vpmu_config *cfg, uint32_t fn)
{
	/* A host that has everything: every bit set. */
	struct vpmu_cpuid_leaf l = { fn, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff };

	vpmu_cpuid_adjust(cfg, &l);
	assert_int_equal(l.function, fn);
	return l;
}

static void test_cpuid(void **state)
{
	struct vpmu_config cfg;
	struct vpmu_cpuid_leaf l;
	char err[VPMU_ERR_MAX];

	(void)state;
	/* Intel: architectural perfmon v2, 8 GP + 3 fixed counters of 48 bits, PDCM. */
	assert_int_equal(vpmu_config_init(&cfg, VPMU_MODEL_INTEL, 0, VPMU_MODE_CPU_SWITCH, VPMU_HOST_INTEL, err), 0);
	l = leaf_of(&cfg, 0xa);
	assert_int_equal(l.eax & 0xff, 2);
	assert_int_equal((l.eax >> 8) & 0xff, 8);
	assert_int_equal((l.eax >> 16) & 0xff, 48);
	assert_int_equal((l.eax >> 24) & 0xff, 7);
	assert_int_equal(l.ebx & 0x7f, 0); /* no architectural event unavailable */
	assert_int_equal(l.edx & 0x1f, 3);
	assert_int_equal((l.edx >> 5) & 0xff, 48);
	assert_true(leaf_of(&cfg, 0x1).ecx & (1u << 15));
	assert_int_equal(leaf_of(&cfg, 0x1).ecx | (1u << 15), 0xffffffff); /* other bits kept */
	assert_false(leaf_of(&cfg, 0x80000001).ecx & (1u << 23));
	l = leaf_of(&cfg, 0x80000022);
	assert_int_equal(l.eax | l.ebx | l.ecx | l.edx, 0);
	/* An unrelated leaf is untouched. */
	l = leaf_of(&cfg, 0x7);
	assert_int_equal(l.eax & l.ebx & l.ecx & l.edx, 0xffffffff);

	assert_int_equal(vpmu_config_init(&cfg, VPMU_MODEL_INTEL, 2, VPMU_MODE_CPU_SWITCH, VPMU_HOST_INTEL, err), 0);
	assert_int_equal((leaf_of(&cfg, 0xa).eax >> 8) & 0xff, 2);

	/* AMD: PerfCtrCore and PerfMonV2 with the counter count; no leaf 0xA, no PDCM. */
	assert_int_equal(vpmu_config_init(&cfg, VPMU_MODEL_AMD, 0, VPMU_MODE_CPU_SWITCH, VPMU_HOST_AMD, err), 0);
	l = leaf_of(&cfg, 0xa);
	assert_int_equal(l.eax | l.ebx | l.ecx | l.edx, 0);
	assert_true(leaf_of(&cfg, 0x80000001).ecx & (1u << 23));
	l = leaf_of(&cfg, 0x80000022);
	assert_true(l.eax & 1);
	assert_int_equal(l.ebx & 0xf, 6);
	assert_false(leaf_of(&cfg, 0x1).ecx & (1u << 15));
	assert_int_equal(vpmu_config_init(&cfg, VPMU_MODEL_AMD, 3, VPMU_MODE_CPU_SWITCH, VPMU_HOST_AMD, err), 0);
	assert_int_equal(leaf_of(&cfg, 0x80000022).ebx & 0xf, 3);

	/* Off: every PMU leaf cleared, as Firecracker and libkrun do. */
	assert_int_equal(vpmu_config_init(&cfg, VPMU_MODEL_OFF, 0, VPMU_MODE_CPU_SWITCH, VPMU_HOST_AMD, err), 0);
	l = leaf_of(&cfg, 0xa);
	assert_int_equal(l.eax | l.ebx | l.ecx | l.edx, 0);
	assert_false(leaf_of(&cfg, 0x80000001).ecx & (1u << 23));
	l = leaf_of(&cfg, 0x80000022);
	assert_int_equal(l.eax | l.ebx | l.ecx | l.edx, 0);
	assert_false(leaf_of(&cfg, 0x1).ecx & (1u << 15));
	assert_int_equal(leaf_of(&cfg, 0x1).ecx | (1u << 15), 0xffffffff);
}

static void test_off_owns_nothing(void **state)
{
	struct tvcpu *t = calloc(1, sizeof *t);
	struct vpmu_msr_range r[VPMU_MAX_MSR_RANGES];
	uint64_t val;

	(void)state;
	setup_vcpu(t, VPMU_MODEL_OFF, 0, VPMU_MODE_CPU_SWITCH, NULL);
	assert_int_equal(vpmu_msr_ranges(&t->cfg, r), 0);
	assert_int_equal(vpmu_msr_read(&t->v, MSR_K7_PERFCTR0, &val), VPMU_MSR_NOT_PMU);
	assert_int_equal(vpmu_msr_write(&t->v, MSR_IA32_PMC0, 1), VPMU_MSR_NOT_PMU);
	run(&t->v, 100, 0);
	assert_int_equal(t->f.programs + t->f.reads, 0);
	free(t);
}

/* --- Intel --------------------------------------------------------------------- */

static void test_intel_reset_and_writes(void **state)
{
	struct tvcpu *t = calloc(1, sizeof *t);

	(void)state;
	setup_vcpu(t, VPMU_MODEL_INTEL, 0, VPMU_MODE_CPU_SWITCH, NULL);
	/* GLOBAL_CTRL resets to one bit per GP counter. */
	assert_int_equal(rd(&t->v, MSR_CORE_PERF_GLOBAL_CTRL), 0xff);
	assert_int_equal(rd(&t->v, MSR_CORE_PERF_GLOBAL_STATUS), 0);
	assert_int_equal(rd(&t->v, MSR_CORE_PERF_FIXED_CTR_CTRL), 0);
	assert_true(rd(&t->v, MSR_IA32_PERF_CAPABILITIES) & PERF_CAP_FW_WRITES);
	/* Every existing counter accepts 0xdead and reads it back, at both addresses. */
	for (unsigned int i = 0; i < 8; i++) {
		assert_int_equal(rd(&t->v, MSR_IA32_PMC0 + i), 0);
		wr(&t->v, MSR_IA32_PMC0 + i, 0xdead);
		assert_int_equal(rd(&t->v, MSR_IA32_PMC0 + i), 0xdead);
		assert_int_equal(rd(&t->v, MSR_IA32_PMC0_FULL + i), 0xdead);
		wr(&t->v, MSR_IA32_PERFEVTSEL0 + i, 0x4300c0 | (uint64_t)i << 24);
		assert_int_equal(rd(&t->v, MSR_IA32_PERFEVTSEL0 + i), 0x4300c0 | (uint64_t)i << 24);
	}
	for (unsigned int i = 0; i < 3; i++) {
		wr(&t->v, MSR_CORE_PERF_FIXED_CTR0 + i, 0xdead);
		assert_int_equal(rd(&t->v, MSR_CORE_PERF_FIXED_CTR0 + i), 0xdead);
	}
	wr(&t->v, MSR_CORE_PERF_FIXED_CTR_CTRL, 0xbbb);
	assert_int_equal(rd(&t->v, MSR_CORE_PERF_FIXED_CTR_CTRL), 0xbbb);
	wr(&t->v, MSR_CORE_PERF_GLOBAL_CTRL, 0x7000000ffULL);
	assert_int_equal(rd(&t->v, MSR_CORE_PERF_GLOBAL_CTRL), 0x7000000ffULL);
	assert_int_equal(vpmu_msr_read(&t->v, 0x10 /* TSC */, &(uint64_t){ 0 }), VPMU_MSR_NOT_PMU);
	free(t);
}

static void test_intel_gp_faults(void **state)
{
	struct tvcpu *t = calloc(1, sizeof *t);

	(void)state;
	setup_vcpu(t, VPMU_MODEL_INTEL, 0, VPMU_MODE_CPU_SWITCH, NULL);
	/* Reserved event-select bits: 63:32 and AnyThread (21, v3+). */
	wr_gp(&t->v, MSR_IA32_PERFEVTSEL0, 1ULL << 32 | 0x4300c0);
	wr_gp(&t->v, MSR_IA32_PERFEVTSEL0, 1ULL << 21 | 0x4300c0);
	assert_int_equal(rd(&t->v, MSR_IA32_PERFEVTSEL0), 0);
	/* GLOBAL_CTRL: bits of counters that do not exist. */
	wr_gp(&t->v, MSR_CORE_PERF_GLOBAL_CTRL, 1ULL << 8);
	wr_gp(&t->v, MSR_CORE_PERF_GLOBAL_CTRL, 1ULL << 35);
	assert_int_equal(rd(&t->v, MSR_CORE_PERF_GLOBAL_CTRL), 0xff);
	/* FIXED_CTR_CTRL: AnyThread (v3+) and a fourth counter's field. */
	wr_gp(&t->v, MSR_CORE_PERF_FIXED_CTR_CTRL, 0x4);
	wr_gp(&t->v, MSR_CORE_PERF_FIXED_CTR_CTRL, 0x3000);
	/* Read-only registers. */
	wr_gp(&t->v, MSR_CORE_PERF_GLOBAL_STATUS, 1);
	wr_gp(&t->v, MSR_IA32_PERF_CAPABILITIES, 0);
	/* OVF_CTRL: bits of counters that do not exist. */
	wr_gp(&t->v, MSR_CORE_PERF_GLOBAL_OVF_CTRL, 1ULL << 8);
	/* Full-width writes wider than the 48-bit counters. */
	wr_gp(&t->v, MSR_IA32_PMC0_FULL, 1ULL << 48);
	wr(&t->v, MSR_IA32_PMC0_FULL, VPMU_COUNTER_MASK);
	assert_int_equal(rd(&t->v, MSR_IA32_PMC0), VPMU_COUNTER_MASK);
	/* AMD registers on an Intel CPU. */
	rd_gp(&t->v, MSR_K7_EVNTSEL0);
	wr_gp(&t->v, MSR_K7_PERFCTR0, 1);
	wr_gp(&t->v, MSR_F15H_PERF_CTL0, 0);
	rd_gp(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_STATUS);
	assert_true(t->v.stats.msr_gp > 0);
	free(t);
}

static void test_intel_fewer_counters(void **state)
{
	struct tvcpu *t = calloc(1, sizeof *t);

	(void)state;
	setup_vcpu(t, VPMU_MODEL_INTEL, 2, VPMU_MODE_CPU_SWITCH, NULL);
	assert_int_equal(rd(&t->v, MSR_CORE_PERF_GLOBAL_CTRL), 0x3);
	wr(&t->v, MSR_IA32_PMC0 + 1, 0xdead);
	assert_int_equal(rd(&t->v, MSR_IA32_PMC0 + 1), 0xdead);
	/* Counters that do not exist #GP. */
	rd_gp(&t->v, MSR_IA32_PMC0 + 2);
	wr_gp(&t->v, MSR_IA32_PMC0 + 2, 0xdead);
	rd_gp(&t->v, MSR_IA32_PERFEVTSEL0 + 2);
	wr_gp(&t->v, MSR_IA32_PERFEVTSEL0 + 7, 0);
	rd_gp(&t->v, MSR_IA32_PMC0_FULL + 2);
	wr_gp(&t->v, MSR_IA32_PMC0_FULL + 2, 1);
	wr_gp(&t->v, MSR_CORE_PERF_GLOBAL_CTRL, 0x4);
	free(t);
}

static void test_intel_sign_extension(void **state)
{
	struct tvcpu *t = calloc(1, sizeof *t);

	(void)state;
	setup_vcpu(t, VPMU_MODEL_INTEL, 0, VPMU_MODE_CPU_SWITCH, NULL);
	/* Legacy IA32_PMCx writes sign-extend from bit 31, to the 48-bit width. */
	wr(&t->v, MSR_IA32_PMC0, 0xffff0000);
	assert_int_equal(rd(&t->v, MSR_IA32_PMC0), 0xffffffff0000ULL);
	wr(&t->v, MSR_IA32_PMC0, 0x7fffffff);
	assert_int_equal(rd(&t->v, MSR_IA32_PMC0), 0x7fffffff);
	/* Only the low 32 bits of a legacy write count. */
	wr(&t->v, MSR_IA32_PMC0, 0x1234500000001ULL);
	assert_int_equal(rd(&t->v, MSR_IA32_PMC0), 1);
	/* Full-width writes do not sign-extend (FW_WRITES is advertised). */
	assert_true(rd(&t->v, MSR_IA32_PERF_CAPABILITIES) & PERF_CAP_FW_WRITES);
	wr(&t->v, MSR_IA32_PMC0_FULL, 0xffff0000);
	assert_int_equal(rd(&t->v, MSR_IA32_PMC0), 0xffff0000);
	wr(&t->v, MSR_IA32_PMC0_FULL, 0x800000000000ULL);
	assert_int_equal(rd(&t->v, MSR_IA32_PMC0_FULL), 0x800000000000ULL);
	free(t);
}

/* --- AMD ------------------------------------------------------------------------ */

static void test_amd_registers(void **state)
{
	struct tvcpu *t = calloc(1, sizeof *t);

	(void)state;
	setup_vcpu(t, VPMU_MODEL_AMD, 0, VPMU_MODE_CPU_SWITCH, NULL);
	assert_int_equal(rd(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_CTL), 0x3f);
	for (unsigned int i = 0; i < 6; i++) {
		wr(&t->v, AMD_CTR(i), 0xdead + i);
		assert_int_equal(rd(&t->v, AMD_CTR(i)), 0xdead + i);
	}
	/* The legacy registers alias PerfCtrCore counters 0-3, both ways. */
	for (unsigned int i = 0; i < 4; i++) {
		assert_int_equal(rd(&t->v, MSR_K7_PERFCTR0 + i), 0xdead + i);
		wr(&t->v, MSR_K7_PERFCTR0 + i, 0xbeef + i);
		assert_int_equal(rd(&t->v, AMD_CTR(i)), 0xbeef + i);
		wr(&t->v, AMD_CTL(i), 0x4300c2 + i);
		assert_int_equal(rd(&t->v, MSR_K7_EVNTSEL0 + i), 0x4300c2 + i);
		wr(&t->v, MSR_K7_EVNTSEL0 + i, 0x430076);
		assert_int_equal(rd(&t->v, AMD_CTL(i)), 0x430076);
	}
	/* Reserved bits are ignored, not faulted: bits 19, 21, 39:36 and 63:42 read back as 0. */
	wr(&t->v, AMD_CTL(4), 0xfffffc0000000000ULL | 0xf000000000ULL | 1ULL << 21 | 1ULL << 19 | 0x1004300c0ULL);
	assert_int_equal(rd(&t->v, AMD_CTL(4)), 0x1004300c0ULL);
	wr(&t->v, AMD_CTR(4), 0xffff123456789abcULL); /* bits above 47 are dropped */
	assert_int_equal(rd(&t->v, AMD_CTR(4)), 0x123456789abcULL);
	wr(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_CTL, 0xffffffffffffffffULL);
	assert_int_equal(rd(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_CTL), 0x3f);
	/* Read-only GLOBAL_STATUS: the write is ignored. */
	wr(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_STATUS, 0x3f);
	assert_int_equal(rd(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_STATUS), 0);
	/* Intel registers on an AMD CPU. */
	rd_gp(&t->v, MSR_IA32_PERFEVTSEL0);
	wr_gp(&t->v, MSR_CORE_PERF_GLOBAL_CTRL, 1);
	rd_gp(&t->v, MSR_IA32_PMC0);
	assert_int_equal(t->v.stats.msr_gp, 3);
	free(t);
}

static void test_amd_perfmonv2_status(void **state)
{
	struct tvcpu *t = calloc(1, sizeof *t);

	(void)state;
	setup_vcpu(t, VPMU_MODEL_AMD, 0, VPMU_MODE_CPU_SWITCH, NULL);
	wr(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_STATUS_SET, 0x25);
	assert_int_equal(rd(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_STATUS), 0x25);
	wr(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_STATUS_CLR, 0x21);
	assert_int_equal(rd(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_STATUS), 0x04);
	/* Bits of counters that do not exist are ignored. */
	wr(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_STATUS_SET, 1ULL << 40 | 1ULL << 6);
	assert_int_equal(rd(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_STATUS), 0x04);
	assert_int_equal(rd(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_STATUS_SET), 0);
	assert_int_equal(rd(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_STATUS_CLR), 0);
	wr(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_STATUS_CLR, ~0ULL);
	assert_int_equal(rd(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_STATUS), 0);
	free(t);
}

static void test_amd_fewer_counters(void **state)
{
	struct tvcpu *t = calloc(1, sizeof *t);

	(void)state;
	setup_vcpu(t, VPMU_MODEL_AMD, 2, VPMU_MODE_CPU_SWITCH, NULL);
	assert_int_equal(rd(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_CTL), 0x3);
	/* Counters beyond the offered ones: writes ignored, reads 0, never #GP. */
	wr(&t->v, MSR_K7_PERFCTR0 + 2, 0xdead);
	assert_int_equal(rd(&t->v, MSR_K7_PERFCTR0 + 2), 0);
	wr(&t->v, AMD_CTL(5), EN_ALL | 0xc0);
	assert_int_equal(rd(&t->v, AMD_CTL(5)), 0);
	wr(&t->v, AMD_CTR(4), 0xdead);
	assert_int_equal(rd(&t->v, AMD_CTR(4)), 0);
	run(&t->v, 10, 0);
	assert_int_equal(t->f.programs, 0);
	wr(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_CTL, 0x3f);
	assert_int_equal(rd(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_CTL), 0x3);
	assert_int_equal(t->v.stats.msr_gp, 0);
	free(t);
}

/* --- RDPMC ------------------------------------------------------------------------ */

static uint64_t rdpmc_ok(struct vpmu_vcpu *v, uint32_t ecx)
{
	uint64_t val = 0;

	assert_int_equal(vpmu_rdpmc(v, ecx, &val), VPMU_MSR_OK);
	return val;
}

static void rdpmc_gp(struct vpmu_vcpu *v, uint32_t ecx)
{
	uint64_t val = 0x5a5a;

	assert_int_equal(vpmu_rdpmc(v, ecx, &val), VPMU_MSR_GP);
	assert_int_equal(val, 0x5a5a); /* nothing written on #GP */
}

/* Intel: ECX[31:16] the type (0 general-purpose, 0x4000 fixed), ECX[15:0] the index; the rest #GP. */
static void test_rdpmc_intel(void **state)
{
	struct tvcpu *t = calloc(1, sizeof *t);

	(void)state;
	setup_vcpu(t, VPMU_MODEL_INTEL, 4, VPMU_MODE_CPU_SWITCH, NULL);
	for (unsigned int i = 0; i < 4; i++)
		wr(&t->v, MSR_IA32_PMC0_FULL + i, 0x100000000ULL * (i + 1) + i);
	for (unsigned int i = 0; i < 3; i++)
		wr(&t->v, MSR_CORE_PERF_FIXED_CTR0 + i, 0xf00 + i);
	for (unsigned int i = 0; i < 4; i++)
		assert_int_equal(rdpmc_ok(&t->v, i), 0x100000000ULL * (i + 1) + i); /* the whole 48 bits */
	for (unsigned int i = 0; i < 3; i++)
		assert_int_equal(rdpmc_ok(&t->v, 1u << 30 | i), 0xf00 + i);
	rdpmc_gp(&t->v, 4);              /* past the four offered */
	rdpmc_gp(&t->v, 1u << 30 | 3);   /* past the three fixed */
	rdpmc_gp(&t->v, 1u << 31);       /* the old "fast read" bit: no such type */
	rdpmc_gp(&t->v, 0x2000u << 16);  /* perf metrics: not in this model */
	rdpmc_gp(&t->v, 0x10000);        /* type 1 */
	assert_int_equal(t->v.stats.rdpmcs, 12);
	assert_int_equal(t->v.stats.rdpmc_gp, 5);
	free(t);
}

/* AMD: ECX is the counter's number among those offered; nothing else exists. */
static void test_rdpmc_amd(void **state)
{
	struct tvcpu *t = calloc(1, sizeof *t);

	(void)state;
	setup_vcpu(t, VPMU_MODEL_AMD, 0, VPMU_MODE_CPU_SWITCH, NULL);
	for (unsigned int i = 0; i < 6; i++) {
		wr(&t->v, AMD_CTR(i), 0xabc0000000ULL + i);
		assert_int_equal(rdpmc_ok(&t->v, i), 0xabc0000000ULL + i);
	}
	rdpmc_gp(&t->v, 6);
	rdpmc_gp(&t->v, 1u << 30);
	rdpmc_gp(&t->v, 0xffffffffu);
	free(t);
	t = calloc(1, sizeof *t);
	setup_vcpu(t, VPMU_MODEL_AMD, 2, VPMU_MODE_CPU_SWITCH, NULL);
	assert_int_equal(rdpmc_ok(&t->v, 1), 0);
	rdpmc_gp(&t->v, 2); /* a counter the model does not offer, unlike RDMSR's zero */
	free(t);
	t = calloc(1, sizeof *t);
	setup_vcpu(t, VPMU_MODEL_OFF, 0, VPMU_MODE_CPU_SWITCH, NULL);
	rdpmc_gp(&t->v, 0);
	free(t);
}

/* --- counting --------------------------------------------------------------------- */

static void test_counting_amd(void **state)
{
	struct tvcpu *t = calloc(1, sizeof *t);

	(void)state;
	setup_vcpu(t, VPMU_MODEL_AMD, 0, VPMU_MODE_CPU_SWITCH, NULL);
	wr(&t->v, AMD_CTL(0), EN_ALL | 0xc0);                              /* instructions */
	wr(&t->v, AMD_CTL(1), EVTSEL_EN | EVTSEL_USR | 0x1000000c2ULL);    /* select 0x1c2, user only */
	assert_false(t->f.programmed[0]); /* reprogramming waits for the next entry */
	run(&t->v, 45, 0);
	assert_true(t->f.programmed[0]);
	assert_int_equal(t->f.ev[0].type, PERF_TYPE_RAW);
	assert_int_equal(t->f.ev[0].config & 0xffff, 0xc0);
	assert_true(t->f.ev[0].count_user);
	assert_true(t->f.ev[0].count_kernel);
	assert_true(t->f.programmed[1]);
	assert_int_equal(t->f.ev[1].config & (EVTSEL_EVENT | AMD_EVTSEL_EVENT_HI), 0x1000000c2ULL);
	assert_true(t->f.ev[1].count_user);
	assert_false(t->f.ev[1].count_kernel);
	assert_int_equal(rd(&t->v, AMD_CTR(0)), 45);
	assert_int_equal(rd(&t->v, MSR_K7_PERFCTR0), 45);
	assert_int_equal(rd(&t->v, AMD_CTR(1)), 45);
	run(&t->v, 10, 0);
	assert_int_equal(rd(&t->v, AMD_CTR(0)), 55);
	/* A counter never enabled never moved. */
	assert_int_equal(rd(&t->v, AMD_CTR(2)), 0);
	assert_false(t->f.programmed[2]);
	free(t);
}

static void test_disabled_counter(void **state)
{
	struct tvcpu *t = calloc(1, sizeof *t);

	(void)state;
	/* Intel: selected and USR/OS set, but EN clear. */
	setup_vcpu(t, VPMU_MODEL_INTEL, 0, VPMU_MODE_CPU_SWITCH, NULL);
	wr(&t->v, MSR_IA32_PERFEVTSEL0, EVTSEL_USR | EVTSEL_OS | 0xc0);
	wr(&t->v, MSR_IA32_PMC0, 0xdead);
	run(&t->v, 1000, 10);
	assert_false(vpmu_counter_enabled(&t->v, 0));
	assert_int_equal(rd(&t->v, MSR_IA32_PMC0), 0xdead);
	/* Enabled, then its GLOBAL_CTRL bit cleared: it stops. */
	wr(&t->v, MSR_IA32_PERFEVTSEL0, EN_ALL | 0xc0);
	run(&t->v, 5, 0);
	assert_true(vpmu_counter_enabled(&t->v, 0));
	assert_int_equal(rd(&t->v, MSR_IA32_PMC0), 0xdead + 5);
	wr(&t->v, MSR_CORE_PERF_GLOBAL_CTRL, 0xfe);
	run(&t->v, 1000, 10);
	assert_false(vpmu_counter_enabled(&t->v, 0));
	run(&t->v, 1000, 10);
	assert_int_equal(rd(&t->v, MSR_IA32_PMC0), 0xdead + 5);
	/* Fixed counters need their GLOBAL_CTRL bit, which is clear at reset. */
	wr(&t->v, MSR_CORE_PERF_FIXED_CTR_CTRL, 0x3);
	run(&t->v, 1000, 0);
	assert_false(vpmu_counter_enabled(&t->v, VPMU_FIXED_BASE));
	assert_int_equal(rd(&t->v, MSR_CORE_PERF_FIXED_CTR0), 0);
	wr(&t->v, MSR_CORE_PERF_GLOBAL_CTRL, 1ULL << 32);
	run(&t->v, 45, 0);
	assert_int_equal(rd(&t->v, MSR_CORE_PERF_FIXED_CTR0), 45);
	assert_int_equal(t->f.ev[VPMU_FIXED_BASE].type, PERF_TYPE_HARDWARE);
	assert_int_equal(t->f.ev[VPMU_FIXED_BASE].config, PERF_COUNT_HW_INSTRUCTIONS);
	free(t);

	/* AMD: EN set, but the PerfMonV2 GLOBAL_CTL bit clear. */
	t = calloc(1, sizeof *t);
	setup_vcpu(t, VPMU_MODEL_AMD, 0, VPMU_MODE_DOMAIN_SWITCH, NULL);
	wr(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_CTL, 0x3e);
	wr(&t->v, AMD_CTL(0), EN_ALL | 0xc0);
	run(&t->v, 1000, 10);
	assert_int_equal(rd(&t->v, AMD_CTR(0)), 0);
	assert_false(t->f.programmed[0]);
	free(t);
}

/* --- overflow and PMIs ----------------------------------------------------------- */

static void overflow_case(enum vpmu_model model, bool interrupt)
{
	struct tvcpu *t = calloc(1, sizeof *t);
	bool intel = model == VPMU_MODEL_INTEL;
	uint32_t ctl = intel ? MSR_IA32_PERFEVTSEL0 + 1 : AMD_CTL(1);
	uint32_t ctr = intel ? MSR_IA32_PMC0_FULL + 1 : AMD_CTR(1);
	uint32_t status = intel ? MSR_CORE_PERF_GLOBAL_STATUS : MSR_AMD64_PERF_CNTR_GLOBAL_STATUS;

	setup_vcpu(t, model, 0, VPMU_MODE_CPU_SWITCH, NULL);
	wr(&t->v, ctr, (1ULL << 48) - 10);
	wr(&t->v, ctl, EN_ALL | (interrupt ? EVTSEL_INT : 0) | 0xc0);
	run(&t->v, 9, 0);
	assert_int_equal(rd(&t->v, ctr), (1ULL << 48) - 1);
	assert_int_equal(rd(&t->v, status), 0);
	run(&t->v, 6, 0); /* 15 in all: 5 past the overflow */
	assert_int_equal(rd(&t->v, ctr), 5);
	assert_int_equal(rd(&t->v, status), 0x2);
	assert_int_equal(t->f.pmis, 0); /* delivered at the next entry, not before */
	vpmu_vcpu_before_run(&t->v, now);
	assert_int_equal(t->f.pmis, interrupt ? 1 : 0);
	assert_int_equal(t->v.stats.overflows, 1);
	assert_int_equal(t->v.stats.pmis_injected, interrupt ? 1 : 0);
	vpmu_vcpu_after_run(&t->v, now += 1000);
	/* One overflow, one PMI; the status bit stays until the guest clears it. */
	run(&t->v, 100, 0);
	assert_int_equal(t->f.pmis, interrupt ? 1 : 0);
	assert_int_equal(rd(&t->v, status), 0x2);
	if (intel) {
		wr(&t->v, MSR_CORE_PERF_GLOBAL_OVF_CTRL, 0x2);
		assert_int_equal(rd(&t->v, MSR_CORE_PERF_GLOBAL_OVF_CTRL), 0);
	} else {
		wr(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_STATUS_CLR, 0x2);
	}
	assert_int_equal(rd(&t->v, status), 0);
	free(t);
}

static void test_overflow_pmi_intel(void **state)
{
	(void)state;
	overflow_case(VPMU_MODEL_INTEL, true);
	overflow_case(VPMU_MODEL_INTEL, false);
}

static void test_overflow_pmi_amd(void **state)
{
	(void)state;
	overflow_case(VPMU_MODEL_AMD, true);
	overflow_case(VPMU_MODEL_AMD, false);
}

/* Linux's way: a legacy write of -period, sign-extended; and a fixed counter with its PMI bit. */
static void test_overflow_legacy_and_fixed(void **state)
{
	struct tvcpu *t = calloc(1, sizeof *t);

	(void)state;
	setup_vcpu(t, VPMU_MODEL_INTEL, 0, VPMU_MODE_CPU_SWITCH, NULL);
	wr(&t->v, MSR_IA32_PMC0, (uint32_t)-100);
	assert_int_equal(rd(&t->v, MSR_IA32_PMC0), (1ULL << 48) - 100);
	wr(&t->v, MSR_IA32_PERFEVTSEL0, EN_ALL | EVTSEL_INT | 0xc0);
	wr(&t->v, MSR_CORE_PERF_FIXED_CTR0 + 1, (1ULL << 48) - 50);
	wr(&t->v, MSR_CORE_PERF_FIXED_CTR_CTRL, 0xb0); /* fixed 1: OS, USR, PMI */
	wr(&t->v, MSR_CORE_PERF_GLOBAL_CTRL, 0x2000000ffULL);
	run(&t->v, 60, 0);
	assert_int_equal(rd(&t->v, MSR_CORE_PERF_GLOBAL_STATUS), 1ULL << 33);
	run(&t->v, 40, 0);
	assert_int_equal(rd(&t->v, MSR_CORE_PERF_GLOBAL_STATUS), 1ULL << 33 | 1);
	assert_int_equal(rd(&t->v, MSR_IA32_PMC0), 0);
	assert_int_equal(rd(&t->v, MSR_CORE_PERF_FIXED_CTR0 + 1), 50);
	assert_int_equal(t->f.pmis, 1); /* the fixed counter's, at the second entry */
	vpmu_vcpu_before_run(&t->v, now);
	assert_int_equal(t->f.pmis, 2);
	/* A masked LVTPC: counted as masked, not injected. */
	t->f.lvtpc_masked = true;
	vpmu_vcpu_after_run(&t->v, now += 1000);
	wr(&t->v, MSR_IA32_PMC0, (uint32_t)-1);
	run(&t->v, 2, 0);
	vpmu_vcpu_before_run(&t->v, now);
	assert_int_equal(t->f.pmis, 3);
	assert_int_equal(t->v.stats.pmis_injected, 2);
	assert_int_equal(t->v.stats.pmis_masked, 1);
	free(t);
}

/* --- filter --------------------------------------------------------------------- */

static void test_filter_events(void **state)
{
	static struct vpmu_filter deny = { .action = VPMU_FILTER_DENY, .nevents = 1 };
	struct tvcpu *t = calloc(1, sizeof *t);

	(void)state;
	deny.events[0].select = 0xc0;
	setup_vcpu(t, VPMU_MODEL_AMD, 0, VPMU_MODE_CPU_SWITCH, &deny);
	wr(&t->v, AMD_CTL(0), EN_ALL | 0xc0);         /* denied */
	wr(&t->v, AMD_CTL(1), EN_ALL | 0xc2);         /* not listed: allowed */
	wr(&t->v, AMD_CTL(2), EN_ALL | 0x1c0);        /* select 0x1c0 is another event */
	wr(&t->v, AMD_CTL(3), EN_ALL | 0x01c0);       /* another unit mask */
	run(&t->v, 45, 0);
	assert_false(t->f.programmed[0]);
	assert_int_equal(rd(&t->v, AMD_CTR(0)), 0);
	assert_true(t->f.programmed[1]);
	assert_int_equal(rd(&t->v, AMD_CTR(1)), 45);
	assert_true(t->f.programmed[2]);
	assert_true(t->f.programmed[3]);
	assert_true(t->v.stats.filtered_events >= 1);
	/* No error reaches the guest: the event select reads back as written. */
	assert_int_equal(rd(&t->v, AMD_CTL(0)), EN_ALL | 0xc0);
	free(t);

	static struct vpmu_filter allow = { .action = VPMU_FILTER_ALLOW, .nevents = 1 };
	allow.events[0].select = 0xc0;
	t = calloc(1, sizeof *t);
	setup_vcpu(t, VPMU_MODEL_INTEL, 0, VPMU_MODE_CPU_SWITCH, &allow);
	wr(&t->v, MSR_IA32_PERFEVTSEL0, EN_ALL | 0xc0);
	wr(&t->v, MSR_IA32_PERFEVTSEL0 + 1, EN_ALL | 0x3c);
	run(&t->v, 45, 0);
	assert_int_equal(rd(&t->v, MSR_IA32_PMC0), 45);
	assert_int_equal(rd(&t->v, MSR_IA32_PMC0 + 1), 0);
	assert_false(t->f.programmed[1]);
	free(t);
}

static void test_filter_fixed(void **state)
{
	/* The bitmap alone decides: instructions (0xc0) listed, yet fixed 0 stays off. */
	static struct vpmu_filter allow = { .action = VPMU_FILTER_ALLOW, .nevents = 1, .fixed_bitmap = 0x2 };
	static struct vpmu_filter deny = { .action = VPMU_FILTER_DENY, .nevents = 0, .fixed_bitmap = 0x2 };
	struct tvcpu *t = calloc(1, sizeof *t);

	(void)state;
	allow.events[0].select = 0xc0;
	setup_vcpu(t, VPMU_MODEL_INTEL, 0, VPMU_MODE_CPU_SWITCH, &allow);
	wr(&t->v, MSR_CORE_PERF_FIXED_CTR_CTRL, 0x333);
	wr(&t->v, MSR_CORE_PERF_GLOBAL_CTRL, 0x700000000ULL);
	run(&t->v, 45, 0);
	assert_false(t->f.programmed[VPMU_FIXED_BASE]);
	assert_true(t->f.programmed[VPMU_FIXED_BASE + 1]);
	assert_false(t->f.programmed[VPMU_FIXED_BASE + 2]);
	assert_int_equal(rd(&t->v, MSR_CORE_PERF_FIXED_CTR0), 0);
	assert_int_equal(rd(&t->v, MSR_CORE_PERF_FIXED_CTR0 + 1), 45);
	free(t);

	t = calloc(1, sizeof *t);
	setup_vcpu(t, VPMU_MODEL_INTEL, 0, VPMU_MODE_CPU_SWITCH, &deny);
	wr(&t->v, MSR_CORE_PERF_FIXED_CTR_CTRL, 0x333);
	wr(&t->v, MSR_CORE_PERF_GLOBAL_CTRL, 0x700000000ULL);
	run(&t->v, 45, 0);
	assert_true(t->f.programmed[VPMU_FIXED_BASE]);
	assert_false(t->f.programmed[VPMU_FIXED_BASE + 1]);
	assert_true(t->f.programmed[VPMU_FIXED_BASE + 2]);
	assert_int_equal(rd(&t->v, MSR_CORE_PERF_FIXED_CTR0 + 1), 0);
	assert_int_equal(rd(&t->v, MSR_CORE_PERF_FIXED_CTR0 + 2), 45);
	free(t);
}

/* --- attribution ------------------------------------------------------------------ */

static uint64_t attribution(enum vpmu_mode mode)
{
	struct tvcpu *t = calloc(1, sizeof *t);
	uint64_t val;

	setup_vcpu(t, VPMU_MODEL_AMD, 0, mode, NULL);
	wr(&t->v, AMD_CTL(0), EN_ALL | 0x76);
	run(&t->v, 100, 30); /* 100 guest events, then 30 of VMM work */
	run(&t->v, 50, 7);
	run(&t->v, 0, 0);
	val = rd(&t->v, AMD_CTR(0));
	free(t);
	return val;
}

static void test_attribution(void **state)
{
	(void)state;
	/* CPU switch: only guest execution. Domain switch: the VMM's work for the guest too. */
	assert_int_equal(attribution(VPMU_MODE_CPU_SWITCH), 150);
	assert_int_equal(attribution(VPMU_MODE_DOMAIN_SWITCH), 187);
}

/*
 * A guest write replaces the count: events before the write must not reach
 * the new value (KVM's pmc_write_counter folds the current count into the
 * base so the guest reads exactly what it wrote, and counts on from there).
 * In domain-switch mode the VMM's work before the write happened before it.
 */
static uint64_t write_while_counting(enum vpmu_mode mode)
{
	struct tvcpu *t = calloc(1, sizeof *t);
	uint64_t val;

	setup_vcpu(t, VPMU_MODEL_AMD, 0, mode, NULL);
	wr(&t->v, AMD_CTL(0), EN_ALL | 0x76);
	run(&t->v, 100, 20); /* 20 events of VMM work, then the guest's WRMSR exit is handled */
	wr(&t->v, AMD_CTR(0), 0x1000);
	assert_int_equal(rd(&t->v, AMD_CTR(0)), 0x1000);
	events(&t->f, 5);    /* VMM work after the write */
	run(&t->v, 50, 0);
	val = rd(&t->v, AMD_CTR(0));
	free(t);
	return val;
}

/* Linux re-arms a sampling counter with -period in its PMI handler: no overflow before period events. */
static void rearm_no_spurious_overflow(enum vpmu_mode mode)
{
	struct tvcpu *t = calloc(1, sizeof *t);

	setup_vcpu(t, VPMU_MODEL_AMD, 0, mode, NULL);
	wr(&t->v, AMD_CTL(0), EN_ALL | EVTSEL_INT | 0x76);
	run(&t->v, 1000, 20);                     /* 20 events of VMM work before the WRMSR */
	wr(&t->v, AMD_CTR(0), (1ULL << 48) - 10); /* -10: overflow after 10 more events */
	run(&t->v, 4, 0);                         /* 4 < 10 */
	assert_int_equal(rd(&t->v, AMD_CTR(0)), (1ULL << 48) - 6);
	assert_int_equal(rd(&t->v, MSR_AMD64_PERF_CNTR_GLOBAL_STATUS), 0);
	vpmu_vcpu_before_run(&t->v, now);
	assert_int_equal(t->f.pmis, 0);
	free(t);
}

static void test_write_while_counting(void **state)
{
	(void)state;
	assert_int_equal(write_while_counting(VPMU_MODE_CPU_SWITCH), 0x1000 + 50);
	rearm_no_spurious_overflow(VPMU_MODE_CPU_SWITCH);
	assert_int_equal(write_while_counting(VPMU_MODE_DOMAIN_SWITCH), 0x1000 + 5 + 50);
	rearm_no_spurious_overflow(VPMU_MODE_DOMAIN_SWITCH);
}

static void test_exit_deadline_and_stats(void **state)
{
	struct tvcpu *t = calloc(1, sizeof *t);
	struct vpmu_stats sum = { 0 }, a = { 0 }, b = { 0 };
	uint64_t d;

	(void)state;
	setup_vcpu(t, VPMU_MODEL_INTEL, 0, VPMU_MODE_CPU_SWITCH, NULL);
	wr(&t->v, MSR_IA32_PERFEVTSEL0, EN_ALL | 0xc0);
	run(&t->v, 10, 0);
	assert_int_equal(vpmu_vcpu_exit_deadline(&t->v, now), 0); /* no counter wants a PMI */
	wr(&t->v, MSR_IA32_PERFEVTSEL0, EN_ALL | EVTSEL_INT | 0xc0);
	wr(&t->v, MSR_IA32_PMC0, (uint32_t)-1000000);
	run(&t->v, 1000, 0); /* 1000 events in 1000 ns: the rest in about 1 ms */
	d = vpmu_vcpu_exit_deadline(&t->v, now);
	assert_true(d > 0);
	assert_true(d <= 4000000);
	free(t);

	a.overflows = 2, a.latency_max_ns = 50, a.events_past_max = 7, a.latency_us[3] = 1;
	b.overflows = 3, b.latency_max_ns = 20, b.events_past_max = 9, b.latency_us[3] = 2;
	vpmu_stats_add(&sum, &a);
	vpmu_stats_add(&sum, &b);
	assert_int_equal(sum.overflows, 5);
	assert_int_equal(sum.latency_us[3], 3);
	assert_int_equal(sum.latency_max_ns, 50);
	assert_int_equal(sum.events_past_max, 9);
}

/* Changing an event select re-programs at the next entry; counts so far stay. */
static void test_reprogram(void **state)
{
	struct tvcpu *t = calloc(1, sizeof *t);

	(void)state;
	setup_vcpu(t, VPMU_MODEL_INTEL, 0, VPMU_MODE_CPU_SWITCH, NULL);
	wr(&t->v, MSR_IA32_PERFEVTSEL0, EN_ALL | 0xc0);
	run(&t->v, 45, 3);
	assert_int_equal(t->f.programs, 1);
	wr(&t->v, MSR_IA32_PERFEVTSEL0, EN_ALL | 0xc0); /* same value: nothing to do */
	run(&t->v, 5, 3);
	assert_int_equal(t->f.programs, 1);
	assert_int_equal(t->f.releases, 0);
	wr(&t->v, MSR_IA32_PERFEVTSEL0, EN_ALL | 0xc4);
	run(&t->v, 10, 3);
	assert_int_equal(t->f.programs, 2);
	assert_int_equal(t->f.releases, 1);
	assert_int_equal(t->f.ev[0].config & 0xff, 0xc4);
	assert_int_equal(rd(&t->v, MSR_IA32_PMC0), 60);
	wr(&t->v, MSR_IA32_PERFEVTSEL0, 0);
	run(&t->v, 10, 3);
	assert_false(t->f.programmed[0]);
	assert_int_equal(rd(&t->v, MSR_IA32_PMC0), 60);
	vpmu_vcpu_release(&t->v);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_cpuid),
		cmocka_unit_test(test_off_owns_nothing),
		cmocka_unit_test(test_intel_reset_and_writes),
		cmocka_unit_test(test_intel_gp_faults),
		cmocka_unit_test(test_intel_fewer_counters),
		cmocka_unit_test(test_intel_sign_extension),
		cmocka_unit_test(test_amd_registers),
		cmocka_unit_test(test_amd_perfmonv2_status),
		cmocka_unit_test(test_amd_fewer_counters),
		cmocka_unit_test(test_rdpmc_intel),
		cmocka_unit_test(test_rdpmc_amd),
		cmocka_unit_test(test_counting_amd),
		cmocka_unit_test(test_disabled_counter),
		cmocka_unit_test(test_overflow_pmi_intel),
		cmocka_unit_test(test_overflow_pmi_amd),
		cmocka_unit_test(test_overflow_legacy_and_fixed),
		cmocka_unit_test(test_filter_events),
		cmocka_unit_test(test_filter_fixed),
		cmocka_unit_test(test_attribution),
		cmocka_unit_test(test_write_while_counting),
		cmocka_unit_test(test_reprogram),
		cmocka_unit_test(test_exit_deadline_and_stats),
	};

	return cmocka_run_group_tests_name("vpmu_msr", tests, NULL, NULL);
}
