/* SPDX-License-Identifier: MIT */
/*
 * kvmprof's commands, one file each owning its options (cmd_*.c; report,
 * script and annotate: host_report.h; list, trace, plugin: their own
 * headers), dispatched by main.c's table. argv[0] is the command's name;
 * the result is the exit status.
 */
#ifndef KVMPROF_HOST_COMMANDS_H
#define KVMPROF_HOST_COMMANDS_H

int cmd_record(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_stat(int argc, char **argv);

#endif
