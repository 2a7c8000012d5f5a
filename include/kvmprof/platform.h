/* SPDX-License-Identifier: MIT */
/*
 * The machine kvmprof-vmm presents to a guest: the fixed addresses and ports
 * both the VMM and the bundled guest rely on. Plain constants only, so this
 * header can be included by host code and by the freestanding guest alike.
 */
#ifndef KVMPROF_PLATFORM_H
#define KVMPROF_PLATFORM_H

/*
 * Power-off port. A 32-bit OUT of a status to this port ends the VM, and the
 * status becomes the VMM's exit code (statuses above 255 become 255, so a
 * failure never reads as success). The port and its width match QEMU's
 * `-device isa-debug-exit,iobase=0xf4,iosize=4`, so the same guest can be
 * powered off under QEMU too (QEMU exits with (status << 1) | 1 there).
 */
#define KVMPROF_EXIT_PORT 0xf4

/*
 * The ways a PC guest asks for a reset: 0xfe to the i8042 keyboard
 * controller's command port pulses the reset line, and bit 2 of the reset
 * control register. Linux tries both on reboot; kvmprof-vmm does not
 * reboot guests but stops, exit code 0.
 */
#define KVMPROF_I8042_COMMAND_PORT 0x64
#define KVMPROF_RESET_CONTROL_PORT 0xcf9

/*
 * ACPI fixed hardware, as the FADT describes it: the PM1a event block
 * (status, enable: 4 bytes) and control block (2 bytes) at QEMU's PIIX4
 * addresses. A guest powers off the standard way by writing SLP_EN with the
 * SLP_TYP of the DSDT's \_S5 package to PM1a_CNT; kvmprof-vmm then stops
 * with exit code 0, as QEMU stops a libvirt domain. KVMPROF_ACPI_S5_TYPE is
 * what kvmprof-vmm's \_S5 says (ICH hardware's value; QEMU's is 0), so a
 * guest must read it from the DSDT rather than assume one.
 */
#define KVMPROF_ACPI_PM1A_EVT_PORT 0x600
#define KVMPROF_ACPI_PM1A_CNT_PORT 0x604
#define KVMPROF_ACPI_PM1_CNT_SCI_EN 0x0001u
#define KVMPROF_ACPI_PM1_CNT_SLP_EN 0x2000u
#define KVMPROF_ACPI_PM1_CNT_SLP_TYP_SHIFT 10
#define KVMPROF_ACPI_S5_TYPE 7

/* The CMOS real-time clock: index register, then data register. */
#define KVMPROF_RTC_PORT 0x70

/* 8250 UARTs: COM1 is the console, COM2 the agent channel. */
#define KVMPROF_COM1_PORT 0x3f8
#define KVMPROF_COM1_IRQ 4
#define KVMPROF_COM2_PORT 0x2f8
#define KVMPROF_COM2_IRQ 3

/* Local and I/O APIC of the in-kernel irqchip. */
#define KVMPROF_LAPIC_BASE 0xfee00000UL
#define KVMPROF_IOAPIC_BASE 0xfec00000UL

/*
 * Guest-physical layout of what the VMM writes into low memory. Everything
 * here lies below 0x9fc00 (usable RAM in the memory map, so a guest must
 * take care not to reuse it before it has read it) except the ACPI tables
 * and the MP table, which sit in the reserved BIOS area (0xe0000-0xfffff)
 * where an OS searches for them.
 */
#define KVMPROF_GDT_ADDR 0x00000500UL        /* boot GDT (bzImage boot) */
#define KVMPROF_START_INFO_ADDR 0x00006000UL /* PVH hvm_start_info */
#define KVMPROF_MODLIST_ADDR 0x00006100UL    /* PVH module list (initrd) */
#define KVMPROF_MEMMAP_ADDR 0x00006200UL     /* PVH memory map entries */
#define KVMPROF_BOOT_PARAMS_ADDR 0x00007000UL /* Linux zero page */
#define KVMPROF_PML4_ADDR 0x00009000UL       /* bzImage identity map */
#define KVMPROF_CMDLINE_ADDR 0x00020000UL
#define KVMPROF_CMDLINE_MAX 4096
#define KVMPROF_LOWMEM_END 0x0009fc00UL      /* end of usable base memory */
#define KVMPROF_ACPI_ADDR 0x000e0000UL       /* RSDP + ACPI tables */
#define KVMPROF_MPTABLE_ADDR 0x000f0000UL    /* MP floating pointer + table */
#define KVMPROF_HIGHMEM_START 0x00100000UL   /* 1 MiB: kernels load here */

/* Largest guest RAM: everything sits below the 32-bit MMIO hole. */
#define KVMPROF_MEM_MAX (3UL << 30)
#define KVMPROF_MEM_MIN (16UL << 20)
#define KVMPROF_MAX_CPUS 8

#endif
