/* SPDX-License-Identifier: MIT */
/* KVM's exit reasons (linux/kvm.h's KVM_EXIT_*) by name: one table for the VMM's exit-stats and the reports. */
#ifndef KVMPROF_KVM_EXIT_NAME_H
#define KVMPROF_KVM_EXIT_NAME_H

/* "debug", "shutdown", "msr read", ...; NULL for a reason without a name here. */
const char *kvm_exit_reason_name(unsigned int reason);

#endif
