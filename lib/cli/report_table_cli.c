/* SPDX-License-Identifier: MIT */
/* The table's options for both report commands, parsed once. */
#include "cli/report_table_cli.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int report_table_option(int c, const char *arg, struct report_table_options *o, unsigned keys, const char *cmd,
			const char *usage)
{
	char err[400];
	char *end;

	switch (c) {
	case 's':
		if (report_keys_parse(arg, keys, &o->keys, err, sizeof(err)))
			return cli_usage_error(cmd, usage, "%s", err);
		return 0;
	case 'n':
		/* perf's -n adds the samples column; ours always has it. */
		return 0;
	case REPORT_OPT_PERCENT_LIMIT:
		/* "5" or "5%" */
		o->percent_limit = strtod(arg, &end);
		if (end != arg && *end == '%')
			end++;
		if (end == arg || *end || !(o->percent_limit >= 0 && o->percent_limit <= 100))
			return cli_usage_error(cmd, usage, "--percent-limit: '%s' is not a percentage (0-100)", arg);
		return 0;
	case REPORT_OPT_PERCENTAGE:
		/* perf's: what a filter's percentages are of (report_table_whole) */
		if (strcmp(arg, "absolute") && strcmp(arg, "relative"))
			return cli_usage_error(cmd, usage, "--percentage: '%s' is not absolute or relative", arg);
		o->percent_relative = !strcmp(arg, "relative");
		return 0;
	case REPORT_OPT_COMMS:
	case REPORT_OPT_PIDS:
	case REPORT_OPT_DSOS:
	case REPORT_OPT_SYMBOLS:
	case REPORT_OPT_TIDS:
		if (report_filter_set(&o->filter, (enum report_filter_kind)(c - REPORT_OPT_COMMS), arg, err, sizeof(err)))
			return cli_usage_error(cmd, usage, "%s", err);
		return 0;
	}
	return -1;
}
