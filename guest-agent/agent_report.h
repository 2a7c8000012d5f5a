/* SPDX-License-Identifier: MIT */
/* `kvmprof-agent report`, `script` and `annotate`: read a sample file and print the profile, its samples, or one function of it. */
#ifndef KVMPROF_AGENT_REPORT_H
#define KVMPROF_AGENT_REPORT_H

#include "report/report.h"
#include "cli/report_cli.h"

/* argv[0] is "report". Returns the exit status: 0, 1 (bad input, I/O), 2 (usage). */
int agent_report_main(int argc, char **argv);
/* argv[0] is "annotate": one function's instructions with their samples. The same exit statuses. */
int agent_annotate_main(int argc, char **argv);

/*
 * The report's own options, which `script` shares where it has them
 * (--kallsyms): their values, and their handlers for struct report_cli.
 */
struct agent_report_args {
	const char *kallsyms;
	struct report_options opt;
};
int agent_report_option(int c, const char *arg, void *ctx);
void agent_report_profile_options(const struct report_cli_args *a, struct profile_options *popt, void *ctx);

/* argv[0] is "script": the samples one by one, like perf script. Returns the exit status. */
int agent_script_main(int argc, char **argv);

#endif
