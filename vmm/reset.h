/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_RESET_H
#define KVMPROF_RESET_H

#include "ioport.h"

/*
 * The PC's reset controls (include/kvmprof/platform.h): the i8042 command
 * port and the reset control register. kvmprof-vmm does not reboot guests:
 * a reset request stops the VM with exit code 0, as KVM_SYSTEM_EVENT_RESET
 * does. Reads see no controller there.
 */
int reset_init(struct ioport_bus *bus);

/* What a reset request prints. */
#define RESET_MESSAGE "guest asked for a reset; kvmprof-vmm does not reboot guests"

#endif
