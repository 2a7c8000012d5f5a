/* SPDX-License-Identifier: MIT */
/*
 * lib/symtab_demangle: C++ and Rust names as perf report shows them (and
 * as perf report -v with SYMTAB_DEMANGLE_PARAMS), names that are not
 * mangled left alone, and hostile names: one whose output doubles at each
 * back-reference, one nested past libiberty's recursion limit, one past
 * the input bound, and a cut that falls inside a UTF-8 character.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "symbols/symtab.h"
#include "common/utf8.h"

static char buf[SYMTAB_DEMANGLED_MAX];

static void check(const char *mangled, const char *want, const char *want_params)
{
	assert_true(symtab_demangle(mangled, buf, sizeof(buf), 0));
	assert_string_equal(buf, want);
	assert_true(symtab_demangle(mangled, buf, sizeof(buf), SYMTAB_DEMANGLE_PARAMS));
	assert_string_equal(buf, want_params);
}

static void test_cxx(void **state)
{
	(void)state;
	/* The agent test's fixture: a member of a class template in a namespace. */
	check("_ZN7fixture7SpinnerImE4spinEmj", "fixture::Spinner<unsigned long>::spin",
	      "fixture::Spinner<unsigned long>::spin(unsigned long, unsigned int)");
	/* A function template: its return type shows with the parameters. */
	check("_ZN2ns3fooIiEEvT_", "ns::foo<int>", "void ns::foo<int>(int)");
	check("_ZplRK1AS1_", "operator+", "operator+(A const&, A const&)");
	check("_ZNK3FoocvbEv", "Foo::operator bool", "Foo::operator bool() const");
	check("_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back",
	      "std::vector<int, std::allocator<int> >::push_back(int const&)");
	check("_ZN12_GLOBAL__N_14spinEv", "(anonymous namespace)::spin", "(anonymous namespace)::spin()");
}

static void test_rust(void **state)
{
	(void)state;
	/* Legacy: an Itanium-style path ending in the hash, which perf does not show. */
	check("_ZN4core3fmt9Formatter3pad17h0123456789abcdefE", "core::fmt::Formatter::pad",
	      "core::fmt::Formatter::pad");
	check("_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h5e1a2b3c4d5e6f70E",
	      "std::rt::lang_start::{{closure}}", "std::rt::lang_start::{{closure}}");
	/* v0 (RFC 2603): crate disambiguators are not shown; generic arguments are. */
	check("_RNvCs15kBYyAo9fc_7mycrate7example", "mycrate::example", "mycrate::example");
	check("_RINvNtC3std3mem8align_ofjE", "std::mem::align_of::<usize>", "std::mem::align_of::<usize>");
}

static void test_not_mangled(void **state)
{
	static const char *const names[] = {
		"main", "memcpy", "__libc_start_main", "i", "_start", "_init",
		/* Garbage after a mangling's prefix. */
		"_Z", "_Zfoo", "_ZN", "_ZN3foo", "_ZN3foo3bar", "_R", "_RNv", "_RNvC", "_Z\xff\xfe", "_ZN999999999999foo",
		/* A legacy Rust hash must be 16 hex digits; this one is C++ then, and not valid C++ either. */
		"_ZN4core3fmt17hxyzE",
		/* Invalid v0 on which libiberty hands the output an empty (NULL, 0) piece (found by fuzz_demangle). */
		"_RIC1_GC0_LOst",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		assert_false(symtab_demangle(names[i], buf, sizeof(buf), 0));
		assert_false(symtab_demangle(names[i], buf, sizeof(buf), SYMTAB_DEMANGLE_PARAMS));
	}
}

/*
 * f<B<X, X>> with X = B<Y, Y>, and so on, each level a back-reference to
 * the one below: 30 levels are 250 bytes that demangle to 2^30 copies of
 * "B<A, A>" (about 14 GB). The output stops at the buffer.
 */
static void test_exponential(void **state)
{
	static const char digits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
	char name[1024];
	size_t n = 0;
	int level;

	(void)state;
	n += (size_t)snprintf(name + n, sizeof(name) - n, "_Z1fI1BI");
	for (level = 1; level < 30; level++)
		n += (size_t)snprintf(name + n, sizeof(name) - n, "S0_I");
	n += (size_t)snprintf(name + n, sizeof(name) - n, "1AS1_E");
	/* Substitution S<n>_ counts in base 36. */
	for (level = 2; level <= 30; level++)
		n += (size_t)snprintf(name + n, sizeof(name) - n, "S%c_E", digits[level]);
	snprintf(name + n, sizeof(name) - n, "EvT_");
	assert_int_equal(strlen(name), 250);
	for (unsigned flags = 0; flags <= SYMTAB_DEMANGLE_PARAMS; flags++) {
		memset(buf, 'x', sizeof(buf));
		assert_true(symtab_demangle(name, buf, sizeof(buf), flags));
		assert_int_equal(strlen(buf), sizeof(buf) - 1);
		assert_memory_equal(buf + sizeof(buf) - 4, "...", 3);
		assert_memory_equal(buf, flags ? "void f<B<B<B<" : "f<B<B<B<", flags ? 13 : 8);
	}
}

static void test_deep(void **state)
{
	char *name = malloc(SYMTAB_DEMANGLE_INPUT_MAX + 2);

	(void)state;
	assert_non_null(name);
	/* f(void***...*): 1000 pointers demangle; 5000 nest past libiberty's limit of 2048 and fail. */
	memset(name, 0, SYMTAB_DEMANGLE_INPUT_MAX + 2);
	memcpy(name, "_Z1f", 4);
	memset(name + 4, 'P', 1000);
	name[1004] = 'v';
	assert_true(symtab_demangle(name, buf, sizeof(buf), 0));
	assert_string_equal(buf, "f");
	assert_true(symtab_demangle(name, buf, sizeof(buf), SYMTAB_DEMANGLE_PARAMS));
	assert_int_equal(strlen(buf), strlen("f(void)") + 1000);
	memset(name + 4, 'P', 5000);
	name[5004] = 'v';
	assert_false(symtab_demangle(name, buf, sizeof(buf), SYMTAB_DEMANGLE_PARAMS));
	/* f<A<A<...<B>...>>: 100 template levels demangle ("f<A<...B> > >"), 1500 fail. */
	for (int levels = 100; levels <= 1500; levels += 1400) {
		size_t n = 0;

		memset(name, 0, SYMTAB_DEMANGLE_INPUT_MAX + 2);
		n += (size_t)snprintf(name + n, SYMTAB_DEMANGLE_INPUT_MAX - n, "_Z1fI");
		for (int i = 0; i < levels; i++)
			n += (size_t)snprintf(name + n, SYMTAB_DEMANGLE_INPUT_MAX - n, "1AI");
		n += (size_t)snprintf(name + n, SYMTAB_DEMANGLE_INPUT_MAX - n, "1B");
		for (int i = 0; i < levels; i++)
			n += (size_t)snprintf(name + n, SYMTAB_DEMANGLE_INPUT_MAX - n, "E");
		snprintf(name + n, SYMTAB_DEMANGLE_INPUT_MAX - n, "EvT_");
		if (levels == 100) {
			assert_true(symtab_demangle(name, buf, sizeof(buf), 0));
			assert_int_equal(strlen(buf), 4 * 100 + 4);
			assert_memory_equal(buf, "f<A<A<", 6);
		} else {
			assert_false(symtab_demangle(name, buf, sizeof(buf), SYMTAB_DEMANGLE_PARAMS));
		}
	}
	/*
	 * libiberty's C++ demangler refuses names over 1024 bytes itself (its
	 * recursion limit bounds its work arrays); its Rust demangler has no
	 * such bound. A legacy Rust name of SYMTAB_DEMANGLE_INPUT_MAX bytes
	 * (one long identifier) is demangled and cut; one byte more, not.
	 */
	for (size_t len = SYMTAB_DEMANGLE_INPUT_MAX; len <= SYMTAB_DEMANGLE_INPUT_MAX + 1; len++) {
		size_t ident = len - strlen("_ZN8165") - strlen("17h0123456789abcdefE");
		int prefix = snprintf(name, 16, "_ZN%zu", ident);

		assert_int_equal(prefix, 7);
		memset(name + prefix, 'a', ident);
		strcpy(name + prefix + ident, "17h0123456789abcdefE");
		assert_int_equal(strlen(name), len);
		if (len == SYMTAB_DEMANGLE_INPUT_MAX) {
			assert_true(symtab_demangle(name, buf, sizeof(buf), 0));
			assert_int_equal(strlen(buf), sizeof(buf) - 1);
			assert_string_equal(buf + sizeof(buf) - 5, "a...");
		} else {
			assert_false(symtab_demangle(name, buf, sizeof(buf), 0));
		}
	}
	free(name);
}

/* A cut never leaves half a UTF-8 character (identifiers may be UTF-8); what remains is printable. */
static void test_cut_utf8(void **state)
{
	/* "a" and ten U+00E9: 21 bytes, "aéééééééééé::f" demangled. */
	static const char name[] = "_ZN21a\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
				   "1fEv";
	char small[16];

	(void)state;
	assert_true(symtab_demangle(name, buf, sizeof(buf), 0));
	assert_string_equal(buf, "a\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9::f");
	/* 15 bytes fit; "..." takes the last 3 of them, which would split the sixth é: it goes whole. */
	assert_true(symtab_demangle(name, small, sizeof(small), 0));
	assert_string_equal(small, "a\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9...");
	for (const char *s = small; *s;) {
		size_t n = utf8_printable_len(s);

		assert_true(n > 0);
		s += n;
	}
	/* Too small to hold a useful name: not demangled. */
	assert_false(symtab_demangle(name, small, 8, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cxx),	    cmocka_unit_test(test_rust),
		cmocka_unit_test(test_not_mangled), cmocka_unit_test(test_exponential),
		cmocka_unit_test(test_deep),	    cmocka_unit_test(test_cut_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
