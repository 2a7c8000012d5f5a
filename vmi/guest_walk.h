/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_GUEST_WALK_H
#define KVMPROF_GUEST_WALK_H

/*
 * The one reader of guest-virtual memory: the guest sampler, the stack
 * walker, the exact backend's emulator, the PMI tracer and everything that
 * looks inside a running guest (current process, task structures) go
 * through here, so that the checks against a hostile guest live in one
 * place.
 *
 * The page tables belong to the guest and may be garbage, cyclic, or point
 * anywhere. A walk is therefore a fixed number of steps (one per paging
 * level: it cannot loop, whatever the tables say), every table entry is read
 * once (another vCPU may rewrite it meanwhile) from guest RAM through
 * vmi_mem (vmi_mem.h), and a translation that ends outside RAM (past its end, or in the
 * MMIO hole above it) is refused rather than followed. Entries with reserved
 * bits set are refused too, as the CPU would refuse them with a page fault.
 *
 * Nothing here prints: a failed read is an ordinary event when sampling a
 * guest (a page swapped out, a process exiting), and the caller decides
 * whether it is worth a word.
 */

#include <stdbool.h>
#include <stdint.h>

#include "vmi_mem.h"

enum guest_paging_mode {
	GUEST_PAGING_OFF,    /* CR0.PG clear: linear is physical (32-bit) */
	GUEST_PAGING_4LEVEL, /* long mode, 48-bit virtual addresses */
	GUEST_PAGING_5LEVEL, /* long mode with CR4.LA57, 57-bit virtual addresses */
};

/*
 * What a walk needs from the vCPU's control registers, captured once per
 * sample, so that the walker needs no KVM and the tests can describe any
 * paging set-up by hand.
 */
struct guest_paging {
	enum guest_paging_mode mode;
	uint64_t cr3;
	bool nxe; /* EFER.NXE: without it bit 63 of an entry is reserved, not XD */
};

/*
 * Fills pg from KVM's special registers. Legacy 32-bit and PAE paging are
 * refused with -EINVAL: the guests kvmprof profiles run in long mode, and a
 * vCPU caught outside it (early boot) has nothing worth walking.
 */
int guest_paging_init(struct guest_paging *pg, uint64_t cr0, uint64_t cr3, uint64_t cr4,
		      uint64_t efer);

/* The result of one translation. */
struct guest_translation {
	uint64_t gpa;
	/*
	 * Size of the page that maps the address (4 KiB, 2 MiB or 1 GiB), so a
	 * reader knows how far the same translation holds.
	 */
	uint64_t page_size;
	bool user;     /* U/S set at every level: CPL 3 code may read it */
	bool writable; /* R/W set at every level */
	bool dirty;    /* the leaf entry's dirty bit (after the walk: a write's touch has set it) */
	bool nx;       /* XD set at some level (only with EFER.NXE) */
	bool global;   /* the leaf entry's G bit: with CR4.PGE its TLB entries outlive a CR3 write */
};

/*
 * Translates gva. -EFAULT if it is not canonical, not mapped, or a table on
 * the way lies outside guest RAM or has reserved bits set (where the CPU
 * would raise #PF, or the tables are not RAM); -ENXIO if the tables map it
 * outside guest RAM (MMIO, which the CPU would access); -EINVAL for a
 * paging mode this reader does not know.
 */
int guest_walk_translate(const struct vmi_mem *mem, const struct guest_paging *pg, uint64_t gva,
			 struct guest_translation *out);

/* Why a translation fails, as a page fault's error code needs it. */
enum guest_walk_refusal {
	GUEST_WALK_MAPPED,        /* it translates: a refusal is the access's permission (#PF with P set) */
	GUEST_WALK_NOT_PRESENT,   /* an entry on the way is not present (#PF, P clear) */
	GUEST_WALK_RESERVED,      /* an entry has reserved bits set (#PF with P and RSVD) */
	GUEST_WALK_NOT_CANONICAL, /* no page walk at all: the CPU raises #GP or #SS */
	GUEST_WALK_OUTSIDE_RAM,   /* a table outside guest RAM, or the page maps outside it: not a #PF this reader can name */
};

/* Why gva does or does not translate (*why); -EINVAL for a paging mode this reader does not know. */
int guest_walk_refusal(const struct vmi_mem *mem, const struct guest_paging *pg, uint64_t gva,
		       enum guest_walk_refusal *why);

/*
 * guest_walk_translate for an access the guest itself makes (the emulation
 * engine's): also sets the accessed bit of every entry on the way and, for
 * a write, the dirty bit of the last one, as the CPU would. Checks no
 * permission: out says what the entries allow. -EOPNOTSUPP (and nothing
 * walked) for a memory that cannot be written (vmi_mem_can_set_bits).
 */
int guest_walk_touch(const struct vmi_mem *mem, const struct guest_paging *pg, uint64_t gva, bool write,
		     struct guest_translation *out);

/*
 * Copies len bytes from guest-virtual gva, across as many pages as it spans,
 * each page translated and bounds-checked on its own (contiguous virtual
 * pages need not be contiguous in guest RAM). 0 or -EFAULT (-EINVAL for an
 * unknown paging mode); after a failure buf holds an unspecified prefix.
 */
int guest_read_virt(const struct vmi_mem *mem, const struct guest_paging *pg, uint64_t gva,
		    void *buf, uint64_t len);

/* Whether gva is canonical under pg: the only addresses the CPU would translate. */
bool guest_walk_canonical(const struct guest_paging *pg, uint64_t gva);

#endif
