// SPDX-License-Identifier: MIT
/*
 * The standard power-off: ACPI S5 through the FADT's PM1 control blocks
 * (acpi_tables.h). poweroff() tries kvmprof-vmm's exit port first, which
 * carries the exit status (and QEMU's isa-debug-exit, where it is
 * configured); a machine without one (QEMU as libvirt runs it) gets here.
 * The tables are read at boot, before anything reuses the memory around
 * them, and only where the kernel's identity map reaches (below 1 GiB).
 */
#include "acpi_tables.h"
#include "kernel.h"

#define PM1_CNT_SLP_TYP_SHIFT 10
#define PM1_CNT_SLP_TYP (7u << PM1_CNT_SLP_TYP_SHIFT)
#define PM1_CNT_SLP_EN (1u << 13)

int acpi_poweroff_only; /* `poweroff=acpi`: skip the exit port (tests kvmprof-vmm's PM1 blocks) */

static struct acpi_poweroff acpi_off;
static const char *acpi_off_missing = "ACPI tables not read yet";

static const void *acpi_map(void *ctx, uint64_t pa, uint64_t len)
{
	(void)ctx;
	return pa && pa + len >= pa && pa + len <= KERNEL_MEM_LIMIT ? (const void *)pa : 0;
}

void acpi_init(uint64_t rsdp_pa)
{
	const struct acpi_phys phys = { .map = acpi_map };

	if (!acpi_find_poweroff(&phys, rsdp_pa, &acpi_off, &acpi_off_missing))
		acpi_off_missing = 0;
}

static inline uint16_t inw(uint16_t port)
{
	uint16_t v;
	__asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline void outw(uint16_t port, uint16_t v)
{
	__asm__ volatile("outw %0, %1" : : "a"(v), "Nd"(port));
}

/* As ACPICA does: the sleep type first, then the same value with SLP_EN. */
static void acpi_pm1_sleep(uint16_t port, uint8_t type)
{
	uint16_t v = (uint16_t)((inw(port) & ~(PM1_CNT_SLP_TYP | PM1_CNT_SLP_EN)) |
				(uint16_t)type << PM1_CNT_SLP_TYP_SHIFT);

	outw(port, v);
	outw(port, (uint16_t)(v | PM1_CNT_SLP_EN));
}

void acpi_poweroff(uint32_t status)
{
	char buf[128];
	int n;

	if (status) {
		n = snprintf(buf, sizeof(buf), "kvmprof guest: exit status %u (an ACPI power-off cannot pass it on)\n",
			     status);
		console_write_unlocked(buf, (size_t)n);
	}
	if (acpi_off_missing) {
		n = snprintf(buf, sizeof(buf), "kvmprof guest: cannot power off: %s; halted\n", acpi_off_missing);
		console_write_unlocked(buf, (size_t)n);
		return;
	}
	acpi_pm1_sleep(acpi_off.pm1a_cnt, acpi_off.slp_typa);
	if (acpi_off.pm1b_cnt)
		acpi_pm1_sleep(acpi_off.pm1b_cnt, acpi_off.slp_typb);
}
