// SPDX-License-Identifier: MIT
/*
 * Linux bzImage through the 64-bit boot protocol (Documentation/arch/x86/
 * boot.rst): the protected-mode kernel goes to 1 MiB, a zero page
 * (boot_params) carries the setup header, the command line, the initrd and
 * the e820 map, and the vCPU starts in long mode at load address + 0x200 with
 * an identity map, flat __BOOT_CS/__BOOT_DS segments and RSI = boot_params.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "boot.h"
#include "bzimage.h"
#include "kvmprof/platform.h"

int bzimage_parse(const uint8_t *data, size_t size, struct bzimage_info *info, char err[BOOT_ERR_MAX])
{
	uint16_t version;

	if (!boot_is_bzimage(data, size)) {
		snprintf(err, BOOT_ERR_MAX, "not a bzImage (no 0xAA55 boot flag or HdrS signature)");
		return -ENOEXEC;
	}
	/* Every field read below lies before BZ_HDR_MIN_END: check that once, before any read. */
	if (size < BZ_HDR_MIN_END) {
		snprintf(err, BOOT_ERR_MAX, "bzImage is truncated inside its setup header (%zu bytes, %u needed)",
			 size, (unsigned int)BZ_HDR_MIN_END);
		return -ENOEXEC;
	}
	memcpy(&version, data + BZ_VERSION, 2);
	if (version < 0x20c) {
		snprintf(err, BOOT_ERR_MAX, "bzImage boot protocol %u.%02u is too old: 2.12 or later is needed",
			 (unsigned int)version >> 8, (unsigned int)version & 0xff);
		return -ENOEXEC;
	}
	info->version = version;
	info->setup_sects = data[BZ_SETUP_SECTS] ? data[BZ_SETUP_SECTS] : 4;
	info->hdr_end = 0x202 + data[0x201];
	memcpy(&info->xloadflags, data + BZ_XLOADFLAGS, 2);
	memcpy(&info->cmdline_size, data + BZ_CMDLINE_SIZE, 4);
	memcpy(&info->initrd_addr_max, data + BZ_INITRD_ADDR_MAX, 4);
	memcpy(&info->init_size, data + BZ_INIT_SIZE, 4);
	info->kernel_offset = ((uint64_t)info->setup_sects + 1) * 512;
	if (!(info->xloadflags & XLF_KERNEL_64)) {
		snprintf(err, BOOT_ERR_MAX, "bzImage has no 64-bit entry point (XLF_KERNEL_64 not set)");
		return -ENOEXEC;
	}
	if (info->hdr_end > BZ_HDR_MAX_END || info->hdr_end > size || info->kernel_offset >= size) {
		snprintf(err, BOOT_ERR_MAX, "bzImage is truncated: the kernel starts at byte %llu of %zu",
			 (unsigned long long)info->kernel_offset, size);
		return -ENOEXEC;
	}
	info->kernel_size = size - info->kernel_offset;
	return 0;
}

static void bzimage_write_page_tables(const struct guest_mem *mem)
{
	uint64_t *pml4 = guest_mem_ptr(mem, KVMPROF_PML4_ADDR, 0x1000);
	uint64_t *pdpt = guest_mem_ptr(mem, KVMPROF_PML4_ADDR + 0x1000, 0x1000);
	uint64_t *pd = guest_mem_ptr(mem, KVMPROF_PML4_ADDR + 0x2000, 4 * 0x1000);

	/* Identity-map the low 4 GiB with 2 MiB pages: present, writable, large. */
	memset(pml4, 0, 0x1000);
	memset(pdpt, 0, 0x1000);
	pml4[0] = (KVMPROF_PML4_ADDR + 0x1000) | 0x3;
	for (uint64_t i = 0; i < 4; i++)
		pdpt[i] = (KVMPROF_PML4_ADDR + 0x2000 + i * 0x1000) | 0x3;
	for (uint64_t i = 0; i < 4 * 512; i++)
		pd[i] = (i << 21) | 0x83;
}

static void bzimage_write_gdt(const struct guest_mem *mem)
{
	/* null, null, __BOOT_CS (0x10): 64-bit code, __BOOT_DS (0x18): flat data. */
	const uint64_t gdt[4] = { 0, 0, 0x00af9b000000ffffULL, 0x00cf93000000ffffULL };

	guest_mem_write(mem, KVMPROF_GDT_ADDR, gdt, sizeof(gdt));
}

int boot_load_bzimage(const struct boot_config *cfg, struct boot_entry *entry, char err[BOOT_ERR_MAX])
{
	const struct guest_mem *mem = cfg->mem;
	uint8_t *bp = guest_mem_ptr(mem, KVMPROF_BOOT_PARAMS_ADDR, BZ_BOOT_PARAMS_SIZE);
	struct bzimage_info info;
	uint64_t load = KVMPROF_HIGHMEM_START, need, initrd_addr = 0;
	uint32_t v32;
	int rc = bzimage_parse(cfg->kernel, cfg->kernel_size, &info, err);

	if (rc)
		return rc;
	need = info.init_size > info.kernel_size ? info.init_size : info.kernel_size;
	if (!guest_mem_ptr(mem, load, need)) {
		snprintf(err, BOOT_ERR_MAX, "bzImage needs %llu MiB from 1 MiB up to decompress, more than the "
			 "%llu MiB of guest memory: use a larger --mem", (unsigned long long)(need >> 20) + 1,
			 (unsigned long long)(mem->size >> 20));
		return -ERANGE;
	}
	guest_mem_write(mem, load, cfg->kernel + info.kernel_offset, info.kernel_size);

	memset(bp, 0, BZ_BOOT_PARAMS_SIZE);
	memcpy(bp + BZ_SETUP_HDR, cfg->kernel + BZ_SETUP_HDR, info.hdr_end - BZ_SETUP_HDR);
	bp[BZ_TYPE_OF_LOADER] = 0xff;
	bp[BZ_LOADFLAGS] |= LOADED_HIGH;
	bp[BZ_LOADFLAGS] &= (uint8_t)~KEEP_SEGMENTS;
	v32 = KVMPROF_CMDLINE_ADDR;
	memcpy(bp + BZ_CMD_LINE_PTR, &v32, 4);
	v32 = (uint32_t)load;
	memcpy(bp + BZ_CODE32_START, &v32, 4);

	rc = boot_write_cmdline(cfg, info.cmdline_size, err);
	if (rc)
		return rc;
	if (cfg->initrd) {
		uint64_t max_end = (uint64_t)info.initrd_addr_max + 1;

		rc = boot_place_initrd(cfg, load + need, max_end, &initrd_addr, err);
		if (rc)
			return rc;
		v32 = (uint32_t)initrd_addr;
		memcpy(bp + BZ_RAMDISK_IMAGE, &v32, 4);
		v32 = (uint32_t)cfg->initrd_size;
		memcpy(bp + BZ_RAMDISK_SIZE, &v32, 4);
	}
	if (info.version >= 0x20e) {
		uint64_t rsdp = KVMPROF_ACPI_ADDR;
		memcpy(bp + BZ_ACPI_RSDP_ADDR, &rsdp, 8);
	}
	bp[BZ_E820_ENTRIES] = (uint8_t)cfg->map->count;
	for (unsigned int i = 0; i < cfg->map->count; i++) {
		uint8_t *e = bp + BZ_E820_TABLE + i * 20;
		memcpy(e, &cfg->map->entry[i].addr, 8);
		memcpy(e + 8, &cfg->map->entry[i].size, 8);
		memcpy(e + 16, &cfg->map->entry[i].type, 4);
	}
	bzimage_write_page_tables(mem);
	bzimage_write_gdt(mem);
	*entry = (struct boot_entry){ BOOT_LINUX64, load + 0x200, KVMPROF_BOOT_PARAMS_ADDR };
	return 0;
}
