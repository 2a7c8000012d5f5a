/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_CONTROL_H
#define KVMPROF_CONTROL_H

/*
 * The control socket (--control PATH): a UNIX stream socket, mode 0600,
 * line-delimited JSON requests and replies (docs/control-socket.md). One
 * thread of its own serves it without blocking; it never blocks the vCPU
 * threads: figures are read from them with relaxed atomic loads.
 */

#define CONTROL_ERR_MAX 512
/* sizeof(sockaddr_un.sun_path) less the terminating NUL. */
#define CONTROL_PATH_MAX 107
#define CONTROL_MAX_CLIENTS 8
#define CONTROL_LINE_MAX 4096   /* bytes of one request, its newline included */
#define CONTROL_OUT_MAX 65536   /* replies queued for one client before it is dropped */

struct control;
struct vm;

/*
 * Creates the socket at path (replacing a stale socket nobody listens on,
 * refusing anything else there) and listens; requests wait in the backlog
 * until control_start. 0, or -errno with a one-line message in err.
 */
int control_open(const char *path, struct control **out, char err[CONTROL_ERR_MAX]);

/* Starts serving requests about vm, on a thread with every signal blocked. 0 or -errno. */
int control_start(struct control *c, struct vm *vm);

/* Stops the thread, drops the clients, removes the socket; NULL is a no-op. */
void control_close(struct control *c);

#endif
