// SPDX-License-Identifier: MIT
/* The VM: KVM setup, guest memory, the in-kernel irqchip and PIT, devices, and the run/stop logic. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "exit_port.h"
#include "kick.h"
#include "reset.h"
#include "vcpu_hooks.h"
#include "vm.h"

#define KVM_TSS_ADDR 0xfffbd000

static int vm_fail(const char *what, int err)
{
	fprintf(stderr, "kvmprof-vmm: %s: %s\n", what, strerror(err));
	return -err;
}

static int vm_open_kvm(struct vm *vm)
{
	static const struct { long cap; const char *name; } required[] = {
		{ KVM_CAP_IRQCHIP, "KVM_CAP_IRQCHIP" },
		{ KVM_CAP_PIT2, "KVM_CAP_PIT2" },
		{ KVM_CAP_USER_MEMORY, "KVM_CAP_USER_MEMORY" },
		{ KVM_CAP_EXT_CPUID, "KVM_CAP_EXT_CPUID" },
		{ KVM_CAP_IMMEDIATE_EXIT, "KVM_CAP_IMMEDIATE_EXIT" },
	};
	int version;

	const char *dev = vm->cfg->kvm_device;

	vm->kvm_fd = open(dev, O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0) {
		int err = errno;
		if (err == ENOENT)
			fprintf(stderr, "kvmprof-vmm: %s does not exist: this host has no KVM "
				"(load kvm-intel or kvm-amd, or enable virtualization)\n", dev);
		else if (err == EACCES || err == EPERM)
			fprintf(stderr, "kvmprof-vmm: %s: permission denied (run as root or join the 'kvm' group)\n", dev);
		else
			fprintf(stderr, "kvmprof-vmm: cannot open %s: %s\n", dev, strerror(err));
		return -err;
	}
	version = ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0);
	if (version < 0) {
		fprintf(stderr, "kvmprof-vmm: %s is not a KVM device\n", dev);
		return -ENOTTY;
	}
	if (version != KVM_API_VERSION) {
		fprintf(stderr, "kvmprof-vmm: %s speaks KVM API %d, expected %d\n", dev, version, KVM_API_VERSION);
		return -ENOTSUP;
	}
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, required[i].cap) <= 0) {
			fprintf(stderr, "kvmprof-vmm: this KVM lacks %s\n", required[i].name);
			return -ENOTSUP;
		}
	}
	vm->run_size = (size_t)ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if ((long)vm->run_size <= 0)
		return vm_fail("KVM_GET_VCPU_MMAP_SIZE", errno);
	/* Optional: without it, registers at an exit cost KVM_GET_REGS and KVM_GET_SREGS. */
	version = ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_SYNC_REGS);
	vm->sync_regs_cap = version > 0 ? (uint32_t)version : 0;
	return 0;
}

static int vm_create_machine(struct vm *vm)
{
	struct kvm_pit_config pit = { .flags = KVM_PIT_SPEAKER_DUMMY };
	struct kvm_userspace_memory_region region = {
		.slot = 0,
		.guest_phys_addr = 0,
		.memory_size = vm->mem.size,
		.userspace_addr = (uint64_t)(uintptr_t)vm->mem.host,
	};

	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (vm->vm_fd < 0)
		return vm_fail("KVM_CREATE_VM", errno);
	if (ioctl(vm->vm_fd, KVM_SET_TSS_ADDR, KVM_TSS_ADDR) < 0)
		return vm_fail("KVM_SET_TSS_ADDR", errno);
	if (ioctl(vm->vm_fd, KVM_CREATE_IRQCHIP, 0) < 0)
		return vm_fail("KVM_CREATE_IRQCHIP", errno);
	if (ioctl(vm->vm_fd, KVM_CREATE_PIT2, &pit) < 0)
		return vm_fail("KVM_CREATE_PIT2", errno);
	if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		return vm_fail("KVM_SET_USER_MEMORY_REGION", errno);
	return 0;
}

/* COM2 goes to a UNIX socket if PATH is one, else to a file created or truncated there. */
static int vm_open_agent_channel(const char *path)
{
	struct stat st;

	if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		struct sockaddr_un addr = { .sun_family = AF_UNIX };
		int fd;

		if (strlen(path) >= sizeof(addr.sun_path)) {
			fprintf(stderr, "kvmprof-vmm: agent channel %s: socket path too long\n", path);
			return -ENAMETOOLONG;
		}
		strcpy(addr.sun_path, path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
			int err = errno;
			fprintf(stderr, "kvmprof-vmm: agent channel %s: cannot connect: %s\n", path, strerror(err));
			if (fd >= 0)
				close(fd);
			return -err;
		}
		return fd;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		int err = errno;
		fprintf(stderr, "kvmprof-vmm: agent channel %s: %s\n", path, strerror(err));
		return -err;
	}
	return fd;
}

static void vm_set_irq(struct vm *vm, uint32_t irq, int level)
{
	struct kvm_irq_level l = { .irq = irq, .level = (uint32_t)level };

	if (ioctl(vm->vm_fd, KVM_IRQ_LINE, &l) < 0)
		fprintf(stderr, "kvmprof-vmm: KVM_IRQ_LINE %u: %s\n", irq, strerror(errno));
}

static void vm_com1_irq(void *ctx, int level)
{
	vm_set_irq(ctx, KVMPROF_COM1_IRQ, level);
}

static void vm_com2_irq(void *ctx, int level)
{
	vm_set_irq(ctx, KVMPROF_COM2_IRQ, level);
}

static int vm_create_devices(struct vm *vm)
{
	const struct vm_config *cfg = vm->cfg;
	int rc;

	vm->console_fd = STDOUT_FILENO;
	if (cfg->console_path) {
		vm->console_fd = open(cfg->console_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (vm->console_fd < 0) {
			int err = errno;
			fprintf(stderr, "kvmprof-vmm: console %s: %s\n", cfg->console_path, strerror(err));
			return -err;
		}
	}
	vm->agent_fd = -1;
	if (cfg->agent_path) {
		vm->agent_fd = vm_open_agent_channel(cfg->agent_path);
		if (vm->agent_fd < 0)
			return vm->agent_fd;
	}
	serial_init(&vm->com1, "COM1", vm->console_fd, vm_com1_irq, vm);
	serial_init(&vm->com2, "COM2", vm->agent_fd, vm_com2_irq, vm);
	rc = serial_register(&vm->com1, &vm->io, KVMPROF_COM1_PORT);
	if (!rc)
		rc = serial_register(&vm->com2, &vm->io, KVMPROF_COM2_PORT);
	if (!rc)
		rc = rtc_init(&vm->rtc, &vm->io);
	if (!rc)
		rc = exit_port_init(&vm->io);
	if (!rc)
		rc = reset_init(&vm->io);
	if (!rc)
		rc = acpi_pm_init(&vm->acpi_pm, &vm->io);
	return rc;
}

int vm_create(struct vm *vm, const struct vm_config *cfg)
{
	int rc;

	vm->cfg = cfg;
	vm->hooks = vm_features;
	vm->kvm_fd = vm->vm_fd = vm->console_fd = vm->agent_fd = -1;
	pthread_mutex_init(&vm->stop_lock, NULL);
	rc = vm_open_kvm(vm);
	if (!rc)
		rc = cpuid_get_supported(vm->kvm_fd, &vm->cpuid);
	if (rc == -ENOMEM || rc == -E2BIG)
		return vm_fail("KVM_GET_SUPPORTED_CPUID", -rc);
	if (!rc)
		rc = vm_create_machine(vm);
	if (!rc)
		rc = vm_create_devices(vm);
	if (!rc)
		rc = vm_hooks_alloc(vm);
	if (!rc)
		rc = vm_hooks_setup(vm);
	for (unsigned int i = 0; !rc && i < cfg->ncpus; i++)
		rc = vcpu_create(vm, i);
	return rc;
}

void vm_destroy(struct vm *vm)
{
	if (vm->ran)
		vm_hooks_print_stats(vm);
	for (unsigned int i = 0; i < KVMPROF_MAX_CPUS; i++)
		vcpu_destroy(&vm->vcpu[i]);
	serial_destroy(&vm->com1);
	serial_destroy(&vm->com2);
	if (vm->agent_fd >= 0)
		close(vm->agent_fd);
	if (vm->console_fd >= 0 && vm->console_fd != STDOUT_FILENO)
		close(vm->console_fd);
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	free(vm->cpuid);
	vm->cpuid = NULL;
	vm_hooks_free(vm);
}

void vm_request_stop(struct vm *vm, int exit_code)
{
	bool first;

	pthread_mutex_lock(&vm->stop_lock);
	first = !vm->stopping;
	if (first) {
		vm->stopping = true;
		vm->exit_code = exit_code;
	}
	pthread_mutex_unlock(&vm->stop_lock);
	if (!first)
		return;
	for (unsigned int i = 0; i < vm->cfg->ncpus; i++)
		vcpu_kick(&vm->vcpu[i]);
	pthread_kill(vm->main_thread, SIGUSR2);
}

bool vm_stopping(struct vm *vm)
{
	return __atomic_load_n(&vm->stopping, __ATOMIC_ACQUIRE);
}

static void vm_wake_handler(int sig)
{
	(void)sig; /* SIGUSR2 is waited for with sigtimedwait; the handler only keeps it from being fatal */
}

int vm_run(struct vm *vm)
{
	struct sigaction sa = { .sa_handler = vm_wake_handler };
	sigset_t wait_set, old;
	struct timespec deadline = { 0 }, now;
	int rc;

	/*
	 * The kick signals (kick.h), blocked here for the vCPU threads to
	 * inherit; the main thread takes SIGINT/SIGTERM/SIGUSR2 synchronously.
	 */
	rc = kick_setup(&old);
	if (rc) {
		fprintf(stderr, "kvmprof-vmm: the vCPU kick signals: %s\n", strerror(-rc));
		return VMM_EXIT_SETUP;
	}
	sigaction(SIGUSR2, &sa, NULL);
	sigemptyset(&wait_set);
	sigaddset(&wait_set, SIGINT);
	sigaddset(&wait_set, SIGTERM);
	sigaddset(&wait_set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &wait_set, NULL);
	vm->main_thread = pthread_self();
	vm->ran = true;

	for (unsigned int i = 0; i < vm->cfg->ncpus; i++) {
		rc = pthread_create(&vm->vcpu[i].thread, NULL, vcpu_thread, &vm->vcpu[i]);
		if (rc) {
			fprintf(stderr, "kvmprof-vmm: cannot start vCPU %u thread: %s\n", i, strerror(rc));
			vm_request_stop(vm, VMM_EXIT_SETUP);
			break;
		}
		vm->vcpu[i].started = true;
	}
	if (vm->control && !vm_stopping(vm)) {
		rc = control_start(vm->control, vm);
		if (rc) {
			fprintf(stderr, "kvmprof-vmm: control socket: cannot start its thread: %s\n", strerror(-rc));
			vm_request_stop(vm, VMM_EXIT_SETUP);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += (time_t)vm->cfg->timeout_s;
	deadline.tv_nsec += (long)((vm->cfg->timeout_s - (double)(time_t)vm->cfg->timeout_s) * 1e9);
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	while (!vm_stopping(vm)) {
		struct timespec left = { 3600, 0 };
		int sig;

		if (vm->cfg->timeout_s > 0) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			left.tv_sec = deadline.tv_sec - now.tv_sec;
			left.tv_nsec = deadline.tv_nsec - now.tv_nsec;
			if (left.tv_nsec < 0) {
				left.tv_sec--;
				left.tv_nsec += 1000000000L;
			}
			if (left.tv_sec < 0) {
				fprintf(stderr, "kvmprof-vmm: guest still running after --timeout %g s: stopped\n",
					vm->cfg->timeout_s);
				vm_request_stop(vm, VMM_EXIT_TIMEOUT);
				break;
			}
		}
		sig = sigtimedwait(&wait_set, NULL, &left);
		if (sig == SIGINT || sig == SIGTERM) {
			fprintf(stderr, "kvmprof-vmm: %s: stopping the guest\n", strsignal(sig));
			vm_request_stop(vm, VMM_EXIT_INTERRUPTED);
		}
	}
	for (unsigned int i = 0; i < vm->cfg->ncpus; i++) {
		if (vm->vcpu[i].started)
			pthread_join(vm->vcpu[i].thread, NULL);
		vm->vcpu[i].started = false;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return vm->exit_code;
}
