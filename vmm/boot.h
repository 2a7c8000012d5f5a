/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_BOOT_H
#define KVMPROF_BOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guest_mem.h"
#include "memmap.h"

/* How the boot vCPU starts: the register state each boot protocol asks for. */
enum boot_mode {
	BOOT_PVH32,   /* 32-bit protected mode, paging off, EBX = hvm_start_info */
	BOOT_LINUX64, /* long mode, identity-mapped, RSI = boot_params */
};

struct boot_entry {
	enum boot_mode mode;
	uint64_t rip;
	uint64_t arg;
};

struct boot_config {
	const struct guest_mem *mem;
	const struct memmap *map;
	const uint8_t *kernel;
	size_t kernel_size;
	const uint8_t *initrd; /* NULL: no initrd */
	size_t initrd_size;
	const char *cmdline;
};

/* Room for one line naming what is wrong with the kernel or initrd. */
#define BOOT_ERR_MAX 256

/*
 * Recognizes the kernel (PVH ELF or bzImage), loads it, the initrd and the
 * command line into guest memory and writes the boot protocol's tables.
 * Returns 0, or a negative errno with a message in err.
 */
int boot_load(const struct boot_config *cfg, struct boot_entry *entry, char err[BOOT_ERR_MAX]);

int boot_load_pvh(const struct boot_config *cfg, struct boot_entry *entry, char err[BOOT_ERR_MAX]);
int boot_load_bzimage(const struct boot_config *cfg, struct boot_entry *entry, char err[BOOT_ERR_MAX]);

bool boot_is_elf(const uint8_t *data, size_t size);
bool boot_is_bzimage(const uint8_t *data, size_t size);

/*
 * Places the initrd page-aligned as high as possible below max_end and above
 * low_limit (the kernel's end). Returns its guest address in *addr.
 */
int boot_place_initrd(const struct boot_config *cfg, uint64_t low_limit, uint64_t max_end,
		      uint64_t *addr, char err[BOOT_ERR_MAX]);

/* Copies the command line to KVMPROF_CMDLINE_ADDR, refusing one longer than max_len. */
int boot_write_cmdline(const struct boot_config *cfg, size_t max_len, char err[BOOT_ERR_MAX]);

#endif
