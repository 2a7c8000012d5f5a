// SPDX-License-Identifier: MIT
/*
 * control_client: a small client of kvmprof-vmm's control socket for the
 * end-to-end tests (tests/e2e/control.sh), so that they need neither socat
 * nor python. Every mode gives up after 20 s rather than hang a test run.
 *
 *   control_client SOCKET          sends standard input as is, shuts down
 *                                  writing, prints every byte received until
 *                                  the server closes (or 3 s of silence)
 *   control_client -n N SOCKET     opens N connections at once, then sends
 *                                  {"cmd":"status"} on each and prints one
 *                                  reply line per connection (or "(none)")
 *   control_client -H SOCKET       connects, sends status requests and never
 *                                  reads; prints "dropped after N requests"
 *                                  once the server hangs up, or "not dropped"
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int connect_to(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "control_client: %s: path too long\n", path);
		exit(2);
	}
	strcpy(addr.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		fprintf(stderr, "control_client: connect %s: %s\n", path, strerror(errno));
		exit(2);
	}
	return fd;
}

/* Waits up to ms for fd to become ready for events; false on timeout. */
static int wait_fd(int fd, short events, int ms)
{
	struct pollfd p = { .fd = fd, .events = events };

	return poll(&p, 1, ms) > 0;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n;

		if (!wait_fd(fd, POLLOUT, 3000))
			return -1;
		n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Copies what fd sends to stdout until EOF, a reset, or ms of silence. */
static void drain(int fd, int ms)
{
	char buf[4096];

	while (wait_fd(fd, POLLIN, ms)) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* EOF, or ECONNRESET when the server hung up on unread input */
		fwrite(buf, 1, (size_t)n, stdout);
	}
}

static int mode_stdin(const char *path)
{
	int fd = connect_to(path);
	char buf[4096];
	size_t n;

	while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0)
		if (write_all(fd, buf, n) < 0)
			break; /* the server may hang up first (an oversized line): read what it said */
	shutdown(fd, SHUT_WR);
	drain(fd, 3000);
	close(fd);
	return 0;
}

/* One reply line from fd into line; false on timeout or EOF. */
static int read_line(int fd, char *line, size_t size)
{
	size_t len = 0;

	while (len + 1 < size && wait_fd(fd, POLLIN, 3000)) {
		ssize_t n = recv(fd, line + len, 1, 0);

		if (n <= 0)
			break;
		if (line[len++] == '\n') {
			line[len] = '\0';
			return 1;
		}
	}
	line[len] = '\0';
	return 0;
}

static int mode_many(const char *path, int count)
{
	static const char req[] = "{\"cmd\":\"status\"}\n";
	int *fd = calloc((size_t)count, sizeof(*fd));
	char line[8192];

	if (!fd)
		return 2;
	for (int i = 0; i < count; i++)
		fd[i] = connect_to(path);
	for (int i = 0; i < count; i++)
		write_all(fd[i], req, sizeof(req) - 1); /* refused ones have hung up already */
	for (int i = 0; i < count; i++) {
		if (read_line(fd[i], line, sizeof(line)))
			printf("%d %s", i, line);
		else
			printf("%d (none)\n", i);
		close(fd[i]);
	}
	free(fd);
	return 0;
}

static int mode_hog(const char *path)
{
	static const char req[] = "{\"cmd\":\"status\"}\n";
	int fd = connect_to(path);
	long sent = 0;

	for (;;) {
		ssize_t n;

		if (!wait_fd(fd, POLLOUT, 5000))
			break;
		n = send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			printf("dropped after %ld requests\n", sent);
			return 0;
		}
		sent++; /* short writes do not happen on a unix socket with room for this line */
	}
	printf("not dropped after %ld requests\n", sent);
	return 1;
}

int main(int argc, char **argv)
{
	const char *alarm_s = getenv("CONTROL_CLIENT_ALARM");

	signal(SIGPIPE, SIG_IGN);
	/* A hang guard; tests/e2e/run.sh makes it longer in the emulated KVM host. */
	alarm(alarm_s ? (unsigned int)atoi(alarm_s) : 20);
	if (argc == 2)
		return mode_stdin(argv[1]);
	if (argc == 4 && !strcmp(argv[1], "-n"))
		return mode_many(argv[3], atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "-H"))
		return mode_hog(argv[2]);
	fprintf(stderr, "usage: control_client SOCKET | -n N SOCKET | -H SOCKET\n");
	return 2;
}
