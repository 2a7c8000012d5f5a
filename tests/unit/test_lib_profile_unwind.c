// SPDX-License-Identifier: MIT
/*
 * --call-graph dwarf in the profile model (lib/profile/profile_unwind.c): a
 * sample's registers and stack copy (KP_REC_USER_STACK) unwound with the
 * CFI of the mapped files. The test captures its own registers and stack
 * three calls deep, as the kernel would at a sample, and expects those
 * calls back by name; hostile copies must neither crash nor read outside
 * the copy.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "profile/profile.h"

#define COPY_MAX 8192

static char warnings[4096];

static void collect_warning(void *ctx, const char *msg)
{
	(void)ctx;
	snprintf(warnings + strlen(warnings), sizeof(warnings) - strlen(warnings), "%s\n", msg);
}

static union {
	struct kp_rec_user_stack u;
	unsigned char bytes[sizeof(struct kp_rec_user_stack) + COPY_MAX];
} captured;

/* The top of the main thread's stack: the copy must not run past it. */
static uint64_t stack_top(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uint64_t lo, hi, top = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[stack]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			top = hi;
	fclose(f);
	return top;
}

/* Byte by byte, uninstrumented: the copy crosses other frames (and ASan's red zones), as the kernel's does. */
__attribute__((no_sanitize_address, noinline)) static void copy_stack(unsigned char *dst, const unsigned char *src,
								       size_t n)
{
	for (size_t i = 0; i < n; i++)
		((volatile unsigned char *)dst)[i] = src[i];
}

/* The registers the CFI may need (rip, rsp, rbp and the callee-saved ones) at one instruction, then the stack. */
__attribute__((noinline)) static void unwind_capture(void)
{
	uint64_t *r = captured.u.regs, top, n;

	memset(r, 0, sizeof(captured.u.regs));
	__asm__ volatile("lea 0(%%rip), %%rax\n\t"
			 "mov %%rax, 128(%0)\n\t"
			 "mov %%rsp, 56(%0)\n\t"
			 "mov %%rbp, 48(%0)\n\t"
			 "mov %%rbx, 24(%0)\n\t"
			 "mov %%r12, 96(%0)\n\t"
			 "mov %%r13, 104(%0)\n\t"
			 "mov %%r14, 112(%0)\n\t"
			 "mov %%r15, 120(%0)\n\t"
			 :
			 : "r"(r)
			 : "rax", "memory");
	top = stack_top();
	n = top - r[KP_DWARF_RSP];
	if (n > COPY_MAX)
		n = COPY_MAX;
	copy_stack(captured.u.data, (const unsigned char *)(uintptr_t)r[KP_DWARF_RSP], n);
	captured.u.size = (uint32_t)n;
}

/* Work after each call keeps it a call (a tail call would leave no frame to find). */
static volatile int sink;

__attribute__((noinline)) static void unwind_level2(void)
{
	unwind_capture();
	sink++;
}

__attribute__((noinline)) static void unwind_level1(void)
{
	unwind_level2();
	sink++;
}

static void add(struct profile *p, uint32_t type, const void *payload, size_t len)
{
	struct kp_record rec = { .type = type, .payload_len = (uint32_t)len, .payload = payload };

	assert_int_equal(profile_add_record(p, &rec), 0);
}

/*
 * A profile with this process's executable file mappings (the program,
 * libc, cmocka, the loader) in process 7, as MMAP records carry them.
 */
static struct profile *new_profile(void)
{
	struct profile_options opt = { .warn = collect_warning };
	union {
		struct kp_rec_mmap m;
		unsigned char bytes[sizeof(struct kp_rec_mmap) + 600];
	} mm;
	struct kp_rec_comm comm = { .pid = 7, .tid = 7, .comm = "unwinder" };
	FILE *f = fopen("/proc/self/maps", "r");
	char line[1024], perms[8], file[512];
	uint64_t lo, hi, off;
	struct profile *p;
	int n = 0;

	warnings[0] = 0;
	assert_non_null(f);
	assert_int_equal(profile_new(&p, &opt), 0);
	add(p, KP_REC_COMM, &comm, sizeof(comm));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %511s", &lo, &hi, perms, &off, file) != 5 ||
		    perms[2] != 'x' || file[0] != '/')
			continue;
		memset(&mm, 0, sizeof(mm));
		mm.m.pid = mm.m.tid = 7;
		mm.m.start = lo;
		mm.m.len = hi - lo;
		mm.m.pgoff = off;
		snprintf(mm.m.filename, 512, "%s", file);
		add(p, KP_REC_MMAP, &mm, sizeof(mm.m) + strlen(mm.m.filename) + 1);
		n++;
	}
	fclose(f);
	assert_true(n >= 2);
	return p;
}

static void add_sample(struct profile *p, uint32_t tid, uint64_t time, uint64_t ip)
{
	struct kp_rec_sample s = { .pid = 7, .tid = tid, .time = time, .ip = ip, .period = 1, .cpl = KP_CPL_USER };

	add(p, KP_REC_SAMPLE, &s, sizeof(s));
}

static void add_stack(struct profile *p, uint32_t tid, uint64_t time)
{
	captured.u.pid = 7;
	captured.u.tid = tid;
	captured.u.time = time;
	add(p, KP_REC_USER_STACK, &captured, sizeof(captured.u) + captured.u.size);
}

static const char *frame_func(const struct profile *p, size_t sample, uint32_t frame)
{
	const struct profile_sample *s = &p->samples[sample];
	const char *name;

	assert_true(frame < s->nr_frames);
	name = p->funcs[p->locs[p->frames[s->first_frame + frame]].func].name;
	return name ? name : "[unknown]";
}

static void test_unwinds_own_stack(void **state)
{
	struct profile *p;

	(void)state;
	unwind_level1();
	p = new_profile();
	add_sample(p, 7, 100, captured.u.regs[KP_DWARF_RIP]);
	add_stack(p, 7, 100);
	/* The same place without its copy: the ip alone, as with no call graph. */
	add_sample(p, 7, 200, captured.u.regs[KP_DWARF_RIP]);
	assert_int_equal(profile_finish(p), 0);
	assert_int_equal(p->nr_samples, 2);
	assert_true(p->samples[0].nr_frames >= 4);
	assert_string_equal(frame_func(p, 0, 0), "unwind_capture");
	assert_string_equal(frame_func(p, 0, 1), "unwind_level2");
	assert_string_equal(frame_func(p, 0, 2), "unwind_level1");
	assert_string_equal(frame_func(p, 0, 3), "test_unwinds_own_stack");
	/* On through cmocka and libc to the program's entry, as perf shows it. */
	assert_string_equal(frame_func(p, 0, p->samples[0].nr_frames - 1), "_start");
	assert_int_equal(p->samples[1].nr_frames, 1);
	assert_string_equal(warnings, "");
	profile_free(p);
}

/*
 * A kernel-mode sample (a syscall, an interrupt): the kernel's frames first,
 * then the user pc at entry (where the thread was, not a return address)
 * and its callers.
 */
static void test_kernel_sample_then_user(void **state)
{
	struct kp_rec_sample s = { .pid = 7, .tid = 7, .time = 100, .ip = 0xffffffff81000010ull, .period = 1,
				   .cpl = KP_CPL_KERNEL };
	struct profile *p;

	(void)state;
	unwind_level1();
	p = new_profile();
	add(p, KP_REC_SAMPLE, &s, sizeof(s));
	add_stack(p, 7, 100);
	assert_int_equal(profile_finish(p), 0);
	assert_true(p->samples[0].nr_frames >= 4);
	assert_string_equal(frame_func(p, 0, 1), "unwind_capture");
	assert_string_equal(frame_func(p, 0, 2), "unwind_level2");
	assert_string_equal(frame_func(p, 0, 3), "unwind_level1");
	profile_free(p);
}

/* Copies that follow no sample of their thread, or a second copy, are ignored and counted. */
static void test_orphans(void **state)
{
	struct profile *p;

	(void)state;
	unwind_level1();
	p = new_profile();
	add_stack(p, 7, 50);               /* before any sample */
	add_sample(p, 7, 100, captured.u.regs[KP_DWARF_RIP]);
	add_stack(p, 8, 100);              /* another thread */
	add_stack(p, 7, 101);              /* another time */
	add_stack(p, 7, 100);              /* its own: kept */
	add_stack(p, 7, 100);              /* a second one */
	assert_int_equal(profile_finish(p), 0);
	assert_true(p->samples[0].nr_frames >= 4);
	assert_non_null(strstr(warnings, "4 user stack copies that follow no sample of their thread were ignored"));
	profile_free(p);
}

/*
 * Hostile copies: garbage words, a stack pointer where reads would wrap
 * around, an empty copy. Whatever they hold, the chain stays within
 * KP_CALLCHAIN_MAX callers and nothing reads outside the copy (ASan).
 */
static void test_hostile_copies(void **state)
{
	static const uint64_t sps[] = { 0x1000, UINT64_MAX - 16, UINT64_MAX, 0 };
	struct profile *p;
	uint64_t x = 0x9e3779b97f4a7c15ull;

	(void)state;
	unwind_level1();
	p = new_profile();
	for (size_t k = 0; k < sizeof(sps) / sizeof(sps[0]); k++) {
		for (uint32_t i = 0; i < COPY_MAX / 8; i++) {
			/* Words that point back into the copy or at this program's code, or are noise. */
			uint64_t w;

			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			if (i % 3 == 0)
				w = sps[k] + x % COPY_MAX;
			else if (i % 3 == 1)
				w = captured.u.regs[KP_DWARF_RIP] + x % 64;
			else
				w = x;
			memcpy(captured.u.data + 8 * i, &w, 8);
		}
		captured.u.size = k == 3 ? 0 : COPY_MAX;
		captured.u.regs[KP_DWARF_RSP] = sps[k];
		add_sample(p, 7, 100 + k, captured.u.regs[KP_DWARF_RIP]);
		add_stack(p, 7, 100 + k);
	}
	assert_int_equal(profile_finish(p), 0);
	for (size_t k = 0; k < p->nr_samples; k++)
		assert_true(p->samples[k].nr_frames >= 1 && p->samples[k].nr_frames <= 1 + KP_CALLCHAIN_MAX);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unwinds_own_stack),
		cmocka_unit_test(test_kernel_sample_then_user),
		cmocka_unit_test(test_orphans),
		cmocka_unit_test(test_hostile_copies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
