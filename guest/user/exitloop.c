/* SPDX-License-Identifier: MIT */
/*
 * exitloop MODE [count] [pause_ms]: makes VM exits of one kind in a loop,
 * from a function of its own, for the cross-layer profiles (issue 14):
 *   console  console_log() writes `count` lines of 32 bytes with write(1):
 *            the guest kernel's sys_write -> console_write, one OUT to
 *            port 0x3f8 per byte;
 *   msr      read_pmc_msr() reads the first PMU counter's MSR (0xc1,
 *            IA32_PMC0, on the Intel model; 0xc0010004, PERF_CTR0, on the
 *            AMD one) `count` times through the guest kernel (needs
 *            "pmutest" on the command line): one RDMSR exit each.
 * pause_ms (default 0): sleep first, so that a profiler attached meanwhile
 * sees every exit. Prints what it did, for the tests to compare.
 */
#include "libc.h"

#define COM1 0x3f8

static __attribute__((noinline)) void console_log(long lines)
{
	static const char line[] = "exitloop: console line .......\n"; /* 32 bytes with the NUL: 31 written */

	for (long i = 0; i < lines; i++)
		write(1, line, sizeof(line) - 1);
}

static __attribute__((noinline)) long read_pmc_msr(uint32_t msr, long n)
{
	uint64_t v;
	long bad = 0;

	for (long i = 0; i < n; i++)
		bad += pmu_test_rdmsr(msr, &v) != 0;
	return bad;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "console";
	long count = atol_def(argc > 2 ? argv[2] : NULL, 1000);
	long pause = atol_def(argc > 3 ? argv[3] : NULL, 0);
	uint64_t t0;

	if (pause > 0)
		sleep_ms((unsigned long)pause);
	t0 = clock_ns();
	if (!strcmp(mode, "console")) {
		console_log(count);
		printf("\nexitloop: console %ld lines of 31 bytes (%ld port 0x3f8 writes) in %lu ms\n", count, count * 31,
		       (unsigned long)((clock_ns() - t0) / 1000000ull));
	} else if (!strcmp(mode, "msr")) {
		struct pmu_info info;
		uint32_t msr;
		long bad;

		memset(&info, 0, sizeof(info));
		pmu_info(&info);
		msr = info.model == PMU_MODEL_INTEL ? 0xc1 : 0xc0010004;
		bad = read_pmc_msr(msr, count);
		if (bad) {
			printf("exitloop: msr: %ld of %ld reads of MSR 0x%x failed (no vPMU, or no \"pmutest\" on the "
			       "command line)\n", bad, count, msr);
			return 1;
		}
		printf("exitloop: msr %ld reads of MSR 0x%x in %lu ms\n", count, msr,
		       (unsigned long)((clock_ns() - t0) / 1000000ull));
	} else {
		printf("exitloop: unknown mode '%s' (console or msr)\n", mode);
		return 2;
	}
	return 0;
}
