/* SPDX-License-Identifier: MIT */
/*
 * annotate's own options, the same in both programs: --dso and -M
 * (perf annotate's), and the one SYMBOL operand. A program puts
 * REPORT_ANNOTATE_SHORTOPTS and REPORT_ANNOTATE_LONGOPTS among its
 * options and passes what getopt returns to report_annotate_option.
 */
#ifndef KVMPROF_REPORT_ANNOTATE_CLI_H
#define KVMPROF_REPORT_ANNOTATE_CLI_H

#include <getopt.h>

#include "report/report.h"

#define REPORT_ANNOTATE_SHORTOPTS "d:M:"
#define REPORT_ANNOTATE_LONGOPTS                                 \
	{ "dso", required_argument, NULL, 'd' },                 \
	{ "disassembler-style", required_argument, NULL, 'M' }

/* One of annotate's options into opt: 0, 2 after a usage error (opt->prog's), or -1: not annotate's. */
int report_annotate_option(int c, const char *arg, struct report_annotate_options *opt, const char *usage);
/* The SYMBOL operand, one at a time: 0, or 2 after a usage error. */
int report_annotate_operand(const char *arg, struct report_annotate_options *opt, const char *usage);

#endif
