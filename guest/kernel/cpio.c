/* SPDX-License-Identifier: MIT */
#include "cpio.h"

#define S_IFMT 0170000u
#define S_IFREG 0100000u

/* Offsets of the 8-hex-digit fields used, after the 6-byte magic. */
#define F_MODE 14
#define F_FILESIZE 54
#define F_NAMESIZE 94

static int hex8(const unsigned char *p, uint32_t *out)
{
	uint32_t v = 0;
	for (int i = 0; i < 8; i++) {
		unsigned c = p[i], d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		v = (v << 4) | d;
	}
	*out = v;
	return 0;
}

static size_t pad4(size_t n)
{
	return (4 - (n & 3)) & 3;
}

int cpio_next(const void *archive, size_t len, size_t *offset, struct cpio_entry *e)
{
	const unsigned char *a = archive;
	size_t off = *offset;
	uint32_t mode, filesize, namesize;

	if (off > len || len - off < CPIO_HEADER_SIZE)
		return CPIO_ETRUNC;
	const unsigned char *h = a + off;
	if (h[0] != '0' || h[1] != '7' || h[2] != '0' || h[3] != '7' || h[4] != '0' ||
	    (h[5] != '1' && h[5] != '2'))
		return CPIO_EMAGIC;
	if (hex8(h + F_MODE, &mode) || hex8(h + F_FILESIZE, &filesize) ||
	    hex8(h + F_NAMESIZE, &namesize))
		return CPIO_EFORMAT;
	if (namesize == 0)
		return CPIO_EFORMAT;

	/* Name, then padding so that header + name ends on a multiple of 4. */
	size_t rest = len - off - CPIO_HEADER_SIZE;
	if (namesize > rest)
		return CPIO_ETRUNC;
	const char *name = (const char *)h + CPIO_HEADER_SIZE;
	if (name[namesize - 1] != '\0')
		return CPIO_EFORMAT;
	size_t hdr = CPIO_HEADER_SIZE + (size_t)namesize;
	hdr += pad4(off + hdr);
	if (hdr > len - off)
		return CPIO_ETRUNC;

	e->name = name;
	e->namelen = namesize - 1;
	e->mode = mode;
	if (e->namelen == 10 && !__builtin_memcmp(name, "TRAILER!!!", 10))
		return CPIO_END;
	for (size_t i = 0; i + 1 < namesize; i++)
		if (name[i] == '\0')
			return CPIO_EFORMAT;

	size_t data_off = off + hdr;
	if (filesize > len - data_off)
		return CPIO_ETRUNC;
	e->data = a + data_off;
	e->size = filesize;
	size_t next = data_off + filesize;
	size_t p = pad4(next);
	/* Padding after the last file may be missing; the next read fails then. */
	next = p > len - next ? len : next + p;
	*offset = next;
	return CPIO_OK;
}

static const char *strip(const char *s)
{
	for (;;) {
		if (s[0] == '/')
			s++;
		else if (s[0] == '.' && s[1] == '/')
			s += 2;
		else
			return s;
	}
}

static int name_eq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

int cpio_find(const void *archive, size_t len, const char *path, struct cpio_entry *e)
{
	size_t off = 0;
	const char *want = strip(path);
	for (;;) {
		struct cpio_entry cur;
		int r = cpio_next(archive, len, &off, &cur);
		if (r == CPIO_END)
			return CPIO_ENOENT;
		if (r != CPIO_OK)
			return r;
		if ((cur.mode & S_IFMT) == S_IFREG && name_eq(strip(cur.name), want)) {
			*e = cur;
			return CPIO_OK;
		}
	}
}
