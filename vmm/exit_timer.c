// SPDX-License-Identifier: MIT
/* The vCPU's exit timer (exit_timer.h). */
#include "exit_timer.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kick.h"
#include "vm.h"

void vcpu_exit_within(struct vcpu *vcpu, uint64_t ns)
{
	struct exit_timer *t = &vcpu->exit_timer;

	if (ns && (!t->within_ns || ns < t->within_ns))
		t->within_ns = ns;
}

void vcpu_exit_timer_reset(struct vcpu *vcpu)
{
	vcpu->exit_timer.within_ns = 0;
}

void vcpu_exit_timer_arm(struct vcpu *vcpu)
{
	struct exit_timer *t = &vcpu->exit_timer;
	struct itimerspec its = { 0 };

	if (!t->within_ns && !t->armed)
		return;
	if (!t->created) {
		/* Aimed at this thread: the vCPU's own, which only KVM_RUN unblocks the signal for. */
		struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = KICK_SIGNO };
		sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
		/* The default 50 µs timer slack would be most of the PMI latency. */
		prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
		if (timer_create(CLOCK_MONOTONIC, &sev, &t->id) < 0)
			return;
		t->created = true;
	}
	its.it_value.tv_sec = (time_t)(t->within_ns / 1000000000ULL);
	its.it_value.tv_nsec = (long)(t->within_ns % 1000000000ULL);
	timer_settime(t->id, 0, &its, NULL);
	t->armed = t->within_ns != 0;
}

void vcpu_exit_timer_destroy(struct vcpu *vcpu)
{
	struct exit_timer *t = &vcpu->exit_timer;

	if (t->created)
		timer_delete(t->id);
	*t = (struct exit_timer){ 0 };
}
