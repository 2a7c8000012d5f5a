/* SPDX-License-Identifier: MIT */
/*
 * Command-line helpers both programs' option parsers share, so that
 * kvmprof-agent and kvmprof refuse bad input by the same rules and in the
 * same words. prog is what a message starts with ("kvmprof-agent",
 * "kvmprof report"); usage is the text printed after a usage error.
 * Functions that print return the exit status to end with: 2, bad usage.
 */
#ifndef KVMPROF_CLI_H
#define KVMPROF_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

#include "collection/events.h"

/* "prog: " and the message (printf's fmt and arguments), a newline, then usage, on stderr. */
int cli_usage_error(const char *prog, const char *usage, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "prog: -F 'arg': expected WHAT\n" usage, on stderr: a number out of range or not one. */
int cli_bad_number(const char *prog, const char *usage, char opt, const char *arg, const char *what);

/*
 * A decimal number in [min, max], digits only: "-5", "1e3", "12abc" and ""
 * are refused (strtoull alone would take the first three). 0, -EINVAL
 * (not a number) or -ERANGE (out of [min, max]).
 */
int cli_parse_num(const char *s, unsigned long long min, unsigned long long max, unsigned long long *out);
/* Seconds above 0 and up to 10^6, fractions allowed ("0.5", ".5"). 0 or -EINVAL. */
int cli_parse_seconds(const char *s, double *out);

/*
 * One -e EVENT[:PERIOD] (events_parse), with the message for a name it
 * does not know: the closest known names, "did you mean: ...". 0 or 2.
 */
int cli_parse_event(const char *prog, const char *spec, struct events_event *ev);

/*
 * One entry of a --help list generated from a table: "  item" padded to
 * column indent, then text wrapped at 80 columns with its continuation
 * lines at indent (an item too long for its column puts the text one
 * space after it).
 */
void cli_help_item(FILE *out, size_t indent, const char *item, const char *text);

/* A command's own long options after those every program shares: the most a command adds. */
#define CLI_OWN_LONGOPTS_MAX 32
/*
 * Fills out (room for nshared + CLI_OWN_LONGOPTS_MAX + 1 entries) with the
 * shared long options, then the command's own (NULL, or ending with a zero
 * entry; any past the maximum are left out), then the zero entry.
 */
void cli_merge_longopts(struct option *out, const struct option *shared, size_t nshared, const struct option *own);

#endif
