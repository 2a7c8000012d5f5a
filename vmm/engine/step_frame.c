// SPDX-License-Identifier: MIT
/*
 * A single step sets TF in the guest's RFLAGS; an exception the stepped
 * instruction raises in KVM pushes RFLAGS with that TF in its frame, and
 * the handler's IRETQ would give it back to code that never set it. The
 * VMM finds the frame by its five values, which it knows from before the
 * step (engine_clear_step_tf clears the TF).
 */
#include "step_frame.h"

static int is_step_frame(const uint64_t *q, const struct step_frame *f)
{
	/* Only TF and RF may differ from the flags before the step (a fault sets RF in the frame). */
	uint64_t same = ~(RFLAGS_TF | RFLAGS_RF);

	/* The CPU writes CS and SS into 8-byte slots, the bits above the selector unspecified. */
	return (q[0] == f->rip || q[0] == f->next_rip) && (q[1] & 0xffff) == f->cs && (q[2] & RFLAGS_TF) &&
	       (q[2] & same) == (f->rflags & same) && q[3] == f->rsp && (q[4] & 0xffff) == f->ss;
}

size_t step_frame_find(const uint64_t *q, size_t n, const struct step_frame *f, size_t *at, size_t max)
{
	size_t found = 0;

	for (size_t i = 0; i + STEP_FRAME_QWORDS <= n && found < max; i++)
		if (is_step_frame(&q[i], f)) {
			at[found++] = i;
			i += STEP_FRAME_QWORDS - 1;
		}
	return found;
}
