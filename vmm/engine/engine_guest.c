// SPDX-License-Identifier: MIT
/*
 * What the VMM does in the guest's place for the engine (engine.h):
 * reading the guest's IDT and GDT, IRETQ back to ring 3, the ring-0 MSR
 * accesses a client answers, RDTSC(P), locked instructions (emu_locked.h), and the interrupt frames a KVM
 * step leaves. Every guest address goes through vmi's page walker.
 */
#include "engine_guest.h"

#include <cpuid.h>
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include "emu_locked.h"
#include "engine.h"
#include "guest_idt.h"
#include "vm.h"

#define MSR_IA32_TSC 0x10u
#define MSR_TSC_AUX 0xc0000103u
#define X86_CR4_TSD (1ULL << 2)
#define X86_CR4_PCE (1ULL << 8)
#define X86_CR0_WP (1ULL << 16)
#define X86_CR4_SMAP (1ULL << 21)
#define X86_CR4_PKE (1ULL << 22)
#define RFLAGS_AC (1ULL << 18)
#define RFLAGS_IF (1ULL << 9)

int engine_paging(const struct emu_state *st, struct guest_paging *pg)
{
	return guest_paging_init(pg, st->sregs.cr0, st->sregs.cr3, st->sregs.cr4, st->sregs.efer);
}

int engine_read_virt(struct vcpu *vcpu, const struct guest_paging *pg, uint64_t gva, void *buf, uint64_t len)
{
	const struct vmi_mem ram = guest_mem_vmi(&vcpu->vm->mem);

	return guest_read_virt(&ram, pg, gva, buf, len);
}

size_t engine_read_insn(struct vcpu *vcpu, const struct guest_paging *pg, uint64_t rip, uint8_t code[15])
{
	size_t n = 15;

	/* The whole 15 bytes, or what is left of RIP's page when the next one cannot be read. */
	while (n && engine_read_virt(vcpu, pg, rip, code, n))
		n = (0x1000 - (rip & 0xfff)) < n ? 0x1000 - (rip & 0xfff) : 0;
	return n;
}

/* The handler of IDT vector vec (a 64-bit gate), or 0. */
uint64_t engine_idt_handler(struct vcpu *vcpu, const struct emu_state *st, unsigned int vec)
{
	const struct vmi_mem ram = guest_mem_vmi(&vcpu->vm->mem);
	struct guest_paging pg;

	if (engine_paging(st, &pg))
		return 0;
	return guest_idt_handler(&ram, &pg, st->sregs.idt.base, st->sregs.idt.limit, vec);
}

/* Vectors whose frame has an error code below RIP. */
bool engine_pushes_error_code(int vec)
{
	return vec == 8 || (vec >= 10 && vec <= 14) || vec == 17 || vec == 21 || vec == 29 || vec == 30;
}

/*
 * Clears flags in the RFLAGS image of an interrupt frame in guest memory:
 * RF, which an interrupt delivered at an instruction sets so that the
 * IRETQ back suppresses instruction breakpoints there (ours too), and TF,
 * which a single-stepped instruction that raised an exception pushes (the
 * guest's IRETQ would bring the VMM's stepping back). Neither means
 * anything else to a guest whose debug registers the VMM holds.
 */
void engine_clear_frame_flags(struct vcpu *vcpu, const struct guest_paging *pg, uint64_t gva, uint64_t flags)
{
	const struct vmi_mem ram = guest_mem_vmi(&vcpu->vm->mem);
	struct guest_translation t;
	uint64_t *rflags;

	if (gva % 8 || guest_walk_translate(&ram, pg, gva, &t))
		return;
	rflags = guest_mem_ptr(&vcpu->vm->mem, t.gpa, 8);
	if (rflags)
		__atomic_fetch_and(rflags, ~flags, __ATOMIC_RELAXED);
}

/* How far above the handler's RSP a step's frame is looked for: Linux's 16 KiB task stack. */
#define STEP_FRAME_SEARCH (16 * 1024)

unsigned int engine_clear_step_tf(struct vcpu *vcpu, const struct guest_paging *pg, uint64_t rsp,
				  const struct step_frame *f)
{
	uint64_t q[(STEP_FRAME_SEARCH + 4096) / 8], start = rsp & ~7ULL, len = 0;
	size_t at[4], n;

	/* Page by page: the stack ends where its mapping does. */
	while (len < STEP_FRAME_SEARCH) {
		uint64_t chunk = 4096 - ((start + len) & 4095);

		if (engine_read_virt(vcpu, pg, start + len, (uint8_t *)q + len, chunk))
			break;
		len += chunk;
	}
	n = step_frame_find(q, len / 8, f, at, sizeof(at) / sizeof(at[0]));
	for (size_t i = 0; i < n; i++)
		engine_clear_frame_flags(vcpu, pg, start + 8 * (at[i] + 2), RFLAGS_TF);
	return (unsigned int)n;
}

/* A segment descriptor from the guest's GDT, as KVM's segment state; false if absent or not readable. */
static bool gdt_segment(struct vcpu *vcpu, const struct emu_state *st, const struct guest_paging *pg,
			uint16_t sel, struct kvm_segment *out)
{
	uint64_t d;

	if ((sel & 4) || sel < 8 || st->sregs.gdt.limit < (sel & ~7u) + 7u ||
	    engine_read_virt(vcpu, pg, st->sregs.gdt.base + (sel & ~7u), &d, 8))
		return false;
	*out = (struct kvm_segment){
		.base = ((d >> 16) & 0xffffff) | ((d >> 32) & 0xff000000),
		.limit = (uint32_t)((d & 0xffff) | ((d >> 32) & 0xf0000)),
		.selector = sel,
		.type = (d >> 40) & 0xf,
		.s = (d >> 44) & 1,
		.dpl = (d >> 45) & 3,
		.present = (d >> 47) & 1,
		.avl = (d >> 52) & 1,
		.l = (d >> 53) & 1,
		.db = (d >> 54) & 1,
		.g = (d >> 55) & 1,
	};
	if (out->g)
		out->limit = (out->limit << 12) | 0xfff;
	return out->present;
}

#define TSS_AVAILABLE 9
#define TSS_BUSY 11

/*
 * KVM_SET_SREGS of s, without its interrupt bitmap (a copy left with one
 * would have KVM queue that interrupt again). Where KVM reports TR busy
 * whatever it holds (KVM on AMD: the VMCB keeps it available, as LTR
 * left it), TR goes back available: written back busy, QEMU's TCG (the
 * nested harness's L1) checks a ring-3 port access against the TSS's
 * I/O bitmap only in an available TSS, and every port access a Linux
 * guest's ioperm() allowed raised #GP once the engine had run its vCPU
 * (the harness's l2-exit after `perf stat`). A real CPU reads neither.
 */
static bool set_kvm_sregs(struct vcpu *vcpu, const struct kvm_sregs *s)
{
	struct kvm_sregs sregs = *s;

	memset(sregs.interrupt_bitmap, 0, sizeof(sregs.interrupt_bitmap));
	if (engine_of(vcpu)->tr_busy_reported && sregs.tr.type == TSS_BUSY)
		sregs.tr.type = TSS_AVAILABLE;
	return ioctl(vcpu->fd, KVM_SET_SREGS, &sregs) == 0;
}

/*
 * A selector the frame of an IRETQ from ring 0 returns to, as KVM's
 * segment state: the one the vCPU has if it is the same (a return within
 * ring 0 mostly is), else from the GDT. False where the CPU would fault or
 * the descriptor is not plain. A null SS (what an interrupt from ring 3
 * loads) may be returned to within ring 0: taken as it is, if the vCPU
 * has it already, else left to KVM.
 */
static bool iret_segment(struct vcpu *vcpu, const struct emu_state *st, const struct guest_paging *pg, uint16_t sel,
			 const struct kvm_segment *now, bool code, struct kvm_segment *out)
{
	unsigned int rpl = sel & 3;

	if (!code && !(sel & ~3u)) {
		*out = *now;
		return rpl == 0 && sel == now->selector;
	}
	if (sel == now->selector && !now->unusable) {
		*out = *now;
	} else if (!gdt_segment(vcpu, st, pg, sel, out)) {
		return false;
	}
	if (!out->s || out->dpl != rpl)
		return false;
	if (code)
		return (out->type & 8) && out->l;
	return (out->type & 0xa) == 2; /* writable data */
}

/*
 * IRETQ in ring 0, done here: back to ring 3 (KVM cannot be stopped in
 * guest ring 3 on some hosts: breakpoints and single steps do not fire
 * there, so the vCPU must reach ring 3 in the engine) or within ring 0
 * (the return from an interrupt or exception taken in the kernel, Linux's
 * sync_core), which would otherwise cost a KVM step each. Returns false
 * if the frame is not a plain 64-bit return to ring 3 or 0 (KVM then runs
 * it and raises what the CPU would).
 */
bool engine_iretq(struct vcpu *vcpu, struct emu_state *st, const struct guest_paging *pg)
{
	struct kvm_segment cs, ss;
	struct kvm_vcpu_events ev;
	uint64_t f[5]; /* RIP, CS, RFLAGS, RSP, SS */
	unsigned int rpl;

	if (st->sregs.cs.dpl != 0 || engine_read_virt(vcpu, pg, st->regs.rsp, f, sizeof(f)))
		return false;
	rpl = f[1] & 3;
	if ((rpl != 0 && rpl != 3) || (f[4] & 3) != rpl || (f[1] >> 16) || (f[4] >> 16) ||
	    !iret_segment(vcpu, st, pg, (uint16_t)f[1], &st->sregs.cs, true, &cs) ||
	    !iret_segment(vcpu, st, pg, (uint16_t)f[4], &st->sregs.ss, false, &ss))
		return false;
	/* The return address must be canonical (else #GP, KVM's). */
	if ((uint64_t)((int64_t)(f[0] << 16) >> 16) != f[0])
		return false;
	if (ioctl(vcpu->fd, KVM_GET_VCPU_EVENTS, &ev) < 0)
		return false;
	st->regs.rip = f[0];
	/* From ring 0 every flag loads but VM and VIF/VIP; bit 1 is always set; RF is dropped. */
	st->regs.rflags = (f[2] & 0x3f7fd5ULL & ~RFLAGS_RF) | 2;
	st->regs.rsp = f[3];
	cs.base = 0; /* 64-bit code: base 0 */
	st->sregs.cs = cs;
	st->sregs.ss = ss;
	if (!set_kvm_sregs(vcpu, &st->sregs) || ioctl(vcpu->fd, KVM_SET_REGS, &st->regs) < 0)
		return false;
	/* IRETQ ends NMI blocking; KVM saw none. */
	engine_of(vcpu)->nmi_blocked = false;
	if (ev.nmi.masked) {
		ev.nmi.masked = 0;
		ev.flags = 0;
		ioctl(vcpu->fd, KVM_SET_VCPU_EVENTS, &ev);
	}
	return true;
}

#define EFER_SCE (1ULL << 0)

/* KVM's segments and registers from ns; on a failure the segments of was go back, and KVM's step runs the instruction. */
static bool set_kvm_state(struct vcpu *vcpu, const struct emu_state *was, const struct emu_state *ns)
{
	if (!set_kvm_sregs(vcpu, &ns->sregs))
		return false;
	if (ioctl(vcpu->fd, KVM_SET_REGS, &ns->regs) < 0) {
		set_kvm_sregs(vcpu, &was->sregs);
		return false;
	}
	return true;
}

bool engine_syscall(struct vcpu *vcpu, struct emu_state *st, const struct guest_paging *pg)
{
	struct {
		struct kvm_msrs h;
		struct kvm_msr_entry e[3];
	} m = { .h.nmsrs = 3, .e = { { .index = MSR_STAR }, { .index = MSR_LSTAR }, { .index = MSR_SYSCALL_MASK } } };
	struct emu_state ns;
	uint8_t b[2];
	uint16_t sel;

	if (!st->sregs.cs.l || !(st->sregs.efer & EFER_SCE) || engine_read_virt(vcpu, pg, st->regs.rip, b, 2) ||
	    b[0] != 0x0f || b[1] != 0x05 || ioctl(vcpu->fd, KVM_GET_MSRS, &m) != 3)
		return false;
	sel = (uint16_t)(m.e[0].data >> 32);
	ns = *st;
	ns.regs.rcx = st->regs.rip + 2;
	ns.regs.r11 = st->regs.rflags & ~RFLAGS_RF;
	ns.regs.rflags = (st->regs.rflags & ~(uint32_t)m.e[2].data & ~RFLAGS_RF) | 2;
	ns.regs.rip = m.e[1].data;
	/* Flat 64-bit code and data at DPL 0, whatever the GDT says (the CPU does not read it). */
	ns.sregs.cs = (struct kvm_segment){ .selector = sel & 0xfffc, .limit = 0xffffffff, .type = 11, .present = 1,
					    .s = 1, .l = 1, .g = 1 };
	ns.sregs.ss = (struct kvm_segment){ .selector = (uint16_t)(sel + 8), .limit = 0xffffffff, .type = 3,
					    .present = 1, .s = 1, .db = 1, .g = 1 };
	if (!set_kvm_state(vcpu, st, &ns))
		return false;
	*st = ns;
	return true;
}

bool engine_sysret(struct vcpu *vcpu, struct emu_state *st, const struct guest_paging *pg)
{
	struct {
		struct kvm_msrs h;
		struct kvm_msr_entry e[1];
	} m = { .h.nmsrs = 1, .e = { { .index = MSR_STAR } } };
	struct emu_state ns;
	uint8_t b[3];
	uint16_t sel;

	/* SYSRETQ (48 0f 07) from 64-bit ring 0 to a canonical RIP; anything else (a #GP, #UD, compatibility mode) is KVM's. */
	if (!st->sregs.cs.l || st->sregs.cs.dpl != 0 || !(st->sregs.efer & EFER_SCE) ||
	    engine_read_virt(vcpu, pg, st->regs.rip, b, 3) || b[0] != 0x48 || b[1] != 0x0f || b[2] != 0x07 ||
	    (uint64_t)((int64_t)(st->regs.rcx << 16) >> 16) != st->regs.rcx || ioctl(vcpu->fd, KVM_GET_MSRS, &m) != 1)
		return false;
	sel = (uint16_t)(m.e[0].data >> 48);
	ns = *st;
	ns.regs.rip = st->regs.rcx;
	/* R11 as RFLAGS, but RF and VM (and the reserved bits); bit 1 set. */
	ns.regs.rflags = (st->regs.r11 & 0x3c7fd7ULL) | 2;
	/* Flat 64-bit code and data at DPL 3 from STAR[63:48] (+16 and +8), whatever the GDT says. */
	ns.sregs.cs = (struct kvm_segment){ .selector = (uint16_t)((sel + 16) | 3), .limit = 0xffffffff, .type = 11,
					    .present = 1, .dpl = 3, .s = 1, .l = 1, .g = 1 };
	ns.sregs.ss = (struct kvm_segment){ .selector = (uint16_t)((sel + 8) | 3), .limit = 0xffffffff, .type = 3,
					    .present = 1, .dpl = 3, .s = 1, .db = 1, .g = 1 };
	if (!set_kvm_state(vcpu, st, &ns))
		return false;
	*st = ns;
	return true;
}

/*
 * RDMSR or WRMSR in ring 0 of a register a client answers (the vPMU's):
 * what KVM would have exited to the VMM for, done without entering KVM.
 * Returns false for anything else, and for an access that must raise #GP
 * (KVM raises it, and the MSR exit answers again).
 */
bool engine_msr_in_place(struct vcpu *vcpu, struct emu_state *st)
{
	uint32_t msr = (uint32_t)st->regs.rcx;
	struct guest_paging pg;
	uint64_t val = 0;
	uint8_t b[2];
	bool write;

	if (st->sregs.cs.dpl != 0 || engine_paging(st, &pg) ||
	    engine_read_virt(vcpu, &pg, st->regs.rip, b, 2) || b[0] != 0x0f || (b[1] != 0x30 && b[1] != 0x32))
		return false;
	write = b[1] == 0x30;
	if (write)
		val = (st->regs.rdx << 32) | (uint32_t)st->regs.rax;
	if (!engine_client_msr(vcpu, msr, write, &val))
		return false;
	if (!write) {
		st->regs.rax = (uint32_t)val;
		st->regs.rdx = val >> 32;
	}
	st->regs.rip += 2;
	engine_count_insn(vcpu, EMU_RING_KERNEL);
	return true;
}

bool engine_rdpmc_in_place(struct vcpu *vcpu, struct emu_state *st)
{
	unsigned int ring = st->sregs.cs.dpl == 3 ? EMU_RING_USER : EMU_RING_KERNEL;
	struct guest_paging pg;
	struct emu_state faulted;
	uint64_t val;
	uint8_t b[2];
	int r;

	if (engine_paging(st, &pg) || engine_read_virt(vcpu, &pg, st->regs.rip, b, 2) || b[0] != 0x0f || b[1] != 0x33)
		return false;
	/* Outside ring 0 only CR4.PCE lets it run. */
	r = ring == EMU_RING_USER && !(st->sregs.cr4 & X86_CR4_PCE) ? 0 : engine_client_rdpmc(vcpu, (uint32_t)st->regs.rcx, &val);
	if (r < 0)
		return false;
	if (r == 0) {
		/*
		 * #GP(0) as the CPU raises it, from the VMM: KVM would raise it
		 * too with its PMU off, but a KVM under QEMU's TCG was seen to
		 * complete a bad RDPMC instead. It faults: nothing retires.
		 */
		faulted = *st;
		if (!engine_deliver_event(vcpu, &faulted, 13, st->regs.rip, 0, false))
			return false;
		*st = faulted;
		engine_of(vcpu)->stats.events_by_vmm++;
		return true;
	}
	st->regs.rax = (uint32_t)val;
	st->regs.rdx = val >> 32;
	st->regs.rip += 2;
	engine_count_insn(vcpu, ring);
	return true;
}

/*
 * RDTSC and RDTSCP, done by the VMM with the guest's TSC as KVM keeps it
 * (KVM_GET_MSRS of IA32_TSC and TSC_AUX). In ring 3 this is the only way:
 * KVM would run them natively there, beyond the reach of a breakpoint.
 * False where CR4.TSD makes them fault in ring 3 (KVM raises the #GP).
 */
bool engine_rdtsc(struct vcpu *vcpu, struct emu_state *st)
{
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e[2];
	} m = { .hdr.nmsrs = 2, .e = { { .index = MSR_IA32_TSC }, { .index = MSR_TSC_AUX } } };
	struct guest_paging pg;
	uint8_t b[3];
	unsigned int len;

	if (engine_paging(st, &pg) || engine_read_virt(vcpu, &pg, st->regs.rip, b, 2) || b[0] != 0x0f)
		return false;
	if (b[1] == 0x31)
		len = 2; /* RDTSC */
	else if (b[1] == 0x01 && !engine_read_virt(vcpu, &pg, st->regs.rip, b, 3) && b[2] == 0xf9)
		len = 3; /* RDTSCP */
	else
		return false;
	if ((st->sregs.cr4 & X86_CR4_TSD) && st->sregs.cs.dpl != 0)
		return false;
	if (ioctl(vcpu->fd, KVM_GET_MSRS, &m) != 2)
		return false;
	st->regs.rax = (uint32_t)m.e[0].data;
	st->regs.rdx = m.e[0].data >> 32;
	if (len == 3)
		st->regs.rcx = (uint32_t)m.e[1].data;
	st->regs.rip += len;
	return true;
}

bool engine_is_iretq(struct vcpu *vcpu, const struct emu_state *st, const struct guest_paging *pg)
{
	uint8_t b[2];

	/* REX.W IRET (48 cf), the only IRET a 64-bit kernel returns to user mode with. */
	return !engine_read_virt(vcpu, pg, st->regs.rip, b, 2) && b[0] == 0x48 && b[1] == 0xcf;
}

/*
 * The host address of len bytes at gva (within one page) for a write the
 * guest makes, in ring 3 (user) or ring 0, its accessed and dirty bits set
 * as by the CPU; NULL where the CPU would fault (KVM raises the #PF then) or
 * where gva is not RAM. smap: an explicit access, which SMAP refuses on a
 * user page in ring 0 unless RFLAGS.AC is set.
 */
static void *write_target(struct vcpu *vcpu, const struct emu_state *st, const struct guest_paging *pg, uint64_t gva,
			  uint64_t len, bool user, bool smap)
{
	const struct vmi_mem ram = guest_mem_vmi(&vcpu->vm->mem);
	struct guest_translation t;

	if (!len || (gva & 0xfff) + len > 0x1000 || guest_walk_translate(&ram, pg, gva, &t))
		return NULL;
	if (user && (!t.user || !t.writable))
		return NULL;
	if (!user && !t.writable && (st->sregs.cr0 & X86_CR0_WP))
		return NULL;
	if (!user && smap && t.user && (st->sregs.cr4 & X86_CR4_SMAP) && !(st->regs.rflags & RFLAGS_AC))
		return NULL;
	if (guest_walk_touch(&ram, pg, gva, true, &t))
		return NULL;
	return guest_mem_ptr(&vcpu->vm->mem, t.gpa, len);
}

/* Writes 8 bytes at gva as a ring-0 access would (accessed and dirty bits set); false if the guest refuses it. */
static bool write_u64_ring0(struct vcpu *vcpu, const struct emu_state *st, const struct guest_paging *pg, uint64_t gva,
			    uint64_t val)
{
	/* The CPU's own supervisor-mode access (an interrupt frame), whatever the CPL it comes from. */
	void *p = gva % 8 ? NULL : write_target(vcpu, st, pg, gva, 8, false, false);

	if (!p)
		return false;
	memcpy(p, &val, 8);
	return true;
}

/* KERNEL_GS_BASE, read from KVM once after each time KVM ran the guest (it changes only by SWAPGS and WRMSR). */
static bool kernel_gs_base_known(struct vcpu *vcpu)
{
	struct engine_vcpu *x = engine_of(vcpu);
	struct {
		struct kvm_msrs h;
		struct kvm_msr_entry e;
	} m = { .h.nmsrs = 1, .e.index = MSR_KERNEL_GS_BASE };

	if (x->kgs_valid)
		return true;
	if (ioctl(vcpu->fd, KVM_GET_MSRS, &m) != 1)
		return false;
	x->kernel_gs_base = m.e.data;
	x->kgs_valid = true;
	return true;
}

static void swap_gs(struct engine_vcpu *x, struct emu_state *st)
{
	uint64_t gs = st->sregs.gs.base;

	st->sregs.gs.base = x->kernel_gs_base;
	x->kernel_gs_base = gs;
	x->bases_dirty = true;
}

/* CLI/STI, CLAC/STAC: one RFLAGS bit, RIP past the instruction. */
static void set_flag(struct emu_state *st, uint64_t bit, bool on, size_t len)
{
	st->regs.rflags = on ? st->regs.rflags | bit : st->regs.rflags & ~bit;
	st->regs.rip += len;
}

enum emu_sysinsn engine_system_in_place(struct vcpu *vcpu, struct emu_state *st, bool (*sti_may)(struct vcpu *))
{
	struct guest_paging pg;
	uint8_t code[15];
	size_t n, len;
	enum emu_sysinsn k;

	if (engine_paging(st, &pg))
		return EMU_SYS_NONE;
	n = engine_read_insn(vcpu, &pg, st->regs.rip, code);
	k = emu_sysinsn_decode(code, n, &len);
	switch (k) {
	case EMU_SYS_CLI:
	case EMU_SYS_STI:
		/* Ring 0 only: in ring 3 they depend on IOPL (#GP below 3), which KVM decides. */
		if (st->sregs.cs.dpl != 0 || (k == EMU_SYS_STI && !sti_may(vcpu)))
			return EMU_SYS_NONE;
		set_flag(st, RFLAGS_IF, k == EMU_SYS_STI, len);
		return k;
	case EMU_SYS_MOV_SREG:
		return emu_mov_from_sreg(code, n, &st->sregs, &st->regs) ? k : EMU_SYS_NONE;
	case EMU_SYS_SWAPGS:
		/* Ring 0 only (#UD in ring 3). */
		if (st->sregs.cs.dpl != 0 || !kernel_gs_base_known(vcpu))
			return EMU_SYS_NONE;
		swap_gs(engine_of(vcpu), st);
		st->regs.rip += len;
		return k;
	case EMU_SYS_CLAC:
	case EMU_SYS_STAC:
		/* #UD in ring 3 or without CR4.SMAP: KVM's. */
		if (st->sregs.cs.dpl != 0 || !(st->sregs.cr4 & X86_CR4_SMAP))
			return EMU_SYS_NONE;
		set_flag(st, RFLAGS_AC, k == EMU_SYS_STAC, len);
		return k;
	case EMU_SYS_FSGSBASE:
		if (!emu_fsgsbase(code, n, &st->sregs, &st->regs))
			return EMU_SYS_NONE;
		engine_of(vcpu)->bases_dirty = true;
		return k;
	default:
		return EMU_SYS_NONE;
	}
}

bool engine_locked_in_place(struct vcpu *vcpu, struct emu_state *st)
{
	struct guest_paging pg;
	struct emu_locked in;
	uint8_t code[15];
	size_t n;
	uint64_t rip = st->regs.rip, gva;
	void *p;

	if (engine_paging(st, &pg))
		return false;
	n = engine_read_insn(vcpu, &pg, rip, code);
	if (!n || emu_locked_decode(code, n, &in))
		return false;
	gva = emu_locked_address(&in, &st->regs, rip, st->sregs.fs.base, st->sregs.gs.base);
	/* Not canonical (#GP), CMPXCHG16B unaligned (#GP), a lock split across pages: KVM does those. */
	if (!guest_walk_canonical(&pg, gva) || (in.size == 16 && gva % 16))
		return false;
	p = write_target(vcpu, st, &pg, gva, in.size, st->sregs.cs.dpl == 3, true);
	if (!p)
		return false;
	emu_locked_exec(&in, p, &st->regs);
	st->regs.rip += in.len;
	return true;
}

/*
 * Delivers vector vec through the guest's IDT as a CPU in 64-bit mode
 * does: the gate (interrupt or trap, present; for a software interrupt its
 * DPL checked against CPL), the code segment it names (64-bit,
 * non-conforming, DPL <= CPL), the stack (the TSS's RSPn on a privilege
 * change, its IST entry if the gate names one; aligned to 16), the frame
 * (SS, RSP, RFLAGS, CS, RIP, and err unless it is negative), then RIP,
 * CS, SS and RFLAGS (TF, NT and RF cleared, IF too for an interrupt gate).
 * KVM gets the new registers at once. False, and nothing changed, for
 * anything else: KVM delivers it then.
 */
bool engine_deliver_event(struct vcpu *vcpu, struct emu_state *st, unsigned int vec, uint64_t ret_rip, int64_t err,
			 bool soft)
{
	struct guest_paging pg;
	struct kvm_segment cs;
	struct kvm_sregs sregs;
	uint64_t g[2], handler, rsp, frame[6];
	unsigned int type, cpl = st->sregs.cs.dpl, n = 0;
	uint16_t sel;

	if (engine_paging(st, &pg) || st->sregs.idt.limit < vec * 16 + 15 ||
	    engine_read_virt(vcpu, &pg, st->sregs.idt.base + vec * 16, g, sizeof(g)))
		return false;
	type = (g[0] >> 40) & 0xf;
	sel = (uint16_t)(g[0] >> 16);
	if (!((g[0] >> 47) & 1) || (type != 0xe && type != 0xf) || (soft && ((g[0] >> 45) & 3) < cpl))
		return false;
	handler = (g[0] & 0xffff) | ((g[0] >> 32) & 0xffff0000ULL) | (g[1] << 32);
	if (!gdt_segment(vcpu, st, &pg, sel, &cs) || !cs.s || !(cs.type & 8) || (cs.type & 4) || !cs.l ||
	    cs.dpl > cpl || !guest_walk_canonical(&pg, handler))
		return false;
	rsp = st->regs.rsp;
	if (cs.dpl != cpl || (g[0] >> 32) & 7) {
		unsigned int ist = (g[0] >> 32) & 7;
		uint64_t off = ist ? 0x24 + 8ULL * (ist - 1) : 4 + 8ULL * cs.dpl;

		if (st->sregs.tr.limit < off + 7 || engine_read_virt(vcpu, &pg, st->sregs.tr.base + off, &rsp, 8))
			return false;
	}
	rsp &= ~0xfULL;
	/* The frame from its lowest address: [error code,] RIP, CS, RFLAGS, RSP, SS. */
	if (err >= 0)
		frame[n++] = (uint64_t)err;
	frame[n++] = ret_rip;
	frame[n++] = st->sregs.cs.selector;
	frame[n++] = st->regs.rflags & ~RFLAGS_RF;
	frame[n++] = st->regs.rsp;
	frame[n++] = st->sregs.ss.selector;
	rsp -= 8 * n;
	for (unsigned int i = 0; i < n; i++)
		if (!write_u64_ring0(vcpu, st, &pg, rsp + 8 * i, frame[i]))
			return false;
	sregs = st->sregs;
	cs.base = 0;
	cs.selector = (uint16_t)((sel & ~3u) | cs.dpl);
	sregs.cs = cs;
	if (cs.dpl != cpl)
		/* A null SS with RPL = the new CPL, as the CPU loads on a privilege change in 64-bit mode. */
		sregs.ss = (struct kvm_segment){ .selector = (uint16_t)cs.dpl, .dpl = (uint8_t)cs.dpl, .unusable = 1 };
	if (!set_kvm_sregs(vcpu, &sregs))
		return false;
	memset(sregs.interrupt_bitmap, 0, sizeof(sregs.interrupt_bitmap));
	st->sregs = sregs;
	st->regs.rsp = rsp;
	st->regs.rip = handler;
	st->regs.rflags &= ~(RFLAGS_TF | RFLAGS_RF | (1ULL << 14) /* NT */ | (type == 0xe ? 1ULL << 9 : 0));
	if (ioctl(vcpu->fd, KVM_SET_REGS, &st->regs) < 0)
		return false;
	return true;
}

#define XFEATURE_PKRU 9

/* PKRU in an XSAVE image of KVM's (standard format, where CPUID leaf 0xd says); 0 in its init state. */
static int xsave_pkru(const struct kvm_xsave *xs, uint32_t *pkru)
{
	unsigned int size, off, ecx, edx;
	uint64_t xstate_bv;

	if (!__get_cpuid_count(0xd, XFEATURE_PKRU, &size, &off, &ecx, &edx) || size < 4 ||
	    off + 4 > sizeof(xs->region))
		return -1;
	memcpy(&xstate_bv, (const uint8_t *)xs->region + 512, 8);
	if (!(xstate_bv & (1ULL << XFEATURE_PKRU)))
		*pkru = 0;
	else
		memcpy(pkru, (const uint8_t *)xs->region + off, 4);
	return 0;
}

/*
 * RDPKRU (0f 01 ee), which a Linux kernel with protection keys runs at
 * every context switch: PKRU is KVM's (WRPKRU and XRSTOR are done in KVM),
 * read from the XSAVE image fetched with the state after KVM last ran. Without CR4.PKE, or with ECX not 0,
 * the CPU raises #UD or #GP: KVM's.
 */
bool engine_rdpkru(struct vcpu *vcpu, struct emu_state *st)
{
	struct engine_vcpu *x = engine_of(vcpu);
	struct guest_paging pg;
	uint32_t pkru;
	uint8_t b[3];

	if (!(st->sregs.cr4 & X86_CR4_PKE) || (uint32_t)st->regs.rcx || engine_paging(st, &pg) ||
	    engine_read_virt(vcpu, &pg, st->regs.rip, b, 3) || b[0] != 0x0f || b[1] != 0x01 || b[2] != 0xee)
		return false;
	/* The image the run's state came from: only KVM changes PKRU (WRPKRU and XRSTOR are not run here). */
	if (!x->xsave_valid || xsave_pkru(&x->xsave, &pkru))
		return false;
	st->regs.rax = pkru;
	st->regs.rdx = 0;
	st->regs.rip += 3;
	return true;
}
