/* SPDX-License-Identifier: MIT */
/*
 * The frame of an event KVM delivered inside a single step, found again on
 * the guest's stack (step_frame.c): it carries the step's TF.
 */
#ifndef KVMPROF_STEP_FRAME_H
#define KVMPROF_STEP_FRAME_H

#include <stddef.h>
#include <stdint.h>

/* The RFLAGS bits a step's frame may differ in: its TF, and RF for a fault. */
#define RFLAGS_TF (1ULL << 8)
#define RFLAGS_RF (1ULL << 16)

/*
 * What the CPU pushed, lowest address first: RIP (the stepped
 * instruction's for a fault, the next one's for a trap), CS, RFLAGS (the
 * flags before the step with its TF, and RF for a fault), RSP and SS as
 * they were before it. Linux's pt_regs keeps that order where it copies
 * the frame.
 */
struct step_frame {
	uint64_t rip, next_rip, rflags, rsp;
	uint16_t cs, ss;
};

#define STEP_FRAME_QWORDS 5

/*
 * The indexes in q[0..n) (qwords of guest stack) where such a frame starts,
 * at most max of them into at[], frames not overlapping; returns how many.
 */
size_t step_frame_find(const uint64_t *q, size_t n, const struct step_frame *f, size_t *at, size_t max);

#endif
