/* SPDX-License-Identifier: MIT */
/*
 * The events each vPMU model knows by its event select and unit mask: what
 * vpmu_event_translate maps to perf's generic events on a host of another
 * vendor, and what kvmprof list shows a guest can count. Pure data, so the
 * host profiler links it without the rest of the vPMU.
 */
#ifndef KVMPROF_VPMU_MODEL_EVENTS_H
#define KVMPROF_VPMU_MODEL_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vpmu.h"

struct vpmu_model_event {
	uint16_t select;        /* event select (AMD: 12 bits, 11:8 in EVTSEL 35:32) */
	uint8_t umask;
	bool has_generic;       /* a host of another vendor counts it as perf's generic event: */
	uint64_t generic;       /* PERF_COUNT_HW_* */
	const char *linux_name; /* perf's generic name a Linux guest programs as this select and unit
				   mask (its kernel's event map), or NULL: only the raw spelling reaches it */
	const char *desc;
};

struct vpmu_model_events {
	const struct vpmu_model_event *row;
	size_t count;
};

/* The model's table; an empty one for VPMU_MODEL_OFF. */
const struct vpmu_model_events *vpmu_model_events(enum vpmu_model model);

/* The event as perf's raw syntax spells it (rUUEE, the config of PERF_TYPE_RAW): "r20c4". */
void vpmu_model_event_raw_name(const struct vpmu_model_event *e, char *buf, size_t size);

#endif
