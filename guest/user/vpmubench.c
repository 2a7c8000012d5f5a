/* SPDX-License-Identifier: MIT */
/*
 * vpmubench: what the virtual PMU costs, measured from inside the guest with
 * its clock (bench/vpmu.sh runs it; the test-only system calls need
 * `pmutest` on the kernel command line).
 *
 *   vpmubench exits N    per-operation time of N system calls that do
 *                        nothing (getpid), one RDMSR of a PMU counter (an MSR
 *                        exit to the VMM) and one OUTB to port 0x80 (a port
 *                        I/O exit); the exit costs are the differences
 *   vpmubench work C N   N rounds of a user-mode workload with C counters
 *                        (0..4) counting cycles; prints its time
 */
#include "libc.h"

static volatile uint32_t sink;

__attribute__((noinline)) static void work_round(void)
{
	uint32_t x = 1;
	for (int i = 0; i < 2000000; i++)
		x = x * 1103515245u + 12345u;
	sink = x;
}

static int bench_exits(long n)
{
	struct pmu_info info;
	uint32_t msr;
	uint64_t t0, t1, t2, t3, val;

	pmu_info(&info);
	if (info.model == PMU_MODEL_NONE || !info.test) {
		printf("vpmubench exits: needs a PMU and `pmutest` on the command line\n");
		return 1;
	}
	msr = info.model == PMU_MODEL_INTEL ? 0xc1 : 0xc0010004;
	t0 = clock_ns();
	for (long i = 0; i < n; i++)
		getpid();
	t1 = clock_ns();
	for (long i = 0; i < n; i++)
		if (pmu_test_rdmsr(msr, &val))
			return 1;
	t2 = clock_ns();
	for (long i = 0; i < n; i++)
		pmu_test_portio(1);
	t3 = clock_ns();
	printf("vpmubench exits: n=%ld syscall_ns=%lu rdmsr_syscall_ns=%lu portio_syscall_ns=%lu\n", n,
	       (unsigned long)((t1 - t0) / (uint64_t)n), (unsigned long)((t2 - t1) / (uint64_t)n),
	       (unsigned long)((t3 - t2) / (uint64_t)n));
	return 0;
}

static int bench_work(long counters, long rounds)
{
	struct pmu_event ev[PMU_MAX_EVENTS];
	uint64_t t0, t1;

	for (int i = 0; i < PMU_MAX_EVENTS; i++)
		ev[i] = (struct pmu_event){ .kind = PMU_CYCLES, .flags = PMU_USR | PMU_NOFIXED };
	if (counters > 0 && (pmu_open(ev, (int)counters) || pmu_start())) {
		printf("vpmubench work: cannot count %ld events\n", counters);
		return 1;
	}
	t0 = clock_ns();
	for (long r = 0; r < rounds; r++)
		work_round();
	t1 = clock_ns();
	if (counters > 0)
		pmu_close();
	printf("vpmubench work: counters=%ld rounds=%ld ns=%lu\n", counters, rounds, (unsigned long)(t1 - t0));
	return 0;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";

	if (!strcmp(what, "exits"))
		return bench_exits(atol_def(argc > 2 ? argv[2] : NULL, 2000));
	if (!strcmp(what, "work")) {
		long c = atol_def(argc > 2 ? argv[2] : NULL, 4), n = atol_def(argc > 3 ? argv[3] : NULL, 200);
		if (c < 0 || c > PMU_MAX_EVENTS || n < 1) {
			printf("usage: vpmubench work COUNTERS(0..4) ROUNDS\n");
			return 2;
		}
		return bench_work(c, n);
	}
	printf("usage: vpmubench exits N | work COUNTERS ROUNDS\n");
	return 2;
}
