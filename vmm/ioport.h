/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_IOPORT_H
#define KVMPROF_IOPORT_H

#include <stdbool.h>
#include <stdint.h>

/* A device's port I/O handler: data holds size bytes, little-endian. */
typedef void (*ioport_handler)(void *opaque, uint16_t offset, uint8_t *data, unsigned int size,
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

/* Dispatches one access; unclaimed reads return all ones, like an ISA bus. */
void ioport_dispatch(struct ioport_bus *bus, uint16_t port, uint8_t *data, unsigned int size,
		     bool is_write);

#endif
