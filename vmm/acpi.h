/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_ACPI_H
#define KVMPROF_ACPI_H

#include "guest_mem.h"

/*
 * Writes minimal ACPI tables at KVMPROF_ACPI_ADDR: RSDP, XSDT, a FADT
 * whose only fixed hardware is the PM1a blocks (acpi_pm.h), a DSDT with \_S5 alone and a MADT with one local APIC per
 * vCPU and the I/O APIC. Linux kernels built without MP-table parsing (the
 * Debian cloud kernel) count CPUs only from the MADT. The RSDP sits in the
 * BIOS area that Linux scans, and its address is also passed explicitly
 * (hvm_start_info.rsdp_paddr, boot_params.acpi_rsdp_addr).
 */
int acpi_write_tables(const struct guest_mem *mem, unsigned int ncpus);

#endif
