// SPDX-License-Identifier: MIT
/*
 * The debug-feature probe of the engine (engine_probe.h). Each test
 * runs a few instructions in a VM of its own: flat 64-bit, one 2 MiB
 * identity page, a GDT with ring-0 and ring-3 code. Every path of the
 * guest code ends in an exit (OUT to port 0xf0), so a feature that does not
 * work is seen as that exit instead of a debug exit.
 */
#include "engine_probe.h"

#include <errno.h>
#include <linux/kvm.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vm.h"

#define PROBE_MEM (2u << 20)
#define KERN_RIP 0x10000u
#define USER_RIP 0x20000u
#define PROBE_PORT 0xf0

struct probe_vm {
	int fd, vcpu;
	uint8_t *mem;
	struct kvm_run *run;
	size_t run_size;
};

static void probe_vm_close(struct probe_vm *v)
{
	if (v->run && v->run != MAP_FAILED)
		munmap(v->run, v->run_size);
	if (v->mem && v->mem != MAP_FAILED)
		munmap(v->mem, PROBE_MEM);
	if (v->vcpu >= 0)
		close(v->vcpu);
	if (v->fd >= 0)
		close(v->fd);
}

/*
 * Ring 0 at KERN_RIP: four NOPs, then OUT. Ring 3 is reached through an
 * IRETQ from KERN_RIP + 0x100 (IOPL 3): OUT (the start, seen as an exit),
 * four NOPs, OUT.
 */
static int probe_vm_open(int kvm_fd, struct kvm_cpuid2 *cpuid, struct probe_vm *v)
{
	static const uint8_t kern[] = { 0x90, 0x90, 0x90, 0x90, 0xe6, PROBE_PORT, 0xeb, 0xfe };
	/* push 0x23; push 0x100000; push 0x3002; push 0x1b; push USER_RIP; iretq */
	static const uint8_t to_user[] = { 0x6a, 0x23, 0x68, 0x00, 0x00, 0x10, 0x00, 0x68, 0x02, 0x30, 0x00,
					   0x00, 0x6a, 0x1b, 0x68, 0x00, 0x00, 0x02, 0x00, 0x48, 0xcf };
	static const uint8_t user[] = { 0xe6, PROBE_PORT, 0x90, 0x90, 0x90, 0x90, 0xe6, PROBE_PORT, 0xeb, 0xfe };
	struct kvm_userspace_memory_region r = { .slot = 0, .memory_size = PROBE_MEM };
	struct kvm_segment seg = { .limit = 0xffffffff, .selector = 0x8, .present = 1, .type = 11, .s = 1, .l = 1, .g = 1 };
	struct kvm_sregs s;
	uint64_t *pt;
	int sz;

	memset(v, 0, sizeof(*v));
	v->fd = v->vcpu = -1;
	v->fd = ioctl(kvm_fd, KVM_CREATE_VM, 0);
	if (v->fd < 0)
		return -errno;
	v->mem = mmap(NULL, PROBE_MEM, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (v->mem == MAP_FAILED)
		return -ENOMEM;
	r.userspace_addr = (uint64_t)(uintptr_t)v->mem;
	if (ioctl(v->fd, KVM_SET_USER_MEMORY_REGION, &r) < 0)
		return -errno;
	v->vcpu = ioctl(v->fd, KVM_CREATE_VCPU, 0);
	sz = ioctl(kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (v->vcpu < 0 || sz <= 0 || ioctl(v->vcpu, KVM_SET_CPUID2, cpuid) < 0)
		return -EIO;
	v->run_size = (size_t)sz;
	v->run = mmap(NULL, v->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, v->vcpu, 0);
	if (v->run == MAP_FAILED)
		return -ENOMEM;
	pt = (uint64_t *)(v->mem + 0x1000); /* PML4 at 0x1000, PDPT 0x2000, PD 0x3000 */
	pt[0] = 0x2000 | 7;
	pt[512] = 0x3000 | 7;
	pt[1024] = 0x87; /* 2 MiB at 0: present, writable, user, large */
	pt = (uint64_t *)(v->mem + 0x5000); /* GDT */
	pt[1] = 0x00209a0000000000ULL;      /* 0x08 ring-0 code */
	pt[2] = 0x0000920000000000ULL;      /* 0x10 ring-0 data */
	pt[3] = 0x0020fa0000000000ULL;      /* 0x1b ring-3 code */
	pt[4] = 0x0000f20000000000ULL;      /* 0x23 ring-3 data */
	memcpy(v->mem + KERN_RIP, kern, sizeof(kern));
	memcpy(v->mem + KERN_RIP + 0x100, to_user, sizeof(to_user));
	memcpy(v->mem + USER_RIP, user, sizeof(user));
	if (ioctl(v->vcpu, KVM_GET_SREGS, &s) < 0)
		return -errno;
	s.cs = seg;
	seg.type = 3;
	seg.selector = 0x10;
	seg.l = 0;
	seg.db = 1;
	s.ds = s.es = s.fs = s.gs = s.ss = seg;
	s.gdt.base = 0x5000;
	s.gdt.limit = 5 * 8 - 1;
	s.cr3 = 0x1000;
	s.cr4 = 0x20;          /* PAE */
	s.cr0 = 0x80050033ULL; /* PG, WP, NE, ET, MP, PE */
	s.efer = 0x500;        /* LMA, LME */
	return ioctl(v->vcpu, KVM_SET_SREGS, &s) < 0 ? -errno : 0;
}

/* Runs to the first exit that is not a signal's: its reason, or -1. */
static int probe_run(struct probe_vm *v)
{
	for (int i = 0; i < 16; i++) {
		if (ioctl(v->vcpu, KVM_RUN, 0) == 0)
			return (int)v->run->exit_reason;
		if (errno != EINTR && errno != EAGAIN)
			return -1;
	}
	return -1;
}

/*
 * One test: the vCPU starts in ring `ring` at the first NOP, with debug
 * control ctl and, if bp, a breakpoint at the third NOP. True if it came
 * back with a debug exit where the feature says it should.
 */
static bool probe_one(int kvm_fd, struct kvm_cpuid2 *cpuid, int ring, uint32_t ctl, bool bp)
{
	struct kvm_guest_debug dbg = { .control = ctl };
	struct kvm_regs regs = { .rflags = 2, .rsp = 0x100000 };
	struct probe_vm v;
	uint64_t first = ring ? USER_RIP + 2 : KERN_RIP, want;
	bool ok = false;

	if (probe_vm_open(kvm_fd, cpuid, &v))
		goto out;
	regs.rip = ring ? KERN_RIP + 0x100 : KERN_RIP;
	if (ioctl(v.vcpu, KVM_SET_REGS, &regs) < 0)
		goto out;
	if (ring) {
		/* To ring 3, up to its first OUT, which KVM then completes without running on. */
		if (probe_run(&v) != KVM_EXIT_IO || v.run->io.port != PROBE_PORT)
			goto out;
		v.run->immediate_exit = 1;
		ioctl(v.vcpu, KVM_RUN, 0);
		v.run->immediate_exit = 0;
		if (ioctl(v.vcpu, KVM_GET_REGS, &regs) < 0 || regs.rip != first)
			goto out;
	}
	if (bp) {
		dbg.arch.debugreg[0] = first + 2;
		dbg.arch.debugreg[7] = 1; /* L0, execution */
	}
	if (ioctl(v.vcpu, KVM_SET_GUEST_DEBUG, &dbg) < 0)
		goto out;
	want = bp ? first + 2 : first + 1;
	ok = probe_run(&v) == KVM_EXIT_DEBUG && v.run->debug.arch.pc == want;
out:
	probe_vm_close(&v);
	return ok;
}

/* Whether an available TSS given with KVM_SET_SREGS reads back busy. */
static bool probe_tr_busy_reported(int kvm_fd, struct kvm_cpuid2 *cpuid)
{
	struct probe_vm v;
	struct kvm_sregs s;
	bool busy = false;

	if (probe_vm_open(kvm_fd, cpuid, &v) || ioctl(v.vcpu, KVM_GET_SREGS, &s) < 0)
		goto out;
	s.tr = (struct kvm_segment){ .base = 0x6000, .limit = 0x67, .selector = 0x28, .type = 9, .present = 1 };
	if (ioctl(v.vcpu, KVM_SET_SREGS, &s) < 0 || ioctl(v.vcpu, KVM_GET_SREGS, &s) < 0)
		goto out;
	busy = s.tr.type == 11;
out:
	probe_vm_close(&v);
	return busy;
}

void engine_probe_debug(int kvm_fd, struct engine_debug_caps *caps)
{
	struct kvm_cpuid2 *cpuid = NULL;
	int flags;

	/* Unknown: what the code was first written for (the PVM hosts). */
	*caps = (struct engine_debug_caps){ .hw_bp = { true, false } };
	flags = ioctl(kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_SET_GUEST_DEBUG2);
	caps->blockirq = flags > 0 && (flags & KVM_GUESTDBG_BLOCKIRQ);
	if (cpuid_get_supported(kvm_fd, &cpuid))
		return;
	for (int ring = 0; ring < 2; ring++) {
		caps->hw_bp[ring] =
			probe_one(kvm_fd, cpuid, ring * 3, KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_USE_HW_BP, true);
		caps->single_step[ring] =
			probe_one(kvm_fd, cpuid, ring * 3, KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP, false);
	}
	caps->tr_busy_reported = probe_tr_busy_reported(kvm_fd, cpuid);
	caps->probed = true;
	free(cpuid);
}
