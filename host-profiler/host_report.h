/* SPDX-License-Identifier: MIT */
/* `kvmprof report`: a system-wide profile by domain (guest user, guest kernel, VMM user, host kernel). */
#ifndef HOST_REPORT_H
#define HOST_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"
#include "cli/report_cli.h"
#include "report/report.h"
#include "report/report_table.h"

enum host_layer {
	HOST_LAYER_GUEST_USER,
	HOST_LAYER_GUEST_KERNEL,
	HOST_LAYER_GUEST_UNKNOWN, /* guest time with no register sample near it (host_report_add_unsampled) */
	HOST_LAYER_VMM_USER,
	HOST_LAYER_HOST_KERNEL,
	HOST_LAYER_COUNT,
};

/*
 * The privilege level of the samples host_report_add_unsampled adds: guest
 * time whose mode nobody saw (no record says KP_CPL_KERNEL or KP_CPL_USER
 * for it). Their layer is HOST_LAYER_GUEST_UNKNOWN.
 */
#define HOST_CPL_UNKNOWN 0xff

/* The one domain a sample is in: guest or native (the VMM's threads), by its privilege level. */
enum host_layer host_layer_of(const struct profile_sample *s);

/*
 * A libvirt recording's guest time with no register sample near it (META
 * guest_time_unattributed) as samples of their own: command "[not sampled]"
 * (tagged "[guest] [not sampled]"), pid 0, layer HOST_LAYER_GUEST_UNKNOWN,
 * one frame "[not sampled]", so that the table's shares, the folded
 * stacks' and pprof's totals are of all the guest's time. Call once, after
 * profile_load. 0 (also when there is nothing to add, or a count the
 * recording contradicts: said on stderr, nothing added) or -errno.
 */
int host_report_add_unsampled(struct profile *p);

/*
 * Under the table, with a guest export: the guest processes whose user
 * samples no memory map covers (the export holds the maps of the processes
 * running when it was taken), by name with their samples, and the remedy.
 */
void host_report_unmapped_note(FILE *out, const struct profile *p);

/* kvmprof report's --sort keys: perf's, and the guest process. */
#define HOST_REPORT_KEYS (REPORT_KEYS_COMMON | REPORT_KEY_BIT(REPORT_KEY_PROCESS))

/*
 * The table kvmprof report prints by default, and kvmprof top refreshes:
 * --sort domain,process,sym, the domain key being the sample's layer.
 * Options not set here (filters, --percent-limit) are left as they are.
 */
void host_report_table_defaults(struct report_table_options *o);

/* What a frame's function is, by its image: "guest user", "guest kernel", "VM exit", "VMM user", "host kernel". */
const char *host_frame_layer(const struct profile *p, uint32_t func);

/*
 * --drill: the CrossWalk walk down the cross-layer stacks from the whole
 * recording, or from the guest process or function `start`, following the
 * heaviest child while it holds at least threshold% of the start, to the
 * frame whose self time is the bottleneck. 0, -ECANCELED (no sample to
 * start from: it said why on stderr), or -errno.
 */
int host_report_drill(FILE *out, struct profile *p, const char *start, double threshold);

/* --exits: VM exits by guest function and by guest process, with their host time. 0 or -errno. */
int host_report_exits(FILE *out, const struct profile *p);

/*
 * The lines above the text table: what was recorded, how guest time was
 * told apart, the samples by domain and what each domain is, and what the
 * guest profiling itself cost (input: the recording's name; by_layer: the
 * samples of each host_layer_of, counted by the caller's pass through them).
 */
void host_report_header(FILE *out, const struct profile *p, const char *input,
			const uint64_t by_layer[HOST_LAYER_COUNT]);
/* The "guest samples: ..." line for a recording's META guest_sampling (NULL: not recorded by kvmprof record). */
void host_report_guest_sampling(FILE *out, const char *status);

/* The text table of one recording (input: its name for the header), as opt says. 0 or -errno. */
int host_report_text(FILE *out, struct profile *p, const char *input, const struct report_options *opt);

/*
 * An --all-domains recording (a directory of NAME.data files): host CPU
 * and samples per domain, then each domain's table. 0, -ECANCELED (said
 * why: nothing to report), or -errno.
 */
int host_report_domains(FILE *out, const char *dir, const struct profile_options *popt,
			const struct report_options *opt);

/* argv[0] is "report". Returns the exit status. */
int host_report_main(int argc, char **argv);
/* `kvmprof annotate`: one function's instructions with their samples; argv[0] is "annotate". */
int host_annotate_main(int argc, char **argv);

/*
 * The report's own options, which `kvmprof script` shares where it has
 * them (--guest-kernel, --guest-kallsyms, --guest-export,
 * --no-cross-layer): their values, and their handlers for struct report_cli.
 */
struct host_report_args {
	const char *guest_kernel, *guest_kallsyms, *guest_export;
	struct report_options opt; /* the table: --sort, filters, --percent-limit, -g */
	bool drill, exits, no_cross_layer;
	const char *drill_start;
	double drill_threshold;
	int argc; /* for --drill's optional START as the next word */
	char **argv;
};
int host_report_option(int c, const char *arg, void *ctx);
void host_report_profile_options(const struct report_cli_args *a, struct profile_options *popt, void *ctx);

/* argv[0] is "script": the samples one by one, like perf script, each in its domain. Returns the exit status. */
int host_script_main(int argc, char **argv);

#endif
