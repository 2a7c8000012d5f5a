/* SPDX-License-Identifier: MIT */
/*
 * One run: the counters are opened disabled, on the command's process
 * (inherited by its children, switched on at its exec: what runs before
 * is the counting tool's own work), on each thread of -p's process, or on
 * each CPU for -a; then read (scaled for multiplexing) and closed. A
 * hardware event the host cannot count is <not supported>, as perf says.
 */
#include "stat/stat_count.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/perf_open.h"
#include "collection/procfs.h"
#include "stat/stat_format.h"
#include "collection/workload.h"

#define MAX_CPUS 1024

static volatile sig_atomic_t stop_signal;
static volatile pid_t forward_to;

/*
 * A Ctrl-C at the terminal reaches the command too (same process group):
 * the counting waits for it to end. A signal sent to us alone is passed on.
 */
static void on_signal(int sig, siginfo_t *si, void *uctx)
{
	(void)uctx;
	stop_signal = sig;
	if (forward_to > 0 && si && si->si_code != SI_KERNEL)
		kill(forward_to, sig);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int stat_default_events(struct events_event *ev, int max)
{
	static const char *const names[] = {
		"task-clock", "context-switches", "cpu-migrations", "page-faults",
		"cycles",     "instructions",     "branches",       "branch-misses",
	};
	char unknown[8], err[128];
	int n = 0;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && n < max; i++)
		if (!events_parse(names[i], &ev[n], unknown, sizeof(unknown), err, sizeof(err)))
			n++;
	return n;
}

/* One run's counters: fds[e * ntargets + t], -1 where not opened. */
struct run {
	const char *prog;
	const struct stat_opts *o;
	const struct events_event *ev;
	int nev;
	pid_t *tids;   /* -p's threads, or the command's pid; NULL with -a */
	int cpus[MAX_CPUS];
	size_t ntargets;
	int *fds;
	struct workload wl; /* the command */
};

static int set_targets(struct run *R)
{
	const struct stat_opts *o = R->o;

	if (o->all) {
		int n = procfs_online_cpus(R->cpus, MAX_CPUS);

		if (n <= 0) {
			fprintf(stderr, "%s: /sys/devices/system/cpu/online: %s\n", R->prog, strerror(n ? -n : ENOENT));
			return -1;
		}
		R->ntargets = (size_t)n;
		return 0;
	}
	if (o->pid) {
		char dir[64];

		snprintf(dir, sizeof(dir), "/proc/%d/task", (int)o->pid);
		if (procfs_list_ids(dir, &R->tids, &R->ntargets) || !R->ntargets) {
			fprintf(stderr, "%s: no process %d\n", R->prog, (int)o->pid);
			return -1;
		}
		return 0;
	}
	R->tids = malloc(sizeof(*R->tids));
	if (!R->tids)
		return -1;
	R->tids[0] = R->wl.pid;
	R->ntargets = 1;
	return 0;
}

/* 0, or -1 after a message: an event the host refuses for another reason than having no PMU. */
static int open_counters(struct run *R)
{
	bool on_exec = R->o->argv && !R->o->all && !R->o->pid;

	R->fds = malloc(sizeof(*R->fds) * (size_t)R->nev * R->ntargets);
	if (!R->fds)
		return -1;
	for (size_t i = 0; i < (size_t)R->nev * R->ntargets; i++)
		R->fds[i] = -1;
	for (int e = 0; e < R->nev; e++) {
		for (size_t t = 0; t < R->ntargets; t++) {
			struct perf_event_attr a = R->ev[e].attr;
			int fd;

			a.size = sizeof(a);
			a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
			a.disabled = 1;
			a.inherit = !R->o->all;
			a.enable_on_exec = on_exec;
			fd = R->o->all ? perf_open(&a, -1, R->cpus[t], -1) : perf_open(&a, R->tids[t], -1, -1);
			if (fd >= 0) {
				R->fds[(size_t)e * R->ntargets + t] = fd;
				continue;
			}
			if (perf_open_no_pmu(&a, -fd) || fd == -EINVAL)
				break; /* <not supported>: the same on every target */
			if (fd == -ESRCH && R->o->pid)
				continue; /* a thread that ended meanwhile */
			fprintf(stderr, "%s: %s: perf_event_open: %s\n", R->prog, R->ev[e].name, strerror(-fd));
			return -1;
		}
	}
	return 0;
}

static void enable_counters(struct run *R, bool on)
{
	for (size_t i = 0; i < (size_t)R->nev * R->ntargets; i++)
		if (R->fds[i] >= 0)
			ioctl(R->fds[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

/* Adds this run's counts to res: each event's sum over its targets, scaled for multiplexing. */
static void read_counters(struct run *R, struct stat_event_result *res)
{
	for (int e = 0; e < R->nev; e++) {
		double sum = 0, enabled = 0, running = 0;
		bool opened = false;

		for (size_t t = 0; t < R->ntargets; t++) {
			int fd = R->fds[(size_t)e * R->ntargets + t];
			uint64_t v[3];

			if (fd < 0)
				continue;
			opened = true;
			if (read(fd, v, sizeof(v)) != sizeof(v))
				continue;
			enabled += (double)v[1];
			running += (double)v[2];
			sum += v[2] && v[2] < v[1] ? (double)v[0] * (double)v[1] / (double)v[2] : (double)v[0];
		}
		if (!opened)
			continue; /* stays <not supported> */
		res[e].enabled += enabled;
		res[e].running += running;
		if (running > 0) {
			stat_spread_add(&res[e].value, sum);
			res[e].state = STAT_COUNTED;
		} else if (res[e].state == STAT_NOT_SUPPORTED) {
			res[e].state = STAT_NOT_COUNTED;
		}
	}
}

static void close_run(struct run *R)
{
	if (R->fds)
		for (size_t i = 0; i < (size_t)R->nev * R->ntargets; i++)
			if (R->fds[i] >= 0)
				close(R->fds[i]);
	free(R->fds);
	free(R->tids);
	workload_close_fds(&R->wl);
	/* A command we started and no longer count must not outlive the run. */
	if (R->wl.pid > 0) {
		kill(R->wl.pid, SIGKILL);
		waitpid(R->wl.pid, NULL, 0);
	}
}

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

/* Without a command: until Ctrl-C, or until -p's process has ended. */
static void wait_for_stop(pid_t pid)
{
	int pidfd = pid ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;

	while (!stop_signal) {
		struct pollfd p = { .fd = pidfd, .events = POLLIN };

		if (poll(&p, pidfd >= 0 ? 1 : 0, pidfd >= 0 ? -1 : 100) > 0)
			break;
		if (pid && pidfd < 0 && kill(pid, 0) && errno == ESRCH)
			break;
	}
	if (pidfd >= 0)
		close(pidfd);
}

/*
 * One run into res and out's times: 0, with *status the command's exit
 * code; or -1 after a message (nothing was counted).
 */
static int count_once(const char *prog, const struct stat_opts *o, const struct events_event *ev, int nev,
		      struct stat_event_result *res, struct stat_output *out, int *status)
{
	struct run R = { .prog = prog, .o = o, .ev = ev, .nev = nev, .wl = { .go_fd = -1, .err_fd = -1 } };
	struct rusage ru;
	uint64_t t0, t1;
	int r = -1, e, wstatus = 0;

	if (o->argv && (e = -workload_start(&R.wl, o->argv, NULL, NULL)) > 0) {
		fprintf(stderr, "%s: starting %s: %s\n", prog, o->argv[0], strerror(e));
		goto out;
	}
	if (set_targets(&R) || open_counters(&R))
		goto out;
	t0 = now_ns();
	if (o->all || o->pid)
		enable_counters(&R, true);
	if (o->argv && stop_signal) {
		/* Stopped before the command ran: it is not run, and there is nothing to print. */
		fprintf(stderr, "%s: %s before %s started; it was not run\n", prog, strsignal(stop_signal), o->argv[0]);
		*status = 128 + stop_signal;
		r = 0;
		goto out;
	}
	if (o->argv) {
		forward_to = R.wl.pid;
		e = workload_release(&R.wl);
		if (e) {
			/* perf's "Workload failed": the command could not be run (or died before it could). */
			fprintf(stderr, "%s: workload failed: cannot run %s: %s\n", prog, o->argv[0], strerror(abs(e)));
			goto out;
		}
		while (wait4(R.wl.pid, &wstatus, 0, &ru) < 0 && errno == EINTR)
			;
		R.wl.pid = 0;
		forward_to = 0;
		*status = exit_code(wstatus);
	} else {
		wait_for_stop(o->pid);
		*status = 0;
	}
	t1 = now_ns();
	enable_counters(&R, false);
	read_counters(&R, res);
	stat_spread_add(&out->elapsed_ns, (double)(t1 - t0));
	out->runs++;
	if (o->argv && !o->all && !o->pid) {
		out->have_rusage = true;
		out->user_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
		out->sys_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	}
	r = 0;
out:
	forward_to = 0;
	close_run(&R);
	return r;
}

/* What the header names: "'CMD ARGS'", "process id 'PID'" or "'system wide'". */
static void describe_target(const struct stat_opts *o, char *buf, size_t len)
{
	size_t n;

	if (o->pid) {
		snprintf(buf, len, "process id '%d'", (int)o->pid);
		return;
	}
	if (o->all) {
		snprintf(buf, len, "'system wide'");
		return;
	}
	n = (size_t)snprintf(buf, len, "'");
	for (char **a = o->argv; *a && n < len; a++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", a == o->argv ? "" : " ", *a);
	if (n < len)
		snprintf(buf + n, len - n, "'");
}

int stat_count_run(const char *prog, const struct stat_opts *o)
{
	static struct events_event ev[STAT_MAX_EVENTS];
	static struct stat_event_result res[STAT_MAX_EVENTS];
	struct sigaction sa, old_int, old_term;
	struct stat_output out = { .sep = o->sep, .big_num = !o->no_big_num };
	char target[512];
	unsigned runs = o->repeat ? o->repeat : 1;
	int nev, status = 0, r = 0;

	nev = o->nevents ? o->nevents : stat_default_events(ev, STAT_MAX_EVENTS);
	if (o->nevents)
		memcpy(ev, o->events, sizeof(ev[0]) * (size_t)nev);
	memset(res, 0, sizeof(res));
	for (int e = 0; e < nev; e++) {
		_Static_assert(sizeof(res[e].name) == sizeof(ev[e].name), "event names of one size");
		memcpy(res[e].name, ev[e].name, sizeof(res[e].name));
		res[e].type = ev[e].attr.type;
		res[e].config = ev[e].attr.config;
		res[e].state = STAT_NOT_SUPPORTED;
	}
	out.f = stderr;
	if (o->output && !(out.f = fopen(o->output, "w"))) {
		fprintf(stderr, "%s: cannot create %s: %s\n", prog, o->output, strerror(errno));
		return 1;
	}
	describe_target(o, target, sizeof(target));
	out.target = target;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: the wait sees a Ctrl-C at once */
	sigemptyset(&sa.sa_mask);
	stop_signal = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	/* -r N: N runs, fewer when Ctrl-C comes (the runs so far are printed, the interrupted one included). */
	for (unsigned i = 0; i < runs && !stop_signal; i++)
		if (count_once(prog, o, ev, nev, res, &out, &status)) {
			r = 1;
			break;
		}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (out.runs)
		stat_format_print(&out, res, nev);
	if (out.f != stderr && fclose(out.f)) {
		fprintf(stderr, "%s: writing %s: %s\n", prog, o->output, strerror(errno));
		r = 1;
	}
	return r ? 1 : status;
}
