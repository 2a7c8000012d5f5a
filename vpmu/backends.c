/* SPDX-License-Identifier: MIT */
/*
 * The vPMU backends the VMM offers (backends.h). A new backend is its own
 * file with a struct vpmu_backend_desc, its name in vpmu_names.c, and a
 * row here.
 */
#include "backends.h"

const struct vpmu_backend_desc *const vpmu_backends[] = {
	&vpmu_backend_kvm,      /* counts in hardware, and the guest's MSRs never exit */
	&vpmu_backend_emulated, /* counts in hardware through host perf_events */
	&vpmu_backend_exact,    /* no hardware counters: the emulator counts */
	&vpmu_backend_clock,    /* asked for by name only: its counts are time */
	NULL,
};

const struct vpmu_backend_desc *vpmu_backend_desc_of(enum vpmu_backend_choice choice)
{
	for (const struct vpmu_backend_desc *const *b = vpmu_backends; *b; b++)
		if ((*b)->choice == choice)
			return *b;
	return NULL;
}
