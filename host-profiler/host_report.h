/* SPDX-License-Identifier: MIT */
/* `kvmprof report`: a system-wide profile by domain (guest user, guest kernel, VMM user, host kernel). */
#ifndef HOST_REPORT_H
#define HOST_REPORT_H

#include <stdint.h>

#include "profile.h"

enum host_layer {
	HOST_LAYER_GUEST_USER,
	HOST_LAYER_GUEST_KERNEL,
	HOST_LAYER_VMM_USER,
	HOST_LAYER_HOST_KERNEL,
	HOST_LAYER_COUNT,
};

/* The one domain a sample is in: guest or native (the VMM's threads), by its privilege level. */
enum host_layer host_layer_of(const struct profile_sample *s);

/* argv[0] is "report". Returns the exit status. */
int host_report_main(int argc, char **argv);

#endif
