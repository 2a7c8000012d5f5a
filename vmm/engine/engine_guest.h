/* SPDX-License-Identifier: MIT */
/* What the VMM does in the guest's place for the engine (see engine_guest.c). */
#ifndef KVMPROF_ENGINE_GUEST_H
#define KVMPROF_ENGINE_GUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu.h"
#include "emu_sysinsn.h"
#include "guest_walk.h"
#include "step_frame.h"

struct vcpu;


/* The paging a state's control registers describe; -EINVAL outside long mode. */
int engine_paging(const struct emu_state *st, struct guest_paging *pg);

/* guest_read_virt of this vCPU's guest RAM. */
int engine_read_virt(struct vcpu *vcpu, const struct guest_paging *pg, uint64_t gva, void *buf, uint64_t len);

/* The bytes of the instruction at rip, as many as can be read up to 15; how many (0: none). */
size_t engine_read_insn(struct vcpu *vcpu, const struct guest_paging *pg, uint64_t rip, uint8_t code[15]);

/* The handler address of IDT vector vec (a 64-bit gate), or 0. */
uint64_t engine_idt_handler(struct vcpu *vcpu, const struct emu_state *st, unsigned int vec);

/* Whether the CPU pushes an error code for vector vec. */
bool engine_pushes_error_code(int vec);

/* Clears flags in an interrupt frame's RFLAGS image at gva (RF, or the TF of a single step). */
void engine_clear_frame_flags(struct vcpu *vcpu, const struct guest_paging *pg, uint64_t gva, uint64_t flags);

/*
 * Clears TF in every copy of the frame of an event KVM delivered in a
 * single step (step_frame.h) on the stack at and above rsp (the handler's,
 * up to a Linux task stack's size): an IRETQ of it would give the guest
 * the step's TF. Returns how many it cleared.
 */
unsigned int engine_clear_step_tf(struct vcpu *vcpu, const struct guest_paging *pg, uint64_t rsp,
				  const struct step_frame *f);

/* Whether the instruction at RIP is IRETQ (48 cf). */
bool engine_is_iretq(struct vcpu *vcpu, const struct emu_state *st, const struct guest_paging *pg);

/* IRETQ in ring 0 (to ring 3 or within ring 0), done by the VMM; false if the frame is not a plain 64-bit return. */
bool engine_iretq(struct vcpu *vcpu, struct emu_state *st, const struct guest_paging *pg);

/*
 * Delivers interrupt or exception vec through the guest's IDT in the VMM
 * (64-bit mode), as the CPU would: frame pushed with return address
 * ret_rip and error code err (none if negative), the handler's CS, stack
 * and RFLAGS loaded, KVM's registers set. soft: INT n or INT3 (the gate's
 * DPL is checked). False, and nothing changed, where a plain delivery
 * cannot be done (KVM must deliver it).
 */
bool engine_deliver_event(struct vcpu *vcpu, struct emu_state *st, unsigned int vec, uint64_t ret_rip, int64_t err,
			 bool soft);

/*
 * SYSCALL from 64-bit code, done by the VMM as the CPU does it (STAR,
 * LSTAR and FMASK read from KVM): RCX and R11 saved, RFLAGS masked, CS and
 * SS from STAR, RIP from LSTAR, KVM's registers set. False where it is not
 * plain (not SYSCALL, EFER.SCE clear: #UD, compatibility mode): KVM's step.
 */
bool engine_syscall(struct vcpu *vcpu, struct emu_state *st, const struct guest_paging *pg);

/*
 * SYSRETQ to 64-bit ring 3, done by the VMM as the CPU does it: RIP from
 * RCX, RFLAGS from R11, CS and SS from STAR, KVM's registers set. Not a KVM
 * step: a single step of SYSRET does not trap after it when R11's TF is
 * clear (QEMU's SVM, the L1 of the nested harness, checks the TF SYSRET
 * loads), so ring 3 ran natively, uncounted, until the next exit. False
 * where it is not plain (not SYSRETQ, a non-canonical RCX: #GP, EFER.SCE
 * clear: #UD): KVM's step.
 */
bool engine_sysret(struct vcpu *vcpu, struct emu_state *st, const struct guest_paging *pg);

/* RDPKRU, with KVM's PKRU, done in place; false where the CPU would fault, or PKRU cannot be read. */
bool engine_rdpkru(struct vcpu *vcpu, struct emu_state *st);

/* RDMSR or WRMSR in ring 0 that a client answers, done in place; false for anything else. */
bool engine_msr_in_place(struct vcpu *vcpu, struct emu_state *st);

/*
 * RDPMC, done in place where a client serves it: the counter ECX names,
 * or the #GP hardware raises (an ECX naming no counter; ring 3 without
 * CR4.PCE), delivered by the VMM. False for anything else, and where no
 * client serves RDPMC or the #GP cannot be delivered plainly (KVM's then).
 */
bool engine_rdpmc_in_place(struct vcpu *vcpu, struct emu_state *st);

/* engine.c: asks the clients to answer an MSR access (engine_client.msr) or an RDPMC; tells them of one instruction. */
bool engine_client_msr(struct vcpu *vcpu, uint32_t msr, bool write, uint64_t *val);
/* 1 with *val: a client answered; 0: a client serves RDPMC and there is no such counter; -1: no client serves it. */
int engine_client_rdpmc(struct vcpu *vcpu, uint32_t ecx, uint64_t *val);
void engine_count_insn(struct vcpu *vcpu, unsigned int ring);
/* CLOCK_MONOTONIC in nanoseconds: the engine's time for steps and timers. */
uint64_t engine_now_ns(void);

#define MSR_FS_BASE 0xc0000100u
#define MSR_GS_BASE 0xc0000101u
#define MSR_KERNEL_GS_BASE 0xc0000102u
#define MSR_STAR 0xc0000081u
#define MSR_LSTAR 0xc0000082u
#define MSR_SYSCALL_MASK 0xc0000084u

/*
 * CLI, STI and SWAPGS in ring 0, MOV r, Sreg and RD/WR FS/GS BASE in either
 * ring (emu_sysinsn.h), done in place; which one, or EMU_SYS_NONE (KVM runs
 * it). Interrupts are looked at between the engine's runs only, so
 * clearing IF inside one changes nothing else; STI is done only if
 * sti_may says no interrupt waits for it (otherwise KVM's step of it
 * delivers the interrupt one instruction later, as the CPU does). SWAPGS
 * and WR*BASE leave new bases for state_to_kvm (engine_vcpu.bases_dirty).
 * The caller counts it, and keeps STI's one-instruction interrupt shadow
 * if the run ends right after it.
 */
enum emu_sysinsn engine_system_in_place(struct vcpu *vcpu, struct emu_state *st, bool (*sti_may)(struct vcpu *));

/*
 * A locked read-modify-write (emu_locked.h) done in place on guest RAM with
 * the host's own locked instruction, atomic against the other vCPUs; false
 * where the CPU would fault, the operand is not RAM or splits across pages,
 * or it is no form emu_locked.h knows: KVM runs it then. The caller counts it.
 */
bool engine_locked_in_place(struct vcpu *vcpu, struct emu_state *st);

/* RDTSC or RDTSCP from KVM's guest TSC; false where it must fault (CR4.TSD in ring 3). The caller counts it. */
bool engine_rdtsc(struct vcpu *vcpu, struct emu_state *st);

#endif
