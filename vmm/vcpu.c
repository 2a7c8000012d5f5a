// SPDX-License-Identifier: MIT
/* vCPUs: creation, boot register state, and the run loop that acts on each exit's outcome (vcpu_exit.c). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "kick.h"
#include "vcpu_exit.h"
#include "vcpu_hooks.h"
#include "vm.h"

#define X86_CR0_PE 0x1ULL
#define X86_CR0_ET 0x10ULL
#define X86_CR0_NE 0x20ULL
#define X86_CR0_PG 0x80000000ULL
#define X86_CR4_PAE 0x20ULL
#define EFER_LME 0x100ULL
#define EFER_LMA 0x400ULL

static struct kvm_segment flat_segment(uint16_t selector, uint8_t type, bool code64)
{
	return (struct kvm_segment){
		.base = 0,
		.limit = 0xffffffff,
		.selector = selector,
		.type = type,
		.present = 1,
		.dpl = 0,
		.db = code64 ? 0 : 1,
		.s = 1,
		.l = code64 ? 1 : 0,
		.g = 1,
	};
}

static int vcpu_set_boot_state(struct vcpu *vcpu)
{
	const struct boot_entry *e = &vcpu->vm->entry;
	struct kvm_sregs sregs;
	struct kvm_regs regs = { .rflags = 0x2, .rip = e->rip };
	bool long_mode = e->mode == BOOT_LINUX64;

	if (ioctl(vcpu->fd, KVM_GET_SREGS, &sregs) < 0)
		return -errno;
	sregs.cs = flat_segment(long_mode ? 0x10 : 0x08, 0xb, long_mode);
	sregs.ds = sregs.es = sregs.fs = sregs.gs = sregs.ss = flat_segment(long_mode ? 0x18 : 0x10, 0x3, false);
	sregs.tr = (struct kvm_segment){ .limit = 0x67, .type = 0xb, .present = 1 };
	sregs.cr0 = X86_CR0_PE | X86_CR0_ET;
	sregs.cr4 = 0;
	sregs.efer = 0;
	if (long_mode) {
		sregs.gdt.base = KVMPROF_GDT_ADDR;
		sregs.gdt.limit = 4 * 8 - 1;
		sregs.cr0 |= X86_CR0_NE | X86_CR0_PG;
		sregs.cr3 = KVMPROF_PML4_ADDR;
		sregs.cr4 = X86_CR4_PAE;
		sregs.efer = EFER_LME | EFER_LMA;
		regs.rsi = e->arg;
	} else {
		regs.rbx = e->arg;
	}
	if (ioctl(vcpu->fd, KVM_SET_SREGS, &sregs) < 0 || ioctl(vcpu->fd, KVM_SET_REGS, &regs) < 0)
		return -errno;
	return 0;
}

int vcpu_create(struct vm *vm, unsigned int id)
{
	struct vcpu *vcpu = &vm->vcpu[id];
	size_t cpuid_size = sizeof(*vm->cpuid) + vm->cpuid->nent * sizeof(vm->cpuid->entries[0]);
	struct kvm_cpuid2 *cpuid;
	int rc = 0;

	vcpu->vm = vm;
	vcpu->id = id;
	vcpu->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, id);
	if (vcpu->fd < 0) {
		rc = -errno;
		fprintf(stderr, "kvmprof-vmm: KVM_CREATE_VCPU %u: %s\n", id, strerror(-rc));
		return rc;
	}
	vcpu->run = mmap(NULL, vm->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu->fd, 0);
	if (vcpu->run == MAP_FAILED) {
		vcpu->run = NULL;
		rc = -errno;
		fprintf(stderr, "kvmprof-vmm: mmap of vCPU %u run area: %s\n", id, strerror(-rc));
		return rc;
	}
	cpuid = malloc(cpuid_size);
	if (!cpuid)
		return -ENOMEM;
	memcpy(cpuid, vm->cpuid, cpuid_size);
	cpuid_adjust_for_vcpu(cpuid, id, vm->cfg->ncpus);
	cpuid = vm_hooks_cpuid(vm, cpuid);
	if (!cpuid)
		return -ENOMEM;
	rc = vcpu_hooks_alloc(vcpu);
	if (!rc)
		rc = vcpu_hooks_init(vcpu);
	if (rc) {
		free(cpuid);
		return rc;
	}
	if (ioctl(vcpu->fd, KVM_SET_CPUID2, cpuid) < 0)
		rc = -errno;
	free(cpuid);
	if (rc) {
		fprintf(stderr, "kvmprof-vmm: KVM_SET_CPUID2 on vCPU %u: %s\n", id, strerror(-rc));
		return rc;
	}
	/* Only the BSP starts running; the others wait for INIT/SIPI from the guest. */
	if (id == 0) {
		rc = vcpu_set_boot_state(vcpu);
		if (rc)
			fprintf(stderr, "kvmprof-vmm: setting boot registers: %s\n", strerror(-rc));
	}
	return rc;
}

void vcpu_destroy(struct vcpu *vcpu)
{
	if (vcpu->vm) { /* a vCPU never created has no features to tear down */
		vcpu_hooks_destroy(vcpu);
		vcpu_hooks_free(vcpu);
	}
	vcpu_exit_timer_destroy(vcpu);
	if (vcpu->run)
		munmap(vcpu->run, vcpu->vm->run_size);
	vcpu->run = NULL;
	if (vcpu->vm && vcpu->fd > 0)
		close(vcpu->fd);
	vcpu->fd = -1;
}

void vcpu_kick(struct vcpu *vcpu)
{
	if (!vcpu->run)
		return;
	/*
	 * The signal ends a KVM_RUN in progress or, pending, makes the next one
	 * return (kick.h); immediate_exit covers a thread that does not run
	 * yet and stops the exact backend's emulator.
	 */
	__atomic_store_n(&vcpu->run->immediate_exit, 1, __ATOMIC_RELEASE);
	if (vcpu->started)
		pthread_kill(vcpu->thread, KICK_SIGNO);
}

static const char *exit_reason_name(uint32_t reason)
{
	static const char *const names[] = {
		[KVM_EXIT_UNKNOWN] = "UNKNOWN", [KVM_EXIT_EXCEPTION] = "EXCEPTION",
		[KVM_EXIT_IO] = "IO", [KVM_EXIT_HYPERCALL] = "HYPERCALL", [KVM_EXIT_DEBUG] = "DEBUG",
		[KVM_EXIT_HLT] = "HLT", [KVM_EXIT_MMIO] = "MMIO", [KVM_EXIT_IRQ_WINDOW_OPEN] = "IRQ_WINDOW_OPEN",
		[KVM_EXIT_SHUTDOWN] = "SHUTDOWN (triple fault)", [KVM_EXIT_FAIL_ENTRY] = "FAIL_ENTRY",
		[KVM_EXIT_INTR] = "INTR", [KVM_EXIT_SET_TPR] = "SET_TPR", [KVM_EXIT_TPR_ACCESS] = "TPR_ACCESS",
		[KVM_EXIT_NMI] = "NMI", [KVM_EXIT_INTERNAL_ERROR] = "INTERNAL_ERROR",
		[KVM_EXIT_SYSTEM_EVENT] = "SYSTEM_EVENT", [KVM_EXIT_X86_RDMSR] = "X86_RDMSR",
		[KVM_EXIT_X86_WRMSR] = "X86_WRMSR",
	};

	if (reason < sizeof(names) / sizeof(names[0]) && names[reason])
		return names[reason];
	return "unrecognized";
}

void vcpu_dump_state(struct vcpu *vcpu)
{
	struct kvm_regs r;
	struct kvm_sregs s;

	if (ioctl(vcpu->fd, KVM_GET_REGS, &r) < 0 || ioctl(vcpu->fd, KVM_GET_SREGS, &s) < 0) {
		fprintf(stderr, "  (registers unavailable: %s)\n", strerror(errno));
		return;
	}
	fprintf(stderr,
		"  rip %016llx  rsp %016llx  rflags %08llx  cpl %u  cs %04x (%s)\n"
		"  rax %016llx  rbx %016llx  rcx %016llx  rdx %016llx\n"
		"  rsi %016llx  rdi %016llx  rbp %016llx\n"
		"  r8  %016llx  r9  %016llx  r10 %016llx  r11 %016llx\n"
		"  r12 %016llx  r13 %016llx  r14 %016llx  r15 %016llx\n"
		"  cr0 %016llx  cr2 %016llx  cr3 %016llx  cr4 %016llx  efer %llx\n",
		r.rip, r.rsp, r.rflags, s.cs.dpl, s.cs.selector,
		s.cs.l ? "64-bit" : s.cs.db ? "32-bit" : (s.cr0 & 1) ? "16-bit" : "real mode",
		r.rax, r.rbx, r.rcx, r.rdx, r.rsi, r.rdi, r.rbp,
		r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15,
		s.cr0, s.cr2, s.cr3, s.cr4, s.efer);
}

/* Says why the guest cannot go on, what KVM reported with the exit, and where the vCPU was. */
static void vcpu_report_crash(struct vcpu *vcpu, const char *what)
{
	struct kvm_run *run = vcpu->run;

	fprintf(stderr, "kvmprof-vmm: vCPU %u: %s (exit reason %u, %s)\n", vcpu->id, what,
		run->exit_reason, exit_reason_name(run->exit_reason));
	if (run->exit_reason == KVM_EXIT_INTERNAL_ERROR) {
		fprintf(stderr, "  suberror %u%s", run->internal.suberror,
			run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION ? " (instruction emulation failed)" : "");
		for (uint32_t i = 0; i < run->internal.ndata && i < 16; i++)
			fprintf(stderr, " %llx", (unsigned long long)run->internal.data[i]);
		fputc('\n', stderr);
	} else if (run->exit_reason == KVM_EXIT_FAIL_ENTRY) {
		fprintf(stderr, "  hardware entry failure reason 0x%llx\n",
			(unsigned long long)run->fail_entry.hardware_entry_failure_reason);
	}
	vcpu_dump_state(vcpu);
}

/* Guest RIP and CPL at an exit, for the vm_exit event: from KVM's synced registers when the sampler has them on. */
static void vcpu_exit_rip_cpl(struct vcpu *vcpu, uint64_t *rip, uint64_t *cpl)
{
	struct kvm_regs r;
	struct kvm_sregs s;
	const struct kvm_regs *regs;
	const struct kvm_sregs *sregs;

	*rip = *cpl = 0;
	if (!vcpu_exit_regs(vcpu, &r, &s, &regs, &sregs))
		return;
	*rip = regs->rip;
	*cpl = vcpu_cpl(sregs);
}

/* The vm_exit event: its RIP and CPL cost two ioctls unless KVM synced the registers. */
static void vcpu_trace_exit(struct vcpu *vcpu)
{
	uint64_t rip, cpl;

	if (!TRACE_ON(vm_exit))
		return;
	vcpu_exit_rip_cpl(vcpu, &rip, &cpl);
	TRACE(vm_exit, vcpu->run->exit_reason, rip, cpl);
}

/*
 * Before an entry: KVM copies into kvm_run, at each exit, the register sets
 * someone wants there (vcpu->sync_regs: the guest sampler while it
 * samples; and whoever listens to vm_exit, whose RIP and CPL would
 * otherwise cost KVM_GET_REGS and KVM_GET_SREGS at every exit, ~10 us
 * here). Only this thread writes kvm_valid_regs, so after an exit it says
 * whether the copy in kvm_run is this exit's.
 */
static void vcpu_sync_regs(struct vcpu *vcpu)
{
	uint32_t want = __atomic_load_n(&vcpu->sync_regs, __ATOMIC_RELAXED);

	if (TRACE_ON(vm_exit))
		want |= vcpu->vm->sync_regs_cap & (KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS);

	if (__builtin_expect(vcpu->run->kvm_valid_regs != want, 0))
		vcpu->run->kvm_valid_regs = want;
}

/*
 * After a run (err: its errno, or 0): the kicks that ended it are taken
 * (kick.h; an emulator slice of the exact backend may have had some come
 * in too); immediate_exit asks for one return, so it is reset unless the
 * VM stops; then the events: vm_exit first, so that what the subscribers of
 * vm_run_end (the guest sampler, --vpmu-trace-pmi) and the vPMU make of
 * this exit follows it in a trace.
 */
static void vcpu_run_ended(struct vcpu *vcpu, bool kvm_ran, int err)
{
	struct kvm_run *run = vcpu->run;

	vcpu->kicks = err == EINTR || !kvm_ran ? kick_drain() : 0;
	if (__atomic_load_n(&run->immediate_exit, __ATOMIC_RELAXED) && !vm_stopping(vcpu->vm))
		__atomic_store_n(&run->immediate_exit, 0, __ATOMIC_RELAXED);
	if (kvm_ran)
		vcpu_trace_exit(vcpu);
	TRACE(vm_run_end, kvm_ran ? run->exit_reason : 0, (uint64_t)err, !kvm_ran);
}

/* Carries out an exit's outcome; false when this vCPU must stop running. */
static bool vcpu_act(struct vcpu *vcpu, struct vcpu_outcome o)
{
	switch (o.action) {
	case VCPU_CONTINUE:
		return true;
	case VCPU_STOP:
		if (o.reason)
			fprintf(stderr, "kvmprof-vmm: %s\n", o.reason);
		vm_request_stop(vcpu->vm, o.status);
		return false;
	case VCPU_CRASH:
	default:
		vcpu_report_crash(vcpu, o.reason);
		vm_request_stop(vcpu->vm, VMM_EXIT_GUEST_CRASH);
		return false;
	}
}

void *vcpu_thread(void *arg)
{
	struct vcpu *vcpu = arg;
	struct vm *vm = vcpu->vm;
	char name[16];

	long sipi_wait_ns = 50000;
	int rc;

	snprintf(name, sizeof(name), "vcpu%u", vcpu->id);
	pthread_setname_np(pthread_self(), name);
	/* The host profiler opens its perf events on this thread id (control socket "vcpus"). */
	__atomic_store_n(&vcpu->tid, gettid(), __ATOMIC_RELEASE);
	/* TRACE_MAX_CTX leaves room for every vCPU: this cannot fail. */
	trace_ctx_register(&vcpu->trace_ctx, (uint16_t)vcpu->id, vcpu->run, vcpu);
	TRACE(vcpu_start);
	rc = kick_vcpu_init(vcpu);
	if (rc) {
		fprintf(stderr, "kvmprof-vmm: vCPU %u: KVM_SET_SIGNAL_MASK: %s\n", vcpu->id, strerror(-rc));
		vm_request_stop(vm, VMM_EXIT_SETUP);
	}
	while (!vm_stopping(vm)) {
		bool kvm_ran = true;
		int err;

		vcpu_exit_timer_reset(vcpu);
		vcpu_hooks_before_run(vcpu);
		vcpu_exit_timer_arm(vcpu);
		vcpu_sync_regs(vcpu);
		TRACE(vm_entry);
		/* A feature may run the vCPU itself (the exact backend's engine, and KVM in steps). */
		if (!vcpu_hooks_run(vcpu, &rc, &kvm_ran))
			rc = ioctl(vcpu->fd, KVM_RUN, 0);
		err = rc < 0 ? errno : 0;
		vcpu_run_ended(vcpu, kvm_ran, err);
		vcpu_hooks_after_run(vcpu);
		if (!kvm_ran)
			continue; /* the emulator stopped (a slice's end, an overflow): no exit to handle */
		if (rc < 0) {
			if (err == EINTR) {
				vcpu_hooks_after_exit(vcpu);
				continue;
			}
			if (err == EAGAIN) {
				/*
				 * The PVM host returns EAGAIN while an AP waits for its SIPI
				 * instead of blocking: poll, backing off so that an AP the
				 * guest never starts costs next to nothing.
				 */
				struct timespec ts = { 0, sipi_wait_ns };
				nanosleep(&ts, NULL);
				if (sipi_wait_ns < 2000000)
					sipi_wait_ns *= 2;
				continue;
			}
			fprintf(stderr, "kvmprof-vmm: vCPU %u: KVM_RUN: %s\n", vcpu->id, strerror(err));
			vcpu_dump_state(vcpu);
			vm_request_stop(vm, VMM_EXIT_GUEST_CRASH);
			break;
		}
		if (!vcpu_act(vcpu, vcpu_handle_exit(vcpu)))
			break;
		if (vcpu->run->exit_reason != KVM_EXIT_DEBUG)
			vcpu_hooks_after_exit(vcpu);
	}
	TRACE(vcpu_stop);
	trace_ctx_unregister(&vcpu->trace_ctx);
	return NULL;
}
