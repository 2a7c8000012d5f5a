// SPDX-License-Identifier: MIT
/*
 * kick-cost: what one forced VM exit ("kick") costs a guest, for each way a
 * VMM can force one, measured side by side (bench/kick.sh, make bench-kick).
 *
 * A flat 64-bit VM whose only vCPU starts directly in ring 3 (KVM_SET_SREGS
 * with CS and SS at DPL 3, identity-mapped user pages): on the PVM host
 * ring-3 guest code runs natively while ring-0 code is emulated. The guest
 * loops forever, storing its iteration count to guest RAM. Each window
 * runs the guest for a fixed wall time while one mechanism kicks it at a
 * fixed rate; the vCPU thread's CPU time minus the time the guest's
 * progress would have taken unkicked (the rate of the round's unkicked
 * window) is what the kicks cost; divided by the kicks, the cost per kick.
 *
 * Mechanisms (source + how the vCPU thread takes the signal):
 *   timer  per-thread POSIX timer, SIGEV_THREAD_ID (the vPMU's exit timer);
 *   perf   cpu-clock perf event's overflow signal, F_SETSIG + F_SETOWN_EX
 *          (the guest sampler's clock);
 *   thread another thread sets kvm_run->immediate_exit and (unless
 *          "imm-only") sends the signal with pthread_kill (the stop kick);
 * taken by
 *   handler an SA_SIGINFO handler that sets immediate_exit (the VMM before
 *          issue 17): the signal is unblocked, a signal frame per kick;
 *   sigwait the signal blocked in the thread and unblocked only inside
 *          KVM_RUN (KVM_SET_SIGNAL_MASK), consumed after the EINTR with
 *          sigtimedwait and a zero timeout: no handler, no frame;
 *   sigfd   the same, consumed by reading a non-blocking signalfd.
 * Every window counts kicks (timer expirations counting overruns, clock
 * periods, sends), the signals taken (a timer's coalesce into overruns
 * while the thread is off its CPU) and EINTR exits.
 *
 *   kick-cost [--rounds N] [--window-ms MS] [--rates HZ,HZ]
 * Prints one line per round, contender and rate, then a table of medians.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MEM_SIZE (4u << 20)
#define CODE_GPA 0x10000
#define COUNTER_GPA 0x30000
#define GAP_LOG_GPA 0x100000
#define GAP_LOG_LEN 65536
#define MAX_ROUNDS 64
#define MAX_RATES 4

enum source { SRC_NONE, SRC_TIMER, SRC_PERF, SRC_THREAD };
enum taker { TAKE_HANDLER, TAKE_SIGWAIT, TAKE_SIGFD, TAKE_IMM_ONLY };

struct contender {
	const char *name;
	enum source src;
	enum taker take;
};

static const struct contender contenders[] = {
	{ "none", SRC_NONE, TAKE_HANDLER },
	{ "timer+handler", SRC_TIMER, TAKE_HANDLER },
	{ "perf+handler", SRC_PERF, TAKE_HANDLER },
	{ "timer+sigwait", SRC_TIMER, TAKE_SIGWAIT },
	{ "perf+sigwait", SRC_PERF, TAKE_SIGWAIT },
	{ "timer+sigfd", SRC_TIMER, TAKE_SIGFD },
	{ "perf+sigfd", SRC_PERF, TAKE_SIGFD },
	{ "thread+imm+sigwait", SRC_THREAD, TAKE_SIGWAIT },
	{ "thread+imm-only", SRC_THREAD, TAKE_IMM_ONLY },
};
#define NCONT (sizeof(contenders) / sizeof(contenders[0]))

/* One window. Gaps: the guest's own log of the times it did not run, below GAP_LONG_S (above: preemption). */
struct result {
	double cpu_s, iters, kicks, exits, signals;
	double gaps, gap_s, gap_median_s;
};

#define GAP_MIN_S 1e-6
#define GAP_LONG_S 1e-3

static double tsc_hz;

static int kvm_fd, vcpu_fd;
static uint8_t *mem;
static struct kvm_run *run;
static pid_t vcpu_tid;
static pthread_t vcpu_thread;

/* Written by the handlers, read by the run loop of the same thread. */
static volatile sig_atomic_t window_done;
static volatile uint64_t handler_kicks;
static volatile uint64_t signals_taken; /* kick signals taken during the window, by the handler or a drain */

static int kick_signo(void)
{
	return SIGRTMIN + 2; /* the guest sampler's signal */
}

static void die(const char *what)
{
	fprintf(stderr, "kick-cost: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_s(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* --- the VM ------------------------------------------------------------------- */

static struct kvm_segment segment(uint16_t selector, uint8_t type, bool code)
{
	return (struct kvm_segment){ .limit = 0xffffffff, .selector = selector, .type = type, .present = 1,
				     .dpl = 3, .s = 1, .l = code, .db = !code, .g = 1 };
}

/*
 * The guest, ring 3, position-independent (copied to CODE_GPA): counts
 * iterations in r11 (stored to [rdi]) and times each with RDTSC; a gap of
 * at least r9 TSC cycles between two iterations (the guest did not run: an
 * exit, a host interrupt) goes into the log at rbx, 2^16 entries, index
 * rsi. The host reads rsi at each window's ends.
 */
extern const uint8_t guest_loop[], guest_loop_end[];
__asm__(".pushsection .rodata\n"
	"guest_loop:\n"
	"1:	rdtsc\n"
	"	shl $32, %rdx\n"
	"	or %rdx, %rax\n"
	"	mov %rax, %rcx\n"
	"	sub %r8, %rcx\n"
	"	mov %rax, %r8\n"
	"	cmp %r9, %rcx\n"
	"	jb 2f\n"
	"	mov %rcx, (%rbx,%rsi,8)\n"
	"	inc %rsi\n"
	"	and $0xffff, %rsi\n"
	"2:	inc %r11\n"
	"	mov %r11, (%rdi)\n"
	"	jmp 1b\n"
	"guest_loop_end:\n"
	".popsection\n");

static void vm_create(uint64_t gap_min_cycles)
{
	struct { struct kvm_cpuid2 c; struct kvm_cpuid_entry2 e[128]; } cpuid = { .c.nent = 128 };
	uint64_t *pml4, *pdpt, *pd, *gdt;
	struct kvm_userspace_memory_region region = { .memory_size = MEM_SIZE };
	struct kvm_regs regs = { .rip = CODE_GPA, .rflags = 0x2, .rsp = 0x200000, .rdi = COUNTER_GPA,
				 .rbx = GAP_LOG_GPA, .r9 = gap_min_cycles };
	struct kvm_sregs sregs;
	int vm_fd;
	long run_size;

	kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm_fd < 0)
		die("open /dev/kvm");
	vm_fd = ioctl(kvm_fd, KVM_CREATE_VM, 0);
	if (vm_fd < 0 || ioctl(vm_fd, KVM_CREATE_IRQCHIP, 0) < 0)
		die("KVM_CREATE_VM");
	mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		die("mmap guest RAM");
	region.userspace_addr = (uint64_t)(uintptr_t)mem;
	if (ioctl(vm_fd, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		die("KVM_SET_USER_MEMORY_REGION");
	vcpu_fd = ioctl(vm_fd, KVM_CREATE_VCPU, 0);
	if (vcpu_fd < 0)
		die("KVM_CREATE_VCPU");
	if (ioctl(kvm_fd, KVM_GET_SUPPORTED_CPUID, &cpuid) < 0 || ioctl(vcpu_fd, KVM_SET_CPUID2, &cpuid) < 0)
		die("CPUID");
	run_size = ioctl(kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	run = mmap(NULL, (size_t)run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu_fd, 0);
	if (run == MAP_FAILED)
		die("mmap kvm_run");
	/* Identity map of the first 4 MiB in 2 MiB pages, user-accessible; a GDT with ring-3 segments. */
	pml4 = (uint64_t *)(mem + 0x1000);
	pdpt = (uint64_t *)(mem + 0x2000);
	pd = (uint64_t *)(mem + 0x3000);
	gdt = (uint64_t *)(mem + 0x5000);
	pml4[0] = 0x2000 | 7;
	pdpt[0] = 0x3000 | 7;
	pd[0] = 0x000000 | 0x87;
	pd[1] = 0x200000 | 0x87;
	gdt[1] = 0x00209a0000000000ULL; /* 0x08 ring-0 code64 */
	gdt[2] = 0x0000920000000000ULL; /* 0x10 ring-0 data */
	gdt[3] = 0x0020fa0000000000ULL; /* 0x1b ring-3 code64 */
	gdt[4] = 0x0000f20000000000ULL; /* 0x23 ring-3 data */
	memcpy(mem + CODE_GPA, guest_loop, (size_t)(guest_loop_end - guest_loop));
	if (ioctl(vcpu_fd, KVM_GET_SREGS, &sregs) < 0)
		die("KVM_GET_SREGS");
	sregs.cs = segment(0x1b, 11, true);
	sregs.ds = sregs.es = sregs.fs = sregs.gs = sregs.ss = segment(0x23, 3, false);
	sregs.tr = (struct kvm_segment){ .base = 0x6000, .limit = 0x67, .type = 11, .present = 1 };
	sregs.gdt.base = 0x5000;
	sregs.gdt.limit = 5 * 8 - 1;
	sregs.cr3 = 0x1000;
	sregs.cr4 = 0x20;       /* PAE */
	sregs.cr0 = 0x80050033; /* PG WP NE ET MP PE */
	sregs.efer = 0x500;     /* LMA LME */
	if (ioctl(vcpu_fd, KVM_SET_SREGS, &sregs) < 0 || ioctl(vcpu_fd, KVM_SET_REGS, &regs) < 0)
		die("KVM_SET_SREGS/REGS");
}

static uint64_t guest_count(void)
{
	return __atomic_load_n((uint64_t *)(mem + COUNTER_GPA), __ATOMIC_RELAXED);
}

static uint64_t guest_log_index(void)
{
	struct kvm_regs regs;

	if (ioctl(vcpu_fd, KVM_GET_REGS, &regs) < 0)
		die("KVM_GET_REGS");
	return regs.rsi;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The gaps the guest logged from index i0 to i1 (the log wraps). */
static void gap_stats(uint64_t i0, uint64_t i1, struct result *r)
{
	static uint64_t g[GAP_LOG_LEN];
	const uint64_t *log = (const uint64_t *)(mem + GAP_LOG_GPA);
	uint64_t n = 0, sum = 0, lim = (uint64_t)(GAP_LONG_S * tsc_hz);

	for (uint64_t i = i0; i != i1; i = (i + 1) % GAP_LOG_LEN)
		if (log[i] < lim) {
			g[n++] = log[i];
			sum += log[i];
		}
	qsort(g, n, sizeof(g[0]), cmp_u64);
	r->gaps = (double)n;
	r->gap_s = (double)sum / tsc_hz;
	r->gap_median_s = n ? (double)g[n / 2] / tsc_hz : 0;
}

static void calibrate_tsc(void)
{
	double t0 = now_s(CLOCK_MONOTONIC), t1;
	uint64_t c0 = __builtin_ia32_rdtsc(), c1;

	do
		t1 = now_s(CLOCK_MONOTONIC);
	while (t1 - t0 < 0.05);
	c1 = __builtin_ia32_rdtsc();
	tsc_hz = (double)(c1 - c0) / (t1 - t0);
}

/* KVM_SET_SIGNAL_MASK: the mask KVM_RUN runs with; NULL: the thread's own. */
static void kvm_run_mask(const sigset_t *mask)
{
	struct { struct kvm_signal_mask m; uint8_t set[8]; } km = { .m.len = 8 };

	if (!mask) {
		if (ioctl(vcpu_fd, KVM_SET_SIGNAL_MASK, NULL) < 0)
			die("KVM_SET_SIGNAL_MASK (off)");
		return;
	}
	memcpy(km.set, mask, 8); /* glibc's sigset_t starts with the kernel's 64-bit set */
	if (ioctl(vcpu_fd, KVM_SET_SIGNAL_MASK, &km) < 0)
		die("KVM_SET_SIGNAL_MASK");
}

/* --- kick sources --------------------------------------------------------------- */

static void on_kick(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)uc;
	/* A timer's signal stands for 1 + its overruns expirations; a perf signal's periods are read from the event. */
	handler_kicks += 1 + (si->si_code == SI_TIMER ? (uint64_t)si->si_overrun : 0);
	signals_taken++;
	__atomic_store_n(&run->immediate_exit, 1, __ATOMIC_RELAXED);
}

static void on_window_end(int sig)
{
	(void)sig;
	window_done = 1;
	__atomic_store_n(&run->immediate_exit, 1, __ATOMIC_RELAXED);
}

static timer_t thread_timer(int signo, uint64_t first_ns, uint64_t interval_ns)
{
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = signo };
	struct itimerspec its = {
		.it_value = { (time_t)(first_ns / 1000000000), (long)(first_ns % 1000000000) },
		.it_interval = { (time_t)(interval_ns / 1000000000), (long)(interval_ns % 1000000000) },
	};
	timer_t t;

	sev._sigev_un._tid = vcpu_tid;
	if (timer_create(CLOCK_MONOTONIC, &sev, &t) < 0 || timer_settime(t, 0, &its, NULL) < 0)
		die("timer_create");
	return t;
}

static int perf_clock(uint64_t period_ns)
{
	struct perf_event_attr attr = { .size = sizeof(attr), .type = PERF_TYPE_SOFTWARE,
					.config = PERF_COUNT_SW_CPU_CLOCK, .sample_period = period_ns,
					.exclude_hv = 1, .wakeup_events = 1 };
	struct f_owner_ex owner = { F_OWNER_TID, vcpu_tid };
	int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		die("perf_event_open cpu-clock");
	if (fcntl(fd, F_SETOWN_EX, &owner) < 0 || fcntl(fd, F_SETSIG, kick_signo()) < 0 ||
	    fcntl(fd, F_SETFL, O_ASYNC) < 0)
		die("perf overflow signal");
	return fd;
}

/* The "thread" source: another thread kicking at a fixed rate, as vm_request_stop kicks a vCPU. */
struct kicker {
	pthread_t thread;
	uint64_t interval_ns;
	bool send_signal;
	volatile int stop;
	uint64_t kicks;
};

static void *kicker_main(void *arg)
{
	struct kicker *k = arg;
	struct timespec next;

	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!__atomic_load_n(&k->stop, __ATOMIC_ACQUIRE)) {
		next.tv_nsec += (long)k->interval_ns;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		__atomic_store_n(&run->immediate_exit, 1, __ATOMIC_RELEASE);
		if (k->send_signal)
			pthread_kill(vcpu_thread, kick_signo());
		__atomic_fetch_add(&k->kicks, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* --- one window ----------------------------------------------------------------- */

/* Takes the pending kick signals without a handler; expirations they stand for (timer overruns). */
static uint64_t drain_sigwait(const sigset_t *kick)
{
	static const struct timespec zero = { 0, 0 };
	siginfo_t si;
	uint64_t n = 0;

	while (sigtimedwait(kick, &si, &zero) > 0) {
		n += 1 + (si.si_code == SI_TIMER ? (uint64_t)si.si_overrun : 0);
		signals_taken++;
	}
	return n;
}

static uint64_t drain_sigfd(int sfd)
{
	struct signalfd_siginfo si[16];
	uint64_t n = 0;
	ssize_t got;

	while ((got = read(sfd, si, sizeof(si))) > 0)
		for (ssize_t i = 0; i < got / (ssize_t)sizeof(si[0]); i++) {
			n += 1 + (si[i].ssi_code == SI_TIMER ? si[i].ssi_overrun : 0);
			signals_taken++;
		}
	return n;
}

static struct result run_window(const struct contender *c, unsigned int rate, unsigned int window_ms)
{
	uint64_t interval = 1000000000ULL / rate, taken = 0, exits = 0, perf_count = 0;
	sigset_t kick, thread_mask, run_mask;
	struct kicker k = { .interval_ns = interval, .send_signal = c->take != TAKE_IMM_ONLY };
	struct result r;
	timer_t kick_timer = 0, end_timer;
	int perf_fd = -1, sfd = -1;
	bool masked = c->take == TAKE_SIGWAIT || c->take == TAKE_SIGFD;
	uint64_t it0, log0;
	double cpu0;

	sigemptyset(&kick);
	sigaddset(&kick, kick_signo());
	pthread_sigmask(masked ? SIG_BLOCK : SIG_UNBLOCK, &kick, &thread_mask);
	pthread_sigmask(SIG_SETMASK, NULL, &thread_mask);
	run_mask = thread_mask;
	sigdelset(&run_mask, kick_signo());
	kvm_run_mask(masked ? &run_mask : NULL);
	if (c->take == TAKE_SIGFD && (sfd = signalfd(-1, &kick, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
		die("signalfd");
	window_done = 0;
	handler_kicks = 0;
	signals_taken = 0;
	__atomic_store_n(&run->immediate_exit, 0, __ATOMIC_RELAXED);
	it0 = guest_count();
	log0 = guest_log_index();
	cpu0 = now_s(CLOCK_THREAD_CPUTIME_ID);
	end_timer = thread_timer(SIGUSR2, (uint64_t)window_ms * 1000000, 0);
	if (c->src == SRC_TIMER)
		kick_timer = thread_timer(kick_signo(), interval, interval);
	else if (c->src == SRC_PERF)
		perf_fd = perf_clock(interval);
	else if (c->src == SRC_THREAD && pthread_create(&k.thread, NULL, kicker_main, &k))
		die("pthread_create");
	while (!window_done) {
		int rc = ioctl(vcpu_fd, KVM_RUN, 0);

		if (rc >= 0 || errno != EINTR) {
			fprintf(stderr, "kick-cost: %s: KVM_RUN returned %d (exit reason %u): %s\n", c->name, rc,
				run->exit_reason, strerror(errno));
			exit(1);
		}
		if (window_done)
			break; /* the window's end, not a kick */
		exits++;
		if (c->take == TAKE_SIGWAIT)
			taken += drain_sigwait(&kick);
		else if (c->take == TAKE_SIGFD)
			taken += drain_sigfd(sfd);
		__atomic_store_n(&run->immediate_exit, 0, __ATOMIC_RELAXED);
	}
	r.signals = (double)signals_taken; /* before the drain below: those had no exit to end */
	r.cpu_s = now_s(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	r.iters = (double)(guest_count() - it0);
	gap_stats(log0, guest_log_index(), &r);
	timer_delete(end_timer);
	if (kick_timer)
		timer_delete(kick_timer);
	if (perf_fd >= 0) {
		if (read(perf_fd, &perf_count, sizeof(perf_count)) != (ssize_t)sizeof(perf_count))
			die("read perf count");
		close(perf_fd);
	}
	if (c->src == SRC_THREAD) {
		__atomic_store_n(&k.stop, 1, __ATOMIC_RELEASE);
		pthread_join(k.thread, NULL);
	}
	/* Kicks that came after the last exit: counted as kicks, with no exit for them. */
	if (c->take == TAKE_SIGWAIT || c->take == TAKE_IMM_ONLY)
		taken += drain_sigwait(&kick);
	else if (c->take == TAKE_SIGFD)
		taken += drain_sigfd(sfd);
	if (sfd >= 0)
		close(sfd);
	r.kicks = c->src == SRC_PERF ? (double)(perf_count / interval) :
		  c->src == SRC_THREAD ? (double)k.kicks :
		  c->take == TAKE_HANDLER ? (double)handler_kicks : (double)taken;
	r.exits = (double)exits;
	return r;
}

/* --- rounds and the table --------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void check_ring3(void)
{
	struct kvm_sregs s;
	struct result r = run_window(&contenders[0], 1000, 50);

	if (ioctl(vcpu_fd, KVM_GET_SREGS, &s) < 0)
		die("KVM_GET_SREGS");
	if (s.cs.dpl != 3 || r.iters < 1e5) {
		fprintf(stderr, "kick-cost: the guest is not running natively in ring 3 (CPL %u, %.0f iterations in 50 ms)\n",
			s.cs.dpl, r.iters);
		exit(1);
	}
	printf("guest: CPL 3, %.2f ns per iteration unkicked\n", r.cpu_s * 1e9 / r.iters);
}

static void parse_rates(const char *s, unsigned int *rates, unsigned int *n)
{
	char *end;

	for (*n = 0; *s && *n < MAX_RATES; (*n)++) {
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || v < 10 || v > 100000 || (*end && *end != ',')) {
			fprintf(stderr, "kick-cost: --rates: comma-separated rates in Hz, 10 to 100000\n");
			exit(2);
		}
		rates[*n] = (unsigned int)v;
		s = *end ? end + 1 : end;
	}
}

/*
 * Per mechanism and rate, medians over the rounds of: the guest's time
 * lost per kick and per exit (its logged gaps beyond the unkicked
 * window's),
 * the vCPU thread's CPU time beyond the unkicked progress rate per kick,
 * the median gap, kicks per second, exits per kick and per signal taken
 * (1: every signal ended one run, none lost, no storm). Ratios: to the same
 * source taken by a handler (the thread source: to the timer's).
 */
static void print_table(struct result (*res)[MAX_RATES][NCONT], unsigned int rounds, const unsigned int *rates,
			unsigned int nrates, unsigned int window_ms)
{
	printf("\nmedians of %u rounds of %u ms windows\n", rounds, window_ms);
	printf("%-20s %8s %12s %6s %12s %12s %12s %10s %10s %11s\n", "mechanism", "rate", "lost/kick us", "ratio",
	       "lost/exit us", "cpu/kick us", "median gap", "kicks/s", "exits/kick", "exits/signal");
	for (unsigned int ri = 0; ri < nrates; ri++) {
		double handler_lost[SRC_THREAD + 1] = { 0 };

		for (unsigned int c = 1; c < NCONT; c++) {
			double lost[MAX_ROUNDS], lpe[MAX_ROUNDS], cpu[MAX_ROUNDS], gap[MAX_ROUNDS], kps[MAX_ROUNDS];
			double epk[MAX_ROUNDS], eps[MAX_ROUNDS];
			double ml, base;

			for (unsigned int round = 0; round < rounds; round++) {
				const struct result *r = &res[round][ri][c], *z = &res[round][ri][0];
				double unkicked = r->iters * z->cpu_s / z->iters;

				lost[round] = r->kicks ? (r->gap_s - z->gap_s) / r->kicks * 1e6 : 0;
				lpe[round] = r->exits ? (r->gap_s - z->gap_s) / r->exits * 1e6 : 0;
				cpu[round] = r->kicks ? (r->cpu_s - unkicked) / r->kicks * 1e6 : 0;
				gap[round] = r->gap_median_s * 1e6;
				kps[round] = r->kicks * 1000.0 / window_ms;
				epk[round] = r->kicks ? r->exits / r->kicks : 0;
				eps[round] = r->signals ? r->exits / r->signals : 0;
			}
			ml = median(lost, rounds);
			if (contenders[c].take == TAKE_HANDLER)
				handler_lost[contenders[c].src] = ml;
			base = handler_lost[contenders[c].src == SRC_THREAD ? SRC_TIMER : contenders[c].src];
			printf("%-20s %5u Hz %12.1f %6.2f %12.1f %12.1f %9.1f us %10.0f %10.3f %11.3f\n", contenders[c].name,
			       rates[ri], ml, base > 0 ? ml / base : 0, median(lpe, rounds), median(cpu, rounds),
			       median(gap, rounds),
			       median(kps, rounds), median(epk, rounds), median(eps, rounds));
		}
	}
}

int main(int argc, char **argv)
{
	static struct result res[MAX_ROUNDS][MAX_RATES][NCONT];
	struct sigaction kick_sa = { .sa_sigaction = on_kick, .sa_flags = SA_SIGINFO | SA_RESTART };
	struct sigaction end_sa = { .sa_handler = on_window_end, .sa_flags = SA_RESTART };
	uint32_t sync_regs = 0;
	unsigned int rounds = 7, window_ms = 200, rates[MAX_RATES] = { 1000, 10000 }, nrates = 2;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = (unsigned int)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--window-ms") && i + 1 < argc)
			window_ms = (unsigned int)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--sync-regs"))
			sync_regs = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
		else if (!strcmp(argv[i], "--rates") && i + 1 < argc)
			parse_rates(argv[++i], rates, &nrates);
		else {
			fprintf(stderr, "usage: kick-cost [--rounds N] [--window-ms MS] [--rates HZ,HZ]\n");
			return 2;
		}
	}
	if (rounds < 1 || rounds > MAX_ROUNDS || window_ms < 20 || window_ms > 10000) {
		fprintf(stderr, "kick-cost: --rounds 1 to %d, --window-ms 20 to 10000\n", MAX_ROUNDS);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	vcpu_tid = (pid_t)syscall(SYS_gettid);
	vcpu_thread = pthread_self();
	/* The handler is there for "handler"; for the masked takers it only keeps the signal from being ignored. */
	sigemptyset(&kick_sa.sa_mask);
	sigemptyset(&end_sa.sa_mask);
	if (sigaction(kick_signo(), &kick_sa, NULL) < 0 || sigaction(SIGUSR2, &end_sa, NULL) < 0)
		die("sigaction");
	calibrate_tsc();
	vm_create((uint64_t)(GAP_MIN_S * tsc_hz));
	/* What the guest sampler asks of KVM while it samples: registers copied into kvm_run at each exit. */
	run->kvm_valid_regs = sync_regs;
	check_ring3();
	for (unsigned int round = 0; round < rounds; round++)
		for (unsigned int ri = 0; ri < nrates; ri++)
			for (unsigned int ci = 0; ci < NCONT; ci++) {
				/* Alternate the order each round: no contender always follows the same one. */
				unsigned int c = round % 2 ? (unsigned int)NCONT - 1 - ci : ci;
				struct result *r = &res[round][ri][c];

				*r = run_window(&contenders[c], rates[ri], window_ms);
				printf("round %u %5u Hz %-20s cpu %.3f s, %.4g iterations, %.0f kicks, %.0f exits, "
				       "%.0f gaps of %.1f ms (median %.1f us)\n", round, rates[ri], contenders[c].name,
				       r->cpu_s, r->iters, r->kicks, r->exits, r->gaps, r->gap_s * 1e3,
				       r->gap_median_s * 1e6);
			}
	print_table(res, rounds, rates, nrates, window_ms);
	return 0;
}
