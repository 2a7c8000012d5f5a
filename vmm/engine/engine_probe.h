/* SPDX-License-Identifier: MIT */
/*
 * What this host's KVM does with the debug features the engine's
 * KVM steps rely on, measured once on a throw-away VM (engine_probe.c).
 * Hosts differ, and the steps must fit the one they run on:
 *
 *   - the PVM hosts: hardware breakpoints fire in guest ring 0 (emulated
 *     there), neither breakpoints nor single steps in ring 3 (native);
 *   - bare-metal KVM: both fire in both rings;
 *   - KVM inside QEMU's TCG with nested SVM (QEMU before 9.1): single
 *     steps fire in both rings, hardware breakpoints never (VMRUN loads
 *     DR7 without arming TCG's breakpoints), and neither INT3 with
 *     KVM_GUESTDBG_USE_SW_BP (TCG does not intercept it).
 */
#ifndef KVMPROF_ENGINE_PROBE_H
#define KVMPROF_ENGINE_PROBE_H

#include <stdbool.h>

struct engine_debug_caps {
	bool probed;         /* the probe ran to its end; else the fields below are guesses */
	bool hw_bp[2];       /* [0]: ring 0, [1]: ring 3: a KVM_GUESTDBG_USE_HW_BP breakpoint exits */
	bool single_step[2]; /* KVM_GUESTDBG_SINGLESTEP exits after one instruction */
	bool blockirq;       /* KVM_GUESTDBG_BLOCKIRQ is supported (KVM_CAP_SET_GUEST_DEBUG2) */
	/*
	 * KVM_GET_SREGS reports TR busy whatever KVM holds (KVM on AMD:
	 * svm_get_segment sets the bit, the VMCB keeping TR available as LTR
	 * left it), so sregs written back as read change it (set_kvm_sregs).
	 */
	bool tr_busy_reported;
};

/* Measures the host behind kvm_fd (a few KVM_RUNs of tiny VMs). */
void engine_probe_debug(int kvm_fd, struct engine_debug_caps *caps);

#endif
