/* SPDX-License-Identifier: MIT */
/*
 * lib/report/report_annotate.c: a fixture assembled with -g (so every instruction
 * has its own source line) at fixed addresses, samples on chosen
 * instructions, and the listing compared line for line: exact counts per
 * instruction, the sample inside an instruction said apart, the source
 * lines. Then what is hostile: bytes that do not decode, a symbol whose
 * size runs far past its code, an unknown name, a file changed after its
 * symbols were read.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lib_fixture.h"
#include "report/report.h"

#define AN_DELTA 0x40010000ull
#define AN_JUNK 0x40020000ull
#define AN_BOGUS 0x40030000ull

/* delta: nop (1 byte), mov (3), add (4), ret; junk: 20 bytes that are no x86-64 instruction; bogus: a 2 GB "size". */
static const char an_source[] =
	"\t.text\n"
	"\t.globl _start\n"
	"_start:\n"
	"\tcall delta\n"
	"\tjmp _start\n"
	"\t.section delta_text,\"ax\",@progbits\n"
	"\t.globl delta\n"
	"\t.type delta, @function\n"
	"delta:\n"
	"\tnop\n"             /* line 10 */
	"\tmov %rdi, %rax\n"  /* line 11 */
	"\tadd $1, %rax\n"    /* line 12 */
	"\tret\n"             /* line 13 */
	"\t.size delta, .-delta\n"
	"\t.section junk_text,\"ax\",@progbits\n"
	"\t.globl junk\n"
	"\t.type junk, @function\n"
	"junk:\n"
	"\t.fill 20, 1, 0x06\n"
	"\tret\n"
	"\t.size junk, .-junk\n"
	"\t.section bogus_text,\"ax\",@progbits\n"
	"\t.globl bogus\n"
	"\t.type bogus, @function\n"
	"bogus:\n"
	"\tnop\n"
	"\tret\n"
	"\t.size bogus, 0x7fffffff\n";

static char *dir;
static struct profile *prof;

static int build(void)
{
	char src[256], cmd[1024];
	FILE *f;

	snprintf(src, sizeof(src), "%s/ann.S", dir);
	f = fopen(src, "w");
	if (!f)
		return -1;
	fputs(an_source, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s/bin' && gcc -g -static -nostdlib -no-pie -Wl,-Ttext-segment=0x40000000 "
		 "-Wl,--section-start=delta_text=0x40010000 -Wl,--section-start=junk_text=0x40020000 "
		 "-Wl,--section-start=bogus_text=0x40030000 -Wl,--no-warn-rwx-segments -Wl,--build-id=sha1 "
		 "-o '%s/bin/ann' '%s'",
		 dir, dir, src);
	return system(cmd) == 0 ? 0 : -1;
}

static int setup(void **state)
{
	/* Instruction offsets in delta: 0 nop, 1 mov, 4 add, 8 ret. */
	static const struct { uint64_t ip; int n; } at[] = {
		{ AN_DELTA + 1, 2 }, { AN_DELTA + 4, 3 }, { AN_DELTA + 5, 1 }, { AN_DELTA + 8, 1 },
		{ AN_JUNK, 2 }, { AN_JUNK + 20, 1 }, { AN_BOGUS + 1, 1 },
	};
	struct profile_options opt = { 0 };
	struct kp_writer *w;
	char path[600], err[512];
	int fd, rc = 0;
	uint64_t t = 10;

	(void)state;
	dir = fx_mkdir();
	if (!dir || build())
		return -1;
	snprintf(path, sizeof(path), "%s/annotate.data", dir);
	w = fx_writer(path, &fd);
	if (!w)
		return -1;
	rc |= fx_event(w, 1, "cycles", 1000, 0);
	rc |= fx_comm(w, 10, 10, 1, 0, "ann");
	rc |= fx_mmap(w, 10, 2, 0x40000000, 0x40000, 0, "/bin/ann", NULL, 0);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		for (int k = 0; k < at[i].n; k++)
			rc |= fx_sample(w, 1, 10, t++, at[i].ip, KP_CPL_USER, NULL, 0);
	rc |= fx_close(w, fd);
	opt.root = dir;
	if (rc || profile_load(&prof, path, &opt, err, sizeof(err)))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	profile_free(prof);
	fx_rmdir(dir);
	return 0;
}

/* Annotates symbol (NULL: the hottest) into memory; *rc gets the renderer's return value. */
static char *annotate(const char *symbol, int *rc)
{
	struct report_annotate_options opt = { .prog = "test", .symbol = symbol, .event = PROFILE_NONE };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	*rc = report_annotate(f, prof, &opt);
	fclose(f);
	return buf;
}

/* The hottest function by default; each instruction's exact count; the sample inside `add` said apart. */
static void test_counts_and_lines(void **state)
{
	char want[2048];
	char *out;
	int rc;

	(void)state;
	out = annotate(NULL, &rc);
	assert_int_equal(rc, 0);
	snprintf(want, sizeof(want),
		 "delta (ann, /bin/ann): 7 samples\n"
		 " Percent  Samples  Address    Instruction\n"
		 "                              %1$s/ann.S:10\n"
		 "    0.00        0 40010000:   nop\n"
		 "                              %1$s/ann.S:11\n"
		 "   28.57        2 40010001:   movq    %%rdi, %%rax\n"
		 "                              %1$s/ann.S:12\n"
		 "   42.86        3 40010004:   addq    $1, %%rax\n"
		 "                              %1$s/ann.S:13\n"
		 "   14.29        1 40010008:   retq\n"
		 "1 samples fell inside an instruction, not on its first byte (not counted above)\n",
		 dir);
	assert_string_equal(out, want);
	free(out);
	/* By name: the same listing. */
	out = annotate("delta", &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(out, want);
	free(out);
}

/* Bytes that do not decode: 16 shown as (bad), then the listing stops; the sample past them is said. */
static void test_undecodable(void **state)
{
	char *out, *line;
	int rc, bad = 0;

	(void)state;
	out = annotate("junk", &rc);
	assert_int_equal(rc, 0);
	for (line = out; (line = strstr(line, "(bad)")); line++)
		bad++;
	assert_int_equal(bad, 16);
	assert_non_null(strstr(out, "  66.67        2 40020000:   (bad)   .byte 0x06\n"));
	assert_non_null(strstr(out, "\n1 samples fell outside the code shown\n"));
	free(out);
}

/* A size of 2 GB: only the segment's two bytes are read and shown. */
static void test_bogus_size(void **state)
{
	char *out;
	int rc;

	(void)state;
	out = annotate("bogus", &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "    0.00        0 40030000:   nop\n"));
	assert_non_null(strstr(out, "  100.00        1 40030001:   retq\n"));
	assert_null(strstr(out, "40030002"));
	free(out);
}

static void test_unknown_symbol(void **state)
{
	char *out;
	int rc;

	(void)state;
	out = annotate("detla", &rc);
	assert_int_equal(rc, -ECANCELED);
	assert_string_equal(out, "");
	free(out);
}

/* Runs last: the file is rewritten after its symbols were read; its code is refused, not misread. */
static void test_changed_file(void **state)
{
	char path[600], *out;
	FILE *f;
	int rc;

	(void)state;
	snprintf(path, sizeof(path), "%s/bin/ann", dir);
	f = fopen(path, "a");
	assert_non_null(f);
	fputc(0, f);
	fclose(f);
	out = annotate("delta", &rc);
	assert_int_equal(rc, -ECANCELED);
	assert_null(strstr(out, "nop"));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_and_lines),
		cmocka_unit_test(test_undecodable),
		cmocka_unit_test(test_bogus_size),
		cmocka_unit_test(test_unknown_symbol),
		cmocka_unit_test(test_changed_file),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
