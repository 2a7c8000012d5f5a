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
	/*
	 * Text symbols: the next text symbol's address (kallsyms carries no
	 * sizes). Other symbols: addr (they are found by name, never by address).
	 */
	uint64_t end;
	const char *name;
	const char *module; /* "ext4" for "[ext4]", NULL for the kernel image */
	char type;          /* nm's letter: T, t, W, w are text */
};

/* Where kallsyms_find looks for a name. */
enum kallsyms_scope {
	KALLSYMS_IMAGE,             /* the kernel image only, not its modules */
	KALLSYMS_IMAGE_OR_MODULE,   /* the image's symbol, else the first module's */
};

struct kallsyms;

/*
 * Parses kallsyms text (need not be NUL-terminated). Every symbol is kept
 * for kallsyms_find; address lookups see text symbols only (types t, T, w,
 * W). Lines that don't parse are counted, not fatal. 0 or -ENOMEM.
 */
int kallsyms_parse(struct kallsyms **out, const char *text, size_t len);
/*
 * The same without a copy: text is malloc'd with room for len + 1 bytes
 * and becomes the symbols' (their names point into it), freed with them,
 * or at once on failure. A kernel's kallsyms is ~5 MB.
 */
int kallsyms_parse_owned(struct kallsyms **out, char *text, size_t len);
/* Reads and parses a file. 0 or -errno. */
int kallsyms_load(struct kallsyms **out, const char *path);
/* The text symbol covering addr, or NULL. */
const struct kallsyms_sym *kallsyms_lookup(const struct kallsyms *ks, uint64_t addr);
/*
 * The symbol called name, of any type (per-CPU variables and arrays too),
 * within scope; of several with one name, the first in the text. NULL if
 * there is none.
 */
const struct kallsyms_sym *kallsyms_find(const struct kallsyms *ks, const char *name, enum kallsyms_scope scope);
/* Whether an nm type letter is a text (code) symbol's. */
int kallsyms_is_text(char type);
/* Text symbols, the ones kallsyms_lookup sees. */
size_t kallsyms_count(const struct kallsyms *ks);
/* Lines that were not "hex-address type name [module]". */
size_t kallsyms_malformed(const struct kallsyms *ks);
/* Whether every address was zero (kptr_restrict hid them). */
int kallsyms_hidden(const struct kallsyms *ks);
void kallsyms_free(struct kallsyms *ks);

#endif
