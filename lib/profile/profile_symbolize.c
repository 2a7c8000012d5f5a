/* SPDX-License-Identifier: MIT */
/*
 * Symbolization: each distinct (image, address) becomes one location,
 * looked up once in the image's ELF file (under the domain's root) or in
 * the domain's kernel symbols; locations belong to functions, functions
 * to images. A sample's callchain is read with perf's context markers.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/file_open.h"
#include "common/grow.h"
#include "symbols/kallsyms.h"
#include "profile/profile_state.h"
#include "symbols/symtab.h"

/* perf's callchain context markers (PERF_CONTEXT_*): not addresses. */
#define CONTEXT_MARKER_MIN ((uint64_t)-4095)
#define CONTEXT_KERNEL ((uint64_t)-128)
#define CONTEXT_USER ((uint64_t)-512)
#define CONTEXT_GUEST_KERNEL ((uint64_t)-2176)
#define CONTEXT_GUEST_USER ((uint64_t)-2560)
/* x86-64 kernel addresses live in the upper canonical half. */
#define KERNEL_HALF 0xffff800000000000ull

/*
 * The name a file's symbol is shown by: demangled (C++, Rust) unless
 * --no-demangle, as perf report. Done here, once per symbol that samples
 * hit, rather than for every symbol of every file loaded. NULL when out of
 * memory.
 */
static const char *shown_name(struct profile *p, const struct symtab_sym *sym)
{
	char buf[SYMTAB_DEMANGLED_MAX];

	if (p->state->opt.no_demangle || !symtab_demangle(sym->name, buf, sizeof(buf), 0))
		return sym->name;
	return profile_intern(p, buf);
}

/* A location in a mapped file. */
static uint32_t resolve_in_map(struct profile *p, const struct map *m, uint64_t addr)
{
	struct symtab *st = profile_image_symtab(p, m->image);
	const struct symtab_sym *sym = NULL;
	const char *name = NULL;
	uint64_t rel;
	int64_t v;

	rel = st ? symtab_map_addr(st, addr, m->start, m->pgoff) : addr - m->start + m->pgoff;
	v = keymap_get(&p->state->loc_by_key, m->image, rel);
	if (v >= 0)
		return (uint32_t)v;
	if (st)
		sym = symtab_lookup(st, rel);
	if (sym && keymap_get(&p->state->func_by_key, m->image, (uintptr_t)sym) < 0 && !(name = shown_name(p, sym)))
		return PROFILE_NONE;
	return profile_add_loc(p, m->image, addr, rel, profile_func_id(p, m->image, sym, name, sym ? sym->addr : 0));
}

static uint32_t resolve_unknown(struct profile *p, uint32_t img, uint64_t addr)
{
	int64_t v = keymap_get(&p->state->loc_by_key, img, addr);

	if (v >= 0)
		return (uint32_t)v;
	return profile_add_loc(p, img, addr, addr, profile_func_id(p, img, NULL, NULL, 0));
}

enum lookup_kind { LOOKUP_KERNEL = 1, LOOKUP_USER, LOOKUP_KERNEL_KNOWS };

/*
 * The cache entry for a lookup: *hit says whether it holds the answer;
 * NULL when the cache could not be allocated (lookups then go uncached).
 */
static inline struct resolve_cache_entry *cache_slot(struct profile *p, enum lookup_kind kind, uint8_t domain, uint32_t mm,
					      uint32_t pid, uint64_t addr, bool *hit)
{
	struct profile_state *ps = p->state;
	uint64_t ctx = (uint64_t)kind << 40 | (uint64_t)domain << 32 | mm;
	uint64_t h = (addr ^ ctx * 0x9e3779b97f4a7c15ull ^ pid) * 0xbf58476d1ce4e5b9ull;
	struct resolve_cache_entry *e;

	*hit = false;
	if (!ps->resolved && !(ps->resolved = calloc(RESOLVE_CACHE_SIZE, sizeof(*ps->resolved))))
		return NULL;
	/* Replay changed the maps since the entries were made: what they found may differ now. */
	if (ps->resolved_gen != ps->maps_gen) {
		memset(ps->resolved, 0, RESOLVE_CACHE_SIZE * sizeof(*ps->resolved));
		ps->resolved_gen = ps->maps_gen;
	}
	e = &ps->resolved[(h >> 40) & (RESOLVE_CACHE_SIZE - 1)];
	/* ctx is never 0 (kind is not): an empty entry never matches. */
	*hit = e->ctx == ctx && e->addr == addr && e->pid == pid;
	if (!*hit)
		*e = (struct resolve_cache_entry){ .addr = addr, .ctx = ctx, .pid = pid, .val = PROFILE_NONE };
	return e;
}

/* A kernel address through kallsyms or the kernel's ELF; PROFILE_NONE if neither knows it. */
static uint32_t resolve_kernel_uncached(struct profile *p, uint8_t domain, uint64_t addr)
{
	struct domain_state *ps = &p->state->dom[domain];
	struct kallsyms_sym ks;
	const struct map *m;
	uint32_t img;
	int64_t v;

	if (ps->ks) {
		if (!kallsyms_lookup(ps->ks, addr, &ks))
			return PROFILE_NONE;
		img = ps->kernel_image;
		if (ks.module) {
			char name[256];

			snprintf(name, sizeof(name), "[%s]", ks.module);
			img = profile_image_id(p, NULL, name, NULL, 0, true, domain);
			if (img == PROFILE_NONE)
				return PROFILE_NONE;
		}
		v = keymap_get(&p->state->loc_by_key, img, addr);
		if (v >= 0)
			return (uint32_t)v;
		/* A symbol's name is its own copy: its address names the symbol. */
		return profile_add_loc(p, img, addr, addr, profile_func_id(p, img, ks.name, ks.name, ks.addr));
	}
	if (ps->kernel_mm != PROFILE_NONE && (m = mm_find_map(&p->state->mms[ps->kernel_mm], addr)))
		return resolve_in_map(p, m, addr);
	return PROFILE_NONE;
}

static uint32_t resolve_kernel(struct profile *p, uint8_t domain, uint64_t addr)
{
	bool hit;
	struct resolve_cache_entry *e = cache_slot(p, LOOKUP_KERNEL, domain, 0, 0, addr, &hit);

	if (hit)
		return e->val;
	/* Only a found location is kept: PROFILE_NONE may mean out of memory too. */
	uint32_t loc = resolve_kernel_uncached(p, domain, addr);

	if (e && loc != PROFILE_NONE)
		e->val = loc;
	else if (e)
		e->ctx = 0;
	return loc;
}

/* A user address: the sample's address space, else a later one of the pid (maps recorded late). */
static uint32_t resolve_user_uncached(struct profile *p, uint32_t mm, uint32_t pid, uint8_t domain, uint64_t addr)
{
	struct profile_state *ps = p->state;
	const struct map *m;
	int64_t v;
	uint32_t i, steps;

	if (mm != PROFILE_NONE && (m = mm_find_map(&ps->mms[mm], addr)))
		return resolve_in_map(p, m, addr);
	v = keymap_get(&ps->mm_by_pid, pid, domain);
	/*
	 * Only address spaces that began after the sample's: those hold maps
	 * recorded late, while earlier ones were replaced (exec) before the
	 * sample. Bounded: a pid reused many times mustn't make misses slow.
	 */
	for (i = v >= 0 ? (uint32_t)v : PROFILE_NONE, steps = 0;
	     i != PROFILE_NONE && (mm == PROFILE_NONE || i > mm) && steps < 16; i = ps->mms[i].prev, steps++)
		if ((m = mm_find_map(&ps->mms[i], addr)))
			return resolve_in_map(p, m, addr);
	return PROFILE_NONE;
}

static uint32_t resolve_user(struct profile *p, uint32_t mm, uint32_t pid, uint8_t domain, uint64_t addr)
{
	bool hit;
	struct resolve_cache_entry *e = cache_slot(p, LOOKUP_USER, domain, mm, pid, addr, &hit);

	if (hit)
		return e->val;
	uint32_t loc = resolve_user_uncached(p, mm, pid, domain, addr);

	if (e && loc != PROFILE_NONE)
		e->val = loc;
	else if (e)
		e->ctx = 0;
	return loc;
}

static bool kernel_knows(struct profile *p, uint8_t domain, uint64_t addr)
{
	struct domain_state *ps = &p->state->dom[domain];
	bool hit, known;
	struct resolve_cache_entry *e = cache_slot(p, LOOKUP_KERNEL_KNOWS, domain, 0, 0, addr, &hit);
	struct kallsyms_sym s;

	if (hit)
		return e->val;
	if (ps->ks)
		known = kallsyms_lookup(ps->ks, addr, &s);
	else
		known = ps->kernel_mm != PROFILE_NONE && mm_find_map(&p->state->mms[ps->kernel_mm], addr);
	if (e)
		e->val = known;
	return known;
}

int profile_resolve_sample(struct profile *p, struct profile_sample *s, uint32_t index, uint32_t mm)
{
	struct profile_state *ps = p->state;
	struct domain_state *d = &ps->dom[s->domain];
	uint8_t dom = s->domain;
	const uint64_t *raw = &ps->raw[s->first_frame];
	uint32_t n, out = 0, i, loc;
	enum { CTX_NONE, CTX_KERNEL, CTX_USER } ctx = CTX_NONE;
	bool prev_kernel = s->cpl == KP_CPL_KERNEL, cut = false;
	int rc;

	/* --call-graph dwarf: the user callers come from the stack copy, after the kernel's frames. */
	if (ps->nr_ustacks && (rc = profile_unwind_sample(p, index, mm)))
		return rc;
	n = s->nr_frames;

	for (i = 0; i < n; i++) {
		uint64_t a = raw[i];
		bool kernel;

		if (i && a >= CONTEXT_MARKER_MIN) {
			if (a == CONTEXT_KERNEL || a == CONTEXT_GUEST_KERNEL)
				ctx = CTX_KERNEL;
			else if (a == CONTEXT_USER || a == CONTEXT_GUEST_USER)
				ctx = CTX_USER;
			continue;
		}
		/* A chain that starts with the sampled ip repeats it: perf's does. */
		if (i && out == 1 && a == raw[0] && i == 1 + (raw[1] >= CONTEXT_MARKER_MIN))
			continue;
		/*
		 * A zero return address is where a stack ends (the ABI's outermost
		 * frame; libdw's unwinder stops there too), not a caller: taken for
		 * one it went to the kernel (0 - 1 is a kernel-half address) as a
		 * "[kernel.kallsyms] [unknown]" frame at the root of the stack.
		 * What the walk read past it, up to the next context's walk, is
		 * garbage: dropped, and counted as a cut.
		 */
		if (i && !a) {
			for (; i + 1 < n && raw[i + 1] < CONTEXT_MARKER_MIN; i++) {
				p->frames_cut++;
				cut = true;
			}
			continue;
		}
		if (i == 0) {
			kernel = s->cpl == KP_CPL_KERNEL;
		} else {
			/* Return addresses: the call is the instruction before. */
			a--;
			kernel = ctx == CTX_KERNEL ||
				 (ctx == CTX_NONE && (a >= KERNEL_HALF || (prev_kernel && kernel_knows(p, dom, a))));
		}
		if (kernel) {
			loc = resolve_kernel(p, dom, a);
			if (loc == PROFILE_NONE && i)
				loc = resolve_user(p, mm, s->pid, dom, a);
			if (loc == PROFILE_NONE)
				loc = resolve_unknown(p, d->kernel_image, a);
		} else {
			loc = resolve_user(p, mm, s->pid, dom, a);
			if (loc == PROFILE_NONE && i && kernel_knows(p, dom, a))
				loc = resolve_kernel(p, dom, a);
			/*
			 * A caller in user space that no mapping covers: a frame-pointer
			 * walk that went into garbage (a frame without a frame pointer, a
			 * clobbered RBP) reads on for up to 127 such "callers". The chain
			 * ends at the first of them; what is dropped is counted.
			 */
			if (loc == PROFILE_NONE && i) {
				for (; i < n; i++)
					p->frames_cut += raw[i] < CONTEXT_MARKER_MIN;
				cut = true;
				break;
			}
			if (loc == PROFILE_NONE)
				loc = resolve_unknown(p, d->unknown_image, a);
		}
		if (loc == PROFILE_NONE)
			return -ENOMEM;
		prev_kernel = p->images[p->locs[loc].image].kernel;
		p->frames[s->first_frame + out++] = loc;
	}
	p->chains_cut += cut;
	s->nr_frames = out;
	return 0;
}

int profile_load_kernel_symbols(struct profile *p, uint8_t domain)
{
	struct domain_state *ps = &p->state->dom[domain];
	const char *path = domain ? p->state->opt.guest_kallsyms_path : p->state->opt.kallsyms_path;
	const char *what = domain ? "guest " : "";
	int rc = 0;

	if (ps->ks) {
		/* Built from the KSYMS records as they came. */
		kallsyms_finish(ps->ks);
	} else if (path) {
		rc = kallsyms_load(&ps->ks, path);
		if (rc && rc != -ENOMEM) {
			profile_warn(p, "%s: %s; no %skernel symbols", path, file_open_strerror(rc), what);
			rc = 0;
		}
	}
	if (rc)
		return rc;
	if (ps->ks && kallsyms_hidden(ps->ks))
		profile_warn(p, "%skernel symbol addresses are all zero (kptr_restrict); no %skernel symbols", what, what);
	if (ps->ks && kallsyms_malformed(ps->ks))
		profile_warn(p, "%zu malformed %skallsyms lines skipped", kallsyms_malformed(ps->ks), what);
	return 0;
}

