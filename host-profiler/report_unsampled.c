/* SPDX-License-Identifier: MIT */
/*
 * Guest time with no register sample near it, as a row of kvmprof report's
 * table: "[guest] [not sampled]".
 *
 * `kvmprof record --domain` turns each host sample of a vCPU thread taken
 * while guest code ran into a guest sample from that vCPU's nearest
 * register snapshot (domain_sampler_join); when QEMU's monitor fell behind
 * or failed, no snapshot lies near, and the sample is only counted (META
 * guest_time_unattributed). Left out of the table, that time made every
 * other row's share too big (issue 31 saw 17% of the guest's time so left
 * out with one domain, 37-41% with two, 87% after the monitor died).
 *
 * The row is made here, from the count, rather than written at record
 * time as samples of a reserved pid: the table's shares are of sample
 * counts, so the count is all the row needs; recordings made before get
 * the row too; and the sample file stays as it was, so no reader, old or
 * new, meets a sample it does not expect. What the count lacks is each
 * sample's vCPU and time, which no row shows (kvmprof script lists the
 * recorded samples only, and --drill and --exits, which follow stacks,
 * have none to follow here).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_report.h"

/* A META value that is a whole decimal number, in *n. */
static bool meta_count(const struct profile *p, const char *key, uint64_t *n)
{
	const char *v = profile_meta(p, key);
	char *end;

	if (!v || *v < '0' || *v > '9')
		return false;
	errno = 0;
	*n = strtoull(v, &end, 10);
	return !*end && !errno;
}

/*
 * The event the unattributed host samples were of: the guest samples'
 * (domain_sampler_join gives them the host samples' event), else the
 * host's own samples'. PROFILE_NONE when there is no sample at all.
 */
static uint32_t guest_time_event(const struct profile *p)
{
	uint32_t native = PROFILE_NONE;

	for (size_t i = 0; i < p->nr_samples; i++) {
		if (p->samples[i].domain == KP_DOMAIN_GUEST)
			return p->samples[i].event;
		if (native == PROFILE_NONE)
			native = p->samples[i].event;
	}
	return native;
}

int host_report_add_unsampled(struct profile *p)
{
	uint64_t n, in_guest;
	struct profile_pseudo what = { .pid = 0, .cpl = HOST_CPL_UNKNOWN, .domain = KP_DOMAIN_GUEST,
				       .comm = "[not sampled]", .image = "[not sampled]", .func = "[not sampled]" };
	const struct profile_event *e;
	int rc;

	if (!meta_count(p, "guest_time_unattributed", &n) || !n)
		return 0;
	/* They are some of the guest-time host samples, which kvmprof record counts with them. */
	if (!meta_count(p, "host_samples_in_guest", &in_guest) || n > in_guest) {
		fprintf(stderr, "kvmprof report: the recording's count of guest time with no register sample near it "
				"(%" PRIu64 ") is not among its guest-time host samples (%s): not in the table\n", n,
			profile_meta(p, "host_samples_in_guest") ? profile_meta(p, "host_samples_in_guest") : "none");
		return 0;
	}
	what.event = guest_time_event(p);
	if (what.event == PROFILE_NONE)
		return 0; /* no sample to share the total with: the header says the count */
	/* Each weighs what its event's samples weigh on average: a fixed period's exactly. */
	e = &p->events[what.event];
	what.period = e->samples ? e->weight / e->samples : 1;
	rc = profile_add_pseudo_samples(p, n, &what);
	if (rc == -EOVERFLOW || rc == -ENOMEM) {
		fprintf(stderr, "kvmprof report: %" PRIu64 " samples of guest time with no register sample near it: %s: "
				"not in the table\n", n, strerror(-rc));
		return 0;
	}
	return rc;
}
