/* SPDX-License-Identifier: MIT */
/*
 * lib/report/report_*: a synthetic profile (the static fixture, recorded kallsyms,
 * a hostile command name) rendered as folded stacks and as the text table,
 * compared line for line, and as pprof, decoded back with protobuf-c.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include <cmocka.h>

#include "lib_fixture.h"
#include "profile.pb-c.h"
#include "report/report.h"

static char *dir;
static struct profile *prof;

static int setup(void **state)
{
	(void)state;
	return fx_report_profile("report.data", &dir, &prof);
}

static int teardown(void **state)
{
	(void)state;
	profile_free(prof);
	fx_rmdir(dir);
	return 0;
}

/* Runs a renderer into memory. */
static char *render(int (*fn)(FILE *, const struct profile *, const void *), const void *arg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(fn(f, prof, arg), 0);
	fclose(f);
	return buf;
}

static int folded_first(FILE *f, const struct profile *p, const void *arg)
{
	(void)arg;
	return report_folded(f, p, report_folded_event(p));
}

static int text(FILE *f, const struct profile *p, const void *arg)
{
	return report_text(f, p, arg);
}

static void test_folded(void **state)
{
	char *out;

	(void)state;
	out = render(folded_first, NULL);
	assert_string_equal(out,
			    "a_b_c;[unknown]`[unknown] 1\n"
			    "matmul;fx`_start;fx`beta 1\n"
			    "matmul;fx`_start;fx`beta;fx`alpha 3\n"
			    "matmul;fx`beta;[kernel.kallsyms]`kfunc 2\n");
	free(out);
}

static void test_text(void **state)
{
	struct report_options opt = { 0 };
	char *out, err[200];

	(void)state;
	assert_int_equal(report_keys_parse("image,symbol", REPORT_KEYS_COMMON, &opt.table.keys, err, sizeof(err)), 0);
	out = render(text, &opt);
	assert_string_equal(out,
			    "Event cycles (period 1000): 7 samples, 0 lost\n"
			    " samples       %  image              symbol\n"
			    "       3  42.86%  fx                 alpha\n"
			    "       2  28.57%  [kernel.kallsyms]  kfunc\n"
			    "       1  14.29%  [unknown]          [unknown]\n"
			    "       1  14.29%  fx                 beta\n"
			    "# 1 of 7 samples (14.29%) have no symbol\n");
	free(out);

	assert_int_equal(report_keys_parse("pid,image,symbol", REPORT_KEYS_COMMON, &opt.table.keys, err, sizeof(err)), 0);
	opt.callgraph = true;
	out = render(text, &opt);
	assert_string_equal(out,
			    "Event cycles (period 1000): 7 samples, 0 lost\n"
			    " samples       %      pid  command  image              symbol\n"
			    "       3  42.86%       10  matmul   fx                 alpha\n"
			    "       2  28.57%       10  matmul   [kernel.kallsyms]  kfunc\n"
			    "       1  14.29%       11  a b;c    [unknown]          [unknown]\n"
			    "       1  14.29%       10  matmul   fx                 beta\n"
			    "# 1 of 7 samples (14.29%) have no symbol\n"
			    "\n"
			    "Callers of the top symbols (outermost first):\n"
			    "\n"
			    "       3  42.86%  fx  alpha\n"
			    "          100.00%  _start > beta > alpha\n"
			    "\n"
			    "       2  28.57%  [kernel.kallsyms]  kfunc\n"
			    "          100.00%  beta [fx] > kfunc\n"
			    "\n"
			    "       1  14.29%  [unknown]  [unknown]\n"
			    "          100.00%  (no callers recorded)\n"
			    "\n"
			    "       1  14.29%  fx  beta\n"
			    "          100.00%  _start > beta\n");
	free(out);
}

/*
 * A guest names its processes: C1 controls (raw 0x80-0x9f, which 8-bit
 * terminals take as CSI and friends, or U+0080-U+009F in UTF-8) must not
 * reach the terminal or the folded lines; valid UTF-8 text stays as it is.
 */
static void test_c1_controls(void **state)
{
	struct report_options ropt = { .table.keys = { { REPORT_KEY_PID, REPORT_KEY_DSO, REPORT_KEY_SYM }, 3 } };
	struct profile_options opt = { 0 };
	struct profile *saved = prof, *p;
	struct kp_writer *w;
	char path[600], err[512];
	char *out;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/c1.data", dir);
	w = fx_writer(path, &fd);
	assert_non_null(w);
	assert_int_equal(fx_comm(w, 12, 12, 1, 0, "raw\x9b[2Jcsi\x90" "dcs"), 0);
	assert_int_equal(fx_comm(w, 13, 13, 1, 0, "utf\xc2\x9b[2J\xc2\x85nel"), 0);
	assert_int_equal(fx_comm(w, 14, 14, 1, 0, "caf\xc3\xa9\xe2\x82\xac"), 0);
	assert_int_equal(fx_sample(w, 1, 12, 2, 0x1234, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 13, 3, 0x1234, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 14, 4, 0x1234, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_close(w, fd), 0);
	assert_int_equal(profile_load(&p, path, &opt, err, sizeof(err)), 0);
	prof = p;

	out = render(text, &ropt);
	for (const unsigned char *c = (const unsigned char *)out; *c; c++)
		assert_false(*c >= 0x80 && *c <= 0x9f && c[-1] != 0xe2); /* only the euro sign's 0x82 */
	assert_non_null(strstr(out, "raw?[2Jcsi?dcs"));
	assert_non_null(strstr(out, "utf??[2J??nel"));
	assert_non_null(strstr(out, "caf\xc3\xa9\xe2\x82\xac"));
	free(out);
	out = render(folded_first, NULL);
	assert_non_null(strstr(out, "raw_[2Jcsi_dcs;"));
	assert_non_null(strstr(out, "utf__[2J__nel;"));
	assert_non_null(strstr(out, "caf\xc3\xa9\xe2\x82\xac;"));
	free(out);
	prof = saved;
	profile_free(p);
}

/*
 * META throttled (the bundled guest's agent) becomes one line after the
 * table, as perf report counts THROTTLE records; a value that is no count
 * (the file is input) gives none, and neither does 0.
 */
static void test_throttled(void **state)
{
	static const struct {
		const char *value, *line; /* line: NULL for none */
	} cases[] = {
		{ "17", "\n# sampling throttled 17 times (a CPU's PMI budget for a tick ran out)\n" },
		{ "0", NULL },
		{ "17x", NULL },
		{ "-1", NULL },
		{ "99999999999999999999999", NULL },
		{ "", NULL },
	};
	struct report_options ropt = { .table.keys = { { REPORT_KEY_SYM }, 1 } };
	struct profile_options opt = { 0 };
	struct profile *saved = prof, *p;
	char path[600], err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct kp_writer *w;
		char *out;
		int fd;

		snprintf(path, sizeof(path), "%s/throttled%zu.data", dir, i);
		w = fx_writer(path, &fd);
		assert_non_null(w);
		assert_int_equal(kp_writer_meta(w, "throttled", cases[i].value), 0);
		assert_int_equal(fx_sample(w, 1, 12, 2, 0x1234, KP_CPL_USER, NULL, 0), 0);
		assert_int_equal(fx_close(w, fd), 0);
		assert_int_equal(profile_load(&p, path, &opt, err, sizeof(err)), 0);
		prof = p;
		out = render(text, &ropt);
		if (cases[i].line)
			assert_non_null(strstr(out, cases[i].line));
		else
			assert_null(strstr(out, "throttled"));
		free(out);
		prof = saved;
		profile_free(p);
	}
}

static uint8_t *gunzip(const uint8_t *in, size_t len, size_t *out_len)
{
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap);
	z_stream z = { 0 };

	assert_non_null(out);
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (uint8_t *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	*out_len = z.total_out;
	inflateEnd(&z);
	return out;
}

static const char *func_name(const Perftools__Profiles__Profile *pb, uint64_t loc_id)
{
	size_t i, j;

	for (i = 0; i < pb->n_location; i++) {
		const Perftools__Profiles__Location *l = pb->location[i];

		if (l->id != loc_id)
			continue;
		if (!l->n_line)
			return "(no function)";
		for (j = 0; j < pb->n_function; j++)
			if (pb->function[j]->id == l->line[0]->function_id)
				return pb->string_table[pb->function[j]->name];
	}
	return "(no location)";
}

static void test_pprof_round_trip(void **state)
{
	Perftools__Profiles__Profile *pb;
	uint8_t *gz = NULL, *raw;
	size_t gz_len = 0, raw_len, i;
	uint64_t total = 0, weight = 0;
	bool saw_alpha_stack = false;
	FILE *f;

	(void)state;
	f = open_memstream((char **)&gz, &gz_len);
	assert_non_null(f);
	assert_int_equal(report_pprof(f, prof, NULL), 0);
	fclose(f);
	assert_true(gz_len > 18);
	assert_int_equal(gz[0], 0x1f); /* gzip magic */
	assert_int_equal(gz[1], 0x8b);
	raw = gunzip(gz, gz_len, &raw_len);
	pb = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	assert_non_null(pb);

	assert_string_equal(pb->string_table[0], "");
	assert_int_equal(pb->n_sample_type, 2);
	assert_string_equal(pb->string_table[pb->sample_type[0]->type], "samples");
	assert_string_equal(pb->string_table[pb->sample_type[0]->unit], "count");
	assert_string_equal(pb->string_table[pb->sample_type[1]->type], "cycles");
	assert_string_equal(pb->string_table[pb->period_type->type], "cycles");
	assert_int_equal(pb->period, 1000);
	for (i = 0; i < pb->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pb->sample[i];

		assert_int_equal(s->n_value, 2);
		total += (uint64_t)s->value[0];
		weight += (uint64_t)s->value[1];
		/* Every location id refers to a location. */
		for (size_t j = 0; j < s->n_location_id; j++)
			assert_string_not_equal(func_name(pb, s->location_id[j]), "(no location)");
		if (s->value[0] == 3) {
			assert_int_equal(s->n_location_id, 3);
			assert_string_equal(func_name(pb, s->location_id[0]), "alpha");
			assert_string_equal(func_name(pb, s->location_id[1]), "beta");
			assert_string_equal(func_name(pb, s->location_id[2]), "_start");
			assert_int_equal(s->n_label, 2);
			assert_string_equal(pb->string_table[s->label[0]->key], "pid");
			assert_int_equal(s->label[0]->num, 10);
			assert_string_equal(pb->string_table[s->label[1]->str], "matmul");
			saw_alpha_stack = true;
		}
	}
	assert_true(saw_alpha_stack);
	assert_int_equal(total, 7);
	assert_int_equal(weight, 7000);
	/* Mappings: ids are unique and non-zero, fx carries its path. */
	for (i = 0; i < pb->n_mapping; i++) {
		assert_int_equal(pb->mapping[i]->id, i + 1);
		if (!strcmp(pb->string_table[pb->mapping[i]->filename], "/bin/fx")) {
			assert_int_equal(pb->mapping[i]->memory_start, 0x40000000);
			assert_true(pb->mapping[i]->has_functions);
		}
	}
	perftools__profiles__profile__free_unpacked(pb, NULL);
	free(raw);
	free(gz);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folded),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_c1_controls),
		cmocka_unit_test(test_throttled),
		cmocka_unit_test(test_pprof_round_trip),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
