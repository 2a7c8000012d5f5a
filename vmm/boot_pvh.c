// SPDX-License-Identifier: MIT
/*
 * PVH boot (Xen's "x86/HVM direct boot ABI"): the kernel is an ELF file whose
 * note "Xen", type XEN_ELFNOTE_PHYS32_ENTRY, names a 32-bit entry point. The
 * VMM loads the PT_LOAD segments at their physical addresses and starts the
 * vCPU in flat 32-bit protected mode with EBX pointing at hvm_start_info.
 */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "boot.h"
#include "kvmprof/platform.h"
#include "pvh.h"

#define XEN_ELFNOTE_PHYS32_ENTRY 18

/* One program header in a class-independent form. */
struct pvh_phdr {
	uint32_t type;
	uint64_t offset, paddr, filesz, memsz;
};

struct pvh_elf {
	const uint8_t *data;
	size_t size;
	bool is64;
	uint64_t phoff;
	unsigned int phnum;
};

static int pvh_elf_open(struct pvh_elf *elf, const uint8_t *data, size_t size, char err[BOOT_ERR_MAX])
{
	elf->data = data;
	elf->size = size;
	if (size < EI_NIDENT || (data[EI_CLASS] != ELFCLASS64 && data[EI_CLASS] != ELFCLASS32)) {
		snprintf(err, BOOT_ERR_MAX, "ELF kernel: unknown ELF class or truncated header");
		return -ENOEXEC;
	}
	if (data[EI_DATA] != ELFDATA2LSB) {
		snprintf(err, BOOT_ERR_MAX, "ELF kernel: not little-endian");
		return -ENOEXEC;
	}
	elf->is64 = data[EI_CLASS] == ELFCLASS64;
	if (elf->is64) {
		Elf64_Ehdr eh;
		if (size < sizeof(eh))
			goto truncated;
		memcpy(&eh, data, sizeof(eh));
		if (eh.e_machine != EM_X86_64 || eh.e_phentsize != sizeof(Elf64_Phdr))
			goto badmachine;
		elf->phoff = eh.e_phoff;
		elf->phnum = eh.e_phnum;
	} else {
		Elf32_Ehdr eh;
		if (size < sizeof(eh))
			goto truncated;
		memcpy(&eh, data, sizeof(eh));
		if ((eh.e_machine != EM_386 && eh.e_machine != EM_X86_64) ||
		    eh.e_phentsize != sizeof(Elf32_Phdr))
			goto badmachine;
		elf->phoff = eh.e_phoff;
		elf->phnum = eh.e_phnum;
	}
	{
		uint64_t entsz = elf->is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
		if (elf->phnum == 0 || elf->phoff > size || (size - elf->phoff) / entsz < elf->phnum)
			goto truncated;
	}
	return 0;
truncated:
	snprintf(err, BOOT_ERR_MAX, "ELF kernel is truncated: program headers lie outside the file");
	return -ENOEXEC;
badmachine:
	snprintf(err, BOOT_ERR_MAX, "ELF kernel is not an x86 executable");
	return -ENOEXEC;
}

static void pvh_elf_phdr(const struct pvh_elf *elf, unsigned int i, struct pvh_phdr *ph)
{
	if (elf->is64) {
		Elf64_Phdr p;
		memcpy(&p, elf->data + elf->phoff + (uint64_t)i * sizeof(p), sizeof(p));
		*ph = (struct pvh_phdr){ p.p_type, p.p_offset, p.p_paddr, p.p_filesz, p.p_memsz };
	} else {
		Elf32_Phdr p;
		memcpy(&p, elf->data + elf->phoff + (uint64_t)i * sizeof(p), sizeof(p));
		*ph = (struct pvh_phdr){ p.p_type, p.p_offset, p.p_paddr, p.p_filesz, p.p_memsz };
	}
}

/* Scans one PT_NOTE segment for Xen's PHYS32_ENTRY note. */
static bool pvh_find_entry_note(const uint8_t *notes, uint64_t len, uint64_t *entry)
{
	uint64_t off = 0;

	while (len - off >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh; /* same layout as Elf32_Nhdr */
		uint64_t name_off, desc_off, next;

		memcpy(&nh, notes + off, sizeof(nh));
		name_off = off + sizeof(nh);
		desc_off = name_off + (((uint64_t)nh.n_namesz + 3) & ~3ULL);
		next = desc_off + (((uint64_t)nh.n_descsz + 3) & ~3ULL);
		if (desc_off > len || next > len || nh.n_descsz > len - desc_off)
			return false;
		if (nh.n_type == XEN_ELFNOTE_PHYS32_ENTRY && nh.n_namesz == 4 &&
		    memcmp(notes + name_off, "Xen", 4) == 0 &&
		    (nh.n_descsz == 4 || nh.n_descsz == 8)) {
			uint64_t v = 0;
			memcpy(&v, notes + desc_off, nh.n_descsz);
			*entry = nh.n_descsz == 4 ? (uint32_t)v : v;
			return true;
		}
		off = next;
	}
	return false;
}

static int pvh_write_start_info(const struct boot_config *cfg, uint64_t initrd_addr)
{
	struct hvm_start_info si = {
		.magic = HVM_START_MAGIC_VALUE,
		.version = 1,
		.cmdline_paddr = KVMPROF_CMDLINE_ADDR,
		.rsdp_paddr = KVMPROF_ACPI_ADDR,
		.memmap_paddr = KVMPROF_MEMMAP_ADDR,
		.memmap_entries = cfg->map->count,
	};
	int rc;

	if (cfg->initrd) {
		struct hvm_modlist_entry mod = { .paddr = initrd_addr, .size = cfg->initrd_size };
		rc = guest_mem_write(cfg->mem, KVMPROF_MODLIST_ADDR, &mod, sizeof(mod));
		if (rc)
			return rc;
		si.nr_modules = 1;
		si.modlist_paddr = KVMPROF_MODLIST_ADDR;
	}
	for (unsigned int i = 0; i < cfg->map->count; i++) {
		struct hvm_memmap_table_entry e = {
			.addr = cfg->map->entry[i].addr,
			.size = cfg->map->entry[i].size,
			.type = cfg->map->entry[i].type,
		};
		rc = guest_mem_write(cfg->mem, KVMPROF_MEMMAP_ADDR + i * sizeof(e), &e, sizeof(e));
		if (rc)
			return rc;
	}
	return guest_mem_write(cfg->mem, KVMPROF_START_INFO_ADDR, &si, sizeof(si));
}

int boot_load_pvh(const struct boot_config *cfg, struct boot_entry *entry, char err[BOOT_ERR_MAX])
{
	struct pvh_elf elf;
	uint64_t pvh_entry = 0, kernel_end = 0, initrd_addr = 0;
	bool have_entry = false, have_load = false;
	int rc = pvh_elf_open(&elf, cfg->kernel, cfg->kernel_size, err);

	if (rc)
		return rc;
	for (unsigned int i = 0; i < elf.phnum; i++) {
		struct pvh_phdr ph;

		pvh_elf_phdr(&elf, i, &ph);
		if (ph.type != PT_LOAD && ph.type != PT_NOTE)
			continue;
		if (ph.offset > elf.size || ph.filesz > elf.size - ph.offset) {
			snprintf(err, BOOT_ERR_MAX, "ELF kernel is truncated: segment %u lies past the end of the file", i);
			return -ENOEXEC;
		}
		if (ph.type == PT_NOTE) {
			if (!have_entry)
				have_entry = pvh_find_entry_note(elf.data + ph.offset, ph.filesz, &pvh_entry);
			continue;
		}
		if (ph.memsz < ph.filesz) {
			snprintf(err, BOOT_ERR_MAX, "ELF kernel: segment %u is smaller in memory than in the file", i);
			return -ENOEXEC;
		}
		/* Below 1 MiB lie the VMM's boot tables; beyond RAM there is nothing. */
		if (ph.paddr < KVMPROF_HIGHMEM_START ||
		    !guest_mem_ptr(cfg->mem, ph.paddr, ph.memsz)) {
			snprintf(err, BOOT_ERR_MAX,
				 "ELF kernel: segment %u at 0x%llx-0x%llx lies outside guest memory (1 MiB to %llu MiB)",
				 i, (unsigned long long)ph.paddr, (unsigned long long)(ph.paddr + ph.memsz),
				 (unsigned long long)(cfg->mem->size >> 20));
			return -ERANGE;
		}
		guest_mem_write(cfg->mem, ph.paddr, elf.data + ph.offset, ph.filesz);
		memset(cfg->mem->host + ph.paddr + ph.filesz, 0, ph.memsz - ph.filesz);
		if (ph.paddr + ph.memsz > kernel_end)
			kernel_end = ph.paddr + ph.memsz;
		have_load = true;
	}
	if (!have_entry) {
		snprintf(err, BOOT_ERR_MAX, "ELF kernel has no PVH entry point (Xen ELF note PHYS32_ENTRY): not PVH-bootable");
		return -ENOEXEC;
	}
	if (!have_load) {
		snprintf(err, BOOT_ERR_MAX, "ELF kernel has no loadable segment");
		return -ENOEXEC;
	}
	if (pvh_entry >= cfg->mem->size || pvh_entry > UINT32_MAX) {
		snprintf(err, BOOT_ERR_MAX, "ELF kernel: PVH entry point 0x%llx lies outside guest memory",
			 (unsigned long long)pvh_entry);
		return -ERANGE;
	}
	rc = boot_write_cmdline(cfg, KVMPROF_CMDLINE_MAX - 1, err);
	if (rc)
		return rc;
	if (cfg->initrd) {
		rc = boot_place_initrd(cfg, kernel_end, UINT32_MAX, &initrd_addr, err);
		if (rc)
			return rc;
	}
	rc = pvh_write_start_info(cfg, initrd_addr);
	if (rc)
		return rc;
	*entry = (struct boot_entry){ BOOT_PVH32, pvh_entry, KVMPROF_START_INFO_ADDR };
	return 0;
}
