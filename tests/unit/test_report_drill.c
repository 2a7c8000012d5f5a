/* SPDX-License-Identifier: MIT */
/*
 * kvmprof report's cross-layer renderers on a small profile built in
 * memory (profile_exit_fixture.h): --drill (host_report_drill: the heaviest
 * path from the whole recording, a process or a function down to the
 * ultimate bottleneck) and --exits (host_report_exits: exits and their
 * host time by reason, guest function and guest process).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <linux/perf_event.h>

#include "host_report.h"
#include "profile_exit_fixture.h"

#define MS 1000000ull

/*
 * Guest process spam (pid 7) writes to port 0x3f8 three times from the
 * guest kernel (twice in console_write, once in guest_syscall), each exit
 * 10 ms on the host; pmu (pid 8) reads MSR 0xc1 once from guest user code
 * (alpha), 1 ms. Host samples of cpu-clock, each with a 1 ms period (the
 * event's 500 Hz rate is not what counts), on vCPU thread 101:
 *   console_write's exits: 4 in the host kernel (handle_io), 2 in the VMM (alpha)
 *   guest_syscall's exit:  2 in the host kernel
 *   pmu's exit:            2 in the VMM: more than its 1 ms (nothing waits)
 *   outside any exit:      2 in the VMM (the VMM's own process)
 * and 2 guest samples of spam in its own beta. 14 samples in all.
 */
static struct profile *cross_layer_profile(void)
{
	static const uint64_t from_console[] = { PF_GUEST_SYSCALL + 0x21, FX_BETA + 5 };
	static const uint64_t from_syscall[] = { FX_BETA + 5 };
	static const uint64_t from_alpha[] = { FX_BETA + 5 };
	static const uint64_t vmm_chain[] = { FX_BETA + 5 };
	static const uint64_t kernel_chain[] = { FX_ALPHA + 2, FX_BETA + 5 };
	struct profile_options opt = { .guest_root = pf_dir, .cross_layer = true };
	struct profile *p;

	assert_int_equal(profile_new(&p, &opt), 0);
	pf_world(p, pf_native_elf);
	pf_event(p, 0, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 500, KP_EVENT_FREQ);
	for (uint64_t t = 10 * MS; t <= 50 * MS; t += 20 * MS) {
		bool in_console = t < 50 * MS;

		pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_SPAM_PID, .time = t, .end = t + 10 * MS,
						 .ip = in_console ? PF_CONSOLE_WRITE + 0x10 : PF_GUEST_SYSCALL + 0x10,
						 .kind = KP_EXIT_IO_OUT, .detail = 0x3f8, .cpl = KP_CPL_KERNEL,
						 .chain = in_console ? from_console : from_syscall,
						 .chain_len = in_console ? 2 : 1 });
		pf_host_sample(p, 101, t + 1 * MS, PF_HANDLE_IO + 8, KP_CPL_KERNEL, kernel_chain, 2);
		pf_host_sample(p, 101, t + 2 * MS, PF_HANDLE_IO + 8, KP_CPL_KERNEL, kernel_chain, 2);
		if (in_console)
			pf_host_sample(p, 101, t + 3 * MS, FX_ALPHA + 1, KP_CPL_USER, vmm_chain, 1);
	}
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_PMU_PID, .time = 70 * MS, .end = 71 * MS,
					 .ip = FX_ALPHA + 1, .kind = KP_EXIT_MSR_READ, .detail = 0xc1,
					 .cpl = KP_CPL_USER, .chain = from_alpha, .chain_len = 1 });
	pf_host_sample(p, 101, 70 * MS + 200000, FX_ALPHA + 1, KP_CPL_USER, vmm_chain, 1);
	pf_host_sample(p, 101, 70 * MS + 500000, FX_ALPHA + 1, KP_CPL_USER, vmm_chain, 1);
	pf_host_sample(p, 101, 80 * MS, FX_ALPHA + 1, KP_CPL_USER, vmm_chain, 1);
	pf_host_sample(p, 101, 81 * MS, FX_ALPHA + 1, KP_CPL_USER, vmm_chain, 1);
	pf_sample(p, KP_DOMAIN_GUEST, PF_SPAM_PID, PF_SPAM_PID, 90 * MS, 1, FX_BETA + 1, KP_CPL_USER, NULL, 0);
	pf_sample(p, KP_DOMAIN_GUEST, PF_SPAM_PID, PF_SPAM_PID, 91 * MS, 1, FX_BETA + 1, KP_CPL_USER, NULL, 0);
	assert_int_equal(profile_finish(p), 0);
	assert_int_equal(p->nr_samples, 14);
	assert_int_equal(p->nr_exits, 4);
	assert_int_equal(p->exit_samples, 10);
	return p;
}

/* What a renderer wrote to a memory stream: its text (the caller frees it) and return value. */
struct rendered {
	char *text;
	int rc;
};

static struct rendered drill(struct profile *p, const char *start, double threshold)
{
	struct rendered r = { 0 };
	size_t len;
	FILE *f = open_memstream(&r.text, &len);

	assert_non_null(f);
	r.rc = host_report_drill(f, p, start, threshold);
	assert_int_equal(fclose(f), 0);
	return r;
}

static struct rendered exits(const struct profile *p)
{
	struct rendered r = { 0 };
	size_t len;
	FILE *f = open_memstream(&r.text, &len);

	assert_non_null(f);
	r.rc = host_report_exits(f, p);
	assert_int_equal(fclose(f), 0);
	return r;
}

/*
 * From the whole recording the path goes down the guest process that
 * caused the exits, its function, its kernel, the exit, the VMM and ends in
 * the host kernel; the siblings worth a look are listed where they branch.
 */
static void test_drill_whole_recording(void **state)
{
	static const char want[] =
	"kvmprof drill-down from the whole recording: 14 samples; 10 host samples joined to VM exits\n"
	"Each step follows the heaviest child while it holds at least 5.0% and outweighs the frame's own\n"
	"time; shares are of the start: with callees (total) and the frame alone (self).\n"
	"\n"
	" step   total    self  layer         frame\n"
	"    0  100.0%    0.0%                all (the whole recording: the VM, the VMM, the host kernel for both)\n"
	"                          also  14.3%  pmu [8] (guest process)\n"
	"                          also  14.3%  vmm [100] (host process)\n"
	"    1   71.4%    0.0%  process       spam [7] (guest process)\n"
	"    2   71.4%   14.3%  guest user    fx`beta\n"
	"    3   57.1%    0.0%  guest kernel  [guest.kernel]`guest_syscall\n"
	"                          also  14.3%  [exit: io out 0x3f8]\n"
	"    4   42.9%    0.0%  guest kernel  [guest.kernel]`console_write\n"
	"    5   42.9%    0.0%  VM exit       [exit: io out 0x3f8]\n"
	"    6   42.9%    0.0%  VMM user      fx`beta\n"
	"    7   42.9%   14.3%  VMM user      fx`alpha\n"
	"    8   28.6%   28.6%  host kernel   [kernel.kallsyms]`handle_io\n"
	"\n"
	"path by layer:\n"
	"  guest user: beta\n"
	"  guest kernel: guest_syscall -> console_write\n"
	"  VM exit: [exit: io out 0x3f8] (42.9%)\n"
	"  VMM user: beta -> alpha\n"
	"  host kernel: handle_io\n"
	"ultimate bottleneck: [kernel.kallsyms]`handle_io, host kernel: 28.6% self, 28.6% with its callees\n";
	struct profile *p = cross_layer_profile();
	struct rendered r = drill(p, NULL, 5.0);

	(void)state;
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.text, want);
	free(r.text);
	profile_free(p);
}

/* The path below console_write, whoever called it: START as "symbol" and as "image`symbol". */
static const char console_write_path[] =
	"Each step follows the heaviest child while it holds at least 5.0% and outweighs the frame's own\n"
	"time; shares are of the start: with callees (total) and the frame alone (self).\n"
	"\n"
	" step   total    self  layer         frame\n"
	"    0  100.0%    0.0%  guest kernel  [guest.kernel]`console_write\n"
	"    1  100.0%    0.0%  VM exit       [exit: io out 0x3f8]\n"
	"    2  100.0%    0.0%  VMM user      fx`beta\n"
	"    3  100.0%   33.3%  VMM user      fx`alpha\n"
	"    4   66.7%   66.7%  host kernel   [kernel.kallsyms]`handle_io\n"
	"\n"
	"path by layer:\n"
	"  guest kernel: console_write\n"
	"  VM exit: [exit: io out 0x3f8] (100.0%)\n"
	"  VMM user: beta -> alpha\n"
	"  host kernel: handle_io\n"
	"ultimate bottleneck: [kernel.kallsyms]`handle_io, host kernel: 66.7% self, 66.7% with its callees\n";

static void test_drill_from_function(void **state)
{
	static const char *const starts[] = { "console_write", "[guest.kernel]`console_write" };
	struct profile *p = cross_layer_profile();
	char want[2048];

	(void)state;
	for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
		struct rendered r = drill(p, starts[i], 5.0);

		assert_int_equal(r.rc, 0);
		snprintf(want, sizeof(want),
			 "kvmprof drill-down from '%s': 6 samples (42.9%% of all 14); 10 host samples joined to VM exits\n%s",
			 starts[i], console_write_path);
		assert_string_equal(r.text, want);
		free(r.text);
	}
	profile_free(p);
}

/* From an exit's own frame: every host sample that handled such an exit, whichever guest code caused it. */
static void test_drill_from_exit_frame(void **state)
{
	struct profile *p = cross_layer_profile();
	struct rendered r = drill(p, "[exit: io out 0x3f8]", 5.0);

	(void)state;
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.text, "from '[exit: io out 0x3f8]': 8 samples (57.1% of all 14)"));
	assert_non_null(strstr(r.text, "    0  100.0%    0.0%  VM exit       [exit: io out 0x3f8]\n"
				       "    1  100.0%    0.0%  VMM user      fx`beta\n"
				       "    2  100.0%   25.0%  VMM user      fx`alpha\n"
				       "    3   75.0%   75.0%  host kernel   [kernel.kallsyms]`handle_io\n"));
	assert_non_null(strstr(r.text, "\nultimate bottleneck: [kernel.kallsyms]`handle_io, host kernel: 75.0% self, "
				       "75.0% with its callees\n"));
	free(r.text);
	profile_free(p);
}

/* From a guest process: its own samples and the host work done for its exits, nothing else. */
static void test_drill_from_process(void **state)
{
	struct profile *p = cross_layer_profile();
	struct rendered r = drill(p, "spam", 5.0);

	(void)state;
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.text, "kvmprof drill-down from 'spam': 10 samples (71.4% of all 14);"));
	assert_non_null(strstr(r.text, "    0  100.0%    0.0%  process       spam (process)\n"
				       "    1  100.0%   20.0%  guest user    fx`beta\n"));
	assert_null(strstr(r.text, "pmu"));
	assert_null(strstr(r.text, "vmm"));
	assert_non_null(strstr(r.text, "\nultimate bottleneck: [kernel.kallsyms]`handle_io, host kernel: 40.0% self, "
				       "40.0% with its callees\n"));
	free(r.text);
	profile_free(p);
}

/* A child below the threshold is not followed: the walk stops above it. */
static void test_drill_threshold(void **state)
{
	struct profile *p = cross_layer_profile();
	struct rendered r = drill(p, NULL, 40.0);

	(void)state;
	assert_int_equal(r.rc, 0);
	/* handle_io holds 28.6%: below 40%, so alpha is where the walk ends; the 14.3% siblings are not listed. */
	assert_null(strstr(r.text, "handle_io"));
	assert_null(strstr(r.text, " also "));
	assert_non_null(strstr(r.text, "\nultimate bottleneck: fx`alpha, VMM user: 14.3% self, 42.9% with its callees\n"));
	free(r.text);
	profile_free(p);
}

/*
 * Ties: between equally heavy children the smaller key wins whatever order
 * the samples came in (pid 100 before pid 200, though 200's came first),
 * and a child that holds only as much as its parent's own time is not
 * followed: the parent is the bottleneck.
 */
static void test_drill_ties(void **state)
{
	static const uint64_t vmm_chain[] = { FX_BETA + 5 };
	static const uint64_t kernel_chain[] = { FX_ALPHA + 2, FX_BETA + 5 };
	struct profile_options opt = { .guest_root = pf_dir, .cross_layer = true };
	struct profile *p;
	struct rendered r;

	(void)state;
	assert_int_equal(profile_new(&p, &opt), 0);
	pf_world(p, pf_native_elf);
	pf_sample(p, KP_DOMAIN_NATIVE, 200, 200, 1 * MS, MS, PF_HOST_ENTRY + 8, KP_CPL_KERNEL, NULL, 0);
	pf_sample(p, KP_DOMAIN_NATIVE, 200, 200, 2 * MS, MS, PF_HOST_ENTRY + 8, KP_CPL_KERNEL, NULL, 0);
	pf_host_sample(p, 101, 3 * MS, FX_ALPHA + 1, KP_CPL_USER, vmm_chain, 1);
	pf_host_sample(p, 101, 4 * MS, PF_HANDLE_IO + 8, KP_CPL_KERNEL, kernel_chain, 2);
	assert_int_equal(profile_finish(p), 0);
	r = drill(p, NULL, 5.0);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.text, "    0  100.0%    0.0%                all (the whole recording: the VM, the VMM, "
				       "the host kernel for both)\n"
				       "                          also  50.0%  :200 [200] (host process)\n"
				       "    1   50.0%    0.0%  process       vmm [100] (host process)\n"
				       "    2   50.0%    0.0%  VMM user      fx`beta\n"
				       "    3   50.0%   25.0%  VMM user      fx`alpha\n"
				       "                          also  25.0%  [kernel.kallsyms]`handle_io\n\n"));
	assert_non_null(strstr(r.text, "\nultimate bottleneck: fx`alpha, VMM user: 25.0% self, 50.0% with its callees\n"));
	free(r.text);
	profile_free(p);
}

/* A START no stack has: -ECANCELED (it said why on stderr), nothing on out. */
static void test_drill_start_not_found(void **state)
{
	static const char *const starts[] = { "nosuch", "[kernel.kallsyms]`console_write", "console_writ", "`console_write",
					      "fx`" };
	struct profile *p = cross_layer_profile();

	(void)state;
	for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
		struct rendered r = drill(p, starts[i], 5.0);

		assert_int_equal(r.rc, -ECANCELED);
		assert_string_equal(r.text, "");
		free(r.text);
	}
	profile_free(p);
}

static void test_drill_no_samples(void **state)
{
	struct profile *p;
	struct rendered r;

	(void)state;
	assert_int_equal(profile_new(&p, &(struct profile_options){ .cross_layer = true }), 0);
	assert_int_equal(profile_finish(p), 0);
	r = drill(p, NULL, 5.0);
	assert_int_equal(r.rc, -ECANCELED);
	assert_string_equal(r.text, "");
	free(r.text);
	profile_free(p);
}

/*
 * Counts and host time per reason, guest function and guest process: the
 * exits' intervals, the joined samples' 1 ms each split user/kernel (the
 * cpu-clock period, not the 500 Hz rate), waiting the rest, never below 0.
 */
static void test_exits_table(void **state)
{
	static const char want[] =
	"kvmprof exit cost: 4 VM exits, 31.00 ms of host time from exit to next entry; 10 host samples in those intervals\n"
	"host ms: exit to next entry; VMM user, host kern: the vCPU thread's host samples in those intervals x their period; waiting: the rest (off CPU, or too short for the sampling rate).\n"
	"Not here: ? exit records the VMM left out to keep ring room for samples, and records lost in the rings (0, "
	"counted with the samples).\n"
	"\n"
	"by reason\n"
	"    exits    host ms   VMM user  host kern    waiting  samples  reason              \n"
	"        3      30.00       2.00       6.00      22.00        8  io out 0x3f8        \n"
	"        1       1.00       2.00       0.00       0.00        2  msr read 0xc1       \n"
	"\n"
	"by guest function (at the exit's RIP) and reason\n"
	"    exits    host ms   VMM user  host kern    waiting  samples  reason                guest process             guest function at the exit\n"
	"        2      20.00       2.00       4.00      14.00        6  io out 0x3f8          spam [7]                  [guest.kernel]`console_write\n"
	"        1      10.00       0.00       2.00       8.00        2  io out 0x3f8          spam [7]                  [guest.kernel]`guest_syscall\n"
	"        1       1.00       2.00       0.00       0.00        2  msr read 0xc1         pmu [8]                   fx`alpha\n"
	"\n"
	"by guest process\n"
	"    exits    host ms   VMM user  host kern    waiting  samples  guest process           \n"
	"        3      30.00       2.00       6.00      22.00        8  spam [7]                \n"
	"        1       1.00       2.00       0.00       0.00        2  pmu [8]                 \n";
	struct profile *p = cross_layer_profile();
	struct rendered r = exits(p);

	(void)state;
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.text, want);
	free(r.text);
	profile_free(p);
}

/* Another event than the clocks: a sample stands for 1/rate (1 ms at 1000 Hz), or nothing with a fixed period. */
static void test_exits_sample_time_by_event(void **state)
{
	static const struct {
		uint32_t type, flags;
		uint64_t config, period;
		const char *row;
	} cases[] = {
		{ PERF_TYPE_HARDWARE, KP_EVENT_FREQ, PERF_COUNT_HW_CPU_CYCLES, 1000,
		  "        1      10.00       0.00       1.00       9.00        1  io out 0x3f8" },
		{ PERF_TYPE_HARDWARE, 0, PERF_COUNT_HW_CPU_CYCLES, 100000,
		  "        1      10.00       0.00       0.00      10.00        1  io out 0x3f8" },
		{ PERF_TYPE_SOFTWARE, 0, PERF_COUNT_SW_TASK_CLOCK, 100000,
		  "        1      10.00       0.00       0.25       9.75        1  io out 0x3f8" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct profile_options opt = { .guest_root = pf_dir, .cross_layer = true };
		struct profile *p;
		struct rendered r;

		assert_int_equal(profile_new(&p, &opt), 0);
		pf_world(p, pf_native_elf);
		pf_event(p, 0, cases[i].type, cases[i].config, cases[i].period, cases[i].flags);
		pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_SPAM_PID, .time = 10 * MS, .end = 20 * MS,
						 .ip = PF_CONSOLE_WRITE, .kind = KP_EXIT_IO_OUT, .detail = 0x3f8,
						 .cpl = KP_CPL_KERNEL });
		pf_sample(p, KP_DOMAIN_NATIVE, PF_VMM_PID, 101, 15 * MS, MS / 4, PF_HANDLE_IO, KP_CPL_KERNEL, NULL, 0);
		assert_int_equal(profile_finish(p), 0);
		r = exits(p);
		assert_int_equal(r.rc, 0);
		assert_non_null(strstr(r.text, cases[i].row));
		free(r.text);
		profile_free(p);
	}
}

static void test_exits_none(void **state)
{
	struct profile *p;
	struct rendered r;

	(void)state;
	assert_int_equal(profile_new(&p, &(struct profile_options){ .cross_layer = true }), 0);
	pf_host_sample(p, 101, 1000, PF_HANDLE_IO, KP_CPL_KERNEL, NULL, 0);
	assert_int_equal(profile_finish(p), 0);
	r = exits(p);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.text, "kvmprof exit cost: 0 VM exits, 0.00 ms of host time from exit to next entry; 0 host "
				    "samples in those intervals\n(the recording has no VM exit records: recorded with --no-exits "
				    "or by a kvmprof before sample file 1.4, or the VM made no exit while it ran)\n");
	free(r.text);
	profile_free(p);
}

/*
 * What the guest says reaches the terminal only as printable text: a guest
 * process named with terminal escapes; an exit of a kind this build does
 * not know is named by its number.
 */
static void test_hostile_guest_names(void **state)
{
	struct profile_options opt = { .guest_root = pf_dir, .cross_layer = true };
	struct profile *p;
	struct rendered r;

	(void)state;
	assert_int_equal(profile_new(&p, &opt), 0);
	pf_world(p, pf_native_elf);
	pf_comm(p, 9, "ev\x1b]0;x\x07il", true);
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = 9, .time = 10 * MS, .end = 20 * MS, .ip = 0x5000,
					 .kind = 200, .detail = 1, .cpl = KP_CPL_USER });
	pf_host_sample(p, 101, 15 * MS, FX_ALPHA + 1, KP_CPL_USER, NULL, 0);
	assert_int_equal(profile_finish(p), 0);

	r = exits(p);
	assert_int_equal(r.rc, 0);
	assert_null(strchr(r.text, '\x1b'));
	assert_null(strchr(r.text, '\x07'));
	assert_non_null(strstr(r.text, "  kind 200            \n"));
	assert_non_null(strstr(r.text, "  kind 200              ev?]0;x?il [9]"));
	free(r.text);

	r = drill(p, NULL, 5.0);
	assert_int_equal(r.rc, 0);
	assert_null(strchr(r.text, '\x1b'));
	assert_null(strchr(r.text, '\x07'));
	assert_non_null(strstr(r.text, "  process       ev?]0;x?il [9] (guest process)\n"));
	assert_non_null(strstr(r.text, "  VM exit       [exit: kind 200]\n"));
	free(r.text);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drill_whole_recording),
		cmocka_unit_test(test_drill_from_function),
		cmocka_unit_test(test_drill_from_exit_frame),
		cmocka_unit_test(test_drill_from_process),
		cmocka_unit_test(test_drill_threshold),
		cmocka_unit_test(test_drill_ties),
		cmocka_unit_test(test_drill_start_not_found),
		cmocka_unit_test(test_drill_no_samples),
		cmocka_unit_test(test_exits_table),
		cmocka_unit_test(test_exits_sample_time_by_event),
		cmocka_unit_test(test_exits_none),
		cmocka_unit_test(test_hostile_guest_names),
	};

	return cmocka_run_group_tests(tests, pf_setup, pf_teardown);
}
