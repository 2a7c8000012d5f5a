/* SPDX-License-Identifier: MIT */
/*
 * Physical pages and per-process address spaces.
 *
 * Pages come from the RAM ranges of the PVH memory map, clipped to
 * [end of kernel, 1 GiB) minus reserved ranges (the initrd): a bump pointer
 * over those ranges plus a free list of returned pages.
 *
 * Every address space shares the kernel's page directories (0-1 GiB
 * identity, supervisor only; 3-4 GiB APIC, supervisor only) and owns the
 * 1-2 GiB user region: PML4 -> own PDPT -> own PD -> PTs -> 4 KiB pages.
 */
#include <guest/syscall.h>

#include "kernel.h"

#define MAX_RANGES 16
#define PTE_P 0x1UL
#define PTE_W 0x2UL
#define PTE_U 0x4UL
#define PTE_ADDR 0x000ffffffffff000UL

struct range {
	uint64_t start, end;
};

static struct range ranges[MAX_RANGES];
static int nranges;
static int cur_range;
static uint64_t bump;
static void *free_list;
static volatile int mm_lock;

void mm_add_ram(uint64_t start, uint64_t end)
{
	uint64_t lo = (uint64_t)_kernel_end;
	start = (start + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	end &= ~(PAGE_SIZE - 1);
	if (start < lo)
		start = lo;
	if (end > KERNEL_MEM_LIMIT)
		end = KERNEL_MEM_LIMIT;
	if (start >= end || nranges == MAX_RANGES)
		return;
	ranges[nranges].start = start;
	ranges[nranges].end = end;
	nranges++;
}

/* Remove [start, end) from the RAM ranges (call before allocating). */
void mm_reserve(uint64_t start, uint64_t end)
{
	start &= ~(PAGE_SIZE - 1);
	end = (end + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	for (int i = 0; i < nranges; i++) {
		struct range *r = &ranges[i];
		if (end <= r->start || start >= r->end)
			continue;
		if (start > r->start && end < r->end) {
			if (nranges == MAX_RANGES) { /* cannot split: drop the tail */
				r->end = start;
				continue;
			}
			ranges[nranges].start = end;
			ranges[nranges].end = r->end;
			nranges++;
			r->end = start;
		} else if (start > r->start) {
			r->end = start;
		} else if (end < r->end) {
			r->start = end;
		} else {
			r->start = r->end; /* fully covered */
		}
	}
}

/*
 * A zeroed page (identity mapped: its address is its physical address).
 * Pages never used before are not cleared: RAM starts zeroed (the VMM and
 * PVH loaders hand over fresh memory), and clearing costs ~0.1 ms a page
 * in the emulated ring 0. Recycled pages are cleared.
 */
void *page_alloc(void)
{
	void *p = NULL;
	int recycled = 0;
	spin_lock(&mm_lock);
	if (free_list) {
		p = free_list;
		free_list = *(void **)p;
		recycled = 1;
	} else {
		while (cur_range < nranges) {
			struct range *r = &ranges[cur_range];
			if (bump < r->start)
				bump = r->start;
			if (bump + PAGE_SIZE <= r->end) {
				p = (void *)bump;
				bump += PAGE_SIZE;
				break;
			}
			cur_range++;
		}
	}
	spin_unlock(&mm_lock);
	if (recycled)
		page_zero(p);
	return p;
}

void page_free(void *page)
{
	if (!page)
		return;
	spin_lock(&mm_lock);
	*(void **)page = free_list;
	free_list = page;
	spin_unlock(&mm_lock);
}

int as_create(struct proc *p)
{
	uint64_t *pml4 = page_alloc();
	uint64_t *pdpt = page_alloc();
	uint64_t *pd = page_alloc();
	if (!pml4 || !pdpt || !pd) {
		page_free(pml4);
		page_free(pdpt);
		page_free(pd);
		return -1;
	}
	pml4[0] = (uint64_t)pdpt | PTE_P | PTE_W | PTE_U;
	pdpt[0] = (uint64_t)boot_pd_low | PTE_P | PTE_W;
	pdpt[1] = (uint64_t)pd | PTE_P | PTE_W | PTE_U;
	pdpt[3] = (uint64_t)boot_pd_apic | PTE_P | PTE_W;
	p->cr3 = (uint64_t)pml4;
	p->pd = pd;
	p->pd_lo = 512;
	p->pd_hi = -1;
	p->nregions = 0;
	return 0;
}

/* The page backing user address va, mapped (zeroed) on first use. */
void *as_map_page(struct proc *p, uint64_t va)
{
	if (va < GUEST_USER_BASE || va >= GUEST_USER_END)
		return NULL;
	uint64_t off = va - GUEST_USER_BASE;
	int pdi = (int)((off >> 21) & 511);
	uint64_t *pde = &p->pd[pdi];
	if (!(*pde & PTE_P)) {
		void *pt = page_alloc();
		if (!pt)
			return NULL;
		*pde = (uint64_t)pt | PTE_P | PTE_W | PTE_U;
		if (pdi < p->pd_lo)
			p->pd_lo = pdi;
		if (pdi > p->pd_hi)
			p->pd_hi = pdi;
	}
	uint64_t *pt = (uint64_t *)(*pde & PTE_ADDR);
	uint64_t *pte = &pt[(off >> 12) & 511];
	if (!(*pte & PTE_P)) {
		void *page = page_alloc();
		if (!page)
			return NULL;
		*pte = (uint64_t)page | PTE_P | PTE_W | PTE_U;
	}
	return (void *)(*pte & PTE_ADDR);
}

/*
 * Free everything; the caller must not be running on p->cr3. Pages are
 * found through the regions (every mapped user page lies in one), which
 * costs far fewer emulated instructions than scanning whole page tables.
 */
void as_destroy(struct proc *p)
{
	if (!p->cr3)
		return;
	uint64_t *pml4 = (uint64_t *)p->cr3;
	uint64_t *pdpt = (uint64_t *)(pml4[0] & PTE_ADDR);
	for (int r = 0; r < p->nregions; r++) {
		for (uint64_t va = p->regions[r].start; va < p->regions[r].end; va += PAGE_SIZE) {
			uint64_t off = va - GUEST_USER_BASE;
			uint64_t pde = p->pd[(off >> 21) & 511];
			if (!(pde & PTE_P))
				continue;
			uint64_t *pte = &((uint64_t *)(pde & PTE_ADDR))[(off >> 12) & 511];
			if (*pte & PTE_P)
				page_free((void *)(*pte & PTE_ADDR));
			*pte = 0; /* regions may share a page: free it once */
		}
	}
	for (int i = p->pd_lo; i <= p->pd_hi && i < 512; i++)
		if (p->pd[i] & PTE_P)
			page_free((void *)(p->pd[i] & PTE_ADDR));
	page_free(p->pd);
	page_free(pdpt);
	page_free(pml4);
	p->cr3 = 0;
	p->pd = NULL;
	p->nregions = 0;
}

/* Is [addr, addr + len) inside one mapped user region of p? */
int user_range_ok(const struct proc *p, uint64_t addr, uint64_t len)
{
	if (addr + len < addr)
		return 0;
	for (int i = 0; i < p->nregions; i++)
		if (addr >= p->regions[i].start && addr + len <= p->regions[i].end)
			return 1;
	return 0;
}
