/* SPDX-License-Identifier: MIT */
/*
 * pmutest SUBCOMMAND ...: tests of the virtual PMU through the guest
 * kernel's PMU system calls. Every result is one machine-readable line
 * `pmutest NAME: key=value ...`; the exit status is 0 unless something
 * failed that the program can judge by itself.
 *
 *   info               the model the kernel found
 *   loop N             user-mode instructions and branches of N iterations of
 *                      `dec %rcx; jnz`: exactly 2N+1 and N (see counted_loop)
 *   tsc N              the same with an RDTSC in each iteration: 3N+1 and N
 *   cycles             user-mode cycles (> 0) and instructions of a loop
 *   pmi P K [keep] [cycles]
 *                      samples instructions with period P over K*P of them:
 *                      PMIs taken (expected K), overshoot, recorded RIPs in
 *                      the loop; `keep`: re-arm with P - overshoot; `cycles`:
 *                      sample cycles instead, over the same loop, and count
 *                      them too: expected = counted cycles / P
 *   event SEL UMASK [N] a raw event (user mode) over a loop of N iterations
 *   portio N           instructions (user+kernel, and user only) and cycles
 *                      (user+kernel) around N
 *                      `outb` to port 0x80 by the kernel      (needs pmutest)
 *   fuzz               garbage into every PMU MSR of both vendors, read back,
 *                      then a counted loop                    (needs pmutest)
 *   gp                 #GP where the model must raise it      (needs pmutest)
 *   sbuf               hostile settings of the VMM's sample buffer: each bad
 *                      base, size, watermark, reload or control value, and
 *                      every placement change while armed, gets #GP
 *                      (17 of them; run with 256 MiB of RAM) (needs pmutest)
 *   toggle N           counter 0 switched on and off N times, a few user
 *                      instructions apart; its user-mode count (needs pmutest)
 *   rdpmc N            RDPMC: counter 0 (user-mode instructions) read twice in
 *                      ring 3 around N loop iterations, exactly 2N+5 apart
 *                      (see rdpmc_between); then, stopped, read in ring 0
 *                      as RDMSR reads it; a bad ECX raises #GP (needs pmutest)
 *   args               bad arguments get the documented errors (-ENODEV for
 *                      all without a PMU); the test calls -ENOSYS without
 *                      `pmutest`
 */
#include <kvmprof/vpmu_sbuf.h>

#include "libc.h"

/* Counts the lines of the `gp` subcommand. */
static int checks, failures;

/*
 * The counted region starts when the start system call returns to user mode
 * (IRETQ, after the ud2) and ends at the ud2 of the stop call; kernel code
 * is not counted (user-mode events only) and a ud2 faults, so it does not
 * retire. What retires in user mode in between: N x (dec, jnz) and the one
 * `mov` of the stop number: 2N + 1 instructions, N branches.
 */
#define LOOP_EXTRA_INSNS 1
#define LOOP_EXTRA_BRANCHES 0

__attribute__((noinline)) static long counted_loop(unsigned long n)
{
	long ret;
	__asm__ volatile("mov %[start], %%eax\n\t"
			 "ud2\n\t"
			 "1: dec %%rcx\n\t"
			 "jnz 1b\n\t"
			 "mov %[stop], %%eax\n\t"
			 "ud2"
			 : "=a"(ret), "+c"(n)
			 : [start] "i"(SYS_pmu_start), [stop] "i"(SYS_pmu_stop)
			 : "memory", "cc");
	return ret;
}

/* As counted_loop, with an RDTSC in each iteration: 3N + 1 user-mode instructions, N branches. */
__attribute__((noinline)) static long counted_tsc_loop(unsigned long n)
{
	long ret;
	__asm__ volatile("mov %[start], %%eax\n\t"
			 "ud2\n\t"
			 "1: rdtsc\n\t"
			 "dec %%rcx\n\t"
			 "jnz 1b\n\t"
			 "mov %[stop], %%eax\n\t"
			 "ud2"
			 : "=a"(ret), "+c"(n)
			 : [start] "i"(SYS_pmu_start), [stop] "i"(SYS_pmu_stop)
			 : "rdx", "memory", "cc");
	return ret;
}

/* A plain loop of n iterations (2n instructions), for sampling; its bounds for RIP checks. */
extern const char sample_loop_begin[], sample_loop_end[];
__attribute__((noinline)) static void sample_loop(unsigned long n)
{
	__asm__ volatile(".globl sample_loop_begin, sample_loop_end\n"
			 "sample_loop_begin:\n\t"
			 "1: dec %%rcx\n\t"
			 "jnz 1b\n"
			 "sample_loop_end:"
			 : "+c"(n)
			 :
			 : "cc");
}

static const char *errname(long r)
{
	switch (r) {
	case -GUEST_ENODEV: return "no PMU";
	case -GUEST_EINVAL: return "EINVAL";
	case -GUEST_EIO: return "EIO";
	case -GUEST_ENOSYS: return "ENOSYS (boot with pmutest)";
	case -GUEST_EFAULT: return "EFAULT";
	case -GUEST_EBUSY: return "EBUSY";
	default: return "error";
	}
}

static int fail(const char *what, long r)
{
	printf("pmutest %s: %s (%ld)\n", what, errname(r), r);
	return r == -GUEST_ENODEV ? 3 : 1;
}

static int cmd_info(void)
{
	struct pmu_info in;
	long r = pmu_info(&in);
	if (r)
		return fail("info", r);
	printf("pmutest info: model=%s version=%u gp=%u fixed=%u width=%u full_width=%u test=%u\n",
	       in.model == PMU_MODEL_INTEL ? "intel" : "amd", in.version, in.gp, in.fixed, in.width,
	       in.full_width, in.test);
	return 0;
}

/*
 * loop N, tsc N: user-mode instructions and branches of a counted loop of N
 * iterations (per_iter instructions each, one of them the branch).
 */
static int counted(const char *name, long (*loop)(unsigned long), unsigned long per_iter, long n)
{
	struct pmu_event ev[2] = {
		{ .kind = PMU_INSTRUCTIONS, .flags = PMU_USR },
		{ .kind = PMU_BRANCHES, .flags = PMU_USR },
	};
	uint64_t c[2];
	long r;
	if (n < 1) {
		printf("usage: pmutest %s N (N >= 1)\n", name);
		return 2;
	}
	if ((r = pmu_open(ev, 2)))
		return fail(name, r);
	if ((r = loop((unsigned long)n)))
		return fail(name, r);
	if ((r = pmu_read(c, 2)) != 2)
		return fail(name, r);
	pmu_close();
	printf("pmutest %s: iterations=%ld instructions=%lu branches=%lu expected_instructions=%lu "
	       "expected_branches=%lu\n",
	       name, n, c[0], c[1], per_iter * (unsigned long)n + LOOP_EXTRA_INSNS,
	       (unsigned long)n + LOOP_EXTRA_BRANCHES);
	return 0;
}

static int cmd_cycles(void)
{
	struct pmu_event ev[2] = {
		{ .kind = PMU_CYCLES, .flags = PMU_USR },
		{ .kind = PMU_INSTRUCTIONS, .flags = PMU_USR },
	};
	uint64_t c[2];
	long r;
	if ((r = pmu_open(ev, 2)))
		return fail("cycles", r);
	if ((r = counted_loop(10000000)))
		return fail("cycles", r);
	if ((r = pmu_read(c, 2)) != 2)
		return fail("cycles", r);
	pmu_close();
	printf("pmutest cycles: cycles=%lu instructions=%lu\n", c[0], c[1]);
	return c[0] > 0 ? 0 : 1;
}

static int cmd_pmi(long period, long k, int keep, int cycles)
{
	struct pmu_event ev = { .kind = cycles ? PMU_CYCLES : PMU_INSTRUCTIONS, .flags = PMU_USR };
	struct pmu_sample_stats st;
	uint64_t rips[PMU_SAMPLE_BUF], counted = 0;
	long r, n, in_loop = 0, expected = k;
	if (period < (long)PMU_PERIOD_MIN || period > (long)PMU_PERIOD_MAX || k < 1 ||
	    k > 100000) {
		printf("usage: pmutest pmi PERIOD (%llu..%llu) K (1..100000) [keep]\n",
		       PMU_PERIOD_MIN, PMU_PERIOD_MAX);
		return 2;
	}
	if (cycles && ((r = pmu_open(&ev, 1)) || (r = pmu_start())))
		return fail("pmi", r);
	if ((r = pmu_sample_start(&ev, (uint64_t)period, keep ? PMU_SAMPLE_KEEP_OVERSHOOT : 0)))
		return fail("pmi", r);
	sample_loop((unsigned long)period * (unsigned long)k / 2);
	if ((r = pmu_sample_stop(&st)) < 0)
		return fail("pmi", r);
	if (cycles) {
		long rr;
		if ((rr = pmu_stop()) || (rr = pmu_read(&counted, 1)) != 1)
			return fail("pmi", rr);
		pmu_close();
		expected = (long)(counted / (uint64_t)period);
	}
	n = pmu_samples(rips, PMU_SAMPLE_BUF);
	/* The RIPs outside the loop, listed so that a test can say whose they are. */
	char outside[8 * 20 + 1] = "-";
	size_t len = 0;
	for (long i = 0, listed = 0; i < n; i++) {
		if (rips[i] >= (uint64_t)sample_loop_begin && rips[i] < (uint64_t)sample_loop_end) {
			in_loop++;
		} else if (listed++ < 8) {
			int w = snprintf(outside + len, sizeof(outside) - len, "%s0x%lx", len ? "," : "",
					 (unsigned long)rips[i]);
			if (w > 0 && (size_t)w < sizeof(outside) - len)
				len += (size_t)w;
		}
	}
	printf("pmutest pmi: event=%s period=%ld expected=%ld pmis=%ld recorded=%lu "
	       "rips_in_loop=%ld/%ld overshoot_avg=%lu overshoot_max=%lu rips_outside=%s\n",
	       cycles ? "cycles" : "instructions", period, expected, r, st.recorded, in_loop, n, st.pmis ? st.overshoot_sum / st.pmis : 0,
	       st.overshoot_max, outside);
	return 0;
}

static int cmd_event(long sel, long umask, long n)
{
	struct pmu_event ev = { .kind = PMU_RAW, .event = (unsigned short)sel,
				.umask = (unsigned char)umask, .flags = PMU_USR };
	uint64_t c;
	long r;
	if (sel < 0 || sel > 0xfff || umask < 0 || umask > 0xff || n < 1) {
		printf("usage: pmutest event SELECT UMASK [N]\n");
		return 2;
	}
	if ((r = pmu_open(&ev, 1)))
		return fail("event", r);
	if ((r = counted_loop((unsigned long)n)))
		return fail("event", r);
	if ((r = pmu_read(&c, 1)) != 1)
		return fail("event", r);
	pmu_close();
	printf("pmutest event: select=0x%lx umask=0x%lx iterations=%ld count=%lu\n", sel, umask, n, c);
	return 0;
}

static int cmd_portio(long n)
{
	struct pmu_event ev[3] = {
		{ .kind = PMU_INSTRUCTIONS, .flags = PMU_USR | PMU_OS | PMU_NOFIXED },
		{ .kind = PMU_INSTRUCTIONS, .flags = PMU_USR | PMU_NOFIXED },
		{ .kind = PMU_CYCLES, .flags = PMU_USR | PMU_OS | PMU_NOFIXED },
	};
	uint64_t c[3];
	long r;
	if (n < 0 || n > 1000000) {
		printf("usage: pmutest portio N (0..1000000)\n");
		return 2;
	}
	if ((r = pmu_open(ev, 3)) || (r = pmu_start()))
		return fail("portio", r);
	long pr = pmu_test_portio((unsigned long)n);
	if ((r = pmu_stop()) || (r = pmu_read(c, 3)) != 3)
		return fail("portio", r);
	pmu_close();
	if (pr)
		return fail("portio", pr);
	printf("pmutest portio: writes=%ld instructions=%lu user_instructions=%lu cycles=%lu\n", n,
	       c[0], c[1], c[2]);
	return 0;
}

/* ---- fuzz --------------------------------------------------------------- */

static const struct {
	uint32_t base, count;
} fuzz_ranges[] = {
	{ 0xc1, 9 },          /* Intel IA32_PMC0..7, one past */
	{ 0x186, 9 },         /* IA32_PERFEVTSEL0..7, one past */
	{ 0x309, 4 },         /* FIXED_CTR0..2, one past */
	{ 0x345, 1 },         /* PERF_CAPABILITIES */
	{ 0x38d, 5 },         /* FIXED_CTR_CTRL, GLOBAL_STATUS/CTRL/OVF_CTRL, one past */
	{ 0x4c1, 9 },         /* IA32_A_PMC0..7, one past */
	{ 0xc0010000, 8 },    /* AMD legacy PERF_CTL0..3, PERF_CTR0..3 */
	{ 0xc0010200, 14 },   /* PERF_CTL0..5 / PERF_CTR0..5, one past */
	{ 0xc0000300, 5 },    /* GLOBAL_STATUS, CTL, STATUS_CLR, STATUS_SET, one past */
};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int cmd_fuzz(void)
{
	static const uint64_t fixed_values[] = {
		0, ~0ULL, 0x0000ffffffffffffULL, 0xffff000000000000ULL, 0x80000000ULL,
		0x7fffffffULL, 1ULL << 47, 0x0000fffffffffff0ULL,
		0x5300c0ULL,            /* EN|INT|OS|USR instructions */
		0xf005300c0ULL,         /* + AMD event bits 11:8 */
		0x5300c0ULL | (1ULL << 21) | (0xffULL << 24) | (1ULL << 40) | (1ULL << 63),
		0x7ULL | (0x7ULL << 32) | (1ULL << 62) | (1ULL << 63), /* global bits */
		0xbbbULL,               /* FIXED_CTR_CTRL: OS|USR|PMI on all three */
	};
	long writes = 0, reads = 0, wgp = 0, rgp = 0, msrs = 0;
	uint64_t v;
	if (pmu_test_rdmsr(0xc1, &v) == -GUEST_ENOSYS) {
		printf("pmutest fuzz: needs the pmutest kernel command-line flag\n");
		return 2;
	}
	uint64_t t0 = clock_ns();
	for (unsigned r = 0; r < sizeof(fuzz_ranges) / sizeof(fuzz_ranges[0]); r++) {
		for (uint32_t m = fuzz_ranges[r].base; m < fuzz_ranges[r].base + fuzz_ranges[r].count; m++) {
			msrs++;
			for (unsigned i = 0; i < sizeof(fixed_values) / sizeof(fixed_values[0]) + 3; i++) {
				uint64_t val = i < sizeof(fixed_values) / sizeof(fixed_values[0])
						       ? fixed_values[i]
						       : rnd();
				writes++;
				wgp += pmu_test_wrmsr(m, val) == -GUEST_EIO;
				reads++;
				rgp += pmu_test_rdmsr(m, &v) == -GUEST_EIO;
			}
		}
	}
	/* Quiet again: every control and counter to 0, globals last. */
	for (int r = (int)(sizeof(fuzz_ranges) / sizeof(fuzz_ranges[0])) - 1; r >= 0; r--)
		for (uint32_t m = fuzz_ranges[r].base; m < fuzz_ranges[r].base + fuzz_ranges[r].count; m++)
			pmu_test_wrmsr(m, 0);
	uint64_t ms = (clock_ns() - t0) / 1000000;
	printf("pmutest fuzz: msrs=%ld writes=%ld reads=%ld write_gp=%ld read_gp=%ld ms=%lu\n", msrs,
	       writes, reads, wgp, rgp, ms);
	/* The PMU still works for a process (or there is none). */
	struct pmu_event ev = { .kind = PMU_INSTRUCTIONS, .flags = PMU_USR };
	uint64_t c = 0;
	long rr = pmu_open(&ev, 1);
	if (rr == 0 && (rr = counted_loop(1000000)) == 0 && pmu_read(&c, 1) == 1)
		printf("pmutest fuzz: after: instructions=%lu expected_instructions=%lu\n", c,
		       2000000UL + LOOP_EXTRA_INSNS);
	else
		printf("pmutest fuzz: after: %s\n", errname(rr));
	pmu_close();
	return 0;
}

/* ---- gp ----------------------------------------------------------------- */

/* expect_gp: 1 must #GP, 0 must not, 2 should #GP (a note, not a failure) */
static void check(const char *what, uint32_t msr, uint64_t val, int is_write, int expect_gp)
{
	uint64_t v;
	long r = is_write ? pmu_test_wrmsr(msr, val) : pmu_test_rdmsr(msr, &v);
	int gp = r == -GUEST_EIO;
	checks++;
	if (gp != !!expect_gp || (r && !gp)) {
		failures += expect_gp != 2;
		printf("pmutest gp: %s %s: %s 0x%x%s0x%lx: expected %s, got %s\n",
		       expect_gp == 2 ? "note" : "FAIL", what,
		       is_write ? "wrmsr" : "rdmsr", msr, is_write ? " = " : " -> ",
		       is_write ? val : (r ? 0 : v), expect_gp ? "#GP" : "no #GP", gp ? "#GP" : r ? "error" : "ok");
	}
}

static void check_value(const char *what, uint32_t msr, uint64_t expect)
{
	uint64_t v = 0;
	long r = pmu_test_rdmsr(msr, &v);
	checks++;
	if (r || v != expect) {
		failures++;
		printf("pmutest gp: FAIL %s: rdmsr 0x%x -> 0x%lx (r=%ld), expected 0x%lx\n", what, msr, v,
		       r, expect);
	}
}

/*
 * sbuf: the sample buffer's MSRs (include/kvmprof/vpmu_sbuf.h) as a hostile
 * guest would set them; the VMM counts the refusals in --vpmu-stats.
 * Expects the default 256 MiB of RAM. Counter 0 is never enabled, so the
 * buffer armed here receives nothing.
 */
static int cmd_sbuf(void)
{
	const uint64_t base = 64ULL << 20, top = 255ULL << 20, en = KP_SBUF_CTL_EN;
	uint64_t v;
	if (pmu_test_rdmsr(0xc1, &v) == -GUEST_ENOSYS) {
		printf("pmutest sbuf: needs the pmutest kernel command-line flag\n");
		return 2;
	}
	check("base misaligned", KP_MSR_SBUF_BASE, base + 8, 1, 1);
	check("base outside RAM", KP_MSR_SBUF_BASE, 1ULL << 40, 1, 1);
	check("size 0", KP_MSR_SBUF_SIZE, 0, 1, 1);
	check("size not a power of two", KP_MSR_SBUF_SIZE, 3 * 4096, 1, 1);
	check("size above 16 MiB", KP_MSR_SBUF_SIZE, 32ULL << 20, 1, 1);
	check("watermark 0", KP_MSR_SBUF_WATERMARK, 0, 1, 1);
	check("reload 0", KP_MSR_SBUF_RELOAD, 0, 1, 1);
	check("reload above 2^47", KP_MSR_SBUF_RELOAD, (1ULL << 47) + 1, 1, 1);
	check("control reserved bit", KP_MSR_SBUF_CTL, 1ULL << 2, 1, 1);
	check("arm with nothing set", KP_MSR_SBUF_CTL, en, 1, 1);
	check("base", KP_MSR_SBUF_BASE, base, 1, 0);
	check("size", KP_MSR_SBUF_SIZE, 4096, 1, 0);
	check("watermark above size (alone fine)", KP_MSR_SBUF_WATERMARK, 8192, 1, 0);
	check("reload", KP_MSR_SBUF_RELOAD, 100000, 1, 0);
	check("arm with the watermark above the size", KP_MSR_SBUF_CTL, en, 1, 1);
	check("watermark", KP_MSR_SBUF_WATERMARK, 4096, 1, 0);
	check("base near the top", KP_MSR_SBUF_BASE, top, 1, 0);
	check("size 16 MiB", KP_MSR_SBUF_SIZE, 16ULL << 20, 1, 0);
	check("arm past the end of RAM", KP_MSR_SBUF_CTL, en, 1, 1);
	check("base back", KP_MSR_SBUF_BASE, base, 1, 0);
	check("size back", KP_MSR_SBUF_SIZE, 4096, 1, 0);
	check("arm for a counter that does not exist", KP_MSR_SBUF_CTL, en | 200ULL << KP_SBUF_CTL_COUNTER_SHIFT, 1, 1);
	check("arm", KP_MSR_SBUF_CTL, en, 1, 0);
	check("base while armed", KP_MSR_SBUF_BASE, base + 4096, 1, 1);
	check("size while armed", KP_MSR_SBUF_SIZE, 8192, 1, 1);
	check("watermark while armed", KP_MSR_SBUF_WATERMARK, 8, 1, 1);
	check("reload while armed", KP_MSR_SBUF_RELOAD, 5, 1, 1);
	check("time while armed", KP_MSR_SBUF_TIME, 1, 1, 0);
	check_value("armed control", KP_MSR_SBUF_CTL, en);
	check_value("armed base", KP_MSR_SBUF_BASE, base);
	check("disarm", KP_MSR_SBUF_CTL, 0, 1, 0);
	printf("pmutest sbuf: checks=%d failures=%d\n", checks, failures);
	return failures ? 1 : 0;
}

/*
 * toggle N: counter 0 counts user-mode instructions and is switched on and
 * off N times in a row through the raw MSR calls, a handful of user
 * instructions apart (a storm of reprogramming). Every on-off pair counts
 * the same user code (from the return of the enabling call to the UD2 of
 * the disabling one), so an exact PMU counts N times what N=1 counts.
 */
static int cmd_toggle(long n)
{
	struct pmu_info in;
	long r = pmu_info(&in);
	uint64_t v = 0;
	uint32_t sel, ctr;
	const uint64_t on = 0x4100c0ULL, off = 0x0100c0ULL; /* instructions, USR; EN or not */

	if (r)
		return fail("toggle", r);
	if (n < 1 || n > 1000000) {
		printf("usage: pmutest toggle N (1..1000000)\n");
		return 2;
	}
	if (pmu_test_rdmsr(0xc1, &v) == -GUEST_ENOSYS) {
		printf("pmutest toggle: needs the pmutest kernel command-line flag\n");
		return 2;
	}
	if (in.model == PMU_MODEL_INTEL) {
		sel = 0x186;
		ctr = 0xc1;
		pmu_test_wrmsr(0x38f, 1); /* GLOBAL_CTRL: counter 0 */
	} else {
		sel = 0xc0010000;
		ctr = 0xc0010004;
	}
	pmu_test_wrmsr(sel, off);
	pmu_test_wrmsr(ctr, 0);
	for (long i = 0; i < n; i++) {
		pmu_test_wrmsr(sel, on);
		pmu_test_wrmsr(sel, off);
	}
	if ((r = pmu_test_rdmsr(ctr, &v)))
		return fail("toggle", r);
	printf("pmutest toggle: toggles=%ld instructions=%lu\n", n, v);
	return 0;
}

/*
 * Counter 0 by RDPMC in ring 3 (CR4.PCE) before and after N iterations:
 * between the two reads retire the first RDPMC, two MOVs, the MOV of N,
 * N x (dec, jnz) and the XOR before the second: 2N + 5 instructions.
 */
#define RDPMC_BETWEEN_EXTRA 5
__attribute__((noinline)) static uint64_t rdpmc_between(unsigned long n)
{
	uint32_t alo, ahi, blo, bhi;
	__asm__ volatile("xor %%ecx, %%ecx\n\t"
			 "rdpmc\n\t"
			 "mov %%eax, %[alo]\n\t"
			 "mov %%edx, %[ahi]\n\t"
			 "mov %[n], %%rcx\n\t"
			 "1: dec %%rcx\n\t"
			 "jnz 1b\n\t"
			 "xor %%ecx, %%ecx\n\t"
			 "rdpmc"
			 : "=&a"(blo), "=&d"(bhi), [alo] "=&r"(alo), [ahi] "=&r"(ahi)
			 : [n] "r"(n)
			 : "rcx", "cc");
	return ((uint64_t)bhi << 32 | blo) - ((uint64_t)ahi << 32 | alo);
}

static int cmd_rdpmc(long n)
{
	struct pmu_info in;
	long r = pmu_info(&in), bad;
	uint64_t v = 0, ring0 = 0, between;
	uint32_t sel0, sel1, ctr0;
	/* instructions: counter 0 user mode; counter 1 both rings, which keeps ring 0 in the exact backend's engine */
	const uint64_t user = 0x4100c0ULL, both = 0x4300c0ULL, off = 0x0100c0ULL;

	if (r)
		return fail("rdpmc", r);
	if (n < 1 || n > 100000000) {
		printf("usage: pmutest rdpmc N (1..100000000)\n");
		return 2;
	}
	if (pmu_test_rdmsr(0xc1, &v) == -GUEST_ENOSYS) {
		printf("pmutest rdpmc: needs the pmutest kernel command-line flag\n");
		return 2;
	}
	if (in.model == PMU_MODEL_INTEL) {
		sel0 = 0x186;
		sel1 = 0x187;
		ctr0 = 0xc1;
		pmu_test_wrmsr(0x38f, 3); /* GLOBAL_CTRL: counters 0 and 1 */
	} else {
		sel0 = 0xc0010000;
		sel1 = 0xc0010001;
		ctr0 = 0xc0010004;
	}
	pmu_test_wrmsr(sel0, off);
	pmu_test_wrmsr(ctr0, 0);
	pmu_test_wrmsr(sel1, both);
	pmu_test_wrmsr(sel0, user);
	between = rdpmc_between((unsigned long)n);
	pmu_test_wrmsr(sel0, off);
	if ((r = pmu_test_rdmsr(ctr0, &v)))
		return fail("rdpmc", r);
	if ((r = pmu_test_rdpmc(0, &ring0)))
		return fail("rdpmc", r);
	/* No such counter on either model: type 1 on Intel, past the six on AMD. */
	bad = pmu_test_rdpmc(0x10000, &(uint64_t){ 0 });
	pmu_test_wrmsr(sel1, off);
	printf("pmutest rdpmc: iterations=%ld between=%lu expected_between=%lu ring0=%lu rdmsr=%lu bad_ecx=%s\n", n,
	       between, 2 * (unsigned long)n + RDPMC_BETWEEN_EXTRA, ring0, v, bad ? errname(bad) : "no-fault");
	return 0;
}

static int cmd_gp(void)
{
	struct pmu_info in;
	long r = pmu_info(&in);
	uint64_t v;
	if (r)
		return fail("gp", r);
	if (pmu_test_rdmsr(0xc1, &v) == -GUEST_ENOSYS) {
		printf("pmutest gp: needs the pmutest kernel command-line flag\n");
		return 2;
	}
	unsigned gp = in.gp, nf = in.fixed;
	uint64_t wmask = in.width >= 64 ? ~0ULL : (1ULL << in.width) - 1;
	if (in.model == PMU_MODEL_INTEL) {
		/* the advertised ones exist */
		check("PMC0", 0xc1, 0, 0, 0);
		check("PERFEVTSEL0", 0x186, 0, 1, 0);
		check("PMC last", 0xc1 + gp - 1, 0, 0, 0);
		check("GLOBAL_STATUS", 0x38e, 0, 0, 0);
		check("GLOBAL_CTRL", 0x38f, 0, 1, 0);
		check("GLOBAL_OVF_CTRL", 0x390, 0, 1, 0);
		check("FIXED_CTR_CTRL", 0x38d, 0, 1, 0);
		if (nf)
			check("FIXED_CTR0", 0x309, 0, 0, 0);
		/* counters beyond the advertised count */
		if (gp < 8) {
			check("PMC beyond", 0xc1 + gp, 0, 0, 1);
			check("PMC beyond", 0xc1 + gp, 0, 1, 1);
			check("PERFEVTSEL beyond", 0x186 + gp, 0, 0, 1);
			check("PERFEVTSEL beyond", 0x186 + gp, 0, 1, 1);
			check("A_PMC beyond", 0x4c1 + gp, 0, 0, 1);
		}
		if (nf < 3)
			check("FIXED_CTR beyond", 0x309 + nf, 0, 0, 1);
		check("FIXED_CTR beyond 3", 0x30c, 0, 0, 1);
		/* reserved bits */
		check("PERFEVTSEL0 bit 32", 0x186, 1ULL << 32, 1, 1);
		check("PERFEVTSEL0 bit 63", 0x186, 1ULL << 63, 1, 1);
		check("FIXED_CTR_CTRL beyond", 0x38d, 1ULL << (4 * nf), 1, 1);
		if (gp < 32)
			check("GLOBAL_CTRL gp bit", 0x38f, 1ULL << gp, 1, 1);
		check("GLOBAL_CTRL fixed bit", 0x38f, 1ULL << (32 + nf), 1, 1);
		check("GLOBAL_CTRL bit 63", 0x38f, 1ULL << 63, 1, 1);
		check("GLOBAL_STATUS read-only", 0x38e, 0, 1, 1);
		if (gp < 32)
			check("GLOBAL_OVF_CTRL gp bit", 0x390, 1ULL << gp, 1, 1);
		/* counter write semantics */
		check("PMC0 legacy write", 0xc1, 0x80000000ULL, 1, 0);
		check_value("PMC0 legacy write sign-extends bit 31", 0xc1, 0xffffffff80000000ULL & wmask);
		check("PMC0 legacy write", 0xc1, 0x12345678ULL, 1, 0);
		check_value("PMC0 legacy write", 0xc1, 0x12345678ULL);
		if (in.full_width) {
			check("A_PMC0", 0x4c1, 0, 0, 0);
			check("A_PMC0 full write", 0x4c1, 0x800000000000ULL & wmask, 1, 0);
			check_value("A_PMC0 full write", 0xc1, 0x800000000000ULL & wmask);
			check("A_PMC0 beyond the width", 0x4c1, wmask + 1, 1, 1);
		} else {
			check("A_PMC0 without FW_WRITES", 0x4c1, 0, 0, 1);
		}
		pmu_test_wrmsr(0xc1, 0);
	} else {
		uint32_t ctl0 = 0xc0010200;
		check("PERF_CTL0", ctl0, 0, 0, 0);
		check("PERF_CTR0", ctl0 + 1, 0, 0, 0);
		check("legacy PERF_CTL0", 0xc0010000, 0, 0, 0);
		check("PERF_CTL last", ctl0 + 2 * (gp - 1), 0, 0, 0);
		if (gp < 6) { /* PerfCtrCore implies 6; PerfMonV2 EBX says fewer: KVM would #GP */
			check("PERF_CTL beyond", ctl0 + 2 * gp, 0, 0, 2);
			check("PERF_CTR beyond", ctl0 + 2 * gp + 1, 0, 1, 2);
		}
		/* reserved bits are ignored on write, no #GP */
		check("PERF_CTL0 reserved bits", ctl0, (1ULL << 42) | (1ULL << 63), 1, 0);
		check("PERF_CTR0 bit 48+", ctl0 + 1, 1ULL << 50, 1, 0);
		check_value("PERF_CTR0 is 48 bits", ctl0 + 1, 0);
		check("PERF_CTR0 legacy alias write", 0xc0010004, 0x123456789aULL, 1, 0);
		check_value("PERF_CTR0 alias", ctl0 + 1, 0x123456789aULL);
		pmu_test_wrmsr(ctl0, 0);
		pmu_test_wrmsr(ctl0 + 1, 0);
	}
	printf("pmutest gp: model=%s checks=%d failures=%d\n",
	       in.model == PMU_MODEL_INTEL ? "intel" : "amd", checks, failures);
	return failures ? 1 : 0;
}

/* ---- args --------------------------------------------------------------- */

static void expect(const char *what, long got, long want)
{
	checks++;
	if (got != want) {
		failures++;
		printf("pmutest args: FAIL %s: got %ld, expected %ld\n", what, got, want);
	}
}

static int cmd_args(void)
{
	struct pmu_info in;
	struct pmu_event ok = { .kind = PMU_INSTRUCTIONS, .flags = PMU_USR };
	struct pmu_event five[5] = { ok, ok, ok, ok, ok };
	struct pmu_event badkind = { .kind = PMU_KIND_MAX + 1, .flags = PMU_USR };
	struct pmu_event noflags = { .kind = PMU_CYCLES, .flags = 0 };
	struct pmu_event badflags = { .kind = PMU_CYCLES, .flags = 0x80 | PMU_USR };
	struct pmu_event bigsel = { .kind = PMU_RAW, .event = 0x1000, .flags = PMU_USR };
	uint64_t v, c[4];
	long none = pmu_info(&in) == -GUEST_ENODEV;
	long e = none ? -GUEST_ENODEV : -GUEST_EINVAL;
	long test = pmu_test_rdmsr(0xc1, &v);

	expect("open n=0", pmu_open(&ok, 0), e);
	expect("open n=5", pmu_open(five, 5), e);
	expect("open bad kind", pmu_open(&badkind, 1), e);
	expect("open no USR/OS", pmu_open(&noflags, 1), e);
	expect("open unknown flag", pmu_open(&badflags, 1), e);
	expect("open select > 0xfff", pmu_open(&bigsel, 1), e);
	expect("open bad pointer", pmu_open((void *)0x1000, 1), none ? e : -GUEST_EFAULT);
	expect("start before open", pmu_start(), e);
	expect("stop before open", pmu_stop(), e);
	expect("read before open", pmu_read(c, 1), e);
	expect("sample period too small", pmu_sample_start(&ok, 10, 0), e);
	expect("sample period too large", pmu_sample_start(&ok, 1ULL << 31, 0), e);
	expect("sample unknown flag", pmu_sample_start(&ok, 100000, 0x100), e);
	expect("sample stop before start", pmu_sample_stop(NULL), e);
	if (!none) {
		expect("open 4", pmu_open(five, 4), 0);
		expect("read bad pointer", pmu_read((void *)0x1000, 4), -GUEST_EFAULT);
		expect("read before start", pmu_read(c, 4), 4);
		expect("close", pmu_close(), 0);
		expect("sample start", pmu_sample_start(&ok, 100000, 0), 0);
		expect("sample start twice", pmu_sample_start(&ok, 100000, 0), -GUEST_EBUSY);
		expect("sample stats bad pointer", pmu_sample_stop((void *)0x1000), -GUEST_EFAULT);
		expect("samples bad pointer", pmu_samples((void *)0x1000, 4), -GUEST_EFAULT);
		expect("sample stop", pmu_sample_stop(NULL) >= 0, 1);
	}
	if (test == -GUEST_ENOSYS) {
		expect("test wrmsr without pmutest", pmu_test_wrmsr(0xc1, 0), -GUEST_ENOSYS);
		expect("test portio without pmutest", pmu_test_portio(1), -GUEST_ENOSYS);
	} else {
		expect("test rdmsr bad pointer", pmu_test_rdmsr(0xc1, (void *)0x1000), -GUEST_EFAULT);
		expect("test portio too many", pmu_test_portio(1000001), -GUEST_EINVAL);
	}
	printf("pmutest args: pmu=%s test=%s checks=%d failures=%d\n", none ? "none" : "yes",
	       test == -GUEST_ENOSYS ? "off" : "on", checks, failures);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	const char *a2 = argc > 2 ? argv[2] : NULL, *a3 = argc > 3 ? argv[3] : NULL;
	if (!strcmp(cmd, "info"))
		return cmd_info();
	if (!strcmp(cmd, "loop"))
		return counted("loop", counted_loop, 2, atol_def(a2, 10000000));
	if (!strcmp(cmd, "cycles"))
		return cmd_cycles();
	if (!strcmp(cmd, "tsc"))
		return counted("tsc", counted_tsc_loop, 3, atol_def(a2, 1000));
	if (!strcmp(cmd, "pmi"))
	{
		int keep = 0, cycles = 0;
		for (int i = 4; i < argc; i++) {
			keep |= !strcmp(argv[i], "keep");
			cycles |= !strcmp(argv[i], "cycles");
		}
		return cmd_pmi(atol_def(a2, 1000000), atol_def(a3, 100), keep, cycles);
	}
	if (!strcmp(cmd, "event"))
		return cmd_event(atol_def(a2, -1), atol_def(a3, -1),
				 atol_def(argc > 4 ? argv[4] : NULL, 1000000));
	if (!strcmp(cmd, "portio"))
		return cmd_portio(atol_def(a2, 1000));
	if (!strcmp(cmd, "fuzz"))
		return cmd_fuzz();
	if (!strcmp(cmd, "gp"))
		return cmd_gp();
	if (!strcmp(cmd, "sbuf"))
		return cmd_sbuf();
	if (!strcmp(cmd, "toggle"))
		return cmd_toggle(atol_def(a2, 1000));
	if (!strcmp(cmd, "args"))
		return cmd_args();
	if (!strcmp(cmd, "rdpmc"))
		return cmd_rdpmc(atol_def(a2, 1000));
	printf("usage: pmutest info|loop N|tsc N|cycles|pmi P K [keep] [cycles]|event SEL UMASK [N]|portio N|fuzz|gp|"
	       "toggle N|rdpmc N|args\n");
	return 2;
}
