/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_MEMMAP_H
#define KVMPROF_MEMMAP_H

#include <stdint.h>

/* e820 types, shared by the PVH memory map and the Linux zero page. */
#define MEMMAP_RAM 1
#define MEMMAP_RESERVED 2

#define MEMMAP_MAX 8

struct memmap_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
};

/*
 * The guest's physical memory map: one list, translated by each boot
 * protocol into its own format, so that PVH and bzImage guests see the same
 * machine.
 */
struct memmap {
	struct memmap_entry entry[MEMMAP_MAX];
	unsigned int count;
};

void memmap_build(struct memmap *map, uint64_t mem_size);

#endif
