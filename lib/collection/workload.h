/* SPDX-License-Identifier: MIT */
/*
 * A command to profile or count, started as perf starts its workload: forked
 * at once, held before its exec until the counters are on it, then let go;
 * an exec that fails comes back as its errno. kvmprof-agent record and
 * stat (lib/stat/stat_count.c) both start their command this way.
 */
#ifndef KVMPROF_WORKLOAD_H
#define KVMPROF_WORKLOAD_H

#include <signal.h>
#include <sys/types.h>

struct workload {
	pid_t pid;  /* 0: none */
	int go_fd;  /* a socket: releasing a command a signal already killed is EPIPE, not SIGPIPE */
	int err_fd; /* close-on-exec pipe: the exec's errno, or EOF when it went through */
};

/*
 * Forks argv[0] (looked up in PATH). The child gets SIGINT and SIGTERM back
 * as old_int and old_term say (NULL: their defaults), then waits for
 * workload_release. 0, or -errno with nothing started.
 */
int workload_start(struct workload *w, char *const *argv, const struct sigaction *old_int,
		   const struct sigaction *old_term);

/*
 * Lets it exec. 0 when it runs; -EPIPE (or another send error) when it was
 * gone before (killed by a signal); a positive errno when its exec failed
 * (the child has exited with 127 and is reaped, pid 0).
 */
int workload_release(struct workload *w);

/* Closes what is left of the start (not the process: the caller waits for it). */
void workload_close_fds(struct workload *w);

#endif
