/* SPDX-License-Identifier: MIT */
/*
 * A client of kvmprof-vmm's control socket (docs/control-socket.md): one
 * line of JSON per request and per reply, and a file descriptor passed
 * with SCM_RIGHTS alongside sample-start's reply. The VMM on the other end
 * is treated as untrusted input: replies are bounded in length and time,
 * must be JSON objects with a boolean "ok", and extra descriptors are
 * closed.
 */
#ifndef HOST_VM_CLIENT_H
#define HOST_VM_CLIENT_H

#include <json-c/json.h>
#include <stddef.h>

#define VM_CLIENT_LINE_MAX 65536
#define VM_CLIENT_TIMEOUT_MS 5000

struct vm_client {
	int fd;
	char buf[VM_CLIENT_LINE_MAX];
	size_t len;
	int passed_fd; /* the descriptor that came with a reply, or -1 */
};

/* 0, or -errno with a one-line message in err. */
int vm_client_connect(struct vm_client *c, const char *path, char *err, size_t errlen);
void vm_client_close(struct vm_client *c);

/*
 * Sends `req` (a JSON object; not consumed) and waits up to timeout_ms for
 * the reply line. On 0, *reply is the reply object (json_object_put it) and
 * *fd (if fd is not NULL) the descriptor that came with it, or -1. Errors,
 * with a one-line message in err:
 *   -EREMOTEIO  the VMM answered "ok":false (err holds its "error" text)
 *   -EPROTO     the reply is not a JSON object with a boolean "ok", or too long
 *   -ECONNRESET the VMM closed the connection (it exited)
 *   -ETIMEDOUT  no reply in time
 */
int vm_client_call(struct vm_client *c, json_object *req, json_object **reply, int *fd, int timeout_ms,
		   char *err, size_t errlen);

/* {"cmd": cmd} with nothing else: a convenience over vm_client_call. */
int vm_client_simple(struct vm_client *c, const char *cmd, json_object **reply, char *err, size_t errlen);

/* An integer field of a reply: 0, or -EPROTO when missing or not an integer in [min, max]. */
int vm_client_int(json_object *o, const char *key, long long min, long long max, long long *out);

#endif
