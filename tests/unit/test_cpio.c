// SPDX-License-Identifier: MIT
/* The guest kernel's cpio newc reader (guest/kernel/cpio.c) on hostile input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cpio.h"

/* An archive under construction, in a heap buffer of exactly its length. */
struct arc {
	unsigned char buf[8192];
	size_t len;
};

static void add_raw(struct arc *a, const char *magic, uint32_t mode, const char *name,
		    uint32_t namesize, const void *data, size_t datalen, uint32_t filesize)
{
	char hdr[CPIO_HEADER_SIZE + 1];
	snprintf(hdr, sizeof(hdr),
		 "%s%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x", magic, 1u, mode, 0u,
		 0u, 1u, 0u, filesize, 0u, 0u, 0u, 0u, namesize, 0u);
	assert_int_equal(strlen(hdr), CPIO_HEADER_SIZE);
	memcpy(a->buf + a->len, hdr, CPIO_HEADER_SIZE);
	a->len += CPIO_HEADER_SIZE;
	memcpy(a->buf + a->len, name, namesize);
	a->len += namesize;
	while (a->len & 3)
		a->buf[a->len++] = 0;
	memcpy(a->buf + a->len, data, datalen);
	a->len += datalen;
	while (a->len & 3)
		a->buf[a->len++] = 0;
}

static void add_file(struct arc *a, const char *name, const char *data)
{
	add_raw(a, "070701", 0100644, name, (uint32_t)strlen(name) + 1, data, strlen(data),
		(uint32_t)strlen(data));
}

static void add_trailer(struct arc *a)
{
	add_raw(a, "070701", 0, "TRAILER!!!", 11, "", 0, 0);
}

/* Copies the archive to a heap block of exactly n bytes (ASan sees overruns). */
static unsigned char *exact(const struct arc *a, size_t n)
{
	unsigned char *p = malloc(n ? n : 1);
	assert_non_null(p);
	memcpy(p, a->buf, n);
	return p;
}

static void test_normal_archive(void **state)
{
	(void)state;
	struct arc a = { .len = 0 };
	add_file(&a, "etc/start", "/bin/hash\n");
	add_file(&a, "bin/x", "abc");
	add_raw(&a, "070701", 040755, "bin", 4, "", 0, 0); /* a directory */
	add_file(&a, "./bin/y", "");
	add_trailer(&a);
	unsigned char *p = exact(&a, a.len);

	size_t off = 0;
	struct cpio_entry e;
	assert_int_equal(cpio_next(p, a.len, &off, &e), CPIO_OK);
	assert_string_equal(e.name, "etc/start");
	assert_int_equal(e.namelen, 9);
	assert_int_equal(e.size, 10);
	assert_memory_equal(e.data, "/bin/hash\n", 10);
	assert_int_equal(e.mode, 0100644);
	assert_int_equal(off % 4, 0);
	assert_int_equal(cpio_next(p, a.len, &off, &e), CPIO_OK);
	assert_string_equal(e.name, "bin/x");
	assert_int_equal(cpio_next(p, a.len, &off, &e), CPIO_OK);
	assert_string_equal(e.name, "bin");
	assert_int_equal(cpio_next(p, a.len, &off, &e), CPIO_OK);
	assert_int_equal(e.size, 0);
	assert_int_equal(cpio_next(p, a.len, &off, &e), CPIO_END);

	assert_int_equal(cpio_find(p, a.len, "/bin/x", &e), CPIO_OK);
	assert_memory_equal(e.data, "abc", 3);
	assert_int_equal(cpio_find(p, a.len, "bin/x", &e), CPIO_OK);
	assert_int_equal(cpio_find(p, a.len, "./bin/x", &e), CPIO_OK);
	assert_int_equal(cpio_find(p, a.len, "/bin/y", &e), CPIO_OK);
	assert_int_equal(e.size, 0);
	assert_int_equal(cpio_find(p, a.len, "/etc/start", &e), CPIO_OK);
	/* directories are not files; prefixes and missing names are not found */
	assert_int_equal(cpio_find(p, a.len, "/bin", &e), CPIO_ENOENT);
	assert_int_equal(cpio_find(p, a.len, "/bin/", &e), CPIO_ENOENT);
	assert_int_equal(cpio_find(p, a.len, "/bin/xy", &e), CPIO_ENOENT);
	assert_int_equal(cpio_find(p, a.len, "/etc/star", &e), CPIO_ENOENT);
	assert_int_equal(cpio_find(p, a.len, "", &e), CPIO_ENOENT);
	free(p);
}

static void test_crc_magic_accepted(void **state)
{
	(void)state;
	struct arc a = { .len = 0 };
	add_raw(&a, "070702", 0100644, "f", 2, "x", 1, 1);
	add_trailer(&a);
	struct cpio_entry e;
	assert_int_equal(cpio_find(a.buf, a.len, "/f", &e), CPIO_OK);
}

static void test_trailer_stops(void **state)
{
	(void)state;
	struct arc a = { .len = 0 };
	add_file(&a, "a", "1");
	add_trailer(&a);
	add_file(&a, "b", "2"); /* after the trailer: ignored */
	struct cpio_entry e;
	assert_int_equal(cpio_find(a.buf, a.len, "/a", &e), CPIO_OK);
	assert_int_equal(cpio_find(a.buf, a.len, "/b", &e), CPIO_ENOENT);
	size_t off = 0;
	assert_int_equal(cpio_next(a.buf, a.len, &off, &e), CPIO_OK);
	assert_int_equal(cpio_next(a.buf, a.len, &off, &e), CPIO_END);
	/* a file named like the trailer with a longer name is a file */
	struct arc b = { .len = 0 };
	add_file(&b, "TRAILER!!!x", "z");
	add_trailer(&b);
	assert_int_equal(cpio_find(b.buf, b.len, "TRAILER!!!x", &e), CPIO_OK);
}

static void test_empty_and_missing_trailer(void **state)
{
	(void)state;
	struct cpio_entry e;
	size_t off = 0;
	assert_int_equal(cpio_next("", 0, &off, &e), CPIO_ETRUNC);
	assert_int_equal(cpio_find("", 0, "/a", &e), CPIO_ETRUNC);
	struct arc a = { .len = 0 };
	add_file(&a, "a", "1");
	unsigned char *p = exact(&a, a.len);
	assert_int_equal(cpio_find(p, a.len, "/a", &e), CPIO_OK);
	assert_int_equal(cpio_find(p, a.len, "/b", &e), CPIO_ETRUNC);
	free(p);
	/* an offset past the end */
	off = a.len + 4;
	assert_int_equal(cpio_next(a.buf, a.len, &off, &e), CPIO_ETRUNC);
	off = SIZE_MAX - 3;
	assert_int_equal(cpio_next(a.buf, a.len, &off, &e), CPIO_ETRUNC);
}

/* Every prefix of a valid archive is rejected or read within bounds. */
static void test_truncated_everywhere(void **state)
{
	(void)state;
	struct arc a = { .len = 0 };
	add_file(&a, "bin/prog", "0123456789");
	add_file(&a, "etc/start", "/bin/prog\n");
	add_trailer(&a);
	for (size_t n = 0; n < a.len; n++) {
		unsigned char *p = exact(&a, n);
		struct cpio_entry e;
		int r = cpio_find(p, n, "/etc/start", &e);
		if (r == CPIO_OK) {
			/* found: the whole file must lie inside the prefix */
			assert_true((const unsigned char *)e.data + e.size <= p + n);
			assert_memory_equal(e.data, "/bin/prog\n", 10);
		} else {
			assert_int_equal(r, CPIO_ETRUNC);
		}
		free(p);
	}
}

static void test_truncated_header_name_data(void **state)
{
	(void)state;
	struct arc a = { .len = 0 };
	add_file(&a, "name", "data");
	struct cpio_entry e;
	size_t off;
	/* header cut */
	unsigned char *p = exact(&a, CPIO_HEADER_SIZE - 1);
	off = 0;
	assert_int_equal(cpio_next(p, CPIO_HEADER_SIZE - 1, &off, &e), CPIO_ETRUNC);
	free(p);
	/* name cut: header complete, NUL missing */
	p = exact(&a, CPIO_HEADER_SIZE + 4);
	off = 0;
	assert_int_equal(cpio_next(p, CPIO_HEADER_SIZE + 4, &off, &e), CPIO_ETRUNC);
	free(p);
	/* data cut */
	size_t n = CPIO_HEADER_SIZE + 5 + 1 + 2; /* header, name, pad, 2 data bytes */
	p = exact(&a, n);
	off = 0;
	assert_int_equal(cpio_next(p, n, &off, &e), CPIO_ETRUNC);
	free(p);
}

static void test_bad_magic(void **state)
{
	(void)state;
	const char *bad[] = { "070707", "070700", "070703", "170701", "07070x", "      " };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct arc a = { .len = 0 };
		add_file(&a, "a", "1");
		memcpy(a.buf, bad[i], 6);
		struct cpio_entry e;
		size_t off = 0;
		assert_int_equal(cpio_next(a.buf, a.len, &off, &e), CPIO_EMAGIC);
		assert_int_equal(cpio_find(a.buf, a.len, "a", &e), CPIO_EMAGIC);
	}
	/* a bad second header stops the walk */
	struct arc a = { .len = 0 };
	add_file(&a, "a", "1");
	size_t second = a.len;
	add_file(&a, "b", "2");
	a.buf[second] = 'X';
	struct cpio_entry e;
	assert_int_equal(cpio_find(a.buf, a.len, "a", &e), CPIO_OK);
	assert_int_equal(cpio_find(a.buf, a.len, "b", &e), CPIO_EMAGIC);
}

static void test_bad_fields(void **state)
{
	(void)state;
	struct cpio_entry e;
	size_t off;
	/* non-hex digit in filesize, namesize and mode */
	size_t fields[] = { 6 + 8 * 6, 6 + 8 * 11, 6 + 8 * 1 };
	for (size_t i = 0; i < 3; i++) {
		struct arc a = { .len = 0 };
		add_file(&a, "a", "1");
		a.buf[fields[i] + 3] = 'g';
		off = 0;
		assert_int_equal(cpio_next(a.buf, a.len, &off, &e), CPIO_EFORMAT);
	}
	/* upper-case hex is fine */
	struct arc u = { .len = 0 };
	add_raw(&u, "070701", 0100644, "abcdefghijk", 12, "", 0, 0);
	memcpy(u.buf + 6 + 8 * 11, "0000000C", 8);
	off = 0;
	assert_int_equal(cpio_next(u.buf, u.len, &off, &e), CPIO_OK);
	/* namesize 0 */
	struct arc z = { .len = 0 };
	add_raw(&z, "070701", 0100644, "", 0, "x", 1, 1);
	off = 0;
	assert_int_equal(cpio_next(z.buf, z.len, &off, &e), CPIO_EFORMAT);
	/* name not NUL-terminated within namesize */
	struct arc t = { .len = 0 };
	add_raw(&t, "070701", 0100644, "abcd", 4, "x", 1, 1);
	off = 0;
	assert_int_equal(cpio_next(t.buf, t.len, &off, &e), CPIO_EFORMAT);
	/* embedded NUL in the name */
	struct arc n = { .len = 0 };
	add_raw(&n, "070701", 0100644, "ab\0d", 5, "x", 1, 1);
	off = 0;
	assert_int_equal(cpio_next(n.buf, n.len, &off, &e), CPIO_EFORMAT);
}

static void test_huge_sizes(void **state)
{
	(void)state;
	struct cpio_entry e;
	size_t off;
	uint32_t sizes[] = { 0xffffffffu, 0x80000000u, 0xfffffffcu, 4096 };
	for (size_t i = 0; i < 4; i++) {
		struct arc a = { .len = 0 };
		add_raw(&a, "070701", 0100644, "big", 4, "data", 4, sizes[i]);
		add_trailer(&a);
		unsigned char *p = exact(&a, a.len);
		off = 0;
		assert_int_equal(cpio_next(p, a.len, &off, &e), CPIO_ETRUNC);
		assert_int_equal(cpio_find(p, a.len, "big", &e), CPIO_ETRUNC);
		free(p);
	}
	/* huge namesize */
	uint32_t names[] = { 0xffffffffu, 0x7fffffffu, 200 };
	for (size_t i = 0; i < 3; i++) {
		struct arc a = { .len = 0 };
		add_raw(&a, "070701", 0100644, "n", 2, "", 0, 0);
		char f[9];
		snprintf(f, sizeof(f), "%08x", names[i]);
		memcpy(a.buf + 6 + 8 * 11, f, 8);
		unsigned char *p = exact(&a, a.len);
		off = 0;
		assert_int_equal(cpio_next(p, a.len, &off, &e), CPIO_ETRUNC);
		free(p);
	}
}

/* Names of every length 1..9 exercise each padding case of name and data. */
static void test_alignment(void **state)
{
	(void)state;
	struct arc a = { .len = 0 };
	const char *names[] = { "a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh",
				"abcdefghi" };
	const char *datas[] = { "", "1", "12", "123", "1234", "12345", "123456", "1234567", "x" };
	for (size_t i = 0; i < 9; i++)
		add_file(&a, names[i], datas[i]);
	add_trailer(&a);
	unsigned char *p = exact(&a, a.len);
	size_t off = 0;
	for (size_t i = 0; i < 9; i++) {
		struct cpio_entry e;
		assert_int_equal(cpio_next(p, a.len, &off, &e), CPIO_OK);
		assert_int_equal(off % 4, 0);
		assert_string_equal(e.name, names[i]);
		assert_int_equal(e.size, strlen(datas[i]));
		assert_memory_equal(e.data, datas[i], e.size);
		assert_int_equal(((const unsigned char *)e.data - p) % 4, 0);
		assert_int_equal(cpio_find(p, a.len, names[i], &e), CPIO_OK);
		assert_memory_equal(e.data, datas[i], e.size);
	}
	struct cpio_entry e;
	assert_int_equal(cpio_next(p, a.len, &off, &e), CPIO_END);
	/* the last file's data padding may be missing at the very end */
	struct arc b = { .len = 0 };
	add_file(&b, "f", "xyz");
	unsigned char *q = exact(&b, b.len - 1);
	off = 0;
	assert_int_equal(cpio_next(q, b.len - 1, &off, &e), CPIO_OK);
	assert_int_equal(off, b.len - 1);
	assert_int_equal(cpio_next(q, b.len - 1, &off, &e), CPIO_ETRUNC);
	free(q);
	free(p);
}

/* Random corruption never reads outside the buffer (run under ASan). */
static void test_fuzz_corruption(void **state)
{
	(void)state;
	struct arc a = { .len = 0 };
	add_file(&a, "bin/hash", "0123456789abcdef");
	add_file(&a, "etc/start", "/bin/hash 1\n");
	add_trailer(&a);
	uint32_t x = 1;
	for (int iter = 0; iter < 20000; iter++) {
		struct arc c = a;
		for (int k = 0; k < 3; k++) {
			x = x * 1103515245u + 12345u;
			size_t pos = (x >> 8) % c.len;
			x = x * 1103515245u + 12345u;
			c.buf[pos] = (iter & 1) ? (unsigned char)(x >> 16) : "0123456789abcdefF!"[(x >> 16) % 18];
		}
		x = x * 1103515245u + 12345u;
		size_t n = (iter & 3) ? c.len : (x >> 8) % (c.len + 1);
		unsigned char *p = exact(&c, n);
		struct cpio_entry e;
		if (cpio_find(p, n, "/etc/start", &e) == CPIO_OK)
			assert_true((const unsigned char *)e.data + e.size <= p + n);
		size_t off = 0;
		for (int steps = 0; steps < 100; steps++) {
			int r = cpio_next(p, n, &off, &e);
			if (r != CPIO_OK)
				break;
			assert_true(off <= n);
			assert_true((const unsigned char *)e.data + e.size <= p + n);
			assert_true((const unsigned char *)e.name + e.namelen < p + n);
		}
		free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normal_archive),
		cmocka_unit_test(test_crc_magic_accepted),
		cmocka_unit_test(test_trailer_stops),
		cmocka_unit_test(test_empty_and_missing_trailer),
		cmocka_unit_test(test_truncated_everywhere),
		cmocka_unit_test(test_truncated_header_name_data),
		cmocka_unit_test(test_bad_magic),
		cmocka_unit_test(test_bad_fields),
		cmocka_unit_test(test_huge_sizes),
		cmocka_unit_test(test_alignment),
		cmocka_unit_test(test_fuzz_corruption),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
