/* SPDX-License-Identifier: MIT */
/*
 * Kernel symbols from /proc/kallsyms text ("ADDR TYPE NAME [MODULE]" lines),
 * as captured at record time (KSYMS records) or given with --kallsyms.
 */
#ifndef KVMPROF_KALLSYMS_H
#define KVMPROF_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

struct kallsyms_sym {
	uint64_t addr;
	uint64_t end;       /* next symbol's address: kallsyms carries no sizes */
	const char *name;
	const char *module; /* "ext4" for "[ext4]", NULL for the kernel image */
};

struct kallsyms;

/*
 * Parses kallsyms text (need not be NUL-terminated). Text symbols only
 * (types t, T, w, W); lines that don't parse are counted, not fatal.
 * 0 or -ENOMEM.
 */
int kallsyms_parse(struct kallsyms **out, const char *text, size_t len);
/* Reads and parses a file. 0 or -errno. */
int kallsyms_load(struct kallsyms **out, const char *path);
/* The symbol covering addr, or NULL. */
const struct kallsyms_sym *kallsyms_lookup(const struct kallsyms *ks, uint64_t addr);
size_t kallsyms_count(const struct kallsyms *ks);
/* Lines that were not "hex-address type name [module]". */
size_t kallsyms_malformed(const struct kallsyms *ks);
/* Whether every address was zero (kptr_restrict hid them). */
int kallsyms_hidden(const struct kallsyms *ks);
void kallsyms_free(struct kallsyms *ks);

#endif
