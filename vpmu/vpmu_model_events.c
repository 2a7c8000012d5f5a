// SPDX-License-Identifier: MIT
/*
 * Each model's events. The architectural ones (Intel SDM vol. 3 table 20-1
 * "UnHalted Core Cycles" and the rest; AMD's PMCx076, x0C0, x0C2, x0C3 and
 * the instruction cache's x080, x081) have a generic perf event a host of
 * another vendor counts instead; the taken-branch events are counted by the
 * exact backend (and raw on a host of the model's vendor) only.
 */
#include <stdio.h>

#include <linux/perf_event.h>

#include "vpmu_model_events.h"

#define ROWS(rows) { rows, sizeof(rows) / sizeof(rows[0]) }

static const struct vpmu_model_event intel_rows[] = {
	{ 0x3c, 0x00, true, PERF_COUNT_HW_CPU_CYCLES, "cycles", "UnHalted Core Cycles (also fixed counter 1)" },
	{ 0xc0, 0x00, true, PERF_COUNT_HW_INSTRUCTIONS, "instructions",
	  "Instructions Retired (also fixed counter 0); exact on the exact backend" },
	/* Linux maps bus-cycles to 0x013c and ref-cycles to fixed counter 2: both count this. */
	{ 0x3c, 0x01, true, PERF_COUNT_HW_REF_CPU_CYCLES, "bus-cycles",
	  "UnHalted Reference Cycles (ref-cycles counts them on fixed counter 2)" },
	{ 0x2e, 0x4f, true, PERF_COUNT_HW_CACHE_REFERENCES, "cache-references", "LLC References" },
	{ 0x2e, 0x41, true, PERF_COUNT_HW_CACHE_MISSES, "cache-misses", "LLC Misses" },
	{ 0xc4, 0x00, true, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, "branches",
	  "Branch Instructions Retired; exact on the exact backend" },
	{ 0xc5, 0x00, true, PERF_COUNT_HW_BRANCH_MISSES, "branch-misses", "Branch Misses Retired" },
	{ 0xc4, 0x20, false, 0, NULL, "BR_INST_RETIRED.NEAR_TAKEN, taken branches retired; exact on the exact backend" },
};

static const struct vpmu_model_event amd_rows[] = {
	{ 0x76, 0x00, true, PERF_COUNT_HW_CPU_CYCLES, "cycles", "PMCx076 Core Cycles Not In Halt" },
	{ 0xc0, 0x00, true, PERF_COUNT_HW_INSTRUCTIONS, "instructions",
	  "PMCx0C0 Retired Instructions; exact on the exact backend" },
	{ 0xc2, 0x00, true, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, "branches",
	  "PMCx0C2 Retired Branch Instructions; exact on the exact backend" },
	{ 0xc3, 0x00, true, PERF_COUNT_HW_BRANCH_MISSES, "branch-misses", "PMCx0C3 Retired Branch Instructions Mispredicted" },
	/* Linux's cache-references and cache-misses are other events on AMD: these two are reached raw only. */
	{ 0x80, 0x00, true, PERF_COUNT_HW_CACHE_REFERENCES, NULL,
	  "PMCx080 Instruction Cache Fetches (cache-references on another vendor's host)" },
	{ 0x81, 0x00, true, PERF_COUNT_HW_CACHE_MISSES, NULL,
	  "PMCx081 Instruction Cache Misses (cache-misses on another vendor's host)" },
	{ 0xc4, 0x00, false, 0, NULL, "PMCx0C4 Retired Taken Branch Instructions; exact on the exact backend" },
};

static const struct vpmu_model_events intel_events = ROWS(intel_rows);
static const struct vpmu_model_events amd_events = ROWS(amd_rows);
static const struct vpmu_model_events no_events = { NULL, 0 };

const struct vpmu_model_events *vpmu_model_events(enum vpmu_model model)
{
	return model == VPMU_MODEL_INTEL ? &intel_events : model == VPMU_MODEL_AMD ? &amd_events : &no_events;
}

void vpmu_model_event_raw_name(const struct vpmu_model_event *e, char *buf, size_t size)
{
	/* The event select's bits 11:8 sit at 35:32 of the raw config, as in AMD's PERF_CTL. */
	unsigned long long config = ((unsigned long long)(e->select & 0xf00) << 24) |
				    ((unsigned long long)e->umask << 8) | (e->select & 0xff);

	snprintf(buf, size, "r%04llx", config);
}
