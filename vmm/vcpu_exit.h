/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_VCPU_EXIT_H
#define KVMPROF_VCPU_EXIT_H

#include "vcpu_outcome.h"

struct vcpu;

/*
 * Handles the exit KVM_RUN left in vcpu->run: port I/O goes to the VM's
 * port devices, MMIO reads see an open bus, PMU MSR accesses go to the
 * vPMU, debug exits to the exact backend or the PMI tracer. Returns what
 * the run loop must do; stopping the VM is the run loop's job.
 */
struct vcpu_outcome vcpu_handle_exit(struct vcpu *vcpu);

#endif
