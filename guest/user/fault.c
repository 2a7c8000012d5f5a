/* SPDX-License-Identifier: MIT */
/*
 * fault <kind>: misbehaves on purpose, for tests of the kernel's defences.
 *   segv     write to address 0                  -> killed, status 139
 *   kernel   read kernel memory (1 MiB)          -> killed, status 139
 *   ud       an invalid opcode other than ud2    -> killed, status 132
 *   div      divide by zero                      -> killed, status 136
 *   gp       privileged instruction (cli)        -> killed, status 139
 *   com2 [N] N KiB (256) of pseudo-random bytes to the agent channel (COM2):
 *            the VMM must take them as data and carry on; exits 0
 *   badptr   system calls with bad pointers, numbers, pids and flags (the
 *            agent's too); exits 0 if all were refused with the right error
 */
#include "libc.h"

/*
 * A string that runs into the unmapped page above the stack: the last bytes
 * of the stack (argv's strings, no longer needed) without a NUL.
 */
static const char *unterminated_at_stack_top(void)
{
	char *s = (char *)GUEST_USER_STACK_TOP - 8;
	memset(s, 'x', 8);
	return s;
}

int main(int argc, char **argv)
{
	const char *k = argc > 1 ? argv[1] : "";
	if (!strcmp(k, "segv")) {
		*(volatile int *)0 = 1;
	} else if (!strcmp(k, "kernel")) {
		printf("read %d\n", *(volatile int *)0x100000);
	} else if (!strcmp(k, "ud")) {
		__asm__ volatile(".byte 0x0f, 0xff"); /* ud0 */
	} else if (!strcmp(k, "div")) {
		unsigned long q = 100, z = 0;
		__asm__ volatile("xor %%edx, %%edx; div %1" : "+a"(q) : "r"(z) : "rdx");
		printf("%lu\n", q);
	} else if (!strcmp(k, "gp")) {
		__asm__ volatile("cli");
	} else if (!strcmp(k, "com2")) {
		static unsigned char junk[4096];
		long kib = atol_def(argc > 2 ? argv[2] : NULL, 256);
		uint32_t x = 0x2f8;
		for (long i = 0; i < kib / 4; i++) {
			for (size_t j = 0; j < sizeof(junk); j++) {
				x = x * 1103515245u + 12345u;
				junk[j] = (unsigned char)(x >> 23);
			}
			if (write(GUEST_FD_AGENT, junk, sizeof(junk)) != (long)sizeof(junk)) {
				printf("fault: com2 write failed\n");
				return 1;
			}
		}
		printf("fault: com2 wrote %ld KiB\n", kib / 4 * 4);
		return 0;
	} else if (!strcmp(k, "badptr")) {
		long r1 = write(1, (void *)0x100000, 16);        /* kernel memory */
		long r2 = write(1, (void *)0, 16);               /* unmapped */
		long r3 = write(1, (void *)0x7ffffffffff0, 64);  /* non-canonical end */
		long r4 = write(1, (void *)-1L, 2);              /* wraps around */
		long r5 = write(4, "x", 1);                      /* bad fd */
		long r6 = syscall3(12345, 0, 0, 0);              /* bad number */
		long r7 = syscall3(-1, 0, 0, 0);
		/* the agent's calls: every pointer checked, strings page by page */
		struct proc_info pi;
		int st;
		long a[] = {
			write(GUEST_FD_AGENT, (void *)0x100000, 16),
			spawn((const char *)0x100000, NULL),
			spawn("/bin/exit", (const char *)0x7ffffffffff0),
			spawn(unterminated_at_stack_top(), NULL),
			waitpid(1, (int *)0x100000, 0),
			proc_list((struct proc_info *)0x100000, 1),
			proc_list((struct proc_info *)(GUEST_USER_STACK_TOP - 8), 1),
			pmu_all_start((const struct pmu_event *)0x100000, 1000000, 0),
			pmu_all_stop((struct pmu_all_stats *)0x100000),
			pmu_all_read((struct pmu_record *)0x100000, 10),
			pmu_all_read((struct pmu_record *)&pi, 1L << 40),
		};
		long nf = sizeof(a) / sizeof(a[0]);
		long rn = spawn("/bin/nope", NULL), rw = waitpid(999, &st, WAIT_NOHANG);
		long rf = waitpid(1, &st, 7), rl = proc_list(&pi, 1);
		int ok = r1 == -GUEST_EFAULT && r2 == -GUEST_EFAULT && r3 == -GUEST_EFAULT &&
			 r4 == -GUEST_EFAULT && r5 == -GUEST_EBADF && r6 == -GUEST_ENOSYS &&
			 r7 == -GUEST_ENOSYS && rn == -GUEST_ENOENT && rw == -GUEST_ESRCH &&
			 rf == -GUEST_EINVAL && rl == 1 && pi.pid == 0 && !strcmp(pi.path, "/kernel.elf");
		for (long i = 0; i < nf; i++)
			ok &= a[i] == -GUEST_EFAULT;
		char line[512];
		size_t n = (size_t)snprintf(line, sizeof(line),
					    "fault: badptr %s (%ld %ld %ld %ld %ld %ld %ld; %ld %ld %ld %ld",
					    ok ? "ok" : "FAILED", r1, r2, r3, r4, r5, r6, r7, rn, rw, rf, rl);
		for (long i = 0; i < nf && n < sizeof(line); i++)
			n += (size_t)snprintf(line + n, sizeof(line) - n, " %ld", a[i]);
		printf("%s)\n", line);
		return ok ? 0 : 1;
	} else {
		printf("usage: fault segv|kernel|ud|div|gp|com2 [KiB]|badptr\n");
		return 2;
	}
	printf("fault: %s did not fault\n", k);
	return 1;
}
