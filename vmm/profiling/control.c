// SPDX-License-Identifier: MIT
/*
 * The control socket's connections: the host profiler's way into a running
 * VMM. One thread polls the listening socket, a wake-up eventfd and up to
 * CONTROL_MAX_CLIENTS clients, all non-blocking, cuts what they send into
 * lines and queues one reply line per request (control_request.c makes
 * it). Whatever a client does (garbage, endless lines, never reading)
 * costs it its own connection at worst: the VM and the other clients go on.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "control.h"
#include "control_session.h"
#include "kvmprof/trace_file.h"
#include "trace.h"

_Static_assert(CONTROL_PATH_MAX + 1 == sizeof(((struct sockaddr_un *)0)->sun_path),
	       "CONTROL_PATH_MAX follows sun_path");

/* Bytes read from one client per poll round, so that a fast client cannot starve the others. */
#define CONTROL_READ_BUDGET (4 * CONTROL_LINE_MAX)

struct control_client {
	int fd; /* -1: a free slot */
	bool closing; /* read no more; close once the queued replies are out */
	struct control_session session; /* its pass_fd goes with the byte of out at pass_at (SCM_RIGHTS) */
	size_t pass_at;
	size_t in_len, out_len;
	char in[CONTROL_LINE_MAX];
	char out[CONTROL_OUT_MAX];
};

struct control {
	char path[CONTROL_PATH_MAX + 1];
	dev_t dev; /* the socket file we made: only that one is removed at exit */
	ino_t ino;
	int listen_fd, wake_fd;
	struct vm *vm;
	pthread_t thread;
	bool started;
	uint64_t start_ns;
	struct control_client client[CONTROL_MAX_CLIENTS];
};

static int control_fail(char err[CONTROL_ERR_MAX], int e, const char *fmt, const char *path)
{
	int n = snprintf(err, CONTROL_ERR_MAX, fmt, path);

	if (e && n >= 0 && n < CONTROL_ERR_MAX)
		snprintf(err + n, (size_t)(CONTROL_ERR_MAX - n), ": %s", strerror(e));
	return -(e ? e : EINVAL);
}

/*
 * Whatever is at path must be a socket nobody accepts on (left by a VMM
 * that was killed): that one is removed. A live socket or any other kind of
 * file is never touched.
 */
static int control_clear_path(const struct sockaddr_un *addr, char err[CONTROL_ERR_MAX])
{
	const char *path = addr->sun_path;
	struct stat st;
	int fd, rc;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : control_fail(err, errno, "control socket %s", path);
	if (!S_ISSOCK(st.st_mode))
		return control_fail(err, 0, "control socket %s: exists and is not a socket: not replaced", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return control_fail(err, errno, "control socket %s", path);
	rc = connect(fd, (const struct sockaddr *)addr, sizeof(*addr));
	close(fd);
	if (rc == 0)
		return control_fail(err, 0, "control socket %s: another process is listening there", path);
	if (errno != ECONNREFUSED)
		return control_fail(err, errno, "control socket %s", path);
	if (unlink(path) < 0 && errno != ENOENT)
		return control_fail(err, errno, "control socket %s: cannot remove the stale socket", path);
	return 0;
}

int control_open(const char *path, struct control **out, char err[CONTROL_ERR_MAX])
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct control *c;
	struct stat st;
	mode_t old_mask;
	int rc;

	*out = NULL;
	if (strlen(path) > CONTROL_PATH_MAX)
		return control_fail(err, ENAMETOOLONG, "control socket %s", path);
	memcpy(addr.sun_path, path, strlen(path) + 1);
	rc = control_clear_path(&addr, err);
	if (rc)
		return rc;
	c = calloc(1, sizeof(*c));
	if (!c)
		return control_fail(err, ENOMEM, "control socket %s", path);
	memcpy(c->path, path, strlen(path) + 1);
	c->wake_fd = -1;
	for (unsigned int i = 0; i < CONTROL_MAX_CLIENTS; i++)
		c->client[i].fd = c->client[i].session.pass_fd = -1;
	c->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->listen_fd < 0) {
		rc = control_fail(err, errno, "control socket %s", path);
		free(c);
		return rc;
	}
	/* The umask makes the file 0600 from its creation: no window in which others may connect. */
	old_mask = umask(0177);
	rc = bind(c->listen_fd, (struct sockaddr *)&addr, sizeof(addr));
	umask(old_mask);
	if (rc < 0) {
		rc = control_fail(err, errno, "control socket %s", path);
		close(c->listen_fd);
		free(c);
		return rc;
	}
	if (stat(path, &st) == 0) {
		c->dev = st.st_dev;
		c->ino = st.st_ino;
	}
	c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->wake_fd < 0 || listen(c->listen_fd, CONTROL_MAX_CLIENTS) < 0) {
		rc = control_fail(err, errno, "control socket %s", path);
		control_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* --- connections ------------------------------------------------------------ */

static void control_drop(struct control_client *cl)
{
	control_session_end(&cl->session);
	if (cl->fd >= 0)
		close(cl->fd);
	cl->fd = -1;
	cl->closing = false;
	cl->in_len = cl->out_len = 0;
}

/* Sends buf with the pending descriptor attached to its first byte. */
static ssize_t control_send_fd(struct control_client *cl, const char *buf, size_t len)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	ssize_t n;

	memset(&u, 0, sizeof(u));
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &cl->session.pass_fd, sizeof(int));
	n = sendmsg(cl->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n > 0) {
		/* The client holds its own copy now. */
		close(cl->session.pass_fd);
		cl->session.pass_fd = -1;
	}
	return n;
}

/* Sends what the socket takes now; drops the client on an error, or when it is closing and done. */
static void control_flush(struct control_client *cl)
{
	size_t done = 0;

	while (done < cl->out_len) {
		ssize_t n;

		if (cl->session.pass_fd >= 0 && cl->pass_at == done)
			n = control_send_fd(cl, cl->out + done, cl->out_len - done);
		else
			n = send(cl->fd, cl->out + done,
				 (cl->session.pass_fd >= 0 && cl->pass_at > done ? cl->pass_at : cl->out_len) - done,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			control_drop(cl);
			return;
		}
		done += (size_t)n;
	}
	memmove(cl->out, cl->out + done, cl->out_len - done);
	cl->out_len -= done;
	if (cl->session.pass_fd >= 0)
		cl->pass_at -= done;
	if (cl->closing && !cl->out_len)
		control_drop(cl);
}

/* Queues a reply; a client whose replies pile up unread is dropped rather than waited for. */
static void control_queue(struct control_client *cl, const char *text, size_t len)
{
	if (cl->out_len + len > CONTROL_OUT_MAX) {
		control_drop(cl);
		return;
	}
	memcpy(cl->out + cl->out_len, text, len);
	cl->out_len += len;
}

static void control_answer(struct control_client *cl, const char *line, size_t len)
{
	static char reply[CONTROL_OUT_MAX]; /* only the control thread uses it */
	size_t n, at;
	bool had_fd;

	while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	if (!len)
		return; /* blank lines are allowed and ignored: handy from a terminal */
	had_fd = cl->session.pass_fd >= 0;
	at = cl->out_len;
	n = control_reply(&cl->session, line, len, reply, sizeof(reply));
	if (!had_fd && cl->session.pass_fd >= 0)
		cl->pass_at = at; /* sample-start's ring set travels with the first byte of its reply */
	if (!n) {
		static const char oom[] = "{\"ok\":false,\"error\":\"out of memory\"}\n";
		control_queue(cl, oom, sizeof(oom) - 1);
	} else {
		control_queue(cl, reply, n);
	}
}

/* Answers every complete line in the input buffer. */
static void control_lines(struct control_client *cl)
{
	size_t start = 0;
	char *nl;

	while (cl->fd >= 0 && (nl = memchr(cl->in + start, '\n', cl->in_len - start))) {
		size_t end = (size_t)(nl - cl->in);

		control_answer(cl, cl->in + start, end - start);
		start = end + 1;
	}
	if (cl->fd < 0)
		return;
	memmove(cl->in, cl->in + start, cl->in_len - start);
	cl->in_len -= start;
}

static void control_read(struct control_client *cl)
{
	size_t budget = CONTROL_READ_BUDGET;

	while (cl->fd >= 0 && !cl->closing && budget) {
		size_t room = sizeof(cl->in) - cl->in_len;
		ssize_t n = recv(cl->fd, cl->in + cl->in_len, room < budget ? room : budget, MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0) {
			control_drop(cl);
			return;
		}
		if (n == 0) {
			/* The client is done sending: its last line may lack the newline. */
			if (cl->in_len)
				control_answer(cl, cl->in, cl->in_len);
			cl->in_len = 0;
			cl->closing = true;
			break;
		}
		budget -= (size_t)n;
		cl->in_len += (size_t)n;
		control_lines(cl);
		if (cl->fd >= 0 && cl->in_len == sizeof(cl->in)) {
			static const char too_long[] =
				"{\"ok\":false,\"error\":\"request longer than 4096 bytes: connection closed\"}\n";
			_Static_assert(CONTROL_LINE_MAX == 4096, "the message says 4096");
			/* No way to find where the next request starts: answer, then hang up. */
			control_queue(cl, too_long, sizeof(too_long) - 1);
			cl->in_len = 0;
			cl->closing = true;
		}
	}
	if (cl->fd >= 0)
		control_flush(cl);
}

static void control_accept(struct control *c, bool *backoff)
{
	for (;;) {
		int fd = accept4(c->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct control_client *slot = NULL;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			/* EMFILE and the like leave the listener readable: wait a little instead of spinning. */
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				*backoff = true;
			return;
		}
		for (unsigned int i = 0; i < CONTROL_MAX_CLIENTS && !slot; i++)
			if (c->client[i].fd < 0)
				slot = &c->client[i];
		if (!slot) {
			static const char busy[] =
				"{\"ok\":false,\"error\":\"too many control clients (at most 8): connection closed\"}\n";
			_Static_assert(CONTROL_MAX_CLIENTS == 8, "the message says 8");
			/* Best effort: a fresh socket's buffer takes one short line. */
			if (send(fd, busy, sizeof(busy) - 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
				/* nothing more to do for it */
			}
			close(fd);
			continue;
		}
		slot->fd = fd;
		slot->session = (struct control_session){ .vm = c->vm, .start_ns = c->start_ns, .pass_fd = -1 };
		slot->closing = false;
		slot->in_len = slot->out_len = 0;
	}
}

static void *control_thread(void *arg)
{
	struct control *c = arg;
	struct pollfd pfd[2 + CONTROL_MAX_CLIENTS];
	int who[2 + CONTROL_MAX_CLIENTS];
	bool backoff = false;
	struct trace_ctx trace_ctx;
	/* Its control_request events carry no vCPU; without a free context (cannot happen) it emits none. */
	bool traced = trace_ctx_register(&trace_ctx, KVMPROF_TRACE_NO_VCPU, NULL, NULL) == 0;

	pthread_setname_np(pthread_self(), "control");
	for (;;) {
		nfds_t n = 0;
		int rc;

		pfd[n++] = (struct pollfd){ .fd = c->wake_fd, .events = POLLIN };
		if (!backoff)
			pfd[n++] = (struct pollfd){ .fd = c->listen_fd, .events = POLLIN };
		for (int i = 0; i < CONTROL_MAX_CLIENTS; i++) {
			struct control_client *cl = &c->client[i];

			if (cl->fd < 0)
				continue;
			who[n] = i;
			pfd[n++] = (struct pollfd){
				.fd = cl->fd,
				.events = (short)((cl->closing ? 0 : POLLIN) | (cl->out_len ? POLLOUT : 0)),
			};
		}
		rc = poll(pfd, n, backoff ? 100 : -1);
		backoff = false;
		if (rc < 0 && errno != EINTR)
			break; /* cannot happen with valid descriptors; the VM goes on without its socket */
		if (rc <= 0)
			continue;
		if (pfd[0].revents)
			break;
		for (nfds_t k = 1; k < n; k++) {
			struct control_client *cl;

			if (pfd[k].fd == c->listen_fd) {
				if (pfd[k].revents)
					control_accept(c, &backoff);
				continue;
			}
			cl = &c->client[who[k]];
			if (cl->fd != pfd[k].fd)
				continue;
			if (pfd[k].revents & POLLNVAL) {
				control_drop(cl);
			} else if (pfd[k].revents & (POLLIN | POLLHUP | POLLERR)) {
				/* Read even on HUP: the peer may have sent its requests and shut down. */
				if (cl->closing)
					control_drop(cl); /* a closing client that hangs up needs no replies */
				else
					control_read(cl);
			} else if (pfd[k].revents & POLLOUT) {
				control_flush(cl);
			}
		}
	}
	for (int i = 0; i < CONTROL_MAX_CLIENTS; i++)
		control_drop(&c->client[i]);
	if (traced)
		trace_ctx_unregister(&trace_ctx);
	return NULL;
}

int control_start(struct control *c, struct vm *vm)
{
	sigset_t all, old;
	int rc;

	c->vm = vm;
	c->start_ns = control_now_ns();
	/* Signals belong to the main thread (SIGINT/SIGTERM) and the vCPU threads (kicks): none here. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&c->thread, NULL, control_thread, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return -rc;
	c->started = true;
	return 0;
}

void control_close(struct control *c)
{
	struct stat st;

	if (!c)
		return;
	if (c->started) {
		uint64_t one = 1;

		/* An eventfd write of 1 cannot block or fail short of an overflow no one will reach. */
		if (write(c->wake_fd, &one, sizeof(one)) < 0)
			pthread_cancel(c->thread);
		pthread_join(c->thread, NULL);
		c->started = false;
	}
	for (int i = 0; i < CONTROL_MAX_CLIENTS; i++)
		control_drop(&c->client[i]);
	if (c->listen_fd >= 0) {
		close(c->listen_fd);
		/* Only our own socket: one that replaced it (another VMM's) stays. */
		if (lstat(c->path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == c->dev && st.st_ino == c->ino)
			unlink(c->path);
	}
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	free(c);
}
