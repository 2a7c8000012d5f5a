/* SPDX-License-Identifier: MIT */
/*
 * Kernel symbols from /proc/kallsyms text ("ADDR TYPE NAME [MODULE]" lines),
 * as captured at record time (KSYMS records) or given with --kallsyms.
 */
#ifndef KVMPROF_KALLSYMS_H
#define KVMPROF_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

/* A symbol as lookups hand it out. */
struct kallsyms_sym {
	uint64_t addr;
	/*
	 * Text symbols: the next text symbol's address (kallsyms carries no
	 * sizes). Other symbols: addr (they are found by name, never by address).
	 */
	uint64_t end;
	const char *name;   /* lives as long as the kallsyms; one pointer per symbol */
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
 * Built from pieces of text as they come (a recording's KSYMS chunks):
 * kallsyms_new, kallsyms_add for each piece, then kallsyms_finish before
 * any lookup. A piece is whole lines; its end ends a line. Every symbol is
 * kept for kallsyms_find; address lookups see text symbols only (types t,
 * T, w, W). Lines that don't parse are counted, not fatal. Only names are
 * copied: the text may go once added (a kernel's kallsyms is ~5 MB, its
 * names ~3).
 */
struct kallsyms *kallsyms_new(void); /* NULL without memory */
int kallsyms_add(struct kallsyms *ks, const char *text, size_t len); /* 0 or -ENOMEM; ignored once finished */
void kallsyms_finish(struct kallsyms *ks);
/* The three at once, for text in one piece (need not be NUL-terminated). 0 or -ENOMEM. */
int kallsyms_parse(struct kallsyms **out, const char *text, size_t len);
/* Reads and parses a file. 0 or -errno. */
int kallsyms_load(struct kallsyms **out, const char *path);
/* The text symbol covering addr into *out: 1, or 0 if there is none. */
int kallsyms_lookup(const struct kallsyms *ks, uint64_t addr, struct kallsyms_sym *out);
/*
 * The symbol called name, of any type (per-CPU variables and arrays too),
 * within scope, into *out: 1, or 0 if there is none. Of several with one
 * name, the first in the text.
 */
int kallsyms_find(const struct kallsyms *ks, const char *name, enum kallsyms_scope scope, struct kallsyms_sym *out);
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
