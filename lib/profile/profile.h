/* SPDX-License-Identifier: MIT */
/*
 * The profile model: sample-file records in, resolved samples out.
 *
 * Records are collected first (profile_add_record) and interpreted at
 * profile_finish, so that a process table written after the samples (the
 * bundled guest does that) or records from several per-CPU buffers that
 * arrive out of order still resolve. Process state is replayed in (time,
 * stream order): FORK copies the parent's maps, an exec COMM starts an
 * empty address space, EXIT keeps the maps (samples of exited processes
 * resolve), a pid seen again after EXIT starts afresh.
 *
 * Each distinct (image, address) is symbolized once into a location;
 * locations belong to functions (a symbol of an image, or that image's
 * "unknown"), functions to images. Renderers read the arrays below.
 *
 * Two namespaces (enum kp_domain) are kept apart: a host-side system-wide
 * profile holds the host's own samples (NATIVE: VMM threads, host kernel)
 * and the guest's (GUEST), whose pids, mappings, files and kernel symbols
 * are the guest's. Processes are keyed by (pid, domain), images by (path,
 * build-id, domain), and each domain has its own kernel symbols, kernel
 * image ("[kernel.kallsyms]" / "[guest.kernel]") and "[unknown]". A file
 * written inside one system is all NATIVE and reads as before.
 */
#ifndef KVMPROF_PROFILE_H
#define KVMPROF_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kvmprof/sample_format.h"
#include "format/sample_file.h"

#define PROFILE_NONE UINT32_MAX

struct profile_options {
	const char *root;          /* ELF files named by MMAP records are looked up as ROOT/filename */
	const char *kallsyms_path; /* kernel symbols when the file carries no KSYMS records */
	/* The guest domain's files: ROOT/filename for guest mappings (root is for native ones). */
	const char *guest_root;
	/* Guest kernel symbols when no guest KSYMS came: a kallsyms file, else a kernel ELF (host path). */
	const char *guest_kallsyms_path;
	const char *guest_kernel_path;
	/*
	 * profile_load reads what is intact of a damaged file (kp_reader_recover)
	 * and tells the user through warn where the damage is and what was lost.
	 */
	bool recover;
	/*
	 * profile_load only: a guest's `kvmprof-agent export` stream read after
	 * the recording, as the guest's (profile_add_guest_record). NULL: none.
	 */
	const char *guest_export_path;
	/*
	 * Cross-layer stacks: a host sample of a vCPU thread taken while the
	 * VMM handled one of the guest's VM exits (KP_REC_VM_EXIT: the same
	 * thread, time in [exit, next entry)) gets, outside its own frames,
	 * the exit's frame ("[exit: io out 0x3f8]") and the guest's stack at
	 * the exit. Off: host samples keep their host stacks.
	 */
	bool cross_layer;
	/*
	 * Every VM exit's guest stack symbolized (kvmprof report --exits, which
	 * groups exits by guest function). Off: only the exits a host sample
	 * was joined to (profile_exit.joined); the others keep nr_frames 0, as
	 * a system-wide recording has about one exit per guest sample and
	 * most reports look at no exit's stack.
	 */
	bool all_exit_frames;
	/*
	 * exits holds only the VM exits a host sample was joined to and those
	 * of the kinds in exit_kinds_kept (a bit per enum kp_exit_kind, as
	 * 1u << KP_EXIT_IO_OUT), in recorded order; exits_recorded counts them
	 * all. The others are held coded (~10 bytes, not 76) until the join
	 * has used their intervals. A system-wide recording has about one exit
	 * per guest sample, and a table shows none of them. Off, or with
	 * all_exit_frames: every exit, as recorded.
	 */
	bool exits_joined_only;
	uint32_t exit_kinds_kept;
	/*
	 * Function names as the files have them (_ZN2ns3fooEv): perf report's
	 * --no-demangle. Off: C++ and Rust names are demangled (symtab_demangle).
	 */
	bool no_demangle;
	/*
	 * profile_load only: samples that a flat table cannot tell apart (same
	 * event, pid, tid, cpu, privilege level, domain, period and ip, no call
	 * chain, and the same process-state records before them in replay's
	 * (time, stream) order) are held once, with a count
	 * (profile.sample_counts), instead of once each: a flat table of 10^6
	 * samples then holds a few thousand. Samples wait in a window of 65,536
	 * (per-CPU buffers written in turn put records after later samples of
	 * other CPUs); where a record comes later than that, or a sample has a
	 * call chain or a stack copy, or a VM exit comes, profile_load reads the
	 * file again the usual way. The profile is then the plain one's with
	 * samples merged: same events, counts, functions and commands, made in
	 * the same order. Only for reports that need no sample's own time,
	 * order or stack: not call chains, flame graphs, pprof, script or
	 * annotate. Ignored for standard input, which cannot be read twice, and
	 * with guest_export_path.
	 */
	bool aggregate;
	/* Called once per problem worth telling the user (missing file, build-id mismatch). */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
};

struct profile_event {
	uint32_t id, type;
	uint64_t config, period;
	uint32_t flags; /* KP_EVENT_FREQ, KP_EVENT_FALLBACK */
	bool declared;  /* an EVENT record described it */
	char name[KP_EVENT_NAME_MAX];
	uint64_t samples;    /* SAMPLE records */
	uint64_t weight;     /* sum of their periods */
	uint64_t lost;       /* from LOST records */
	uint64_t unresolved; /* samples whose own address has no symbol */
};

struct profile_image {
	const char *name; /* as reports show it: basename, "[kernel.kallsyms]", "[unknown]" */
	const char *path; /* as recorded; NULL for the pseudo images */
	uint64_t start, limit, pgoff; /* the first mapping of it that was recorded */
	uint8_t build_id[KP_BUILD_ID_MAX];
	uint8_t build_id_size;
	bool kernel;
	bool vm_exit;     /* "[vm exit]": the pseudo image of exits' frames */
	bool has_symbols; /* its ELF file was opened and used */
	uint8_t domain;   /* enum kp_domain */
};

struct profile_func {
	uint32_t image;
	const char *name; /* NULL: the image's unresolved addresses */
	uint64_t addr;    /* symbol address in the image */
};

struct profile_loc {
	uint64_t addr; /* the address looked up (runtime; return addresses minus 1) */
	uint64_t rel;  /* the same address in the image's file */
	uint32_t func;
	uint32_t image;
};

struct profile_sample {
	uint32_t event; /* index into events */
	uint32_t pid, tid, cpu;
	uint32_t comm;  /* index into comms */
	/*
	 * The VM exit (index into exits) whose handling this host sample fell
	 * in, with cross_layer; PROFILE_NONE otherwise. Its frames then go on
	 * past the host's outermost one: the exit's frame, the guest's stack.
	 */
	uint32_t exit;
	/*
	 * Locations: frames[first_frame ...], innermost (the ip) first. At most
	 * 1 + KP_CALLCHAIN_MAX recorded, as many unwound, and an exit's frame
	 * and stack: 16 bits. frames has at most 2^32 entries (profile_raw_room):
	 * 48 bytes a sample, not 56, which 10^6 samples feel.
	 */
	uint32_t first_frame;
	uint16_t nr_frames;
	uint8_t cpl;
	uint8_t domain; /* enum kp_domain */
	uint64_t time, period;
};

/*
 * One VM exit of a system-wide recording: where the guest was (as a guest
 * sample: process, privilege level, stack) and the host interval from the
 * exit to the vCPU's next entry, which host samples of host_tid fall in.
 */
struct profile_exit {
	uint32_t pid, tid;  /* the guest process at the exit */
	uint32_t cpu;       /* vCPU index */
	uint32_t host_tid;  /* the vCPU thread */
	uint32_t comm;      /* the guest process's command */
	uint8_t kind, cpl, size; /* enum kp_exit_kind, KP_CPL_*, access size */
	bool joined;        /* a host sample fell in its handling (cross_layer) */
	uint64_t detail;    /* port, guest-physical address, MSR index, KVM's reason */
	uint64_t time, end; /* CLOCK_MONOTONIC ns */
	uint32_t loc;       /* the exit's own frame, "[exit: io out 0x3f8]"; joined or all_exit_frames only */
	/* The guest's stack: frames[first_frame ...], the guest RIP first; 0 frames unless joined or all_exit_frames */
	uint32_t nr_frames;
	size_t first_frame;
};

struct profile_meta {
	const char *key, *value;
};

struct profile {
	struct profile_event *events;
	size_t nr_events;
	struct profile_image *images;
	size_t nr_images;
	struct profile_func *funcs;
	size_t nr_funcs;
	struct profile_loc *locs;
	size_t nr_locs;
	struct profile_sample *samples;
	size_t nr_samples;
	/*
	 * With profile_options.aggregate: how many recorded samples each of
	 * samples stands for (profile_sample_count); NULL: one each.
	 */
	uint32_t *sample_counts;
	struct profile_exit *exits; /* in recorded order; with exits_joined_only, those kept */
	size_t nr_exits;
	size_t exits_recorded;      /* every VM exit record (nr_exits unless exits_joined_only) */
	uint64_t exit_samples;      /* host samples joined to an exit (cross_layer) */
	uint32_t *frames;
	const char **comms;
	size_t nr_comms;
	struct profile_meta *meta;
	size_t nr_meta;
	uint64_t lost;       /* all events: the larger of the LOST records' sum and END's count */
	uint64_t unresolved; /* samples whose own address has no symbol, all events */
	/* Call chains cut at a user-space caller no mapping covers (garbage frame pointers), and the frames dropped. */
	uint64_t chains_cut, frames_cut;
	uint64_t duration_ns;
	bool has_end;
	struct profile_state *state; /* private */
};

int profile_new(struct profile **out, const struct profile_options *opt);
/* Takes what it needs from one record (nothing points into rec afterwards). 0 or -ENOMEM. */
int profile_add_record(struct profile *p, const struct kp_record *rec);
/*
 * The same for a record that describes the guest, whatever its own domain
 * fields say: a guest's `kvmprof-agent export` (its process maps, comms
 * and kallsyms) read next to a host-side recording.
 */
int profile_add_guest_record(struct profile *p, const struct kp_record *rec);
/* Replays process state and resolves every sample. Call once, after the last record. */
int profile_finish(struct profile *p);
void profile_free(struct profile *p);

/*
 * A live profile (kvmprof top), instead of profile_finish: resolves the
 * samples added since the last call, replaying only the process-state
 * records added since; symbol files and resolved locations are kept, so
 * each call costs what is new. 0 or -ENOMEM. VM exits are dropped.
 */
int profile_update(struct profile *p);
/*
 * Forgets the samples (and their counts), keeping processes, images,
 * functions and locations: the next profile_update's samples are the next
 * window's only.
 */
void profile_drop_samples(struct profile *p);

/*
 * Reads a whole sample file into a finished profile, END included (the
 * recording's duration and lost count), then opt->guest_export_path if
 * set. Reader errors come back as their one-line message in err (and a
 * negative value: -EBADMSG for a damaged file read without opt->recover).
 */
int profile_load(struct profile **out, const char *path, const struct profile_options *opt,
		 char *err, size_t errlen);

/*
 * The samples' indices in time order (equal times in recorded order), in
 * *out (the caller frees it): samples stay in the order the file gave
 * them, which per-CPU buffers interleave. 0 or -ENOMEM.
 */
int profile_time_order(const struct profile *p, uint32_t **out);

/*
 * The index of a command name in comms, added if new (PROFILE_NONE when out
 * of memory): for reports that relabel samples' commands after
 * profile_finish (the host profiler's "[guest] matmul").
 */
uint32_t profile_comm(struct profile *p, const char *name);

/* The recording's META value for key (the last one wins), or NULL. */
const char *profile_meta(const struct profile *p, const char *key);

/* The guest export profile_load read after the recording (profile_options.guest_export_path), or NULL. */
const char *profile_guest_export(const struct profile *p);

/*
 * Whether process pid of domain ever had a memory mapping (an MMAP record,
 * its own or copied at a FORK, in the recording or a guest export): a
 * process without one is named, but its user code has no image to be
 * symbolized in. For a finished profile.
 */
bool profile_process_mapped(const struct profile *p, uint32_t pid, uint8_t domain);

/* What profile_add_pseudo_samples adds: one kind of sample no record gave. */
struct profile_pseudo {
	uint32_t event;     /* index into events */
	uint64_t period;    /* what each one weighs, as a recorded sample's period */
	uint32_t pid;       /* pid and tid */
	uint8_t cpl, domain;
	const char *comm;   /* its command */
	const char *image;  /* its one frame: the pseudo function func of the pseudo image image */
	const char *func;
};

/*
 * n samples that no record gave, added to a finished profile: time the
 * recording counted without knowing where it went (kvmprof report's guest
 * time with no register sample near it). They have time 0, no VM exit and
 * the one frame what says, and count in their event's samples and weight.
 * 0, -EINVAL (not finished, no such event), -EOVERFLOW (past the 2^32
 * samples a profile indexes) or -ENOMEM.
 */
int profile_add_pseudo_samples(struct profile *p, uint64_t n, const struct profile_pseudo *what);

/*
 * An exit as its frame names it: "io out 0x3f8", "mmio write 0xfee000b0",
 * "msr read 0xc1", "hlt", "signal", "kvm debug" (KVM's reason by name where
 * it has one), "kvm reason 26".
 */
void profile_exit_describe(char *buf, size_t len, uint8_t kind, uint64_t detail);

/*
 * For annotate: up to len bytes of an image's code at file address vaddr
 * (a location's rel), and its source lines, from the ELF file its symbols
 * came from (looked up the same way, under the domain's root). The bytes
 * read, or -errno: -ENOENT (no file with symbols: a pseudo image, kernel
 * symbols from kallsyms, a missing file or one whose build-id differs),
 * -ESTALE (the file changed since its symbols were read), -ERANGE (vaddr
 * is in none of its executable segments).
 */
struct symtab_src;
ssize_t profile_image_code(struct profile *p, uint32_t img, uint64_t vaddr, void *buf, size_t len);
/* A function's file address and size (from its ELF symbol), or -ENOENT (not from an ELF file). */
int profile_func_extent(struct profile *p, uint32_t func, uint64_t *start, uint64_t *size);
/* 0 and *out to pass to symtab_src_line and symtab_src_close (symtab.h), or -errno as above. */
int profile_image_src(struct profile *p, uint32_t img, struct symtab_src **out);

/* How many recorded samples samples[i] stands for (profile_options.aggregate). */
static inline uint32_t profile_sample_count(const struct profile *p, size_t i)
{
	return p->sample_counts ? p->sample_counts[i] : 1;
}

/* Whether a function is the image's "[unknown]". */
static inline bool profile_func_known(const struct profile *p, uint32_t func)
{
	return p->funcs[func].name != NULL;
}

#endif
