/* SPDX-License-Identifier: MIT */
/*
 * The table options both report commands take, as perf report spells
 * them: -s/--sort KEYS, --percent-limit P, --percentage absolute|relative,
 * -n/--show-nr-samples, and the filters --comms/--comm, --pids/--pid,
 * --dsos/--dso, --symbols/--symbol, --tids/--tid.
 * A program puts REPORT_TABLE_SHORTOPTS and REPORT_TABLE_LONGOPTS among its
 * own options and passes what getopt returns to report_table_option.
 */
#ifndef KVMPROF_REPORT_TABLE_CLI_H
#define KVMPROF_REPORT_TABLE_CLI_H

#include <getopt.h>

#include "report/report_table.h"

enum {
	REPORT_OPT_PERCENT_LIMIT = 0x1100,
	REPORT_OPT_PERCENTAGE,
	REPORT_OPT_COMMS, /* the filters: in report_filter_kind's order */
	REPORT_OPT_PIDS,
	REPORT_OPT_DSOS,
	REPORT_OPT_SYMBOLS,
	REPORT_OPT_TIDS,
};

#define REPORT_TABLE_SHORTOPTS "s:n"
#define REPORT_TABLE_LONGOPTS                                                       \
	{ "sort", required_argument, NULL, 's' },                                   \
	{ "show-nr-samples", no_argument, NULL, 'n' },                              \
	{ "percent-limit", required_argument, NULL, REPORT_OPT_PERCENT_LIMIT },     \
	{ "percentage", required_argument, NULL, REPORT_OPT_PERCENTAGE },           \
	{ "comms", required_argument, NULL, REPORT_OPT_COMMS },                     \
	{ "comm", required_argument, NULL, REPORT_OPT_COMMS },                      \
	{ "pids", required_argument, NULL, REPORT_OPT_PIDS },                       \
	{ "pid", required_argument, NULL, REPORT_OPT_PIDS },                        \
	{ "dsos", required_argument, NULL, REPORT_OPT_DSOS },                       \
	{ "dso", required_argument, NULL, REPORT_OPT_DSOS },                        \
	{ "symbols", required_argument, NULL, REPORT_OPT_SYMBOLS },                 \
	{ "symbol", required_argument, NULL, REPORT_OPT_SYMBOLS },                  \
	{ "tids", required_argument, NULL, REPORT_OPT_TIDS },                       \
	{ "tid", required_argument, NULL, REPORT_OPT_TIDS }

/*
 * One option of the table's: 0, 2 after a usage error on stderr ("cmd:
 * unknown sort key 'x' (valid keys: ...)" and usage), or -1: not one of
 * them. `keys` are the --sort keys the program accepts (REPORT_KEY_BIT).
 */
int report_table_option(int c, const char *arg, struct report_table_options *o, unsigned keys, const char *cmd,
			const char *usage);

#endif
