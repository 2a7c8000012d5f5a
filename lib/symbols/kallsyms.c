/* SPDX-License-Identifier: MIT */
#include "symbols/kallsyms.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/file_open.h"
#include "common/grow.h"

/*
 * The last symbol has no successor to bound it; a sample this far past it
 * is more likely in something kallsyms doesn't list than in that symbol.
 */
#define KALLSYMS_LAST_SPAN 0x10000

/*
 * One symbol, 24 bytes: a kernel has ~10^5 of them and every byte of a
 * report's memory is paid for in page faults. The type letter is kept in
 * the byte before the name; the end is found at lookup.
 */
struct kallsyms_ent {
	uint64_t addr;
	const char *name;   /* name[-1] is the type letter */
	const char *module; /* NULL for the kernel image */
};

struct kallsyms {
	struct kallsyms_ent *all; /* every symbol in text order, for kallsyms_find */
	size_t nr_all, cap_all;
	uint32_t *syms; /* the text symbols' indexes in all, by address once finished */
	size_t nr, cap;
	/*
	 * Names and module names, NUL-separated, in one block per piece of
	 * text added: a block never moves, so names can point into it.
	 */
	char **blocks;
	size_t nr_blocks, cap_blocks;
	const char *module; /* the last line's module: runs of one module share its copy */
	size_t malformed;
	int nonzero; /* some address was not zero */
	int finished;
};

static char ent_type(const struct kallsyms_ent *e)
{
	return e->name[-1];
}

/*
 * Text symbols by address; of one address, by name, then in text order
 * (the order of a stable sort by address and name, which this was).
 */
static int cmp_addr(const void *a, const void *b, void *arg)
{
	const struct kallsyms_ent *all = arg, *x = &all[*(const uint32_t *)a], *y = &all[*(const uint32_t *)b];
	int c;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Same address: keep the order stable by name so lookups are deterministic. */
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* The character at p of a line that ends at end; '\0' past it, as at a NUL in it. */
static char at(const char *p, const char *end)
{
	return p < end ? *p : '\0';
}

/*
 * A hexadecimal address as strtoull(p, end, 16) reads one that starts
 * with a hex digit (an optional 0x); -1 past 64 bits. Hand-rolled: a
 * kernel has ~10^5 symbols and strtoull was a third of their parse.
 */
static int parse_hex(const char *p, const char *end, uint64_t *out, const char **stop)
{
	uint64_t v = 0;
	int digits = 0, d;

	if (at(p, end) == '0' && (at(p + 1, end) == 'x' || at(p + 1, end) == 'X') && hex_digit(at(p + 2, end)) >= 0)
		p += 2;
	while (at(p, end) == '0' && hex_digit(at(p + 1, end)) >= 0)
		p++;
	for (; (d = hex_digit(at(p, end))) >= 0; p++, digits++) {
		if (digits == 16)
			return -1;
		v = v << 4 | (unsigned int)d;
	}
	*out = v;
	*stop = p;
	return 0;
}

struct kallsyms_line {
	uint64_t addr;
	const char *name, *module;
	size_t name_len, module_len; /* module_len 0: the kernel image's */
	char type;
};

/*
 * Reads one line, [p, end) with no newline in it, as "ADDR TYPE NAME
 * [MODULE]"; an embedded NUL cuts it short. 0 if it is such a line.
 */
static int parse_line(const char *p, const char *end, struct kallsyms_line *l)
{
	const char *close;

	if (hex_digit(at(p, end)) < 0 || parse_hex(p, end, &l->addr, &p) || !is_blank(at(p, end)))
		return -1;
	while (is_blank(at(p, end)))
		p++;
	l->type = at(p, end);
	if (!((l->type >= 'a' && l->type <= 'z') || (l->type >= 'A' && l->type <= 'Z')) || !is_blank(at(p + 1, end)))
		return -1;
	p += 2;
	while (is_blank(at(p, end)))
		p++;
	if (!at(p, end))
		return -1;
	for (l->name = p; at(p, end) && !is_blank(*p); p++)
		;
	l->name_len = (size_t)(p - l->name);
	l->module_len = 0;
	while (is_blank(at(p, end)))
		p++;
	if (!at(p, end))
		return 0;
	if (*p != '[')
		return -1;
	/* Whatever follows the closing bracket is not looked at. */
	for (close = ++p; at(close, end) && *close != ']'; close++)
		;
	if (at(close, end) != ']' || close == p)
		return -1;
	l->module = p;
	l->module_len = (size_t)(close - p);
	return 0;
}

struct kallsyms *kallsyms_new(void)
{
	return calloc(1, sizeof(struct kallsyms));
}

/* Keeps one parsed line: its strings go to the block at *out. */
static int keep_line(struct kallsyms *ks, const struct kallsyms_line *l, char **out)
{
	struct kallsyms_ent *e;

	if (grow_array(&ks->all, &ks->cap_all, ks->nr_all + 1, sizeof(*ks->all)))
		return -ENOMEM;
	if (kallsyms_is_text(l->type)) {
		if (ks->nr_all >= UINT32_MAX || grow_array(&ks->syms, &ks->cap, ks->nr + 1, sizeof(*ks->syms)))
			return -ENOMEM;
		ks->syms[ks->nr++] = (uint32_t)ks->nr_all;
	}
	e = &ks->all[ks->nr_all++];
	e->addr = l->addr;
	if (l->addr)
		ks->nonzero = 1;
	*(*out)++ = l->type;
	e->name = *out;
	memcpy(*out, l->name, l->name_len);
	*out += l->name_len;
	*(*out)++ = '\0';
	e->module = NULL;
	if (l->module_len) {
		if (!ks->module || strlen(ks->module) != l->module_len || memcmp(ks->module, l->module, l->module_len)) {
			ks->module = *out;
			memcpy(*out, l->module, l->module_len);
			*out += l->module_len;
			*(*out)++ = '\0';
		}
		e->module = ks->module;
	}
	return 0;
}

int kallsyms_add(struct kallsyms *ks, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	char *block, *out;

	if (!len || ks->finished)
		return 0;
	/*
	 * A line keeps its type, name and module with their NULs in fewer bytes
	 * than it has, so len bytes hold them all; and kallsyms lines are longer
	 * than 32 bytes but for toy ones. What is not written of the block or
	 * the array is never touched, so costs no memory.
	 */
	if (grow_array(&ks->blocks, &ks->cap_blocks, ks->nr_blocks + 1, sizeof(*ks->blocks)) ||
	    grow_array(&ks->all, &ks->cap_all, ks->nr_all + len / 32, sizeof(*ks->all)))
		return -ENOMEM;
	block = out = malloc(len);
	if (!block)
		return -ENOMEM;
	ks->blocks[ks->nr_blocks++] = block;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end;
		struct kallsyms_line l;

		/* Empty lines, and lines an embedded NUL empties, are skipped, not counted. */
		if (p < eol && *p) {
			if (parse_line(p, eol, &l))
				ks->malformed++;
			else if (keep_line(ks, &l, &out))
				return -ENOMEM;
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

/*
 * The text symbols by address. /proc/kallsyms lists them in address order
 * but for some aliases: runs of one address are sorted on their own when
 * the whole is in order, else everything is.
 */
void kallsyms_finish(struct kallsyms *ks)
{
	size_t i, j;

	ks->finished = 1;
	for (i = 1; i < ks->nr; i++)
		if (ks->all[ks->syms[i]].addr < ks->all[ks->syms[i - 1]].addr)
			break;
	if (i < ks->nr) {
		qsort_r(ks->syms, ks->nr, sizeof(*ks->syms), cmp_addr, ks->all);
		return;
	}
	for (i = 0; i < ks->nr; i = j) {
		for (j = i + 1; j < ks->nr && ks->all[ks->syms[j]].addr == ks->all[ks->syms[i]].addr; j++)
			;
		if (j - i > 1)
			qsort_r(ks->syms + i, j - i, sizeof(*ks->syms), cmp_addr, ks->all);
	}
}

int kallsyms_parse(struct kallsyms **out, const char *text, size_t len)
{
	struct kallsyms *ks = kallsyms_new();

	if (!ks || kallsyms_add(ks, text, len)) {
		kallsyms_free(ks);
		return -ENOMEM;
	}
	kallsyms_finish(ks);
	*out = ks;
	return 0;
}

int kallsyms_load(struct kallsyms **out, const char *path)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int fd = file_open_regular(path); /* /proc/kallsyms is regular too */
	int rc;

	if (fd < 0)
		return fd;
	/* /proc/kallsyms reports size 0, so read until EOF instead of trusting stat. */
	for (;;) {
		ssize_t n;

		if (grow_array(&buf, &cap, len + 65536, 1)) {
			rc = -ENOMEM;
			goto out;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	rc = kallsyms_parse(out, buf, len);
out:
	free(buf);
	close(fd);
	return rc;
}

/* The first of syms[lo, hi) whose address is above addr (upper) or not below it (!upper). */
static size_t bound(const struct kallsyms *ks, uint64_t addr, int upper)
{
	size_t lo = 0, hi = ks->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t a = ks->all[ks->syms[mid]].addr;

		if (upper ? a <= addr : a < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Each text symbol ends where the next distinct address begins (aliases
 * share an address and an end); the last, KALLSYMS_LAST_SPAN past it.
 */
static uint64_t text_end(const struct kallsyms *ks, uint64_t addr)
{
	size_t next = bound(ks, addr, 1);

	if (next < ks->nr)
		return ks->all[ks->syms[next]].addr;
	return addr > UINT64_MAX - KALLSYMS_LAST_SPAN ? UINT64_MAX : addr + KALLSYMS_LAST_SPAN;
}

static void fill(const struct kallsyms *ks, const struct kallsyms_ent *e, struct kallsyms_sym *out)
{
	*out = (struct kallsyms_sym){
		.addr = e->addr, .end = e->addr, .name = e->name, .module = e->module, .type = ent_type(e),
	};
	/* With every address zero, lookups find nothing and the symbols keep end = addr. */
	if (kallsyms_is_text(out->type) && ks->nonzero)
		out->end = text_end(ks, e->addr);
}

int kallsyms_lookup(const struct kallsyms *ks, uint64_t addr, struct kallsyms_sym *out)
{
	size_t i;

	if (!ks->nonzero || !ks->finished)
		return 0;
	/* The last symbol whose address is <= addr; of aliases at it, the first (sorted by name). */
	i = bound(ks, addr, 1);
	if (!i)
		return 0;
	i = bound(ks, ks->all[ks->syms[i - 1]].addr, 0);
	fill(ks, &ks->all[ks->syms[i]], out);
	/* An end saturated at the top of the address space includes the last byte. */
	return addr < out->end || out->end == UINT64_MAX;
}

int kallsyms_find(const struct kallsyms *ks, const char *name, enum kallsyms_scope scope, struct kallsyms_sym *out)
{
	const struct kallsyms_ent *in_module = NULL;

	for (size_t i = 0; i < ks->nr_all; i++) {
		const struct kallsyms_ent *e = &ks->all[i];

		if (strcmp(e->name, name) != 0)
			continue;
		if (!e->module) {
			fill(ks, e, out);
			return 1;
		}
		if (!in_module)
			in_module = e;
	}
	if (scope != KALLSYMS_IMAGE_OR_MODULE || !in_module)
		return 0;
	fill(ks, in_module, out);
	return 1;
}

int kallsyms_is_text(char type)
{
	return type == 'T' || type == 't' || type == 'W' || type == 'w';
}

size_t kallsyms_count(const struct kallsyms *ks)
{
	return ks->nr;
}

size_t kallsyms_malformed(const struct kallsyms *ks)
{
	return ks->malformed;
}

int kallsyms_hidden(const struct kallsyms *ks)
{
	return ks->nr && !ks->nonzero;
}

void kallsyms_free(struct kallsyms *ks)
{
	if (!ks)
		return;
	for (size_t i = 0; i < ks->nr_blocks; i++)
		free(ks->blocks[i]);
	free(ks->blocks);
	free(ks->syms);
	free(ks->all);
	free(ks);
}
