/* SPDX-License-Identifier: MIT */
#include "vm_client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/*
 * A VMM started with & just before (the docs' own examples do) may not
 * have bound its socket yet, or a killed VMM's file is still there until
 * the new one replaces it: no socket, or a refused connection, is tried
 * again for this long before it is an error.
 */
#define CONNECT_WAIT_MS 2000

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int vm_client_connect(struct vm_client *c, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int64_t deadline = now_ms() + CONNECT_WAIT_MS;
	int e;

	memset(c, 0, sizeof(*c));
	c->fd = c->passed_fd = -1;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "%s: socket path longer than %zu bytes", path, sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	for (;;) {
		c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (c->fd < 0) {
			e = errno;
			break;
		}
		if (!connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)))
			return 0;
		e = errno;
		close(c->fd);
		c->fd = -1;
		if ((e != ENOENT && e != ECONNREFUSED) || now_ms() >= deadline)
			break;
		poll(NULL, 0, 20);
	}
	snprintf(err, errlen, "%s: cannot connect: %s%s", path, strerror(e),
		 e == ECONNREFUSED || e == ENOENT ? " (is kvmprof-vmm running with --control there?)" : "");
	return -e;
}

void vm_client_close(struct vm_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	if (c->passed_fd >= 0)
		close(c->passed_fd);
	c->fd = c->passed_fd = -1;
}

static int send_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t n = send(fd, s, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		s += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One recvmsg into the buffer; the first descriptor that comes along is kept, others closed. */
static int receive(struct vm_client *c)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 8)];
	} ctl;
	struct iovec iov = { c->buf + c->len, sizeof(c->buf) - c->len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	ssize_t n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);

	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		size_t nfds;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nfds; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
			/* A reply carries one descriptor: the first is kept, extras are not leaked. */
			if (c->passed_fd < 0)
				c->passed_fd = fd;
			else
				close(fd);
		}
	}
	if (n == 0)
		return -ECONNRESET;
	c->len += (size_t)n;
	return 1;
}

int vm_client_call(struct vm_client *c, json_object *req, json_object **reply, int *fd, int timeout_ms,
		   char *err, size_t errlen)
{
	const char *text = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	int64_t deadline = now_ms() + timeout_ms;
	json_tokener *tok;
	json_object *o, *ok;
	char *nl;
	int r;

	*reply = NULL;
	if (fd)
		*fd = -1;
	if (c->fd < 0) {
		snprintf(err, errlen, "not connected");
		return -ENOTCONN;
	}
	if (c->passed_fd >= 0) {
		close(c->passed_fd);
		c->passed_fd = -1;
	}
	r = send_all(c->fd, text, strlen(text));
	if (!r)
		r = send_all(c->fd, "\n", 1);
	if (r) {
		snprintf(err, errlen, "control socket: %s", strerror(-r));
		return r == -EPIPE ? -ECONNRESET : r;
	}
	while (!(nl = memchr(c->buf, '\n', c->len))) {
		int64_t left = deadline - now_ms();
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };

		if (c->len == sizeof(c->buf)) {
			snprintf(err, errlen, "control socket: reply longer than %d bytes: not a kvmprof-vmm?",
				 VM_CLIENT_LINE_MAX);
			return -EPROTO;
		}
		if (left <= 0) {
			snprintf(err, errlen, "control socket: no reply within %d ms", timeout_ms);
			return -ETIMEDOUT;
		}
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR) {
			snprintf(err, errlen, "control socket: poll: %s", strerror(errno));
			return -errno;
		}
		r = receive(c);
		if (r == -ECONNRESET) {
			snprintf(err, errlen, "control socket closed by the VMM");
			return r;
		}
		if (r < 0) {
			snprintf(err, errlen, "control socket: %s", strerror(-r));
			return r == -EPIPE ? -ECONNRESET : r;
		}
	}
	*nl = '\0';
	tok = json_tokener_new_ex(16);
	if (!tok) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, c->buf, (int)(nl - c->buf));
	if (o && json_tokener_get_error(tok) == json_tokener_success &&
	    (size_t)json_tokener_get_parse_end(tok) != (size_t)(nl - c->buf)) {
		json_object_put(o);
		o = NULL; /* text after the object */
	}
	json_tokener_free(tok);
	memmove(c->buf, nl + 1, c->len - (size_t)(nl + 1 - c->buf));
	c->len -= (size_t)(nl + 1 - c->buf);
	if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, "ok", &ok) ||
	    !json_object_is_type(ok, json_type_boolean)) {
		json_object_put(o);
		snprintf(err, errlen, "control socket: the reply is not a JSON object with \"ok\": not a kvmprof-vmm?");
		return -EPROTO;
	}
	if (!json_object_get_boolean(ok)) {
		json_object *e;
		const char *msg = json_object_object_get_ex(o, "error", &e) && json_object_is_type(e, json_type_string)
					  ? json_object_get_string(e)
					  : "(no error text)";

		/* The VMM's text, cut to one printable line. */
		snprintf(err, errlen, "%s", msg);
		for (char *p = err; *p; p++)
			if ((unsigned char)*p < 0x20)
				*p = ' ';
		json_object_put(o);
		return -EREMOTEIO;
	}
	*reply = o;
	if (fd) {
		*fd = c->passed_fd;
		c->passed_fd = -1;
	}
	return 0;
}

int vm_client_simple(struct vm_client *c, const char *cmd, json_object **reply, char *err, size_t errlen)
{
	json_object *req = json_object_new_object();
	int r;

	if (!req || json_object_object_add(req, "cmd", json_object_new_string(cmd))) {
		json_object_put(req);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = vm_client_call(c, req, reply, NULL, VM_CLIENT_TIMEOUT_MS, err, errlen);
	json_object_put(req);
	return r;
}

int vm_client_int(json_object *o, const char *key, long long min, long long max, long long *out)
{
	json_object *v;
	long long x;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return -EPROTO;
	errno = 0;
	x = (long long)json_object_get_int64(v);
	if (errno || x < min || x > max)
		return -EPROTO;
	*out = x;
	return 0;
}
