/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "report.h"

int report_parse_format(const char *name, enum report_format *out)
{
	static const char *const names[] = {
		[REPORT_FORMAT_TEXT] = "text",
		[REPORT_FORMAT_FOLDED] = "folded",
		[REPORT_FORMAT_PPROF] = "pprof",
		[REPORT_FORMAT_SVG] = "svg",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(name, names[i])) {
			*out = (enum report_format)i;
			return 0;
		}
	}
	return -EINVAL;
}

int report_check_output(const char *cmd, enum report_format format, const char *output)
{
	/* Checked before the (possibly long) load, so the mistake is told at once. */
	if (format == REPORT_FORMAT_PPROF && !output && isatty(STDOUT_FILENO)) {
		fprintf(stderr, "%s: pprof output is binary: give -o FILE or redirect it\n", cmd);
		return 2;
	}
	return 0;
}

int report_write(const char *prog, const char *output, enum report_format format,
		 int (*render)(FILE *out, void *ctx), void *ctx)
{
	FILE *out = stdout;
	int rc, status = 0;

	if (output) {
		out = fopen(output, format == REPORT_FORMAT_PPROF ? "wb" : "w");
		if (!out) {
			fprintf(stderr, "%s: %s: %s\n", prog, output, strerror(errno));
			return 1;
		}
	}
	rc = render(out, ctx);
	if (rc) {
		fprintf(stderr, "%s: %s: %s\n", prog, output ? output : "standard output", strerror(-rc));
		status = 1;
	}
	/* A full disk may only show at fclose: the file is then incomplete. */
	if (out != stdout && fclose(out) && !status) {
		fprintf(stderr, "%s: %s: %s\n", prog, output, strerror(errno));
		status = 1;
	}
	return status;
}
