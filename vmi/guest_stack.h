/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_GUEST_STACK_H
#define KVMPROF_GUEST_STACK_H

/*
 * Guest call stacks by frame pointers, for --callgraph samples. Frame
 * pointers are the one unwinding method that needs nothing from the guest
 * but its memory: no unwind tables, no symbol files at sampling time. The
 * guest is built with them (the bundled guest always; Linux with
 * CONFIG_FRAME_POINTER and -fno-omit-frame-pointer user programs) or the
 * chain simply ends early.
 *
 * Everything on the stack is guest data and may be garbage or hostile, so
 * the walk ends, without error, at the first thing that does not look like a
 * frame: a misaligned or non-increasing frame pointer (which also rules out
 * cycles), a frame larger than GUEST_STACK_FRAME_MAX, an unreadable word, a
 * zero return address, or a step out of the sampled privilege level. The
 * depth is bounded by the caller's buffer. Known limits, shared with every
 * frame-pointer unwinder: a sample in a function's prologue or in a leaf
 * built without a frame misses its immediate caller, and a kernel chain
 * ends where an interrupt stack switches to a lower-addressed stack.
 */

#include <stdbool.h>
#include <stdint.h>

#include "guest_walk.h"
#include "vmi_mem.h"

/*
 * Largest distance accepted between RSP and the first frame, and between one
 * frame and the next: larger than any sane frame (big locals included), and
 * small enough that a garbage saved RBP ends the walk at once.
 */
#define GUEST_STACK_FRAME_MAX (1u << 20)

/*
 * Fills callers[0..n) with the return addresses of the frames that RBP
 * chains through, innermost first (the sample's own RIP is not among them,
 * as in a kp_rec_sample callchain) and returns n <= max.
 *
 * user says which privilege level was sampled (CPL 3 or not). A user chain
 * must stay in canonical lower-half addresses in user-accessible pages; a
 * kernel chain in supervisor-only pages. The page bits rather than the
 * address half define "kernel" because the bundled guest runs its kernel
 * identity-mapped in the lower half; they also keep a user program from
 * steering the walk into kernel memory.
 */
unsigned int guest_stack_walk(const struct vmi_mem *mem, const struct guest_paging *pg, bool user,
			      uint64_t rsp, uint64_t rbp, uint64_t *callers, unsigned int max);

/*
 * perf's PERF_CONTEXT_USER: in a callchain, what follows is user code.
 * Readers of kp_rec_sample callchains know perf's context markers.
 */
#define GUEST_STACK_CONTEXT_USER ((uint64_t)-512)

/*
 * A sample's callchain: guest_stack_walk's, and for a kernel-mode sample
 * that interrupted user code, the user side too (as perf's callchains
 * have it): the kernel frames, GUEST_STACK_CONTEXT_USER, the interrupted
 * user RIP (+1, read as a return address), then its callers. The user
 * context comes from the interrupt frame at the top of the stack the TSS
 * (guest-virtual tss_base, from TR; 0: none) gives for ring 0, so it is
 * found for guests that enter the kernel through the TSS stack (the
 * bundled guest); elsewhere the frame there does not say ring 3, or does
 * not check out, and the chain is the kernel's alone. Every word read is
 * checked as guest_stack_walk checks its own.
 */
unsigned int guest_callchain(const struct vmi_mem *mem, const struct guest_paging *pg, bool user, uint64_t rsp,
			     uint64_t rbp, uint64_t tss_base, uint64_t *callers, unsigned int max);

#endif
