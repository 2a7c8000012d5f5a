/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_KICK_H
#define KVMPROF_KICK_H

/*
 * Kicks: the signals that force a vCPU thread out of KVM_RUN. The stop
 * request and the vPMU (its exit timer, its counters' overflow) send
 * KICK_SIGNO; the guest sampler's clock sends kick_sampler_signo(), a
 * real-time signal that queues. Each is aimed at one vCPU thread.
 *
 * A vCPU thread keeps its kick signals blocked at all times and has KVM
 * unblock them only inside KVM_RUN (KVM_SET_SIGNAL_MASK): a kick that
 * arrives in the guest ends KVM_RUN with EINTR, one that arrives while the
 * thread runs VMM code stays pending and makes the next KVM_RUN return at
 * once. No handler ever runs on a vCPU thread, so no signal frame is built
 * and no system call of the VMM (or of a plugin) on it fails with EINTR;
 * the thread takes the pending kicks with kick_drain after each EINTR
 * (bench/kick_cost.c measured the alternatives, docs/guest-sampling.md).
 */

#include <signal.h>

struct vcpu;

#define KICK_SIGNO SIGUSR1

/* What kick_drain found pending. */
#define KICK_OTHER 1u   /* KICK_SIGNO: a stop request or the vPMU */
#define KICK_SAMPLER 2u /* the guest sampler's clock */

int kick_sampler_signo(void);

/*
 * Main thread, before it starts the vCPU threads: a handler for each kick
 * signal (one that never runs: without it the signals would be ignored or
 * fatal) and the kick signals blocked, for the vCPU threads to inherit.
 * *old: the mask to restore when the threads are gone. 0 or -errno.
 */
int kick_setup(sigset_t *old);

/* vCPU thread, before its first KVM_RUN: the kick signals unblocked inside KVM_RUN only. 0 or -errno. */
int kick_vcpu_init(struct vcpu *vcpu);

/* vCPU thread, after KVM_RUN returned EINTR (or an emulator slice): takes the pending kicks, KICK_* bits. */
unsigned int kick_drain(void);

#endif
