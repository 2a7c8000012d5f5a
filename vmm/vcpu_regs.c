// SPDX-License-Identifier: MIT
/* A vCPU's registers at an exit (vm.h: vcpu_exit_regs), for the run loop's events, the guest sampler and plugins. */
#include <linux/kvm.h>
#include <sys/ioctl.h>

#include "vm.h"

bool vcpu_exit_regs(struct vcpu *vcpu, struct kvm_regs *rbuf, struct kvm_sregs *sbuf,
		    const struct kvm_regs **regs, const struct kvm_sregs **sregs)
{
	const struct kvm_run *run = vcpu->run;

	if (regs) {
		*regs = &run->s.regs.regs;
		if (!(run->kvm_valid_regs & KVM_SYNC_X86_REGS)) {
			if (ioctl(vcpu->fd, KVM_GET_REGS, rbuf) < 0)
				return false;
			*regs = rbuf;
		}
	}
	if (sregs) {
		*sregs = &run->s.regs.sregs;
		if (!(run->kvm_valid_regs & KVM_SYNC_X86_SREGS)) {
			if (ioctl(vcpu->fd, KVM_GET_SREGS, sbuf) < 0)
				return false;
			*sregs = sbuf;
		}
	}
	return true;
}
