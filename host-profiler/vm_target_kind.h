/* SPDX-License-Identifier: MIT */
#ifndef HOST_VM_TARGET_KIND_H
#define HOST_VM_TARGET_KIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct host_record_opts;
struct option;
struct vm_target;

/*
 * A kind of VM kvmprof can profile, chosen on the command line by its own
 * option: one row in vm_target_kinds (vm_targets.c) and a file with its
 * struct vm_target_ops and its open. record, top and stat take every row's
 * option; what they say of the choice comes from the rows.
 */
struct vm_target_kind {
	const char *option; /* "vm": --vm ARG */
	int val;            /* its getopt value: a short option's letter ('v'), or a number above 0xff */
	const char *arg;    /* "SOCKET" */
	const char *about;  /* "kvmprof-vmm --control SOCKET", for messages */
	const char *help;   /* its line in record's, top's and stat's --help */
	bool libvirt;       /* a libvirt domain: --connect (and record's --guest-hz, --guest-kernel) apply */
	/* Opens it (o: record's options, NULL for stat): 0, or 1 after a one-line message. */
	int (*open)(struct vm_target *t, const char *arg, const char *connect, const struct host_record_opts *o);
};

extern const struct vm_target_kind vm_target_kinds[]; /* ends with a row whose option is NULL */

/* The VM a command was given. */
struct vm_target_choice {
	const struct vm_target_kind *kind; /* NULL: none */
	const char *arg;
	unsigned int given;                /* how many target options were given (more than one: a usage error) */
};

/*
 * A command that takes a VM: into longopts (room for CLI_OWN_LONGOPTS_MAX
 * + 1), its own nown options, then a getopt_long row per target, then the
 * zero row; into usage, head, every target's option joined by " | ", and
 * tail.
 */
void vm_target_command(struct option *longopts, const struct option *own, size_t nown, char *usage, size_t size,
		       const char *head, const char *tail);
/* --help's list of the targets (record_cli's and stat_cli's help_more). */
void vm_target_help(FILE *out);
/* opt from getopt: true if it is a target's option (then chosen, with arg). */
bool vm_target_option(struct vm_target_choice *c, int opt, const char *arg);
/* Every target's option for a message, the last after " or " (or before " or " + last when last is not NULL). */
void vm_target_choices(char *buf, size_t size, const char *last);
/* The row whose option is name, or NULL. */
const struct vm_target_kind *vm_target_kind_of(const char *name);
/* Opens the chosen target (see vm_target_kind.open). */
int vm_target_open(struct vm_target *t, const struct vm_target_choice *c, const char *connect,
		   const struct host_record_opts *o);

#endif
