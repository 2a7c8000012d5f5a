// SPDX-License-Identifier: MIT
/*
 * l2-exit: power a Linux guest of kvmprof-vmm off with a status.
 *
 * Usage: l2-exit STATUS [WIDTH]
 * Does a WIDTH-byte OUT (4 by default: the VMM's contract is a 32-bit OUT of
 * the status to port 0xf4, KVMPROF_EXIT_PORT) from user space after ioperm().
 * The Debian cloud kernel has no /dev/port (CONFIG_DEVPORT is not set), so
 * `dd of=/dev/port` cannot do it, and without ACPI `poweroff -f` only halts.
 * If the OUT returns (no VMM listening), it prints a message and exits 1.
 * Built static (glibc) by tests/nested/run.sh for the L2 initramfs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/io.h>

#include "kvmprof/platform.h"

int main(int argc, char **argv)
{
	unsigned long status = argc > 1 ? strtoul(argv[1], NULL, 0) : 0;
	int width = argc > 2 ? atoi(argv[2]) : 4;

	if (ioperm(KVMPROF_EXIT_PORT, 4, 1) != 0 && iopl(3) != 0) {
		perror("l2-exit: ioperm/iopl");
		return 1;
	}
	if (width == 1)
		outb((unsigned char)status, KVMPROF_EXIT_PORT);
	else if (width == 2)
		outw((unsigned short)status, KVMPROF_EXIT_PORT);
	else
		outl((unsigned int)status, KVMPROF_EXIT_PORT);
	fprintf(stderr, "l2-exit: OUT %d byte(s) of %lu to port 0x%x returned\n",
		width, status, KVMPROF_EXIT_PORT);
	return 1;
}
