// SPDX-License-Identifier: MIT
/*
 * What a host counter counts for a guest event select. Raw encodings pass
 * through when the guest model's vendor is the host's; otherwise only the
 * architectural events have a meaning on the host, and map to perf's
 * generic hardware events.
 */
#include <errno.h>
#include <linux/perf_event.h>

#include "vpmu.h"
#include "vpmu_model_events.h"

static const uint64_t fixed_events[VPMU_MAX_FIXED] = {
	PERF_COUNT_HW_INSTRUCTIONS,
	PERF_COUNT_HW_CPU_CYCLES,
	PERF_COUNT_HW_REF_CPU_CYCLES,
};

/*
 * The events an emulator counts exactly: the architectural instructions and
 * branches, and each vendor's taken-branch event (AMD PMCx0C4 Retired Taken
 * Branch Instructions; Intel BR_INST_RETIRED.NEAR_TAKEN, 0xc4/0x20).
 */
static enum vpmu_exact_kind exact_kind(bool amd, uint16_t select, uint8_t umask, uint64_t ctl)
{
	if (ctl & (EVTSEL_EDGE | EVTSEL_INV | EVTSEL_CMASK))
		return VPMU_EXACT_NONE;
	if (select == 0xc0 && umask == 0)
		return VPMU_EXACT_INSNS;
	if (amd)
		return select == 0xc2 && umask == 0 ? VPMU_EXACT_BRANCHES :
		       select == 0xc4 && umask == 0 ? VPMU_EXACT_TAKEN : VPMU_EXACT_NONE;
	return select == 0xc4 && umask == 0 ? VPMU_EXACT_BRANCHES :
	       select == 0xc4 && umask == 0x20 ? VPMU_EXACT_TAKEN : VPMU_EXACT_NONE;
}

int vpmu_event_translate(const struct vpmu_config *cfg, unsigned int idx, uint64_t ctl,
			 struct vpmu_event *ev)
{
	bool amd = cfg->model == VPMU_MODEL_AMD;
	const struct vpmu_model_events *events = vpmu_model_events(amd ? VPMU_MODEL_AMD : VPMU_MODEL_INTEL);
	const struct vpmu_model_event *table = events->row;
	size_t n = events->count;
	uint16_t select;
	uint8_t umask;

	*ev = (struct vpmu_event){ 0 };
	if (idx >= VPMU_FIXED_BASE) {
		/* FIXED_CTR_CTRL field: bit 0 OS, bit 1 USR. */
		ev->type = PERF_TYPE_HARDWARE;
		ev->config = fixed_events[idx - VPMU_FIXED_BASE];
		ev->is_cycles = ev->config != PERF_COUNT_HW_INSTRUCTIONS;
		ev->exact = ev->config == PERF_COUNT_HW_INSTRUCTIONS ? VPMU_EXACT_INSNS : VPMU_EXACT_NONE;
		ev->count_kernel = ctl & 1;
		ev->count_user = ctl & 2;
		ev->translated = true;
		return 0;
	}
	ev->count_user = ctl & EVTSEL_USR;
	ev->count_kernel = ctl & EVTSEL_OS;
	select = (uint16_t)((ctl & EVTSEL_EVENT) | (amd ? ((ctl & AMD_EVTSEL_EVENT_HI) >> 24) : 0));
	umask = (uint8_t)((ctl & EVTSEL_UMASK) >> 8);
	ev->exact = exact_kind(amd, select, umask, ctl);
	for (size_t i = 0; i < n; i++)
		if (table[i].has_generic && table[i].select == select && table[i].umask == umask)
			ev->is_cycles = table[i].generic == PERF_COUNT_HW_CPU_CYCLES ||
					table[i].generic == PERF_COUNT_HW_REF_CPU_CYCLES;
	/* The exact backend needs no host event: the emulator counts it, or the clock does cycles. */
	if (cfg->exact && (ev->exact != VPMU_EXACT_NONE || ev->is_cycles))
		return 0;
	if ((amd && cfg->host == VPMU_HOST_AMD) || (!amd && cfg->host == VPMU_HOST_INTEL)) {
		ev->type = PERF_TYPE_RAW;
		ev->config = ctl & (EVTSEL_EVENT | EVTSEL_UMASK | EVTSEL_EDGE | EVTSEL_INV | EVTSEL_CMASK |
				    (amd ? AMD_EVTSEL_EVENT_HI : 0));
		return 0;
	}
	/* Edge, invert and counter-mask qualifiers have no generic equivalent. */
	if (ctl & (EVTSEL_EDGE | EVTSEL_INV | EVTSEL_CMASK))
		return -ENOENT;
	for (size_t i = 0; i < n; i++) {
		if (table[i].has_generic && table[i].select == select && table[i].umask == umask) {
			ev->type = PERF_TYPE_HARDWARE;
			ev->config = table[i].generic;
			ev->translated = true;
			return 0;
		}
	}
	return -ENOENT;
}
