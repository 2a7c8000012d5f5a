// SPDX-License-Identifier: MIT
/*
 * --vpmu-trace-pmi N, --vpmu-trace-tick N: the ring-0 instructions and VM
 * exits one PMI (one timer tick) costs the guest, measured by
 * single-stepping its handler (see pmi_trace.h). Only for measurements:
 * every step is a VM exit, so a traced handler takes ~10^3 times longer
 * than an untraced one, and only the first N are traced.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "pmi_trace.h"
#include "vcpu_hooks.h"
#include "guest_idt.h"
#include "guest_walk.h"
#include "vm.h"

/* A PMI handler that runs this long has lost its way: stop stepping. */
#define PMI_TRACE_STEP_LIMIT 1000000
#define X86_RFLAGS_TF 0x100ULL

enum { R_IO, R_MSR, R_INTR, R_HLT, R_MMIO, R_DEBUG, R_OTHER, R_COUNT };
static const char *const reason_names[R_COUNT] = {
	"port I/O", "MSR", "signal (EINTR)", "HLT", "MMIO", "single-step", "other",
};

static bool tracing(const struct vcpu *vcpu)
{
	return vcpu->vm->cfg->trace_pmi_on || vcpu->vm->cfg->trace_tick_on;
}

static void pmi_trace_run_end(void *opaque, const struct trace_ctx *ctx, unsigned int event, const uint64_t *args,
			      unsigned int nargs);

int pmi_trace_init(struct vcpu *vcpu)
{
	struct pmi_trace_vcpu *t = pmi_trace_vcpu_of(vcpu);
	struct trace_subscriber *sub = pmi_trace_sub_of(vcpu->vm);
	const unsigned int n[T_KINDS] = { vcpu->vm->cfg->trace_pmi, vcpu->vm->cfg->trace_tick };

	memset(t, 0, sizeof(*t));
	if (!tracing(vcpu))
		return 0;
	for (unsigned int k = 0; k < T_KINDS; k++) {
		t->cap[k] = n[k];
		t->steps_of[k] = calloc(n[k] + 1, sizeof(*t->steps_of[k]));
		t->exits_of[k] = calloc(n[k] + 1, sizeof(*t->exits_of[k]));
		if (!t->steps_of[k] || !t->exits_of[k])
			return -ENOMEM;
	}
	/* One subscriber for the VM's vCPUs, from the first one's creation to the first one's destruction. */
	if (sub->cb)
		return 0;
	*sub = (struct trace_subscriber){ .cb = pmi_trace_run_end, .internal = true };
	sub->events[KVMPROF_TRACE_vm_run_end] = true;
	if (trace_subscribe(sub)) {
		sub->cb = NULL;
		return -ENOSPC;
	}
	return 0;
}

void pmi_trace_destroy(struct vcpu *vcpu)
{
	if (vcpu->vm && pmi_trace_sub_of(vcpu->vm)->cb) {
		trace_unsubscribe(pmi_trace_sub_of(vcpu->vm));
		pmi_trace_sub_of(vcpu->vm)->cb = NULL;
	}
	for (unsigned int k = 0; k < T_KINDS; k++) {
		free(pmi_trace_vcpu_of(vcpu)->steps_of[k]);
		free(pmi_trace_vcpu_of(vcpu)->exits_of[k]);
		pmi_trace_vcpu_of(vcpu)->steps_of[k] = pmi_trace_vcpu_of(vcpu)->exits_of[k] = NULL;
	}
}

/* The paging sregs describe; -EFAULT for legacy 32-bit or PAE paging, which the walker does not read. */
static int sregs_paging(const struct kvm_sregs *sregs, struct guest_paging *pg)
{
	return guest_paging_init(pg, sregs->cr0, sregs->cr3, sregs->cr4, sregs->efer) ? -EFAULT : 0;
}

/* Copies guest-virtual [gva, gva + len) through the page tables the vCPU runs on now. */
static int read_virt(struct vcpu *vcpu, uint64_t gva, void *buf, size_t len)
{
	const struct vmi_mem ram = guest_mem_vmi(&vcpu->vm->mem);
	struct kvm_sregs sregs;
	struct guest_paging pg;

	if (ioctl(vcpu->fd, KVM_GET_SREGS, &sregs) < 0 || sregs_paging(&sregs, &pg))
		return -EFAULT;
	return guest_read_virt(&ram, &pg, gva, buf, len);
}

/* The handler address of IDT vector vec, or 0 if the guest has not installed one. */
static uint64_t idt_handler(struct vcpu *vcpu, const struct kvm_sregs *sregs, unsigned int vec)
{
	const struct vmi_mem ram = guest_mem_vmi(&vcpu->vm->mem);
	struct guest_paging pg;

	if (sregs_paging(sregs, &pg))
		return 0;
	return guest_idt_handler(&ram, &pg, sregs->idt.base, sregs->idt.limit, vec);
}

/* Breakpoints on the handlers' entries (dr7 bit 0: the NMI's, bit 2: the timer's) or a single step, through the debug owner. */
static int set_debug(struct vcpu *vcpu, bool step, uint64_t dr7)
{
	const struct pmi_trace_vcpu *t = pmi_trace_vcpu_of(vcpu);
	uint64_t addr[2] = { 0, 0 };
	unsigned int n = 0;

	if (dr7 & 0x1)
		addr[n++] = t->entry[T_PMI];
	if (dr7 & 0x4)
		addr[n++] = t->entry[T_TICK];
	return guest_debug_set(vcpu, &pmi_trace_debug_client, addr, n, step, 0);
}

static bool wanted(const struct vcpu *vcpu, unsigned int kind)
{
	const struct vm_config *cfg = vcpu->vm->cfg;

	return kind == T_PMI ? cfg->trace_pmi_on && pmi_trace_vcpu_of(vcpu)->traced[T_PMI] < cfg->trace_pmi :
			       cfg->trace_tick_on && pmi_trace_vcpu_of(vcpu)->traced[T_TICK] < cfg->trace_tick;
}

/*
 * Arms an execution breakpoint on the entry of the NMI handler (DR0) and of
 * the LAPIC timer's handler (DR1), as far as traces are still wanted: the
 * single-stepping starts only there, inside a handler that runs with
 * interrupts off. Starting it at the injection instead sets TF in the
 * interrupted context, and an exception delivered before the NMI (a
 * system call's ud2) would save that TF in a frame the trace never sees.
 */
static void arm(struct vcpu *vcpu)
{
	struct pmi_trace_vcpu *t = pmi_trace_vcpu_of(vcpu);
	struct kvm_sregs sregs;
	uint64_t dr7 = 0;

	if (ioctl(vcpu->fd, KVM_GET_SREGS, &sregs) < 0)
		return;
	if (wanted(vcpu, T_PMI)) {
		t->entry[T_PMI] = idt_handler(vcpu, &sregs, 2);
		dr7 |= t->entry[T_PMI] ? 0x1 : 0; /* L0, execute, 1 byte */
	}
	if (wanted(vcpu, T_TICK)) {
		struct kvm_lapic_state lapic;
		uint32_t lvtt;

		t->entry[T_TICK] = 0;
		if (ioctl(vcpu->fd, KVM_GET_LAPIC, &lapic) == 0) {
			memcpy(&lvtt, lapic.regs + 0x320, 4);
			if (!(lvtt & (1u << 16)) && (lvtt & 0xff) >= 32)
				t->entry[T_TICK] = idt_handler(vcpu, &sregs, lvtt & 0xff);
		}
		dr7 |= t->entry[T_TICK] ? 0x4 : 0; /* L1 */
	}
	if (dr7 && !set_debug(vcpu, false, dr7))
		t->armed = true;
}

void pmi_trace_injected(struct vcpu *vcpu)
{
	/* A PMI that lands inside a traced tick would add its handler to the tick's count. */
	if (tracing(vcpu) && pmi_trace_vcpu_of(vcpu)->stepping && pmi_trace_vcpu_of(vcpu)->kind == T_TICK)
		pmi_trace_vcpu_of(vcpu)->disturbed = true;
}

/*
 * Ends a trace just before the handler's IRETQ (complete) or anywhere
 * (abandoned): stops stepping and clears the TF that KVM's single-stepping
 * left in the live RFLAGS (the handler's; the IRETQ restores the
 * interrupted context's own), then arms the breakpoints again.
 */
static void finish(struct vcpu *vcpu, bool complete)
{
	struct pmi_trace_vcpu *t = pmi_trace_vcpu_of(vcpu);
	struct kvm_regs regs;
	uint64_t frame[2] = { 0, 0 }; /* the IRETQ frame's RIP and CS */
	unsigned int k = t->kind;

	set_debug(vcpu, false, 0);
	t->stepping = t->armed = false;
	if (ioctl(vcpu->fd, KVM_GET_REGS, &regs) == 0) {
		if (complete)
			read_virt(vcpu, regs.rsp, frame, sizeof(frame));
		if (regs.rflags & X86_RFLAGS_TF) {
			regs.rflags &= ~X86_RFLAGS_TF;
			ioctl(vcpu->fd, KVM_SET_REGS, &regs);
		}
	}
	if (!complete || t->disturbed) {
		t->stray++;
	} else {
		/* Ring-0 windows go in from the end: the two kinds are reported apart. */
		bool ring3 = (frame[1] & 3) == 3;
		unsigned int i = ring3 ? t->traced3[k] : t->cap[k] - 1 - (t->traced[k] - t->traced3[k]);

		t->steps_of[k][i] = (uint32_t)t->steps;
		t->exits_of[k][i] = (uint32_t)t->exits;
		t->traced[k]++;
		t->traced3[k] += ring3;
	}
	if (wanted(vcpu, T_PMI) || wanted(vcpu, T_TICK))
		arm(vcpu);
}

/* vm_run_end (args: reason, err, emulated): counts each KVM exit, and the handler's ones while stepping. */
static void pmi_trace_run_end(void *opaque, const struct trace_ctx *ctx, unsigned int event, const uint64_t *args,
			      unsigned int nargs)
{
	struct vcpu *vcpu = ctx->owner;
	struct pmi_trace_vcpu *t;
	unsigned int r;

	(void)opaque, (void)event, (void)nargs;
	/* The exact backend's emulator slices are no exits; a failed KVM_RUN other than a signal is none either. */
	if (!vcpu || args[2] || (args[1] && args[1] != EINTR))
		return;
	t = pmi_trace_vcpu_of(vcpu);
	if (args[1]) {
		r = R_INTR;
	} else {
		switch (args[0]) {
		case KVM_EXIT_IO: r = R_IO; break;
		case KVM_EXIT_X86_RDMSR:
		case KVM_EXIT_X86_WRMSR: r = R_MSR; break;
		case KVM_EXIT_INTR: r = R_INTR; break;
		case KVM_EXIT_HLT: r = R_HLT; break;
		case KVM_EXIT_MMIO: r = R_MMIO; break;
		case KVM_EXIT_DEBUG: r = R_DEBUG; break;
		default: r = R_OTHER; break;
		}
	}
	t->by_reason[r]++;
	/*
	 * The exits the handler itself caused (MSR, I/O). Signals are the
	 * host's timers, which the slow single-stepping lets fire inside the
	 * window: not the handler's doing.
	 */
	if (t->stepping && r != R_DEBUG && r != R_INTR)
		t->exits++;
	/* Until the guest has its IDT and timer, try again now and then. */
	if (!t->armed && !t->stepping && (wanted(vcpu, T_PMI) || wanted(vcpu, T_TICK)) &&
	    (t->by_reason[R_IO] + t->by_reason[R_MSR] + t->by_reason[R_INTR]) % 64 == 0)
		arm(vcpu);
}

bool pmi_trace_debug_exit(struct vcpu *vcpu)
{
	struct pmi_trace_vcpu *t = pmi_trace_vcpu_of(vcpu);
	uint64_t pc = vcpu->run->debug.arch.pc;
	uint8_t insn[2];

	if (!tracing(vcpu))
		return false;
	if (!t->stepping) {
		/* A breakpoint at a handler's entry: step from its first instruction on. */
		if (!t->armed || (pc != t->entry[T_PMI] && pc != t->entry[T_TICK]))
			return false;
		t->kind = pc == t->entry[T_PMI] ? T_PMI : T_TICK;
		t->stepping = true;
		t->disturbed = false;
		t->steps = t->exits = 0;
		if (set_debug(vcpu, true, 0))
			finish(vcpu, false);
		return true;
	}
	/* Each single-step exit follows one guest instruction. */
	t->steps++;
	if (t->steps == 1 && !t->first_rip[t->kind])
		t->first_rip[t->kind] = pc;
	/*
	 * Interrupts are off in the handler (and NMIs blocked in the NMI's), so
	 * the first IRETQ (48 cf) is its return: count it and stop before it
	 * runs, so that what the slow stepping left pending (the guest's tick,
	 * the next PMI) enters untraced.
	 */
	if (read_virt(vcpu, pc, insn, 2)) {
		finish(vcpu, false);
	} else if (insn[0] == 0x48 && insn[1] == 0xcf) {
		t->steps++;
		finish(vcpu, true);
	} else if (t->steps >= PMI_TRACE_STEP_LIMIT) {
		finish(vcpu, false);
	}
	return true;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* min / median / max of n values (sorted in place). */
static void print_spread(const char *what, uint32_t *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_u32);
	fprintf(stderr, "  %-50s min %u, median %u, max %u\n", what, v[0],
		n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v[n - 1]);
}

static void print_kind(struct vm *vm, unsigned int k, const char *what)
{
	unsigned int n = 0, n3 = 0, stray = 0, at = 0;
	uint64_t first_rip = 0;
	uint32_t *steps, *exits;

	for (unsigned int i = 0; i < vm->cfg->ncpus; i++) {
		const struct pmi_trace_vcpu *t = pmi_trace_vcpu_of(&vm->vcpu[i]);
		n += t->traced[k];
		n3 += t->traced3[k];
		stray += (unsigned int)t->stray;
		if (t->traced[k] && !first_rip)
			first_rip = t->first_rip[k];
	}
	fprintf(stderr, "kvmprof-vmm: %s trace: %u single-stepped from the handler's entry to its IRETQ"
		" (%u struck ring 3, %u ring 0)", what, n, n3, n - n3);
	if (first_rip)
		fprintf(stderr, ", first step at rip %#llx", (unsigned long long)first_rip);
	fputc('\n', stderr);
	steps = calloc(n + 1, sizeof(*steps));
	exits = calloc(n + 1, sizeof(*exits));
	if (n && steps && exits) {
		/* Ring-3 windows first, then ring-0 ones: each group contiguous. */
		for (int ring3 = 1; ring3 >= 0; ring3--) {
			for (unsigned int i = 0; i < vm->cfg->ncpus; i++) {
				const struct pmi_trace_vcpu *t = pmi_trace_vcpu_of(&vm->vcpu[i]);
				unsigned int from = ring3 ? 0 : t->cap[k] - (t->traced[k] - t->traced3[k]);
				unsigned int cnt = ring3 ? t->traced3[k] : t->traced[k] - t->traced3[k];
				memcpy(steps + at, t->steps_of[k] + from, cnt * sizeof(*steps));
				memcpy(exits + at, t->exits_of[k] + from, cnt * sizeof(*exits));
				at += cnt;
			}
		}
		if (n3) {
			print_spread("ring-0 instructions, struck ring 3", steps, n3);
			print_spread("VM exits in the handler, struck ring 3", exits, n3);
		}
		if (n > n3) {
			print_spread("ring-0 instructions, struck ring 0", steps + n3, n - n3);
			print_spread("VM exits in the handler, struck ring 0", exits + n3, n - n3);
		}
	}
	free(steps);
	free(exits);
}

void pmi_trace_print(struct vm *vm)
{
	uint64_t by_reason[R_COUNT] = { 0 }, stray = 0;

	if (!vm->cfg->trace_pmi_on && !vm->cfg->trace_tick_on)
		return;
	if (vm->cfg->trace_pmi_on)
		print_kind(vm, T_PMI, "PMI");
	if (vm->cfg->trace_tick_on)
		print_kind(vm, T_TICK, "timer tick");
	for (unsigned int i = 0; i < vm->cfg->ncpus; i++) {
		for (unsigned int r = 0; r < R_COUNT; r++)
			by_reason[r] += pmi_trace_vcpu_of(&vm->vcpu[i])->by_reason[r];
		stray += pmi_trace_vcpu_of(&vm->vcpu[i])->stray;
	}
	if (stray)
		fprintf(stderr, "  %llu windows abandoned (no IRETQ within %u steps, or a PMI inside a tick)\n",
			(unsigned long long)stray, PMI_TRACE_STEP_LIMIT);
	fprintf(stderr, "  VM exits by reason:");
	for (unsigned int r = 0; r < R_COUNT; r++)
		fprintf(stderr, "%s %s %llu", r ? "," : "", reason_names[r], (unsigned long long)by_reason[r]);
	fputc('\n', stderr);
}

const struct vcpu_hooks pmi_trace_hooks = {
	.name = "PMI tracer",
	.vm_size = sizeof(struct trace_subscriber),
	.vcpu_size = sizeof(struct pmi_trace_vcpu),
	.init = pmi_trace_init,
	.destroy = pmi_trace_destroy,
	.print_stats = pmi_trace_print,
};

static bool pmi_trace_wanted(const struct vm *vm)
{
	return vm->cfg->trace_pmi_on || vm->cfg->trace_tick_on;
}

/* Two breakpoints (the NMI's and the timer's handler entries), then single steps through the handler. */
const struct guest_debug_client pmi_trace_debug_client = {
	.name = "--vpmu-trace-pmi/--vpmu-trace-tick",
	.slots = 2,
	.steps = true,
	.wanted = pmi_trace_wanted,
	.debug_exit = pmi_trace_debug_exit,
};
