/* SPDX-License-Identifier: MIT */
/*
 * System-call ABI of the kvmprof bundled guest, shared by the kernel
 * (guest/kernel) and the user library (guest/user/lib).
 *
 * The system-call instruction is `ud2` (0x0f 0x0b): SYSCALL/SYSRET and
 * `int n` do not work from ring 3 on the paravirtual KVM this project runs
 * on, but the #UD exception does. The kernel recognises a #UD raised by a
 * ud2 in user mode as a system call, and returns past it (RIP + 2).
 *
 *   rax = number, rdi/rsi/rdx = arguments 1..3, result in rax
 *   every other register is preserved; errors are -GUEST_Exxx values.
 *
 * To add a system call: give it the next number here, bump SYS_COUNT,
 * add its handler to the table in guest/kernel/syscall.c and a wrapper in
 * guest/user/lib/libc.c.
 */
#ifndef GUEST_SYSCALL_H
#define GUEST_SYSCALL_H

#define SYS_write 1  /* write(fd 1|2, buf, len) -> bytes written */
#define SYS_exit 2   /* exit(status): never returns */
#define SYS_getpid 3 /* getpid() -> pid (1, 2, ...) */
#define SYS_yield 4  /* yield() -> 0 */
#define SYS_sleep 5  /* sleep(milliseconds) -> 0; 4 ms granularity */
#define SYS_clock 6  /* clock() -> nanoseconds since boot (monotonic) */
#define SYS_COUNT 7  /* one more than the highest number */

/* Error numbers (returned negated), Linux values. */
#define GUEST_EBADF 9
#define GUEST_EFAULT 14
#define GUEST_EINVAL 22
#define GUEST_ENOSYS 38

/* User address space: programs link at 0x40000000, stack ends at 0x7fff0000. */
#define GUEST_USER_BASE 0x40000000UL
#define GUEST_USER_END 0x80000000UL
#define GUEST_USER_STACK_TOP 0x7fff0000UL
#define GUEST_USER_STACK_SIZE 0x10000UL

#endif
