// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>

#include "ioport.h"

int ioport_register(struct ioport_bus *bus, uint16_t base, uint16_t len, ioport_handler handler,
		    void *opaque)
{
	if (bus->count == IOPORT_MAX_RANGES)
		return -ENOSPC;
	for (unsigned int i = 0; i < bus->count; i++) {
		const struct ioport_range *r = &bus->range[i];
		if (base < r->base + r->len && r->base < base + len)
			return -EBUSY;
	}
	bus->range[bus->count++] = (struct ioport_range){ base, len, handler, opaque };
	return 0;
}

struct vcpu_outcome ioport_dispatch(struct ioport_bus *bus, uint16_t port, uint8_t *data, unsigned int size,
				    bool is_write)
{
	for (unsigned int i = 0; i < bus->count; i++) {
		const struct ioport_range *r = &bus->range[i];
		if (port >= r->base && port - r->base < r->len)
			return r->handler(r->opaque, (uint16_t)(port - r->base), data, size, is_write);
	}
	__atomic_add_fetch(&bus->unclaimed, 1, __ATOMIC_RELAXED);
	if (!is_write)
		memset(data, 0xff, size);
	return vcpu_continue();
}
