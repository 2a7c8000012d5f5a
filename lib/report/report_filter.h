/* SPDX-License-Identifier: MIT */
/*
 * perf report's sample filters, shared by both report commands: --comms,
 * --pids, --dsos, --symbols, --tids (comma lists; a sample is kept when it
 * matches every filter given). Filters apply before anything is counted;
 * what the table's percentages are of is report_table_whole's choice.
 */
#ifndef KVMPROF_REPORT_FILTER_H
#define KVMPROF_REPORT_FILTER_H

#include <stdbool.h>
#include <stddef.h>

#include "profile/profile.h"

enum report_filter_kind {
	REPORT_FILTER_COMMS,
	REPORT_FILTER_PIDS,
	REPORT_FILTER_DSOS,
	REPORT_FILTER_SYMBOLS,
	REPORT_FILTER_TIDS, /* threads, as perf's --tid; --pids are processes */
	REPORT_FILTER_COUNT,
};

/* Each list as given (the command line's strings: not copied); NULL: no such filter. */
struct report_filter {
	const char *list[REPORT_FILTER_COUNT];
};

/*
 * Sets one filter from a comma list (a later one of the same kind replaces
 * it, as perf's options do). 0, or -EINVAL with the reason in err (an
 * empty list or item; a pid or tid that is not a number).
 */
int report_filter_set(struct report_filter *f, enum report_filter_kind kind, const char *list, char *err,
		      size_t errlen);
bool report_filter_active(const struct report_filter *f);
/*
 * Whether sample s is kept. A command matches its name as recorded or, in
 * kvmprof's reports, the name after its layer tag ("matmul" matches
 * "[guest] matmul"); a dso its image's name or recorded path; a symbol
 * its sampled function's name ("[unknown]" for the unresolved).
 */
bool report_filter_keeps(const struct report_filter *f, const struct profile *p, const struct profile_sample *s);
/*
 * Drops the samples the filters do not keep from p (for the formats that
 * render p's samples as they are: folded, svg, pprof), recounting each
 * event's samples and weight. Returns how many samples are left.
 */
size_t report_filter_profile(struct profile *p, const struct report_filter *f);
/* The active filters as options: "--comms a,b --dsos libc.so.6". */
void report_filter_describe(const struct report_filter *f, char *buf, size_t len);

#endif
