/* SPDX-License-Identifier: MIT */
/*
 * Finding the standard ACPI power-off (S5) in a machine's ACPI tables: the
 * PM1a (and PM1b) control port from the FADT and the sleep type from the
 * DSDT's \_S5 package. Pure code with no dependencies, shared by the guest
 * kernel (acpi.c) and the host unit tests (tests/unit/test_acpi_tables.c).
 *
 * The tables are the firmware's (kvmprof-vmm's, QEMU's through SeaBIOS),
 * but read as untrusted: every table is reached through map, which refuses
 * what the caller cannot read, every length is bounded and every checksum
 * checked, and the AML is not interpreted: the one named package is
 * decoded where it stands, as every small kernel that powers off through
 * ACPI does.
 */
#ifndef GUEST_ACPI_TABLES_H
#define GUEST_ACPI_TABLES_H

#include <stdint.h>

/* Physical memory as the parser may read it: a pointer to [pa, pa + len), or 0 when not readable. */
struct acpi_phys {
	const void *(*map)(void *ctx, uint64_t pa, uint64_t len);
	void *ctx;
};

/* How to power off: write SLP_TYP | SLP_EN to each control port there is. */
struct acpi_poweroff {
	uint16_t pm1a_cnt, pm1b_cnt; /* I/O ports; pm1b_cnt 0: none */
	uint8_t slp_typa, slp_typb;  /* 0-7 */
};

#define ACPI_TABLE_MAX (1u << 20) /* no sane table is larger */

/*
 * Fills out from the tables the RSDP at rsdp_pa leads to (0: search the
 * EBDA's first KiB and 0xE0000-0xFFFFF, where PC firmware puts it). 0, or -1
 * with *why saying what was missing or refused.
 */
int acpi_find_poweroff(const struct acpi_phys *m, uint64_t rsdp_pa, struct acpi_poweroff *out, const char **why);

#endif
