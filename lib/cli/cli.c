/* SPDX-License-Identifier: MIT */
#include "cli/cli.h"

#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_usage_error(const char *prog, const char *usage, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", usage);
	return 2;
}

int cli_bad_number(const char *prog, const char *usage, char opt, const char *arg, const char *what)
{
	fprintf(stderr, "%s: -%c '%s': expected %s\n%s", prog, opt, arg, what, usage);
	return 2;
}

int cli_parse_num(const char *s, unsigned long long min, unsigned long long max, unsigned long long *out)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	return *out < min || *out > max ? -ERANGE : 0;
}

int cli_parse_seconds(const char *s, double *out)
{
	char *end;

	/* A leading digit or '.': strtod would also take "-1", "inf", "nan" and hex. */
	if (!s || ((*s < '0' || *s > '9') && *s != '.'))
		return -EINVAL;
	errno = 0;
	*out = strtod(s, &end);
	return errno || *end || *out <= 0 || *out > 1e6 ? -EINVAL : 0;
}

int cli_parse_event(const char *prog, const char *spec, struct events_event *ev)
{
	char unknown[KP_EVENT_NAME_MAX], err[256], close_names[512];
	int r = events_parse(spec, ev, unknown, sizeof(unknown), err, sizeof(err));

	if (r == -ENOENT) {
		fprintf(stderr, "%s: %s\n", prog, err);
		if (events_suggest(unknown, 5, close_names, sizeof(close_names)) > 0)
			fprintf(stderr, "%s: did you mean: %s\n", prog, close_names);
		return 2;
	}
	if (r) {
		fprintf(stderr, "%s: -e: %s\n", prog, err);
		return 2;
	}
	return 0;
}

#define HELP_WIDTH 80

void cli_help_item(FILE *out, size_t indent, const char *item, const char *text)
{
	int w = fprintf(out, "  %s ", item);
	size_t col = w > 0 ? (size_t)w : 0;
	bool fresh = true; /* nothing on the line after the item or the indent yet */

	for (; col < indent; col++)
		fputc(' ', out);
	while (*text) {
		size_t word = strcspn(text, " ");

		if (!fresh && col + 1 + word > HELP_WIDTH) {
			fprintf(out, "\n%*s", (int)indent, "");
			col = indent;
		} else if (!fresh) {
			fputc(' ', out);
			col++;
		}
		fwrite(text, 1, word, out);
		col += word;
		fresh = false;
		text += word;
		text += strspn(text, " ");
	}
	fputc('\n', out);
}

void cli_merge_longopts(struct option *out, const struct option *shared, size_t nshared, const struct option *own)
{
	size_t n = nshared;

	memcpy(out, shared, nshared * sizeof(*shared));
	for (; own && own->name && n < nshared + CLI_OWN_LONGOPTS_MAX; own++)
		out[n++] = *own;
	out[n] = (struct option){ 0 };
}
