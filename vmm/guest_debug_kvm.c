/* SPDX-License-Identifier: MIT */
/* The guest debug owner's one call into KVM, apart so that its unit test can stand in for it. */
#include <errno.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>

#include "guest_debug.h"
#include "vm.h"

int guest_debug_apply(struct vcpu *vcpu, const struct kvm_guest_debug *dbg)
{
	return ioctl(vcpu->fd, KVM_SET_GUEST_DEBUG, dbg) < 0 ? -errno : 0;
}
