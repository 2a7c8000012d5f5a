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
	struct kallsyms_sym *syms; /* text symbols by address, for kallsyms_lookup */
	size_t nr, cap;
	struct kallsyms_sym *all;  /* every symbol in text order, for kallsyms_find */
	size_t nr_all, cap_all;
	char *strings; /* names and module names, NUL-separated */
	size_t malformed;
	int nonzero;   /* some address was not zero */
};

static int cmp_addr(const void *a, const void *b)
{
	const struct kallsyms_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Same address: keep the order stable by name so lookups are deterministic. */
	return strcmp(x->name, y->name);
}

/* Splits one line into its fields in place; 0 if it is a kallsyms line. */
static int parse_line(char *line, uint64_t *addr, char *type, char **name, char **module)
{
	char *p = line, *end;
	unsigned long long v;

	if (!isxdigit((unsigned char)*p))
		return -1;
	errno = 0;
	v = strtoull(p, &end, 16);
	if (errno || end == p || (*end != ' ' && *end != '\t'))
		return -1;
	p = end;
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

int kallsyms_parse(struct kallsyms **out, const char *text, size_t len)
{
	struct kallsyms *ks = calloc(1, sizeof(*ks));
	char *p, *end;
	size_t i;

	if (!ks)
		return -ENOMEM;
	/* One copy of the text becomes the string storage: names point into it. */
	ks->strings = malloc(len + 1);
	if (!ks->strings) {
		free(ks);
		return -ENOMEM;
	}
	memcpy(ks->strings, text, len);
	ks->strings[len] = '\0';

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
		if (grow_array(&ks->all, &ks->cap_all, ks->nr_all + 1, sizeof(*ks->all))) {
			kallsyms_free(ks);
			return -ENOMEM;
		}
		ks->all[ks->nr_all++] = (struct kallsyms_sym){
			.addr = addr, .end = addr, .name = name, .module = module, .type = type
		};
		if (!kallsyms_is_text(type))
			continue;
		if (grow_array(&ks->syms, &ks->cap, ks->nr + 1, sizeof(*ks->syms))) {
			kallsyms_free(ks);
			return -ENOMEM;
		}
		ks->syms[ks->nr++] = ks->all[ks->nr_all - 1];
	}
	if (ks->nr > 1)
		qsort(ks->syms, ks->nr, sizeof(*ks->syms), cmp_addr);
	for (i = 0; i < ks->nr; i++) {
		uint64_t a = ks->syms[i].addr;
		size_t j = i + 1;

		/* Aliases share an address: bound each by the next distinct one. */
		while (j < ks->nr && ks->syms[j].addr == a)
			j++;
		if (j < ks->nr)
			ks->syms[i].end = ks->syms[j].addr;
		else
			ks->syms[i].end = a > UINT64_MAX - KALLSYMS_LAST_SPAN ? UINT64_MAX : a + KALLSYMS_LAST_SPAN;
	}
	/* A text symbol found by name is bounded as one found by address. */
	for (i = 0; i < ks->nr_all; i++) {
		const struct kallsyms_sym *s;

		if (!kallsyms_is_text(ks->all[i].type))
			continue;
		s = kallsyms_lookup(ks, ks->all[i].addr);
		if (s)
			ks->all[i].end = s->end;
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
	rc = kallsyms_parse(out, buf ? buf : "", len);
out:
	free(buf);
	close(fd);
	return rc;
}

const struct kallsyms_sym *kallsyms_lookup(const struct kallsyms *ks, uint64_t addr)
{
	size_t lo = 0, hi = ks->nr;

	if (!ks->nonzero)
		return NULL;
	/* The last symbol whose address is <= addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	lo--;
	/* Of aliases at one address, report the first (sorted by name). */
	while (lo && ks->syms[lo - 1].addr == ks->syms[lo].addr)
		lo--;
	/* An end saturated at the top of the address space includes the last byte. */
	return addr < ks->syms[lo].end || ks->syms[lo].end == UINT64_MAX ? &ks->syms[lo] : NULL;
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
