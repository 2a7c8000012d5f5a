// SPDX-License-Identifier: MIT
#include "memmap.h"

#include "kvmprof/platform.h"

static void memmap_add(struct memmap *map, uint64_t addr, uint64_t size, uint32_t type)
{
	if (map->count < MEMMAP_MAX)
		map->entry[map->count++] = (struct memmap_entry){ addr, size, type };
}

void memmap_build(struct memmap *map, uint64_t mem_size)
{
	map->count = 0;
	memmap_add(map, 0, KVMPROF_LOWMEM_END, MEMMAP_RAM);
	/* EBDA and the BIOS area: the ACPI tables and the MP table live there. */
	memmap_add(map, KVMPROF_LOWMEM_END, 0xa0000 - KVMPROF_LOWMEM_END, MEMMAP_RESERVED);
	memmap_add(map, KVMPROF_ACPI_ADDR, KVMPROF_HIGHMEM_START - KVMPROF_ACPI_ADDR, MEMMAP_RESERVED);
	memmap_add(map, KVMPROF_HIGHMEM_START, mem_size - KVMPROF_HIGHMEM_START, MEMMAP_RAM);
}
