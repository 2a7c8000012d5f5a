// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>

#include "acpi_pm.h"
#include "kvmprof/platform.h"

#define PM1_EVT_LEN 4 /* PM1_STS, PM1_EN */
#define PM1_CNT_LEN 2
#define PM1_CNT_SLP_TYP_MASK (7u << KVMPROF_ACPI_PM1_CNT_SLP_TYP_SHIFT)

/* The bytes [offset, offset + size) of the block's registers, little-endian. */
static void acpi_pm_read(const struct acpi_pm *pm, uint16_t offset, uint8_t *data, unsigned int size)
{
	uint8_t regs[8] = { 0 };
	uint16_t enable = __atomic_load_n(&pm->enable, __ATOMIC_RELAXED);
	uint16_t control = __atomic_load_n(&pm->control, __ATOMIC_RELAXED) | KVMPROF_ACPI_PM1_CNT_SCI_EN;

	memcpy(regs + 2, &enable, 2);
	memcpy(regs + 4, &control, 2);
	memset(data, 0xff, size);
	for (unsigned int i = 0; i < size && offset + i < sizeof(regs); i++)
		data[i] = offset + i < PM1_EVT_LEN + PM1_CNT_LEN ? regs[offset + i] : 0xff;
}

static struct vcpu_outcome acpi_pm_io(void *opaque, uint16_t offset, uint8_t *data, unsigned int size,
				      bool is_write)
{
	struct acpi_pm *pm = opaque;
	uint16_t v = 0;

	if (!is_write) {
		acpi_pm_read(pm, offset, data, size);
		return vcpu_continue();
	}
	/* PM1_STS (offsets 0-1) is write-1-to-clear, and nothing is ever set. */
	if (offset == 2 && size >= 2) {
		memcpy(&v, data, 2);
		__atomic_store_n(&pm->enable, v, __ATOMIC_RELAXED);
	}
	if (offset != 4 || size < 2)
		return vcpu_continue();
	memcpy(&v, data, 2);
	__atomic_store_n(&pm->control, (uint16_t)(v & ~KVMPROF_ACPI_PM1_CNT_SLP_EN), __ATOMIC_RELAXED);
	if (!(v & KVMPROF_ACPI_PM1_CNT_SLP_EN))
		return vcpu_continue();
	if (((v & PM1_CNT_SLP_TYP_MASK) >> KVMPROF_ACPI_PM1_CNT_SLP_TYP_SHIFT) == KVMPROF_ACPI_S5_TYPE)
		return vcpu_stop(0, NULL);
	if (!__atomic_exchange_n(&pm->sleep_refused, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "kvmprof-vmm: the guest asked for ACPI sleep type %u; only S5 (type %u, power-off) "
				"is supported: it goes on running\n",
			(unsigned int)(v & PM1_CNT_SLP_TYP_MASK) >> KVMPROF_ACPI_PM1_CNT_SLP_TYP_SHIFT,
			(unsigned int)KVMPROF_ACPI_S5_TYPE);
	return vcpu_continue();
}

int acpi_pm_init(struct acpi_pm *pm, struct ioport_bus *bus)
{
	_Static_assert(KVMPROF_ACPI_PM1A_CNT_PORT == KVMPROF_ACPI_PM1A_EVT_PORT + PM1_EVT_LEN,
		       "one port range: PM1a_EVT then PM1a_CNT");
	memset(pm, 0, sizeof(*pm));
	return ioport_register(bus, KVMPROF_ACPI_PM1A_EVT_PORT, PM1_EVT_LEN + PM1_CNT_LEN, acpi_pm_io, pm);
}
