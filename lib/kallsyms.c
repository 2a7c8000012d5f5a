/* SPDX-License-Identifier: MIT */
#include "kallsyms.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file_open.h"
#include "grow.h"

/*
 * The last symbol has no successor to bound it; a sample this far past it
 * is more likely in something kallsyms doesn't list than in that symbol.
 */
#define KALLSYMS_LAST_SPAN 0x10000

struct kallsyms {
	struct kallsyms_sym *all; /* every symbol in text order, for kallsyms_find */
	size_t nr_all;
	uint32_t *syms; /* the text symbols' indexes in all, by address, for kallsyms_lookup */
	size_t nr;
	char *strings; /* names and module names, NUL-separated */
	size_t malformed;
	int nonzero;   /* some address was not zero */
};

/*
 * Text symbols by address; of one address, by name, then in text order
 * (the order of a stable sort by address and name, which this was).
 */
static int cmp_addr(const void *a, const void *b, void *arg)
{
	const struct kallsyms_sym *all = arg, *x = &all[*(const uint32_t *)a], *y = &all[*(const uint32_t *)b];
	int c;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Same address: keep the order stable by name so lookups are deterministic. */
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/*
 * A hexadecimal address as strtoull(p, end, 16) reads one that starts
 * with a hex digit (an optional 0x); -1 past 64 bits. Hand-rolled: a
 * kernel has ~10^5 symbols and strtoull was a third of their parse.
 */
static int parse_hex(const char *p, uint64_t *out, const char **end)
{
	uint64_t v = 0;
	int digits = 0;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && isxdigit((unsigned char)p[2]))
		p += 2;
	while (*p == '0' && isxdigit((unsigned char)p[1]))
		p++;
	for (;; p++, digits++) {
		unsigned int d;

		if (*p >= '0' && *p <= '9')
			d = (unsigned int)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			d = (unsigned int)(*p - 'a' + 10);
		else if (*p >= 'A' && *p <= 'F')
			d = (unsigned int)(*p - 'A' + 10);
		else
			break;
		if (digits == 16)
			return -1;
		v = v << 4 | d;
	}
	*out = v;
	*end = p;
	return 0;
}

/* Splits one line into its fields in place; 0 if it is a kallsyms line. */
static int parse_line(char *line, uint64_t *addr, char *type, char **name, char **module)
{
	char *p = line;
	const char *end;
	uint64_t v;

	if (!isxdigit((unsigned char)*p))
		return -1;
	if (parse_hex(p, &v, &end) || (*end != ' ' && *end != '\t'))
		return -1;
	p = line + (end - line);
	while (*p == ' ' || *p == '\t')
		p++;
	if (!isalpha((unsigned char)*p) || (p[1] != ' ' && p[1] != '\t'))
		return -1;
	*type = *p;
	p += 2;
	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p)
		return -1;
	*name = p;
	while (*p && *p != ' ' && *p != '\t')
		p++;
	*module = NULL;
	if (*p) {
		*p++ = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '[') {
			char *close = strchr(p, ']');

			if (!close || close == p + 1)
				return -1;
			*close = '\0';
			*module = p + 1;
		} else if (*p) {
			return -1;
		}
	}
	*addr = v;
	return 0;
}

/*
 * The text symbols by address. /proc/kallsyms lists them in address order
 * but for some aliases: runs of one address are sorted on their own when
 * the whole is in order, else everything is.
 */
static void sort_syms(struct kallsyms *ks)
{
	size_t i, j;

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
	char *copy = malloc(len + 1);

	if (!copy)
		return -ENOMEM;
	memcpy(copy, text, len);
	return kallsyms_parse_owned(out, copy, len);
}

int kallsyms_parse_owned(struct kallsyms **out, char *text, size_t len)
{
	struct kallsyms *ks = calloc(1, sizeof(*ks));
	size_t i, lines = 1;
	char *p, *end;

	if (!ks) {
		free(text);
		return -ENOMEM;
	}
	/* The text becomes the string storage: names point into it. */
	ks->strings = text;
	ks->strings[len] = '\0';
	/* Room for a symbol a line, counted first: no array grows. */
	for (p = ks->strings, end = p + len; p < end && (p = memchr(p, '\n', (size_t)(end - p))); p++)
		lines++;
	if (lines > UINT32_MAX) {
		kallsyms_free(ks);
		return -ENOMEM;
	}
	ks->all = malloc(lines * sizeof(*ks->all));
	ks->syms = malloc(lines * sizeof(*ks->syms));
	if (!ks->all || !ks->syms) {
		kallsyms_free(ks);
		return -ENOMEM;
	}

	for (p = ks->strings, end = p + len; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *line = p, *name, *module;
		uint64_t addr;
		char type;

		if (nl)
			*nl = '\0';
		p = nl ? nl + 1 : end;
		if (!*line)
			continue;
		/* An embedded NUL cuts the line short; the parse below sees what precedes it. */
		if (parse_line(line, &addr, &type, &name, &module)) {
			ks->malformed++;
			continue;
		}
		if (addr)
			ks->nonzero = 1;
		ks->all[ks->nr_all] = (struct kallsyms_sym){
			.addr = addr, .end = addr, .name = name, .module = module, .type = type
		};
		if (kallsyms_is_text(type))
			ks->syms[ks->nr++] = (uint32_t)ks->nr_all;
		ks->nr_all++;
	}
	sort_syms(ks);
	/*
	 * Each text symbol ends where the next distinct address begins (aliases
	 * share an address and an end). With every address zero, lookups find
	 * nothing and the symbols keep end = addr.
	 */
	for (i = 0; ks->nonzero && i < ks->nr;) {
		uint64_t a = ks->all[ks->syms[i]].addr, e;
		size_t j = i + 1;

		while (j < ks->nr && ks->all[ks->syms[j]].addr == a)
			j++;
		if (j < ks->nr)
			e = ks->all[ks->syms[j]].addr;
		else
			e = a > UINT64_MAX - KALLSYMS_LAST_SPAN ? UINT64_MAX : a + KALLSYMS_LAST_SPAN;
		for (; i < j; i++)
			ks->all[ks->syms[i]].end = e;
	}
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
	if (grow_array(&buf, &cap, len + 1, 1)) {
		rc = -ENOMEM;
		goto out;
	}
	close(fd);
	return kallsyms_parse_owned(out, buf, len);
out:
	free(buf);
	close(fd);
	return rc;
}

const struct kallsyms_sym *kallsyms_lookup(const struct kallsyms *ks, uint64_t addr)
{
	size_t lo = 0, hi = ks->nr;
	const struct kallsyms_sym *s;

	if (!ks->nonzero)
		return NULL;
	/* The last symbol whose address is <= addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->all[ks->syms[mid]].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	lo--;
	/* Of aliases at one address, report the first (sorted by name). */
	while (lo && ks->all[ks->syms[lo - 1]].addr == ks->all[ks->syms[lo]].addr)
		lo--;
	s = &ks->all[ks->syms[lo]];
	/* An end saturated at the top of the address space includes the last byte. */
	return addr < s->end || s->end == UINT64_MAX ? s : NULL;
}

const struct kallsyms_sym *kallsyms_find(const struct kallsyms *ks, const char *name, enum kallsyms_scope scope)
{
	const struct kallsyms_sym *in_module = NULL;

	for (size_t i = 0; i < ks->nr_all; i++) {
		const struct kallsyms_sym *s = &ks->all[i];

		if (strcmp(s->name, name) != 0)
			continue;
		if (!s->module)
			return s;
		if (!in_module)
			in_module = s;
	}
	return scope == KALLSYMS_IMAGE_OR_MODULE ? in_module : NULL;
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
	free(ks->syms);
	free(ks->all);
	free(ks->strings);
	free(ks);
}
