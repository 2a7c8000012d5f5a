/* SPDX-License-Identifier: MIT */
#include "cli/report_annotate_cli.h"

#include <string.h>

#include "cli/cli.h"

int report_annotate_option(int c, const char *arg, struct report_annotate_options *opt, const char *usage)
{
	switch (c) {
	case 'd':
		opt->dso = arg;
		return 0;
	case 'M':
		if (strcmp(arg, "att") && strcmp(arg, "intel"))
			return cli_usage_error(opt->prog, usage, "-M '%s': att or intel", arg);
		opt->intel = !strcmp(arg, "intel");
		return 0;
	}
	return -1;
}

int report_annotate_operand(const char *arg, struct report_annotate_options *opt, const char *usage)
{
	if (opt->symbol)
		return cli_usage_error(opt->prog, usage, "one SYMBOL at a time ('%s', then '%s')", opt->symbol, arg);
	opt->symbol = arg;
	return 0;
}
