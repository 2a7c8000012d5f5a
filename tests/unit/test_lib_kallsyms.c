/* SPDX-License-Identifier: MIT */
/* lib/kallsyms: parsing /proc/kallsyms text, malformed lines, lookups. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "symbols/kallsyms.h"

/* The lookups as pointers, NULL when they find nothing: the cases read as before. */
static const struct kallsyms_sym *lookup(const struct kallsyms *ks, uint64_t addr)
{
	static struct kallsyms_sym s;

	return kallsyms_lookup(ks, addr, &s) ? &s : NULL;
}

static const struct kallsyms_sym *find(const struct kallsyms *ks, const char *name, enum kallsyms_scope scope)
{
	static struct kallsyms_sym s;

	return kallsyms_find(ks, name, scope, &s) ? &s : NULL;
}

static const char text[] =
	"ffffffff81000000 T _text\n"
	"ffffffff81000000 T startup_64\n"
	"ffffffff81001000 t do_one_thing\n"
	"ffffffff81002000 D some_data\n"           /* not text: skipped */
	"ffffffff81003000 W weak_func\n"
	"garbage line without address\n"          /* malformed */
	"ffffffff81004000 T\n"                    /* no name: malformed */
	"ffffffff81004000 TT name\n"              /* two-letter type: malformed */
	"zzzz T name\n"                           /* not hex: malformed */
	"ffffffff81005000 T after_bad\n"
	"\n"
	"ffffffffc0a00000 t ext4_fill_super\t[ext4]\n"
	"ffffffffc0a00100 t ext4_broken\t[ext4\n"  /* unclosed module: malformed */
	"ffffffffc0a00200 T ext4_last [ext4]";     /* no final newline */

static void test_parse_and_lookup(void **state)
{
	const struct kallsyms_sym *s;
	struct kallsyms *ks;

	(void)state;
	assert_int_equal(kallsyms_parse(&ks, text, strlen(text)), 0);
	assert_int_equal(kallsyms_count(ks), 7);
	assert_int_equal(kallsyms_malformed(ks), 5);
	assert_false(kallsyms_hidden(ks));

	/* Aliases: one name per address, deterministically the first by name. */
	s = lookup(ks, 0xffffffff81000010);
	assert_non_null(s);
	assert_string_equal(s->name, "_text");
	assert_null(s->module);
	assert_int_equal(s->end, 0xffffffff81001000);
	s = lookup(ks, 0xffffffff81001fff);
	assert_string_equal(s->name, "do_one_thing");
	/* The data symbol is gone: do_one_thing runs up to weak_func. */
	s = lookup(ks, 0xffffffff81002800);
	assert_string_equal(s->name, "do_one_thing");
	s = lookup(ks, 0xffffffff81003000);
	assert_string_equal(s->name, "weak_func");
	s = lookup(ks, 0xffffffff81005001);
	assert_string_equal(s->name, "after_bad");
	s = lookup(ks, 0xffffffffc0a00050);
	assert_string_equal(s->name, "ext4_fill_super");
	assert_string_equal(s->module, "ext4");
	s = lookup(ks, 0xffffffffc0a00210);
	assert_string_equal(s->name, "ext4_last");
	assert_string_equal(s->module, "ext4");
	/* Below the first symbol and far past the last: nothing. */
	assert_null(lookup(ks, 0xffffffff80ffffff));
	assert_null(lookup(ks, 0));
	assert_null(lookup(ks, 0xffffffffc0b00000));
	kallsyms_free(ks);
}

static void test_hidden_and_empty(void **state)
{
	static const char hidden[] = "0000000000000000 T _text\n0000000000000000 t foo\n";
	static const char junk[] = "binary \xff\xfe\n\0zz\n\n";
	struct kallsyms *ks;

	(void)state;
	assert_int_equal(kallsyms_parse(&ks, hidden, strlen(hidden)), 0);
	assert_true(kallsyms_hidden(ks));
	assert_null(lookup(ks, 0));
	assert_null(lookup(ks, 5));
	kallsyms_free(ks);
	assert_int_equal(kallsyms_parse(&ks, "", 0), 0);
	assert_int_equal(kallsyms_count(ks), 0);
	assert_null(lookup(ks, 0x1000));
	kallsyms_free(ks);
	assert_int_equal(kallsyms_parse(&ks, junk, sizeof(junk) - 1), 0);
	assert_int_equal(kallsyms_count(ks), 0);
	/* The line after the NUL reads as empty: cut at the NUL. */
	assert_int_equal(kallsyms_malformed(ks), 1);
	kallsyms_free(ks);
}

static void test_top_of_address_space(void **state)
{
	static const char top[] = "ffffffffffffff00 T at_the_top\n";
	struct kallsyms *ks;

	(void)state;
	assert_int_equal(kallsyms_parse(&ks, top, strlen(top)), 0);
	assert_string_equal(lookup(ks, UINT64_MAX)->name, "at_the_top");
	kallsyms_free(ks);
}

/*
 * Addresses as strtoull reads them (an optional 0x, leading zeros, at
 * most 64 bits), and aliases listed out of name order in an otherwise
 * sorted file: the first by name is the one found, bounded by the next
 * address.
 */
static void test_addresses_and_aliases(void **state)
{
	static const char syms[] =
		"ffffffff81000000 T start\n"
		"ffffffff81000100 t zeta\n"
		"ffffffff81000100 T alpha\n"
		"ffffffff81000100 t mid\n"
		"0xffffffff81000200 T with_prefix\n"
		"00000000ffffffff81000300 T zeros\n"
		"1ffffffffffffffff T too_wide\n"
		"0x T no_digits\n"
		"ffffffff8100040g T bad_digit\n";
	const struct kallsyms_sym *s;
	struct kallsyms *ks;

	(void)state;
	assert_int_equal(kallsyms_parse(&ks, syms, strlen(syms)), 0);
	assert_int_equal(kallsyms_count(ks), 6);
	assert_int_equal(kallsyms_malformed(ks), 3);
	s = lookup(ks, 0xffffffff81000180);
	assert_string_equal(s->name, "alpha");
	assert_int_equal(s->end, 0xffffffff81000200);
	assert_int_equal(find(ks, "zeta", KALLSYMS_IMAGE)->end, 0xffffffff81000200);
	assert_string_equal(lookup(ks, 0xffffffff81000200)->name, "with_prefix");
	s = lookup(ks, 0xffffffff81000300);
	assert_string_equal(s->name, "zeros");
	assert_int_equal(s->end, 0xffffffff81000300 + 0x10000);
	kallsyms_free(ks);
}

/*
 * One lookup by name for the agent (kernel-image symbols: the per-CPU
 * variables of the task layout) and the host profiler (the hypervisor's
 * guest-entry code, which may be a module's).
 */
static void test_find_by_name(void **state)
{
	static const char syms[] =
		"ffffffffc0100000 t shared_name\t[kvm]\n"      /* a module's, before the image's */
		"ffffffff81000000 T _text\n"
		"ffffffff81000100 T shared_name\n"
		"0000000000020ac0 D current_task\n"            /* per-CPU: its offset as address */
		"ffffffff82000000 R __per_cpu_offset\n"
		"ffffffff81000200 T shared_name\n"             /* a second static of that name */
		"ffffffff81000300 T next_one\n"
		"ffffffffc0200000 t pvm_entry\t[kvm_pvm]\n"
		"ffffffffc0200080 t pvm_other\t[kvm_pvm]\n";
	const struct kallsyms_sym *s;
	struct kallsyms *ks;

	(void)state;
	assert_int_equal(kallsyms_parse(&ks, syms, strlen(syms)), 0);
	/* Address lookups still see only code. */
	assert_int_equal(kallsyms_count(ks), 7);
	assert_null(lookup(ks, 0x20ac0));

	s = find(ks, "current_task", KALLSYMS_IMAGE);
	assert_non_null(s);
	assert_int_equal(s->addr, 0x20ac0);
	assert_int_equal(s->type, 'D');
	assert_false(kallsyms_is_text(s->type));
	s = find(ks, "__per_cpu_offset", KALLSYMS_IMAGE);
	assert_non_null(s);
	assert_int_equal(s->addr, 0xffffffff82000000);

	/* The image's symbol wins over a module's; of two in the image, the first. */
	s = find(ks, "shared_name", KALLSYMS_IMAGE_OR_MODULE);
	assert_non_null(s);
	assert_null(s->module);
	assert_int_equal(s->addr, 0xffffffff81000100);
	assert_int_equal(s->end, 0xffffffff81000200);

	/* A module's symbol only when asked for. */
	assert_null(find(ks, "pvm_entry", KALLSYMS_IMAGE));
	s = find(ks, "pvm_entry", KALLSYMS_IMAGE_OR_MODULE);
	assert_non_null(s);
	assert_string_equal(s->module, "kvm_pvm");
	assert_int_equal(s->end, 0xffffffffc0200080);

	/* Whole names only. */
	assert_null(find(ks, "shared", KALLSYMS_IMAGE_OR_MODULE));
	assert_null(find(ks, "current_task_", KALLSYMS_IMAGE_OR_MODULE));
	assert_null(find(ks, "", KALLSYMS_IMAGE_OR_MODULE));
	kallsyms_free(ks);
}

#define piece(s) (s), strlen(s)

/*
 * Built piece by piece, as a recording's KSYMS chunks come: the same
 * symbols as the text in one piece, whatever the cuts; a piece's end ends
 * a line (a hostile chunk cut mid-line makes two lines, not one); the text
 * may go once added; pieces after kallsyms_finish are not taken.
 */
static void test_pieces(void **state)
{
	struct kallsyms *whole, *ks;
	size_t len = strlen(text);

	(void)state;
	assert_int_equal(kallsyms_parse(&whole, text, len), 0);
	for (size_t cut = 0; cut <= len; cut++) {
		char *copy = malloc(len + 1);
		const char *nl = cut ? memchr(text + cut - 1, '\n', len - cut + 1) : text;
		size_t at = nl ? (size_t)(nl - text) + (cut ? 1 : 0) : len;

		assert_non_null(copy);
		memcpy(copy, text, len);
		/* Cut at the line end at or after `cut`, so each piece holds whole lines. */
		ks = kallsyms_new();
		assert_non_null(ks);
		assert_int_equal(kallsyms_add(ks, copy, at), 0);
		assert_int_equal(kallsyms_add(ks, copy + at, len - at), 0);
		memset(copy, 'x', len); /* the names are the symbols' own */
		free(copy);
		kallsyms_finish(ks);
		assert_int_equal(kallsyms_count(ks), kallsyms_count(whole));
		assert_int_equal(kallsyms_malformed(ks), kallsyms_malformed(whole));
		for (uint64_t a = 0xffffffff81000000; a < 0xffffffff81006000; a += 0x400) {
			const struct kallsyms_sym *w = lookup(whole, a);
			struct kallsyms_sym k;

			if (!w) {
				assert_false(kallsyms_lookup(ks, a, &k));
				continue;
			}
			assert_true(kallsyms_lookup(ks, a, &k));
			assert_string_equal(k.name, w->name);
			assert_int_equal(k.end, w->end);
		}
		assert_string_equal(lookup(ks, 0xffffffffc0a00210)->module, "ext4");
		kallsyms_free(ks);
	}
	kallsyms_free(whole);

	/* A line cut in two: "ffffffff8100" is malformed, "1000 T tail" is a symbol at 0x1000. */
	ks = kallsyms_new();
	assert_non_null(ks);
	assert_int_equal(kallsyms_add(ks, piece("ffffffff81000000 T head\nffffffff8100")), 0);
	assert_int_equal(kallsyms_add(ks, piece("1000 T tail\n")), 0);
	kallsyms_finish(ks);
	assert_int_equal(kallsyms_count(ks), 2);
	assert_int_equal(kallsyms_malformed(ks), 1);
	assert_string_equal(lookup(ks, 0x1000)->name, "tail");
	/* Nothing is looked up before kallsyms_finish, nothing is taken after it. */
	assert_int_equal(kallsyms_add(ks, piece("ffffffff81000100 T late\n")), 0);
	assert_int_equal(kallsyms_count(ks), 2);
	assert_string_equal(lookup(ks, 0xffffffff81000100)->name, "head");
	kallsyms_free(ks);
	ks = kallsyms_new();
	assert_non_null(ks);
	assert_int_equal(kallsyms_add(ks, piece("ffffffff81000000 T head\n")), 0);
	assert_null(lookup(ks, 0xffffffff81000000));
	kallsyms_free(ks);
}

static void test_load(void **state)
{
	char path[] = "/tmp/kvmprof-kallsyms-XXXXXX";
	struct kallsyms *ks;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(kallsyms_load(&ks, path), 0);
	assert_int_equal(kallsyms_count(ks), 7);
	kallsyms_free(ks);
	unlink(path);
	assert_int_equal(kallsyms_load(&ks, path), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_and_lookup),
		cmocka_unit_test(test_hidden_and_empty),
		cmocka_unit_test(test_top_of_address_space),
		cmocka_unit_test(test_find_by_name),
		cmocka_unit_test(test_addresses_and_aliases),
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
