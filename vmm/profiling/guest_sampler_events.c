// SPDX-License-Identifier: MIT
/* The events the guest sampler's clock can be (guest_sampler.h): the sampler and sample-start's checks read it. */
#include <linux/perf_event.h>
#include <string.h>

#include "guest_sampler.h"

static const struct guest_sampler_event gs_events[] = {
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
};

const struct guest_sampler_event *guest_sampler_event(const char *name)
{
	for (size_t i = 0; i < sizeof(gs_events) / sizeof(gs_events[0]); i++)
		if (!strcmp(gs_events[i].name, name))
			return &gs_events[i];
	return NULL;
}
