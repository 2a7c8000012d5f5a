/* SPDX-License-Identifier: MIT */
/*
 * Process system calls for the agent: spawn, waitpid, proc_list (see
 * guest/include/guest/syscall.h). User strings are copied byte by byte,
 * each page checked against the caller's regions before it is read.
 */
#include "kernel.h"

#define MAX_SPAWN_ARGS 14 /* argv[0] is the path; the stack takes 15 */

#define RET(v)                                 \
	do {                                   \
		tf->rax = (uint64_t)(long)(v); \
		return;                        \
	} while (0)

/* Copies a NUL-terminated user string into dst[max]: 0, -EFAULT or -E2BIG. */
static int user_string(const struct proc *p, uint64_t src, char *dst, size_t max)
{
	for (size_t i = 0; i < max; i++) {
		/* regions are whole pages: one check per page */
		if ((i == 0 || ((src + i) & (PAGE_SIZE - 1)) == 0) && !user_range_ok(p, src + i, 1))
			return -GUEST_EFAULT;
		dst[i] = *(const char *)(src + i);
		if (!dst[i])
			return 0;
	}
	return -GUEST_E2BIG;
}

void sys_spawn(struct cpu *c, struct trapframe *tf)
{
	char path[PROC_PATH_MAX], args[PROC_ARGS_MAX];
	char *argv[MAX_SPAWN_ARGS + 2];
	int argc = 0, r;
	const void *image;
	size_t size;

	if ((r = user_string(c->cur, tf->rdi, path, sizeof(path))))
		RET(r);
	args[0] = '\0';
	if (tf->rsi && (r = user_string(c->cur, tf->rsi, args, sizeof(args))))
		RET(r);
	argv[argc++] = path;
	for (char *s = args; *s;) {
		if (*s == ' ') {
			*s++ = '\0';
			continue;
		}
		if (argc == MAX_SPAWN_ARGS + 1)
			RET(-GUEST_E2BIG);
		argv[argc++] = s;
		while (*s && *s != ' ')
			s++;
	}
	argv[argc] = NULL;
	if (initrd_find(path, &image, &size))
		RET(-GUEST_ENOENT);
	int pid = proc_spawn(path, argc, argv);
	RET(pid > 0 ? pid : -GUEST_ENOEXEC);
}

void sys_waitpid(struct cpu *c, struct trapframe *tf)
{
	int pid = (int)tf->rdi, status = 0;
	if (tf->rdx & ~(uint64_t)WAIT_NOHANG)
		RET(-GUEST_EINVAL);
	if (tf->rsi && !user_range_ok(c->cur, tf->rsi, sizeof(int)))
		RET(-GUEST_EFAULT);
	int r = proc_wait(pid, &status);
	if (r < 0)
		RET(r);
	if (r == 1) {
		if (tf->rsi)
			*(int *)tf->rsi = status;
		RET(pid);
	}
	if (tf->rdx & WAIT_NOHANG)
		RET(0);
	/*
	 * Still running: sleep one tick and run the same `ud2` again (rax still
	 * holds the number), so waiting needs no wait queue.
	 */
	tf->rip -= 2;
	sched_sleep(c, tf, TICK_NS);
}

void sys_proc_list(struct cpu *c, struct trapframe *tf)
{
	uint64_t max = tf->rsi;
	if (max > PROC_HISTORY + 1)
		max = PROC_HISTORY + 1;
	if (!user_range_ok(c->cur, tf->rdi, max * sizeof(struct proc_info)))
		RET(-GUEST_EFAULT);
	RET(proc_list((struct proc_info *)tf->rdi, (int)max));
}
