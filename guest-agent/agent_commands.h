/* SPDX-License-Identifier: MIT */
/*
 * kvmprof-agent's commands, one file each owning its options (cmd_*.c;
 * report, script and annotate: agent_report.h), dispatched by main.c's table.
 * argv[0] is the command's name; the result is the exit status.
 */
#ifndef KVMPROF_AGENT_COMMANDS_H
#define KVMPROF_AGENT_COMMANDS_H

int cmd_record(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_list(int argc, char **argv);

#endif
