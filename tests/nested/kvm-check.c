// SPDX-License-Identifier: MIT
/*
 * kvm-check: prove /dev/kvm works inside the L1 guest without the VMM.
 *
 * Opens /dev/kvm, checks the API version, creates a VM with one vCPU, and
 * runs a few real-mode instructions that OUT 42 (32-bit) to the exit port
 * and HLT. Prints one line "kvm-check: ok ..." or "kvm-check: FAIL ..." and
 * exits 0 or 1. Built static for the L1 initramfs by tests/nested/run.sh.
 *
 * With --hold, a child process keeps the VM open after a successful check,
 * so KVM's usage count never drops to zero while L1 runs: the VMM's runs then
 * do not each enable and disable SVM on every CPU (an IPI to every CPU; once,
 * under TCG, L1 wedged in kvm_destroy_vm waiting for one).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

static void hold_vm_open(void)
{
	pid_t pid = fork();

	if (pid != 0)
		return; /* parent (or fork failure): report and exit */
	setsid();
	close(0);
	close(1);
	close(2);
	for (;;)
		pause();
}

#include "kvmprof/platform.h"

#define FAIL(...) do { printf("kvm-check: FAIL " __VA_ARGS__); printf(" (%s)\n", strerror(errno)); return 1; } while (0)

int main(int argc, char **argv)
{
	int hold = argc > 1 && strcmp(argv[1], "--hold") == 0;
	/* mov $42, %eax ; out %eax, $0xf4 ; hlt   (16-bit code: 66 prefix) */
	static const unsigned char code[] = {
		0x66, 0xb8, 42, 0, 0, 0, 0x66, 0xe7, KVMPROF_EXIT_PORT, 0xf4,
	};
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		FAIL("open /dev/kvm");
	int api = ioctl(kvm, KVM_GET_API_VERSION, 0);
	if (api != KVM_API_VERSION)
		FAIL("KVM_GET_API_VERSION = %d", api);
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0)
		FAIL("KVM_CREATE_VM");
	int irqchip = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_IRQCHIP);
	if (ioctl(vm, KVM_CREATE_IRQCHIP, 0) < 0)
		FAIL("KVM_CREATE_IRQCHIP");
	size_t memsz = 0x10000;
	unsigned char *mem = mmap(NULL, memsz, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		FAIL("mmap");
	memcpy(mem + 0x1000, code, sizeof(code));
	struct kvm_userspace_memory_region region = {
		.slot = 0, .guest_phys_addr = 0, .memory_size = memsz,
		.userspace_addr = (unsigned long)mem,
	};
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		FAIL("KVM_SET_USER_MEMORY_REGION");
	int vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	if (vcpu < 0)
		FAIL("KVM_CREATE_VCPU");
	int runsz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (runsz <= 0)
		FAIL("KVM_GET_VCPU_MMAP_SIZE");
	struct kvm_run *run = mmap(NULL, (size_t)runsz, PROT_READ | PROT_WRITE,
				   MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED)
		FAIL("mmap kvm_run");
	struct kvm_sregs sregs;
	if (ioctl(vcpu, KVM_GET_SREGS, &sregs) < 0)
		FAIL("KVM_GET_SREGS");
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (ioctl(vcpu, KVM_SET_SREGS, &sregs) < 0)
		FAIL("KVM_SET_SREGS");
	struct kvm_regs regs = { .rip = 0x1000, .rflags = 2 };
	if (ioctl(vcpu, KVM_SET_REGS, &regs) < 0)
		FAIL("KVM_SET_REGS");
	for (int i = 0; i < 16; i++) {
		if (ioctl(vcpu, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			FAIL("KVM_RUN");
		}
		if (run->exit_reason == KVM_EXIT_IO && run->io.port == KVMPROF_EXIT_PORT &&
		    run->io.direction == KVM_EXIT_IO_OUT) {
			unsigned int v = 0;
			memcpy(&v, (unsigned char *)run + run->io.data_offset, run->io.size);
			if (run->io.size != 4 || v != 42) {
				errno = 0;
				FAIL("OUT size %u value %u, want 4 and 42", run->io.size, v);
			}
			printf("kvm-check: ok api=%d irqchip=%d guest OUT 42 to port 0x%x seen%s\n",
			       api, irqchip, KVMPROF_EXIT_PORT, hold ? ", VM held open" : "");
			fflush(stdout);
			if (hold)
				hold_vm_open();
			return 0;
		}
		errno = 0;
		FAIL("unexpected exit_reason %u", run->exit_reason);
	}
	errno = 0;
	FAIL("no exit after 16 KVM_RUN calls");
}
