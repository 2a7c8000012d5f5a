/* SPDX-License-Identifier: MIT */
/*
 * The lines above `kvmprof report`'s table: what was recorded, how the
 * guest's time was told apart from the host's, the samples by domain and
 * what each domain is, and what profiling inside the guest cost. Said in
 * words a first-time user can follow without the docs.
 */
#include "host_report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "collection/events.h"
#include "common/keymap.h"
#include "common/utf8.h"

static const char *const layer_names[HOST_LAYER_COUNT] = { "guest user", "guest kernel", "guest unknown",
							   "VMM user", "host kernel" };

static double percent(uint64_t n, uint64_t total)
{
	return total ? 100.0 * (double)n / (double)total : 0.0;
}

static void print_events(FILE *out, const struct profile *p)
{
	for (size_t i = 0; i < p->nr_events; i++) {
		const struct profile_event *e = &p->events[i];

		if (!e->samples && !e->declared)
			continue;
		fprintf(out, "event: %s, %" PRIu64 " %s%s, %" PRIu64 " samples, %" PRIu64 " lost\n", e->name, e->period,
			(e->flags & KP_EVENT_FREQ) ? "Hz"
			: events_is_clock(e->type, e->config) ? "ns per sample" : "events per sample",
			(e->flags & KP_EVENT_FALLBACK) ? " (cpu-clock stands in: no hardware PMU)" : "", e->samples,
			e->lost);
	}
}

/*
 * "on: 2 vCPU rings" (how kvmprof-vmm's sampler reports itself) in the
 * user's words; other states ("not asked", "unavailable: why", a libvirt
 * domain's) are already plain.
 */
void host_report_guest_sampling(FILE *out, const char *status)
{
	unsigned n;
	int used = 0;

	if (!status) {
		fprintf(out, "guest samples: (not recorded by kvmprof record)\n");
		return;
	}
	if (sscanf(status, "on: %u vCPU rings%n", &n, &used) == 1 && used)
		fprintf(out, "guest samples: on: taken by the VMM on %s %u vCPU%s%s\n", n == 1 ? "its" : "each of its", n,
			n == 1 ? "" : "s", status + used);
	else
		fprintf(out, "guest samples: %s\n", status);
}

/* A port of the guest's second serial port, which /bin/agent writes its sample file to. */
static bool is_agent_channel_port(uint64_t port)
{
	return port >= 0x2f8 && port <= 0x2ff;
}

/*
 * When the guest profiles itself (its agent shipping samples over COM2)
 * while the host records it, part of what the report shows is that
 * profiling: the guest processes that wrote to COM2, and the host's
 * handling of those writes. Said in one line so nobody mistakes it for
 * the workload's cost. Needs the exit records (not with --no-exits).
 */
static void print_guest_profiler_cost(FILE *out, const struct profile *p, uint64_t total)
{
	struct keymap writers = { 0 };
	uint64_t guest = 0, host = 0;
	size_t nr_writers = 0;
	const char *name = NULL;
	uint32_t pid = 0;

	for (size_t i = 0; i < p->nr_exits; i++) {
		const struct profile_exit *x = &p->exits[i];

		if (x->kind != KP_EXIT_IO_OUT || !is_agent_channel_port(x->detail) || keymap_get(&writers, x->pid, 0) >= 0)
			continue;
		if (keymap_put(&writers, x->pid, 0, 1))
			goto out; /* out of memory: the line is an aid, leave it out */
		if (!nr_writers++) {
			name = p->comms[x->comm];
			pid = x->pid;
		}
	}
	if (!nr_writers)
		goto out;
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *s = &p->samples[i];

		if (s->domain == KP_DOMAIN_GUEST && keymap_get(&writers, s->pid, 0) >= 0)
			guest++;
		else if (s->exit != PROFILE_NONE && is_agent_channel_port(p->exits[s->exit].detail) &&
			 p->exits[s->exit].kind == KP_EXIT_IO_OUT)
			host++;
	}
	fprintf(out, "guest profiler: ");
	if (nr_writers == 1) {
		char proc[64];

		snprintf(proc, sizeof(proc), "%s [%" PRIu32 "]", name, pid);
		utf8_sanitize(proc, '?', NULL); /* the guest names its processes */
		fprintf(out, "the guest's %s", proc);
	} else
		fprintf(out, "%zu guest processes", nr_writers);
	fprintf(out, ", which %s samples out over COM2 (the guest profiling itself): %" PRIu64 " guest samples (%.2f%%) "
		     "in %s, %" PRIu64 " host samples (%.2f%%) handling %s COM2 writes\n",
		nr_writers == 1 ? "ships its" : "ship their", guest, percent(guest, total), nr_writers == 1 ? "it" : "them",
		host, percent(host, total), nr_writers == 1 ? "its" : "their");
out:
	keymap_free(&writers);
}

/* What each domain is, for a reader who meets the word here first. */
static void print_domain_legend(FILE *out, const struct profile *p, bool unknown)
{
	const char *vmm = profile_meta(p, "vmm");
	const char *vmm_name = vmm && !strcmp(vmm, "qemu") ? "QEMU" : "kvmprof-vmm";

	fprintf(out, "(guest user: the guest's programs; guest kernel: the guest's kernel; %sVMM user: %s's own code "
		     "on the host, device models and vPMU included; host kernel: Linux on the host, KVM included)\n",
		unknown ? "guest unknown: the guest's time with no register sample near it, whose process and code "
			  "nobody saw ([guest] [not sampled]); " : "", vmm_name);
}

/*
 * The guest time kvmprof record could not attribute (no register sample
 * near it), and where it is: the table's "[guest] [not sampled]" row when
 * host_report_add_unsampled made it (as many samples as counted), else
 * nowhere but here.
 */
static void print_unattributed(FILE *out, const struct profile *p, const uint64_t by_layer[HOST_LAYER_COUNT])
{
	const char *v = profile_meta(p, "guest_time_unattributed");
	uint64_t n = v ? strtoull(v, NULL, 10) : 0;

	if (!n)
		return;
	if (by_layer[HOST_LAYER_GUEST_UNKNOWN] == n)
		fprintf(out, "guest time with no register sample near it: %s host samples (QEMU's monitor fell behind or "
			     "failed; in the table as [guest] [not sampled], so that its shares are of all the time)\n", v);
	else
		fprintf(out, "guest time with no register sample near it: %s host samples (QEMU's monitor fell behind or "
			     "failed; not in the table)\n", v);
}

void host_report_header(FILE *out, const struct profile *p, const char *input,
			const uint64_t by_layer[HOST_LAYER_COUNT])
{
	uint64_t total = p->nr_samples;
	const char *v, *in_guest = profile_meta(p, "host_samples_in_guest");

	fprintf(out, "kvmprof system-wide profile: %s\n", input);
	if ((v = profile_meta(p, "domain")))
		fprintf(out, "domain: %s\n", v);
	if ((v = profile_meta(p, "command")))
		fprintf(out, "recorded: %s, %.1f s\n", v, (double)p->duration_ns / 1e9);
	print_events(out, p);
	host_report_guest_sampling(out, profile_meta(p, "guest_sampling"));
	if (in_guest)
		fprintf(out, "host samples taken while guest code ran: %s (left out at record time: the guest's own "
			     "samples stand for that time; told apart by %s)\n",
			in_guest, (v = profile_meta(p, "host_guest_rule")) ? v : "?");
	print_unattributed(out, p, by_layer);
	if (p->exits_recorded) {
		/* The host's samples: its two layers. */
		uint64_t host = by_layer[HOST_LAYER_VMM_USER] + by_layer[HOST_LAYER_HOST_KERNEL];

		fprintf(out, "VM exits: %zu recorded; %" PRIu64 " of %" PRIu64 " host samples fell in their handling "
			     "(their stacks go on into the guest: --format svg|folded, --drill, --exits)\n",
			p->exits_recorded, p->exit_samples, host);
	}
	print_guest_profiler_cost(out, p, total);

	fprintf(out, "\n%-14s %10s %8s\n", "domain", "samples", "%");
	/* Every sample in one row, the total their sum; guest unknown only where there is some. */
	for (int l = 0; l < HOST_LAYER_COUNT; l++)
		if (l != HOST_LAYER_GUEST_UNKNOWN || by_layer[l])
			fprintf(out, "%-14s %10" PRIu64 " %7.2f%%\n", layer_names[l], by_layer[l],
				percent(by_layer[l], total));
	fprintf(out, "%-14s %10" PRIu64 " %7.2f%%\n", "total", total, total ? 100.0 : 0.0);
	print_domain_legend(out, p, by_layer[HOST_LAYER_GUEST_UNKNOWN] != 0);
	if (in_guest && strtoull(in_guest, NULL, 10) && !by_layer[HOST_LAYER_GUEST_USER] &&
	    !by_layer[HOST_LAYER_GUEST_KERNEL] && !by_layer[HOST_LAYER_GUEST_UNKNOWN])
		fprintf(out, "(not in the table: %s host samples of guest time, which only the VMM's guest sampler can "
			     "attribute)\n", in_guest);
}
