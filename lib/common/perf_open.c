/* SPDX-License-Identifier: MIT */
#include "common/perf_open.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int perf_open(const struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd)
{
	/* The kernel does not write the attr back except its size on E2BIG; a copy keeps callers' const. */
	struct perf_event_attr a = *attr;
	long fd = syscall(SYS_perf_event_open, &a, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : (int)fd;
}

int perf_open_signal_thread(int fd, pid_t tid, int signo)
{
	struct f_owner_ex owner = { F_OWNER_TID, tid };

	if (fcntl(fd, F_SETOWN_EX, &owner) < 0 || fcntl(fd, F_SETSIG, signo) < 0 ||
	    fcntl(fd, F_SETFL, O_ASYNC) < 0)
		return -errno;
	return 0;
}

bool perf_attr_is_hardware(const struct perf_event_attr *attr)
{
	return attr->type != PERF_TYPE_SOFTWARE && attr->type != PERF_TYPE_TRACEPOINT;
}

bool perf_open_no_pmu(const struct perf_event_attr *attr, int err)
{
	/*
	 * ENOENT: no such event on this PMU (or no PMU); EOPNOTSUPP: sampling
	 * not supported (a counting-only vPMU); ENODEV/ENXIO: no PMU device.
	 */
	return perf_attr_is_hardware(attr) &&
	       (err == ENOENT || err == EOPNOTSUPP || err == ENODEV || err == ENXIO);
}

int perf_open_probe_pmu(char *why, size_t len)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_HARDWARE,
		.config = PERF_COUNT_HW_INSTRUCTIONS,
		.exclude_kernel = 1,
		.exclude_hv = 1,
	};
	int fd = perf_open(&attr, 0, -1, -1);

	if (fd < 0) {
		snprintf(why, len, "the host cannot count hardware events: it has no hardware PMU perf can use "
			 "(perf_event_open of instructions failed: %s)", strerror(-fd));
		return fd;
	}
	close(fd);
	return 0;
}

void perf_open_describe_pmu(char *buf, size_t len, bool hardware, const char *event, int err)
{
	if (err)
		snprintf(buf, len, "none (perf_event_open %s: %s); cpu-clock fallback", event, strerror(err));
	else
		snprintf(buf, len, "%s", hardware ? "hardware" : "software events only");
}

void perf_attr_track_tasks(struct perf_event_attr *attr)
{
	attr->mmap = 1;
	attr->mmap2 = 1;
	attr->comm = 1;
	attr->comm_exec = 1;
	attr->task = 1;
}
