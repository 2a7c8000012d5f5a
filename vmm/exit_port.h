/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_EXIT_PORT_H
#define KVMPROF_EXIT_PORT_H

#include "ioport.h"

/*
 * The power-off port at KVMPROF_EXIT_PORT (include/kvmprof/platform.h): a
 * write of a status stops the VM with that status as the exit code, 255 if
 * larger. Reads see an open bus.
 */
int exit_port_init(struct ioport_bus *bus);

#endif
