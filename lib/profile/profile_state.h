/* SPDX-License-Identifier: MIT */
/*
 * The profile model's private state, shared by its parts (perf's util/
 * keeps the same jobs apart). They form layers: each file calls only the
 * ones above it in this list (the declarations below keep that order).
 *   profile_tables.c     the tables (strings, commands, images, events,
 *                        functions, locations) and warnings
 *   profile_intervals.c  an address space as sorted, non-overlapping maps
 *   profile_images.c     an image's file: its symbols, code, source, CFI
 *   profile_replay.c     process state replayed in (time, stream order)
 *   profile_unwind.c     user stacks unwound from their copies (libdwfl)
 *   profile_symbolize.c  addresses to locations, functions and images
 *   profile_exits.c      VM exits: their frames, and host samples joined to them
 *   profile_ingest.c     records in: what each one adds, kept for later
 *   profile_pseudo.c     made-up samples (guest time the VMM could not place)
 *   profile.c            the life cycle, and profile_finish, which runs
 *                        the steps above in order
 *   profile_load.c       sample files in (both report commands' loader)
 * Nothing outside these files includes it.
 */
#ifndef KVMPROF_PROFILE_STATE_H
#define KVMPROF_PROFILE_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/grow.h"
#include "common/keymap.h"
#include "kvmprof/sample_block.h"
#include "profile/profile.h"

/* Bounds against hostile input: beyond these, maps are dropped with a warning. */
#define MAPS_PER_MM_MAX 65536
#define MAPS_TOTAL_MAX (1u << 22)
#define KSYMS_TEXT_MAX (256u << 20)
#define USTACK_DATA_MAX (1ull << 30) /* stack copies kept for unwinding; beyond, samples keep what they have */

/*
 * A sample's user registers and stack copy (KP_REC_USER_STACK), kept for
 * profile_unwind_sample. The sample's raw frames are followed by
 * USTACK_FRAMES free slots for the callers the unwinder finds.
 */
#define USTACK_FRAMES KP_CALLCHAIN_MAX
struct ustack {
	uint32_t sample; /* index into samples; ustacks are in sample order */
	uint32_t len;
	uint64_t off;    /* of the copy in ustack_data */
	uint64_t regs[KP_USER_REGS];
};

struct map {
	uint64_t start, end, pgoff;
	uint32_t image;
};

struct mm {
	uint32_t pid, comm, prev; /* prev: the pid's earlier address space, or PROFILE_NONE */
	uint8_t domain;
	bool exited, built;
	struct map *maps; /* as recorded, oldest first */
	size_t nr, cap;
	struct map *ivs;  /* non-overlapping, sorted, newer maps winning; built on first lookup */
	size_t nr_ivs;
};

enum op_kind { OP_COMM, OP_MMAP, OP_FORK, OP_EXIT };

/*
 * A process-state record, kept until profile_finish replays them in order.
 * seq: the record's place in the stream; samples_before and exits_before:
 * how many samples and exits came before it in the stream, which orders it
 * against a sample or exit of the same time without a number kept for each.
 */
struct op {
	uint64_t time, seq;
	uint32_t samples_before, exits_before;
	uint32_t kind, pid, tid, ppid, flags, comm;
	uint8_t domain;
	struct map map;
};

/*
 * What the last lookups of an address gave (profile_symbolize.c): a
 * sample's frames repeat the same few hundred addresses, each lookup a
 * binary search or two and a hash probe. Direct-mapped, emptied whenever
 * replay changes the process state.
 */
#define RESOLVE_CACHE_SIZE 4096
struct resolve_cache_entry {
	uint64_t addr;
	uint64_t ctx; /* the lookup's kind, domain and address space */
	uint32_t pid;
	uint32_t val; /* a location, PROFILE_NONE, or kernel_knows's 0/1 */
};

struct image_state {
	struct symtab *st;
	int tried;
	bool host_path; /* a file on this machine (--guest-kernel): no root prefix */
};

/* What each namespace (enum kp_domain) has of its own kernel. */
struct domain_state {
	size_t ksyms_len; /* bytes of KSYMS text added to ks */
	bool ksyms_warned;
	struct kallsyms *ks; /* from KSYMS records as they come, or --kallsyms */
	uint32_t kernel_image, unknown_image, kernel_mm;
};

#define NR_DOMAINS 2

/*
 * What profile_match_exits needs, kept as the records come in, while each
 * is still in the cache: each vCPU thread's exit intervals in recorded
 * order, and (cross_layer) the host samples. Built afterwards, it cost two
 * walks through the 10^6 exits and one through the samples, a cache miss
 * each. ord: the exit's place among the recorded exits.
 */
struct exit_interval {
	uint64_t time;
	uint32_t len; /* ns to the next entry; an exit longer than 2^32 - 1 ns is in pieces, each its ordinal */
	uint32_t ord;
};

struct exit_thread {
	uint32_t tid;
	bool unsorted;      /* an exit earlier in time than the one before it */
	uint64_t last_time;
	size_t hint;        /* where the last search ended: a thread's samples mostly come in time order */
	struct exit_interval *iv;
	size_t n, cap;
};

struct exit_index {
	struct exit_thread *threads;
	size_t nr, cap;
	struct keymap by_tid;
	bool memo_valid; /* threads[memo] is memo_tid's: exits come in runs of one thread */
	uint32_t memo_tid;
	size_t memo;
	uint32_t *native; /* the host (native) samples, with cross_layer */
	size_t nr_native, native_cap;
};

/*
 * The exits not kept whole (exits_joined_only): coded as in a SAMPLES
 * block (lib/format/sample_block.c), about 10 bytes each against 76 kept whole,
 * with a fresh coder every EXIT_STORE_RUN exits, so that one exit decodes
 * from the start of its run. kept: the ordinals of exit_kinds_kept's.
 */
#define EXIT_STORE_RUN 32
struct exit_store {
	unsigned char *bytes;
	size_t len, cap;
	size_t *run_start; /* byte offset of each run */
	size_t nr_runs, runs_cap;
	struct kp_sample_coder *coder;
	struct kp_rec_vm_exit *rec; /* one exit and KP_CALLCHAIN_MAX frames: what is coded or decoded */
	uint32_t *kept;
	size_t nr_kept, kept_cap;
};

/*
 * profile_options.aggregate (profile_ingest.c): samples a flat table cannot
 * tell apart held once, with a count. A group is found by a hash of its
 * fields and its epoch (the process-state records replay puts before it);
 * broken: a record came later than the window allows (or one that
 * aggregation cannot take), and the file must be read again without it.
 */
#define AGG_WINDOW (1u << 16) /* samples waiting, first in first out, for records written late */
struct agg_pending {
	struct profile_sample s; /* event: the recorded id */
	uint64_t ip, seq;        /* seq: its place among the stream's samples */
};
struct agg_op_key {
	uint64_t time, seen; /* seen: the stream's samples before the record */
};
struct agg_state {
	bool on, broken;
	uint32_t *slots; /* group index + 1; 0: empty */
	size_t nr_slots;
	uint32_t *epoch; /* each group's: the process-state records before it in replay */
	uint64_t *first; /* each group's first sample's place among the stream's samples */
	uint64_t nr_seen; /* samples so far */
	size_t counts_cap, epoch_cap, first_cap;
	struct agg_pending *wait; /* a ring of AGG_WINDOW from head, nr_wait of them, in stream order */
	size_t head, nr_wait;
	struct agg_op_key *op_keys; /* the process-state records' so far, sorted (agg_key_before) */
	size_t nr_op_keys, op_keys_cap;
	uint64_t *op_seen; /* each op's (ps->ops, stream order) seen */
	size_t op_seen_cap;
	uint64_t max_released_time;
	const char *why; /* what broke it */
};

struct profile_state {
	struct profile_options opt;
	struct agg_state agg;
	size_t events_cap, images_cap, funcs_cap, locs_cap, samples_cap, comms_cap, meta_cap;
	struct keymap event_by_id, image_by_key, func_by_key, loc_by_key, comm_by_str, strs;
	char **str_list;
	size_t nr_strs, strs_cap;
	struct image_state *istate;
	size_t istate_cap;

	struct op *ops;
	size_t nr_ops, ops_cap;
	uint64_t seq;
	uint64_t *raw; /* callchains as recorded, indexed like frames */
	size_t nr_raw, raw_cap;
	size_t exits_cap;
	uint32_t *joined; /* the samples profile_match_exits joined to an exit: p->exit_samples of them */
	struct exit_index xi;
	struct exit_store xs;
	/* With exits_joined_only: each kept exit's ordinal (replay orders exits by it); NULL: exits[i] is ordinal i. */
	uint32_t *exit_ord;
	uint64_t lost_sum, end_lost;

	struct ustack *ustacks;
	size_t nr_ustacks, ustacks_cap;
	unsigned char *ustack_data;
	size_t ustack_len, ustack_cap;
	uint64_t ustacks_orphaned, ustacks_over_cap; /* not after their sample; past USTACK_DATA_MAX */
	struct unwind_cache *unwind; /* profile_unwind.c's */
	struct resolve_cache_entry *resolved; /* RESOLVE_CACHE_SIZE entries, allocated on first use */
	/* Bumped by replay whenever the maps change; the cache is emptied when its own differs. */
	uint32_t maps_gen, resolved_gen;

	struct domain_state dom[NR_DOMAINS];
	bool has_guest; /* a guest record came: the guest's pseudo images are made */

	/* Descriptors of opt.root and opt.guest_root (by domain): -1 none, -2 not opened yet. */
	int root_fd[NR_DOMAINS];
	bool guest_files_warned;

	struct mm *mms;
	size_t nr_mms, mms_cap, total_maps;
	struct keymap mm_by_pid; /* the current address space of each (pid, domain) */
	bool maps_warned, finished;
	/* profile_update: samples resolved so far; each domain's kernel and pseudo images made */
	size_t updated;
	bool native_ready, guest_ready;
};

/*
 * The parts, in layers: each file calls only the ones listed above it
 * (profile.c and profile_load.c, the entry points, sit on top of all).
 */

/* profile_tables.c */
/* Warnings for the user through opt.warn (made safe for the terminal first). */
void profile_warn(struct profile *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One stored copy of a string; NULL when out of memory. */
const char *profile_intern(struct profile *p, const char *s);
/*
 * The image for a recorded path and build-id, or a pseudo image (path NULL)
 * called `name`. PROFILE_NONE when out of memory.
 */
uint32_t profile_image_id(struct profile *p, const char *path, const char *name, const uint8_t *bid,
			  uint8_t bid_size, bool kernel, uint8_t domain);
/* The index of the event with a recorded id, added if new. PROFILE_NONE when out of memory. */
uint32_t profile_event_index(struct profile *p, uint32_t id);
/* The function for a symbol (or a pseudo name) of an image, made once. PROFILE_NONE when out of memory. */
uint32_t profile_func_id(struct profile *p, uint32_t img, const void *sym, const char *name, uint64_t addr);
/* A new location of function func at addr (rel: its key in the image). PROFILE_NONE when out of memory. */
uint32_t profile_add_loc(struct profile *p, uint32_t img, uint64_t addr, uint64_t rel, uint32_t func);
/* The location of a pseudo function `name` (interned) in pseudo image img; PROFILE_NONE when out of memory. */
uint32_t profile_pseudo_loc(struct profile *p, uint32_t img, const char *name, uint64_t addr);

/*
 * Room in ps->raw for n more frames: 0, or -ENOMEM (out of memory, or past
 * the 2^32 frames a sample's first_frame can index).
 */
static inline int profile_raw_room(struct profile *p, size_t n)
{
	struct profile_state *ps = p->state;

	if (n > UINT32_MAX - ps->nr_raw)
		return -ENOMEM;
	return grow_array(&ps->raw, &ps->raw_cap, ps->nr_raw + n, sizeof(*ps->raw));
}

/* profile_intervals.c */
/* The map covering addr in an address space (newer maps win), or NULL. */
const struct map *mm_find_map(struct mm *mm, uint64_t addr);
/* All of an address space's maps, non-overlapping and sorted (NULL, *n 0 if none or out of memory). */
const struct map *mm_intervals(struct mm *mm, size_t *n);

/* profile_images.c */
/* An image's symbols (its ELF file opened once, with warnings), or NULL. */
struct symtab *profile_image_symtab(struct profile *p, uint32_t img);
/* A new descriptor of an image's ELF file, found as profile_image_symtab found it; -errno if none. */
int profile_image_fd(struct profile *p, uint32_t img);

/* profile_replay.c */
/*
 * Replays every process-state record in (time, stream order) along items
 * first..first+n-1, samples and, past nr_samples, exits (profile_finish's):
 * item_mm[i] gets item i's address space at its time (PROFILE_NONE: none),
 * and its command when it has one. 0, -ENOMEM or -EFBIG.
 */
int profile_replay(struct profile *p, size_t first, size_t n, uint32_t *item_mm);
/* Adds one mapping to its process's (or the kernel's) current address space. */
int profile_replay_mmap(struct profile *p, const struct op *op);
/* --guest-kernel: the guest kernel's ELF (a host path) covers every guest kernel address. */
int profile_add_guest_kernel_elf(struct profile *p);

/* profile_unwind.c */
/* A KP_REC_USER_STACK record in: kept for the sample it follows. 0 or -ENOMEM. */
int profile_add_user_stack(struct profile *p, const struct kp_rec_user_stack *u);
/*
 * Sample i's user callers from its stack copy and the CFI of the files
 * mapped in mm, appended to its raw frames (a user-mode sample's own ip
 * is not repeated). Nothing for a sample without a copy. 0 or -ENOMEM.
 */
int profile_unwind_sample(struct profile *p, uint32_t i, uint32_t mm);
void profile_unwind_free(struct profile *p);

/* profile_symbolize.c */
/*
 * Turns a sample's recorded ip and callchain into locations (frames);
 * index: the sample's in samples, for its stack copy (PROFILE_NONE: an
 * exit's, which has none). 0 or -ENOMEM.
 */
int profile_resolve_sample(struct profile *p, struct profile_sample *s, uint32_t index, uint32_t mm);
/* A domain's kernel symbols: its KSYMS records, else its --kallsyms file. 0 or -ENOMEM. */
int profile_load_kernel_symbols(struct profile *p, uint8_t domain);

/* profile_exits.c */
/* A KP_REC_VM_EXIT record in: its guest stack raw, like a guest sample's. 0 or -ENOMEM. */
int profile_add_vm_exit(struct profile *p, const struct kp_rec_vm_exit *x);
/*
 * Before replay and symbolization, with cross_layer: each host sample in an
 * exit's interval joined to it (sample.exit, exit.joined, ps->joined), so
 * that only the exits a report shows get their guest stacks resolved; with
 * exits_joined_only, those and the kept kinds' are decoded into exits. 0,
 * -ENOMEM, or -EIO if the held exits do not decode (a bug).
 */
int profile_match_exits(struct profile *p);
/* A host sample in, for profile_match_exits (cross_layer). 0 or -ENOMEM. */
int profile_exit_index_sample(struct profile *p, uint32_t sample);
/* The index emptied of the exits (they were dropped), or of everything. */
void profile_exit_index_drop_exits(struct profile *p);
void profile_exit_index_free(struct profile *p);
/*
 * After symbolization: the resolved exits' own frames, and each joined
 * sample's frames extended by its exit's frame and guest stack. 0 or -ENOMEM.
 */
int profile_join_exits(struct profile *p);

/* profile_ingest.c */
/* profile_options.aggregate: the samples still waiting let through (profile_finish). 0 or -ENOMEM. */
int profile_agg_flush(struct profile *p);
/*
 * profile_options.aggregate: the groups in the order of their first
 * samples in the stream, the order plain loading resolves samples in (and
 * so makes functions, locations and commands in), in *out (the caller
 * frees it). 0 or -ENOMEM.
 */
int profile_agg_order(struct profile *p, uint32_t **out);
/* profile_options.aggregate's grouping state freed (p->sample_counts stays). */
void profile_agg_free(struct profile *p);

#endif
