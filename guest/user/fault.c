/* SPDX-License-Identifier: MIT */
/*
 * fault <kind>: misbehaves on purpose, for tests of the kernel's defences.
 *   segv     write to address 0                  -> killed, status 139
 *   kernel   read kernel memory (1 MiB)          -> killed, status 139
 *   ud       an invalid opcode other than ud2    -> killed, status 132
 *   div      divide by zero                      -> killed, status 136
 *   gp       privileged instruction (cli)        -> killed, status 139
 *   badptr   system calls with bad pointers and numbers; exits 0 if all
 *            were refused with the right error
 */
#include "libc.h"

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
	} else if (!strcmp(k, "badptr")) {
		long r1 = write(1, (void *)0x100000, 16);        /* kernel memory */
		long r2 = write(1, (void *)0, 16);               /* unmapped */
		long r3 = write(1, (void *)0x7ffffffffff0, 64);  /* non-canonical end */
		long r4 = write(1, (void *)-1L, 2);              /* wraps around */
		long r5 = write(3, "x", 1);                      /* bad fd */
		long r6 = syscall3(12345, 0, 0, 0);              /* bad number */
		long r7 = syscall3(-1, 0, 0, 0);
		int ok = r1 == -GUEST_EFAULT && r2 == -GUEST_EFAULT && r3 == -GUEST_EFAULT &&
			 r4 == -GUEST_EFAULT && r5 == -GUEST_EBADF && r6 == -GUEST_ENOSYS &&
			 r7 == -GUEST_ENOSYS;
		printf("fault: badptr %s (%ld %ld %ld %ld %ld %ld %ld)\n", ok ? "ok" : "FAILED", r1,
		       r2, r3, r4, r5, r6, r7);
		return ok ? 0 : 1;
	} else {
		printf("usage: fault segv|kernel|ud|div|gp|badptr\n");
		return 2;
	}
	printf("fault: %s did not fault\n", k);
	return 1;
}
