/* SPDX-License-Identifier: MIT */
/* `kvmprof-agent report`: reads a sample file and prints the profile. */
#ifndef KVMPROF_AGENT_REPORT_H
#define KVMPROF_AGENT_REPORT_H

/* argv[0] is "report". Returns the exit status: 0, 1 (bad input, I/O), 2 (usage). */
int agent_report_main(int argc, char **argv);

#endif
