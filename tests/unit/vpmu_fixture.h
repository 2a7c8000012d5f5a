/* SPDX-License-Identifier: MIT */
/*
 * The vPMU register model's test fixture: a fake backend whose counts the
 * test sets, a vCPU on it, and MSR access that fails the test on the
 * unexpected outcome. Shared by test_vpmu_msr.c and test_vpmu_sbuf.c.
 */
#ifndef KVMPROF_TEST_VPMU_FIXTURE_H
#define KVMPROF_TEST_VPMU_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "vpmu.h"

/* --- fake backend ---------------------------------------------------------- */

struct fake {
	uint64_t raw[VPMU_MAX_COUNTERS];
	bool programmed[VPMU_MAX_COUNTERS];
	struct vpmu_event ev[VPMU_MAX_COUNTERS];
	unsigned int programs, releases, reads;
	unsigned int pmis;
	bool lvtpc_masked;
};

static inline struct fake *fake_of(struct vpmu_vcpu *v)
{
	return v->backend;
}

static inline int fake_program(struct vpmu_vcpu *v, unsigned int idx, const struct vpmu_event *ev)
{
	struct fake *f = fake_of(v);

	assert_true(idx < VPMU_MAX_COUNTERS);
	assert_false(f->programmed[idx]);
	f->programmed[idx] = true;
	f->ev[idx] = *ev;
	f->raw[idx] = 0; /* a host counter starts at 0 */
	f->programs++;
	return 0;
}

static inline void fake_release(struct vpmu_vcpu *v, unsigned int idx)
{
	struct fake *f = fake_of(v);

	assert_true(f->programmed[idx]);
	f->programmed[idx] = false;
	f->releases++;
}

static inline int fake_read(struct vpmu_vcpu *v, uint64_t raw[VPMU_MAX_COUNTERS])
{
	struct fake *f = fake_of(v);

	memcpy(raw, f->raw, sizeof f->raw);
	f->reads++;
	return 0;
}

static const struct vpmu_backend_ops fake_ops = {
	.name = "fake",
	.program = fake_program,
	.release = fake_release,
	.read = fake_read,
};

static inline bool fake_inject_pmi(void *ctx)
{
	struct fake *f = ctx;

	f->pmis++;
	return !f->lvtpc_masked;
}

/* Host events happen on every programmed counter (whether guest or VMM time is the caller's story). */
static inline void events(struct fake *f, uint64_t n)
{
	for (unsigned int i = 0; i < VPMU_MAX_COUNTERS; i++)
		if (f->programmed[i])
			f->raw[i] += n;
}

static uint64_t now = 1000000;

/* One KVM_RUN in which the guest causes `guest` events, followed by `vmm` events of VMM work. */
static inline void run(struct vpmu_vcpu *v, uint64_t guest, uint64_t vmm)
{
	vpmu_vcpu_before_run(v, now);
	now += 1000;
	events(fake_of(v), guest);
	vpmu_vcpu_after_run(v, now);
	now += 100;
	events(fake_of(v), vmm);
}

struct tvcpu {
	struct vpmu_config cfg;
	struct vpmu_vcpu v;
	struct fake f;
};

static inline void setup_vcpu(struct tvcpu *t, enum vpmu_model model, unsigned int gp, enum vpmu_mode mode,
		       const struct vpmu_filter *filter)
{
	char err[VPMU_ERR_MAX];

	memset(t, 0, sizeof *t);
	assert_int_equal(vpmu_config_init(&t->cfg, model, gp, mode,
					  model == VPMU_MODEL_INTEL ? VPMU_HOST_INTEL : VPMU_HOST_AMD, err),
			 0);
	t->cfg.filter = filter;
	vpmu_vcpu_init(&t->v, &t->cfg, 0, &fake_ops, &t->f, fake_inject_pmi, &t->f);
}

static inline uint64_t rd(struct vpmu_vcpu *v, uint32_t msr)
{
	uint64_t val = 0xbadbadbadULL;

	if (vpmu_msr_read(v, msr, &val) != VPMU_MSR_OK)
		fail_msg("RDMSR %#x did not succeed", msr);
	return val;
}

static inline void wr(struct vpmu_vcpu *v, uint32_t msr, uint64_t val)
{
	int rc = vpmu_msr_write(v, msr, val);

	if (rc != VPMU_MSR_OK)
		fail_msg("WRMSR %#x = %#llx: rc %d, want OK", msr, (unsigned long long)val, rc);
}

static inline void wr_gp(struct vpmu_vcpu *v, uint32_t msr, uint64_t val)
{
	int rc = vpmu_msr_write(v, msr, val);

	if (rc != VPMU_MSR_GP)
		fail_msg("WRMSR %#x = %#llx: rc %d, want #GP", msr, (unsigned long long)val, rc);
}

static inline void rd_gp(struct vpmu_vcpu *v, uint32_t msr)
{
	uint64_t val;
	int rc = vpmu_msr_read(v, msr, &val);

	if (rc != VPMU_MSR_GP)
		fail_msg("RDMSR %#x: rc %d, want #GP", msr, rc);
}

#define EN_ALL (EVTSEL_EN | EVTSEL_USR | EVTSEL_OS)
#define AMD_CTL(i) (MSR_F15H_PERF_CTL0 + 2 * (i))
#define AMD_CTR(i) (MSR_F15H_PERF_CTL0 + 2 * (i) + 1)

#endif
