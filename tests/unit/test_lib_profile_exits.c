/* SPDX-License-Identifier: MIT */
/*
 * VM exits in the profile model (lib/profile/profile_exits.c, issue 14): an exit's
 * guest side resolves in the guest's domain and gets a frame of its own;
 * with cross_layer, a host sample of the exit's vCPU thread inside
 * [exit, next entry) is joined to it and its stack goes on through the
 * exit's frame into the guest's stack. Records are built in memory
 * (profile_exit_fixture.h), so hostile ones the reader would refuse get in.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "profile_exit_fixture.h"

static struct profile *new_profile_all(bool cross_layer, bool all_exit_frames)
{
	struct profile_options opt = { .guest_root = pf_dir, .cross_layer = cross_layer,
				       .all_exit_frames = all_exit_frames };
	struct profile *p;

	assert_int_equal(profile_new(&p, &opt), 0);
	pf_world(p, pf_native_elf);
	return p;
}

static struct profile *new_profile(bool cross_layer)
{
	return new_profile_all(cross_layer, false);
}

/* Exits of the scenario below, in recorded order (B first: out of time order). */
enum { EXIT_B, EXIT_A, EXIT_C };

/*
 * vCPU thread 101: exit A [1000, 2000) io out 0x3f8 in spam's kernel,
 * exit B [3000, 4000) msr read 0xc1 in pmu's user code; vCPU thread 102:
 * exit C [1200, 1300) hlt. Samples (index: what it must join):
 *   0 host 101 @1000 (A's start): A     1 host 101 @1999, kernel: A
 *   2 host 101 @2000 (A's end): none    3 host 102 @1500: none
 *   4 guest, tid 101 @1500: none        5 host 101 @3500: B
 *   6 host 102 @1250: C                 7 host 101 @999: none
 */
static const uint64_t chain_a[] = { PF_GUEST_SYSCALL + 0x21, FX_BETA + 5 };
static const uint64_t chain_b[] = { FX_BETA + 5 };
static const uint64_t vmm_chain[] = { FX_BETA + 5 };
static const uint64_t kernel_chain[] = { FX_ALPHA + 2, FX_BETA + 5 };

static void add_scenario(struct profile *p)
{
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_PMU_PID, .time = 3000, .end = 4000,
					 .ip = FX_ALPHA + 4, .kind = KP_EXIT_MSR_READ, .detail = 0xc1,
					 .cpl = KP_CPL_USER, .chain = chain_b, .chain_len = 1 });
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_SPAM_PID, .time = 1000, .end = 2000,
					 .ip = PF_CONSOLE_WRITE + 0x10, .kind = KP_EXIT_IO_OUT, .detail = 0x3f8,
					 .cpl = KP_CPL_KERNEL, .chain = chain_a, .chain_len = 2 });
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 102, .pid = PF_SPAM_PID, .time = 1200, .end = 1300,
					 .ip = FX_BETA + 4, .kind = KP_EXIT_HLT, .cpl = KP_CPL_USER });
	pf_host_sample(p, 101, 1000, FX_ALPHA + 1, KP_CPL_USER, vmm_chain, 1);
	pf_host_sample(p, 101, 1999, PF_HANDLE_IO + 8, KP_CPL_KERNEL, kernel_chain, 2);
	pf_host_sample(p, 101, 2000, FX_ALPHA + 1, KP_CPL_USER, vmm_chain, 1);
	pf_host_sample(p, 102, 1500, FX_ALPHA + 1, KP_CPL_USER, vmm_chain, 1);
	pf_sample(p, KP_DOMAIN_GUEST, PF_SPAM_PID, 101, 1500, 1, FX_BETA + 1, KP_CPL_USER, NULL, 0);
	pf_host_sample(p, 101, 3500, FX_ALPHA + 1, KP_CPL_USER, vmm_chain, 1);
	pf_host_sample(p, 102, 1250, FX_ALPHA + 1, KP_CPL_USER, vmm_chain, 1);
	pf_host_sample(p, 101, 999, FX_ALPHA + 1, KP_CPL_USER, vmm_chain, 1);
}

static struct profile *scenario_all(bool cross_layer, bool all_exit_frames)
{
	struct profile *p = new_profile_all(cross_layer, all_exit_frames);

	add_scenario(p);
	assert_int_equal(profile_finish(p), 0);
	assert_int_equal(p->nr_samples, 8);
	assert_int_equal(p->nr_exits, 3);
	return p;
}

static struct profile *scenario(bool cross_layer)
{
	return scenario_all(cross_layer, false);
}

static void sample_frames(char *buf, size_t len, const struct profile *p, size_t i)
{
	pf_frames(buf, len, p, &p->frames[p->samples[i].first_frame], p->samples[i].nr_frames);
}

static void exit_frames(char *buf, size_t len, const struct profile *p, size_t i)
{
	pf_frames(buf, len, p, &p->frames[p->exits[i].first_frame], p->exits[i].nr_frames);
}

static void test_join_interval(void **state)
{
	struct profile *p = scenario(true);

	(void)state;
	/* [time, end): the start is in, the end is out, and so is before the start. */
	assert_int_equal(p->samples[0].exit, EXIT_A);
	assert_int_equal(p->samples[1].exit, EXIT_A);
	assert_int_equal(p->samples[2].exit, PROFILE_NONE);
	assert_int_equal(p->samples[7].exit, PROFILE_NONE);
	assert_int_equal(p->exit_samples, 4);
	profile_free(p);
}

static void test_join_thread_and_domain(void **state)
{
	struct profile *p = scenario(true);

	(void)state;
	/* Thread 102 at 1500 is inside A's time but A is thread 101's; C (102's) ended at 1300. */
	assert_int_equal(p->samples[3].exit, PROFILE_NONE);
	assert_int_equal(p->samples[6].exit, EXIT_C);
	/* A guest sample with the vCPU thread's number as its tid, inside A: the guest's own, never joined. */
	assert_int_equal(p->samples[4].domain, KP_DOMAIN_GUEST);
	assert_int_equal(p->samples[4].exit, PROFILE_NONE);
	assert_int_equal(p->samples[4].nr_frames, 1);
	profile_free(p);
}

static void test_join_two_exits_out_of_order(void **state)
{
	struct profile *p = scenario(true);

	(void)state;
	/* B was recorded before A but is later; each sample joins the exit its time is in. */
	assert_int_equal(p->samples[0].exit, EXIT_A);
	assert_int_equal(p->samples[5].exit, EXIT_B);
	assert_int_equal(p->exits[EXIT_B].time, 3000);
	assert_int_equal(p->exits[EXIT_B].end, 4000);
	profile_free(p);
}

static void test_cross_layer_frames(void **state)
{
	struct profile *p = scenario(true);
	const struct profile_loc *exit_loc;
	char buf[1024];

	(void)state;
	/* Innermost first: the host's frames, the exit's, then the guest's stack at the exit (its RIP first). */
	sample_frames(buf, sizeof(buf), p, 0);
	assert_string_equal(buf, "fx`alpha;fx`beta;[exit: io out 0x3f8];[guest.kernel]`console_write;"
				 "[guest.kernel]`guest_syscall;fx`beta");
	sample_frames(buf, sizeof(buf), p, 1);
	assert_string_equal(buf, "[kernel.kallsyms]`handle_io;fx`alpha;fx`beta;[exit: io out 0x3f8];"
				 "[guest.kernel]`console_write;[guest.kernel]`guest_syscall;fx`beta");
	sample_frames(buf, sizeof(buf), p, 5);
	assert_string_equal(buf, "fx`alpha;fx`beta;[exit: msr read 0xc1];fx`alpha;fx`beta");
	sample_frames(buf, sizeof(buf), p, 6);
	assert_string_equal(buf, "fx`alpha;fx`beta;[exit: hlt];fx`beta");
	/* Not joined: the plain host stack. */
	sample_frames(buf, sizeof(buf), p, 2);
	assert_string_equal(buf, "fx`alpha;fx`beta");

	/* Each layer in its domain: the same names and addresses on both sides stay apart. */
	const uint32_t *f = &p->frames[p->samples[1].first_frame];

	assert_int_equal(p->images[p->locs[f[0]].image].domain, KP_DOMAIN_NATIVE);
	assert_true(p->images[p->locs[f[0]].image].kernel);
	assert_int_equal(p->images[p->locs[f[1]].image].domain, KP_DOMAIN_NATIVE);
	assert_int_equal(p->images[p->locs[f[4]].image].domain, KP_DOMAIN_GUEST);
	assert_true(p->images[p->locs[f[4]].image].kernel);
	assert_int_equal(p->images[p->locs[f[6]].image].domain, KP_DOMAIN_GUEST);
	assert_false(p->images[p->locs[f[6]].image].kernel);

	/* The exit's frame: its own loc, in the "[vm exit]" pseudo image, the only image so flagged. */
	assert_int_equal(f[3], p->exits[EXIT_A].loc);
	exit_loc = &p->locs[p->exits[EXIT_A].loc];
	assert_true(p->images[exit_loc->image].vm_exit);
	assert_string_equal(p->images[exit_loc->image].name, "[vm exit]");
	assert_string_equal(p->funcs[exit_loc->func].name, "[exit: io out 0x3f8]");
	for (size_t i = 0; i < p->nr_images; i++)
		assert_true(p->images[i].vm_exit == (i == exit_loc->image));
	/* One frame per description: the two exits' frames differ, the same exit's is shared. */
	assert_int_not_equal(p->exits[EXIT_A].loc, p->exits[EXIT_B].loc);
	assert_int_equal(p->frames[p->samples[0].first_frame + 2], p->exits[EXIT_A].loc);

	/* The exits keep their own guest stacks. */
	exit_frames(buf, sizeof(buf), p, EXIT_A);
	assert_string_equal(buf, "[guest.kernel]`console_write;[guest.kernel]`guest_syscall;fx`beta");
	exit_frames(buf, sizeof(buf), p, EXIT_C);
	assert_string_equal(buf, "fx`beta");
	profile_free(p);
}

static void test_exit_comm(void **state)
{
	struct profile *p = scenario(true);

	(void)state;
	/* The guest's COMM for the exit's pid, not the host's process of the same number. */
	assert_string_equal(p->comms[p->exits[EXIT_A].comm], "spam");
	assert_string_equal(p->comms[p->exits[EXIT_B].comm], "pmu");
	assert_int_equal(p->exits[EXIT_A].pid, PF_SPAM_PID);
	assert_int_equal(p->exits[EXIT_A].host_tid, 101);
	assert_int_equal(p->exits[EXIT_A].kind, KP_EXIT_IO_OUT);
	assert_int_equal(p->exits[EXIT_A].detail, 0x3f8);
	assert_int_equal(p->exits[EXIT_A].cpl, KP_CPL_KERNEL);
	/* The joined host sample stays the VMM's own; only reports relabel it. */
	assert_string_equal(p->comms[p->samples[0].comm], "vmm");
	assert_int_equal(p->samples[0].pid, PF_VMM_PID);
	profile_free(p);
}

/*
 * An exit is replayed in (time, stream order) with the process records: a
 * guest exec recorded before an exit of the same time renamed the process
 * the exit saw; one recorded after it did not.
 */
static void test_exit_comm_at_exec(void **state)
{
	struct kp_rec_comm exec = { .pid = PF_SPAM_PID, .tid = PF_SPAM_PID, .time = 5000,
				    .flags = KP_COMM_GUEST | KP_COMM_EXEC, .comm = "spam2" };
	struct profile *p = new_profile(true);

	(void)state;
	pf_add(p, KP_REC_COMM, &exec, sizeof(exec), false);
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_SPAM_PID, .time = 5000, .end = 6000,
					 .ip = PF_CONSOLE_WRITE, .kind = KP_EXIT_IO_OUT, .detail = 0x3f8,
					 .cpl = KP_CPL_KERNEL });
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_SPAM_PID, .time = 7000, .end = 8000,
					 .ip = PF_CONSOLE_WRITE, .kind = KP_EXIT_IO_OUT, .detail = 0x3f8,
					 .cpl = KP_CPL_KERNEL });
	exec.time = 7000;
	snprintf(exec.comm, sizeof(exec.comm), "spam3");
	pf_add(p, KP_REC_COMM, &exec, sizeof(exec), false);
	assert_int_equal(profile_finish(p), 0);
	assert_string_equal(p->comms[p->exits[0].comm], "spam2");
	assert_string_equal(p->comms[p->exits[1].comm], "spam2");
	profile_free(p);
}

static void test_cross_layer_off(void **state)
{
	struct profile *p = scenario(false);
	char buf[1024];

	(void)state;
	for (size_t i = 0; i < p->nr_samples; i++)
		assert_int_equal(p->samples[i].exit, PROFILE_NONE);
	assert_int_equal(p->exit_samples, 0);
	sample_frames(buf, sizeof(buf), p, 0);
	assert_string_equal(buf, "fx`alpha;fx`beta");
	/* No exit joined, none asked for: their stacks are not resolved, their commands are. */
	for (size_t i = 0; i < p->nr_exits; i++) {
		assert_false(p->exits[i].joined);
		assert_int_equal(p->exits[i].loc, PROFILE_NONE);
		assert_int_equal(p->exits[i].nr_frames, 0);
	}
	assert_string_equal(p->comms[p->exits[EXIT_A].comm], "spam");
	profile_free(p);
}

static void test_all_exit_frames(void **state)
{
	struct profile *p = scenario_all(false, true);
	char buf[1024];

	(void)state;
	assert_int_equal(p->exit_samples, 0);
	/* Asked for (--exits): every exit resolved, each with its frame, though none is joined. */
	for (size_t i = 0; i < p->nr_exits; i++) {
		assert_false(p->exits[i].joined);
		assert_int_not_equal(p->exits[i].loc, PROFILE_NONE);
	}
	assert_string_equal(p->funcs[p->locs[p->exits[EXIT_A].loc].func].name, "[exit: io out 0x3f8]");
	exit_frames(buf, sizeof(buf), p, EXIT_A);
	assert_string_equal(buf, "[guest.kernel]`console_write;[guest.kernel]`guest_syscall;fx`beta");
	assert_string_equal(p->comms[p->exits[EXIT_A].comm], "spam");
	profile_free(p);
}

static void test_only_joined_exits_resolved(void **state)
{
	struct profile *p = new_profile(true);
	char buf[1024];

	(void)state;
	add_scenario(p);
	/* A fourth exit on thread 101 that no host sample falls in, same reason as A. */
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_SPAM_PID, .time = 5000, .end = 6000,
					 .ip = PF_CONSOLE_WRITE + 0x10, .kind = KP_EXIT_IO_OUT, .detail = 0x3f8,
					 .cpl = KP_CPL_KERNEL, .chain = chain_a, .chain_len = 2 });
	assert_int_equal(profile_finish(p), 0);
	assert_int_equal(p->nr_exits, 4);
	assert_int_equal(p->exit_samples, 4);
	for (size_t i = 0; i < 3; i++)
		assert_true(p->exits[i].joined);
	assert_false(p->exits[3].joined);
	assert_int_equal(p->exits[3].loc, PROFILE_NONE);
	assert_int_equal(p->exits[3].nr_frames, 0);
	assert_string_equal(p->comms[p->exits[3].comm], "spam");
	exit_frames(buf, sizeof(buf), p, EXIT_A);
	assert_string_equal(buf, "[guest.kernel]`console_write;[guest.kernel]`guest_syscall;fx`beta");
	profile_free(p);
}

static void expect_describe(uint8_t kind, uint64_t detail, const char *want)
{
	char buf[64];

	profile_exit_describe(buf, sizeof(buf), kind, detail);
	assert_string_equal(buf, want);
}

static void test_describe(void **state)
{
	char small[8];

	(void)state;
	expect_describe(KP_EXIT_IO_OUT, 0x3f8, "io out 0x3f8");
	expect_describe(KP_EXIT_IO_IN, 0x3fd, "io in 0x3fd");
	expect_describe(KP_EXIT_MMIO_READ, 0xfee00030, "mmio read 0xfee00030");
	expect_describe(KP_EXIT_MMIO_WRITE, 0xfee000b0, "mmio write 0xfee000b0");
	expect_describe(KP_EXIT_MSR_READ, 0xc1, "msr read 0xc1");
	expect_describe(KP_EXIT_MSR_WRITE, 0x38f, "msr write 0x38f");
	expect_describe(KP_EXIT_HLT, 123, "hlt");
	expect_describe(KP_EXIT_SIGNAL, 9, "signal");
	expect_describe(KP_EXIT_OTHER, 17, "kvm internal error");
	expect_describe(KP_EXIT_OTHER, 4, "kvm debug");
	expect_describe(KP_EXIT_OTHER, 3, "kvm reason 3");
	expect_describe(KP_EXIT_OTHER, 25, "kvm reason 25");
	/* A kind from a newer recorder, or hostile: named by its number, never an index past the table. */
	expect_describe(KP_EXIT_KIND_MAX + 1, 0x3f8, "kind 9");
	expect_describe(255, 0, "kind 255");
	/* Cut to the buffer, terminated. */
	profile_exit_describe(small, sizeof(small), KP_EXIT_MMIO_WRITE, 0xfee000b0);
	assert_string_equal(small, "mmio wr");
}

/* A record built in memory claims more callers than a record may hold: the model takes KP_CALLCHAIN_MAX. */
static void test_hostile_callchain_clamped(void **state)
{
	struct profile *p = new_profile(true);
	uint64_t *chain = calloc(1000, sizeof(*chain));
	const uint32_t *f;
	char buf[64];

	(void)state;
	assert_non_null(chain);
	/*
	 * Distinct user addresses in the guest's /bin/fx map (0x40000000,
	 * 256 KiB), none merging with another: a chain a map covers is kept,
	 * up to the clamp. (Callers no map covers end the chain: the test
	 * below.)
	 */
	for (size_t i = 0; i < 1000; i++)
		chain[i] = 0x40000100 + 16 * i;
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_SPAM_PID, .time = 1000, .end = 2000,
					 .ip = FX_BETA + 4, .kind = KP_EXIT_IO_OUT, .detail = 0x3f8,
					 .cpl = KP_CPL_USER, .chain = chain, .chain_len = 1000 });
	pf_host_sample(p, 101, 1500, FX_ALPHA + 1, KP_CPL_USER, NULL, 0);
	assert_int_equal(profile_finish(p), 0);
	assert_int_equal(p->exits[0].nr_frames, 1 + KP_CALLCHAIN_MAX);
	assert_int_equal(p->samples[0].exit, 0);
	assert_int_equal(p->samples[0].nr_frames, 1 + 1 + 1 + KP_CALLCHAIN_MAX);
	f = &p->frames[p->samples[0].first_frame];
	assert_int_equal(f[1], p->exits[0].loc);
	pf_frames(buf, sizeof(buf), p, &f[2], 1);
	assert_string_equal(buf, "fx`beta");
	assert_int_equal(p->chains_cut, 0);
	/* The last caller kept is the 127th recorded (a return address: the call before it). */
	assert_int_equal(p->locs[f[2 + KP_CALLCHAIN_MAX]].addr, chain[KP_CALLCHAIN_MAX - 1] - 1);
	free(chain);
	profile_free(p);
}

/* An exit whose end is before its start (a record the reader would refuse): an empty interval. */
static void test_hostile_end_before_time(void **state)
{
	struct profile *p = new_profile(true);

	(void)state;
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_SPAM_PID, .time = 5000, .end = 4000,
					 .ip = FX_BETA + 4, .kind = KP_EXIT_HLT, .cpl = KP_CPL_USER });
	pf_host_sample(p, 101, 5000, FX_ALPHA + 1, KP_CPL_USER, NULL, 0);
	pf_host_sample(p, 101, 4500, FX_ALPHA + 1, KP_CPL_USER, NULL, 0);
	assert_int_equal(profile_finish(p), 0);
	assert_int_equal(p->exits[0].time, 5000);
	assert_int_equal(p->exits[0].end, 5000);
	assert_int_equal(p->samples[0].exit, PROFILE_NONE);
	assert_int_equal(p->samples[1].exit, PROFILE_NONE);
	assert_int_equal(p->exit_samples, 0);
	profile_free(p);
}

/* A guest stack that points where no guest map is: the guest's "[unknown]", and the exit's frame stays. */
static void test_hostile_unmapped_guest_stack(void **state)
{
	static const uint64_t wild[] = { 0x7000, 0x9001 };
	struct profile *p = new_profile(true);
	const uint32_t *f;
	char buf[256];

	(void)state;
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_SPAM_PID, .time = 1000, .end = 2000,
					 .ip = 0x5000, .kind = KP_EXIT_IO_IN, .detail = 0x3fd, .cpl = KP_CPL_USER,
					 .chain = wild, .chain_len = 2 });
	/* A guest process nobody described at all. */
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = 4242, .time = 3000, .end = 4000,
					 .ip = FX_BETA + 4, .kind = KP_EXIT_IO_IN, .detail = 0x3fd, .cpl = KP_CPL_USER });
	pf_host_sample(p, 101, 1500, FX_ALPHA + 1, KP_CPL_USER, NULL, 0);
	pf_host_sample(p, 101, 3500, FX_ALPHA + 1, KP_CPL_USER, NULL, 0);
	assert_int_equal(profile_finish(p), 0);

	assert_int_equal(p->samples[0].exit, 0);
	f = &p->frames[p->samples[0].first_frame];
	pf_frames(buf, sizeof(buf), p, f, p->samples[0].nr_frames);
	/* The exit's own RIP stays (unknown); its callers no map covers end the chain there (issue 16). */
	assert_string_equal(buf, "fx`alpha;[exit: io in 0x3fd];[unknown]`[unknown]");
	assert_int_equal(p->images[p->locs[f[2]].image].domain, KP_DOMAIN_GUEST);
	assert_int_equal(p->chains_cut, 1);
	assert_int_equal(p->frames_cut, 2);
	/* The VMM's own unknowns would be the native "[unknown]": none here. */
	assert_int_equal(p->locs[f[2]].addr, 0x5000);

	assert_int_equal(p->samples[1].exit, 1);
	pf_frames(buf, sizeof(buf), p, &p->frames[p->samples[1].first_frame], p->samples[1].nr_frames);
	assert_string_equal(buf, "fx`alpha;[exit: io in 0x3fd];[unknown]`[unknown]");
	assert_string_equal(p->comms[p->exits[1].comm], ":4242");
	profile_free(p);
}

/*
 * Samples exactly at the start of another vCPU thread's exit, of threads
 * with no exit of their own then: what sorts before them (another
 * thread's exits) must not claim them.
 */
static void test_hostile_sample_at_other_vcpu_exit(void **state)
{
	struct profile *p = new_profile(true);

	(void)state;
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_SPAM_PID, .time = 1000, .end = 9000,
					 .ip = FX_BETA + 4, .kind = KP_EXIT_HLT, .cpl = KP_CPL_USER });
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 102, .pid = PF_SPAM_PID, .time = 2000, .end = 3000,
					 .ip = FX_BETA + 4, .kind = KP_EXIT_HLT, .cpl = KP_CPL_USER });
	pf_host_sample(p, 102, 1000, FX_ALPHA + 1, KP_CPL_USER, NULL, 0); /* 101's exit start; 102 in the guest */
	pf_host_sample(p, 103, 2000, FX_ALPHA + 1, KP_CPL_USER, NULL, 0); /* 102's exit start; 103 has none */
	pf_host_sample(p, 100, 2000, FX_ALPHA + 1, KP_CPL_USER, NULL, 0); /* a thread sorting before them all */
	pf_host_sample(p, 102, 2000, FX_ALPHA + 1, KP_CPL_USER, NULL, 0); /* 102's own: joined */
	pf_host_sample(p, 101, 2000, FX_ALPHA + 1, KP_CPL_USER, NULL, 0); /* 101's own: joined */
	assert_int_equal(profile_finish(p), 0);
	assert_int_equal(p->samples[0].exit, PROFILE_NONE);
	assert_int_equal(p->samples[1].exit, PROFILE_NONE);
	assert_int_equal(p->samples[2].exit, PROFILE_NONE);
	assert_int_equal(p->samples[3].exit, 1);
	assert_int_equal(p->samples[4].exit, 0);
	assert_int_equal(p->exit_samples, 2);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join_interval),
		cmocka_unit_test(test_join_thread_and_domain),
		cmocka_unit_test(test_join_two_exits_out_of_order),
		cmocka_unit_test(test_cross_layer_frames),
		cmocka_unit_test(test_exit_comm),
		cmocka_unit_test(test_exit_comm_at_exec),
		cmocka_unit_test(test_cross_layer_off),
		cmocka_unit_test(test_all_exit_frames),
		cmocka_unit_test(test_only_joined_exits_resolved),
		cmocka_unit_test(test_describe),
		cmocka_unit_test(test_hostile_callchain_clamped),
		cmocka_unit_test(test_hostile_end_before_time),
		cmocka_unit_test(test_hostile_unmapped_guest_stack),
		cmocka_unit_test(test_hostile_sample_at_other_vcpu_exit),
	};

	return cmocka_run_group_tests(tests, pf_setup, pf_teardown);
}
