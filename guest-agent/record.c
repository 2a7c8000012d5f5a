/* SPDX-License-Identifier: MIT */
/*
 * How a recording is laid out:
 *
 *  - one perf event per (event, CPU, target); targets are "all processes"
 *    (-a), the command's process with inherit (its children follow), or
 *    each thread of -p PID with inherit;
 *  - one ring buffer per CPU: the first event opened on a CPU owns it, the
 *    others send their records there (PERF_EVENT_IOC_SET_OUTPUT), so a
 *    system with N CPUs needs N rings whatever the number of events;
 *  - only the first event carries the side-band records (mmap, comm, task),
 *    so each happens once in the file;
 *  - every event samples the same fields, so one parser handles all rings;
 *    PERF_SAMPLE_IDENTIFIER tells which event a record belongs to.
 *
 * Per-task events with inherit must be per CPU: the kernel refuses to mmap
 * an inherited event that follows a task on any CPU (cpu == -1).
 */
#include "agent_record.h"

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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collection/convert.h"
#include "collection/emit.h"
#include "common/perf_open.h"
#include "collection/perf_rings.h"
#include "collection/procfs.h"
#include "cli/record_fallback.h"
#include "format/record_file.h"
#include "format/record_output.h"
#include "format/sample_file.h"
#include "collection/workload.h"

#define MAX_CPUS 1024
#define DEFAULT_PAGES 128 /* 512 KiB per CPU: ~10^4 samples of headroom at -F 1000 */
/* --call-graph dwarf samples carry a stack copy (8 KiB by default): 2 MiB per CPU keeps ~250 of them. */
#define DWARF_PAGES 512
#define POLL_MS 100

struct rec {
	const struct agent_record_opts *o;
	struct events_event ev[RECORD_MAX_EVENTS];
	uint32_t ev_flags[RECORD_MAX_EVENTS];
	uint64_t ev_rate[RECORD_MAX_EVENTS]; /* period, or Hz with KP_EVENT_FREQ */
	int nev;
	int cpus[MAX_CPUS];
	int ncpus;
	pid_t *targets; /* -1: all processes */
	size_t ntargets;
	struct perf_rings rs; /* the events, their ids and a ring per CPU */
	struct convert_ctx conv;
	struct kp_writer *w;
	struct emit_ctx e;
	int out_fd;
	const char *out_name;
	bool out_created, out_begun;
	bool out_kept_old; /* an earlier recording at the output's name went to NAME.old */
	bool recording; /* past the start: a failure now leaves a readable, truncated file */
	bool exclude_kernel; /* not allowed to see the kernel */
	char pmu[192];
	pid_t child;
	struct workload wl; /* the command, until it runs */
	uint64_t t_start;
};

static volatile sig_atomic_t stop_signal;
static volatile pid_t forward_to;
/* What SIGINT and SIGTERM did before record_run: the command gets it back. */
static struct sigaction saved_int, saved_term;

/*
 * A Ctrl-C at the terminal reaches the command too (same process group),
 * so it is not forwarded; a signal someone sent to the agent alone is.
 */
static void on_signal(int sig, siginfo_t *si, void *uctx)
{
	(void)uctx;
	stop_signal = sig;
	if (forward_to > 0 && si && si->si_code != SI_KERNEL)
		kill(forward_to, sig);
}

/*
 * Installed before the output file is created: from then on a signal only
 * sets the flag, and whatever stage the recording is at, it ends with a
 * whole file (an END record after what was written). SA_RESTART keeps the
 * setup's reads and writes going; poll is never restarted (signal(7)), so
 * the loop still sees the flag at once.
 */
static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &saved_int);
	sigaction(SIGTERM, &sa, &saved_term);
}

static void raise_fd_limit(void)
{
	struct rlimit rl;

	/* events x CPUs x threads descriptors add up quickly with -p. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void fill_attr(const struct rec *R, int idx, bool tracking, struct perf_event_attr *a)
{
	const struct agent_record_opts *o = R->o;

	*a = R->ev[idx].attr;
	a->size = sizeof(*a);
	if (R->ev_flags[idx] & KP_EVENT_FREQ) {
		a->freq = 1;
		a->sample_freq = R->ev_rate[idx];
	} else {
		a->sample_period = R->ev_rate[idx];
	}
	convert_sample_layout(a, o->rec.callgraph, o->rec.dwarf_stack); /* after freq: it decides the layout */
	a->disabled = 1;
	a->inherit = R->targets[0] != -1;
	a->enable_on_exec = R->child > 0 && R->targets[0] == R->child;
	if (R->exclude_kernel) {
		a->exclude_kernel = 1;
		a->exclude_hv = 1;
	}
	if (tracking)
		perf_attr_track_tasks(a);
}

/* Sets the event up as the stand-in clock; the name stays what the user asked for. */
static void drop_event(struct rec *R, int idx)
{
	for (int i = idx; i + 1 < R->nev; i++) {
		R->ev[i] = R->ev[i + 1];
		R->ev_flags[i] = R->ev_flags[i + 1];
		R->ev_rate[i] = R->ev_rate[i + 1];
	}
	R->nev--;
}

static void explain_open_error(const struct rec *R, int idx, int e)
{
	const char *name = R->ev[idx].name;
	char buf[32] = "";
	FILE *f;

	if (R->ev_flags[idx] & KP_EVENT_FALLBACK)
		fprintf(stderr, "kvmprof-agent: perf_event_open cpu-clock (standing in for %s): %s\n", name, strerror(e));
	else
		fprintf(stderr, "kvmprof-agent: perf_event_open %s: %s\n", name, strerror(e));
	if (e == EINVAL && (R->ev_flags[idx] & KP_EVENT_FREQ) &&
	    (f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "re"))) {
		if (fgets(buf, sizeof(buf), f) && R->ev_rate[idx] > strtoull(buf, NULL, 10))
			fprintf(stderr, "kvmprof-agent: %" PRIu64 " Hz is above kernel.perf_event_max_sample_rate (%s)\n",
				R->ev_rate[idx], strtok(buf, "\n"));
		fclose(f);
	} else if (e == EACCES || e == EPERM) {
		fprintf(stderr, "kvmprof-agent: not allowed; see kernel.perf_event_paranoid, or run as root\n");
	}
}

/*
 * The first open of each event decides what this system can do: no PMU
 * means the clock stands in (once), a kernel that hides itself means user
 * space only. Returns 0, 1 when the event was dropped, or -errno.
 */
static int probe_event(struct rec *R, int idx, bool *fell_back)
{
	struct perf_event_attr a;
	int fd;

	for (;;) {
		fill_attr(R, idx, false, &a);
		fd = perf_open(&a, R->targets[0], R->cpus[0], -1);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
		int e = -fd;

		if (perf_open_no_pmu(&R->ev[idx].attr, e)) {
			if (*fell_back) {
				fprintf(stderr, "kvmprof-agent: no hardware PMU: not recording %s (cpu-clock already stands in)\n",
					R->ev[idx].name);
				drop_event(R, idx);
				return 1;
			}
			record_fall_back_to_clock(&R->ev[idx], &R->ev_flags[idx], &R->ev_rate[idx], R->o->rec.freq, true, e,
						  R->pmu, sizeof(R->pmu), "kvmprof-agent", true);
			*fell_back = true;
			continue;
		}
		if ((e == EACCES || e == EPERM) && !R->exclude_kernel && !a.exclude_kernel) {
			fprintf(stderr, "kvmprof-agent: kernel samples not allowed here (perf_event_paranoid); "
					"recording user space only\n");
			R->exclude_kernel = true;
			continue;
		}
		explain_open_error(R, idx, e);
		return -e;
	}
}

static int open_events(struct rec *R)
{
	bool fell_back = false;
	int r;

	for (int i = 0; i < R->nev; i++) {
		r = probe_event(R, i, &fell_back);
		if (r < 0)
			return r;
		if (r > 0)
			i--;
	}
	if (!R->nev)
		return -ENOENT;
	if (!R->pmu[0]) {
		bool hw = false;

		for (int i = 0; i < R->nev; i++)
			hw |= perf_attr_is_hardware(&R->ev[i].attr);
		perf_open_describe_pmu(R->pmu, sizeof(R->pmu), hw, NULL, 0);
	}

	r = perf_rings_init(&R->rs, "kvmprof-agent", R->cpus, R->ncpus);
	if (r)
		return r;

	for (int c = 0; c < R->ncpus; c++) {
		for (int i = 0; i < R->nev; i++) {
			for (size_t t = 0; t < R->ntargets; t++) {
				struct perf_event_attr a;
				int fd;

				fill_attr(R, i, i == 0, &a);
				fd = perf_open(&a, R->targets[t], R->cpus[c], -1);
				if (fd < 0) {
					int e = -fd;

					/* A thread of -p PID that exited meanwhile. */
					if (e == ESRCH && R->targets[t] != -1 && R->targets[t] != R->child)
						continue;
					/* A CPU that went offline since we listed them. */
					if (e == ENODEV && R->ncpus > 1)
						continue;
					fprintf(stderr, "kvmprof-agent: perf_event_open %s on CPU %d: %s\n", R->ev[i].name,
						R->cpus[c], strerror(e));
					return -e;
				}
				r = perf_rings_add(&R->rs, c, (int)fd, (uint32_t)i, &a,
						   R->o->mmap_pages ? R->o->mmap_pages
						   : R->o->rec.callgraph == RECORD_CALLGRAPH_DWARF ? DWARF_PAGES : DEFAULT_PAGES);
				if (r)
					return r;
			}
		}
	}
	if (!R->rs.nfds) {
		fprintf(stderr, "kvmprof-agent: nothing to record (every thread exited)\n");
		return -ESRCH;
	}
	return 0;
}

/* ---- targets ---- */

static int start_child(struct rec *R)
{
	/* The command gets SIGINT and SIGTERM back as the agent found them. */
	int r = workload_start(&R->wl, R->o->argv, &saved_int, &saved_term);

	if (r) {
		fprintf(stderr, "kvmprof-agent: starting %s: %s\n", R->o->argv[0], strerror(-r));
		return r;
	}
	R->child = R->wl.pid;
	return 0;
}

/*
 * Lets the child exec. -EINTR: a signal came first (the command is not run,
 * or already died of the forwarded signal).
 */
static int release_child(struct rec *R)
{
	int e;

	if (stop_signal)
		return -EINTR;
	e = workload_release(&R->wl);
	if (e < 0) {
		if (stop_signal)
			return -EINTR;
		fprintf(stderr, "kvmprof-agent: starting %s: %s\n", R->o->argv[0], strerror(-e));
		return -EIO;
	}
	if (e > 0) {
		fprintf(stderr, "kvmprof-agent: cannot run %s: %s\n", R->o->argv[0], strerror(e));
		R->child = 0;
		return -e;
	}
	return 0;
}

static int set_targets(struct rec *R)
{
	const struct agent_record_opts *o = R->o;

	if (o->all || !o->pid) {
		R->targets = malloc(sizeof(*R->targets));
		if (!R->targets)
			return -ENOMEM;
		R->targets[0] = o->all ? -1 : R->child;
		R->ntargets = 1;
		return 0;
	}
	char dir[64];
	int r;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)o->pid);
	r = procfs_list_ids(dir, &R->targets, &R->ntargets);
	if (r == -ESRCH || (!r && !R->ntargets)) {
		fprintf(stderr, "kvmprof-agent: no process %d\n", (int)o->pid);
		return -ESRCH;
	}
	if (r)
		fprintf(stderr, "kvmprof-agent: %s: %s\n", dir, strerror(-r));
	return r;
}

/* ---- the file's preamble ---- */

/* What META "command" says was profiled. */
static void describe_target(const struct agent_record_opts *o, char *cmd, size_t len)
{
	size_t n = 0;

	cmd[0] = 0;
	if (o->pid) {
		snprintf(cmd, len, "pid %d", (int)o->pid);
		return;
	}
	for (char **a = o->argv; a && *a && n < len; a++)
		n += (size_t)snprintf(cmd + n, len - n, "%s%s", n ? " " : "", *a);
	if (n >= len)
		n = len - 1; /* a long command line is cut, not overrun */
	if (o->all)
		snprintf(cmd + n, len - n, "%s", n ? " (system-wide)" : "system-wide");
}

static int write_preamble(struct rec *R)
{
	char cmd[1024];
	int r;

	describe_target(R->o, cmd, sizeof(cmd));
	r = emit_meta_system(&R->e);
	if (!r)
		r = kp_writer_meta(R->w, "command", cmd);
	if (!r)
		r = kp_writer_meta(R->w, "pmu", R->pmu);
	for (int i = 0; i < R->nev && !r; i++) {
		struct kp_rec_event ev;

		memset(&ev, 0, sizeof(ev));
		ev.id = (uint32_t)i;
		ev.type = R->ev[i].attr.type;
		ev.config = R->ev[i].attr.config;
		ev.period = R->ev_rate[i];
		ev.flags = R->ev_flags[i];
		memcpy(ev.name, R->ev[i].name, sizeof(ev.name));
		r = kp_writer_add(R->w, KP_REC_EVENT, &ev, sizeof(ev));
	}
	if (!r) {
		bool hidden;
		uint64_t nsyms;

		r = emit_kallsyms(&R->e, &hidden, &nsyms, false);
		if (r == -ENOENT || r == -EACCES) {
			fprintf(stderr, "kvmprof-agent: /proc/kallsyms: %s; kernel samples will not resolve\n",
				strerror(-r));
			r = 0;
		} else if (!r && hidden) {
			fprintf(stderr, "kvmprof-agent: /proc/kallsyms shows only zero addresses (kernel.kptr_restrict or "
					"perf_event_paranoid hide them from this user); kernel samples will not resolve\n");
		}
	}
	return r;
}

/* Processes that run already: -a sees them all, -p its one. A command is born under our eyes. */
static int synthesize(struct rec *R)
{
	if (R->o->all)
		return emit_all_processes(&R->e, 0);
	if (R->o->pid) {
		int r = emit_process(&R->e, R->o->pid, 0);

		return r == -ESRCH ? 0 : r;
	}
	return 0;
}

/* ---- the loop ---- */

static void progress(struct rec *R, bool final)
{
	static bool shown;
	double mb = (double)kp_writer_bytes(R->w) / 1e6;

	if (final) {
		if (shown)
			fprintf(stderr, "\r\033[K"); /* erase the progress line */
		return;
	}
	fprintf(stderr, "\rkvmprof-agent: recording: %" PRIu64 " samples, %" PRIu64 " lost, %.1f MB ",
		kp_writer_samples(R->w), R->conv.lost, mb);
	shown = true;
}

static int pidfd_for(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

struct loop {
	struct rec *R;
	int *child_status;
	bool tty;
	uint64_t last_progress;
	int pidfd; /* -p PID's, when the kernel has pidfds; polled by perf_rings_loop */
};

/* After each drain: the progress line, then whether the target is gone or a signal came. */
static int loop_step(void *ctx, short pidfd_revents, int *next_poll_ms)
{
	struct loop *L = ctx;
	struct rec *R = L->R;

	(void)next_poll_ms;
	if (L->tty && emit_now_ns() - L->last_progress >= 1000000000ull) {
		progress(R, false);
		L->last_progress = emit_now_ns();
	}
	if (R->child > 0) {
		pid_t w = waitpid(R->child, L->child_status, WNOHANG);

		if (w == R->child) {
			R->child = 0;
			forward_to = 0;
			return 1;
		}
	}
	/*
	 * A signal ends the recording at once, with a command too, as perf's
	 * does: a command that ignores it (sh -c 'trap "" INT; ...') or takes
	 * its time would otherwise be recorded until it ends by itself.
	 * stop_command then ends the command.
	 */
	if (stop_signal)
		return 1;
	if (R->child > 0)
		return 0;
	if (R->o->pid && !R->o->all)
		return L->pidfd >= 0 ? (pidfd_revents & POLLIN) != 0 : kill(R->o->pid, 0) && errno == ESRCH;
	return 0;
}

static int record_loop(struct rec *R, int *child_status)
{
	/*
	 * The progress line is for a terminal, and only when nothing else
	 * writes there: a command shares our terminal, and its output would
	 * run into the line (perf record draws none while a command runs).
	 */
	struct loop L = { .R = R, .child_status = child_status,
			  .tty = !R->o->rec.quiet && isatty(2) && R->child <= 0,
			  .last_progress = emit_now_ns(), .pidfd = -1 };
	int r;

	if (R->o->pid && !R->o->all)
		L.pidfd = pidfd_for(R->o->pid);
	r = perf_rings_loop(&R->rs, &R->conv, L.pidfd, POLL_MS, loop_step, &L);
	if (L.pidfd >= 0)
		close(L.pidfd);
	if (L.tty)
		progress(R, true);
	return r;
}

/*
 * The recording is over and the command still runs: it ignored the signal
 * that stopped us, or has not acted on it yet. It gets SIGTERM, as perf
 * sends it, and is waited for; a further SIGINT or SIGTERM while it takes
 * its time (a second Ctrl-C) sends SIGKILL, so no command holds us for
 * good. Those signals are taken with sigwaitinfo meanwhile: one that comes
 * between the check and the wait is not missed. SIGCHLD is blocked too so
 * that its arrival wakes the wait (a blocked signal is queued even when its
 * action is to ignore it).
 */
static void stop_command(struct rec *R, int *status)
{
	sigset_t wake, old;

	forward_to = 0;
	sigemptyset(&wake);
	sigaddset(&wake, SIGINT);
	sigaddset(&wake, SIGTERM);
	sigaddset(&wake, SIGCHLD);
	sigprocmask(SIG_BLOCK, &wake, &old);
	kill(R->child, SIGTERM);
	for (;;) {
		pid_t w = waitpid(R->child, status, WNOHANG);

		if (w == R->child || (w < 0 && errno != EINTR))
			break;
		int sig = sigwaitinfo(&wake, NULL);

		if (sig == SIGINT || sig == SIGTERM)
			kill(R->child, SIGKILL);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	R->child = 0;
}

static void cleanup(struct rec *R)
{
	perf_rings_free(&R->rs);
	free(R->targets);
	emit_fini(&R->e);
	workload_close_fds(&R->wl);
}

/*
 * The output is opened first, so a bad path fails before anything starts;
 * an earlier recording there is moved to FILE.old (as perf record does)
 * when the recording begins, and a start that fails after that (no such
 * command) removes the new file and puts the earlier one back.
 */
static int open_output(struct rec *R)
{
	const char *out = R->o->rec.output ? R->o->rec.output : RECORD_DEFAULT_OUTPUT;

	R->out_name = out;
	if (!strcmp(out, "-")) {
		R->out_fd = 1;
		R->out_name = "standard output";
		return 0;
	}
	R->out_fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (R->out_fd >= 0) {
		R->out_created = true;
		return 0;
	}
	if (errno == EEXIST)
		R->out_fd = open(out, O_WRONLY | O_CLOEXEC);
	if (R->out_fd < 0) {
		fprintf(stderr, "kvmprof-agent: cannot create %s: %s\n", out, strerror(errno));
		return -errno;
	}
	return 0;
}

static int begin_output(struct rec *R)
{
	struct stat st;
	char err[4400];

	/* A regular file is written anew, an earlier recording in it kept as FILE.old; a device or pipe as it is. */
	if (R->out_fd != 1 && !R->out_created && !fstat(R->out_fd, &st) && S_ISREG(st.st_mode)) {
		close(R->out_fd);
		R->out_fd = record_file_create(R->out_name, &R->out_kept_old, err, sizeof(err));
		if (R->out_fd < 0) {
			fprintf(stderr, "kvmprof-agent: %s\n", err);
			return R->out_fd;
		}
		R->out_created = true;
	}
	R->out_begun = true;
	return 0;
}

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

int record_run(const struct agent_record_opts *o)
{
	struct rec R;
	int r, status = 0, ncpus, interrupted = 0;
	bool ok = false;

	memset(&R, 0, sizeof(R));
	R.o = o;
	R.out_fd = -1;
	R.wl.go_fd = R.wl.err_fd = -1;
	stop_signal = 0;
	forward_to = 0;
	if (o->rec.nevents) {
		R.nev = o->rec.nevents;
		memcpy(R.ev, o->rec.events, sizeof(R.ev[0]) * (size_t)o->rec.nevents);
	} else {
		char unk[8], err[64];

		events_parse("cycles", &R.ev[0], unk, sizeof(unk), err, sizeof(err));
		R.nev = 1;
	}
	for (int i = 0; i < R.nev; i++) {
		/* NAME:PERIOD wins, then -c, then -F (default 1000 Hz). */
		uint64_t p = R.ev[i].period ? R.ev[i].period : o->rec.period;

		R.ev_flags[i] = p ? 0 : KP_EVENT_FREQ;
		R.ev_rate[i] = p ? p : (o->rec.freq ? o->rec.freq : RECORD_DEFAULT_HZ);
	}
	ncpus = procfs_online_cpus(R.cpus, MAX_CPUS);
	if (ncpus < 0) {
		fprintf(stderr, "kvmprof-agent: /sys/devices/system/cpu/online: %s\n", strerror(-ncpus));
		return 1;
	}
	R.ncpus = ncpus;
	raise_fd_limit();

	install_signals();
	if (open_output(&R))
		goto out;
	if (o->argv && start_child(&R))
		goto out;
	if (set_targets(&R))
		goto out;
	if (open_events(&R))
		goto out;
	if (begin_output(&R))
		goto out;
	r = kp_writer_open(&R.w, R.out_fd, KP_SOURCE_LINUX_AGENT);
	if (r) {
		fprintf(stderr, "kvmprof-agent: writing %s: %s\n", R.out_name, strerror(-r));
		goto out;
	}
	emit_init(&R.e, R.w);
	R.conv.e = &R.e;
	R.conv.ids = R.rs.ids;
	R.conv.nids = R.rs.nids;
	R.conv.callchain = o->rec.callgraph;
	R.conv.user_stack = o->rec.callgraph == RECORD_CALLGRAPH_DWARF;
	r = write_preamble(&R);
	if (r)
		goto write_error;
	R.t_start = emit_now_ns();
	/* A command's events come on at its exec (enable_on_exec); the others now. */
	if (!(R.child > 0 && R.targets[0] == R.child))
		perf_rings_enable(&R.rs, true);
	r = synthesize(&R);
	if (r)
		goto write_error;
	if (R.child > 0) {
		forward_to = R.child;
		r = release_child(&R);
		if (r == -EINTR) {
			/* Stopped before the command ran: it does not run, the file ends here, whole. */
			workload_close_fds(&R.wl);
			forward_to = 0;
			waitpid(R.child, NULL, 0);
			R.child = 0;
			interrupted = stop_signal;
			fprintf(stderr, "kvmprof-agent: %s before %s started; it was not run\n",
				strsignal(interrupted), o->argv[0]);
		} else if (r) {
			/* Nothing was recorded: leave no half file behind. */
			R.out_created = true;
			goto out_abort;
		}
	}
	R.recording = true;
	r = interrupted ? 0 : record_loop(&R, &status);
	perf_rings_enable(&R.rs, false);
	if (!r)
		r = perf_rings_drain(&R.rs, &R.conv);
	if (r)
		goto write_error;
	uint64_t duration = emit_now_ns() - R.t_start, samples = kp_writer_samples(R.w), bytes;

	r = record_output_close(R.w, &R.out_fd, R.conv.lost, duration, &bytes);
	R.w = NULL;
	if (r)
		goto write_error;
	fprintf(stderr, "kvmprof-agent: %" PRIu64 " samples (%" PRIu64 " lost) in %.1f s, written to %s (%.2f MB)\n",
		samples, R.conv.lost, (double)duration / 1e9, R.out_name, (double)bytes / 1e6);
	ok = true;
	if (R.child > 0 && waitpid(R.child, &status, WNOHANG) == R.child) {
		R.child = 0; /* it died of the signal meanwhile: its status is ours */
	} else if (R.child > 0) {
		stop_command(&R, &status);
		interrupted = stop_signal; /* as if the command had died of it, as perf dies of it */
	}
	goto out;

write_error:
	fprintf(stderr, "kvmprof-agent: writing %s: %s\n", R.out_name, strerror(-r));
out_abort:
	if (R.w)
		kp_writer_abort(R.w);
	R.w = NULL;
out:
	/*
	 * A command we started and no longer follow must not outlive a failed recording. One that
	 * was never released still waits for its go byte: closing the socket ends that wait even
	 * when SIGTERM came so soon after the fork that the agent's own handler, not yet reset in
	 * the child, took it (the child then waited for ever, and record with it).
	 */
	if (R.child > 0) {
		workload_close_fds(&R.wl);
		stop_command(&R, &status);
		ok = false;
	}
	if (R.out_fd > 1)
		close(R.out_fd);
	if (!ok && R.out_created && !R.recording)
		record_file_undo(R.out_name, R.out_kept_old);
	cleanup(&R);
	if (!ok)
		return 1;
	if (interrupted)
		return 128 + interrupted; /* as if the command had died of it */
	return o->argv ? exit_code(status) : 0;
}
