// SPDX-License-Identifier: MIT
#include "guest_walk.h"

#include <errno.h>
#include <stddef.h>

#define CR0_PG (1ULL << 31)
#define CR4_LA57 (1ULL << 12)
#define EFER_LMA (1ULL << 10)
#define EFER_NXE (1ULL << 11)

#define PTE_P (1ULL << 0)
#define PTE_RW (1ULL << 1)
#define PTE_US (1ULL << 2)
#define PTE_A (1ULL << 5)
#define PTE_D (1ULL << 6)
#define PTE_PS (1ULL << 7)
#define PTE_G (1ULL << 8)
#define PTE_XD (1ULL << 63)
/* Bits 51:12: the architectural maximum; anything above RAM fails the bounds check anyway. */
#define PTE_ADDR 0x000ffffffffff000ULL

#define PAGE_SIZE 4096ULL

int guest_paging_init(struct guest_paging *pg, uint64_t cr0, uint64_t cr3, uint64_t cr4,
		      uint64_t efer)
{
	if (!(cr0 & CR0_PG))
		pg->mode = GUEST_PAGING_OFF;
	else if (efer & EFER_LMA)
		pg->mode = (cr4 & CR4_LA57) ? GUEST_PAGING_5LEVEL : GUEST_PAGING_4LEVEL;
	else
		return -EINVAL;
	pg->cr3 = cr3;
	pg->nxe = (efer & EFER_NXE) != 0;
	return 0;
}

bool guest_walk_canonical(const struct guest_paging *pg, uint64_t gva)
{
	switch (pg->mode) {
	case GUEST_PAGING_OFF:
		return gva <= UINT32_MAX;
	case GUEST_PAGING_4LEVEL:
		/* Bits 63:47 all copies of bit 47 (arithmetic shift sign-extends on gcc). */
		return (uint64_t)((int64_t)(gva << 16) >> 16) == gva;
	case GUEST_PAGING_5LEVEL:
		return (uint64_t)((int64_t)(gva << 7) >> 7) == gva;
	}
	return false;
}

/*
 * Bits that must be clear in a present entry at this level (1 = page table,
 * 5 = PML5), or the CPU raises a reserved-bit page fault: we refuse the
 * same entries so a corrupt table cannot be read as a mapping.
 */
static uint64_t reserved_bits(const struct guest_paging *pg, unsigned int level, uint64_t entry)
{
	uint64_t rsvd = pg->nxe ? 0 : PTE_XD;

	if (level >= 4)
		rsvd |= PTE_PS; /* no 512 GiB pages */
	else if ((level == 3 || level == 2) && (entry & PTE_PS)) {
		/* Between the PAT bit (12) and the page frame: bits 29:13 or 20:13. */
		uint64_t page_mask = (1ULL << (12 + 9 * (level - 1))) - 1;

		rsvd |= page_mask & ~0x1fffULL;
	}
	return rsvd;
}

/*
 * mark: 0 reads only; PTE_A sets accessed bits on the way; PTE_A | PTE_D also the leaf's dirty bit.
 * why, if not NULL, says why a walk failed (enum guest_walk_refusal).
 */
static int walk_why(const struct vmi_mem *mem, const struct guest_paging *pg, uint64_t gva,
		    struct guest_translation *out, uint64_t mark, enum guest_walk_refusal *why)
{
	struct guest_translation t = { .user = true, .writable = true };
	uint64_t entries[5]; /* guest-physical addresses of the entries walked */
	unsigned int levels, used = 0;
	uint64_t table;

	switch (pg->mode) {
	case GUEST_PAGING_OFF:
		levels = 0;
		break;
	case GUEST_PAGING_4LEVEL:
		levels = 4;
		break;
	case GUEST_PAGING_5LEVEL:
		levels = 5;
		break;
	default:
		return -EINVAL;
	}
	enum guest_walk_refusal dummy;

	if (!why)
		why = &dummy;
	*why = GUEST_WALK_OUTSIDE_RAM;
	if (!guest_walk_canonical(pg, gva)) {
		*why = GUEST_WALK_NOT_CANONICAL;
		return -EFAULT;
	}
	if (mark && !vmi_mem_can_set_bits(mem))
		return -EOPNOTSUPP;

	if (levels == 0) {
		t.gpa = gva;
		t.page_size = PAGE_SIZE;
		t.dirty = true;
	}
	/* CR3's low bits are PCID or flags and its top bits LAM controls: only the frame counts. */
	table = pg->cr3 & PTE_ADDR;
	/* Counts down, once per level: however the tables point, the walk ends. */
	for (unsigned int level = levels; level >= 1; level--) {
		unsigned int shift = 12 + 9 * (level - 1);
		uint64_t entry_gpa = table + ((gva >> shift) & 511) * 8, entry;

		/* Read once: the checks below see the value the walk then follows. */
		if (vmi_mem_load64(mem, entry_gpa, &entry))
			return -EFAULT;
		if (!(entry & PTE_P)) {
			*why = GUEST_WALK_NOT_PRESENT;
			return -EFAULT;
		}
		if (entry & reserved_bits(pg, level, entry)) {
			*why = GUEST_WALK_RESERVED;
			return -EFAULT;
		}
		entries[used++] = entry_gpa;
		t.user = t.user && (entry & PTE_US);
		t.writable = t.writable && (entry & PTE_RW);
		t.nx = t.nx || (pg->nxe && (entry & PTE_XD));
		if (level == 1 || ((level == 2 || level == 3) && (entry & PTE_PS))) {
			t.page_size = 1ULL << shift;
			/* For large pages bit 12 is PAT, not address: the page mask drops it. */
			t.gpa = (entry & PTE_ADDR & ~(t.page_size - 1)) | (gva & (t.page_size - 1));
			t.dirty = (entry & PTE_D) || (mark & PTE_D);
			t.global = (entry & PTE_G) != 0;
			break;
		}
		table = entry & PTE_ADDR;
	}
	/* Only RAM is ever read: a mapping of the MMIO hole or past RAM is not followed. */
	if (!vmi_mem_contains(mem, t.gpa, 1))
		return -ENXIO;
	/* As the CPU does: a locked OR, since the guest may update the same entries meanwhile. */
	for (unsigned int i = 0; mark && i < used; i++)
		if (vmi_mem_set_bits64(mem, entries[i], i + 1 == used ? mark : (mark & PTE_A)))
			return -EFAULT;
	*out = t;
	return 0;
}

static int walk(const struct vmi_mem *mem, const struct guest_paging *pg, uint64_t gva,
		struct guest_translation *out, uint64_t mark)
{
	return walk_why(mem, pg, gva, out, mark, NULL);
}

int guest_walk_refusal(const struct vmi_mem *mem, const struct guest_paging *pg, uint64_t gva,
		       enum guest_walk_refusal *why)
{
	struct guest_translation t;
	int rc = walk_why(mem, pg, gva, &t, 0, why);

	if (rc != -EFAULT)
		*why = rc == 0 ? GUEST_WALK_MAPPED : GUEST_WALK_OUTSIDE_RAM;
	return rc == -EINVAL ? -EINVAL : 0;
}

int guest_walk_translate(const struct vmi_mem *mem, const struct guest_paging *pg, uint64_t gva,
			 struct guest_translation *out)
{
	return walk(mem, pg, gva, out, 0);
}

int guest_walk_touch(const struct vmi_mem *mem, const struct guest_paging *pg, uint64_t gva, bool write,
		     struct guest_translation *out)
{
	return walk(mem, pg, gva, out, write ? PTE_A | PTE_D : PTE_A);
}

int guest_read_virt(const struct vmi_mem *mem, const struct guest_paging *pg, uint64_t gva,
		    void *buf, uint64_t len)
{
	uint8_t *dst = buf;

	if (len == 0)
		return 0;
	if (gva + (len - 1) < gva)
		return -EFAULT; /* would wrap around the address space */
	/* One translation per page touched: bounded by len, whatever the tables say. */
	while (len) {
		struct guest_translation t;
		uint64_t chunk;
		int rc;

		rc = guest_walk_translate(mem, pg, gva, &t);
		if (rc)
			return rc;
		/* The rest of this page, not of RAM: the next virtual page may map anywhere. */
		chunk = t.page_size - (gva & (t.page_size - 1));
		if (chunk > len)
			chunk = len;
		if (vmi_mem_read(mem, t.gpa, dst, chunk))
			return -EFAULT;
		gva += chunk;
		dst += chunk;
		len -= chunk;
	}
	return 0;
}
