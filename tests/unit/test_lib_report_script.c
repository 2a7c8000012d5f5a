/* SPDX-License-Identifier: MIT */
/*
 * report_script (perf script's layout) on a synthetic recording: samples
 * written out of time order on two CPUs, a kernel sample with a user
 * caller, an address no mapping covers, a file the report cannot open and
 * whose name has a space and an escape, a hostile command name, and the
 * cpu-clock fallback. Compared line for line, with stacks and with -G.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lib_fixture.h"
#include "report/report.h"

static char *dir;
static struct profile *prof;

/* fx_sample with a CPU and a period of its own. */
static int sample_on(struct kp_writer *w, uint32_t pid, uint32_t cpu, uint64_t time, uint64_t ip, uint8_t cpl,
		     const uint64_t *chain, uint16_t n)
{
	struct kp_rec_sample *s = calloc(1, sizeof(*s) + n * sizeof(uint64_t));
	int rc;

	if (!s)
		return -1;
	*s = (struct kp_rec_sample){ .event_id = 1, .pid = pid, .tid = pid, .cpu = cpu, .time = time, .ip = ip,
				     .period = 250000, .cpl = cpl, .nr_callchain = n };
	if (n)
		memcpy(s->callchain, chain, n * sizeof(uint64_t));
	rc = kp_writer_add(w, KP_REC_SAMPLE, s, sizeof(*s) + n * sizeof(uint64_t));
	free(s);
	return rc;
}

static int setup(void **state)
{
	static const char ksyms[] = "ffffffff81000000 T kfunc\nffffffff81001000 T kfunc2\n";
	const uint64_t alpha_chain[] = { FX_BETA + 5, FX_START + 1 };
	const uint64_t kernel_chain[] = { FX_BETA + 5 };
	struct profile_options opt = { 0 };
	struct kp_writer *w;
	char path[600], err[512];
	int fd, rc = 0;

	(void)state;
	dir = fx_mkdir();
	if (!dir || fx_build(dir, NULL))
		return -1;
	snprintf(path, sizeof(path), "%s/script.data", dir);
	w = fx_writer(path, &fd);
	if (!w)
		return -1;
	/* Recorded as cycles; cpu-clock stood in (no hardware PMU): perf would name cpu-clock. */
	rc |= fx_event(w, 1, "cycles", 4000, KP_EVENT_FREQ | KP_EVENT_FALLBACK);
	rc |= kp_writer_ksyms(w, ksyms, strlen(ksyms));
	rc |= fx_comm(w, 10, 10, 1, 0, "matmul");
	rc |= fx_mmap(w, 10, 2, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0);
	rc |= fx_comm(w, 11, 11, 1, 0, "evil\x1b]0;x\x07 name");
	rc |= fx_comm(w, 12, 12, 1, 0, "odd");
	rc |= fx_mmap(w, 12, 2, 0x50000000, 0x1000, 0, "/nowhere/a b\x1b", NULL, 0);
	/* CPU 1's buffer first: its later sample comes before CPU 0's earlier one. */
	rc |= sample_on(w, 10, 1, 2000123456, FX_ALPHA + 1, KP_CPL_USER, alpha_chain, 2);
	rc |= sample_on(w, 10, 0, 1500000000, 0xffffffff81000010, KP_CPL_KERNEL, kernel_chain, 1);
	rc |= sample_on(w, 11, 0, 3000000999, 0x1234, KP_CPL_USER, NULL, 0);
	rc |= sample_on(w, 12, 1, 3000001000, 0x50000010, KP_CPL_USER, NULL, 0);
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

static char *script(const struct report_script_options *opt)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(report_script(f, prof, opt), 0);
	fclose(f);
	return buf;
}

/*
 * Stacks by default: perf's header without the ip, a frame a line (a
 * caller's address is its return address), a blank line after each sample.
 */
static void test_stacks(void **state)
{
	char *out;

	(void)state;
	out = script(NULL);
	assert_string_equal(out,
			    "matmul    10/10    kernel [000]     1.500000:     250000 cpu-clock: \n"
			    "\tffffffff81000010 kfunc+0x10 ([kernel.kallsyms])\n"
			    "\t        40020005 beta+0x5 (/bin/fx)\n"
			    "\n"
			    "matmul    10/10    user   [001]     2.000123:     250000 cpu-clock: \n"
			    "\t        40010001 alpha+0x1 (/bin/fx)\n"
			    "\t        40020005 beta+0x5 (/bin/fx)\n"
			    "\t        40001001 _start+0x1 (/bin/fx)\n"
			    "\n"
			    "evil?]0;x? name    11/11    user   [000]     3.000000:     250000 cpu-clock: \n"
			    "\t            1234 [unknown] ([unknown])\n"
			    "\n"
			    "odd    12/12    user   [001]     3.000001:     250000 cpu-clock: \n"
			    "\t        50000010 [unknown] (/nowhere/a_b_)\n"
			    "\n");
	free(out);
}

/* -G: one line a sample, the command right-aligned in 16 columns as perf pads it. */
static void test_hide_callchain(void **state)
{
	const struct report_script_options opt = { .hide_callchain = true };
	char *out;

	(void)state;
	out = script(&opt);
	assert_string_equal(out,
			    "          matmul    10/10    kernel [000]     1.500000:     250000 cpu-clock:  "
			    "ffffffff81000010 kfunc+0x10 ([kernel.kallsyms])\n"
			    "          matmul    10/10    user   [001]     2.000123:     250000 cpu-clock:  "
			    "        40010001 alpha+0x1 (/bin/fx)\n"
			    " evil?]0;x? name    11/11    user   [000]     3.000000:     250000 cpu-clock:  "
			    "            1234 [unknown] ([unknown])\n"
			    "             odd    12/12    user   [001]     3.000001:     250000 cpu-clock:  "
			    "        50000010 [unknown] (/nowhere/a_b_)\n");
	free(out);
}

static const char *layer(const struct profile *p, const struct profile_sample *s, void *ctx)
{
	(void)p;
	(void)ctx;
	return s->pid == 10 ? "guest-kernel" : "vmm-user";
}

/* A profiler's own domain words, the column as wide as the widest. */
static void test_domain_callback(void **state)
{
	const struct report_script_options opt = { .hide_callchain = true, .domain = layer };
	char *out, *second;

	(void)state;
	out = script(&opt);
	assert_non_null(strstr(out, "          matmul    10/10    guest-kernel [000]     1.500000:"));
	second = strchr(out, '\n');
	assert_non_null(second);
	assert_non_null(strstr(second, " evil?]0;x? name    11/11    vmm-user     [000]     3.000000:"));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stacks),
		cmocka_unit_test(test_hide_callchain),
		cmocka_unit_test(test_domain_callback),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
