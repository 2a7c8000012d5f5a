/* SPDX-License-Identifier: MIT */
/*
 * Sample files into a profile: the one loader both report commands use
 * (kvmprof-agent report, kvmprof report with a guest's export).
 */
#include "profile/profile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "profile/profile_state.h"
#include "format/sample_file.h"

/*
 * Adds every record of one stream. A guest export's META (command=export,
 * its time) would stand in for the recording's in the header, and its END
 * counts are that stream's: both stay out. The recording's END comes with
 * kp_reader_next's 0, not among the records it returns 1 for.
 */
static int add_file(struct profile *p, const char *path, bool guest, struct kp_rec_task_layout *layout, char *err,
		    size_t errlen)
{
	struct kp_reader *r;
	struct kp_record rec = { 0 };
	int rc = kp_reader_open(&r, path, err, errlen), added = 0;

	if (rc)
		return rc;
	if (p->state->opt.recover)
		kp_reader_recover(r);
	while ((rc = kp_reader_next(r, &rec, err, errlen)) > 0) {
		if (rec.type == KP_REC_TASK_LAYOUT && !layout->kind)
			*layout = *rec.layout;
		if (guest && rec.type == KP_REC_META)
			continue;
		added = guest ? profile_add_guest_record(p, &rec) : profile_add_record(p, &rec);
		if (added || p->state->agg.broken)
			break;
	}
	if (p->state->agg.broken) {
		kp_reader_close(r);
		return 0; /* profile_load reads it again */
	}
	if (!rc && !guest && rec.type == KP_REC_END)
		added = profile_add_record(p, &rec);
	if (added) {
		snprintf(err, errlen, "%s: offset %llu: %s", path, (unsigned long long)rec.offset, strerror(-added));
		rc = added;
	} else if (!rc && kp_reader_damage(r)) {
		char line[600];

		kp_reader_damage_describe(kp_reader_damage(r), path, line, sizeof(line));
		profile_warn(p, "--recover: %s", line);
	}
	kp_reader_close(r);
	return rc;
}

/*
 * profile_options.aggregate: the warnings of a read that may be thrown
 * away (its order checks fail), held until it is kept.
 */
struct held_warnings {
	char **msgs;
	size_t n, cap;
	bool failed;
};

static void hold_warning(void *ctx, const char *msg)
{
	struct held_warnings *h = ctx;
	char *copy = strdup(msg);

	if (!copy || grow_array(&h->msgs, &h->cap, h->n + 1, sizeof(*h->msgs))) {
		free(copy);
		h->failed = true;
		return;
	}
	h->msgs[h->n++] = copy;
}

/* Tells the held warnings through opt (flush) or drops them. */
static void release_warnings(struct held_warnings *h, const struct profile_options *opt, bool flush)
{
	for (size_t i = 0; i < h->n; i++) {
		if (flush && opt->warn)
			opt->warn(opt->warn_ctx, h->msgs[i]);
		free(h->msgs[i]);
	}
	free(h->msgs);
	*h = (struct held_warnings){ 0 };
}

static int load(struct profile **out, const char *path, const struct profile_options *opt, char *err,
		size_t errlen, bool *again)
{
	struct held_warnings held = { 0 };
	struct kp_rec_task_layout rec_layout = { 0 }, export_layout = { 0 };
	struct profile *p;
	int rc = profile_new(&p, opt);

	if (rc) {
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (p->state->agg.on) {
		p->state->opt.warn = hold_warning;
		p->state->opt.warn_ctx = &held;
	}
	rc = add_file(p, path, false, &rec_layout, err, errlen);
	if (!rc && opt && opt->guest_export_path && !p->state->agg.broken)
		rc = add_file(p, opt->guest_export_path, true, &export_layout, err, errlen);
	if (p->state->agg.on) {
		/* The samples still waiting let through: the last of the order checks. */
		if (!rc && profile_agg_flush(p))
			rc = -ENOMEM, snprintf(err, errlen, "%s: %s", path, strerror(ENOMEM));
		p->state->opt.warn = opt->warn;
		p->state->opt.warn_ctx = opt->warn_ctx;
		if (p->state->agg.broken || held.failed) {
			release_warnings(&held, opt, false);
			profile_free(p);
			*again = true;
			return 0;
		}
		release_warnings(&held, opt, true);
	}
	/*
	 * The recording keeps the task layout it named processes with. Another
	 * export's differs when the kernel moved (KASLR, a new boot): its
	 * symbols and maps would name the samples wrongly, and silently.
	 */
	if (!rc && rec_layout.kind && export_layout.kind &&
	    (rec_layout.per_cpu_offset != export_layout.per_cpu_offset ||
	     rec_layout.current_task != export_layout.current_task)) {
		snprintf(err, errlen, "--guest-export %s is not of the boot %s was recorded in (__per_cpu_offset at 0x%llx "
				      "there, 0x%llx in the recording): give the export the recording was made with",
			 opt->guest_export_path, path, (unsigned long long)export_layout.per_cpu_offset,
			 (unsigned long long)rec_layout.per_cpu_offset);
		rc = -EINVAL;
	}
	if (!rc) {
		rc = profile_finish(p);
		if (rc)
			snprintf(err, errlen, "%s: %s", path, strerror(-rc));
	}
	if (rc) {
		profile_free(p);
		return rc < 0 ? rc : -EINVAL;
	}
	*out = p;
	return 0;
}

int profile_load(struct profile **out, const char *path, const struct profile_options *opt, char *err,
		 size_t errlen)
{
	struct profile_options plain;
	bool again = false;
	int rc;

	if (!opt || !opt->aggregate)
		return load(out, path, opt, err, errlen, &again);
	plain = *opt;
	plain.aggregate = false;
	/* Standard input cannot be read twice; a guest export's records are the guest's, which the checks do not know. */
	if (!strcmp(path, "-") || opt->guest_export_path)
		return load(out, path, &plain, err, errlen, &again);
	rc = load(out, path, opt, err, errlen, &again);
	return again ? load(out, path, &plain, err, errlen, &again) : rc;
}
