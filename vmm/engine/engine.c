// SPDX-License-Identifier: MIT
/* The emulation engine in the run loop (engine.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <asm/processor-flags.h> /* X86_CR4_PGE */

#include "engine.h"
#include "emu_fpu.h"
#include "vcpu_hooks.h"
#include "engine_guest.h"
#include "engine_lapic.h"
#include "engine_probe.h"
#include "guest_walk.h"
#include "kick.h"
#include "vm.h"

/* Instructions between looks for due interrupts: about a millisecond of guest time in the engine. */
#define ENGINE_SLICE_INSNS 100000
/* A KVM step the guest left (an escape) is found by an exit this soon. */
#define ENGINE_STEP_EXIT_NS 1000000
#define MSR_EFER 0xc0000080u
#define MSR_PAT 0x277u
#define RFLAGS_IF (1ULL << 9)

/* Every client this VM uses, into out (NULL-terminated); how many. */
static unsigned int wanted_clients(const struct vm *vm, const struct engine_client **out)
{
	unsigned int n = 0;

	for (const struct engine_client *const *c = engine_clients; *c && n < ENGINE_CLIENTS_MAX - 1; c++)
		if (!(*c)->wanted || (*c)->wanted(vm))
			out[n++] = *c;
	out[n] = NULL;
	return n;
}

int engine_vcpu_init(struct vcpu *vcpu)
{
	struct engine_vcpu *x = engine_of(vcpu);

	memset(x, 0, sizeof(*x));
	x->enabled = wanted_clients(vcpu->vm, x->client) > 0;
	return 0;
}

#define EACH_CLIENT(c, x) for (const struct engine_client *const *c = (x)->client; *c; c++)

/* Tells every client what retired. */
static void engine_counted(struct vcpu *vcpu, const struct emu_counts *counts)
{
	EACH_CLIENT(c, engine_of(vcpu)) {
		if ((*c)->counted)
			(*c)->counted(vcpu, counts);
	}
}

/* One instruction the VMM did in the guest's place (an MSR, RDTSC), in ring (EMU_RING_*). */
void engine_count_insn(struct vcpu *vcpu, unsigned int ring)
{
	struct emu_counts one = { 0 };

	one.ev[ring == EMU_RING_USER ? 0 : 1][EMU_EV_INSNS] = 1;
	engine_counted(vcpu, &one);
}

/* The rings in which some client needs the vCPU in the engine now. */
static unsigned int engine_rings(struct vcpu *vcpu)
{
	unsigned int rings = 0;

	EACH_CLIENT(c, engine_of(vcpu)) {
		if ((*c)->rings)
			rings |= (*c)->rings(vcpu);
	}
	return rings;
}

bool engine_client_msr(struct vcpu *vcpu, uint32_t msr, bool write, uint64_t *val)
{
	EACH_CLIENT(c, engine_of(vcpu)) {
		if ((*c)->msr && (*c)->msr(vcpu, msr, write, val))
			return true;
	}
	return false;
}

int engine_client_rdpmc(struct vcpu *vcpu, uint32_t ecx, uint64_t *val)
{
	int r = -1;

	EACH_CLIENT(c, engine_of(vcpu)) {
		if (!(*c)->rdpmc)
			continue;
		if ((*c)->rdpmc(vcpu, ecx, val))
			return 1;
		r = 0;
	}
	return r;
}

/* The host's debug features, measured once (engine_probe.h). */
static struct engine_debug_caps debug_caps;
static pthread_once_t debug_caps_once = PTHREAD_ONCE_INIT;
static int debug_caps_kvm_fd = -1;

static void probe_debug_caps(void)
{
	engine_probe_debug(debug_caps_kvm_fd, &debug_caps);
}

/* The engine comes with the first counter that needs it: a guest that counts nothing pays nothing. */
static int engine_start(struct vcpu *vcpu)
{
	struct engine_vcpu *x = engine_of(vcpu);
	char err[160];
	int rc;

	debug_caps_kvm_fd = vcpu->vm->kvm_fd;
	pthread_once(&debug_caps_once, probe_debug_caps);
	/*
	 * Breakpoints that do not fire in ring 0, where every handler starts:
	 * single steps only, and the VMM delivers events (engine.h).
	 */
	x->vmm_events = debug_caps.probed && !debug_caps.hw_bp[0] && debug_caps.single_step[0] &&
			debug_caps.single_step[1];
	x->blockirq = debug_caps.blockirq;
	x->tr_busy_reported = debug_caps.tr_busy_reported;

	rc = emu_create(&x->emu, &vcpu->vm->mem, vcpu->vm->cfg->ncpus > 1, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "kvmprof-vmm: emulation engine: %s\n", err);
		return rc;
	}
	rc = emu_decoder_open(&x->dec);
	if (rc) {
		fprintf(stderr, "kvmprof-vmm: emulation engine: cannot open an instruction decoder\n");
		emu_destroy(x->emu);
		x->emu = NULL;
	}
	return rc;
}

void engine_vcpu_destroy(struct vcpu *vcpu)
{
	struct engine_vcpu *x = engine_of(vcpu);

	emu_destroy(x->emu);
	emu_decoder_close(x->dec);
	x->emu = NULL;
	x->dec = NULL;
}

/* The FS and GS bases (and KERNEL_GS_BASE if SWAPGS changed it) that instructions done in place wrote. */
static int bases_to_kvm(struct vcpu *vcpu)
{
	struct engine_vcpu *x = engine_of(vcpu);
	struct {
		struct kvm_msrs h;
		struct kvm_msr_entry e[3];
	} m = { .h.nmsrs = x->kgs_valid ? 3 : 2,
		.e = { { .index = MSR_FS_BASE, .data = x->state.sregs.fs.base },
		       { .index = MSR_GS_BASE, .data = x->state.sregs.gs.base },
		       { .index = MSR_KERNEL_GS_BASE, .data = x->kernel_gs_base } } };
	int n = ioctl(vcpu->fd, KVM_SET_MSRS, &m);

	if (n < 0)
		return -1;
	if (n != (int)m.h.nmsrs) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/* The x87/SSE state, through KVM's XSAVE image where KVM has it (emu_fpu.h). */
static int fpu_to_kvm(struct vcpu *vcpu)
{
	struct engine_vcpu *x = engine_of(vcpu);

	if (x->xsave_valid) {
		emu_fpu_to_xsave(&x->state.fpu, &x->xsave);
		if (ioctl(vcpu->fd, KVM_SET_XSAVE, &x->xsave) == 0)
			return 0;
		if (!x->stats.xsave_refused++)
			fprintf(stderr, "kvmprof-vmm: vCPU %u: emulation engine: KVM refused the XSAVE image (%s; MXCSR %#x): "
				"the legacy FPU state goes back instead (counted in --vpmu-stats)\n", vcpu->id, strerror(errno),
				x->state.fpu.mxcsr);
	}
	return ioctl(vcpu->fd, KVM_SET_FPU, &x->state.fpu);
}

static int fpu_from_kvm(struct vcpu *vcpu, struct kvm_fpu *fpu)
{
	struct engine_vcpu *x = engine_of(vcpu);

	x->xsave_valid = ioctl(vcpu->fd, KVM_GET_XSAVE, &x->xsave) == 0;
	if (!x->xsave_valid)
		return ioctl(vcpu->fd, KVM_GET_FPU, fpu); /* a guest state too large for it (AMX): the legacy area alone */
	emu_fpu_from_xsave(&x->xsave, fpu);
	return 0;
}

/*
 * The vCPU's state between engine runs stays in x->state: KVM's copy is
 * brought up to date only before KVM runs the vCPU, saving the ioctls of
 * the many engine runs that follow each other (slice ends, signals).
 */
static int state_to_kvm(struct vcpu *vcpu)
{
	struct engine_vcpu *x = engine_of(vcpu);

	if (x->bases_dirty && bases_to_kvm(vcpu)) {
		fprintf(stderr, "kvmprof-vmm: vCPU %u: emulation engine: cannot give the FS/GS bases back to KVM: %s\n",
			vcpu->id, strerror(errno));
		return -errno;
	}
	x->bases_dirty = false;
	x->kgs_valid = false; /* KVM may run SWAPGS or WRMSR next */
	if (x->kvm_stale && (ioctl(vcpu->fd, KVM_SET_REGS, &x->state.regs) < 0 || fpu_to_kvm(vcpu) < 0)) {
		fprintf(stderr, "kvmprof-vmm: vCPU %u: emulation engine: cannot give the state back to KVM: %s\n",
			vcpu->id, strerror(errno));
		return -errno;
	}
	x->kvm_stale = false;
	x->state_valid = false; /* KVM is about to change it */
	x->shadow_spent = false;
	return 0;
}

const struct emu_state *engine_guest_state(struct vcpu *vcpu)
{
	struct engine_vcpu *x = engine_of(vcpu);

	return x->emu && x->state_valid && !x->stepping ? &x->state : NULL;
}

bool engine_nmi_blocked(struct vcpu *vcpu)
{
	return engine_of(vcpu)->nmi_blocked;
}

bool engine_active(struct vcpu *vcpu)
{
	struct engine_vcpu *x = engine_of(vcpu);

	if (!x->enabled || (!x->stepping && !engine_rings(vcpu))) {
		state_to_kvm(vcpu); /* KVM runs the vCPU next */
		x->halted = false;  /* KVM's halt, if any, is right: nothing ran since */
		/*
		 * For as long as no client needs the engine: the guest may change
		 * its page tables and flush its TLB meanwhile, unseen, and come
		 * back under the same CR3 (a counted process scheduled out and in).
		 */
		x->stats.flushes_native += !x->flush;
		x->flush = true;
		return false;
	}
	if (!x->emu && engine_start(vcpu)) {
		/* Without its engine the vCPU runs in KVM, and what the clients count stays where it is. */
		x->enabled = false;
		return false;
	}
	return true;
}

static int get_state(struct vcpu *vcpu, struct emu_state *st)
{
	if (ioctl(vcpu->fd, KVM_GET_REGS, &st->regs) < 0 || ioctl(vcpu->fd, KVM_GET_SREGS, &st->sregs) < 0 ||
	    fpu_from_kvm(vcpu, &st->fpu) < 0)
		return -errno;
	return 0;
}

uint64_t engine_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#define DR6_BS (1ULL << 14)

/* A breakpoint after the instruction (it completed; taken: at a branch target) or on a handler. */
/* Whether the vector engine_lapic_pending() last returned is an IRR bit, not a tick KVM still holds. */
static bool irq_in_irr(struct vcpu *vcpu)
{
	return engine_of(vcpu)->irr_vector >= 16;
}

static void add_bp(struct engine_vcpu *x, uint64_t addr, bool taken, int vector)
{
	if (!addr || x->nbp == 4)
		return;
	for (unsigned int i = 0; i < x->nbp; i++)
		if (x->bp[i] == addr)
			return;
	x->step_taken_bp[x->nbp] = taken;
	x->bp_vector[x->nbp] = vector;
	x->bp[x->nbp++] = addr;
}

static void count_completed(struct vcpu *vcpu, bool taken);

/*
 * The guest ran natively, uncounted, until an exit: its page tables may have
 * changed and its TLB been flushed meanwhile, unseen, so the engine's
 * mappings go.
 */
static void escaped(struct engine_vcpu *x)
{
	x->stats.escapes++;
	x->stats.flushes_native += !x->flush;
	x->flush = true;
}

/* Whether the instruction's bytes carry a REP or REPNE prefix (before REX and the opcode). */
static bool has_rep_prefix(const uint8_t *code, size_t n)
{
	for (size_t i = 0; i < n && i < 14; i++) {
		switch (code[i]) {
		case 0xf2: case 0xf3:
			return true;
		case 0x66: case 0x67: case 0x2e: case 0x3e: case 0x26: case 0x64: case 0x65: case 0x36: case 0xf0:
			continue;
		default:
			return false;
		}
	}
	return false;
}

/*
 * The entry of a KVM step, with its debug state set: the engine's copy goes
 * stale only when the stepped instruction changes translations (flush).
 */
static int step_enter(struct vcpu *vcpu, bool flush, bool keep_global, int event)
{
	struct engine_vcpu *x = engine_of(vcpu);

	x->stepping = true;
	if (flush) {
		x->stats.flushes_step += !x->flush && !x->flush_nonglobal;
		if (keep_global)
			x->flush_nonglobal = true; /* a CR3 write: see engine_run */
		else
			x->flush = true;
	}
	x->stats.steps++;
	x->step_start_ns = engine_now_ns();
	if (event >= 0)
		x->stats.events_delivered++;
	engine_lapic_forget(x); /* the entry lets KVM take an expired timer */
	/* If nothing brings the vCPU back, an exit within 1 ms does (engine_after_exit). */
	vcpu_exit_within(vcpu, ENGINE_STEP_EXIT_NS);
	vcpu_exit_timer_arm(vcpu);
	return ioctl(vcpu->fd, KVM_RUN, 0);
}

/*
 * A KVM step where breakpoints do not fire (x->vmm_events): UD2, INT3 and
 * INT n are delivered by the VMM (the handler then runs in the engine);
 * anything else runs in KVM as one single step, which ends in a debug
 * exit once the instruction completed, in ring 0 or 3 alike, with no
 * interrupt delivered meanwhile (KVM_GUESTDBG_BLOCKIRQ). What KVM still
 * delivers in a step (an exception the instruction raises, an interrupt
 * on a KVM without BLOCKIRQ) runs its handler natively: an escape, found
 * at the next exit (engine_after_exit).
 */
static int step_single(struct vcpu *vcpu, struct emu_state *st, bool page_fault, int event, bool *kvm_ran)
{
	struct engine_vcpu *x = engine_of(vcpu);
	struct emu_insn_info in = { .vector = -1 };
	struct guest_paging pg;
	uint8_t code[15];
	uint64_t rip = st->regs.rip;
	size_t n = 0;

	x->nbp = 0;
	x->bp_after = 0;
	x->step_regs = st->regs;
	x->step_rip = rip;
	x->step_len = 0;
	x->step_rep = false;
	x->step_hlt = false;
	x->step_fault = page_fault;
	x->step_cs = st->sregs.cs.selector;
	x->step_ss = st->sregs.ss.selector;
	x->single_step = true;
	x->step_branch = false;
	x->step_ring = st->sregs.cs.dpl == 3 ? EMU_RING_USER : EMU_RING_KERNEL;
	if (!engine_paging(st, &pg)) {
		n = engine_read_insn(vcpu, &pg, rip, code);
		if (n) {
			emu_decode_one(x->dec, rip, code, n, vcpu->vm->cfg->ncpus > 1, &in);
			x->step_rep = in.len && has_rep_prefix(code, in.len);
			/* HLT, prefixed or not; a false match (an immediate 0xf4) costs one KVM_GET_MP_STATE. */
			x->step_hlt = in.len && code[in.len - 1] == 0xf4;
		}
	}
	x->step_len = in.len;
	x->step_branch = in.branch != EMU_BR_NONE || in.is_iret;
	if (event < 0 && in.len && in.vector >= 0) {
		/* UD2 faults (the frame returns to it, nothing retired); INT3 and INT n trap past themselves. */
		struct emu_state ns = *st;
		bool trap = in.vector != 6;

		if (engine_deliver_event(vcpu, &ns, (unsigned int)in.vector, trap ? rip + in.len : rip, -1, trap)) {
			if (trap)
				count_completed(vcpu, false);
			else
				x->stats.steps_faulted++;
			x->stats.events_by_vmm++;
			*st = ns;
			x->state = ns;
			x->kvm_stale = true;
			vcpu->run->s.regs.regs = ns.regs;
			vcpu->run->s.regs.sregs = ns.sregs;
			*kvm_ran = false;
			return 0;
		}
	}
	/* KVM sets TF only while RIP is where it was at KVM_SET_GUEST_DEBUG: the registers go first. */
	*kvm_ran = true;
	if (state_to_kvm(vcpu))
		return -1;
	if (guest_debug_set(vcpu, &engine_debug_client, NULL, 0, true, x->blockirq ? KVM_GUESTDBG_BLOCKIRQ : 0))
		x->stats.engine_errors++;
	return step_enter(vcpu, in.flushes_tlb || !in.len || (in.is_wrmsr && ((uint32_t)st->regs.rcx == MSR_EFER || (uint32_t)st->regs.rcx == MSR_PAT)),
			  in.keeps_global, event);
}

/*
 * Enters KVM for one instruction, or one event delivery, and comes back
 * where the vCPU goes next: see engine.h. Guest ring 3 runs natively
 * on this host and execution breakpoints there do not fire, so an
 * instruction that should complete in ring 3 (or an IRETQ to ring 3) is
 * single-stepped; in ring 0 (emulated by KVM) breakpoints after it do.
 */
static int step(struct vcpu *vcpu, struct emu_state *st, enum emu_handback why, bool page_fault, int event,
		bool *kvm_ran)
{
	struct engine_vcpu *x = engine_of(vcpu);
	struct emu_insn_info in = { .vector = -1 };
	struct guest_paging pg;
	uint8_t code[15];
	uint64_t rip = st->regs.rip;
	bool irq_deliverable, paging_ok = !engine_paging(st, &pg);
	int irq, timer_vector;

	if (x->vmm_events)
		return step_single(vcpu, st, page_fault, event, kvm_ran);
	x->nbp = 0;
	x->step_regs = st->regs;
	x->step_rip = rip;
	x->step_len = 0;
	x->single_step = false;
	x->step_branch = false;
	x->step_ring = st->sregs.cs.dpl == 3 ? EMU_RING_USER : EMU_RING_KERNEL;
	/* An event KVM may not deliver after all: in ring 0 the breakpoints after the instruction catch that. */
	if ((event < 0 || st->sregs.cs.dpl == 0) && paging_ok) {
		size_t n = engine_read_insn(vcpu, &pg, rip, code);

		if (n)
			emu_decode_one(x->dec, rip, code, n, vcpu->vm->cfg->ncpus > 1, &in);
	}
	if (in.len && (event < 0 || st->sregs.cs.dpl == 0)) {
		uint64_t frame[3];

		x->step_len = in.len;
		x->step_branch = in.branch != EMU_BR_NONE || in.is_iret;
		if (in.is_iret && engine_read_virt(vcpu, &pg, st->regs.rsp, frame, sizeof(frame)) == 0) {
			engine_clear_frame_flags(vcpu, &pg, st->regs.rsp + 16, RFLAGS_RF);
			if ((frame[1] & 3) == 3)
				x->single_step = true; /* back to ring 3 */
			else
				add_bp(x, frame[0], true, -1);
		} else if (st->sregs.cs.dpl == 3 && in.vector < 0) {
			x->single_step = true;
		} else if (in.is_ret && paging_ok &&
			   engine_read_virt(vcpu, &pg, st->regs.rsp, frame, 8) == 0) {
			add_bp(x, frame[0], true, -1);
		} else if (!in.is_ret && in.vector < 0) {
			add_bp(x, rip + in.len, false, -1);
			if (in.has_target)
				add_bp(x, in.target, true, -1);
		}
	}
	x->bp_after = x->nbp;
	/* Handlers: the event being delivered, the instruction's own exception, a page fault. */
	if (event >= 0)
		add_bp(x, engine_idt_handler(vcpu, st, (unsigned int)event), false, event);
	if (in.vector >= 0)
		add_bp(x, engine_idt_handler(vcpu, st, (unsigned int)in.vector), false, in.vector);
	if (why == EMU_HB_FAULT || (event < 0 && !in.len))
		add_bp(x, engine_idt_handler(vcpu, st, 14), false, 14);
	irq = engine_lapic_pending(vcpu, &irq_deliverable, &timer_vector);
	if (irq >= 0)
		add_bp(x, engine_idt_handler(vcpu, st, (unsigned int)irq), false, irq);
	/* The timer may expire while KVM runs the instruction (an I/O exit, say). */
	if (timer_vector >= 0)
		add_bp(x, engine_idt_handler(vcpu, st, (unsigned int)timer_vector), false, timer_vector);
	if (st->sregs.cs.dpl == 3 && event < 0)
		add_bp(x, engine_idt_handler(vcpu, st, 13), false, 13); /* #GP: a privileged instruction in ring 3 */
	/* KVM sets TF only while RIP is where it was at KVM_SET_GUEST_DEBUG: the registers go first. */
	*kvm_ran = true;
	if (state_to_kvm(vcpu))
		return -1;
	if (guest_debug_set(vcpu, &engine_debug_client, x->bp, x->nbp, x->single_step, 0)) {
		x->stats.engine_errors++;
		x->nbp = 0;
	}
	/* A KVM step runs one instruction: only one that changes translations makes the engine's stale. */
	return step_enter(vcpu, in.flushes_tlb || (event < 0 && !in.len) || (in.is_wrmsr && ((uint32_t)st->regs.rcx == MSR_EFER || (uint32_t)st->regs.rcx == MSR_PAT)),
			  in.keeps_global, event);
}

static void step_end(struct vcpu *vcpu)
{
	struct engine_vcpu *x = engine_of(vcpu);

	guest_debug_clear(vcpu, &engine_debug_client);
	x->stats.step_ns += engine_now_ns() - x->step_start_ns;
	x->stepping = false;
	x->nbp = 0;
}

/*
 * The stepped instruction completed. Its events are added at the vCPU's
 * next run, inside the window the vPMU attributes to the guest (in
 * cpu-switch mode what accrues between the exit and the next entry is the
 * VMM's, and dropped).
 */
static void count_completed(struct vcpu *vcpu, bool taken)
{
	struct engine_vcpu *x = engine_of(vcpu);

	x->owed_ring = x->step_ring;
	x->owed[EMU_EV_INSNS]++;
	if (x->step_branch) {
		x->owed[EMU_EV_BRANCHES]++;
		if (taken)
			x->owed[EMU_EV_TAKEN]++;
	}
	x->stats.step_insns++;
}

static void pay_owed(struct vcpu *vcpu)
{
	struct engine_vcpu *x = engine_of(vcpu);
	struct emu_counts owed = { 0 };
	bool any = false;

	for (unsigned int e = 0; e < EMU_EV_COUNT; e++) {
		owed.ev[x->owed_ring == EMU_RING_USER ? 0 : 1][e] = x->owed[e];
		any |= x->owed[e] != 0;
		x->owed[e] = 0;
	}
	if (any)
		engine_counted(vcpu, &owed);
}

/* An interrupt in the LAPIC that the guest takes as soon as IF allows (engine_lapic_pending). */
static bool irq_deliverable(struct vcpu *vcpu)
{
	bool deliverable;
	int timer_vector;

	return engine_lapic_pending(vcpu, &deliverable, &timer_vector) >= 0 && deliverable;
}

/*
 * KVM's view of HLT. Single-stepped, KVM halts the vCPU and yet reports the
 * step's debug exit (kvm_emulate_halt), so it stays KVM_MP_STATE_HALTED:
 * the next KVM_RUN would block it wherever the engine had taken it since.
 */
static bool kvm_halted(struct vcpu *vcpu)
{
	struct kvm_mp_state mp;

	if (ioctl(vcpu->fd, KVM_GET_MP_STATE, &mp) < 0) {
		engine_of(vcpu)->stats.engine_errors++;
		return false;
	}
	return mp.mp_state == KVM_MP_STATE_HALTED; /* RUNNABLE once KVM has a wake-up (a PV kick included) */
}

/*
 * A vCPU KVM holds halted after a step of HLT. True while it stays so:
 * KVM then waits for the wake-up in a step of the next instruction, which
 * it runs once woken (without delivering an interrupt: BLOCKIRQ); the
 * VMM delivers the interrupt at the next run, one instruction later than
 * the CPU would. False, and KVM told the vCPU runs, once it woke (a PV
 * kick) or has an event the VMM delivers now (exactly where the CPU
 * would: at the instruction after HLT). Without this the engine ran on
 * and a later step blocked in KVM: seen with 2 vCPUs of a Linux guest,
 * one halted with IF clear inside an interrupt handler for good, the
 * other waiting for it in its PV spinlock.
 */
static bool still_halted(struct vcpu *vcpu, const struct emu_state *st, const struct kvm_vcpu_events *ev)
{
	struct engine_vcpu *x = engine_of(vcpu);
	struct kvm_mp_state mp = { .mp_state = KVM_MP_STATE_RUNNABLE };

	if (kvm_halted(vcpu)) {
		if (!(ev->nmi.pending || ev->nmi.injected) && !((st->regs.rflags & RFLAGS_IF) && irq_deliverable(vcpu)))
			return true;
		x->stats.halt_wakes_by_vmm++;
	}
	x->halted = false;
	if (ioctl(vcpu->fd, KVM_SET_MP_STATE, &mp) < 0)
		x->stats.engine_errors++;
	return false;
}

bool engine_debug_exit(struct vcpu *vcpu)
{
	struct engine_vcpu *x = engine_of(vcpu);
	uint64_t pc = vcpu->run->debug.arch.pc, dr6 = vcpu->run->debug.arch.dr6;
	unsigned int hit;

	if (!x->stepping)
		return false;
	if (x->vmm_events) {
		/* A single step: the instruction completed, unless a REP instruction stopped between iterations. */
		if (!(dr6 & DR6_BS))
			return false;
		if (pc == x->step_rip && x->step_rep)
			return true; /* the step goes on */
		/*
		 * An access the guest's page tables refuse faulted in KVM too, and
		 * the step ran the whole #PF handler natively: the exception's
		 * delivery cleared TF, its IRETQ set it again, and this debug exit
		 * came once the instruction, run again, completed. The handler may
		 * have changed page tables (a copy-on-write: a new page for the
		 * address) with no TLB flush the engine saw: an escape, the
		 * handler's instructions uncounted.
		 */
		if (x->step_fault)
			escaped(x);
		count_completed(vcpu, pc != x->step_rip + x->step_len);
		step_end(vcpu);
		x->halted = x->step_hlt && kvm_halted(vcpu);
		x->stats.halts += x->halted;
		return true;
	}
	for (hit = 0; hit < x->nbp && x->bp[hit] != pc; hit++)
		;
	if (hit < x->bp_after) {
		count_completed(vcpu, x->step_taken_bp[hit]);
	} else if (hit < x->nbp) {
		/*
		 * A handler. The frame the CPU pushed says whether the stepped
		 * instruction completed first (an interrupt after it, a trap such
		 * as INT n) or not (a fault, or an event delivered before it).
		 */
		struct emu_state st;
		struct guest_paging pg;
		int vec = x->bp_vector[hit];
		uint64_t off = engine_pushes_error_code(vec) ? 8 : 0, frame_rip;

		if (!get_state(vcpu, &st) && !engine_paging(&st, &pg)) {
			if (x->step_len && !engine_read_virt(vcpu, &pg, st.regs.rsp + off, &frame_rip, 8) &&
			    frame_rip != x->step_rip)
				count_completed(vcpu, frame_rip != x->step_rip + x->step_len);
			else
				x->stats.steps_faulted++;
			/* The frame holds the TF of our stepping. */
			if (x->single_step)
				engine_clear_frame_flags(vcpu, &pg, st.regs.rsp + 16 + off, RFLAGS_TF);
		}
	} else if (x->single_step && (dr6 & DR6_BS)) {
		/* The single step: the instruction completed (an IRETQ: a taken far branch). */
		count_completed(vcpu, true);
	} else {
		return false;
	}
	step_end(vcpu);
	return true;
}

/*
 * x->vmm_events: a single step the guest left. What KVM delivered in it (an
 * exception the instruction raised: #GP, #UD, a #PF of a locked instruction
 * the VMM could not do in place, one KVM's own emulation injected) pushed
 * its frame with the step's TF, and the handler ran natively; whoever does
 * its IRETQ, KVM or the engine, would hand the interrupted code a TF it
 * never set (in ring 3 every instruction of it a single-step trap in KVM,
 * or, in the engine, which has no trap, a TF that stays). So the frame
 * goes without it, found on the handler's stack where it is now (Linux
 * copies it from the entry stack to the task's).
 */
static void clear_step_tf(struct vcpu *vcpu, const struct kvm_sregs *s, const struct kvm_regs *r)
{
	struct engine_vcpu *x = engine_of(vcpu);
	struct step_frame f = {
		.rip = x->step_rip,
		.next_rip = x->step_rip + x->step_len,
		.rflags = x->step_regs.rflags,
		.rsp = x->step_regs.rsp,
		.cs = x->step_cs,
		.ss = x->step_ss,
	};
	struct guest_paging pg;

	if (guest_paging_init(&pg, s->cr0, s->cr3, s->cr4, s->efer))
		return;
	x->stats.step_tf_cleared += engine_clear_step_tf(vcpu, &pg, r->rsp, &f);
}

void engine_after_exit(struct vcpu *vcpu)
{
	struct engine_vcpu *x = engine_of(vcpu);
	struct kvm_sregs s;
	struct kvm_regs r;

	switch (vcpu->run->exit_reason) {
	case KVM_EXIT_IO:
	case KVM_EXIT_MMIO:
	case KVM_EXIT_X86_RDMSR:
	case KVM_EXIT_X86_WRMSR:
		/* KVM finishes these (RIP past the instruction, the value read) only at the next KVM_RUN. */
		x->exit_unfinished = true;
		break;
	default:
		break;
	}
	if (!x->stepping || ioctl(vcpu->fd, KVM_GET_SREGS, &s) < 0 || ioctl(vcpu->fd, KVM_GET_REGS, &r) < 0)
		return;
	if (x->vmm_events) {
		/*
		 * A single step ends only in its debug exit. Registers unchanged:
		 * the instruction has not run, or this is its own exit (I/O, MMIO,
		 * MSR), which KVM completes at the next KVM_RUN. Anything else: KVM
		 * delivered an event and its handler ran natively.
		 */
		struct kvm_regs was = x->step_regs;

		was.rflags &= ~(RFLAGS_TF | RFLAGS_RF);
		r.rflags &= ~(RFLAGS_TF | RFLAGS_RF);
		if (!memcmp(&r, &was, sizeof(r)))
			return;
		escaped(x);
		if (!(x->step_regs.rflags & RFLAGS_TF))
			clear_step_tf(vcpu, &s, &r);
		step_end(vcpu);
		return;
	}
	if (s.cs.dpl != 3)
		return;
	for (unsigned int i = 0; i < x->nbp; i++)
		if (x->bp[i] == r.rip)
			return; /* about to hit it */
	/* Nothing ran: KVM_RUN returned for a signal before entering the guest. The step goes on. */
	if (!memcmp(&r, &x->step_regs, sizeof(r)))
		return;
	/* Guest ring-3 code is running natively, and no breakpoint brought it back: take it back now. */
	escaped(x);
	step_end(vcpu);
}

/* SYSCALL or SYSRET done by the VMM retired in ring: an instruction and a taken (far) branch, as the CPU counts them. */
static void count_far_branch(struct vcpu *vcpu, unsigned int ring)
{
	struct emu_counts one = { 0 };
	unsigned int r = ring == EMU_RING_USER ? 0 : 1;

	one.ev[r][EMU_EV_INSNS] = 1;
	one.ev[r][EMU_EV_BRANCHES] = 1;
	one.ev[r][EMU_EV_TAKEN] = 1;
	engine_counted(vcpu, &one);
}

/* The IRETQ done by engine_iretq retired in ring 0, a taken far branch. */
static void count_iret(struct vcpu *vcpu)
{
	struct engine_vcpu *x = engine_of(vcpu);

	x->step_ring = EMU_RING_KERNEL;
	x->step_branch = true;
	count_completed(vcpu, true);
	x->stats.irets++;
}

/*
 * x->vmm_events: the #PF of an access the guest's tables refuse, delivered
 * by the VMM (CR2, the error code, the frame at the faulting instruction),
 * so that the handler runs in the engine, counted, and nothing runs
 * natively. A KVM step of it was a single step: the CPU pushed the #PF's
 * frame with the TF of that step, the handler ran natively (an escape,
 * uncounted), and an IRETQ of that frame the engine did itself (the
 * handler still running when KVM exited) gave the guest a TF it never
 * set, so that every instruction after it became a KVM step and the
 * guest's kernel met single-step traps it did not ask for (its
 * exc_debug warning). False where the engine cannot name the fault
 * (emu_result.pf_valid) or the IDT refuses the delivery: KVM steps it.
 */
static bool deliver_page_fault(struct vcpu *vcpu, struct emu_state *st, const struct emu_result *r)
{
	struct engine_vcpu *x = engine_of(vcpu);
	struct emu_state ns = *st;

	if (!x->vmm_events || !r->page_fault || !r->pf_valid)
		return false;
	ns.sregs.cr2 = r->pf_addr;
	if (!engine_deliver_event(vcpu, &ns, 14, st->regs.rip, r->pf_code, false))
		return false;
	*st = ns;
	x->stats.events_by_vmm++;
	x->stats.page_faults_by_vmm++;
	return true;
}

/*
 * The hand-back instruction the run stopped at was done by the VMM, which
 * gave KVM the new registers: st is where the vCPU goes on, in the engine.
 */
static int done_by_vmm(struct vcpu *vcpu, const struct emu_state *st, bool *kvm_ran)
{
	engine_of(vcpu)->state = *st;
	/* Where readers of KVM's synced registers (the guest sampler) look. */
	vcpu->run->s.regs.regs = st->regs;
	vcpu->run->s.regs.sregs = st->sregs;
	*kvm_ran = false;
	return 0;
}

/* The NMI KVM holds for the guest (KVM_NMI, a PMI), delivered by the VMM; false if it cannot. */
static bool deliver_nmi(struct vcpu *vcpu, struct emu_state *st, struct kvm_vcpu_events *ev)
{
	if (!engine_deliver_event(vcpu, st, 2, st->regs.rip, -1, false))
		return false;
	ev->nmi.pending = 0;
	ev->nmi.injected = 0;
	ev->nmi.masked = 1; /* until the handler's IRETQ */
	engine_of(vcpu)->nmi_blocked = true;
	ev->flags = KVM_VCPUEVENT_VALID_NMI_PENDING;
	ioctl(vcpu->fd, KVM_SET_VCPU_EVENTS, ev);
	engine_of(vcpu)->stats.events_by_vmm++;
	return true;
}

/*
 * x->vmm_events: an NMI or an interrupt the guest accepts now is delivered
 * by the VMM before the engine runs (st: at the handler). KVM acknowledges
 * the interrupt, so that its LAPIC (IRR, ISR, PPR, a pending timer tick)
 * and the I/O APIC and PIC stay its own: a KVM_RUN with one of the vCPU
 * thread's kick signals pending lets KVM inject the highest interrupt and
 * then, before it enters the guest, cancel the entry for the signal, the
 * interrupt left as injected (KVM_GET_VCPU_EVENTS); a pending timer tick
 * takes one more such run to reach the IRR. The VMM then takes it back
 * from KVM and delivers it. The kick stays pending for the run loop to
 * drain (a KICK_OTHER: nothing to do). Returns 0 to go on in the engine;
 * 1 if the guest ran in KVM after all: *rc is that KVM_RUN's result, an
 * exit for the run loop.
 */
static int deliver_pending(struct vcpu *vcpu, struct emu_state *st, struct kvm_vcpu_events *ev,
			   struct emu_run_args *a, int *rc)
{
	struct engine_vcpu *x = engine_of(vcpu);
	bool deliverable;
	int irq, timer_vector;

	if ((ev->nmi.pending || ev->nmi.injected) && !ev->nmi.masked) {
		if (!deliver_nmi(vcpu, st, ev))
			x->stats.engine_errors++;
		return 0;
	}
	if (!(st->regs.rflags & RFLAGS_IF))
		return 0;
	irq = engine_lapic_pending(vcpu, &deliverable, &timer_vector);
	if (irq < 0 || !deliverable)
		return 0;
	if (ev->interrupt.shadow) {
		/* After STI or MOV SS the CPU delivers it one instruction later: run exactly that one. */
		a->nwatch = 1;
		a->watch[0] = (struct emu_watch){ EMU_EV_INSNS, EMU_RING_USER | EMU_RING_KERNEL, 1 };
		return 0;
	}
	if (state_to_kvm(vcpu))
		return 0;
	syscall(SYS_tgkill, getpid(), vcpu->tid, KICK_SIGNO);
	for (int i = 0; i < 3; i++) {
		x->stats.ack_runs++;
		*rc = ioctl(vcpu->fd, KVM_RUN, 0);
		if (*rc == 0 || errno != EINTR) {
			escaped(x); /* the guest ran natively until an exit */
			return 1;
		}
		if (ioctl(vcpu->fd, KVM_GET_VCPU_EVENTS, ev) < 0 || ev->interrupt.injected || ev->nmi.injected)
			break;
	}
	/* KVM did not run the guest: its registers are still st's. Any expired timer went to the IRR. */
	x->state_valid = true;
	engine_lapic_forget(x);
	if (ev->nmi.injected) {
		if (!deliver_nmi(vcpu, st, ev))
			x->stats.engine_errors++;
	} else if (ev->interrupt.injected && !ev->interrupt.soft) {
		if (engine_deliver_event(vcpu, st, ev->interrupt.nr, st->regs.rip, -1, false)) {
			ev->interrupt.injected = 0;
			ev->flags = 0;
			ioctl(vcpu->fd, KVM_SET_VCPU_EVENTS, ev);
			x->stats.events_by_vmm++;
		} else {
			x->stats.engine_errors++; /* KVM delivers it at the next entry */
		}
	}
	return 0;
}

/* STI in place only when no interrupt waits for IF: else KVM's step of it delivers that one after the next instruction. */
static bool sti_may_run(struct vcpu *vcpu)
{
	return !irq_deliverable(vcpu);
}

/* A system instruction engine_system_in_place did, in the statistics; false if it did none. */
static bool count_sysinsn(struct engine_vcpu *x, enum emu_sysinsn k)
{
	switch (k) {
	case EMU_SYS_CLI:
		x->stats.cli_in_place++;
		return true;
	case EMU_SYS_STI:
		x->stats.sti_in_place++;
		return true;
	case EMU_SYS_MOV_SREG:
		x->stats.sreg_reads_in_place++;
		return true;
	case EMU_SYS_SWAPGS:
	case EMU_SYS_FSGSBASE:
		x->stats.gs_in_place++;
		return true;
	case EMU_SYS_CLAC:
	case EMU_SYS_STAC:
		x->stats.ac_in_place++;
		return true;
	default:
		return false;
	}
}

/*
 * What the VMM does in the emulator's place without ending its run
 * (emu_run_args.in_place): RDTSC(P) from KVM's TSC, a locked instruction
 * with the host's (atomic against the other vCPUs), and the system
 * instructions of engine_system_in_place.
 */
static bool engine_in_place(void *opaque, enum emu_handback why, struct kvm_regs *regs, struct kvm_sregs *sregs)
{
	struct vcpu *vcpu = opaque;
	struct engine_vcpu *x = engine_of(vcpu);
	enum emu_sysinsn k;
	struct emu_state st;

	st.regs = *regs;
	st.sregs = *sregs;
	switch (why) {
	case EMU_HB_HOST_VALUE:
		if (engine_rdtsc(vcpu, &st))
			x->stats.tsc_in_place++;
		else if (engine_rdpkru(vcpu, &st))
			x->stats.pkru_in_place++;
		else
			return false;
		break;
	case EMU_HB_LOCKED:
		if (!engine_locked_in_place(vcpu, &st))
			return false;
		x->stats.locked_in_place++;
		break;
	case EMU_HB_SYSTEM:
		k = engine_system_in_place(vcpu, &st, sti_may_run);
		if (!count_sysinsn(x, k))
			return false;
		if (k == EMU_SYS_STI) {
			x->sti_in_run = true;
			x->sti_next_rip = st.regs.rip;
		}
		break;
	default:
		return false;
	}
	*regs = st.regs;
	sregs->fs.base = st.sregs.fs.base;
	sregs->gs.base = st.sregs.gs.base;
	return true;
}

/* STI's interrupt shadow, for the instruction after an STI done in place: KVM's, which the next run and step read. */
static void sti_shadow_to_kvm(struct vcpu *vcpu)
{
	struct kvm_vcpu_events ev;

	if (ioctl(vcpu->fd, KVM_GET_VCPU_EVENTS, &ev) < 0)
		goto fail;
	ev.interrupt.shadow = KVM_X86_SHADOW_INT_STI;
	ev.flags = KVM_VCPUEVENT_VALID_SHADOW;
	if (ioctl(vcpu->fd, KVM_SET_VCPU_EVENTS, &ev) < 0)
		goto fail;
	return;
fail:
	engine_of(vcpu)->stats.engine_errors++;
}

static bool sti_always(struct vcpu *vcpu)
{
	(void)vcpu;
	return true;
}

/*
 * A system instruction the run stopped at, done by the VMM without a KVM
 * step; the next run goes on after it. The guest kernel's own PMU
 * registers (the PMI handler's) and RDPMC (KVM has no exit for it: done
 * here, or KVM raises #GP); the LAPIC's registers; and STI with an
 * interrupt waiting, which engine_in_place leaves: done here, the run
 * having ended on it, with KVM given STI's interrupt shadow, so that the
 * interrupt comes after the next instruction, as on the CPU.
 */
static bool system_after_run(struct vcpu *vcpu, struct emu_state *st)
{
	struct engine_vcpu *x = engine_of(vcpu);
	enum emu_sysinsn k;

	if (engine_msr_in_place(vcpu, st)) {
		x->stats.msrs_in_place++;
		return true;
	}
	if (engine_rdpmc_in_place(vcpu, st)) {
		x->stats.rdpmcs_in_place++;
		return true;
	}
	if (engine_lapic_wrmsr_in_place(vcpu, st)) {
		x->stats.apic_msrs_in_place++;
		return true;
	}
	k = engine_system_in_place(vcpu, st, sti_always);
	if (!count_sysinsn(x, k))
		return false;
	engine_count_insn(vcpu, st->sregs.cs.dpl == 3 ? EMU_RING_USER : EMU_RING_KERNEL);
	if (k == EMU_SYS_STI)
		sti_shadow_to_kvm(vcpu);
	return true;
}

int engine_run(struct vcpu *vcpu, bool *kvm_ran)
{
	struct engine_vcpu *x = engine_of(vcpu);
	/*
	 * immediate_exit: a stop request sets it, as for KVM_RUN. The kicks of
	 * the guest sampler and the vPMU stay pending (kick.h) until the slice
	 * ends and the run loop takes them.
	 */
	struct emu_run_args a = { .max_insns = ENGINE_SLICE_INSNS, .stop_flag = &vcpu->run->immediate_exit,
				  .in_place = engine_in_place, .in_place_opaque = vcpu };
	struct kvm_vcpu_events ev;
	struct emu_result r;
	struct emu_state st;
	bool deliverable;
	int irq, timer_vector;

	uint64_t t0, t1, t2;

	*kvm_ran = true;
	if (x->stepping)
		return ioctl(vcpu->fd, KVM_RUN, 0);
	t0 = engine_now_ns();
	if (x->exit_unfinished) {
		/* Let KVM finish the exit without running guest code: KVM_RUN with immediate_exit (api.rst). */
		x->exit_unfinished = false;
		__atomic_store_n(&vcpu->run->immediate_exit, 1, __ATOMIC_RELAXED);
		ioctl(vcpu->fd, KVM_RUN, 0);
		if (!vm_stopping(vcpu->vm))
			__atomic_store_n(&vcpu->run->immediate_exit, 0, __ATOMIC_RELAXED);
	}
	pay_owed(vcpu);
	if (!x->state_valid && !get_state(vcpu, &x->state))
		x->state_valid = true;
	if (!x->state_valid || ioctl(vcpu->fd, KVM_GET_VCPU_EVENTS, &ev) < 0) {
		x->stats.engine_errors++;
		state_to_kvm(vcpu);
		return ioctl(vcpu->fd, KVM_RUN, 0);
	}
	st = x->state;
	x->nmi_blocked = ev.nmi.masked;
	if (ev.interrupt.shadow && x->shadow_spent) {
		/*
		 * Over: the instruction after the STI or MOV SS ran in the engine.
		 * Left set, each run would be one instruction (and KVM would hold
		 * off its next interrupt for one more once it runs the vCPU).
		 */
		ev.interrupt.shadow = 0;
		ev.flags = KVM_VCPUEVENT_VALID_SHADOW;
		if (ioctl(vcpu->fd, KVM_SET_VCPU_EVENTS, &ev) < 0)
			x->stats.engine_errors++;
		x->shadow_spent = false;
	}
	if (x->halted && still_halted(vcpu, &st, &ev))
		return step(vcpu, &st, EMU_HB_NONE, false, -1, kvm_ran);
	if (x->vmm_events) {
		int rc;

		if (deliver_pending(vcpu, &st, &ev, &a, &rc))
			return rc;
		goto engine;
	}
	/* What KVM must deliver first: an NMI (a PMI), or an interrupt the guest accepts now. */
	if ((ev.nmi.pending || ev.nmi.injected) && (!ev.nmi.masked || st.sregs.cs.dpl == 0))
		return step(vcpu, &st, EMU_HB_NONE, false, 2, kvm_ran);
	irq = engine_lapic_pending(vcpu, &deliverable, &timer_vector);
	/*
	 * In ring 3 only what KVM surely delivers on entry may be stepped for:
	 * an IRR bit. A tick KVM holds as a pending timer is delivered on the
	 * way in to ring 0 here, not into ring 3 (seen on this host: ring 3
	 * ran on natively); it waits for the vCPU's next entry to ring 0 (a
	 * system call, a PMI, any KVM step), whose step watches its handler.
	 */
	if (irq >= 0 && st.sregs.cs.dpl == 3 && !irq_in_irr(vcpu))
		irq = -1;
	if (irq >= 0 && deliverable && (st.regs.rflags & RFLAGS_IF)) {
		if (!ev.interrupt.shadow)
			return step(vcpu, &st, EMU_HB_NONE, false, irq, kvm_ran);
		/* After STI or MOV SS the CPU delivers it one instruction later: run exactly that one. */
		a.nwatch = 1;
		a.watch[0] = (struct emu_watch){ EMU_EV_INSNS, EMU_RING_USER | EMU_RING_KERNEL, 1 };
	}
engine:
	/*
	 * A CR3 write flushes what a TLB holds but its global entries (with
	 * CR4.PGE): a Linux kernel's text and direct map stay mapped and
	 * decoded across task switches. Anything else that changes
	 * translations drops everything.
	 */
	if (x->flush || (x->flush_nonglobal && !(st.sregs.cr4 & X86_CR4_PGE)))
		emu_invalidate(x->emu);
	else if (x->flush_nonglobal)
		emu_flush_nonglobal(x->emu);
	x->flush = false;
	x->flush_nonglobal = false;
	EACH_CLIENT(c, x) {
		if ((*c)->watches)
			a.nwatch += (*c)->watches(vcpu, a.watch + a.nwatch, EMU_MAX_WATCHES - a.nwatch);
	}
	x->stats.engine_runs++;
	x->sti_in_run = false;
	t1 = engine_now_ns();
	if (emu_run(x->emu, &st, &a, &r)) {
		x->stats.engine_errors++;
		return step(vcpu, &st, EMU_HB_REFUSED, false, -1, kvm_ran);
	}
	t2 = engine_now_ns();
	if (ev.interrupt.shadow && r.counts.ev[0][EMU_EV_INSNS] + r.counts.ev[1][EMU_EV_INSNS])
		x->shadow_spent = true;
	if (x->sti_in_run) {
		x->sti_in_run = false;
		/* A run back at that RIP later gets a shadow it did not need: one instruction's delay, no more. */
		if (st.regs.rip == x->sti_next_rip)
			sti_shadow_to_kvm(vcpu);
	}
	engine_counted(vcpu, &r.counts);
	if (r.stop == EMU_STOP_HANDBACK && r.handback == EMU_HB_SYSTEM && system_after_run(vcpu, &st))
		r.stop = EMU_STOP_BUDGET;
	x->state = st;
	x->kvm_stale = true;
	/* Where readers of KVM's synced registers (the guest sampler) look; KVM ignores them unless marked dirty. */
	vcpu->run->s.regs.regs = st.regs;
	vcpu->run->s.regs.sregs = st.sregs;
	x->stats.transfer_ns += (t1 - t0) + (engine_now_ns() - t2);
	if (r.stop == EMU_STOP_HANDBACK) {
		struct guest_paging pg;
		uint64_t at = st.regs.rip;

		if (r.handback == EMU_HB_SYSTEM && st.sregs.cs.dpl == 0 && !engine_paging(&st, &pg) &&
		    engine_is_iretq(vcpu, &st, &pg) && engine_iretq(vcpu, &st, &pg)) {
			/*
			 * An IRETQ to the instruction after it, within ring 0: Linux's
			 * sync_core(), which every CPU runs (text_poke_bp's IPIs)
			 * after one of them patched kernel code through another
			 * mapping. The emulator's translations of the old code go,
			 * as a CPU's do at a serializing instruction.
			 */
			if (st.regs.rip == at + 2 && st.sregs.cs.dpl == 0) {
				x->flush = true;
				x->stats.serializing_flushes++;
			}
			count_iret(vcpu);
			return done_by_vmm(vcpu, &st, kvm_ran);
		}
		unsigned int ring = st.sregs.cs.dpl == 3 ? EMU_RING_USER : EMU_RING_KERNEL;

		if (r.handback == EMU_HB_SYSTEM && x->vmm_events && !engine_paging(&st, &pg) && engine_syscall(vcpu, &st, &pg)) {
			/*
			 * Not a KVM step: a single step of SYSCALL saved the step's TF
			 * in R11, which Linux keeps as the user's flags and returns to
			 * with IRETQ (TF forbids SYSRET): ring 3 then ran with a TF the
			 * guest never set (seen after each SYSCALL of a Linux guest's
			 * busybox at 88d21ea), every instruction a KVM step.
			 */
			count_far_branch(vcpu, ring);
			x->stats.syscalls_in_place++;
			return done_by_vmm(vcpu, &st, kvm_ran);
		}
		if (r.handback == EMU_HB_SYSTEM && x->vmm_events && !engine_paging(&st, &pg) && engine_sysret(vcpu, &st, &pg)) {
			/* Not a KVM step: its single step does not trap after SYSRET (engine_guest.h), ring 3 ran natively. */
			count_far_branch(vcpu, ring);
			x->stats.sysrets_in_place++;
			return done_by_vmm(vcpu, &st, kvm_ran);
		}
		if (r.handback == EMU_HB_FAULT && deliver_page_fault(vcpu, &st, &r))
			return done_by_vmm(vcpu, &st, kvm_ran);
		return step(vcpu, &st, r.handback, r.page_fault, -1, kvm_ran);
	}
	*kvm_ran = false;
	return 0;
}

static void add_u64s(uint64_t *sum, const uint64_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sum[i] += v[i];
}

void engine_print_stats(struct vm *vm)
{
	struct engine_stats t = { 0 };
	struct emu_stats e = { 0 };
	bool any = false, vmm_events = false;

	for (unsigned int i = 0; i < vm->cfg->ncpus; i++) {
		const struct engine_vcpu *x = engine_of(&vm->vcpu[i]);
		struct emu_stats s;

		if (!x->emu)
			continue;
		any = true;
		vmm_events = x->vmm_events; /* set when its engine started, the same on every vCPU */
		emu_get_stats(x->emu, &s);
		/* Both are all uint64_t counters: summed field by field. */
		add_u64s((uint64_t *)&e, (const uint64_t *)&s, sizeof(e) / sizeof(uint64_t));
		add_u64s((uint64_t *)&t, (const uint64_t *)&x->stats, sizeof(t) / sizeof(uint64_t));
	}
	if (!any)
		return;
	fprintf(stderr,
		"  emulation engine: %llu instructions in the emulator (%.1f M/s while in it), %llu KVM steps "
		"(%llu instructions completed in KVM, %llu faulted or delivered an event, %llu NMIs/interrupts)\n"
		"    escapes (guest ran natively, uncounted, until the next exit) %llu, engine errors %llu, "
		"pages mapped %llu (%llu found stale at a write), blocks decoded %llu, flags recomputed after a stop inside a block (a page fault, a hand-back) %llu"
		"%s%.0llu%s\n    hand-backs inside blocks: %llu hooked, %llu blocks run part-way; done by the VMM within the "
		"engine's run (RDTSC, locked, CLI/STI, segment reads, SWAPGS, FSGSBASE, CLAC/STAC): %llu\n"
		"    instructions hooked for a precise fault RIP (SSE, x87, atomics) %llu (faults Unicorn ran past %llu, "
		"helper accesses refused before they ran %llu), "
		"blocks handed to KVM for want of a hook %llu\n    hand-backs:",
		(unsigned long long)e.insns, e.run_ns ? (double)e.insns * 1e3 / (double)e.run_ns : 0.0,
		(unsigned long long)t.steps, (unsigned long long)t.step_insns, (unsigned long long)t.steps_faulted,
		(unsigned long long)t.events_delivered, (unsigned long long)t.escapes,
		(unsigned long long)t.engine_errors, (unsigned long long)e.pages_mapped, (unsigned long long)e.stale_mappings,
		(unsigned long long)e.blocks_decoded, (unsigned long long)e.flags_repaired,
		e.flags_unknown ? " (could not recompute them: " : "", (unsigned long long)e.flags_unknown,
		e.flags_unknown ? ")" : "", (unsigned long long)e.sites, (unsigned long long)e.partial_runs,
		(unsigned long long)e.in_place, (unsigned long long)e.sync_sites, (unsigned long long)e.ran_past_fault,
		(unsigned long long)e.helper_faults_first, (unsigned long long)e.unsynced_handbacks);
	for (unsigned int h = 1; h < EMU_HB_COUNT; h++)
		if (e.handbacks[h])
			fprintf(stderr, " %s %llu,", emu_handback_name(h), (unsigned long long)e.handbacks[h]);
	fputc('\n', stderr);
	fprintf(stderr,
		"    engine runs %llu, each with %.1f us of state transfer and interrupt checks; a KVM step %.1f us; "
		"done by the VMM: IRETQs %llu, PMU RDMSR/WRMSR %llu, x2APIC/TSC-deadline WRMSR %llu, RDTSC(P) %llu, "
		"RDPKRU %llu, RDPMC %llu, locked instructions %llu, CLI %llu, STI %llu, segment-register reads %llu, "
		"SWAPGS/FSGSBASE %llu, CLAC/STAC %llu\n",
		(unsigned long long)t.engine_runs,
		t.engine_runs ? (double)t.transfer_ns / (double)t.engine_runs / 1e3 : 0.0,
		t.steps ? (double)t.step_ns / (double)t.steps / 1e3 : 0.0, (unsigned long long)t.irets,
		(unsigned long long)t.msrs_in_place, (unsigned long long)t.apic_msrs_in_place,
		(unsigned long long)t.tsc_in_place, (unsigned long long)t.pkru_in_place, (unsigned long long)t.rdpmcs_in_place, (unsigned long long)t.locked_in_place,
		(unsigned long long)t.cli_in_place, (unsigned long long)t.sti_in_place,
		(unsigned long long)t.sreg_reads_in_place, (unsigned long long)t.gs_in_place,
		(unsigned long long)t.ac_in_place);
	if (debug_caps.probed)
		fprintf(stderr,
			"    this KVM: hardware breakpoints %s in ring 0, %s in ring 3; single steps %s, %s; %s%s\n",
			debug_caps.hw_bp[0] ? "fire" : "do not fire", debug_caps.hw_bp[1] ? "fire" : "do not fire",
			debug_caps.single_step[0] ? "fire" : "do not fire", debug_caps.single_step[1] ? "fire" : "do not fire",
			vmm_events ? "so KVM steps are single steps and the VMM delivers events" :
						       "KVM steps stop at breakpoints",
			debug_caps.tr_busy_reported ? "; TR read back busy (given back available)" : "");
	if (t.events_by_vmm || t.ack_runs)
		fprintf(stderr, "    events delivered by the VMM %llu (page faults %llu; interrupts acknowledged by KVM in %llu KVM_RUNs)\n",
			(unsigned long long)t.events_by_vmm, (unsigned long long)t.page_faults_by_vmm, (unsigned long long)t.ack_runs);
	if (t.syscalls_in_place || t.sysrets_in_place)
		fprintf(stderr, "    SYSCALLs done by the VMM %llu, SYSRETs %llu\n", (unsigned long long)t.syscalls_in_place,
			(unsigned long long)t.sysrets_in_place);
	if (t.escapes && vmm_events)
		fprintf(stderr, "    frames of events KVM delivered in a single step, cleared of the step's TF %llu\n",
			(unsigned long long)t.step_tf_cleared);
	if (t.halts)
		fprintf(stderr, "    HLTs KVM held halted after their single step %llu (woken by an event the VMM delivered "
			"%llu, the rest in KVM)\n", (unsigned long long)t.halts, (unsigned long long)t.halt_wakes_by_vmm);
	if (t.xsave_refused)
		fprintf(stderr, "    x87/SSE state given back with KVM_SET_FPU after KVM refused its XSAVE image %llu\n",
			(unsigned long long)t.xsave_refused);
	if (t.serializing_flushes)
		fprintf(stderr, "    translated code dropped at an IRETQ to itself (the guest's sync_core after code patching) %llu\n",
			(unsigned long long)t.serializing_flushes);
	fprintf(stderr,
		"    mappings and decoded blocks dropped %llu times (%llu of them all but global pages): after a KVM step that "
		"changes translations %llu, after the guest ran natively %llu, at code patching %llu, at a CR3 the engine had "
		"not seen %llu\n",
		(unsigned long long)e.invalidations + (unsigned long long)e.nonglobal_flushes, (unsigned long long)e.nonglobal_flushes,
		(unsigned long long)t.flushes_step,
		(unsigned long long)t.flushes_native, (unsigned long long)t.serializing_flushes,
		(unsigned long long)e.cr3_invalidations);
	fprintf(stderr, "    time in the engine's runs %.1f s (of it mapping pages %.1f s, decoding blocks %.1f s); dropping every "
		"mapping %.1f s\n", (double)e.run_ns / 1e9, (double)e.map_ns / 1e9, (double)e.decode_ns / 1e9,
		(double)e.unmap_ns / 1e9);
}

static bool engine_wanted(const struct vm *vm)
{
	const struct engine_client *c[ENGINE_CLIENTS_MAX];

	return wanted_clients(vm, c) > 0;
}

/* The vCPUs a client needs in the engine run there instead of in KVM. */
static bool engine_take_run(struct vcpu *vcpu, int *rc, bool *kvm_ran)
{
	if (!engine_active(vcpu))
		return false;
	*rc = engine_run(vcpu, kvm_ran);
	return true;
}

/* A step must come back even if the guest leaves it: an exit within 1 ms finds it (engine_after_exit). */
static void engine_before_run(struct vcpu *vcpu)
{
	if (engine_of(vcpu)->stepping)
		vcpu_exit_within(vcpu, ENGINE_STEP_EXIT_NS);
}

#define KVM_CPUID_FEATURES_LEAF 0x40000001u
#define KVM_FEATURE_PV_TLB_FLUSH_BIT 9

/*
 * KVM's paravirtual remote TLB flush, hidden from a guest the engine may
 * run: with it, a vCPU that finds another "preempted" (KVM's flag in the
 * steal-time area, left set from that vCPU's last KVM_RUN) marks it to
 * flush at its next entry into KVM instead of sending it the IPI whose
 * handler runs INVLPG or a CR3 write. The engine keeps the vCPU out of
 * KVM and would go on with the page mappings it made before the guest
 * changed the page tables: seen as copy-on-write pages still written
 * after fork, a Linux guest's processes crashing at once under perf.
 * Without it, Linux flushes remote TLBs with IPIs, which the engine sees.
 */
static void hide_pv_tlb_flush(struct kvm_cpuid_entry2 *e)
{
	if (e->function == KVM_CPUID_FEATURES_LEAF)
		e->eax &= ~(1u << KVM_FEATURE_PV_TLB_FLUSH_BIT);
}

#define BIT(n) (1u << (n))

/*
 * The VEX-, EVEX- and XOP-encoded instruction sets and MOVBE, hidden from a
 * guest the engine may run, as a CPU model without them: the engine hands
 * each such instruction to KVM as a single step (emu_decode.c: Unicorn
 * 2.0.1 lacks them or computes them wrongly), ~2 ms each in the nested
 * harness, and glibc picks its AVX2 string functions, made of them, for
 * every memcpy and strlen when CPUID offers AVX2. Without them it picks its
 * SSE2 ones, which Unicorn runs (test_emu_vs_cpu). XSAVE stays; its YMM and
 * AVX-512 state components go with AVX, so Linux does not enable them in
 * XCR0 (and KVM refuses an XSETBV that tries). The guest sees a CPU without
 * AVX for as long as it runs: the features cannot come back once counting
 * stops, any more than on hardware.
 */
static void hide_vex_features(struct kvm_cpuid_entry2 *e)
{
	switch (e->function) {
	case 1: /* FMA, MOVBE, AVX, F16C */
		e->ecx &= ~(BIT(12) | BIT(22) | BIT(28) | BIT(29));
		break;
	case 7:
		if (e->index == 0) {
			/* BMI1, AVX2, BMI2, AVX512F/DQ/IFMA/PF/ER/CD/BW/VL */
			e->ebx &= ~(BIT(3) | BIT(5) | BIT(8) | BIT(16) | BIT(17) | BIT(21) | BIT(26) | BIT(27) | BIT(28) |
				    BIT(30) | BIT(31));
			/* AVX512_VBMI, AVX512_VBMI2, VAES, VPCLMULQDQ, AVX512_VNNI, AVX512_BITALG, AVX512_VPOPCNTDQ */
			e->ecx &= ~(BIT(1) | BIT(6) | BIT(9) | BIT(10) | BIT(11) | BIT(12) | BIT(14));
			/* AVX512_4VNNIW, AVX512_4FMAPS, AVX512_VP2INTERSECT, AVX512_FP16 */
			e->edx &= ~(BIT(2) | BIT(3) | BIT(8) | BIT(23));
		} else if (e->index == 1) {
			e->eax &= ~(BIT(4) | BIT(5)); /* AVX_VNNI, AVX512_BF16 */
		}
		break;
	case 0xd:
		if (e->index == 0)
			e->eax &= ~(BIT(2) | BIT(5) | BIT(6) | BIT(7)); /* YMM, opmask, ZMM_Hi256, Hi16_ZMM */
		break;
	case 0x80000001: /* XOP, FMA4, TBM */
		e->ecx &= ~(BIT(11) | BIT(16) | BIT(21));
		break;
	default:
		break;
	}
}

static struct kvm_cpuid2 *engine_cpuid(const struct vm *vm, struct kvm_cpuid2 *cpuid)
{
	if (!engine_wanted(vm))
		return cpuid;
	for (unsigned int i = 0; i < cpuid->nent; i++) {
		hide_pv_tlb_flush(&cpuid->entries[i]);
		hide_vex_features(&cpuid->entries[i]);
	}
	return cpuid;
}

const struct vcpu_hooks engine_hooks = {
	.name = "emulation engine",
	.vcpu_size = sizeof(struct engine_vcpu),
	.cpuid = engine_cpuid,
	.init = engine_vcpu_init,
	.destroy = engine_vcpu_destroy,
	.before_run = engine_before_run,
	.run = engine_take_run,
	.after_exit = engine_after_exit,
};


/*
 * "the emulation engine (for CLIENT and CLIENT)": this VM's clients; and
 * the first one's words on doing without. The message that uses it is
 * printed at once: one buffer does.
 */
static const char *engine_name_in(const struct vm *vm, const char **instead)
{
	static char name[160];
	const struct engine_client *c[ENGINE_CLIENTS_MAX];
	size_t used;

	wanted_clients(vm, c);
	*instead = c[0] ? c[0]->instead : NULL;
	used = (size_t)snprintf(name, sizeof(name), "the emulation engine (for ");
	for (unsigned int i = 0; c[i] && used < sizeof(name); i++)
		used += (size_t)snprintf(name + used, sizeof(name) - used, "%s%s", i ? " and " : "", c[i]->name);
	if (used < sizeof(name))
		snprintf(name + used, sizeof(name) - used, ")");
	return name;
}

/* A KVM step: breakpoints where the vCPU can come back to (all four), or a single step. */
const struct guest_debug_client engine_debug_client = {
	.name = "the emulation engine",
	.name_in = engine_name_in,
	.slots = 4,
	.steps = true,
	.wanted = engine_wanted,
	.debug_exit = engine_debug_exit,
};
