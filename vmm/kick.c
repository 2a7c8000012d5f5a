// SPDX-License-Identifier: MIT
/* Kicks: signals blocked in the vCPU threads and unblocked only inside KVM_RUN (kick.h). */
#include <errno.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "kick.h"
#include "vm.h"

int kick_sampler_signo(void)
{
	return SIGRTMIN + 2; /* real-time: queues rather than merges with KICK_SIGNO */
}

static void kick_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, KICK_SIGNO);
	sigaddset(set, kick_sampler_signo());
}

static void kick_never_runs(int sig)
{
	(void)sig; /* the kick signals are unblocked only inside KVM_RUN, which returns EINTR instead */
}

int kick_setup(sigset_t *old)
{
	struct sigaction sa = { .sa_handler = kick_never_runs, .sa_flags = SA_RESTART };
	struct sigaction ign = { .sa_handler = SIG_IGN };
	sigset_t kicks;

	sigemptyset(&sa.sa_mask);
	if (sigaction(KICK_SIGNO, &sa, NULL) < 0 || sigaction(kick_sampler_signo(), &sa, NULL) < 0)
		return -errno;
	/*
	 * When a thread's queue of real-time signals is full, a perf event
	 * signals SIGIO instead, which would kill the VMM: ignore it (nothing
	 * else here uses it).
	 */
	sigaction(SIGIO, &ign, NULL);
	kick_set(&kicks);
	return -pthread_sigmask(SIG_BLOCK, &kicks, old);
}

int kick_vcpu_init(struct vcpu *vcpu)
{
	/* The kernel's sigset: 64 bits, which glibc's sigset_t begins with on x86-64. */
	struct {
		struct kvm_signal_mask m;
		uint8_t set[8];
	} km = { .m.len = 8 };
	sigset_t in_run;

	pthread_sigmask(SIG_SETMASK, NULL, &in_run);
	sigdelset(&in_run, KICK_SIGNO);
	sigdelset(&in_run, kick_sampler_signo());
	memcpy(km.set, &in_run, sizeof(km.set));
	return ioctl(vcpu->fd, KVM_SET_SIGNAL_MASK, &km) < 0 ? -errno : 0;
}

unsigned int kick_drain(void)
{
	static const struct timespec now = { 0, 0 };
	unsigned int kicks = 0;
	sigset_t set;
	int sig;

	kick_set(&set);
	/* A zero timeout: takes what is pending, and EAGAIN once nothing is. */
	while ((sig = sigtimedwait(&set, NULL, &now)) > 0)
		kicks |= sig == KICK_SIGNO ? KICK_OTHER : KICK_SAMPLER;
	return kicks;
}
