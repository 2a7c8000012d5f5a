/* SPDX-License-Identifier: MIT */
/*
 * lib/profile: function names through the symbolizer are demangled unless
 * profile_options.no_demangle, and a hostile mangled name (250 bytes that
 * demangle to gigabytes; a guest's file can hold one) becomes a bounded
 * name in the profile and in a report.
 *
 * The fixture is lib_fixture.h's, compiled with its functions renamed by
 * asm labels: alpha is a C++ member function, beta the hostile name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lib_fixture.h"
#include "profile/profile.h"
#include "report/report.h"
#include "symbols/symtab.h"

#define ALPHA_MANGLED "_ZN7fixture5Thing5alphaEi"
#define ALPHA_SHOWN "fixture::Thing::alpha"

static char *dir;
static char data_path[600];
/* f<B<B<...>>>: 30 levels, each a back-reference to the one below: 2^30 copies of "B<A, A>" demangled. */
static char hostile[512];

static void make_hostile(void)
{
	static const char digits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
	size_t n = 0;
	int level;

	n += (size_t)snprintf(hostile + n, sizeof(hostile) - n, "_Z1fI1BI");
	for (level = 1; level < 30; level++)
		n += (size_t)snprintf(hostile + n, sizeof(hostile) - n, "S0_I");
	n += (size_t)snprintf(hostile + n, sizeof(hostile) - n, "1AS1_E");
	for (level = 2; level <= 30; level++)
		n += (size_t)snprintf(hostile + n, sizeof(hostile) - n, "S%c_E", digits[level]);
	snprintf(hostile + n, sizeof(hostile) - n, "EvT_");
}

/* lib_fixture's program, alpha and beta named by asm labels. */
static int build(void)
{
	char src[700], cmd[2048];
	FILE *f;

	snprintf(src, sizeof(src), "%s/fx.c", dir);
	f = fopen(src, "w");
	if (!f)
		return -1;
	fprintf(f, "int alpha(int x) __asm__(\"%s\");\nint beta(int x) __asm__(\"%s\");\n%s", ALPHA_MANGLED, hostile,
		fx_source);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s/bin' && gcc -O1 -static -nostdlib -no-pie -fno-pic "
		 "-fno-asynchronous-unwind-tables -Wl,-Ttext-segment=0x40000000 "
		 "-Wl,--section-start=alpha_text=0x40010000 -Wl,--section-start=beta_text=0x40020000 "
		 "-Wl,--section-start=gamma_text=0x40030000 -Wl,--no-warn-rwx-segments -o '%s/bin/fx' '%s'",
		 dir, dir, src);
	return system(cmd) == 0 ? 0 : -1;
}

static int setup(void **state)
{
	(void)state;
	make_hostile();
	dir = fx_mkdir();
	if (!dir || build())
		return -1;
	snprintf(data_path, sizeof(data_path), "%s/test.data", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fx_rmdir(dir);
	return 0;
}

/* One sample in alpha and one in beta (the file under dir, as --guest-root would find a guest's). */
static void write_recording(void)
{
	struct kp_writer *w;
	int fd;

	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(fx_event(w, 1, "cycles", 1000, 0), 0);
	assert_int_equal(fx_comm(w, 10, 10, 1, 0, "cxx"), 0);
	assert_int_equal(fx_mmap(w, 10, 2, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 10, 3, FX_ALPHA + 1, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 10, 4, FX_BETA + 1, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_close(w, fd), 0);
}

static struct profile *load(bool no_demangle)
{
	struct profile_options opt = { .root = dir, .no_demangle = no_demangle };
	struct profile *p = NULL;
	char err[512];

	if (profile_load(&p, data_path, &opt, err, sizeof(err)))
		fail_msg("profile_load: %s", err);
	return p;
}

static const char *leaf_name(const struct profile *p, size_t sample)
{
	const struct profile_sample *s = &p->samples[sample];

	assert_true(s->nr_frames > 0);
	return p->funcs[p->locs[p->frames[s->first_frame]].func].name;
}

static void test_demangled(void **state)
{
	struct profile *p;
	const char *name;

	(void)state;
	write_recording();
	p = load(false);
	assert_int_equal(p->nr_samples, 2);
	assert_string_equal(leaf_name(p, 0), ALPHA_SHOWN);
	name = leaf_name(p, 1);
	assert_int_equal(strlen(name), SYMTAB_DEMANGLED_MAX - 1);
	assert_memory_equal(name, "f<B<B<B<", 8);
	assert_string_equal(name + SYMTAB_DEMANGLED_MAX - 4, "...");
	profile_free(p);
}

static void test_no_demangle(void **state)
{
	struct profile *p;

	(void)state;
	write_recording();
	p = load(true);
	assert_string_equal(leaf_name(p, 0), ALPHA_MANGLED);
	assert_string_equal(leaf_name(p, 1), hostile);
	profile_free(p);
}

/* The folded report of the hostile name: a bounded line (report_frame's buffer), no mangled name left. */
static void test_folded_bounded(void **state)
{
	struct profile *p;
	char *out = NULL, *line;
	size_t len = 0, longest = 0;
	FILE *f;

	(void)state;
	write_recording();
	p = load(false);
	f = open_memstream(&out, &len);
	assert_non_null(f);
	assert_int_equal(report_folded(f, p, report_folded_event(p)), 0);
	fclose(f);
	assert_non_null(strstr(out, "fx`fixture::Thing::alpha 1\n"));
	assert_non_null(strstr(out, "fx`f<B<B<B<"));
	assert_null(strstr(out, "_Z"));
	for (line = strtok(out, "\n"); line; line = strtok(NULL, "\n"))
		longest = strlen(line) > longest ? strlen(line) : longest;
	assert_true(longest < 1024);
	free(out);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demangled),
		cmocka_unit_test(test_no_demangle),
		cmocka_unit_test(test_folded_bounded),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
