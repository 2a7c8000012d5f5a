/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_BACKEND_EXACT_H
#define KVMPROF_BACKEND_EXACT_H

#include "backend_perf.h"
#include "vpmu.h"

/*
 * The exact backend, for hosts without hardware counters: instructions,
 * branches and taken branches are counted by the VMM's emulation engine
 * (vmm/engine/emu.h, driven by vmm/engine/engine.c for the client vmm/pmu_engine.c), which runs a vCPU whenever one of its enabled counters
 * counts them; core and reference cycles come from the clock backend's
 * task clock; every other event reads 0. The counts arrive through
 * vpmu_exact_add() from the VMM, which asks vpmu_exact_watches() where to
 * stop so that an overflow lands on its instruction.
 */
struct vpmu_exact_backend {
	struct vpmu_perf_backend clock; /* cycles */
	enum vpmu_exact_kind kind[VPMU_MAX_COUNTERS]; /* NONE: not exact (a cycles counter, or unused) */
	unsigned int rings[VPMU_MAX_COUNTERS];        /* bit 0: USR (CPL 3), bit 1: OS (CPL 0) */
	uint64_t count[VPMU_MAX_COUNTERS];            /* events since the counter was programmed */
};

#define VPMU_EXACT_RING_USER 1u
#define VPMU_EXACT_RING_KERNEL 2u

extern const struct vpmu_backend_ops vpmu_exact_ops;

void vpmu_exact_backend_init(struct vpmu_exact_backend *b, int signo);

/* The rings (VPMU_EXACT_RING_*) in which some programmed exact counter counts; 0: none. */
unsigned int vpmu_exact_rings(const struct vpmu_vcpu *v);

/* Where an emulator must stop for an exact counter to overflow on its instruction. */
struct vpmu_exact_watch {
	enum vpmu_exact_kind kind;
	unsigned int rings;
	uint64_t events; /* >= 1 */
};

/* Fills w (VPMU_MAX_COUNTERS entries) with the counters that raise a PMI on overflow; returns how many. */
unsigned int vpmu_exact_watches(const struct vpmu_vcpu *v, struct vpmu_exact_watch *w);

/* Adds events of one kind that retired in one ring (a VPMU_EXACT_RING_* bit) to every counter counting them. */
void vpmu_exact_add(struct vpmu_vcpu *v, enum vpmu_exact_kind kind, unsigned int ring, uint64_t n);

#endif
