/* SPDX-License-Identifier: MIT */
/*
 * The control socket's exit-stats command (docs/control-socket.md): VM
 * exits by reason with their host time (exit_stats.h), counted while some
 * connection asked for them. A handler for control_cmds.c's table.
 */
#ifndef KVMPROF_CONTROL_EXIT_STATS_H
#define KVMPROF_CONTROL_EXIT_STATS_H

#include "control_session.h"

extern const char *const control_exit_stats_keys[];

const char *control_exit_stats(struct control_session *ses, struct json_object *req, struct json_object *r,
			       char *buf, size_t bufsz);
/* The connection is gone: drops its reference, if it holds one. */
void control_exit_stats_end(struct control_session *ses);

#endif
