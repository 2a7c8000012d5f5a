// SPDX-License-Identifier: MIT
#include "guest_stack.h"

#include <errno.h>

#define PAGE_MASK 0xfffULL
#define LOWER_HALF(a) (((a) >> 63) == 0)

/*
 * Reads stack words for one walk. Consecutive frames mostly share a page,
 * so the last page's translation is kept: a deep chain costs a handful of
 * page walks instead of one per word. It lives only for one walk, so a
 * guest changing its page tables between samples cannot make it stale.
 */
struct stack_reader {
	const struct vmi_mem *mem;
	const struct guest_paging *pg;
	bool user;
	bool cached;
	uint64_t page;     /* guest-virtual page of the cached translation */
	uint64_t gpa_page; /* and the 4 KiB guest-physical page it maps to */
};

/*
 * One word at gva, which must not straddle two pages (the stack walk's are
 * 8-byte aligned; the TSS's RSP0 is at offset 4).
 */
static int read_word(struct stack_reader *r, uint64_t gva, uint64_t *val)
{
	uint64_t page = gva & ~PAGE_MASK;

	if ((gva & PAGE_MASK) > PAGE_MASK - 7)
		return -EFAULT;
	if (!r->cached || r->page != page) {
		struct guest_translation t;

		if (guest_walk_translate(r->mem, r->pg, gva, &t) || t.user != r->user)
			return -EFAULT;
		r->page = page;
		r->gpa_page = t.gpa & ~PAGE_MASK;
		r->cached = true;
	}
	return vmi_mem_read(r->mem, r->gpa_page | (gva & PAGE_MASK), val, sizeof(*val));
}

/*
 * Whether a return address belongs to the sampled privilege level. Kernel
 * text is never paged out, so a kernel return address must be mapped
 * supervisor-only. User text can be evicted under memory pressure, so an
 * unmapped user return address is accepted as long as it lies in the
 * lower half; a mapped one must be user-accessible.
 */
static bool return_address_ok(const struct stack_reader *r, uint64_t ret)
{
	struct guest_translation t;
	int rc;

	if (ret == 0 || !guest_walk_canonical(r->pg, ret))
		return false;
	rc = guest_walk_translate(r->mem, r->pg, ret, &t);
	if (r->user)
		return LOWER_HALF(ret) && (rc || t.user);
	return rc == 0 && !t.user;
}

/* The walk; *last gets the frame pointer it stopped at (a kernel chain's last one is often the user's). */
static unsigned int walk(const struct vmi_mem *mem, const struct guest_paging *pg, bool user, uint64_t rsp,
			 uint64_t rbp, uint64_t *callers, unsigned int max, uint64_t *last)
{
	struct stack_reader r = { .mem = mem, .pg = pg, .user = user };
	unsigned int n = 0;

	*last = 0;
	if (user && (!LOWER_HALF(rsp) || !LOWER_HALF(rbp)))
		return 0;
	/* The innermost frame lies above the stack pointer, and not far above it. */
	if (rbp < rsp || rbp - rsp > GUEST_STACK_FRAME_MAX)
		return 0;
	/* Each pass moves rbp strictly up, and n bounds the passes anyway. */
	while (n < max) {
		uint64_t saved_rbp, ret;

		/* Both words, at rbp and rbp + 8, must lie below 2^64. */
		if ((rbp & 7) || rbp > UINT64_MAX - 15)
			break;
		if (read_word(&r, rbp, &saved_rbp) || read_word(&r, rbp + 8, &ret))
			break;
		if (!return_address_ok(&r, ret))
			break;
		callers[n++] = ret;
		/* saved_rbp 0 is the outermost frame's marker (System V _start). */
		*last = saved_rbp;
		if (saved_rbp <= rbp || saved_rbp - rbp > GUEST_STACK_FRAME_MAX)
			break;
		rbp = saved_rbp;
	}
	return n;
}

unsigned int guest_stack_walk(const struct vmi_mem *mem, const struct guest_paging *pg, bool user,
			      uint64_t rsp, uint64_t rbp, uint64_t *callers, unsigned int max)
{
	uint64_t last;

	return walk(mem, pg, user, rsp, rbp, callers, max, &last);
}

unsigned int guest_callchain(const struct vmi_mem *mem, const struct guest_paging *pg, bool user, uint64_t rsp,
			     uint64_t rbp, uint64_t tss_base, uint64_t *callers, unsigned int max)
{
	/* The TSS and the interrupt frame: supervisor-only words, read as the kernel stack is. */
	struct stack_reader k = { .mem = mem, .pg = pg, .user = false };
	uint64_t last, rsp0, frame, cs, user_rip, user_rsp;
	unsigned int n;

	if (user)
		return guest_stack_walk(mem, pg, true, rsp, rbp, callers, max);
	n = walk(mem, pg, false, rsp, rbp, callers, max, &last);
	/*
	 * Into the interrupted user code: the CPU pushed SS, RSP, RFLAGS, CS
	 * and RIP at the top of the stack TSS.RSP0 names (aligned down to 16)
	 * when it entered the kernel from ring 3. Only if that frame says ring
	 * 3 (CS.RPL) and holds lower-half addresses; the user chain's frame
	 * pointer is the kernel chain's last saved one (the entry code left
	 * the user's RBP alone, the first kernel frame saved it).
	 */
	if (!tss_base || n + 3 > max || !last)
		return n;
	/* RSP0 sits at offset 4 of the 64-bit TSS; its 8 bytes must lie below 2^64. */
	if (tss_base > UINT64_MAX - 11 || read_word(&k, tss_base + 4, &rsp0))
		return n;
	/* Aligned down first: the 40 bytes below must not wrap past 0. */
	if ((rsp0 & ~15ull) < 40)
		return n;
	frame = (rsp0 & ~15ull) - 40;
	if (read_word(&k, frame + 8, &cs) || (cs & 3) != 3 || read_word(&k, frame, &user_rip) ||
	    read_word(&k, frame + 24, &user_rsp))
		return n;
	/*
	 * A RIP the CPU ran at is canonical (which also keeps RIP + 1 in the
	 * lower half). RSP need not be: user code may load any value into it.
	 */
	if (!LOWER_HALF(user_rip) || !user_rip || !guest_walk_canonical(pg, user_rip) || !LOWER_HALF(user_rsp))
		return n;
	callers[n++] = GUEST_STACK_CONTEXT_USER;
	/* The interrupted instruction, as a caller: +1 because readers take one off return addresses. */
	callers[n++] = user_rip + 1;
	return n + guest_stack_walk(mem, pg, true, user_rsp, last, callers + n, max - n);
}
