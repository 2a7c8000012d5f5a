/* SPDX-License-Identifier: MIT */
/*
 * lib/profile: sample files written with the library's writer, read back
 * into a profile, and every sample's resolution checked: fork inheritance,
 * exec reset, exited processes, pid reuse, maps recorded after samples,
 * kernel symbols from KSYMS, --kallsyms or the kernel ELF, callchains with
 * perf's context markers, and hostile records.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lib_fixture.h"
#include "profile/profile.h"

#define CTX_KERNEL ((uint64_t)-128)
#define CTX_USER ((uint64_t)-512)

static char *dir;
static char data_path[600];
static char warnings[8192];
static int nr_warnings;

static int setup(void **state)
{
	(void)state;
	dir = fx_mkdir();
	if (!dir || fx_build(dir, NULL))
		return -1;
	snprintf(data_path, sizeof(data_path), "%s/test.data", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fx_rmdir(dir);
	return 0;
}

static void collect_warning(void *ctx, const char *msg)
{
	(void)ctx;
	nr_warnings++;
	strncat(warnings, msg, sizeof(warnings) - strlen(warnings) - 2);
	strcat(warnings, "\n");
}

static struct profile *load(const char *kallsyms_path)
{
	struct profile_options opt = { .root = dir, .kallsyms_path = kallsyms_path, .warn = collect_warning };
	struct profile *p = NULL;
	char err[512];
	int rc;

	warnings[0] = '\0';
	nr_warnings = 0;
	rc = profile_load(&p, data_path, &opt, err, sizeof(err));
	if (rc)
		fail_msg("profile_load: %s", err);
	return p;
}

static const char *frame_func(const struct profile *p, size_t sample, uint32_t frame)
{
	const struct profile_sample *s = &p->samples[sample];
	const char *name;

	if (frame >= s->nr_frames)
		return "(no frame)";
	name = p->funcs[p->locs[p->frames[s->first_frame + frame]].func].name;
	return name ? name : "[unknown]";
}

static const char *frame_image(const struct profile *p, size_t sample, uint32_t frame)
{
	const struct profile_sample *s = &p->samples[sample];

	if (frame >= s->nr_frames)
		return "(no frame)";
	return p->images[p->locs[p->frames[s->first_frame + frame]].image].name;
}

static const char *comm_of(const struct profile *p, size_t sample)
{
	return p->comms[p->samples[sample].comm];
}

static void test_process_lifecycle(void **state)
{
	static const char ksyms[] = "ffffffff81000000 T kfunc\nffffffff81001000 T kfunc2\n";
	struct kp_writer *w;
	struct profile *p;
	int fd;

	(void)state;
	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(fx_event(w, 1, "cycles", 1000, 0), 0);
	assert_int_equal(kp_writer_ksyms(w, ksyms, strlen(ksyms)), 0);
	assert_int_equal(fx_comm(w, 10, 10, 1, 0, "shell"), 0);
	assert_int_equal(fx_mmap(w, 10, 2, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0), 0);
	/* 0: the child runs in its parent's mappings and name. */
	assert_int_equal(fx_task(w, KP_REC_FORK, 11, 10, 3), 0);
	assert_int_equal(fx_sample(w, 1, 11, 4, FX_ALPHA + 1, KP_CPL_USER, NULL, 0), 0);
	/* 1: after exec none of them are left. */
	assert_int_equal(fx_comm(w, 11, 11, 5, KP_COMM_EXEC, "other"), 0);
	assert_int_equal(fx_sample(w, 1, 11, 6, FX_ALPHA + 1, KP_CPL_USER, NULL, 0), 0);
	/* 2: the new program's own mapping (only beta's page: alpha's stays unmapped). */
	assert_int_equal(fx_mmap(w, 11, 7, FX_BETA, 0x1000, 0x3000, "/bin/fx", NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 11, 8, FX_BETA, KP_CPL_USER, NULL, 0), 0);
	/* 3: a sample read after the process's EXIT still resolves. */
	assert_int_equal(fx_task(w, KP_REC_EXIT, 11, 10, 9), 0);
	assert_int_equal(fx_sample(w, 1, 11, 10, FX_BETA + 3, KP_CPL_USER, NULL, 0), 0);
	/* 4: the pid reused by a process forked from an unknown parent: nothing mapped. */
	assert_int_equal(fx_task(w, KP_REC_FORK, 11, 1, 11), 0);
	assert_int_equal(fx_sample(w, 1, 11, 12, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	/* 5: name and mapping recorded after the sample (the bundled guest's process table). */
	assert_int_equal(fx_sample(w, 1, 20, 13, FX_BETA + 2, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_comm(w, 20, 20, 14, 0, "late"), 0);
	assert_int_equal(fx_mmap(w, 20, 15, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0), 0);
	/* 6: kernel mode through the recorded kallsyms. */
	assert_int_equal(fx_sample(w, 1, 10, 16, 0xffffffff81000010, KP_CPL_KERNEL, NULL, 0), 0);
	/* 7: a user callchain: return addresses resolve at address - 1. */
	{
		uint64_t chain[] = { FX_BETA + 5, FX_START + 1, FX_ALPHA };

		assert_int_equal(fx_sample(w, 1, 10, 17, FX_ALPHA + 1, KP_CPL_USER, chain, 3), 0);
	}
	/* 8: a perf-style chain: markers, the ip repeated, kernel then user frames. */
	{
		uint64_t chain[] = { CTX_KERNEL, 0xffffffff81000020, 0xffffffff81001010, CTX_USER, FX_BETA + 5 };

		assert_int_equal(fx_sample(w, 1, 10, 18, 0xffffffff81000020, KP_CPL_KERNEL, chain, 5), 0);
	}
	/* 9: a sample out of time order (another CPU's buffer) sees the state of its time. */
	assert_int_equal(fx_sample(w, 1, 11, 6, FX_ALPHA + 1, KP_CPL_USER, NULL, 0), 0);
	/* 10: the idle task (pid 0), which no COMM names: swapper, as perf and the kernel call it (it was ":0"). */
	assert_int_equal(fx_sample(w, 1, 0, 19, 0xffffffff81000010, KP_CPL_KERNEL, NULL, 0), 0);
	assert_int_equal(fx_close(w, fd), 0);

	p = load(NULL);
	assert_int_equal(p->nr_samples, 11);
	assert_string_equal(frame_func(p, 0, 0), "alpha");
	assert_string_equal(frame_image(p, 0, 0), "fx");
	assert_string_equal(comm_of(p, 0), "shell");
	assert_string_equal(frame_func(p, 1, 0), "[unknown]");
	assert_string_equal(frame_image(p, 1, 0), "[unknown]");
	assert_string_equal(comm_of(p, 1), "other");
	assert_string_equal(frame_func(p, 2, 0), "beta");
	assert_string_equal(comm_of(p, 2), "other");
	assert_string_equal(frame_func(p, 3, 0), "beta");
	assert_string_equal(comm_of(p, 3), "other");
	assert_string_equal(frame_func(p, 4, 0), "[unknown]");
	assert_string_equal(comm_of(p, 4), ":11");
	assert_string_equal(frame_func(p, 5, 0), "beta");
	assert_string_equal(comm_of(p, 5), "late");
	assert_string_equal(frame_func(p, 6, 0), "kfunc");
	assert_string_equal(frame_image(p, 6, 0), "[kernel.kallsyms]");
	assert_int_equal(p->samples[7].nr_frames, 4);
	assert_string_equal(frame_func(p, 7, 0), "alpha");
	assert_string_equal(frame_func(p, 7, 1), "beta");
	assert_string_equal(frame_func(p, 7, 2), "_start");
	/* FX_ALPHA as a return address means the call was before alpha: not alpha. */
	assert_string_not_equal(frame_func(p, 7, 3), "alpha");
	assert_int_equal(p->samples[8].nr_frames, 3);
	assert_string_equal(frame_func(p, 8, 0), "kfunc");
	assert_string_equal(frame_func(p, 8, 1), "kfunc2");
	assert_string_equal(frame_image(p, 8, 1), "[kernel.kallsyms]");
	assert_string_equal(frame_func(p, 8, 2), "beta");
	assert_string_equal(frame_image(p, 8, 2), "fx");
	assert_string_equal(frame_func(p, 9, 0), "[unknown]");
	assert_string_equal(comm_of(p, 9), "other");
	assert_string_equal(comm_of(p, 10), "swapper");
	assert_int_equal(p->nr_events, 1);
	assert_int_equal(p->events[0].samples, 11);
	assert_int_equal(p->events[0].weight, 11000);
	assert_int_equal(p->events[0].unresolved, 3);
	assert_int_equal(p->unresolved, 3);
	assert_int_equal(nr_warnings, 0);
	profile_free(p);
}

static void test_kernel_sources(void **state)
{
	static const char ks_file_text[] = "40010000 T from_kallsyms_file\n";
	char ks_path[700];
	struct kp_writer *w;
	struct profile *p;
	FILE *f;
	int fd;

	(void)state;
	/* The kernel's ELF, named by an MMAP of pid KP_PID_KERNEL (the bundled guest's /kernel.elf). */
	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(fx_mmap(w, KP_PID_KERNEL, 0, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0), 0);
	assert_int_equal(fx_sample(w, 3, 5, 1, FX_ALPHA + 2, KP_CPL_KERNEL, NULL, 0), 0);
	assert_int_equal(fx_sample(w, 3, 5, 2, 0x50000000, KP_CPL_KERNEL, NULL, 0), 0);
	assert_int_equal(fx_close(w, fd), 0);
	p = load(NULL);
	assert_string_equal(frame_func(p, 0, 0), "alpha");
	assert_string_equal(frame_image(p, 0, 0), "fx");
	assert_true(p->images[p->locs[p->frames[0]].image].kernel);
	assert_string_equal(frame_func(p, 1, 0), "[unknown]");
	assert_string_equal(frame_image(p, 1, 0), "[kernel.kallsyms]");
	/* An event no EVENT record described still counts. */
	assert_int_equal(p->nr_events, 1);
	assert_string_equal(p->events[0].name, "event3");
	assert_false(p->events[0].declared);
	profile_free(p);

	/* --kallsyms wins over the ELF: it is what the user pointed at. */
	snprintf(ks_path, sizeof(ks_path), "%s/kallsyms", dir);
	f = fopen(ks_path, "w");
	assert_non_null(f);
	fputs(ks_file_text, f);
	fclose(f);
	p = load(ks_path);
	assert_string_equal(frame_func(p, 0, 0), "from_kallsyms_file");
	assert_string_equal(frame_image(p, 0, 0), "[kernel.kallsyms]");
	profile_free(p);

	/* A missing --kallsyms file is a warning, not a failure. */
	snprintf(ks_path, sizeof(ks_path), "%s/no-such-kallsyms", dir);
	p = load(ks_path);
	assert_int_equal(nr_warnings, 1);
	assert_non_null(strstr(warnings, "no-such-kallsyms"));
	assert_string_equal(frame_func(p, 0, 0), "alpha");
	profile_free(p);
}

/*
 * Kernel module symbols make pseudo-images ("[kvm]": no path, no build-id);
 * the second sample in one looks the image up again. The sanitizer build
 * checks that no memcmp is given a null build-id on the way.
 */
static void test_module_image_again(void **state)
{
	static const char ksyms[] = "ffffffff81000000 T kfunc\nffffffffc0001000 t mod_func\t[kvm]\n"
				    "ffffffffc0002000 t mod_end\t[kvm]\n";
	struct kp_writer *w;
	struct profile *p;
	int fd;

	(void)state;
	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(kp_writer_ksyms(w, ksyms, strlen(ksyms)), 0);
	assert_int_equal(fx_sample(w, 1, 10, 1, 0xffffffffc0001010, KP_CPL_KERNEL, NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 10, 2, 0xffffffffc0001020, KP_CPL_KERNEL, NULL, 0), 0);
	assert_int_equal(fx_close(w, fd), 0);
	p = load(NULL);
	assert_int_equal(p->nr_samples, 2);
	assert_string_equal(frame_func(p, 0, 0), "mod_func");
	assert_string_equal(frame_image(p, 0, 0), "[kvm]");
	assert_string_equal(frame_func(p, 1, 0), "mod_func");
	assert_string_equal(frame_image(p, 1, 0), "[kvm]");
	profile_free(p);
}

static void test_hostile(void **state)
{
	uint8_t wrong_id[20] = { 1, 2, 3 };
	char text_path[700];
	struct kp_writer *w;
	struct profile *p;
	FILE *f;
	int fd;

	(void)state;
	snprintf(text_path, sizeof(text_path), "%s/notelf", dir);
	f = fopen(text_path, "w");
	assert_non_null(f);
	fputs("plain text\n", f);
	fclose(f);

	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(fx_mmap(w, 30, 1, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0), 0);
	/* A later overlapping map of a missing file takes over the middle of fx. */
	assert_int_equal(fx_mmap(w, 30, 2, FX_ALPHA - 0x100, 0x1000, 0, "/bin/missing", NULL, 0), 0);
	/* A map reaching past 2^64, of a file that isn't ELF. */
	assert_int_equal(fx_mmap(w, 30, 3, 0x100000000, UINT64_MAX, 0, "/notelf", NULL, 0), 0);
	/* A zero-length map: ignored. */
	assert_int_equal(fx_mmap(w, 30, 4, 0x1000, 0, 0, "/bin/fx", NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 30, 10, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);      /* 0 */
	assert_int_equal(fx_sample(w, 1, 30, 11, FX_BETA, KP_CPL_USER, NULL, 0), 0);       /* 1 */
	assert_int_equal(fx_sample(w, 1, 30, 12, UINT64_MAX - 5, KP_CPL_USER, NULL, 0), 0); /* 2 */
	assert_int_equal(fx_sample(w, 1, 30, 13, 0x1000, KP_CPL_USER, NULL, 0), 0);        /* 3 */
	/* The same file with a build-id it doesn't have: not used, said once. */
	assert_int_equal(fx_mmap(w, 31, 20, 0x40000000, 0x40000, 0, "/bin/fx", wrong_id, 20), 0);
	assert_int_equal(fx_sample(w, 1, 31, 21, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);      /* 4 */
	assert_int_equal(fx_sample(w, 1, 31, 22, FX_BETA, KP_CPL_USER, NULL, 0), 0);       /* 5 */
	/* A path climbing out of the root stays in it. */
	assert_int_equal(fx_mmap(w, 32, 30, 0x40000000, 0x40000, 0, "/bin/../../etc/passwd", NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 32, 31, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);      /* 6 */
	/* Absurd pid and time; a kernel sample with no kernel symbols at all. */
	assert_int_equal(fx_sample(w, 1, 0xfffffffe, UINT64_MAX, 42, KP_CPL_USER, NULL, 0), 0); /* 7 */
	assert_int_equal(fx_sample(w, 1, 30, 0, 0xffffffff81000000, KP_CPL_KERNEL, NULL, 0), 0); /* 8 */
	/* A chain of nothing but markers and garbage. */
	{
		uint64_t chain[] = { CTX_USER, CTX_USER, 0, UINT64_MAX, (uint64_t)-4095, 1 };

		assert_int_equal(fx_sample(w, 1, 30, 40, FX_BETA, KP_CPL_USER, chain, 6), 0); /* 9 */
	}
	assert_int_equal(fx_close(w, fd), 0);

	p = load(NULL);
	assert_int_equal(p->nr_samples, 10);
	assert_string_equal(frame_image(p, 0, 0), "missing");
	assert_string_equal(frame_func(p, 0, 0), "[unknown]");
	assert_string_equal(frame_func(p, 1, 0), "beta");
	assert_string_equal(frame_image(p, 2, 0), "notelf");
	assert_string_equal(frame_func(p, 2, 0), "[unknown]");
	assert_string_equal(frame_image(p, 3, 0), "[unknown]");
	assert_string_equal(frame_image(p, 4, 0), "fx");
	assert_string_equal(frame_func(p, 4, 0), "[unknown]");
	assert_string_equal(frame_func(p, 5, 0), "[unknown]");
	assert_string_equal(frame_image(p, 6, 0), "passwd");
	assert_string_equal(frame_func(p, 6, 0), "[unknown]");
	assert_string_equal(frame_image(p, 7, 0), "[unknown]");
	assert_string_equal(comm_of(p, 7), ":4294967294");
	assert_string_equal(frame_image(p, 8, 0), "[kernel.kallsyms]");
	assert_string_equal(frame_func(p, 8, 0), "[unknown]");
	assert_string_equal(frame_func(p, 9, 0), "beta");
	/*
	 * Everything from -4095 up is a marker and dropped; 0 is where a stack
	 * ends (issue 31), and 1, read past it, is cut and counted (issue 16:
	 * garbage frame pointers).
	 */
	assert_int_equal(p->samples[9].nr_frames, 1);
	assert_int_equal(p->chains_cut, 1);
	assert_int_equal(p->frames_cut, 1);
	/* missing, notelf, build-id, the escaping path, the cut chain: one warning each. */
	assert_int_equal(nr_warnings, 5);
	assert_non_null(strstr(warnings, "1 call chains were cut where a caller lies in no mapping"));
	assert_non_null(strstr(warnings, "build-id"));
	assert_non_null(strstr(warnings, "missing"));
	assert_non_null(strstr(warnings, "not an ELF"));
	/* Resolved inside the root (openat2 RESOLVE_IN_ROOT): ROOT/etc/passwd, which is not there. */
	assert_non_null(strstr(warnings, "/bin/../../etc/passwd: No such file"));
	profile_free(p);
}

/*
 * A zero return address ends the chain (issue 31): perf's frame-pointer
 * chains and the agent's end in one where the outermost frame says so, and
 * taken for a caller it became a kernel frame at the root of every stack
 * (0 - 1 lies in the kernel half), and pprof's location 0xffffffffffffffff.
 */
static void test_zero_return_address(void **state)
{
	static const char ksyms[] = "ffffffff81000000 T kfunc\n";
	/*
	 * As the agent writes chains (no markers); as perf does; a zero ending
	 * the kernel's walk, not the user walk after it; garbage read past one.
	 */
	const uint64_t bare[] = { FX_BETA + 5, 0 };
	const uint64_t marked[] = { CTX_USER, FX_BETA + 5, 0 };
	const uint64_t kernel[] = { CTX_KERNEL, 0xffffffff81000010, 0, CTX_USER, FX_BETA + 5 };
	const uint64_t past[] = { FX_BETA + 5, 0, FX_START + 1, 0x1234 };
	struct kp_writer *w;
	struct profile *p;
	int fd;

	(void)state;
	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(kp_writer_ksyms(w, ksyms, strlen(ksyms)), 0);
	assert_int_equal(fx_mmap(w, 40, 1, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 40, 2, FX_ALPHA + 1, KP_CPL_USER, bare, 2), 0);
	assert_int_equal(fx_sample(w, 1, 40, 3, FX_ALPHA + 1, KP_CPL_USER, marked, 3), 0);
	assert_int_equal(fx_sample(w, 1, 40, 4, 0xffffffff81000010, KP_CPL_KERNEL, kernel, 5), 0);
	assert_int_equal(fx_sample(w, 1, 40, 5, FX_ALPHA + 1, KP_CPL_USER, past, 4), 0);
	assert_int_equal(fx_close(w, fd), 0);

	p = load(NULL);
	assert_int_equal(p->nr_samples, 4);
	for (size_t i = 0; i < p->nr_samples; i++) {
		assert_int_equal(p->samples[i].nr_frames, 2);
		assert_string_equal(frame_func(p, i, 0), i == 2 ? "kfunc" : "alpha");
		assert_string_equal(frame_func(p, i, 1), "beta");
		assert_string_equal(frame_image(p, i, 1), "fx");
	}
	for (size_t i = 0; i < p->nr_locs; i++)
		assert_true(p->locs[i].addr != UINT64_MAX);
	/* Only what was read past a zero is a cut: the last sample's _start and 0x1234, one chain. */
	assert_int_equal(p->chains_cut, 1);
	assert_int_equal(p->frames_cut, 2);
	assert_int_equal(p->unresolved, 0);
	profile_free(p);
}

/*
 * END is the last record and kp_reader_next hands it out with its 0 (no
 * more records), not a 1: the loader must still take the duration and
 * lost count from it (pprof's duration_nanos, "samples lost in all").
 */
static void test_end_record_kept(void **state)
{
	struct kp_rec_lost lost = { .event_id = 1, .lost = 3 };
	struct kp_writer *w;
	struct profile *p;
	int fd;

	(void)state;
	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(fx_event(w, 1, "cycles", 1000, 0), 0);
	assert_int_equal(fx_sample(w, 1, 10, 1, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(kp_writer_add(w, KP_REC_LOST, &lost, sizeof(lost)), 0);
	/* END counts more lost samples than the LOST records: the larger count stands. */
	assert_int_equal(kp_writer_close(w, 42, 123456789), 0);
	close(fd);
	p = load(NULL);
	assert_true(p->has_end);
	assert_int_equal(p->duration_ns, 123456789);
	assert_int_equal(p->lost, 42);
	assert_int_equal(p->events[0].lost, 3);
	assert_int_equal(p->nr_samples, 1);
	profile_free(p);
}

/*
 * Samples meet process records in (time, stream order), wherever they lie
 * in the file: an exec at a sample's own time renamed it only if recorded
 * before it; a sample out of time order sees the state of its time; one
 * before any record is named by the pid's last process.
 */
static void test_replay_order(void **state)
{
	static const char *const want[] = { "one", "two", "one", "two", "two" };
	struct kp_writer *w;
	struct profile *p;
	int fd;

	(void)state;
	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(fx_event(w, 1, "cycles", 1000, 0), 0);
	assert_int_equal(fx_comm(w, 30, 30, 100, KP_COMM_EXEC, "one"), 0);
	assert_int_equal(fx_sample(w, 1, 30, 200, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_comm(w, 30, 30, 200, KP_COMM_EXEC, "two"), 0);
	assert_int_equal(fx_sample(w, 1, 30, 200, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 30, 150, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 30, 300, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(fx_sample(w, 1, 30, 50, FX_ALPHA, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(kp_writer_close(w, 0, 1000), 0);
	close(fd);
	p = load(NULL);
	assert_int_equal(p->nr_samples, 5);
	for (size_t i = 0; i < 5; i++)
		assert_string_equal(comm_of(p, i), want[i]);
	profile_free(p);
}

static void test_reader_errors(void **state)
{
	struct profile_options opt = { 0 };
	struct profile *p = NULL;
	struct kp_writer *w;
	char err[512];
	int fd;

	(void)state;
	/* A stream without END is truncated: the reader's message comes through. */
	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(fx_sample(w, 1, 1, 1, 1, KP_CPL_USER, NULL, 0), 0);
	assert_int_equal(kp_writer_flush(w), 0);
	kp_writer_abort(w);
	close(fd);
	assert_true(profile_load(&p, data_path, &opt, err, sizeof(err)) < 0);
	assert_null(p);
	assert_non_null(strstr(err, data_path));
	snprintf(err, sizeof(err), "%s/none", dir);
	assert_true(profile_load(&p, err, &opt, err, sizeof(err)) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_process_lifecycle),
		cmocka_unit_test(test_kernel_sources),
		cmocka_unit_test(test_module_image_again),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_zero_return_address),
		cmocka_unit_test(test_end_record_kept),
		cmocka_unit_test(test_replay_order),
		cmocka_unit_test(test_reader_errors),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
