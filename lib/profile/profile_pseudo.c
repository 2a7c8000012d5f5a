/* SPDX-License-Identifier: MIT */
/*
 * Samples no record gave, added to a finished profile: time a recording
 * knows was spent (it counted it) without knowing where. kvmprof report
 * turns a libvirt recording's count of guest time with no register sample
 * near it into such samples, so that its table's shares are of the whole.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/grow.h"
#include "profile/profile_state.h"

int profile_add_pseudo_samples(struct profile *p, uint64_t n, const struct profile_pseudo *what)
{
	struct profile_state *ps = p->state;
	uint32_t img, loc, *frames;
	const char *func;
	uint32_t comm;

	if (!ps->finished || what->event >= p->nr_events)
		return -EINVAL;
	if (!n)
		return 0;
	/* Samples and frames are indexed by 32 bits (profile_sample.first_frame, report_table's rows). */
	if (n > UINT32_MAX - p->nr_samples || ps->nr_raw >= UINT32_MAX)
		return -EOVERFLOW;
	img = profile_image_id(p, NULL, what->image, NULL, 0, false, what->domain);
	func = img == PROFILE_NONE ? NULL : profile_intern(p, what->func);
	loc = func ? profile_pseudo_loc(p, img, func, 0) : PROFILE_NONE;
	comm = profile_comm(p, what->comm);
	if (loc == PROFILE_NONE || comm == PROFILE_NONE)
		return -ENOMEM;
	/* One frame, which every one of them points at. */
	frames = realloc(p->frames, (ps->nr_raw + 1) * sizeof(*p->frames));
	if (!frames)
		return -ENOMEM;
	p->frames = frames;
	p->frames[ps->nr_raw] = loc;
	if (grow_array(&p->samples, &ps->samples_cap, p->nr_samples + n, sizeof(*p->samples)))
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++)
		p->samples[p->nr_samples++] = (struct profile_sample){
			.event = what->event, .pid = what->pid, .tid = what->pid, .comm = comm, .exit = PROFILE_NONE,
			.first_frame = (uint32_t)ps->nr_raw, .nr_frames = 1, .cpl = what->cpl, .domain = what->domain,
			.period = what->period,
		};
	ps->nr_raw++;
	p->events[what->event].samples += n;
	p->events[what->event].weight += n * what->period;
	return 0;
}
