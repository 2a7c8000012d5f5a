/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_PVH_H
#define KVMPROF_PVH_H

#include <stdint.h>

/* The structures of Xen's PVH boot ABI (xen/include/public/arch-x86/hvm/start_info.h). */
#define HVM_START_MAGIC_VALUE 0x336ec578

struct hvm_start_info {
	uint32_t magic;
	uint32_t version;
	uint32_t flags;
	uint32_t nr_modules;
	uint64_t modlist_paddr;
	uint64_t cmdline_paddr;
	uint64_t rsdp_paddr;
	uint64_t memmap_paddr;
	uint32_t memmap_entries;
	uint32_t reserved;
};

struct hvm_modlist_entry {
	uint64_t paddr;
	uint64_t size;
	uint64_t cmdline_paddr;
	uint64_t reserved;
};

struct hvm_memmap_table_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
	uint32_t reserved;
};

_Static_assert(sizeof(struct hvm_start_info) == 56, "hvm_start_info layout");
_Static_assert(sizeof(struct hvm_modlist_entry) == 32, "hvm_modlist_entry layout");
_Static_assert(sizeof(struct hvm_memmap_table_entry) == 24, "hvm_memmap_table_entry layout");

#endif
