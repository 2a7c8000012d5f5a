/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_CONTROL_SESSION_H
#define KVMPROF_CONTROL_SESSION_H

/*
 * The control socket's requests, apart from its connections (control.c):
 * one line of JSON in, one line of JSON out (docs/control-socket.md).
 * control_request.c parses a line and looks its command up in the table
 * that control_cmds.c keeps, each command with its handler.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONTROL_PROTOCOL 1

struct json_object;
struct vm;

/* What the commands know of the connection a request came on. */
struct control_session {
	struct vm *vm;
	uint64_t start_ns; /* when the socket began serving (control_now_ns): status's uptime */
	bool sampling;     /* this connection started guest sampling: it stops when the connection goes */
	bool exit_stats;   /* this connection holds the exit counting (exit-stats start): dropped when it goes */
	int pass_fd;       /* -1, or a descriptor to send with the reply just made (sample-start's rings) */
};

/*
 * The reply to one request line (no newline in it) as one newline-ended
 * line in out: its length, or 0 when it could not be made or does not fit.
 */
size_t control_reply(struct control_session *ses, const char *line, size_t len, char *out, size_t outsz);

/* The connection is gone: stops the guest sampling it started, drops its exit counting, closes a descriptor never sent. */
void control_session_end(struct control_session *ses);

/* Fills reply for request; returns NULL, or the error text (static, or in buf). */
typedef const char *(*control_handler)(struct control_session *ses, struct json_object *request,
				       struct json_object *reply, char *buf, size_t bufsz);

struct control_cmd {
	const char *name;
	const char *const *keys; /* the keys it takes besides "cmd" and "id" */
	control_handler run;
};

/* The command called name, or NULL. */
const struct control_cmd *control_cmd_find(const char *name);
/* Every command's name, for a message: "status, vcpus, ... or sample-stop". */
void control_cmd_list(char *buf, size_t size);

/* At most max bytes of s for an error message, cut on a UTF-8 character boundary. */
int control_clip(const char *s, int max);

/* CLOCK_MONOTONIC in nanoseconds: the clock of start_ns. */
uint64_t control_now_ns(void);

#endif
