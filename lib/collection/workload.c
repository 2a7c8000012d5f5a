/* SPDX-License-Identifier: MIT */
#include "collection/workload.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

int workload_start(struct workload *w, char *const *argv, const struct sigaction *old_int,
		   const struct sigaction *old_term)
{
	int go[2], err[2], e;
	pid_t pid;

	w->pid = 0;
	w->go_fd = w->err_fd = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, go))
		return -errno;
	if (pipe2(err, O_CLOEXEC)) {
		e = errno;
		close(go[0]);
		close(go[1]);
		return -e;
	}
	pid = fork();
	if (pid < 0) {
		e = errno;
		close(go[0]);
		close(go[1]);
		close(err[0]);
		close(err[1]);
		return -e;
	}
	if (!pid) {
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		char c;

		sigaction(SIGINT, old_int ? old_int : &dfl, NULL);
		sigaction(SIGTERM, old_term ? old_term : &dfl, NULL);
		close(go[1]);
		close(err[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[0], argv);
		e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	w->pid = pid;
	w->go_fd = go[1];
	w->err_fd = err[0];
	return 0;
}

int workload_release(struct workload *w)
{
	int e = 0;
	ssize_t n;

	if (send(w->go_fd, "g", 1, MSG_NOSIGNAL) != 1)
		return -errno;
	close(w->go_fd);
	w->go_fd = -1;
	do
		n = read(w->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(w->err_fd);
	w->err_fd = -1;
	if (n != sizeof(e))
		return 0;
	waitpid(w->pid, NULL, 0);
	w->pid = 0;
	return e;
}

void workload_close_fds(struct workload *w)
{
	if (w->go_fd >= 0)
		close(w->go_fd);
	if (w->err_fd >= 0)
		close(w->err_fd);
	w->go_fd = w->err_fd = -1;
}
