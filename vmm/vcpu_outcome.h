/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_VCPU_OUTCOME_H
#define KVMPROF_VCPU_OUTCOME_H

/*
 * What handling one VM exit asks of the vCPU's run loop. Exit handlers and
 * port devices return it rather than stopping the VM themselves, so that
 * the one place that acts on it is the run loop (vmm/vcpu.c) and the
 * dispatch can be tested without a VM.
 */
enum vcpu_action {
	VCPU_CONTINUE, /* run the vCPU again */
	VCPU_STOP,     /* the guest is done: stop the VM with status */
	VCPU_CRASH,    /* the guest cannot go on: report reason and the registers, exit code 125 */
};

struct vcpu_outcome {
	enum vcpu_action action;
	int status;         /* VCPU_STOP: the VMM's exit code */
	const char *reason; /* VCPU_STOP: a message to print, or NULL; VCPU_CRASH: what happened */
};

static inline struct vcpu_outcome vcpu_continue(void)
{
	return (struct vcpu_outcome){ .action = VCPU_CONTINUE };
}

static inline struct vcpu_outcome vcpu_stop(int status, const char *reason)
{
	return (struct vcpu_outcome){ .action = VCPU_STOP, .status = status, .reason = reason };
}

static inline struct vcpu_outcome vcpu_crash(const char *reason)
{
	return (struct vcpu_outcome){ .action = VCPU_CRASH, .reason = reason };
}

#endif
