/* SPDX-License-Identifier: MIT */
#include "common/kvm_exit_name.h"

#include <linux/kvm.h>
#include <stddef.h>

const char *kvm_exit_reason_name(unsigned int reason)
{
	static const char *const names[] = {
		[KVM_EXIT_UNKNOWN] = "unknown",
		[KVM_EXIT_EXCEPTION] = "exception",
		[KVM_EXIT_IO] = "io",
		[KVM_EXIT_DEBUG] = "debug",
		[KVM_EXIT_HLT] = "hlt",
		[KVM_EXIT_MMIO] = "mmio",
		[KVM_EXIT_IRQ_WINDOW_OPEN] = "irq window",
		[KVM_EXIT_SHUTDOWN] = "shutdown",
		[KVM_EXIT_FAIL_ENTRY] = "fail entry",
		[KVM_EXIT_INTR] = "signal",
		[KVM_EXIT_INTERNAL_ERROR] = "internal error",
		[KVM_EXIT_SYSTEM_EVENT] = "system event",
		[KVM_EXIT_X86_RDMSR] = "msr read",
		[KVM_EXIT_X86_WRMSR] = "msr write",
	};

	return reason < sizeof(names) / sizeof(names[0]) ? names[reason] : NULL;
}
