/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_MPTABLE_H
#define KVMPROF_MPTABLE_H

#include "guest_mem.h"

/*
 * Writes an Intel MultiProcessor Specification 1.4 table at
 * KVMPROF_MPTABLE_ADDR: one processor entry per vCPU (APIC ID = vCPU index),
 * the I/O APIC, and ISA IRQs 0-15 routed to I/O APIC pins 0-15 as KVM's
 * default GSI routing does. Linux and the bundled guest count vCPUs with it.
 */
int mptable_write(const struct guest_mem *mem, unsigned int ncpus);

#endif
