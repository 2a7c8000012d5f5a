/* SPDX-License-Identifier: MIT */
/*
 * The report table both report commands print: samples kept by the
 * filters (report_filter.h), grouped into rows by the --sort keys
 * (report_keys.h), most samples first, rows under --percent-limit hidden,
 * printed as columns in the keys' order. A program's own notion of a
 * sample's domain (kvmprof's four layers) comes in through hooks.
 */
#ifndef KVMPROF_REPORT_TABLE_H
#define KVMPROF_REPORT_TABLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"
#include "report/report_filter.h"
#include "report/report_keys.h"

struct report_table_options {
	struct report_keys keys;
	struct report_filter filter;
	double percent_limit; /* rows under this share (of the whole the percentages are of) are not printed; 0: all */
	/*
	 * --percentage relative: under a filter, percentages are of the samples
	 * kept (they add up to 100). Else absolute, perf's default: of all the
	 * samples, so a row's share is the same with or without a filter.
	 */
	bool percent_relative;
	bool per_event;       /* one table per event (the agent); else one over all samples (kvmprof) */
	bool sample_rows;     /* fill sample_row, which report_table_callgraph reads (4 bytes a sample); else NULL */
	/* The domain key: a sample's domain and its name. NULL: user or kernel by privilege level. */
	uint32_t (*domain)(const struct profile *p, const struct profile_sample *s, void *ctx);
	const char *(*domain_name)(uint32_t domain, void *ctx);
	void *ctx;
};

struct report_row {
	uint32_t event; /* PROFILE_NONE when not per_event */
	/* The row's values; only those of the keys in use group rows (the others are its first sample's). */
	uint32_t comm, pid, tid, image, func, domain;
	uint64_t count;
};

struct report_table {
	struct report_row *rows; /* by event (per_event), then most samples first */
	size_t nr;
	uint32_t *sample_row;    /* each sample's row, with sample_rows; PROFILE_NONE: filtered out */
	uint64_t *kept;          /* samples kept, per event (per_event) or [0] for all */
	uint64_t *total;         /* samples before filtering, likewise */
};

/* 0 or -ENOMEM. */
int report_table_build(struct report_table *t, const struct profile *p, const struct report_table_options *o);
void report_table_free(struct report_table *t);

/* How the two programs' tables look (widths, separators): each keeps its own. */
enum report_table_style {
	REPORT_STYLE_AGENT, /* columns as wide as their contents, two spaces apart */
	REPORT_STYLE_HOST,  /* kvmprof's columns: domain 13, process at least 28, image at least 20 */
};

/*
 * The column header line and rows [first, first + nr) (one event's, or
 * all), percentages of `whole`; then, when --percent-limit hid any, a line
 * saying how many rows and samples. 0 or -EIO.
 */
int report_table_print(FILE *out, const struct profile *p, const struct report_table *t, size_t first, size_t nr,
		       uint64_t whole, const struct report_table_options *o, enum report_table_style style);
/*
 * A table fitted to a terminal (kvmprof top): the lines cut to its width,
 * the names cut to their columns, the room going to the symbol. A report
 * is never cut: its lines are for reading in full and for scripts.
 */
struct report_table_fit {
	size_t width;      /* a line's most bytes; what is left of a character the cut split goes too; 0: no limit */
	bool cut;          /* names cut to their columns' widths (a process's name gives way to its pid, which
			      tells rows apart), titles too; the last column is cut by the line's width only */
	int process_width; /* the process column's width; 0: the style's */
	int image_width;   /* the image column's (dso, or the symbol's image); 0: the style's */
	bool no_sym_image; /* the symbol's image column left out: a narrow terminal's room goes to the symbol */
};
/* report_table_print, fitted by fit (NULL: as report_table_print). 0, -ENOMEM or -EIO. */
int report_table_print_fit(FILE *out, const struct profile *p, const struct report_table *t, size_t first, size_t nr,
			   uint64_t whole, const struct report_table_options *o, enum report_table_style style,
			   const struct report_table_fit *fit);
/*
 * What percentages are of: `all` (every sample of the event, or of the
 * recording) or, with --percentage relative and a filter, the `kept` ones.
 */
uint64_t report_table_whole(const struct report_table_options *o, uint64_t kept, uint64_t all);
/*
 * "# filter --comms x: 12 of 40 samples kept (30.00%); percentages are of
 * all 40\n" (or "of those 12" with --percentage relative) when a filter is active.
 */
void report_table_print_filter(FILE *out, const struct report_table_options *o, uint64_t kept, uint64_t total);
/* How many of rows [first, first + nr) --percent-limit leaves shown (rows are sorted: a prefix). */
size_t report_table_shown(const struct report_table *t, size_t first, size_t nr, uint64_t whole,
			  const struct report_table_options *o);
/* One row's key values, two spaces apart, unpadded (the call graph's row lines). */
void report_table_print_keys(FILE *out, const struct profile *p, const struct report_row *r,
			     const struct report_table_options *o);
/* Names come from the recorded system: printed with control characters as '?', padded to width. */
void report_put_clean(FILE *out, const char *s, int width);

/*
 * (lib/report/report_text.c, the agent's --callgraph drawing, which kvmprof
 * report -g shares.) The caller chains of rows [first, first + nr) (the first callgraph_rows
 * of them; 0: 10), callgraph_chains per row (0: 5), outermost first, from
 * the kept samples' stacks. 0 or -errno.
 */
int report_table_callgraph(FILE *out, const struct profile *p, const struct report_table *t, size_t first,
			   size_t nr, uint64_t whole, const struct report_table_options *o, unsigned callgraph_rows,
			   unsigned callgraph_chains);

#endif
