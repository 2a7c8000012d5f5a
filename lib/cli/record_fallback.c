/* SPDX-License-Identifier: MIT */
#include "cli/record_fallback.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kvmprof/sample_format.h"
#include "common/perf_open.h"
#include "cli/record_cli.h"

void record_fall_back_to_clock(struct events_event *ev, uint32_t *flags, uint64_t *rate, uint64_t freq,
			       bool keep_name, int err, char *pmu, size_t pmu_len, const char *prog, bool notice)
{
	char asked[sizeof(ev->name)];
	uint64_t hz = freq ? freq : RECORD_DEFAULT_HZ;
	/* A period the user gave (-c, EVENT:PERIOD) stays one: on the clock it counts nanoseconds, as in perf. */
	bool by_period = !(*flags & KP_EVENT_FREQ) && *rate;

	memcpy(asked, ev->name, sizeof(asked));
	if (notice && by_period)
		fprintf(stderr, "%s: no hardware PMU (perf_event_open %s: %s); sampling cpu-clock every %" PRIu64
			" ns instead\n", prog, asked, strerror(err), *rate);
	else if (notice)
		fprintf(stderr, "%s: no hardware PMU (perf_event_open %s: %s); sampling cpu-clock at %" PRIu64
			" Hz instead\n", prog, asked, strerror(err), hz);
	perf_open_describe_pmu(pmu, pmu_len, true, asked, err);
	events_cpu_clock(ev);
	if (keep_name)
		memcpy(ev->name, asked, sizeof(asked));
	*flags = (by_period ? 0 : KP_EVENT_FREQ) | KP_EVENT_FALLBACK;
	if (!by_period)
		*rate = hz;
}
