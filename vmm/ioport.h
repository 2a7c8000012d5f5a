/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_IOPORT_H
#define KVMPROF_IOPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "vcpu_outcome.h"

/*
 * A device's port I/O handler: data holds size bytes, little-endian. Most
 * devices return vcpu_continue(); the power-off and reset ports return the
 * stop they stand for.
 */
typedef struct vcpu_outcome (*ioport_handler)(void *opaque, uint16_t offset, uint8_t *data, unsigned int size,
					      bool is_write);

#define IOPORT_MAX_RANGES 16

struct ioport_range {
	uint16_t base, len;
	ioport_handler handler;
	void *opaque;
};

struct ioport_bus {
	struct ioport_range range[IOPORT_MAX_RANGES];
	unsigned int count;
	uint64_t unclaimed; /* accesses no device took: reads see an open bus */
};

int ioport_register(struct ioport_bus *bus, uint16_t base, uint16_t len, ioport_handler handler,
		    void *opaque);

/* Dispatches one access; unclaimed reads return all ones, like an ISA bus. Returns the device's outcome. */
struct vcpu_outcome ioport_dispatch(struct ioport_bus *bus, uint16_t port, uint8_t *data, unsigned int size,
				    bool is_write);

#endif
