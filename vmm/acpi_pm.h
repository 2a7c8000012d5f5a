/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_ACPI_PM_H
#define KVMPROF_ACPI_PM_H

#include <stdint.h>

#include "ioport.h"

/*
 * The ACPI fixed hardware the FADT (acpi.c) points at: the PM1a event and
 * control blocks (include/kvmprof/platform.h). The only thing a guest can
 * do with them is power off: SLP_EN with the \_S5 sleep type stops the VM
 * with exit code 0. Status bits never rise (no fixed events: no power
 * button, no timer), SCI_EN reads as set (the machine is always in ACPI
 * mode) and the other sleep states are refused, once said on stderr.
 */
struct acpi_pm {
	uint16_t enable;  /* PM1_EN, as the guest wrote it */
	uint16_t control; /* PM1_CNT without SLP_EN (write-only) */
	int sleep_refused; /* a sleep type other than S5 was asked for: said once */
};

int acpi_pm_init(struct acpi_pm *pm, struct ioport_bus *bus);

#endif
