/* SPDX-License-Identifier: MIT */
/*
 * What can be split by domain, and how:
 *
 *  - hardware events, where a PMU exists: two counters per VMM thread, one
 *    with exclude_guest (host: VMM user + host kernel, split again by
 *    exclude_user/exclude_kernel) and one with exclude_host (guest);
 *  - software events (cpu-clock, task-clock: all there is on a host without
 *    a PMU, like the PVM hosts here): they count the thread's run time and
 *    ignore exclude_guest/exclude_host, so they give a total per thread only;
 *  - the time split comes from the kernel's per-thread accounting in
 *    /proc/PID/task/TID/stat: utime, stime and guest_time (in clock ticks;
 *    guest_time is part of utime on KVM). When the kernel accounts no guest
 *    time (it is 0 for every vCPU thread), the split says so instead of
 *    pretending the guest never ran;
 *  - vpmu-stats gives the VM exits in the interval, and exit-stats (where
 *    the VMM has it) the exits by reason with the host time they took.
 */
#include "stat.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collection/emit.h"
#include "common/perf_open.h"
#include "collection/procfs.h"
#include "stat_exits.h"
#include "stat/stat_format.h"
#include "vm_client.h"
#include "vm_target.h"

#define MAX_THREADS 256

enum { PART_ALL, PART_HOST_USER, PART_HOST_KERNEL, PART_GUEST, NR_PARTS };

struct counter {
	int fd[NR_PARTS]; /* -1: not opened */
};

struct thread {
	pid_t tid;
	char comm[32];
	uint64_t utime0, stime0, gtime0, utime1, stime1, gtime1;
	bool gone;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static long long vm_exits(struct vm_client *vm)
{
	json_object *reply;
	char err[256];
	long long v = -1;

	if (vm_client_simple(vm, "vpmu-stats", &reply, err, sizeof(err)))
		return -1;
	if (vm_client_int(reply, "vm_exits", 0, INT64_MAX, &v))
		v = -1;
	json_object_put(reply);
	return v;
}

static int open_counter(const struct events_event *ev, pid_t tid, int part)
{
	struct perf_event_attr a = ev->attr;

	a.size = sizeof(a);
	a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	a.disabled = 1;
	a.exclude_guest = part == PART_HOST_USER || part == PART_HOST_KERNEL;
	a.exclude_host = part == PART_GUEST;
	if (part == PART_HOST_USER)
		a.exclude_kernel = 1;
	if (part == PART_HOST_KERNEL)
		a.exclude_user = 1;
	return perf_open(&a, tid, -1, -1);
}

/* The count, scaled for multiplexing, and the ns it was enabled and running; -1 when unreadable. */
static double read_counter(int fd, double *enabled, double *running)
{
	uint64_t v[3];

	if (fd < 0 || read(fd, v, sizeof(v)) != sizeof(v))
		return -1;
	*enabled = (double)v[1];
	*running = (double)v[2];
	if (v[2] && v[2] < v[1])
		return (double)v[0] * (double)v[1] / (double)v[2];
	return (double)v[0];
}

/* One column of the per-thread table, as the totals above print it: msec for a clock, separators. */
static void print_count(FILE *f, double v, bool clock, bool big_num)
{
	char buf[64] = "-";

	if (v >= 0)
		stat_format_number(buf, sizeof(buf), clock ? v / 1e6 : v, clock ? 2 : 0, big_num);
	fprintf(f, " %16s", buf);
}

/* The note under an event the host cannot split by domain (hardware events where it can have columns instead). */
static const char *split_note(const struct events_event *ev)
{
	return perf_attr_is_hardware(&ev->attr) ? "exclude_guest/exclude_host refused here: no guest/host split"
						: "a software event counts run time in every mode: no guest/host split";
}

int host_stat_run(const struct host_stat_opts *o)
{
	static struct events_event evs[STAT_MAX_EVENTS];
	static struct counter cnt[STAT_MAX_EVENTS][MAX_THREADS];
	static struct thread th[MAX_THREADS];
	static struct stat_event_result res[STAT_MAX_EVENTS];
	static double sums[STAT_MAX_EVENTS][MAX_THREADS][NR_PARTS];
	bool supported[STAT_MAX_EVENTS] = { false }, split[STAT_MAX_EVENTS] = { false };
	struct stat_output out = { .sep = o->stat.sep, .big_num = !o->stat.no_big_num, .runs = 1 };
	char title[1024];
	FILE *f = stdout;
	struct vm_target target;
	struct vm_client *vm;
	static struct stat_exits exits_by_reason;
	char dir[64];
	long long pid, exits0 = -1, exits1 = -1;
	pid_t *tids = NULL;
	size_t ntids = 0;
	int nev = o->stat.nevents, status = 1;
	uint64_t t0, t1, end, hz = (uint64_t)sysconf(_SC_CLK_TCK);
	bool vm_gone = false, guest_accounted = false;
	struct sigaction sa = { .sa_handler = on_signal };

	if (vm_target_open(&target, &o->target, o->connect, NULL))
		return 1;
	pid = target.pid;
	/* kvmprof-vmm's own figures: its vPMU's exit count and exits by reason. */
	vm = vm_target_vmm_client(&target);
	if (nev) {
		memcpy(evs, o->stat.events, sizeof(evs[0]) * (size_t)nev);
	} else {
		char unk[8], e[64];

		events_parse("task-clock", &evs[0], unk, sizeof(unk), e, sizeof(e));
		nev = 1;
	}
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	if (procfs_list_ids(dir, &tids, &ntids) || !ntids) {
		fprintf(stderr, "kvmprof: %s pid %lld: no threads to count\n", target.vmm, pid);
		goto out;
	}
	if (ntids > MAX_THREADS)
		ntids = MAX_THREADS;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	for (int e = 0; e < nev; e++) {
		bool hw = perf_attr_is_hardware(&evs[e].attr);

		for (size_t t = 0; t < ntids; t++) {
			for (int part = 0; part < NR_PARTS; part++)
				cnt[e][t].fd[part] = -1;
			cnt[e][t].fd[PART_ALL] = open_counter(&evs[e], tids[t], PART_ALL);
			if (cnt[e][t].fd[PART_ALL] >= 0)
				supported[e] = true;
			/* Only hardware counters can tell guest from host mode. */
			if (hw && cnt[e][t].fd[PART_ALL] >= 0)
				for (int part = PART_HOST_USER; part < NR_PARTS; part++) {
					cnt[e][t].fd[part] = open_counter(&evs[e], tids[t], part);
					split[e] |= cnt[e][t].fd[part] >= 0;
				}
		}
	}
	for (size_t t = 0; t < ntids; t++) {
		th[t].tid = tids[t];
		if (procfs_read_comm((pid_t)pid, tids[t], th[t].comm, sizeof(th[t].comm)))
			snprintf(th[t].comm, sizeof(th[t].comm), "?");
		th[t].gone = procfs_cpu_times((pid_t)pid, tids[t], &th[t].utime0, &th[t].stime0, &th[t].gtime0) != 0;
	}
	if (vm) {
		stat_exits_start(&exits_by_reason, vm);
		exits0 = vm_exits(vm);
	}
	t0 = emit_now_ns();
	for (int e = 0; e < nev; e++)
		for (size_t t = 0; t < ntids; t++)
			for (int part = 0; part < NR_PARTS; part++)
				if (cnt[e][t].fd[part] >= 0)
					ioctl(cnt[e][t].fd[part], PERF_EVENT_IOC_ENABLE, 0);
	end = o->duration > 0 ? t0 + (uint64_t)(o->duration * 1e9) : 0;
	while (!stop_signal && (!end || emit_now_ns() < end)) {
		struct pollfd pfd = { .fd = target.poll_fd, .events = POLLIN };

		if (poll(&pfd, 1, 100) > 0 && target.ops->gone(&target, pfd.revents)) {
			fprintf(stderr, "kvmprof: the VM went away (%s); counts up to now\n",
				vm ? "control socket closed" : "QEMU exited");
			vm_gone = true;
			break;
		}
	}
	t1 = emit_now_ns();
	for (size_t t = 0; t < ntids; t++)
		if (procfs_cpu_times((pid_t)pid, tids[t], &th[t].utime1, &th[t].stime1, &th[t].gtime1))
			th[t].gone = true;
	exits1 = vm_gone || !vm ? -1 : vm_exits(vm);

	if (o->stat.output && !(f = fopen(o->stat.output, "w"))) {
		fprintf(stderr, "kvmprof: cannot create %s: %s\n", o->stat.output, strerror(errno));
		goto out;
	}
	/* Each counter once: the table below shows per thread what the totals above add up. */
	memset(res, 0, sizeof(res));
	for (int e = 0; e < nev; e++) {
		memcpy(res[e].name, evs[e].name, sizeof(res[e].name));
		res[e].type = evs[e].attr.type;
		res[e].config = evs[e].attr.config;
		res[e].state = supported[e] ? STAT_COUNTED : STAT_NOT_SUPPORTED;
		if (supported[e] && !split[e])
			res[e].note = split_note(&evs[e]);
		for (size_t t = 0; t < ntids; t++)
			for (int part = 0; part < NR_PARTS; part++) {
				double enabled, running;

				sums[e][t][part] = read_counter(cnt[e][t].fd[part], &enabled, &running);
				if (part == PART_ALL && sums[e][t][part] >= 0) {
					res[e].value.mean += sums[e][t][part];
					res[e].enabled += enabled;
					res[e].running += running;
				}
			}
		res[e].value.n = 1;
	}
	snprintf(title, sizeof(title), "%s pid %lld, %zu threads)", target.label, pid, ntids);
	out.f = f;
	out.target = title;
	stat_spread_add(&out.elapsed_ns, (double)(t1 - t0));
	stat_format_print(&out, res, nev);
	if (o->stat.sep) {
		/* CSV: the counts alone, for a program to read. */
		status = 0;
		goto out;
	}
	for (int e = 0; e < nev; e++) {
		double sum[NR_PARTS] = { 0 };

		if (!supported[e])
			continue;
		bool clock = events_is_clock(evs[e].attr.type, evs[e].attr.config);

		fprintf(f, "%-24s %-16s %16s", evs[e].name, "thread", clock ? "msec" : "total");
		if (split[e])
			fprintf(f, " %16s %16s %16s", "VMM user", "host kernel", "guest");
		fprintf(f, "\n");
		for (size_t t = 0; t < ntids; t++) {
			char name[48];

			snprintf(name, sizeof(name), "%s/%d", th[t].comm, (int)th[t].tid);
			fprintf(f, "%-24s %-16s", "", name);
			for (int part = 0; part < (split[e] ? NR_PARTS : 1); part++) {
				double v = sums[e][t][part];

				print_count(f, v, clock, out.big_num);
				if (v > 0)
					sum[part] += v;
			}
			fprintf(f, "\n");
		}
		fprintf(f, "%-24s %-16s", "", "all threads");
		for (int part = 0; part < (split[e] ? NR_PARTS : 1); part++)
			print_count(f, sum[part], clock, out.big_num);
		fprintf(f, "\n\n");
	}

	/* The kernel's accounting: ticks of user, system and guest time per thread. */
	{
		uint64_t u = 0, s = 0, g = 0;

		for (size_t t = 0; t < ntids; t++) {
			if (th[t].gone)
				continue;
			u += th[t].utime1 - th[t].utime0;
			s += th[t].stime1 - th[t].stime0;
			g += th[t].gtime1 - th[t].gtime0;
		}
		guest_accounted = g > 0;
		fprintf(f, "time by domain (the kernel's per-thread accounting, /proc/%lld/task/*/stat, %" PRIu64
		       " ticks/s):\n", pid, hz);
		if (guest_accounted) {
			fprintf(f, "  %-12s %8.2f s\n", "guest", (double)g / (double)hz);
			fprintf(f, "  %-12s %8.2f s\n", "VMM user", (double)(u > g ? u - g : 0) / (double)hz);
		} else {
			fprintf(f, "  %-12s %8.2f s   (the kernel accounts no guest time on this host: guest time is in here)\n",
			       "user", (double)u / (double)hz);
		}
		fprintf(f, "  %-12s %8.2f s\n", "host kernel", (double)s / (double)hz);
	}
	if (exits0 >= 0 && exits1 >= exits0)
		fprintf(f, "VM exits: %lld (vpmu-stats), %.0f per second\n", exits1 - exits0,
		       (double)(exits1 - exits0) / ((double)(t1 - t0) / 1e9));
	if (vm)
		stat_exits_print(f, &exits_by_reason, vm, vm_gone, t1 - t0);
	else
		fprintf(f, "VM exits: not counted for a QEMU domain (kvmprof-vmm counts them; for QEMU see perf kvm stat)\n");
	status = 0;
out:
	for (int e = 0; e < nev; e++)
		for (size_t t = 0; t < ntids; t++)
			for (int part = 0; part < NR_PARTS; part++)
				if (cnt[e][t].fd[part] > 0)
					close(cnt[e][t].fd[part]);
	free(tids);
	if (f != stdout && fclose(f)) {
		fprintf(stderr, "kvmprof: writing %s: %s\n", o->stat.output, strerror(errno));
		status = 1;
	}
	vm_target_close(&target);
	return status;
}
