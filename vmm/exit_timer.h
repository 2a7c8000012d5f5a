/* SPDX-License-Identifier: MIT */
/*
 * One timer per vCPU that forces the vCPU out of KVM_RUN (a KICK_SIGNO,
 * kick.h) by a deadline, for the features that must look at a vCPU on
 * time although the guest makes no exit: the vPMU near a predicted counter
 * overflow (this host notices overflows only at exits), the engine while a
 * KVM step may have lost the guest. Before each run the core forgets the
 * last run's requests, each feature's before_run asks for an exit within
 * so many ns, and the core arms the timer for the soonest (or disarms it).
 * A feature that enters KVM itself (the engine's steps) arms it again.
 */
#ifndef KVMPROF_EXIT_TIMER_H
#define KVMPROF_EXIT_TIMER_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct vcpu;

struct exit_timer {
	timer_t id;
	bool created, armed;
	uint64_t within_ns; /* the soonest asked since the last reset; 0: none */
};

/* The vCPU must exit within ns of now (0 asks nothing): the least asked since the last reset wins. */
void vcpu_exit_within(struct vcpu *vcpu, uint64_t ns);
/* Core, before the before_run hooks: no exit asked yet. */
void vcpu_exit_timer_reset(struct vcpu *vcpu);
/* Arms the timer for what was asked since the reset, from now; disarms it if nothing was. vCPU thread. */
void vcpu_exit_timer_arm(struct vcpu *vcpu);
void vcpu_exit_timer_destroy(struct vcpu *vcpu);

#endif
