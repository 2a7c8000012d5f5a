/* SPDX-License-Identifier: MIT */
/*
 * The `kvm` vPMU backend: configures KVM's in-kernel vPMU (which serves guest
 * PMU MSRs and RDPMC itself) instead of emulating it in the VMM. The CPUID
 * side is shared with the emulated backend (vpmu_cpuid_adjust).
 */
#ifndef KVMPROF_VPMU_BACKEND_KVM_H
#define KVMPROF_VPMU_BACKEND_KVM_H

#include "vpmu.h"

struct kvm_pmu_event_filter;

/*
 * Does this host's in-kernel vPMU work? Creates a throw-away VM and vCPU,
 * writes a PMU counter MSR with KVM_SET_MSRS and reads it back. Returns 0 if
 * it works, -ENODEV if not; reason says what was seen either way.
 */
int vpmu_kvm_probe(char reason[VPMU_ERR_MAX]);

/*
 * Builds the KVM_SET_PMU_EVENT_FILTER argument (free() it): events encoded
 * as event select | unit mask << 8, AMD select bits 11:8 at 35:32. Returns
 * -EINVAL for an event select above 0xff on a non-AMD host.
 */
int vpmu_kvm_build_filter(const struct vpmu_filter *f, enum vpmu_host_vendor host,
			  struct kvm_pmu_event_filter **out);

/*
 * Configures the in-kernel vPMU of a VM before any vCPU exists: disables it
 * (KVM_CAP_PMU_CAPABILITY) for VPMU_MODEL_OFF (0 as well when kvm.enable_pmu
 * is N: it is off already; -EOPNOTSUPP when KVM cannot disable it), otherwise
 * checks the model is the host's own and installs the event filter
 * (KVM_SET_PMU_EVENT_FILTER): filter, or cfg->filter when filter is NULL;
 * none: nothing to install.
 */
int vpmu_kvm_setup(int vm_fd, const struct vpmu_config *cfg, const struct vpmu_filter *filter,
		   char err[VPMU_ERR_MAX]);

#endif
