/* SPDX-License-Identifier: MIT */
/*
 * What the VMM needs to know of each vPMU backend, as one descriptor per
 * backend (defined in the backend's own file) and one table of them
 * (backends.c): how to tell whether it can run here, what --vpmu-backend=auto
 * may choose, the per-vCPU state it keeps and its host-counter operations.
 * vmm/pmu.c chooses and drives a backend through here and names none.
 */
#ifndef KVMPROF_VPMU_BACKENDS_H
#define KVMPROF_VPMU_BACKENDS_H

#include <stdbool.h>
#include <stddef.h>

#include "vpmu.h"
#include "vpmu_names.h"

struct vpmu_perf_backend;

struct vpmu_backend_desc {
	enum vpmu_backend_choice choice;
	const char *what;      /* the VMM's banner: "clock backend (cycles = ...)" */
	/* Whether it can run on this host: 0, or -errno with why in reason. NULL: anywhere. */
	int (*probe)(char reason[VPMU_ERR_MAX]);
	const char *unavailable; /* asked for by name but cannot run: "--vpmu-backend=NAME: <this><reason>" */
	const char *instead;     /* and, in parentheses after it, what to use instead (NULL: nothing) */
	bool auto_pick;          /* --vpmu-backend=auto takes the first such row, in table order, that can run */
	/*
	 * KVM's in-kernel vPMU: the guest's PMU MSRs never reach the VMM, which
	 * keeps no counters, no sample buffer and no figures; vm_setup
	 * configures KVM before any vCPU exists. The others are the VMM's.
	 */
	bool in_kernel;
	int (*vm_setup)(int vm_fd, const struct vpmu_config *cfg, char err[VPMU_ERR_MAX]);
	/* Instructions and branches are counted by the VMM's engine (vpmu_exact_add): cfg.exact. */
	bool exact;
	/* The VMM's own: the host-counter operations and their per-vCPU state (state_size bytes). */
	const struct vpmu_backend_ops *ops;
	size_t state_size;
	void (*state_init)(void *state, int signo);
	/* The host counters' enabled and running times in that state, read live by the control socket. */
	const struct vpmu_perf_backend *(*times)(const void *state);
};

extern const struct vpmu_backend_desc vpmu_backend_kvm, vpmu_backend_emulated, vpmu_backend_exact,
	vpmu_backend_clock;

/* Every backend, NULL-terminated, in --vpmu-backend=auto's order of preference. */
extern const struct vpmu_backend_desc *const vpmu_backends[];

/* The row for choice (not AUTO), or NULL. */
const struct vpmu_backend_desc *vpmu_backend_desc_of(enum vpmu_backend_choice choice);

#endif
