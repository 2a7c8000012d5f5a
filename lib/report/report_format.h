/* SPDX-License-Identifier: MIT */
/*
 * The report formats (-f/--format), one row each in report_format.c: a
 * new format is its renderer's file and a row there. What differs between
 * the two programs (which event stacks show, the flame graph's colours,
 * pprof's labels, the text table) each program supplies once, as a
 * struct report_view.
 */
#ifndef KVMPROF_REPORT_FORMAT_H
#define KVMPROF_REPORT_FORMAT_H

#include <stdbool.h>
#include <stdio.h>

#include "profile/profile.h"
#include "report/report.h"

struct report_format;

/* One format's --help line in a program's words. */
struct report_format_words {
	const char *format; /* its name; NULL ends a list */
	const char *help;
};

struct report_view {
	/* The one event folded stacks and flame graphs show (f: which of them, for a note). */
	uint32_t (*stack_event)(struct profile *p, const struct report_format *f, void *ctx);
	const struct report_svg_options *svg; /* NULL: report_svg's defaults */
	/* pprof's options for p; NULL: report_pprof's defaults. */
	void (*pprof)(const struct profile *p, struct report_pprof_options *o, void *ctx);
	/* The text table. */
	int (*text)(FILE *out, struct profile *p, void *ctx);
	/* What --help says of some formats in this program's words (the rest: the rows' help); NULL: none. */
	const struct report_format_words *words;
};

struct report_format {
	const char *name;   /* -f NAME */
	const char *what;   /* for messages: "flame graph" */
	const char *help;   /* for --help, unless the program's view has its own words */
	const char *suffix; /* an -o name ending so picks it; NULL: none */
	bool binary;        /* written "wb", never to a terminal */
	/* Every sample's stack rather than the table: every sample is held, and the filters cut the profile itself. */
	bool stacks;
	/* Through the program's view (ctx is its): 0 or -errno (-EIO: writing failed; -ECANCELED: it said why). */
	int (*render)(FILE *out, struct profile *p, const struct report_format *f, const struct report_view *v,
		      void *ctx);
};

/* The default, text. */
const struct report_format *report_format_default(void);
/* Every row, the default first; the array ends with a row whose name is NULL. */
const struct report_format *report_formats(void);
/* What --help says of f through view v: v's words for it, else the row's. */
const char *report_format_help(const struct report_format *f, const struct report_view *v);
/* The row called name, or NULL. */
const struct report_format *report_format_find(const char *name);
/*
 * The format an output file's name asks for: 1 with *out set, 0 for a name
 * no row claims (text, unless -f says otherwise), -1 for a name that says
 * gzip or protobuf without saying which (.gz, .pb): writing text there
 * would be a file its name lies about.
 */
int report_format_of_name(const char *path, const struct report_format **out);
/* The names into buf, sep between them and last before the last: "text, folded, pprof or svg". */
void report_format_names(char *buf, size_t len, const char *sep, const char *last);

#endif
