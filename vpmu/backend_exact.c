// SPDX-License-Identifier: MIT
#include "backend_exact.h"
#include "backends.h"

#include <errno.h>
#include <string.h>

/* The clock backend's task clock counts cycles; exact kinds need nothing from the host. */
static int exact_program(struct vpmu_vcpu *v, unsigned int idx, const struct vpmu_event *ev)
{
	struct vpmu_exact_backend *b = v->backend;

	b->kind[idx] = VPMU_EXACT_NONE;
	b->count[idx] = 0;
	if (ev->exact != VPMU_EXACT_NONE) {
		b->kind[idx] = ev->exact;
		b->rings[idx] = (ev->count_user ? VPMU_EXACT_RING_USER : 0) |
				(ev->count_kernel ? VPMU_EXACT_RING_KERNEL : 0);
		return 0;
	}
	return vpmu_clock_ops.program(v, idx, ev);
}

static void exact_release(struct vpmu_vcpu *v, unsigned int idx)
{
	struct vpmu_exact_backend *b = v->backend;

	if (b->kind[idx] != VPMU_EXACT_NONE)
		b->kind[idx] = VPMU_EXACT_NONE;
	else
		vpmu_clock_ops.release(v, idx);
}

static int exact_read(struct vpmu_vcpu *v, uint64_t raw[VPMU_MAX_COUNTERS])
{
	struct vpmu_exact_backend *b = v->backend;
	int rc = vpmu_clock_ops.read(v, raw);

	for (unsigned int i = 0; i < VPMU_MAX_COUNTERS; i++)
		if (b->kind[i] != VPMU_EXACT_NONE)
			raw[i] = b->count[i];
	return rc;
}

static void exact_arm(struct vpmu_vcpu *v, unsigned int idx, uint64_t events)
{
	struct vpmu_exact_backend *b = v->backend;

	/* Exact counters stop where vpmu_exact_watches() says; only the clock needs arming. */
	if (b->kind[idx] == VPMU_EXACT_NONE)
		vpmu_clock_ops.arm(v, idx, events);
}

const struct vpmu_backend_ops vpmu_exact_ops = {
	.name = "exact",
	.program = exact_program,
	.release = exact_release,
	.read = exact_read,
	.arm = exact_arm,
};

void vpmu_exact_backend_init(struct vpmu_exact_backend *b, int signo)
{
	/* The clock's half reads struct vpmu_perf_backend at the start of b. */
	memset(b, 0, sizeof(*b));
	vpmu_perf_backend_init(&b->clock, signo);
}

unsigned int vpmu_exact_rings(const struct vpmu_vcpu *v)
{
	const struct vpmu_exact_backend *b = v->backend;
	unsigned int rings = 0;

	if (v->ops != &vpmu_exact_ops)
		return 0;
	for (unsigned int i = 0; i < VPMU_MAX_COUNTERS; i++)
		if (v->ctr[i].programmed && b->kind[i] != VPMU_EXACT_NONE)
			rings |= b->rings[i];
	return rings;
}

unsigned int vpmu_exact_watches(const struct vpmu_vcpu *v, struct vpmu_exact_watch *w)
{
	const struct vpmu_exact_backend *b = v->backend;
	unsigned int n = 0;

	if (v->ops != &vpmu_exact_ops)
		return 0;
	for (unsigned int i = 0; i < VPMU_MAX_COUNTERS; i++) {
		/* Counted since the last sync but not yet added to the guest's value. */
		uint64_t pending = b->count[i] - v->ctr[i].raw_last, d;

		if (b->kind[i] == VPMU_EXACT_NONE || !b->rings[i])
			continue;
		d = vpmu_counter_pmi_distance(v, i);
		if (!d)
			continue;
		w[n++] = (struct vpmu_exact_watch){ b->kind[i], b->rings[i], d > pending ? d - pending : 1 };
	}
	return n;
}

void vpmu_exact_add(struct vpmu_vcpu *v, enum vpmu_exact_kind kind, unsigned int ring, uint64_t n)
{
	struct vpmu_exact_backend *b = v->backend;

	if (v->ops != &vpmu_exact_ops || !n)
		return;
	for (unsigned int i = 0; i < VPMU_MAX_COUNTERS; i++)
		if (b->kind[i] == kind && (b->rings[i] & ring))
			b->count[i] += n;
}

static void exact_state_init(void *state, int signo)
{
	vpmu_exact_backend_init(state, signo);
}

static const struct vpmu_perf_backend *exact_times(const void *state)
{
	return &((const struct vpmu_exact_backend *)state)->clock;
}

const struct vpmu_backend_desc vpmu_backend_exact = {
	.choice = VPMU_BACKEND_EXACT,
	.what = "exact backend (instructions and branches counted in an emulator, cycles from run time)",
	.auto_pick = true,
	.exact = true,
	.ops = &vpmu_exact_ops,
	.state_size = sizeof(struct vpmu_exact_backend),
	.state_init = exact_state_init,
	.times = exact_times,
};
