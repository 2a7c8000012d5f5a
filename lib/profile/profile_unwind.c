/* SPDX-License-Identifier: MIT */
/*
 * --call-graph dwarf: a sample's user callers from the registers and stack
 * copy recorded with it (KP_REC_USER_STACK), unwound by libdwfl with the
 * CFI of the files its process had mapped, as perf's libdw unwinder does
 * (tools/perf/util/unwind-libdw.c). Programs built without frame pointers
 * get their callers this way.
 *
 * One Dwfl per address space holds its files at their load addresses; a
 * few are kept (a system-wide recording interleaves processes) and the
 * least recently used is dropped. The files are the ones symbolization
 * opens (the same roots, the same build-id checks), and the only memory
 * the unwinder may read is the stack copy: the guest or process that wrote
 * it is not trusted, so every read is checked against the copy's bounds.
 */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/grow.h"
#include "profile/profile_state.h"
#include "symbols/symtab.h"

#define UNWIND_CACHE 8

struct unwind_ctx {
	const uint64_t *regs;
	const unsigned char *stack;
	uint64_t sp;
	uint32_t len;
	pid_t tid;
	uint64_t *out; /* the sample's free raw slots */
	uint32_t n, max;
};

struct unwind_entry {
	uint32_t mm; /* PROFILE_NONE: free */
	Dwfl *dwfl;  /* NULL: the address space has no file the unwinder can use */
	uint64_t used;
};

struct unwind_cache {
	struct unwind_entry e[UNWIND_CACHE];
	uint64_t clock;
	struct unwind_ctx ctx;
};

int profile_add_user_stack(struct profile *p, const struct kp_rec_user_stack *u)
{
	struct profile_state *ps = p->state;
	struct profile_sample *s = p->nr_samples ? &p->samples[p->nr_samples - 1] : NULL;
	struct ustack *us;

	/* It belongs to the sample just before it: same thread and time, its frames last in raw, no copy yet. */
	if (!s || s->tid != u->tid || s->time != u->time || s->domain != KP_DOMAIN_NATIVE ||
	    ps->nr_raw != s->first_frame + s->nr_frames ||
	    (ps->nr_ustacks && ps->ustacks[ps->nr_ustacks - 1].sample == p->nr_samples - 1)) {
		ps->ustacks_orphaned++;
		return 0;
	}
	if (ps->ustack_len + u->size > USTACK_DATA_MAX) {
		ps->ustacks_over_cap++;
		return 0;
	}
	if (grow_array(&ps->ustacks, &ps->ustacks_cap, ps->nr_ustacks + 1, sizeof(*ps->ustacks)) ||
	    grow_array(&ps->ustack_data, &ps->ustack_cap, ps->ustack_len + u->size + 1, 1) ||
	    profile_raw_room(p, USTACK_FRAMES))
		return -ENOMEM;
	us = &ps->ustacks[ps->nr_ustacks++];
	us->sample = (uint32_t)(p->nr_samples - 1);
	us->len = u->size;
	us->off = ps->ustack_len;
	memcpy(us->regs, u->regs, sizeof(us->regs));
	memcpy(ps->ustack_data + ps->ustack_len, u->data, u->size);
	ps->ustack_len += u->size;
	memset(&ps->raw[ps->nr_raw], 0, USTACK_FRAMES * sizeof(uint64_t));
	ps->nr_raw += USTACK_FRAMES;
	return 0;
}

/* ---- libdwfl's callbacks */

/* Files are reported with their descriptors; nothing is searched for by name or build-id on this host. */
static int no_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base, char **file_name,
		  Elf **elfp)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name, (void)elfp;
	return -1;
}

/*
 * Separate debug files are not searched: the CFI an unwinder needs is in
 * .eh_frame, which stays in stripped files (perf's unwinder reads the same).
 */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name, (void)debuglink_file;
	(void)debuglink_crc, (void)debuginfo_file_name;
	return -1;
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = no_elf,
	.find_debuginfo = no_debuginfo,
	.section_address = dwfl_offline_section_address,
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct unwind_ctx *c = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = arg;
	return c->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl, (void)tid;
	*thread_argp = arg;
	return true;
}

/* The only memory there is: the stack copy, from the sampled rsp up. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	const struct unwind_ctx *c = arg;

	(void)dwfl;
	if (addr < c->sp || c->len < sizeof(*result) || addr - c->sp > c->len - sizeof(*result))
		return false;
	memcpy(result, c->stack + (addr - c->sp), sizeof(*result));
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct unwind_ctx *c = arg;

	return dwfl_thread_state_registers(thread, 0, KP_USER_REGS, c->regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct unwind_ctx *c = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation) || !pc)
		return DWARF_CB_ABORT;
	/*
	 * Raw frames after the first are return addresses, which
	 * symbolization looks up at pc - 1; an activation (the first frame, a
	 * signal frame) is where the thread was, so it goes in as pc + 1.
	 */
	c->out[c->n++] = activation ? pc + 1 : pc;
	return c->n < c->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* ---- one Dwfl per address space */

/* Every file of the address space with usable symbols, at its load bias. NULL when none. */
static Dwfl *dwfl_for_mm(struct profile *p, struct mm *mm, struct unwind_ctx *ctx)
{
	const struct map *ivs;
	size_t n, i, j;
	Dwfl *dwfl = dwfl_begin(&dwfl_callbacks);
	int reported = 0;

	if (!dwfl)
		return NULL;
	ivs = mm_intervals(mm, &n);
	dwfl_report_begin(dwfl);
	for (i = 0; i < n; i++) {
		const struct profile_image *im = &p->images[ivs[i].image];
		struct symtab *st;
		uint64_t bias;
		int fd;

		/* Once per file, at its lowest mapping (intervals are sorted). */
		for (j = 0; j < i && ivs[j].image != ivs[i].image; j++)
			;
		if (j < i || im->kernel || !(st = profile_image_symtab(p, ivs[i].image)))
			continue;
		fd = profile_image_fd(p, ivs[i].image);
		if (fd < 0)
			continue;
		/* Where the file's address 0 lies: the mapping's start less its file address. */
		bias = ivs[i].start - symtab_map_addr(st, ivs[i].start, ivs[i].start, ivs[i].pgoff);
		/* libdwfl takes fd, also on failure (an overlap with a file reported before). */
		if (dwfl_report_elf(dwfl, im->name, im->path, fd, bias, true))
			reported++;
	}
	dwfl_report_end(dwfl, NULL, NULL);
	if (!reported || !dwfl_attach_state(dwfl, NULL, (pid_t)mm->pid, &thread_callbacks, ctx)) {
		dwfl_end(dwfl);
		return NULL;
	}
	return dwfl;
}

static struct unwind_entry *entry_for_mm(struct profile *p, struct unwind_cache *uc, uint32_t mm)
{
	struct unwind_entry *e = NULL;

	for (int i = 0; i < UNWIND_CACHE; i++) {
		if (uc->e[i].mm == mm) {
			e = &uc->e[i];
			break;
		}
		if (!e || uc->e[i].used < e->used)
			e = &uc->e[i];
	}
	if (e->mm != mm) {
		if (e->dwfl)
			dwfl_end(e->dwfl);
		e->mm = mm;
		e->dwfl = dwfl_for_mm(p, &p->state->mms[mm], &uc->ctx);
	}
	e->used = ++uc->clock;
	return e;
}

static const struct ustack *ustack_of(const struct profile_state *ps, uint32_t i)
{
	size_t lo = 0, hi = ps->nr_ustacks;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ps->ustacks[mid].sample < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ps->nr_ustacks && ps->ustacks[lo].sample == i ? &ps->ustacks[lo] : NULL;
}

int profile_unwind_sample(struct profile *p, uint32_t i, uint32_t mm)
{
	struct profile_state *ps = p->state;
	struct profile_sample *s = &p->samples[i];
	const struct ustack *us;
	struct unwind_entry *e;
	struct unwind_ctx *c;
	uint64_t *slots;

	if (!ps->nr_ustacks || i >= p->nr_samples || mm == PROFILE_NONE || !(us = ustack_of(ps, i)))
		return 0;
	if (!ps->unwind) {
		ps->unwind = calloc(1, sizeof(*ps->unwind));
		if (!ps->unwind)
			return -ENOMEM;
		for (int k = 0; k < UNWIND_CACHE; k++)
			ps->unwind->e[k].mm = PROFILE_NONE;
	}
	e = entry_for_mm(p, ps->unwind, mm);
	if (!e->dwfl)
		return 0;
	slots = &ps->raw[s->first_frame + s->nr_frames];
	c = &ps->unwind->ctx;
	*c = (struct unwind_ctx){
		.regs = us->regs, .stack = ps->ustack_data + us->off, .sp = us->regs[KP_DWARF_RSP],
		.len = us->len, .tid = (pid_t)s->tid, .out = slots, .max = USTACK_FRAMES,
	};
	/* The end of a stack reads as an error on some systems: what was found stands either way. */
	dwfl_getthread_frames(e->dwfl, (pid_t)s->tid, frame_cb, c);
	if (!c->n)
		return 0;
	/* A user-mode sample's first frame is its own ip, which raw[0] holds already. */
	if (s->cpl == KP_CPL_USER) {
		memmove(slots, slots + 1, (c->n - 1) * sizeof(*slots));
		c->n--;
	}
	s->nr_frames += c->n;
	return 0;
}

void profile_unwind_free(struct profile *p)
{
	struct unwind_cache *uc = p->state->unwind;

	if (!uc)
		return;
	for (int i = 0; i < UNWIND_CACHE; i++)
		if (uc->e[i].dwfl)
			dwfl_end(uc->e[i].dwfl);
	free(uc);
	p->state->unwind = NULL;
}
