// SPDX-License-Identifier: MIT
/*
 * The emulation engine (emu.h) on Unicorn 2. Unicorn runs flat (no paging of
 * its own): a guest-virtual page is mapped into it, at its virtual address,
 * onto the guest RAM page the guest's tables give, the first time the
 * emulator touches it (an "unmapped" hook), after the VMM's walker and the
 * checks the CPU would make. Counting uses one block hook: each translated
 * block is decoded once (emu_decode.c) and the hook adds the previous
 * block's instructions and branch when the next block starts, so the cost
 * is per block, not per instruction. A hand-back instruction inside a block
 * stops Unicorn through a code hook on its address, translated into the
 * block once; a block an instruction watch ends in runs part-way to an
 * "until" address. Ring 0 and ring 3 run in Unicorns of their own
 * (struct emu_space).
 */
#include "emu.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unicorn/unicorn.h>

#include "emu_flags.h"
#include "emu_gpr.h"
#include "guest_walk.h"

#define PAGE_SIZE 4096ULL
#define PAGE_MASK (~(PAGE_SIZE - 1))
/* The guest's large pages are mapped whole, up to this much (2 MiB pages; a 1 GiB page by its 2 MiB pieces). */
#define REGION_MAX (2ULL << 20)
#define X86_CR0_PE (1ULL << 0)
#define X86_CR0_WP (1ULL << 16)
#define X86_CR0_AM (1ULL << 18)
#define X86_CR0_PG (1ULL << 31)
#define X86_CR4_PGE (1ULL << 7)
#define X86_CR4_OSFXSR (1ULL << 9)
#define X86_CR4_OSXMMEXCPT (1ULL << 10)
#define X86_CR4_SMEP (1ULL << 20)
#define X86_CR4_SMAP (1ULL << 21)
#define EFER_LMA (1ULL << 10)
#define EFER_FFXSR (1ULL << 14)
#define RFLAGS_TF (1ULL << 8)
#define RFLAGS_AC (1ULL << 18)
/* Where Unicorn's own "until" stop can never trigger: not canonical with 4- or 5-level paging. */
#define EMU_NEVER 0x8000000000000000ULL
/*
 * Decoded blocks kept: a Linux kernel's system calls, interrupts and
 * scheduler run tens of thousands (4096 slots missed ~350000 times in 150 s
 * of a guest's perf stat, nearly all conflicts).
 */
#define BLOCK_CACHE_BITS 15
#define BLOCK_CACHE_SIZE (1u << BLOCK_CACHE_BITS)
/* Hand-back instructions inside blocks that stop Unicorn through a code hook (a space's), at most. */
#define SITES_MAX 2048
#define SITE_SLOTS 4096 /* power of two, > SITES_MAX */

/*
 * One Unicorn per privilege level. Each keeps the mappings and translated
 * code of its own ring: a Linux kernel's vCPU goes from ring 0 to ring 3
 * and back at every system call, and one shared Unicorn had to drop the
 * kernel's pages (and so its translated code) each time ring 3 ran.
 */
struct emu_space {
	uc_engine *uc;
	uc_hook block_hook, mem_hook, precise_hook;
	struct mapped_page {
		uint64_t va, size; /* one Unicorn region: a 4 KiB page, or a guest large page (or 2 MiB of one) */
		uint64_t gpa;      /* the guest-physical address it maps va to */
		bool user;         /* a user page: what ring 0 may do with it depends on SMAP and RFLAGS.AC */
		bool global;       /* global (G, with CR4.PGE): kept across CR3 writes (emu_flush_nonglobal) */
	} *pages;
	size_t npages, pages_cap, nuser;
	/*
	 * Hand-back instructions inside a block (CLI, SWAPGS, an I/O port
	 * access) stop Unicorn through a code hook on their address, which
	 * Unicorn translates into the block: without one, each such block ran
	 * part-way to an "until" address, translated anew every time.
	 */
	uint64_t site[SITE_SLOTS]; /* open addressing; 0: empty */
	unsigned int nsites;
	/*
	 * A code hook also has Unicorn store RIP (and the lazy flags) before
	 * the instruction: the instructions whose faults Unicorn would not
	 * tell the RIP of (emu_block_info.sync) get one, which stops nothing.
	 */
	/*
	 * The guest's CR4.OSFXSR and OSXMMEXCPT as this Unicorn has them: its
	 * FXSAVE and FXRSTOR save and load MXCSR and the XMM registers only
	 * with OSFXSR in its own CR4, which Unicorn starts with clear. A Linux
	 * guest that switches tasks with FXSAVE/FXRSTOR (without XSAVE) in
	 * the engine handed each task the XMM registers of the one before.
	 */
	uint64_t cr4;
};

struct emu {
	/* RFLAGS' bits no instruction Unicorn runs changes (IF, AC, IOPL...): the run's start, then as in_place left them. */
	uint64_t sys_rflags;
	struct emu_space space[2]; /* [0] ring 3, [1] ring 0 */
	struct emu_space *sp;      /* this run's */
	uc_engine *uc;             /* sp->uc */
	struct emu_decoder *dec;
	struct emu_flags *flags; /* right RFLAGS after a memory access stopped a block part-way */
	struct vmi_mem mem; /* guest RAM, mapped in this process: Unicorn runs on it directly */
	bool smp;

	/* The CR3 every mapping was made under. */
	bool mapped_valid;
	uint64_t mapped_cr3;
	struct emu_block_info *cache[BLOCK_CACHE_SIZE];
	bool cache_global[BLOCK_CACHE_SIZE]; /* the block's bytes are on global pages of ring 0 (emu_flush_nonglobal keeps it) */
	struct emu_block_info decoded; /* block_lookup's, before it is cached */

	/* This run. */
	struct guest_paging pg;
	unsigned int cpl, ring; /* ring: 0 for CPL 3, 1 for CPL 0 */
	bool wp, smep, smap_enforced, pge;
	const struct emu_run_args *args;
	struct emu_result *res;
	uint64_t remaining[EMU_MAX_WATCHES]; /* events left before each watch fires; 0: not in this ring */
	unsigned int nwatch_ring;            /* watches of this run's ring */
	uint64_t run_insns;
	const struct emu_block_info *prev; /* the block executing, not yet counted */
	/* Why the block hook or the memory hook stopped Unicorn. */
	enum { HOOK_NONE, HOOK_STOP, HOOK_PARTIAL, HOOK_FAULT, HOOK_WRITE_PROTECT, HOOK_MAP_CODE, HOOK_ADD_SITE } hook;
	bool guest_refused; /* HOOK_FAULT: the guest's page tables refuse the access */
	/* The last access the memory hook saw: a refused one's #PF (emu_result.pf_*). */
	uint64_t fault_addr;
	bool fault_write, fault_fetch;
	/* Where the access that stopped Unicorn was made (fault_rip()). */
	uint64_t fault_rip;
	bool fault_rip_valid;
	enum emu_stop hook_stop;
	enum emu_handback hook_handback;
	uint64_t partial_until; /* HOOK_PARTIAL: run up to this instruction next */
	uint64_t protect_page;  /* HOOK_WRITE_PROTECT: the page to make writable; HOOK_MAP_CODE: to map */
	uint64_t new_site;      /* HOOK_ADD_SITE: the hand-back instruction to hook */
	bool new_site_sync;     /* ... or one whose RIP Unicorn must store (emu_block_info.sync) */
	uint64_t stop_rip;      /* hook_stop(), helper_access_ok(): where the run stopped */
	bool stopped_at_hook;   /* a fault helper_access_ok() raised in a code hook, before its instruction */
	bool in_partial;

	struct emu_stats stats;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* --- counting ------------------------------------------------------------ */

/* Adds n events; a watch whose count reaches zero is the run's stop, once the instruction is done. */
static void account(struct emu *e, enum emu_event ev, uint64_t n)
{
	if (!n)
		return;
	e->res->counts.ev[e->ring][ev] += n;
	if (ev == EMU_EV_INSNS)
		e->run_insns += n;
	if (!e->nwatch_ring)
		return; /* the common case: nothing to stop for in this ring */
	for (unsigned int i = 0; i < e->args->nwatch; i++) {
		if (e->args->watch[i].event != ev || !e->remaining[i])
			continue;
		e->remaining[i] = e->remaining[i] > n ? e->remaining[i] - n : 0;
		if (!e->remaining[i] && e->res->stop != EMU_STOP_WATCH) {
			e->res->stop = EMU_STOP_WATCH;
			e->res->watch_hit = i;
		}
	}
}

static void settle_at(struct emu *e, const struct emu_block_info *b, uint64_t rip);

/*
 * The block b ran and the next block starts at next, next_size bytes long
 * (0: not known, when Unicorn stopped at rip = next).
 */
static void settle_full(struct emu *e, const struct emu_block_info *b, uint64_t next, uint32_t next_size)
{
	/* The emulator runs a REP string instruction as a block that jumps to itself per iteration. */
	if (b->rep_string && next == b->addr)
		return;
	/*
	 * A block starting inside b is a branch back into b only if b ends in
	 * a branch and the new block ends where b does. Otherwise Unicorn cut
	 * b short and goes on from inside it: its instruction count translates
	 * blocks anew, and a store into the block being run makes it run the
	 * rest again from the store, one instruction at first.
	 */
	if (next >= b->addr && next < b->addr + b->size &&
	    (b->branch == EMU_BR_NONE || e->in_partial || next + next_size != b->addr + b->size)) {
		settle_at(e, b, next);
		return;
	}
	account(e, EMU_EV_INSNS, b->ninsns);
	if (b->branch != EMU_BR_NONE) {
		account(e, EMU_EV_BRANCHES, 1);
		if (b->branch == EMU_BR_UNCOND || next != b->addr + b->size)
			account(e, EMU_EV_TAKEN, 1);
	}
}

/* Unicorn stopped with rip somewhere in or after b: count what retired. */
static void settle_at(struct emu *e, const struct emu_block_info *b, uint64_t rip)
{
	if (rip >= b->addr && rip < b->addr + b->size) {
		for (unsigned int i = 0; i <= b->ninsns; i++)
			if (b->addr + b->offset[i] == rip) {
				if (!b->rep_string)
					account(e, EMU_EV_INSNS, i);
				return;
			}
		/* Not an instruction start of b: cannot happen for a block Unicorn translated. */
		return;
	}
	settle_full(e, b, rip, 0);
}

/* --- the block cache ----------------------------------------------------- */

static unsigned int cache_slot(uint64_t addr)
{
	return (unsigned int)((addr * 0x9e3779b97f4a7c15ULL) >> (64 - BLOCK_CACHE_BITS)); /* Fibonacci hashing */
}

static void cache_clear(struct emu *e)
{
	if (e->flags)
		emu_flags_forget(e->flags);
	for (unsigned int i = 0; i < BLOCK_CACHE_SIZE; i++) {
		free(e->cache[i]);
		e->cache[i] = NULL;
	}
}

/* Whether the guest maps va with a global entry (its translation outlives CR3 writes, CR4.PGE aside). */
static bool on_global_page(struct emu *e, uint64_t va)
{
	struct guest_translation t;

	return !guest_walk_translate(&e->mem, &e->pg, va, &t) && t.global;
}

/* The decoded block at addr of size bytes, decoding it if it is new (NULL if its bytes cannot be read). */
static const struct emu_block_info *block_lookup(struct emu *e, uint64_t addr, uint32_t size)
{
	unsigned int slot = cache_slot(addr);
	struct emu_block_info *b = e->cache[slot];
	uint8_t code[EMU_BLOCK_MAX_INSNS * 15];

	struct emu_block_info *d = &e->decoded;
	size_t used;
	uint64_t t0;

	if (b && b->addr == addr && b->size == size)
		return b;
	if (size > sizeof(code) || uc_mem_read(e->uc, addr, code, size) != UC_ERR_OK)
		return NULL;
	t0 = now_ns();
	emu_decode_block(e->dec, addr, code, size, e->smp, d);
	e->stats.blocks_decoded++;
	e->stats.decode_ns += now_ns() - t0;
	/* Kept in what it uses: offset[] up to its end (most blocks have a few instructions, not 512). */
	used = offsetof(struct emu_block_info, offset) + (d->ninsns + 1u) * sizeof(d->offset[0]);
	free(b);
	e->cache[slot] = b = malloc(used);
	if (!b)
		return NULL;
	memcpy(b, d, used);
	e->cache_global[slot] = e->cpl == 0 && e->pge && on_global_page(e, addr) && on_global_page(e, addr + size - 1);
	return b;
}

/* --- hooks --------------------------------------------------------------- */

/*
 * Stops Unicorn before the instruction at `at` (a block's start, or a
 * hand-back site). Unicorn's own RIP is not to be trusted there: once a
 * code hook exists it no longer restores RIP when it leaves a block at its
 * start for a stop request, and a block entered by a chained jump has not
 * stored it (Unicorn 2.0.1, cpu_tb_exec), so the run goes on from `at`.
 */
static void hook_stop(struct emu *e, int kind, enum emu_stop stop, enum emu_handback hb, uint64_t at)
{
	e->hook = kind;
	e->stop_rip = at;
	e->hook_stop = stop;
	e->hook_handback = hb;
	uc_emu_stop(e->uc);
}

/* --- hand-back sites ------------------------------------------------------ */

static unsigned int site_slot(uint64_t addr)
{
	return (unsigned int)((addr ^ (addr >> 10) ^ (addr >> 21)) & (SITE_SLOTS - 1));
}

static bool site_hooked(const struct emu_space *sp, uint64_t addr)
{
	for (unsigned int i = site_slot(addr), n = 0; n < SITE_SLOTS && sp->site[i]; i = (i + 1) & (SITE_SLOTS - 1), n++)
		if (sp->site[i] == addr)
			return true;
	return false;
}

static bool helper_access_ok(struct emu *e, uc_engine *uc, const struct emu_block_info *b, uint64_t addr);

/*
 * Runs before an instruction with a code hook: stops Unicorn there if it is
 * the block's hand-back, or an access through a helper the guest refuses.
 */
static void on_site(uc_engine *uc, uint64_t addr, uint32_t size, void *opaque)
{
	struct emu *e = opaque;
	const struct emu_block_info *b = e->prev;

	(void)size;
	/* A hook left from code that is no longer there (another process, a module) stops nothing. */
	if (e->hook != HOOK_NONE || !b)
		return;
	if (b->sync_helper && !helper_access_ok(e, uc, b, addr))
		return;
	if (b->handback == EMU_HB_NONE || b->addr + b->offset[b->ninsns] != addr)
		return;
	hook_stop(e, HOOK_STOP, EMU_STOP_HANDBACK, b->handback, addr);
}

/* Hooks the hand-back at addr (outside the run: the blocks holding it are translated anew). */
static int site_add(struct emu *e, uint64_t addr)
{
	struct emu_space *sp = e->sp;
	unsigned int i = site_slot(addr);
	uc_hook h;

	if (uc_hook_add(sp->uc, &h, UC_HOOK_CODE, (void *)on_site, e, addr, addr) != UC_ERR_OK)
		return -EIO;
	while (sp->site[i])
		i = (i + 1) & (SITE_SLOTS - 1);
	sp->site[i] = addr;
	sp->nsites++;
	e->stats.sites++;
	uc_ctl_remove_cache(sp->uc, addr, addr + 1);
	return 0;
}

/*
 * Whether every instruction of b whose fault Unicorn would not give the
 * RIP of has its code hook. If not, stops the run at b's start (nothing of
 * it ran): to add the first missing hook, the block then translated anew;
 * or, with no hook left to give (or more such instructions than a block
 * records), to hand b's first instruction to KVM, the next run starting
 * after it, until the instruction is KVM's.
 */
static bool sync_sites_hooked(struct emu *e, const struct emu_block_info *b, uint64_t addr)
{
	for (unsigned int i = 0; i < b->nsync; i++) {
		uint64_t site = b->addr + b->offset[b->sync[i]];

		if (site_hooked(e->sp, site))
			continue;
		if (e->sp->nsites < SITES_MAX) {
			e->new_site = site;
			e->new_site_sync = true;
			hook_stop(e, HOOK_ADD_SITE, EMU_STOP_BUDGET, EMU_HB_NONE, addr);
		} else {
			e->stats.unsynced_handbacks++;
			hook_stop(e, HOOK_STOP, EMU_STOP_HANDBACK, EMU_HB_UNMODELED, addr);
		}
		return false;
	}
	if (b->sync_overflow) {
		e->stats.unsynced_handbacks++;
		hook_stop(e, HOOK_STOP, EMU_STOP_HANDBACK, EMU_HB_UNMODELED, addr);
		return false;
	}
	return true;
}

/* Runs as each translated block starts, before any of its instructions. */
static void on_block(uc_engine *uc, uint64_t addr, uint32_t size, void *opaque)
{
	struct emu *e = opaque;
	const struct emu_block_info *b;
	uint64_t fits = UINT64_MAX;

	(void)uc;
	if (e->hook != HOOK_NONE)
		return; /* already stopping */
	if (e->prev)
		settle_full(e, e->prev, addr, size);
	e->prev = NULL;
	if (e->res->stop == EMU_STOP_WATCH) {
		hook_stop(e, HOOK_STOP, EMU_STOP_WATCH, EMU_HB_NONE, addr);
		return;
	}
	b = block_lookup(e, addr, size);
	if (!b) {
		hook_stop(e, HOOK_STOP, EMU_STOP_HANDBACK, EMU_HB_FAULT, addr);
		return;
	}
	if (!e->in_partial && (b->nsync || b->sync_overflow) && !sync_sites_hooked(e, b, addr))
		return;
	if (e->in_partial) {
		/* Unicorn's instruction count ends this run inside b: settle_at counts it. */
		e->prev = b;
		return;
	}
	if (b->ninsns == 0) {
		hook_stop(e, HOOK_STOP, EMU_STOP_HANDBACK, b->handback, addr);
		return;
	}
	if (e->run_insns >= e->args->max_insns || (e->args->stop_flag && *e->args->stop_flag)) {
		hook_stop(e, HOOK_STOP, EMU_STOP_BUDGET, EMU_HB_NONE, addr);
		return;
	}
	/* An instruction watch that ends inside b, or a hand-back after its last decoded instruction. */
	for (unsigned int i = 0; i < e->args->nwatch; i++)
		if (e->args->watch[i].event == EMU_EV_INSNS && e->remaining[i] && e->remaining[i] < fits)
			fits = e->remaining[i];
	if (!b->rep_string && fits > b->ninsns && b->handback != EMU_HB_NONE) {
		uint64_t site = b->addr + b->offset[b->ninsns];

		if (site_hooked(e->sp, site)) {
			e->prev = b; /* on_site stops it there */
			return;
		}
		if (e->sp->nsites < SITES_MAX) {
			e->new_site = site;
			hook_stop(e, HOOK_ADD_SITE, EMU_STOP_BUDGET, EMU_HB_NONE, addr);
			return;
		}
	}
	if (!b->rep_string && (fits < b->ninsns || b->handback != EMU_HB_NONE)) {
		e->partial_until = b->addr + b->offset[fits < b->ninsns ? fits : b->ninsns];
		e->stats.partial_runs++;
		hook_stop(e, HOOK_PARTIAL, EMU_STOP_BUDGET, EMU_HB_NONE, addr);
		return;
	}
	e->prev = b;
}

/* Guest permission checks for one access by the run's CPL, as the CPU makes them. */
static bool access_allowed(const struct emu *e, const struct guest_translation *t, uc_mem_type type)
{
	bool write = type == UC_MEM_WRITE_UNMAPPED || type == UC_MEM_WRITE_PROT;
	bool fetch = type == UC_MEM_FETCH_UNMAPPED || type == UC_MEM_FETCH_PROT;

	if (e->cpl == 3 && !t->user)
		return false;
	if (write && !t->writable && (e->cpl == 3 || e->wp))
		return false;
	if (fetch && t->nx)
		return false;
	if (e->cpl == 0 && t->user && ((fetch && e->smep) || (!fetch && e->smap_enforced)))
		return false;
	return true;
}

static uint32_t uc_perms(const struct emu *e, const struct guest_translation *t, bool write)
{
	uint32_t p = UC_PROT_READ;

	/* SMEP: ring 0 may read a user page (SMAP aside) but never run it. */
	if (!t->nx && !(e->cpl == 0 && e->smep && t->user))
		p |= UC_PROT_EXEC;
	/*
	 * Writable once the guest's entry is dirty, as a CPU's TLB entry: a
	 * clean page is mapped read-only, and its first write sets the dirty
	 * bit (the write-protect stop). Only a clean page: that stop ends
	 * Unicorn's run only after the instruction, and an instruction it runs
	 * through a helper (CMPXCHG16B, FXSAVE, x87) goes on without its
	 * store. A Linux kernel's per-CPU CMPXCHG16B (SLUB's freelist), its
	 * page first mapped by a read, lost its store so and SLUB handed out
	 * the same object twice (freelist corruption at the next exec).
	 */
	if ((write || t->dirty) && (t->writable || (e->cpl == 0 && !e->wp)))
		p |= UC_PROT_WRITE;
	return p;
}

static bool remember_page(struct emu_space *sp, uint64_t va, uint64_t size, uint64_t gpa, bool user, bool global)
{
	if (sp->npages == sp->pages_cap) {
		size_t cap = sp->pages_cap ? sp->pages_cap * 2 : 256;
		struct mapped_page *n = realloc(sp->pages, cap * sizeof(*n));

		if (!n)
			return false;
		sp->pages = n;
		sp->pages_cap = cap;
	}
	sp->pages[sp->npages++] = (struct mapped_page){ va, size, gpa, user, global };
	sp->nuser += user;
	return true;
}

static void forget_last_page(struct emu_space *sp)
{
	sp->nuser -= sp->pages[--sp->npages].user;
}

static void unmap_page(struct emu_space *sp, const struct mapped_page *m)
{
	/* Unicorn keeps translated code across mappings and does not see writes made outside it. */
	uc_ctl_remove_cache(sp->uc, m->va, m->va + m->size);
	uc_mem_unmap(sp->uc, m->va, m->size);
}

/* Unmaps m and forgets it. */
static void drop_mapping(struct emu_space *sp, struct mapped_page *m)
{
	unmap_page(sp, m);
	sp->nuser -= m->user;
	*m = sp->pages[--sp->npages];
}

/* The mapping that holds va, or NULL. */
static struct mapped_page *mapping_of(struct emu_space *sp, uint64_t va)
{
	for (size_t i = 0; i < sp->npages; i++)
		if (va - sp->pages[i].va < sp->pages[i].size)
			return &sp->pages[i];
	return NULL;
}

/*
 * Drops the user pages of ring 0's space (a run with SMAP enforced): mapped
 * while RFLAGS.AC allowed it, they may not be used now; the kernel's pages
 * and the decoded blocks stay.
 */
static void drop_user_pages(struct emu_space *sp)
{
	size_t kept = 0;

	for (size_t i = 0; i < sp->npages; i++) {
		if (!sp->pages[i].user)
			sp->pages[kept++] = sp->pages[i];
		else
			unmap_page(sp, &sp->pages[i]);
	}
	sp->npages = kept;
	sp->nuser = 0;
}

/*
 * Maps guest-virtual page va onto its guest RAM page, with the permissions
 * this access needs. A page of a guest large page maps the whole large page
 * (up to REGION_MAX) as one region: the guest gives it one set of
 * permissions and one accessed and dirty bit, and Unicorn 2.0.1's mapping
 * costs grow with its number of regions (a map or unmap rebuilds its view
 * of them all: ~1 ms each with 1000 regions here, ~17 ms with 4000), which
 * a kernel run in the engine, touching thousands of 4 KiB pages of its
 * text and direct map, would otherwise reach.
 */
static int map_page_now(struct emu *e, uint64_t va, bool write)
{
	struct guest_translation t;
	uint64_t base = va, size = PAGE_SIZE;
	void *host;
	uint32_t perms;

	if (guest_walk_touch(&e->mem, &e->pg, va, write, &t))
		return -EFAULT;
	perms = uc_perms(e, &t, write);
	if (t.page_size > PAGE_SIZE) {
		uint64_t chunk = t.page_size < REGION_MAX ? t.page_size : REGION_MAX, b = va & ~(chunk - 1);

		host = vmi_mem_ptr(&e->mem, t.gpa - (va - b), chunk);
		if (host && remember_page(e->sp, b, chunk, t.gpa - (va - b), t.user, t.global && e->pge)) {
			if (uc_mem_map_ptr(e->uc, b, chunk, perms, host) == UC_ERR_OK) {
				e->stats.pages_mapped++;
				return 0;
			}
			forget_last_page(e->sp); /* overlaps a 4 KiB mapping made before: map the page alone */
		}
	}
	host = vmi_mem_ptr(&e->mem, t.gpa & PAGE_MASK, PAGE_SIZE);
	if (!host || !remember_page(e->sp, base, size, t.gpa & PAGE_MASK, t.user, t.global && e->pge))
		return -EFAULT;
	if (uc_mem_map_ptr(e->uc, base, size, perms, host) != UC_ERR_OK) {
		forget_last_page(e->sp);
		return -EFAULT;
	}
	e->stats.pages_mapped++;
	return 0;
}

/* Maps the page holding va (Unicorn's region bookkeeping grows with the regions it has: timed). */
static int map_page(struct emu *e, uint64_t va, bool write)
{
	uint64_t t0 = now_ns();
	int rc = map_page_now(e, va, write);

	e->stats.map_ns += now_ns() - t0;
	return rc;
}

/*
 * The RIP of the instruction whose access stops Unicorn, as Unicorn has it
 * in the memory hook: stored before the access (gen_op_ld_v and
 * gen_op_st_v for general-purpose instructions, the code hook of the
 * others: emu_decode's sync list). Unicorn's RIP once it stops may be
 * another's: an instruction it runs through a helper (FXSAVE, CMPXCHG16B,
 * x87) goes on after its failed access, and the block with it up to the
 * next code hook, whose instruction's RIP Unicorn then stores. A Linux
 * guest's STAC; FXSAVE64 (%rbp); CLAC, writing a signal frame to a
 * copy-on-write stack page, got its #PF at the CLAC: no exception-table
 * entry there, an Oops.
 */
static void fault_rip(struct emu *e, uc_engine *uc, uc_mem_type type)
{
	/* Not a fetch: a new block's RIP is not stored before its first instruction is. */
	if (type == UC_MEM_FETCH_UNMAPPED || type == UC_MEM_FETCH_PROT)
		return;
	e->fault_rip_valid = uc_reg_read(uc, UC_X86_REG_RIP, &e->fault_rip) == UC_ERR_OK;
}

/* Maps the page holding addr if the guest allows this access; false stops Unicorn with a fault. */
static bool on_memory(uc_engine *uc, uc_mem_type type, uint64_t addr, int size, int64_t value, void *opaque)
{
	struct emu *e = opaque;
	uint64_t va = addr & PAGE_MASK;
	bool write = type == UC_MEM_WRITE_UNMAPPED || type == UC_MEM_WRITE_PROT;
	struct guest_translation t;
	int rc;

	(void)uc;
	(void)size;
	(void)value;
	if (e->hook != HOOK_NONE)
		return false;
	/* Unicorn calls this for the page it fills: for an access across two pages, the one refusing it. */
	e->fault_addr = addr;
	e->fault_write = write;
	e->fault_fetch = type == UC_MEM_FETCH_UNMAPPED || type == UC_MEM_FETCH_PROT;
	rc = guest_walk_translate(&e->mem, &e->pg, va, &t);
	if (rc || !access_allowed(e, &t, type)) {
		e->hook = HOOK_FAULT;
		e->guest_refused = rc != -ENXIO; /* MMIO (the LAPIC's EOI, say): KVM does it, no #PF */
		fault_rip(e, uc, type);
		return false;
	}
	if (type == UC_MEM_WRITE_PROT) {
		struct mapped_page *m = mapping_of(e->sp, va);
		struct guest_translation w;

		/*
		 * The first write to a clean page the guest lets us write: its
		 * dirty bit, and writable from here on (all of its mapping), the
		 * store going on. Here, not after stopping Unicorn: a stop takes
		 * effect only after the instruction, and one Unicorn runs through
		 * a helper (CMPXCHG16B, FXSAVE, x87) would go on without its store
		 * (test_fault_before_site). A page the entry no longer names (a
		 * copy-on-write the engine saw no TLB flush for) is remapped
		 * outside the hook.
		 */
		if (m && !guest_walk_touch(&e->mem, &e->pg, va, true, &w) && w.gpa == m->gpa + (va - m->va) &&
		    uc_mem_protect(uc, m->va, m->size, uc_perms(e, &w, true)) == UC_ERR_OK)
			return true;
		e->hook = HOOK_WRITE_PROTECT;
		e->protect_page = va;
		fault_rip(e, uc, type);
		return false;
	}
	if (type != UC_MEM_READ_UNMAPPED && type != UC_MEM_WRITE_UNMAPPED && type != UC_MEM_FETCH_UNMAPPED) {
		e->hook = HOOK_FAULT; /* a fetch from a no-execute mapping, or a read Unicorn refused */
		e->guest_refused = true;
		fault_rip(e, uc, type);
		return false;
	}
	if (type == UC_MEM_FETCH_UNMAPPED) {
		/*
		 * Code pages are mapped between runs, not while Unicorn translates
		 * the block that needs them: a block translated across a mapping
		 * made in this hook cannot be found again to be invalidated
		 * (Unicorn 2.0.1), and invalidating blocks is how partial runs and
		 * code the guest changed in KVM work.
		 */
		e->hook = HOOK_MAP_CODE;
		e->protect_page = va;
		return false;
	}
	if (map_page(e, va, write)) {
		e->hook = HOOK_FAULT;
		fault_rip(e, uc, type);
		return false;
	}
	return true;
}

/* The general registers in encoding order (emu_mem_operand's base and index). */
static const int gpr_by_number[16] = {
	UC_X86_REG_RAX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RBX, UC_X86_REG_RSP, UC_X86_REG_RBP,
	UC_X86_REG_RSI, UC_X86_REG_RDI, UC_X86_REG_R8,  UC_X86_REG_R9,  UC_X86_REG_R10, UC_X86_REG_R11,
	UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15,
};

/* Unicorn's register number (0-15, -1: none) into r. */
static void uc_gpr_to(uc_engine *uc, int number, struct kvm_regs *r)
{
	if (number >= 0)
		(void)uc_reg_read(uc, gpr_by_number[number], emu_gpr(r, (unsigned int)number));
}

/*
 * Called from the code hook before an instruction of b at addr: if it is
 * one Unicorn runs through a helper (emu_decode_helper_access), checks its
 * whole memory operand as the CPU does before it accesses any of it. A
 * refused page (or MMIO, or a writable mapping that names a page the
 * guest's entry no longer does) stops Unicorn here, before the helper
 * runs, as if the access had been refused at its first byte there: the
 * fault is then the instruction's, with nothing of it or after it done.
 * Pages allowed are left to the memory hook, which maps them as the
 * helper reaches them. False if it stopped Unicorn.
 */
static bool helper_access_ok(struct emu *e, uc_engine *uc, const struct emu_block_info *b, uint64_t addr)
{
	struct emu_mem_operand op;
	uint8_t code[16];
	uint64_t va, end, page;
	unsigned int i;

	for (i = 0; i < b->nsync; i++)
		if ((b->sync_helper & (1u << i)) && b->addr + b->offset[b->sync[i]] == addr)
			break;
	if (i == b->nsync)
		return true;
	{
		unsigned int n = b->offset[b->sync[i] + 1] - b->offset[b->sync[i]];

		if (n > sizeof(code) || uc_mem_read(uc, addr, code, n) != UC_ERR_OK ||
		    emu_decode_helper_access(e->dec, addr, code, n, &op))
			return true; /* decoded as such when the block was: cannot happen */
	}
	{
		struct kvm_regs r = { 0 };
		uint64_t seg_base = 0;

		uc_gpr_to(uc, op.base, &r);
		uc_gpr_to(uc, op.index, &r);
		if (op.seg)
			(void)uc_reg_read(uc, op.seg == 4 ? UC_X86_REG_FS_BASE : UC_X86_REG_GS_BASE, &seg_base);
		/* An address-size prefix wraps the address before the segment base is added. */
		va = emu_operand_address(&r, op.base, op.index, op.scale, op.disp, op.rip_relative ? addr + op.len : 0, 0, 0, 0);
		if (op.addr32)
			va &= 0xffffffffULL;
		va += seg_base;
	}
	end = va + op.size - 1;
	for (page = va & PAGE_MASK;; page += PAGE_SIZE) {
		uc_mem_type type = op.write ? UC_MEM_WRITE_UNMAPPED : UC_MEM_READ_UNMAPPED;
		uint64_t at = page > va ? page : va;
		struct guest_translation t;
		struct mapped_page *m;
		int rc = guest_walk_translate(&e->mem, &e->pg, page, &t);

		if (rc || !access_allowed(e, &t, type)) {
			e->hook = HOOK_FAULT;
			e->guest_refused = rc != -ENXIO;
		} else if (op.write && (m = mapping_of(e->sp, page)) && t.gpa != m->gpa + (page - m->va)) {
			e->hook = HOOK_WRITE_PROTECT;
			e->protect_page = page;
		}
		if (e->hook != HOOK_NONE) {
			e->fault_addr = at;
			e->fault_write = op.write;
			e->fault_fetch = false;
			e->fault_rip = addr;
			e->fault_rip_valid = true;
			e->stop_rip = addr;
			e->stopped_at_hook = true;
			e->stats.helper_faults_first++;
			uc_emu_stop(uc);
			return false;
		}
		if ((end & PAGE_MASK) == page)
			return true;
	}
}

/* --- state --------------------------------------------------------------- */

static const int gpr_ids[] = {
	UC_X86_REG_RAX, UC_X86_REG_RBX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RSI, UC_X86_REG_RDI,
	UC_X86_REG_RSP, UC_X86_REG_RBP, UC_X86_REG_R8,  UC_X86_REG_R9,  UC_X86_REG_R10, UC_X86_REG_R11,
	UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15, UC_X86_REG_RIP, UC_X86_REG_RFLAGS,
};
#define NGPR (sizeof(gpr_ids) / sizeof(gpr_ids[0]))

static void gpr_ptrs(struct kvm_regs *r, void *p[NGPR])
{
	__u64 *v[NGPR] = { &r->rax, &r->rbx, &r->rcx, &r->rdx, &r->rsi, &r->rdi, &r->rsp, &r->rbp,
			      &r->r8,  &r->r9,  &r->r10, &r->r11, &r->r12, &r->r13, &r->r14, &r->r15,
			      &r->rip, &r->rflags };

	for (size_t i = 0; i < NGPR; i++)
		p[i] = v[i];
}

static int state_load(struct emu *e, struct kvm_regs *regs, const struct kvm_sregs *s, const struct kvm_fpu *f)
{
	void *p[NGPR];
	uint64_t fs = s->fs.base, gs = s->gs.base, fcw = f->fcw, fsw = f->fsw, ftw = 0, mxcsr = f->mxcsr;

	gpr_ptrs(regs, p);
	if (uc_reg_write_batch(e->uc, (int *)gpr_ids, p, NGPR) != UC_ERR_OK ||
	    uc_reg_write(e->uc, UC_X86_REG_FS_BASE, &fs) != UC_ERR_OK ||
	    uc_reg_write(e->uc, UC_X86_REG_GS_BASE, &gs) != UC_ERR_OK)
		return -EIO;
	/* The abridged tag (FXSAVE: 1 = valid) becomes the full one (11 = empty, 00 = valid). */
	for (unsigned int i = 0; i < 8; i++)
		if (!(f->ftwx & (1u << i)))
			ftw |= 3ULL << (2 * i);
	if (uc_reg_write(e->uc, UC_X86_REG_FPCW, &fcw) != UC_ERR_OK ||
	    uc_reg_write(e->uc, UC_X86_REG_FPSW, &fsw) != UC_ERR_OK ||
	    uc_reg_write(e->uc, UC_X86_REG_FPTAG, &ftw) != UC_ERR_OK ||
	    uc_reg_write(e->uc, UC_X86_REG_MXCSR, &mxcsr) != UC_ERR_OK)
		return -EIO;
	/*
	 * KVM's image (FXSAVE's layout) holds the registers in stack order,
	 * ST(i), and tags them by physical register; so does Unicorn's ST0-7,
	 * relative to the top FPSW just set (its FP0-7 are the physical ones).
	 * With the registers permuted by the top, x87 code in a run found its
	 * operands in the wrong registers whenever the stack was not empty.
	 */
	for (unsigned int i = 0; i < 8; i++) {
		uint8_t st[10];

		memcpy(st, f->fpr[i], sizeof(st));
		if (uc_reg_write(e->uc, UC_X86_REG_ST0 + (int)i, st) != UC_ERR_OK)
			return -EIO;
	}
	for (unsigned int i = 0; i < 16; i++)
		if (uc_reg_write(e->uc, UC_X86_REG_XMM0 + (int)i, f->xmm[i]) != UC_ERR_OK)
			return -EIO;
	return 0;
}

static int state_save(struct emu *e, struct kvm_regs *regs, struct kvm_fpu *f)
{
	void *p[NGPR];
	uint64_t fcw = 0, fsw = 0, ftw = 0, mxcsr = 0;

	gpr_ptrs(regs, p);
	if (uc_reg_read_batch(e->uc, (int *)gpr_ids, p, NGPR) != UC_ERR_OK)
		return -EIO;
	if (uc_reg_read(e->uc, UC_X86_REG_FPCW, &fcw) != UC_ERR_OK ||
	    uc_reg_read(e->uc, UC_X86_REG_FPSW, &fsw) != UC_ERR_OK ||
	    uc_reg_read(e->uc, UC_X86_REG_FPTAG, &ftw) != UC_ERR_OK ||
	    uc_reg_read(e->uc, UC_X86_REG_MXCSR, &mxcsr) != UC_ERR_OK)
		return -EIO;
	f->fcw = (uint16_t)fcw;
	f->fsw = (uint16_t)fsw;
	f->mxcsr = (uint32_t)mxcsr;
	f->ftwx = 0;
	for (unsigned int i = 0; i < 8; i++)
		if (((ftw >> (2 * i)) & 3) != 3)
			f->ftwx |= (uint8_t)(1u << i);
	for (unsigned int i = 0; i < 8; i++) { /* ST(i), as state_load() */
		uint8_t st[10];

		if (uc_reg_read(e->uc, UC_X86_REG_ST0 + (int)i, st) != UC_ERR_OK)
			return -EIO;
		memset(f->fpr[i], 0, sizeof(f->fpr[i]));
		memcpy(f->fpr[i], st, sizeof(st));
	}
	for (unsigned int i = 0; i < 16; i++)
		if (uc_reg_read(e->uc, UC_X86_REG_XMM0 + (int)i, f->xmm[i]) != UC_ERR_OK)
			return -EIO;
	return 0;
}

/* --- lifecycle ----------------------------------------------------------- */

static int space_open(struct emu *e, struct emu_space *sp, char *err, size_t err_size)
{
	uc_err ue = uc_open(UC_ARCH_X86, UC_MODE_64, &sp->uc);

	if (ue != UC_ERR_OK) {
		snprintf(err, err_size, "Unicorn: %s", uc_strerror(ue));
		sp->uc = NULL;
		return -EINVAL;
	}
	/* A model with what compilers emit for x86-64-v2/v3 short of AVX, which TCG lacks (AVX is handed back). */
	uc_ctl_set_cpu_model(sp->uc, EMU_UNICORN_CPU_MODEL);
	if (uc_hook_add(sp->uc, &sp->block_hook, UC_HOOK_BLOCK, (void *)on_block, e, 1, 0) != UC_ERR_OK ||
	    uc_hook_add(sp->uc, &sp->mem_hook, UC_HOOK_MEM_UNMAPPED | UC_HOOK_MEM_PROT, (void *)on_memory, e, 1,
			0) != UC_ERR_OK ||
	    emu_precise_faults(sp->uc, &sp->precise_hook)) {
		snprintf(err, err_size, "Unicorn: cannot add its hooks");
		return -EINVAL;
	}
	return 0;
}

int emu_create(struct emu **out, const struct guest_mem *mem, bool smp, char *err, size_t err_size)
{
	struct emu *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->mem = guest_mem_vmi(mem);
	e->smp = smp;
	for (unsigned int i = 0; i < 2; i++)
		if (space_open(e, &e->space[i], err, err_size)) {
			emu_destroy(e);
			return -EINVAL;
		}
	e->sp = &e->space[1];
	e->uc = e->sp->uc;
	if (emu_flags_open(&e->flags, e->uc, err, err_size)) {
		emu_destroy(e);
		return -EINVAL;
	}
	if (emu_decoder_open(&e->dec)) {
		snprintf(err, err_size, "Capstone: cannot open an x86-64 decoder");
		emu_destroy(e);
		return -EINVAL;
	}
	*out = e;
	return 0;
}

void emu_invalidate(struct emu *e)
{
	uint64_t t0 = now_ns();

	for (unsigned int s = 0; s < 2; s++) {
		struct emu_space *sp = &e->space[s];

		for (size_t i = 0; i < sp->npages; i++)
			unmap_page(sp, &sp->pages[i]);
		sp->npages = 0;
		sp->nuser = 0;
	}
	cache_clear(e);
	e->mapped_valid = false;
	e->stats.invalidations++;
	e->stats.unmap_ns += now_ns() - t0;
}

void emu_flush_nonglobal(struct emu *e)
{
	uint64_t t0 = now_ns();

	for (unsigned int s = 0; s < 2; s++) {
		struct emu_space *sp = &e->space[s];
		size_t kept = 0;

		for (size_t i = 0; i < sp->npages; i++) {
			if (sp->pages[i].global) {
				sp->pages[kept++] = sp->pages[i];
				continue;
			}
			unmap_page(sp, &sp->pages[i]);
			sp->nuser -= sp->pages[i].user;
		}
		sp->npages = kept;
	}
	if (e->flags)
		emu_flags_forget(e->flags);
	for (unsigned int i = 0; i < BLOCK_CACHE_SIZE; i++)
		if (e->cache[i] && !e->cache_global[i]) {
			free(e->cache[i]);
			e->cache[i] = NULL;
		}
	e->mapped_valid = false; /* what is left holds under any CR3 */
	e->stats.nonglobal_flushes++;
	e->stats.unmap_ns += now_ns() - t0;
}

void emu_destroy(struct emu *e)
{
	if (!e)
		return;
	cache_clear(e);
	emu_decoder_close(e->dec);
	emu_flags_close(e->flags);
	for (unsigned int s = 0; s < 2; s++) {
		free(e->space[s].pages);
		if (e->space[s].uc)
			uc_close(e->space[s].uc);
	}
	free(e);
}

void emu_get_stats(const struct emu *e, struct emu_stats *s)
{
	*s = e->stats;
}

/* --- running ------------------------------------------------------------- */

static void repair_flags(struct emu *e, const struct emu_block_info *block, uint64_t rip, uint64_t sys_rflags)
{
	int r = emu_flags_fix(e->flags, e->uc, block, rip, sys_rflags, e->hook == HOOK_STOP || e->stopped_at_hook);

	if (r > 0)
		e->stats.flags_repaired++;
	else if (r < 0 && !e->stats.flags_unknown++)
		fprintf(stderr, "kvmprof-vmm: emulation engine: the flags at %#llx (block %#llx) after a stop inside it "
			"could not be recomputed: %s; they may be wrong (counted in --vpmu-stats)\n",
			(unsigned long long)rip, (unsigned long long)block->addr, emu_flags_why(e->flags));
}

/*
 * The hand-back Unicorn stopped at (RIP *rip), done by the caller's
 * in_place without leaving the run: the general registers go out and back,
 * the instruction counts in the run's ring. False if it is not done.
 */
static bool do_in_place(struct emu *e, const struct emu_run_args *a, struct emu_state *st, uint64_t *rip)
{
	struct kvm_regs regs = st->regs;
	struct kvm_sregs sregs = st->sregs;
	void *p[NGPR];

	if (!a->in_place || (e->hook_handback != EMU_HB_HOST_VALUE && e->hook_handback != EMU_HB_LOCKED &&
			     e->hook_handback != EMU_HB_SYSTEM))
		return false;
	gpr_ptrs(&regs, p);
	if (uc_reg_read_batch(e->uc, (int *)gpr_ids, p, NGPR) != UC_ERR_OK)
		return false;
	regs.rip = *rip;
	if (!a->in_place(a->in_place_opaque, e->hook_handback, &regs, &sregs))
		return false;
	/* Done, so it stays done (a locked instruction must not run twice): Unicorn took these registers at the start. */
	(void)uc_reg_write_batch(e->uc, (int *)gpr_ids, p, NGPR);
	if ((regs.rflags ^ e->sys_rflags) & RFLAGS_AC) {
		/* CLAC or STAC: SMAP holds for the rest of the run as the new AC says (run_context's rule). */
		e->smap_enforced = (st->sregs.cr4 & X86_CR4_SMAP) && !(regs.rflags & RFLAGS_AC);
		if (e->cpl == 0 && e->smap_enforced && e->sp->nuser)
			drop_user_pages(e->sp);
	}
	e->sys_rflags = regs.rflags; /* CLI/STI change IF, CLAC/STAC AC: a flags repair later in the run keeps them */
	if (sregs.fs.base != st->sregs.fs.base || sregs.gs.base != st->sregs.gs.base) {
		uint64_t fs = sregs.fs.base, gs = sregs.gs.base;

		(void)uc_reg_write(e->uc, UC_X86_REG_FS_BASE, &fs);
		(void)uc_reg_write(e->uc, UC_X86_REG_GS_BASE, &gs);
		st->sregs.fs.base = fs;
		st->sregs.gs.base = gs;
	}
	*rip = regs.rip;
	account(e, EMU_EV_INSNS, 1);
	e->stats.in_place++;
	return true;
}

/*
 * The #PF of the access the guest refused (e->fault_*), as the CPU reports
 * it: P if the page translates (a permission refused it) or an entry has
 * reserved bits, W for a write, U at CPL 3, I for a fetch where NX or SMEP
 * makes fetches checked. A read-modify-write refused at its read reports a
 * read, which the guest's handler serves as one, and the write that follows
 * faults again if it must. Protection keys never refuse here (access_allowed
 * does not check them), so PK is never set.
 */
static void page_fault_code(struct emu *e, struct emu_result *r)
{
	enum guest_walk_refusal why;
	uint32_t code = 0;

	if (guest_walk_refusal(&e->mem, &e->pg, e->fault_addr, &why))
		return;
	if (why == GUEST_WALK_MAPPED)
		code |= EMU_PF_P;
	else if (why == GUEST_WALK_RESERVED)
		code |= EMU_PF_P | EMU_PF_RSVD;
	else if (why != GUEST_WALK_NOT_PRESENT)
		return;
	if (e->fault_write)
		code |= EMU_PF_W;
	if (e->cpl == 3)
		code |= EMU_PF_U;
	if (e->fault_fetch && (e->pg.nxe || e->smep))
		code |= EMU_PF_I;
	r->pf_valid = true;
	r->pf_addr = e->fault_addr;
	r->pf_code = code;
}

/* The run's CPL and the paging checks, or a hand-back reason if the engine cannot run this state. */
static enum emu_handback run_context(struct emu *e, const struct emu_state *st)
{
	const struct kvm_sregs *s = &st->sregs;

	if (!(s->efer & EFER_LMA) || !(s->cr0 & X86_CR0_PG) || !(s->cr0 & X86_CR0_PE) || !s->cs.l)
		return EMU_HB_MODE;
	if (st->regs.rflags & RFLAGS_TF)
		return EMU_HB_MODE;
	/* AMD's fast FXSAVE/FXRSTOR (no XMM registers in ring 0): Unicorn's follow its own EFER, not the guest's. */
	if (s->efer & EFER_FFXSR)
		return EMU_HB_MODE;
	e->cpl = s->cs.dpl;
	if (e->cpl != 0 && e->cpl != 3)
		return EMU_HB_MODE;
	/* Alignment checking: Unicorn does not do it. */
	if (e->cpl == 3 && (s->cr0 & X86_CR0_AM) && (st->regs.rflags & RFLAGS_AC))
		return EMU_HB_MODE;
	if (guest_paging_init(&e->pg, s->cr0, s->cr3, s->cr4, s->efer))
		return EMU_HB_MODE;
	e->ring = e->cpl == 3 ? 0 : 1;
	e->wp = (s->cr0 & X86_CR0_WP) != 0;
	e->pge = (s->cr4 & X86_CR4_PGE) != 0;
	e->smep = (s->cr4 & X86_CR4_SMEP) != 0;
	e->smap_enforced = (s->cr4 & X86_CR4_SMAP) && !(st->regs.rflags & RFLAGS_AC);
	return EMU_HB_NONE;
}

int emu_run(struct emu *e, struct emu_state *st, const struct emu_run_args *a, struct emu_result *r)
{
	enum emu_handback why;
	uint64_t t0 = now_ns(), rip;
	struct kvm_regs saved = st->regs;
	int rc = 0;

	memset(r, 0, sizeof(*r));
	r->stop = EMU_STOP_BUDGET;
	e->stats.runs++;
	why = run_context(e, st);
	if (why != EMU_HB_NONE) {
		r->stop = EMU_STOP_HANDBACK;
		r->handback = why;
		e->stats.handbacks[why]++;
		return 0;
	}
	/*
	 * Mappings belong to one CR3, like TLB entries (the VMM invalidates
	 * them where the guest would flush its TLB), and to one ring: each ring
	 * has its own Unicorn, whose pages are mapped with what that ring may
	 * do. In ring 0 that also depends on RFLAGS.AC under SMAP: a run with
	 * SMAP enforced drops the user pages a run with AC set mapped.
	 */
	if (e->mapped_valid && e->mapped_cr3 != st->sregs.cr3) {
		e->stats.cr3_invalidations++;
		if (e->pge)
			emu_flush_nonglobal(e);
		else
			emu_invalidate(e);
	}
	e->sp = &e->space[e->ring];
	e->uc = e->sp->uc;
	{
		uint64_t cr4 = st->sregs.cr4 & (X86_CR4_OSFXSR | X86_CR4_OSXMMEXCPT);

		if (cr4 != e->sp->cr4) {
			if (uc_reg_write(e->uc, UC_X86_REG_CR4, &cr4) != UC_ERR_OK) {
				rc = -EIO;
				goto out;
			}
			e->sp->cr4 = cr4;
		}
	}
	if (e->cpl == 0 && e->smap_enforced && e->sp->nuser)
		drop_user_pages(e->sp);
	e->mapped_valid = true;
	e->mapped_cr3 = st->sregs.cr3;

	e->args = a;
	e->res = r;
	e->run_insns = 0;
	e->nwatch_ring = 0;
	for (unsigned int i = 0; i < a->nwatch && i < EMU_MAX_WATCHES; i++) {
		e->remaining[i] = (a->watch[i].rings & (e->cpl == 3 ? EMU_RING_USER : EMU_RING_KERNEL)) ?
					  (a->watch[i].target ? a->watch[i].target : 1) : 0;
		e->nwatch_ring += e->remaining[i] != 0;
	}
	if (state_load(e, &st->regs, &st->sregs, &st->fpu)) {
		rc = -EIO;
		goto out;
	}
	rip = st->regs.rip;
	e->sys_rflags = st->regs.rflags;
	e->partial_until = 0;
	for (;;) {
		uint64_t until = e->partial_until ? e->partial_until : EMU_NEVER;
		uc_err ue;

		e->partial_until = 0;
		e->hook = HOOK_NONE;
		e->guest_refused = false;
		e->fault_rip_valid = false;
		e->stopped_at_hook = false;
		e->prev = NULL;
		e->in_partial = until != EMU_NEVER;
		/*
		 * A partial block runs to an "until" address inside it. Unicorn
		 * compiles that stop into the block when it translates it, so the
		 * block is translated anew for the partial run and again after it.
		 * (Its instruction count is no alternative: leaving count mode
		 * flushes every translated block, ~40 ms here.)
		 */
		if (e->in_partial)
			uc_ctl_remove_cache(e->uc, rip, rip + 1);
		ue = uc_emu_start(e->uc, rip, until, 0, 0);
		if (e->in_partial)
			uc_ctl_remove_cache(e->uc, rip, rip + 1);
		e->in_partial = false;
		if (uc_reg_read(e->uc, UC_X86_REG_RIP, &rip) != UC_ERR_OK) {
			rc = -EIO;
			goto out;
		}
		if (e->hook == HOOK_STOP || e->hook == HOOK_PARTIAL || e->hook == HOOK_ADD_SITE || e->stopped_at_hook)
			rip = e->stop_rip;
		if ((e->hook == HOOK_FAULT || e->hook == HOOK_WRITE_PROTECT) && e->fault_rip_valid && e->fault_rip != rip &&
		    site_hooked(e->sp, e->fault_rip)) {
			/*
			 * Unicorn went on past the access of an instruction it runs
			 * through a helper (fault_rip()): it is that one, whose code
			 * hook stored its RIP, that stops. (A general-purpose
			 * instruction's stops Unicorn at once.) What ran past it is
			 * not undone: helper_access_ok() keeps the helpers it knows
			 * from getting here, so this is one it does not.
			 */
			if (!e->stats.ran_past_fault++)
				fprintf(stderr, "kvmprof-vmm: emulation engine: Unicorn ran on past a refused access at %#llx "
					"(stopped at %#llx); what ran after it is not undone (counted in --vpmu-stats)\n",
					(unsigned long long)e->fault_rip, (unsigned long long)rip);
			rip = e->fault_rip;
		}
		/*
		 * A memory access or a hand-back site's hook that stopped the block
		 * part-way: Unicorn's flags may be wrong (emu_flags.h). At a code
		 * hook Unicorn 2.0.1 stores the lazy flags' kind only if it differs
		 * from the one at the last hook it translated (DisasContext's
		 * last_cc_op, never initialised, not updated where the kind is
		 * stored otherwise): after a PUSHFQ between an SSE load's hook and
		 * the site, say, CMP's flags read back as ADD's
		 * (test_flags_at_handback_site). Not a fetch at the next block's
		 * start (a branch into a page that faults): that block ended whole.
		 */
		if (e->prev && (e->hook == HOOK_FAULT || e->hook == HOOK_WRITE_PROTECT || e->hook == HOOK_STOP) &&
		    rip > e->prev->addr && rip < e->prev->addr + e->prev->size)
			repair_flags(e, e->prev, rip, e->sys_rflags);
		/* Whatever stopped it, the instructions of the block in progress before rip retired. */
		if (e->prev)
			settle_at(e, e->prev, rip);
		e->prev = NULL;
		if (e->hook == HOOK_WRITE_PROTECT) {
			struct guest_translation t;

			struct mapped_page *m = mapping_of(e->sp, e->protect_page);

			/* The first write to a page the guest lets us write: dirty bit, then writable (all of its mapping). */
			if (!m || guest_walk_touch(&e->mem, &e->pg, e->protect_page, true, &t)) {
				e->guest_refused = m != NULL;
				why = EMU_HB_FAULT;
				break;
			}
			/*
			 * The guest's entry now names another page than the one mapped
			 * (a copy-on-write the engine saw no TLB flush for): as a CPU
			 * walks the tables again at a write its TLB entry does not
			 * allow, the write goes to the new page, never the old one (the
			 * page cache's, say). The retry maps it afresh.
			 */
			if (t.gpa != m->gpa + (e->protect_page - m->va)) {
				e->stats.stale_mappings++;
				drop_mapping(e->sp, m);
				cache_clear(e);
				continue;
			}
			if (uc_mem_protect(e->uc, m->va, m->size, uc_perms(e, &t, true)) != UC_ERR_OK) {
				why = EMU_HB_FAULT;
				break;
			}
			continue;
		}
		if (e->hook == HOOK_ADD_SITE) {
			/* Nothing of the block ran: it runs again, translated with the hook. */
			e->stats.sync_sites += e->new_site_sync;
			e->new_site_sync = false;
			if (site_add(e, e->new_site))
				e->sp->nsites = SITES_MAX; /* Unicorn refused: partial runs from now on */
			continue;
		}
		if (e->hook == HOOK_MAP_CODE) {
			if (map_page(e, e->protect_page, false)) {
				why = EMU_HB_FAULT;
				break;
			}
			continue;
		}
		if (e->hook == HOOK_FAULT) {
			why = EMU_HB_FAULT;
			break;
		}
		if (e->hook == HOOK_STOP) {
			if (e->hook_stop == EMU_STOP_HANDBACK && do_in_place(e, a, st, &rip)) {
				/* Done in the emulator's place: the run goes on after it, unless a watch or the budget ends it. */
				if (r->stop == EMU_STOP_WATCH || e->run_insns >= a->max_insns ||
				    (a->stop_flag && *a->stop_flag)) {
					why = EMU_HB_NONE;
					break;
				}
				continue;
			}
			if (e->hook_stop == EMU_STOP_HANDBACK) {
				why = e->hook_handback;
				break;
			}
			r->stop = e->hook_stop;
			why = EMU_HB_NONE;
			break;
		}
		if (e->hook == HOOK_PARTIAL)
			continue; /* to the "until" the block hook set */
		if (ue != UC_ERR_OK) {
			/* An instruction Unicorn's CPU model lacks, or an exception it raised: KVM decides. */
			why = EMU_HB_REFUSED;
			break;
		}
		/* A partial block reached its end: a watch may have fired there. */
		if (r->stop == EMU_STOP_WATCH) {
			why = EMU_HB_NONE;
			break;
		}
		if (until == EMU_NEVER) {
			/* Unicorn returned on its own (HLT, say): KVM runs the next instruction. */
			why = EMU_HB_REFUSED;
			break;
		}
	}
	if (why != EMU_HB_NONE) {
		r->stop = EMU_STOP_HANDBACK;
		r->handback = why;
		r->page_fault = why == EMU_HB_FAULT && e->guest_refused;
		if (r->page_fault)
			page_fault_code(e, r);
		e->stats.handbacks[why]++;
	}
	if (state_save(e, &st->regs, &st->fpu)) {
		rc = -EIO;
		goto out;
	}
	st->regs.rip = rip;
out:
	if (rc) {
		st->regs = saved;
		memset(r, 0, sizeof(*r));
	}
	e->stats.insns += r->counts.ev[0][EMU_EV_INSNS] + r->counts.ev[1][EMU_EV_INSNS];
	e->stats.run_ns += now_ns() - t0;
	e->args = NULL;
	e->res = NULL;
	return rc;
}
