/* SPDX-License-Identifier: MIT */
/*
 * exits_joined_only (lib/profile/profile_exits.c): the exits no host sample was
 * joined to are held coded and only counted; exits holds the joined ones
 * and those of exit_kinds_kept, in recorded order, and everything a report
 * reads of them (fields, command at the exit's time, frames, the joined
 * samples' stacks) is what the profile that keeps every exit gives.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "profile_exit_fixture.h"

static struct profile *new_profile(bool cross_layer, bool joined_only, uint32_t kinds_kept)
{
	struct profile_options opt = { .guest_root = pf_dir, .cross_layer = cross_layer,
				       .exits_joined_only = joined_only, .exit_kinds_kept = kinds_kept };
	struct profile *p;

	assert_int_equal(profile_new(&p, &opt), 0);
	pf_world(p, pf_native_elf);
	return p;
}

static const uint64_t chain_a[] = { PF_GUEST_SYSCALL + 0x21, FX_BETA + 5 };
static const uint64_t vmm_chain[] = { FX_BETA + 5 };

/*
 * vCPU thread 101: exit B [3000, 4000) msr read (recorded first), exit A
 * [1000, 2000) io out 0x3f8 in spam's kernel, exit D [5000, 6000) io out
 * that no sample falls in; thread 102: exit C [1200, 1300) hlt, unjoined.
 * Host samples: 101 @1500 (A), 101 @3500 (B), 102 @1500 (none).
 */
static void add_scenario(struct profile *p)
{
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_PMU_PID, .time = 3000, .end = 4000,
					 .ip = FX_ALPHA + 4, .kind = KP_EXIT_MSR_READ, .detail = 0xc1,
					 .cpl = KP_CPL_USER, .chain = vmm_chain, .chain_len = 1 });
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_SPAM_PID, .time = 1000, .end = 2000,
					 .ip = PF_CONSOLE_WRITE + 0x10, .kind = KP_EXIT_IO_OUT, .detail = 0x3f8,
					 .cpl = KP_CPL_KERNEL, .chain = chain_a, .chain_len = 2 });
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 102, .pid = PF_SPAM_PID, .time = 1200, .end = 1300,
					 .ip = FX_BETA + 4, .kind = KP_EXIT_HLT, .cpl = KP_CPL_USER });
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_SPAM_PID, .time = 5000, .end = 6000,
					 .ip = PF_CONSOLE_WRITE + 0x10, .kind = KP_EXIT_IO_OUT, .detail = 0x2f8,
					 .cpl = KP_CPL_KERNEL, .chain = chain_a, .chain_len = 2 });
	pf_host_sample(p, 101, 1500, FX_ALPHA + 1, KP_CPL_USER, vmm_chain, 1);
	pf_host_sample(p, 101, 3500, FX_ALPHA + 1, KP_CPL_USER, vmm_chain, 1);
	pf_host_sample(p, 102, 1500, FX_ALPHA + 1, KP_CPL_USER, vmm_chain, 1);
}

static void sample_frames(char *buf, size_t len, const struct profile *p, size_t i)
{
	pf_frames(buf, len, p, &p->frames[p->samples[i].first_frame], p->samples[i].nr_frames);
}

static void test_only_joined_kept(void **state)
{
	struct profile *p = new_profile(true, true, 0), *all = new_profile(true, false, 0);
	char buf[1024], want[1024];

	(void)state;
	add_scenario(p);
	add_scenario(all);
	assert_int_equal(profile_finish(p), 0);
	assert_int_equal(profile_finish(all), 0);
	assert_int_equal(p->exits_recorded, 4);
	assert_int_equal(all->exits_recorded, 4);
	assert_int_equal(all->nr_exits, 4);
	/* B and A, in recorded order; C and D only counted. */
	assert_int_equal(p->nr_exits, 2);
	assert_int_equal(p->exits[0].kind, KP_EXIT_MSR_READ);
	assert_int_equal(p->exits[0].time, 3000);
	assert_int_equal(p->exits[1].kind, KP_EXIT_IO_OUT);
	assert_int_equal(p->exits[1].detail, 0x3f8);
	assert_int_equal(p->exits[1].end, 2000);
	assert_int_equal(p->exits[1].host_tid, 101);
	assert_int_equal(p->exits[1].pid, PF_SPAM_PID);
	assert_int_equal(p->exits[1].cpl, KP_CPL_KERNEL);
	assert_true(p->exits[0].joined && p->exits[1].joined);
	assert_string_equal(p->comms[p->exits[1].comm], "spam");
	assert_string_equal(p->comms[p->exits[0].comm], "pmu");
	assert_int_equal(p->samples[0].exit, 1);
	assert_int_equal(p->samples[1].exit, 0);
	assert_int_equal(p->samples[2].exit, PROFILE_NONE);
	assert_int_equal(p->exit_samples, 2);
	/* The joined samples' stacks are the ones the profile keeping every exit gives. */
	for (size_t i = 0; i < 3; i++) {
		sample_frames(buf, sizeof(buf), p, i);
		sample_frames(want, sizeof(want), all, i);
		assert_string_equal(buf, want);
	}
	sample_frames(buf, sizeof(buf), p, 0);
	assert_string_equal(buf, "fx`alpha;fx`beta;[exit: io out 0x3f8];[guest.kernel]`console_write;"
				 "[guest.kernel]`guest_syscall;fx`beta");
	profile_free(p);
	profile_free(all);
}

/* A kept kind stays whole joined or not (the header names COM2's writers from them); others do not. */
static void test_kinds_kept(void **state)
{
	struct profile *p = new_profile(true, true, 1u << KP_EXIT_IO_OUT);

	(void)state;
	add_scenario(p);
	assert_int_equal(profile_finish(p), 0);
	assert_int_equal(p->nr_exits, 3); /* B, A, D */
	assert_int_equal(p->exits[1].detail, 0x3f8);
	assert_int_equal(p->exits[2].detail, 0x2f8);
	assert_false(p->exits[2].joined);
	assert_int_equal(p->exits[2].nr_frames, 0);
	assert_int_equal(p->exits[2].loc, PROFILE_NONE);
	assert_string_equal(p->comms[p->exits[2].comm], "spam");
	assert_int_equal(p->samples[0].exit, 1);
	assert_int_equal(p->samples[1].exit, 0);
	profile_free(p);
}

/* Without the join nothing is joined: the kept kinds only, every exit counted. */
static void test_cross_layer_off(void **state)
{
	struct profile *p = new_profile(false, true, 1u << KP_EXIT_IO_OUT);

	(void)state;
	add_scenario(p);
	assert_int_equal(profile_finish(p), 0);
	assert_int_equal(p->exits_recorded, 4);
	assert_int_equal(p->nr_exits, 2);
	assert_int_equal(p->exits[0].detail, 0x3f8);
	assert_int_equal(p->exits[1].detail, 0x2f8);
	assert_int_equal(p->exit_samples, 0);
	profile_free(p);
}

/*
 * Replay places a kept exit by its place among all recorded exits, not in
 * exits: an exec recorded after two held exits and before a kept one of
 * the same time renames what the kept one sees.
 */
static void test_comm_by_recorded_place(void **state)
{
	struct kp_rec_comm exec = { .pid = PF_SPAM_PID, .tid = PF_SPAM_PID, .time = 7000,
				    .flags = KP_COMM_GUEST | KP_COMM_EXEC, .comm = "spam2" };
	struct profile *p = new_profile(true, true, 1u << KP_EXIT_IO_OUT);

	(void)state;
	for (int i = 0; i < 2; i++)
		pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_SPAM_PID, .time = 7000, .end = 7000,
						 .ip = FX_BETA + 4, .kind = KP_EXIT_HLT, .cpl = KP_CPL_USER });
	pf_add(p, KP_REC_COMM, &exec, sizeof(exec), false);
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_SPAM_PID, .time = 7000, .end = 8000,
					 .ip = PF_CONSOLE_WRITE, .kind = KP_EXIT_IO_OUT, .detail = 0x3f8,
					 .cpl = KP_CPL_KERNEL });
	assert_int_equal(profile_finish(p), 0);
	assert_int_equal(p->nr_exits, 1);
	assert_string_equal(p->comms[p->exits[0].comm], "spam2");
	profile_free(p);
}

#define MANY 100

/*
 * One thread's exits over several of the store's runs (a fresh coder every
 * 32): the joined ones, at and around the runs' edges, decode exactly
 * (each exit's own pid, detail, times and guest stack).
 */
static void test_many_across_runs(void **state)
{
	static const unsigned joined[] = { 0, 5, 31, 32, 33, 63, 64, 95, 96, 99 };
	struct profile *p = new_profile(true, true, 0);
	uint64_t chain[3];

	(void)state;
	for (unsigned i = 0; i < MANY; i++) {
		chain[0] = FX_BETA + 5;
		chain[1] = 0x40000100 + 16 * i; /* distinct addresses in the guest's /bin/fx map */
		chain[2] = FX_ALPHA + i % 3;
		pf_vm_exit(p, &(struct pf_exit){ .host_tid = 201, .pid = i % 2 ? PF_SPAM_PID : PF_PMU_PID,
						 .time = 10000 + 100 * i, .end = 10000 + 100 * i + 50,
						 .ip = FX_ALPHA + 1 + i % 3, .kind = (uint8_t)(i % 3 ? KP_EXIT_SIGNAL : KP_EXIT_MSR_WRITE),
						 .detail = 0x1000 + i, .cpl = KP_CPL_USER, .chain = chain,
						 .chain_len = (uint16_t)(i % 4) });
	}
	for (size_t k = 0; k < sizeof(joined) / sizeof(*joined); k++)
		pf_host_sample(p, 201, 10000 + 100 * joined[k] + 10, FX_ALPHA + 1, KP_CPL_USER, NULL, 0);
	pf_host_sample(p, 201, 10000 + 100 * 40 + 60, FX_ALPHA + 1, KP_CPL_USER, NULL, 0); /* between two exits */
	assert_int_equal(profile_finish(p), 0);
	assert_int_equal(p->exits_recorded, MANY);
	assert_int_equal(p->nr_exits, sizeof(joined) / sizeof(*joined));
	for (size_t k = 0; k < sizeof(joined) / sizeof(*joined); k++) {
		const struct profile_exit *x = &p->exits[p->samples[k].exit];
		unsigned i = joined[k];

		assert_int_equal(p->samples[k].exit, k);
		assert_int_equal(x->detail, 0x1000 + i);
		assert_int_equal(x->time, 10000 + 100 * i);
		assert_int_equal(x->end, 10000 + 100 * i + 50);
		assert_int_equal(x->pid, i % 2 ? PF_SPAM_PID : PF_PMU_PID);
		assert_int_equal(x->kind, i % 3 ? KP_EXIT_SIGNAL : KP_EXIT_MSR_WRITE);
		assert_int_equal(x->host_tid, 201);
		assert_int_equal(x->nr_frames, 1 + i % 4);
		assert_int_equal(p->locs[p->frames[x->first_frame]].addr, FX_ALPHA + 1 + i % 3);
		if (i % 4 >= 2)
			assert_int_equal(p->locs[p->frames[x->first_frame + 2]].addr, 0x40000100 + 16 * i - 1);
	}
	assert_int_equal(p->samples[sizeof(joined) / sizeof(*joined)].exit, PROFILE_NONE);
	profile_free(p);
}

/* What the reader would refuse, built in memory: held and decoded as reports read it, clamped as kept ones are. */
static void test_hostile_records(void **state)
{
	uint64_t *chain = calloc(1000, sizeof(*chain));
	struct profile *p = new_profile(true, true, 0);

	(void)state;
	assert_non_null(chain);
	for (size_t i = 0; i < 1000; i++)
		chain[i] = 0x40000100 + 16 * i;
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_SPAM_PID, .time = 1000, .end = 2000,
					 .ip = FX_BETA + 4, .kind = 200, .detail = 0x3f8, .cpl = 7, .chain = chain,
					 .chain_len = 1000 });
	pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_SPAM_PID, .time = 5000, .end = 4000,
					 .ip = FX_BETA + 4, .kind = KP_EXIT_HLT, .cpl = KP_CPL_USER });
	pf_host_sample(p, 101, 1500, FX_ALPHA + 1, KP_CPL_USER, NULL, 0);
	pf_host_sample(p, 101, 5000, FX_ALPHA + 1, KP_CPL_USER, NULL, 0);
	assert_int_equal(profile_finish(p), 0);
	assert_int_equal(p->exits_recorded, 2);
	assert_int_equal(p->nr_exits, 1);
	assert_int_equal(p->exits[0].nr_frames, 1 + KP_CALLCHAIN_MAX);
	assert_int_equal(p->exits[0].kind, KP_EXIT_OTHER);
	assert_int_equal(p->exits[0].cpl, KP_CPL_USER);
	assert_int_equal(p->samples[0].exit, 0);
	/* The empty interval [5000, 5000) holds no sample. */
	assert_int_equal(p->samples[1].exit, PROFILE_NONE);
	free(chain);
	profile_free(p);
}

/*
 * An exit longer than 2^32 ns (a halted vCPU's, 10 s here) is indexed in
 * pieces: host samples anywhere in it join it, one at its end joins the
 * exit after, whether exits are held coded or kept whole.
 */
static void test_long_exit(void **state)
{
	static const uint64_t at[] = { 1000, 1000 + 4294967294ull, 1000 + 4294967295ull, 1000 + 5000000000ull,
				       1000 + 9999999999ull, 1000 + 10000000000ull, 999 };
	/* The start of the exit each joins; 0: none. */
	static const uint64_t want[] = { 1000, 1000, 1000, 1000, 1000, 1000 + 10000000000ull, 0 };

	(void)state;
	for (int coded = 0; coded < 2; coded++) {
		struct profile *p = new_profile(true, coded, 0);

		pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_SPAM_PID, .time = 1000,
						 .end = 1000 + 10000000000ull, .ip = FX_BETA + 4, .kind = KP_EXIT_HLT,
						 .cpl = KP_CPL_USER });
		pf_vm_exit(p, &(struct pf_exit){ .host_tid = 101, .pid = PF_SPAM_PID, .time = 1000 + 10000000000ull,
						 .end = 1000 + 10000000100ull, .ip = FX_BETA + 4, .kind = KP_EXIT_HLT,
						 .cpl = KP_CPL_USER });
		for (size_t k = 0; k < sizeof(at) / sizeof(*at); k++)
			pf_host_sample(p, 101, at[k], FX_ALPHA + 1, KP_CPL_USER, NULL, 0);
		assert_int_equal(profile_finish(p), 0);
		for (size_t k = 0; k < sizeof(at) / sizeof(*at); k++) {
			uint32_t e = p->samples[k].exit;

			if (!want[k]) {
				assert_int_equal(e, PROFILE_NONE);
				continue;
			}
			assert_int_not_equal(e, PROFILE_NONE);
			assert_int_equal(p->exits[e].time, want[k]);
		}
		profile_free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_only_joined_kept),
		cmocka_unit_test(test_kinds_kept),
		cmocka_unit_test(test_cross_layer_off),
		cmocka_unit_test(test_comm_by_recorded_place),
		cmocka_unit_test(test_many_across_runs),
		cmocka_unit_test(test_hostile_records),
		cmocka_unit_test(test_long_exit),
	};

	return cmocka_run_group_tests(tests, pf_setup, pf_teardown);
}
