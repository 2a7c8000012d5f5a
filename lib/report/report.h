/* SPDX-License-Identifier: MIT */
/*
 * Renderers of a finished profile (profile.h): an opreport-style table with
 * optional caller chains, folded stacks for flame graphs, pprof's gzipped
 * protobuf, an SVG flame graph, and perf script's sample-by-sample lines.
 * Each returns 0 or -errno (-EIO when writing failed).
 */
#ifndef KVMPROF_REPORT_H
#define KVMPROF_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/keymap.h"
#include "profile/profile.h"
#include "report/report_table.h"

struct report_options {
	/* --sort keys, filters, --percent-limit (report_table.h); per_event is set by report_text. */
	struct report_table_options table;
	bool callgraph;         /* caller chains under the top rows */
	unsigned callgraph_rows; /* how many rows get them; 0: 10 */
	unsigned callgraph_chains; /* chains shown per row; 0: 5 */
};

/*
 * The table per event: its header line ("Event cycles (period ...): N
 * samples"), the filter's line when one is active, the rows, the
 * unresolved share, then with callgraph the top rows' caller chains.
 */
int report_text(FILE *out, const struct profile *p, const struct report_options *opt);
/*
 * "comm;image`outer;...;image`inner count" lines, sorted, for the event at
 * index `event` (report_folded_event picks the first one with samples).
 */
int report_folded(FILE *out, const struct profile *p, uint32_t event);
uint32_t report_folded_event(const struct profile *p);
/* What the host profiler adds to pprof's labels; NULL for none. */
struct report_pprof_options {
	const char *domain; /* a "domain" label on every sample: the VM (a libvirt domain's name); NULL: none */
	/*
	 * A sample's "layer" ("guest user", "VMM user", ...) and "guest_process"
	 * labels (NULL or "": none); samples of one (pid, command, domain,
	 * privilege level) share them.
	 */
	void (*labels)(const struct profile *p, const struct profile_sample *s, void *ctx, const char **layer,
		       const char **guest_process);
	void *ctx;
};

/* The whole profile as gzipped pprof protobuf; opt may be NULL. */
int report_pprof(FILE *out, const struct profile *p, const struct report_pprof_options *opt);

/*
 * `script` (lib/report/report_script.c): one sample after another in time order,
 * in perf script's default layout, with its stack when the recording has
 * call chains, unless hide_callchain (-G).
 */
struct report_script_options {
	bool hide_callchain;
	/* A sample's domain, one word ("guest-user"); NULL: "user" or "kernel" by privilege level. */
	const char *(*domain)(const struct profile *p, const struct profile_sample *s, void *ctx);
	void *ctx;
};

/* opt may be NULL. */
int report_script(FILE *out, const struct profile *p, const struct report_script_options *opt);

/*
 * What a frame is, for the flame graph's colours: a function of the
 * frame's image today (kernel or user); a profiler that knows more layers
 * (guest user, guest kernel, VMM, host kernel) adds kinds here, a colour
 * row for each in report_svg.c, and classifies frames through
 * report_svg_options.kind.
 */
enum report_kind {
	REPORT_KIND_ROOT,    /* "all" (grey) */
	REPORT_KIND_PROCESS, /* a command, the level above "all" (muted violet) */
	REPORT_KIND_USER,    /* a function of a user-space image (warm: red to orange) */
	REPORT_KIND_KERNEL,  /* a function of the kernel or a module (cool: cyan to blue) */
	REPORT_KIND_UNKNOWN, /* an address no recorded mapping covers (light grey) */
	/* The host profiler's four layers (kvmprof report). */
	REPORT_KIND_GUEST_USER,   /* guest user code (greens) */
	REPORT_KIND_GUEST_KERNEL, /* the guest's kernel (teal) */
	REPORT_KIND_VMM,          /* the VMM's own user code on the host (warm: red to orange) */
	REPORT_KIND_HOST_KERNEL,  /* the host kernel (blue) */
	REPORT_KIND_VM_EXIT,      /* a VM exit, between the guest's frames and the host's (yellow) */
	REPORT_KIND_COUNT,
};

/* The kind of a function by its image: kernel, unknown ("[unknown]") or user. */
enum report_kind report_frame_kind(const struct profile *p, uint32_t func);

struct report_svg_options {
	const char *title; /* before ": EVENT, N samples"; NULL: "Flame graph" */
	unsigned width;    /* pixels; 0: 1200 */
	/* A frame's kind; NULL: report_frame_kind. Values out of range show as unknown. */
	enum report_kind (*kind)(const struct profile *p, uint32_t func, void *ctx);
	void *kind_ctx;
};

/*
 * An SVG flame graph of the event at index `event`, from the same stacks
 * as report_folded: "all" at the bottom, then the commands, then frames
 * outermost first; widths in proportion to samples; a tooltip per frame
 * ("symbol (image): N samples, x%"); click to zoom. opt may be NULL.
 */
int report_svg(FILE *out, const struct profile *p, uint32_t event, const struct report_svg_options *opt);

struct report_annotate_options {
	const char *prog;   /* what messages start with: "kvmprof-agent annotate" */
	const char *symbol; /* the function to annotate; NULL: the one with the most samples */
	const char *dso;    /* only functions of this image (its name or recorded path); NULL: any */
	uint32_t event;     /* samples of this event only; PROFILE_NONE: every sample */
	bool intel;         /* Intel syntax; AT&T (perf's default) otherwise */
};

/*
 * annotate, as perf annotate --stdio: the function's instructions from its
 * ELF file, each with the share and count of the function's samples whose
 * own address is that instruction, the source file:line above each run of
 * instructions from one line where debug info has it, and the samples that
 * fell inside an instruction or outside the code said below. A function
 * that can't be found or shown: one line on stderr and -ECANCELED.
 */
int report_annotate(FILE *out, struct profile *p, const struct report_annotate_options *opt);

/*
 * A function as folded stacks print it, "image`symbol" ("[exit: ...]" for
 * a VM exit's frame), with the
 * characters that would break the line format (';', spaces, control
 * characters: names come from a possibly hostile guest) replaced by '_'.
 */
void report_frame(char *buf, size_t len, const struct profile *p, uint32_t func);
/* A function's symbol name, "[unknown]" for the image's unresolved addresses. */
const char *report_func_name(const struct profile *p, uint32_t func);

/*
 * Counting distinct id sequences (stacks) under a group key: what the
 * renderers aggregate samples by.
 */
struct report_stack {
	uint32_t group;
	uint32_t nr;  /* ids[first .. first + nr) */
	size_t first;
	uint64_t count, weight;
};

struct report_stacks {
	struct report_stack *stacks;
	size_t nr, cap;
	uint32_t *ids;
	size_t nr_ids, ids_cap;
	struct keymap index;
};

int report_stacks_add(struct report_stacks *rs, uint32_t group, const uint32_t *ids, uint32_t nr,
		      uint64_t weight);
void report_stacks_free(struct report_stacks *rs);

#endif
