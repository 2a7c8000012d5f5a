// SPDX-License-Identifier: MIT
#include <string.h>

#include "kvmprof/platform.h"
#include "reset.h"

#define I8042_CMD_PULSE_RESET 0xfe
#define RESET_CONTROL_RST_CPU 0x04

static struct vcpu_outcome i8042_command_io(void *opaque, uint16_t offset, uint8_t *data, unsigned int size,
					    bool is_write)
{
	(void)opaque;
	(void)offset;
	if (!is_write)
		memset(data, 0xff, size);
	else if (data[0] == I8042_CMD_PULSE_RESET)
		return vcpu_stop(0, RESET_MESSAGE);
	return vcpu_continue();
}

static struct vcpu_outcome reset_control_io(void *opaque, uint16_t offset, uint8_t *data, unsigned int size,
					    bool is_write)
{
	(void)opaque;
	(void)offset;
	if (!is_write)
		memset(data, 0xff, size);
	else if (data[0] & RESET_CONTROL_RST_CPU)
		return vcpu_stop(0, RESET_MESSAGE);
	return vcpu_continue();
}

int reset_init(struct ioport_bus *bus)
{
	int rc = ioport_register(bus, KVMPROF_I8042_COMMAND_PORT, 1, i8042_command_io, NULL);

	return rc ? rc : ioport_register(bus, KVMPROF_RESET_CONTROL_PORT, 1, reset_control_io, NULL);
}
