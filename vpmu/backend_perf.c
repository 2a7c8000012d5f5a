// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend_perf.h"
#include "backends.h"
#include "common/perf_open.h"

/* A sampling event whose period is so long it never fires: PERF_EVENT_IOC_PERIOD needs a sampling event. */
#define PERIOD_NEVER (1ULL << 62)

void vpmu_perf_backend_init(struct vpmu_perf_backend *b, int signo)
{
	memset(b, 0, sizeof(*b));
	for (unsigned int i = 0; i < VPMU_MAX_COUNTERS; i++)
		b->fd[i] = -1;
	b->signo = signo;
}

static int perf_open_counter(struct vpmu_vcpu *v, unsigned int idx, const struct vpmu_event *ev,
			     uint32_t type, uint64_t config)
{
	struct vpmu_perf_backend *b = v->backend;
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = type,
		.config = config,
		.sample_period = PERIOD_NEVER,
		.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
		.exclude_user = !ev->count_user,
		.exclude_kernel = !ev->count_kernel,
		.exclude_hv = 1,
		.wakeup_events = 1,
	};
	int fd = perf_open(&attr, 0, -1, -1);

	if (fd < 0)
		return fd;
	if (b->signo) {
		int rc = perf_open_signal_thread(fd, (pid_t)syscall(SYS_gettid), b->signo);

		if (rc) {
			close(fd);
			return rc;
		}
	}
	b->fd[idx] = fd;
	b->time_enabled[idx] = b->time_running[idx] = 0;
	return 0;
}

static int perf_program(struct vpmu_vcpu *v, unsigned int idx, const struct vpmu_event *ev)
{
	return perf_open_counter(v, idx, ev, ev->type, ev->config);
}

static int clock_program(struct vpmu_vcpu *v, unsigned int idx, const struct vpmu_event *ev)
{
	if (!ev->is_cycles)
		return -EOPNOTSUPP;
	return perf_open_counter(v, idx, ev, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
}

static void perf_fold_times(struct vpmu_vcpu *v, unsigned int idx)
{
	struct vpmu_perf_backend *b = v->backend;

	v->stats.time_enabled_ns += b->time_enabled[idx];
	v->stats.time_running_ns += b->time_running[idx];
	b->time_enabled[idx] = b->time_running[idx] = 0;
}

static void perf_release(struct vpmu_vcpu *v, unsigned int idx)
{
	struct vpmu_perf_backend *b = v->backend;

	if (b->fd[idx] >= 0)
		close(b->fd[idx]);
	b->fd[idx] = -1;
	perf_fold_times(v, idx);
}

static int perf_read(struct vpmu_vcpu *v, uint64_t raw[VPMU_MAX_COUNTERS])
{
	struct vpmu_perf_backend *b = v->backend;

	for (unsigned int i = 0; i < VPMU_MAX_COUNTERS; i++) {
		uint64_t val[3];

		raw[i] = 0;
		if (b->fd[i] < 0)
			continue;
		if (read(b->fd[i], val, sizeof(val)) != (ssize_t)sizeof(val))
			return -EIO;
		raw[i] = val[0];
		b->time_enabled[i] = val[1];
		b->time_running[i] = val[2];
	}
	return 0;
}

static void perf_arm(struct vpmu_vcpu *v, unsigned int idx, uint64_t events)
{
	struct vpmu_perf_backend *b = v->backend;
	uint64_t period = events ? events : PERIOD_NEVER;

	if (b->fd[idx] >= 0 && b->signo)
		ioctl(b->fd[idx], PERF_EVENT_IOC_PERIOD, &period);
}

const struct vpmu_backend_ops vpmu_perf_ops = {
	.name = "emulated",
	.program = perf_program,
	.release = perf_release,
	.read = perf_read,
	.arm = perf_arm,
};

const struct vpmu_backend_ops vpmu_clock_ops = {
	.name = "clock",
	.program = clock_program,
	.release = perf_release,
	.read = perf_read,
	.arm = perf_arm,
};

void vpmu_perf_backend_stats(struct vpmu_vcpu *v)
{
	for (unsigned int i = 0; i < VPMU_MAX_COUNTERS; i++)
		perf_fold_times(v, i);
}

int vpmu_perf_probe(char reason[VPMU_ERR_MAX])
{
	return perf_open_probe_pmu(reason, VPMU_ERR_MAX);
}

static void perf_state_init(void *state, int signo)
{
	vpmu_perf_backend_init(state, signo);
}

static const struct vpmu_perf_backend *perf_times(const void *state)
{
	return state;
}

const struct vpmu_backend_desc vpmu_backend_emulated = {
	.choice = VPMU_BACKEND_EMULATED,
	.what = "emulated backend",
	.probe = vpmu_perf_probe,
	.unavailable = "",
	.instead = "--vpmu-backend=clock counts cycles from time",
	.auto_pick = true,
	.ops = &vpmu_perf_ops,
	.state_size = sizeof(struct vpmu_perf_backend),
	.state_init = perf_state_init,
	.times = perf_times,
};

const struct vpmu_backend_desc vpmu_backend_clock = {
	.choice = VPMU_BACKEND_CLOCK,
	.what = "clock backend (cycles = vCPU thread run time at 1 GHz, other events read 0)",
	.ops = &vpmu_clock_ops,
	.state_size = sizeof(struct vpmu_perf_backend),
	.state_init = perf_state_init,
	.times = perf_times,
};
