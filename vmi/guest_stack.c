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

/* gva is 8-byte aligned, so the word never straddles two pages. */
static int read_word(struct stack_reader *r, uint64_t gva, uint64_t *val)
{
	uint64_t page = gva & ~PAGE_MASK;

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

unsigned int guest_stack_walk(const struct vmi_mem *mem, const struct guest_paging *pg, bool user,
			      uint64_t rsp, uint64_t rbp, uint64_t *callers, unsigned int max)
{
	struct stack_reader r = { .mem = mem, .pg = pg, .user = user };
	unsigned int n = 0;

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
		if (saved_rbp <= rbp || saved_rbp - rbp > GUEST_STACK_FRAME_MAX)
			break;
		rbp = saved_rbp;
	}
	return n;
}
