/* SPDX-License-Identifier: MIT */
/*
 * `script`: every sample on its own, in time order, in perf script's
 * default layout, so that what reads perf script's output (flame-graph
 * scripts such as stackcollapse-perf.pl, people's own awk) reads this.
 * With -G (or a recording without call chains), a line a sample:
 *
 *               mm    42/42    user [001]  1234.567890:     250000 cpu-clock:            401136 alpha+0x6 (/bin/mm)
 *
 * When the recording has call chains (perf then prints them by default),
 * the command is not padded, the header ends after the event (and a
 * space, as perf's), each frame follows on a line of its own,
 * "\t<ip> <sym>+<off> (<dso>)", innermost first, and a blank line ends
 * the sample:
 *
 *   mm    42/42    user [001]  1234.567890:     250000 cpu-clock:
 *   \t          401136 alpha+0x6 (/bin/mm)
 *   \t          401187 main+0x17 (/bin/mm)
 *
 * The one field perf has not is the domain, after pid/tid: where perf puts
 * its own guest fields (VM:pid, VCPU:n), so that the line still starts
 * with "comm pid/tid" and ends with "time: period event:" as parsers
 * expect. It is one word: "user"/"kernel", or the host profiler's
 * ("guest-user", ...).
 *
 * Addresses are as recorded: a caller's is its return address (perf's
 * too), which the profile looked up one byte lower to find the call.
 * Names come from the profiled system, a guest's included: characters
 * that could act on a terminal or break the line format print as '?',
 * in a dso as '_', as do its spaces (parsers take it as one word in
 * parentheses).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "common/utf8.h"

static const char *default_domain(const struct profile *p, const struct profile_sample *s, void *ctx)
{
	(void)p;
	(void)ctx;
	return s->cpl == KP_CPL_KERNEL ? "kernel" : "user";
}

/* perf's layout of one frame: "ip sym+0xoff (dso)". exact: ip is no return address. */
static void print_frame(FILE *out, const struct profile *p, uint32_t loc, bool exact)
{
	const struct profile_loc *l = &p->locs[loc];
	const struct profile_func *f = &p->funcs[l->func];
	const struct profile_image *im = &p->images[l->image];

	if (im->vm_exit) {
		/* A VM exit's frame has no address: it names the exit, "[exit: io out 0x3f8]". */
		fprintf(out, "%16x ", 0);
		utf8_fputs_sanitized(report_func_name(p, l->func), out, '?', NULL);
	} else {
		fprintf(out, "%16" PRIx64 " ", l->addr + !exact);
		utf8_fputs_sanitized(report_func_name(p, l->func), out, '?', NULL);
		if (f->name)
			fprintf(out, "+0x%" PRIx64, l->rel + !exact - f->addr);
	}
	fputs(" (", out);
	utf8_fputs_sanitized(im->path ? im->path : im->name, out, '_', " \t");
	fputs(")", out);
}

/*
 * Which of a sample's frames were looked up as recorded: the ip, and in a
 * cross-layer stack the guest's RIP after the exit's frame (the frames
 * between are return addresses).
 */
static uint32_t guest_rip_frame(const struct profile *p, const struct profile_sample *s)
{
	if (s->exit == PROFILE_NONE)
		return UINT32_MAX;
	return s->nr_frames - p->exits[s->exit].nr_frames;
}

static void print_sample(FILE *out, const struct profile *p, const struct profile_sample *s, bool chains,
			 const char *domain, int domain_width)
{
	const struct profile_event *e = &p->events[s->event];
	/* Under the fallback the samples are cpu-clock's (the event asked for is what it stood in for). */
	const char *event = e->declared && (e->flags & KP_EVENT_FALLBACK) ? "cpu-clock" : e->name;
	uint32_t rip = guest_rip_frame(p, s);

	if (chains) {
		utf8_fputs_sanitized(p->comms[s->comm], out, '?', NULL);
		putc(' ', out);
	} else {
		/* perf pads the command to 16 columns when each sample is one line. */
		int n = 0;

		for (const char *c = p->comms[s->comm]; *c; c++)
			n += ((unsigned char)*c & 0xc0) != 0x80;
		fprintf(out, "%*s", n < 16 ? 16 - n : 0, "");
		utf8_fputs_sanitized(p->comms[s->comm], out, '?', NULL);
		putc(' ', out);
	}
	fprintf(out, "%5u/%-5u %-*s [%03u] %5" PRIu64 ".%06" PRIu64 ": %10" PRIu64 " ", s->pid, s->tid, domain_width,
		domain, s->cpu, s->time / 1000000000, s->time % 1000000000 / 1000, s->period);
	utf8_fputs_sanitized(event, out, '?', " \t");
	fputs(": ", out);
	if (!chains) {
		putc(' ', out);
		if (s->nr_frames)
			print_frame(out, p, p->frames[s->first_frame], true);
		putc('\n', out);
		return;
	}
	putc('\n', out);
	for (uint32_t i = 0; i < s->nr_frames; i++) {
		putc('\t', out);
		print_frame(out, p, p->frames[s->first_frame + i], i == 0 || i == rip);
		putc('\n', out);
	}
	putc('\n', out);
}

int report_script(FILE *out, const struct profile *p, const struct report_script_options *opt)
{
	const char *(*domain)(const struct profile *, const struct profile_sample *, void *) =
		opt && opt->domain ? opt->domain : default_domain;
	void *ctx = opt ? opt->ctx : NULL;
	bool chains = false;
	uint32_t *order;
	int rc, width = 0;

	/* perf prints the stacks when the recording has them: here, when any sample has a caller. */
	for (size_t i = 0; i < p->nr_samples && !(opt && opt->hide_callchain) && !chains; i++)
		chains = p->samples[i].nr_frames > 1;
	/* The domain column is as wide as its widest word, so that -G's lines align. */
	for (size_t i = 0; i < p->nr_samples; i++) {
		int w = (int)strlen(domain(p, &p->samples[i], ctx));

		width = w > width ? w : width;
	}
	rc = profile_time_order(p, &order);
	if (rc)
		return rc;
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *s = &p->samples[order[i]];

		print_sample(out, p, s, chains, domain(p, s, ctx), width);
	}
	free(order);
	return fflush(out) || ferror(out) ? -EIO : 0;
}
