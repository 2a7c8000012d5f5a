/* SPDX-License-Identifier: MIT */
/*
 * Test-only system calls for `pmutest`: raw RDMSR, WRMSR and RDPMC from
 * ring 0 (a #GP comes back as -EIO instead of an oops) and a loop of port writes,
 * to measure VM exits. They answer -ENOSYS unless the kernel command line
 * enables them (pmutest, see main.c).
 */
#include "kernel.h"

/* Port 0x80, the POST diagnostic port: a write nothing claims, so each is a bare VM exit. */
#define PORTIO_PORT 0x80
#define PORTIO_MAX 1000000UL

int pmu_test_enabled;

/* Returns v from the system call (tf is the handler's trap frame). */
#define RET(v)                                   \
	do {                                     \
		tf->rax = (uint64_t)(long)(v);   \
		return;                          \
	} while (0)

void sys_pmu_test_rdmsr(struct cpu *c, struct trapframe *tf)
{
	uint64_t v;
	if (!pmu_test_enabled)
		RET(-GUEST_ENOSYS);
	if (!user_range_ok(c->cur, tf->rsi, 8))
		RET(-GUEST_EFAULT);
	int r = msr_read_safe((uint32_t)tf->rdi, &v);
	if (r == 0)
		*(uint64_t *)tf->rsi = v;
	RET(r);
}

void sys_pmu_test_wrmsr(struct cpu *c, struct trapframe *tf)
{
	(void)c;
	if (!pmu_test_enabled)
		RET(-GUEST_ENOSYS);
	RET(msr_write_safe((uint32_t)tf->rdi, tf->rsi));
}

void sys_pmu_test_rdpmc(struct cpu *c, struct trapframe *tf)
{
	uint64_t v;
	if (!pmu_test_enabled)
		RET(-GUEST_ENOSYS);
	if (!user_range_ok(c->cur, tf->rsi, 8))
		RET(-GUEST_EFAULT);
	int r = rdpmc_safe((uint32_t)tf->rdi, &v);
	if (r == 0)
		*(uint64_t *)tf->rsi = v;
	RET(r);
}

void sys_pmu_test_portio(struct cpu *c, struct trapframe *tf)
{
	(void)c;
	if (!pmu_test_enabled)
		RET(-GUEST_ENOSYS);
	if (tf->rdi > PORTIO_MAX)
		RET(-GUEST_EINVAL);
	for (uint64_t i = tf->rdi; i; i--)
		outb(PORTIO_PORT, 0);
	RET(0);
}
