/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_BZIMAGE_H
#define KVMPROF_BZIMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "boot.h"

/* Offsets in the bzImage file and in boot_params (the setup header sits at the same place in both). */
#define BZ_BOOT_PARAMS_SIZE 4096
#define BZ_ACPI_RSDP_ADDR 0x070 /* boot_params only, protocol 2.14+ */
#define BZ_E820_ENTRIES 0x1e8
#define BZ_SETUP_SECTS 0x1f1
#define BZ_SETUP_HDR 0x1f1
#define BZ_VERSION 0x206
#define BZ_TYPE_OF_LOADER 0x210
#define BZ_LOADFLAGS 0x211
#define BZ_CODE32_START 0x214
#define BZ_RAMDISK_IMAGE 0x218
#define BZ_RAMDISK_SIZE 0x21c
#define BZ_CMD_LINE_PTR 0x228
#define BZ_INITRD_ADDR_MAX 0x22c
#define BZ_XLOADFLAGS 0x236
#define BZ_CMDLINE_SIZE 0x238
#define BZ_INIT_SIZE 0x260
#define BZ_HDR_MIN_END 0x264   /* through init_size: protocol 2.10 */
#define BZ_HDR_MAX_END 0x2d0   /* the e820 table follows the header */
#define BZ_E820_TABLE 0x2d0

#define LOADED_HIGH 0x01
#define KEEP_SEGMENTS 0x40
#define XLF_KERNEL_64 0x0001

struct bzimage_info {
	uint16_t version;
	uint16_t xloadflags;
	unsigned int setup_sects;
	uint32_t hdr_end;        /* end of the setup header in the file */
	uint32_t cmdline_size;
	uint32_t initrd_addr_max;
	uint32_t init_size;
	uint64_t kernel_offset;  /* where the protected-mode kernel starts */
	uint64_t kernel_size;
};

int bzimage_parse(const uint8_t *data, size_t size, struct bzimage_info *info, char err[BOOT_ERR_MAX]);

#endif
