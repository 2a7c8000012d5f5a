/* SPDX-License-Identifier: MIT */
/*
 * System calls (`ud2` from user mode, see guest/include/guest/syscall.h).
 * Every user pointer is checked against the caller's mapped regions.
 */
#include <guest/syscall.h>

#include "kernel.h"

typedef void (*syscall_fn)(struct cpu *c, struct trapframe *tf);

static void sys_write(struct cpu *c, struct trapframe *tf)
{
	uint64_t fd = tf->rdi, buf = tf->rsi, len = tf->rdx;
	if (fd != 1 && fd != 2 && fd != GUEST_FD_AGENT) {
		tf->rax = (uint64_t)-GUEST_EBADF;
		return;
	}
	if (len > 65536)
		len = 65536;
	if (!user_range_ok(c->cur, buf, len)) {
		tf->rax = (uint64_t)-GUEST_EFAULT;
		return;
	}
	/* mapped: c runs on its CR3 */
	if (fd == GUEST_FD_AGENT)
		agent_write((const void *)buf, len);
	else
		console_write((const char *)buf, len);
	tf->rax = len;
}

static void sys_exit(struct cpu *c, struct trapframe *tf)
{
	sched_exit(c, (int)tf->rdi);
}

static void sys_getpid(struct cpu *c, struct trapframe *tf)
{
	tf->rax = (uint64_t)c->cur->pid;
}

static void sys_yield(struct cpu *c, struct trapframe *tf)
{
	tf->rax = 0;
	sched_yield(c, tf);
}

static void sys_sleep(struct cpu *c, struct trapframe *tf)
{
	uint64_t ms = tf->rdi;
	tf->rax = 0;
	if (ms > 1000000000UL)
		ms = 1000000000UL;
	if (ms == 0)
		sched_yield(c, tf);
	else
		sched_sleep(c, tf, ms * 1000000UL);
}

static void sys_clock(struct cpu *c, struct trapframe *tf)
{
	(void)c;
	tf->rax = clock_ns();
}

static const syscall_fn syscalls[SYS_COUNT] = {
	[SYS_write] = sys_write,
	[SYS_exit] = sys_exit,
	[SYS_getpid] = sys_getpid,
	[SYS_yield] = sys_yield,
	[SYS_sleep] = sys_sleep,
	[SYS_clock] = sys_clock,
	[SYS_pmu_info] = sys_pmu_info,
	[SYS_pmu_open] = sys_pmu_open,
	[SYS_pmu_start] = sys_pmu_start,
	[SYS_pmu_stop] = sys_pmu_stop,
	[SYS_pmu_read] = sys_pmu_read,
	[SYS_pmu_close] = sys_pmu_close,
	[SYS_pmu_sample_start] = sys_pmu_sample_start,
	[SYS_pmu_sample_stop] = sys_pmu_sample_stop,
	[SYS_pmu_samples] = sys_pmu_samples,
	[SYS_pmu_test_rdmsr] = sys_pmu_test_rdmsr,
	[SYS_pmu_test_wrmsr] = sys_pmu_test_wrmsr,
	[SYS_pmu_test_portio] = sys_pmu_test_portio,
	[SYS_spawn] = sys_spawn,
	[SYS_waitpid] = sys_waitpid,
	[SYS_proc_list] = sys_proc_list,
	[SYS_pmu_all_start] = sys_pmu_all_start,
	[SYS_pmu_all_stop] = sys_pmu_all_stop,
	[SYS_pmu_all_read] = sys_pmu_all_read,
	[SYS_pmu_all_read_buf] = sys_pmu_all_read_buf,
	[SYS_pmu_test_rdpmc] = sys_pmu_test_rdpmc,
};

void syscall_dispatch(struct cpu *c, struct trapframe *tf)
{
	uint64_t nr = tf->rax;
	tf->rip += 2; /* past the ud2 */
	if (nr >= SYS_COUNT || !syscalls[nr]) {
		tf->rax = (uint64_t)-GUEST_ENOSYS;
		return;
	}
	syscalls[nr](c, tf);
}
