/* SPDX-License-Identifier: MIT */
/*
 * Static ELF64 loader (ET_EXEC, PT_LOAD). Everything in the image is
 * untrusted: offsets, sizes and addresses are checked before use.
 */
#include <guest/syscall.h>

#include "kernel.h"

#define PT_LOAD 1
#define PF_X 1
#define MAX_PHDRS 64

struct elf64_ehdr {
	unsigned char e_ident[16];
	uint16_t e_type, e_machine;
	uint32_t e_version;
	uint64_t e_entry, e_phoff, e_shoff;
	uint32_t e_flags;
	uint16_t e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx;
};

struct elf64_phdr {
	uint32_t p_type, p_flags;
	uint64_t p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align;
};

/* User addresses available to segments: below the stack. */
#define SEG_END (GUEST_USER_STACK_TOP - GUEST_USER_STACK_SIZE)

static int load_segment(struct proc *p, const unsigned char *img, const struct elf64_phdr *ph)
{
	uint64_t start = ph->p_vaddr & ~(PAGE_SIZE - 1);
	uint64_t end = (ph->p_vaddr + ph->p_memsz + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	uint64_t fstart = ph->p_vaddr, fend = ph->p_vaddr + ph->p_filesz;

	for (uint64_t va = start; va < end; va += PAGE_SIZE) {
		unsigned char *page = as_map_page(p, va);
		if (!page)
			return -1;
		uint64_t lo = va > fstart ? va : fstart;
		uint64_t hi = va + PAGE_SIZE < fend ? va + PAGE_SIZE : fend;
		if (lo < hi)
			memcpy(page + (lo - va), img + ph->p_offset + (lo - fstart), hi - lo);
	}
	if (p->nregions == MAX_REGIONS)
		return -1;
	p->regions[p->nregions].start = start;
	p->regions[p->nregions].end = end;
	p->nregions++;
	return 0;
}

int elf_load(struct proc *p, const void *image, size_t size, uint64_t *entry)
{
	const unsigned char *img = image;
	struct elf64_ehdr eh;

	if (size < sizeof(eh))
		return -1;
	memcpy(&eh, img, sizeof(eh));
	if (memcmp(eh.e_ident, "\177ELF", 4) || eh.e_ident[4] != 2 /* 64-bit */ ||
	    eh.e_ident[5] != 1 /* little endian */ || eh.e_type != 2 /* ET_EXEC */ ||
	    eh.e_machine != 62 /* x86-64 */ || eh.e_phentsize != sizeof(struct elf64_phdr) ||
	    eh.e_phnum == 0 || eh.e_phnum > MAX_PHDRS || eh.e_phoff > size ||
	    (size - eh.e_phoff) / sizeof(struct elf64_phdr) < eh.e_phnum)
		return -1;

	int loaded = 0;
	for (int i = 0; i < eh.e_phnum; i++) {
		struct elf64_phdr ph;
		memcpy(&ph, img + eh.e_phoff + (uint64_t)i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_LOAD || ph.p_memsz == 0)
			continue;
		if (ph.p_filesz > ph.p_memsz || ph.p_offset > size || ph.p_filesz > size - ph.p_offset ||
		    ph.p_vaddr < GUEST_USER_BASE || ph.p_vaddr >= SEG_END ||
		    ph.p_memsz > SEG_END - ph.p_vaddr)
			return -1;
		if (load_segment(p, img, &ph))
			return -1;
		if ((ph.p_flags & PF_X) && !p->text_end) { /* the first executable one */
			p->text_start = ph.p_vaddr;
			p->text_end = ph.p_vaddr + ph.p_memsz;
			p->text_offset = ph.p_offset;
		}
		loaded++;
	}
	if (!loaded || !user_range_ok(p, eh.e_entry, 2))
		return -1;
	*entry = eh.e_entry;
	return 0;
}
