// SPDX-License-Identifier: MIT
#include <string.h>

#include "exit_port.h"
#include "kvmprof/platform.h"

static struct vcpu_outcome exit_port_io(void *opaque, uint16_t offset, uint8_t *data, unsigned int size,
					bool is_write)
{
	uint32_t status = 0;

	(void)opaque;
	(void)offset;
	if (!is_write) {
		memset(data, 0xff, size);
		return vcpu_continue();
	}
	memcpy(&status, data, size < 4 ? size : 4);
	/* Capped rather than truncated: a failure status must never read as success. */
	return vcpu_stop(status > 255 ? 255 : (int)status, NULL);
}

int exit_port_init(struct ioport_bus *bus)
{
	return ioport_register(bus, KVMPROF_EXIT_PORT, 4, exit_port_io, NULL);
}
