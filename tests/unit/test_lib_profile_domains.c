/* SPDX-License-Identifier: MIT */
/*
 * lib/profile with two namespaces: a host-side recording where the VMM
 * (native) and the guest use the same pid, the same file name and the same
 * kernel addresses, which must resolve each in its own domain; a guest's
 * export read as the guest's (profile_load's guest_export_path), whose own
 * META and END stay out; the guest kernel from its ELF.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lib_fixture.h"
#include "profile/profile.h"

static char *dir;
static char data_path[600], export_path[600], gks_path[600], native_elf[600], guest_elf[600];

static int setup(void **state)
{
	FILE *f;

	(void)state;
	dir = fx_mkdir();
	if (!dir || fx_build(dir, NULL))
		return -1;
	snprintf(data_path, sizeof(data_path), "%s/sys.data", dir);
	snprintf(export_path, sizeof(export_path), "%s/export.data", dir);
	snprintf(gks_path, sizeof(gks_path), "%s/guest.kallsyms", dir);
	snprintf(native_elf, sizeof(native_elf), "%s/bin/fx", dir);
	snprintf(guest_elf, sizeof(guest_elf), "%s/bin/fx", dir);
	f = fopen(gks_path, "w");
	if (!f)
		return -1;
	fputs("ffffffff81000000 T guest_func\nffffffff81002000 T guest_end\n", f);
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fx_rmdir(dir);
	return 0;
}

static int guest_comm(struct kp_writer *w, uint32_t pid, const char *name)
{
	return fx_comm(w, pid, pid, 1, KP_COMM_GUEST, name);
}

static int guest_mmap(struct kp_writer *w, uint32_t pid, const char *filename)
{
	size_t n = strlen(filename) + 1;
	struct kp_rec_mmap *m = calloc(1, sizeof(*m) + n);
	int rc;

	if (!m)
		return -1;
	*m = (struct kp_rec_mmap){ .pid = pid, .tid = pid, .time = 1, .start = 0x40000000, .len = 0x40000,
				   .prot = 5, .domain = KP_DOMAIN_GUEST };
	memcpy(m->filename, filename, n);
	rc = kp_writer_add(w, KP_REC_MMAP, m, sizeof(*m) + n);
	free(m);
	return rc;
}

static int guest_sample(struct kp_writer *w, uint32_t pid, uint64_t ip, uint8_t cpl)
{
	struct kp_rec_sample s = { .event_id = 0, .pid = pid, .tid = pid, .time = 5, .ip = ip, .period = 1,
				   .cpl = cpl, .domain = KP_DOMAIN_GUEST };

	return kp_writer_add(w, KP_REC_SAMPLE, &s, sizeof(s));
}

static void write_files(void)
{
	static const char host_ksyms[] = "ffffffff81000000 T host_func\nffffffff81002000 T host_end\n";
	struct kp_writer *w;
	int fd;

	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(fx_event(w, 0, "cpu-clock", 1000, KP_EVENT_FREQ), 0);
	assert_int_equal(kp_writer_ksyms(w, host_ksyms, strlen(host_ksyms)), 0);
	/* pid 10 on both sides, the same file name and addresses. */
	assert_int_equal(fx_comm(w, 10, 10, 1, 0, "vmm"), 0);
	assert_int_equal(fx_mmap(w, 10, 1, 0x40000000, 0x40000, 0, native_elf, NULL, 0), 0);
	assert_int_equal(guest_comm(w, 10, "matmul"), 0);
	assert_int_equal(guest_mmap(w, 10, "/bin/fx"), 0);
	assert_int_equal(fx_sample(w, 0, 10, 5, FX_ALPHA + 1, KP_CPL_USER, NULL, 0), 0);        /* 0 */
	assert_int_equal(guest_sample(w, 10, FX_BETA + 1, KP_CPL_USER), 0);                      /* 1 */
	assert_int_equal(fx_sample(w, 0, 10, 5, 0xffffffff81000010, KP_CPL_KERNEL, NULL, 0), 0); /* 2 */
	assert_int_equal(guest_sample(w, 10, 0xffffffff81000010, KP_CPL_KERNEL), 0);              /* 3 */
	assert_int_equal(guest_sample(w, 12, FX_GAMMA, KP_CPL_USER), 0);                         /* 4 */
	assert_int_equal(guest_sample(w, 13, FX_ALPHA, KP_CPL_USER), 0);                         /* 5 */
	assert_int_equal(fx_close(w, fd), 0);

	/* A guest's export: plain native records that describe the guest. */
	w = fx_writer(export_path, &fd);
	assert_non_null(w);
	assert_int_equal(kp_writer_meta(w, "command", "export"), 0);
	assert_int_equal(fx_comm(w, 12, 12, 1, 0, "exported"), 0);
	assert_int_equal(fx_mmap(w, 12, 1, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0), 0);
	/* The export's own END counts are that stream's, not the recording's. */
	assert_int_equal(kp_writer_close(w, 7, 5000), 0);
	close(fd);
}

static const char *func_of(const struct profile *p, size_t i)
{
	const char *n = p->funcs[p->locs[p->frames[p->samples[i].first_frame]].func].name;

	return n ? n : "[unknown]";
}

static const struct profile_image *image_of(const struct profile *p, size_t i)
{
	return &p->images[p->locs[p->frames[p->samples[i].first_frame]].image];
}

static void test_domains_apart(void **state)
{
	struct profile_options opt = { .guest_root = dir, .guest_kallsyms_path = gks_path,
				       .guest_export_path = export_path };
	struct profile *p;
	char err[512];

	(void)state;
	write_files();
	assert_int_equal(profile_load(&p, data_path, &opt, err, sizeof(err)), 0);
	assert_int_equal(p->nr_samples, 6);
	/* The recording's END (fx_close: 0 lost, 1000 ns), not the export's; nor the export's META. */
	assert_true(p->has_end);
	assert_int_equal(p->duration_ns, 1000);
	assert_int_equal(p->lost, 0);
	for (size_t i = 0; i < p->nr_meta; i++)
		assert_string_not_equal(p->meta[i].value, "export");

	assert_string_equal(func_of(p, 0), "alpha");
	assert_int_equal(p->samples[0].domain, KP_DOMAIN_NATIVE);
	assert_string_equal(p->comms[p->samples[0].comm], "vmm");
	assert_int_equal(image_of(p, 0)->domain, KP_DOMAIN_NATIVE);

	assert_string_equal(func_of(p, 1), "beta");
	assert_int_equal(p->samples[1].domain, KP_DOMAIN_GUEST);
	assert_string_equal(p->comms[p->samples[1].comm], "matmul");
	assert_int_equal(image_of(p, 1)->domain, KP_DOMAIN_GUEST);

	assert_string_equal(func_of(p, 2), "host_func");
	assert_string_equal(image_of(p, 2)->name, "[kernel.kallsyms]");
	assert_string_equal(func_of(p, 3), "guest_func");
	assert_string_equal(image_of(p, 3)->name, "[guest.kernel]");
	assert_int_equal(image_of(p, 3)->domain, KP_DOMAIN_GUEST);

	/* From the export, read as the guest's. */
	assert_string_equal(func_of(p, 4), "gamma_label");
	assert_string_equal(p->comms[p->samples[4].comm], "exported");
	/* A guest pid nobody described: unknown, in the guest's own "[unknown]". */
	assert_string_equal(func_of(p, 5), "[unknown]");
	assert_int_equal(image_of(p, 5)->domain, KP_DOMAIN_GUEST);
	assert_true(profile_comm(p, "[guest] matmul") != PROFILE_NONE);
	assert_string_equal(p->comms[profile_comm(p, "[guest] matmul")], "[guest] matmul");
	profile_free(p);
}

static void test_guest_kernel_elf(void **state)
{
	struct profile_options opt = { .guest_kernel_path = guest_elf };
	struct kp_writer *w;
	struct profile *p;
	char err[512];
	int fd;

	(void)state;
	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	/* A guest kernel linked low (the bundled guest's is at 1 MiB): the fixture stands in. */
	assert_int_equal(guest_sample(w, 1, FX_BETA + 2, KP_CPL_KERNEL), 0);
	assert_int_equal(fx_close(w, fd), 0);
	assert_int_equal(profile_load(&p, data_path, &opt, err, sizeof(err)), 0);
	assert_string_equal(func_of(p, 0), "beta");
	assert_true(image_of(p, 0)->kernel);
	assert_int_equal(image_of(p, 0)->domain, KP_DOMAIN_GUEST);
	profile_free(p);
}

/*
 * A guest's file names are looked up only inside --guest-root: symlinks
 * (absolute, or climbing with "..") that point at a host file outside it
 * must not be followed out; a FIFO must not hang the report; a path of "/"
 * or "/a" is just a name; and without a guest root no host file is opened
 * for a guest mapping at all.
 */
static void test_guest_root_confinement(void **state)
{
	static const char *const names[] = { "/bin/inside", "/bin/abs", "/bin/rel", "/bin/fifo", "/", "/a",
					     NULL /* "/bin/../../..<outside>/bin/fx" */ };
	struct profile_options opt = { .guest_root = dir, .warn = NULL };
	char *outside = fx_mkdir();
	char link[700], target[1400], climb[1400];
	struct kp_writer *w;
	struct profile *p;
	char err[512];
	int fd;

	(void)state;
	alarm(60); /* a FIFO that blocks the report fails the test instead of hanging it */
	assert_non_null(outside);
	assert_int_equal(fx_build(outside, NULL), 0);
	snprintf(target, sizeof(target), "%s/bin/fx", outside);
	snprintf(link, sizeof(link), "%s/bin/abs", dir);
	assert_int_equal(symlink(target, link), 0);
	snprintf(climb, sizeof(climb), "../../../../../../../../../../..%s/bin/fx", outside);
	snprintf(link, sizeof(link), "%s/bin/rel", dir);
	assert_int_equal(symlink(climb, link), 0);
	snprintf(link, sizeof(link), "%s/bin/inside", dir);
	assert_int_equal(symlink("/bin/fx", link), 0);
	snprintf(link, sizeof(link), "%s/bin/fifo", dir);
	assert_int_equal(mkfifo(link, 0600), 0);
	snprintf(climb, sizeof(climb), "/bin/../../../../../../..%s/bin/fx", outside);

	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	for (uint32_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		assert_int_equal(guest_mmap(w, 20 + i, names[i] ? names[i] : climb), 0);
		assert_int_equal(guest_sample(w, 20 + i, FX_ALPHA + 1, KP_CPL_USER), 0);
	}
	/* A guest mapping that names the host's own copy of the file by its host path. */
	assert_int_equal(guest_mmap(w, 40, target), 0);
	assert_int_equal(guest_sample(w, 40, FX_ALPHA + 1, KP_CPL_USER), 0);
	assert_int_equal(fx_close(w, fd), 0);

	assert_int_equal(profile_load(&p, data_path, &opt, err, sizeof(err)), 0);
	assert_string_equal(func_of(p, 0), "alpha"); /* a symlink that stays inside the root works */
	for (size_t i = 1; i < p->nr_samples; i++)
		assert_string_equal(func_of(p, i), "[unknown]");
	profile_free(p);

	/* No guest root: the guest's paths are never opened on the host. */
	opt.guest_root = NULL;
	assert_int_equal(profile_load(&p, data_path, &opt, err, sizeof(err)), 0);
	for (size_t i = 0; i < p->nr_samples; i++)
		assert_string_equal(func_of(p, i), "[unknown]");
	profile_free(p);
	alarm(0);
	fx_rmdir(outside);
}

/*
 * Separate debug files of guest programs come from inside the guest root:
 * by build-id under ROOT/usr/lib/debug/.build-id, or by debuglink in
 * ROOT/<dir>/.debug. The stripped fixture has no symbols of its own.
 */
static void test_guest_debug_files(void **state)
{
	struct profile_options opt = { .guest_root = dir };
	struct kp_writer *w;
	struct profile *p;
	char cmd[4096], err[512];
	int fd;

	(void)state;
	snprintf(cmd, sizeof(cmd),
		 "set -e; cd '%s'; mkdir -p dbg/bin/.debug; cp bin/fx dbg/bin/byid; cp bin/fx dbg/bin/bylink; "
		 "objcopy --only-keep-debug bin/fx dbg/fx.debug; "
		 "id=$(readelf -n bin/fx | sed -n 's/.*Build ID: //p'); "
		 "mkdir -p dbg/usr/lib/debug/.build-id/${id%%${id#??}}; "
		 "cp dbg/fx.debug dbg/usr/lib/debug/.build-id/${id%%${id#??}}/${id#??}.debug; "
		 "strip -s dbg/bin/byid; "
		 "objcopy -R .note.gnu.build-id -S bin/fx dbg/bin/bylink; "
		 "objcopy --only-keep-debug -R .note.gnu.build-id bin/fx dbg/bin/.debug/bylink.debug; "
		 "objcopy --add-gnu-debuglink=dbg/bin/.debug/bylink.debug dbg/bin/bylink; rm dbg/fx.debug",
		 dir);
	assert_int_equal(system(cmd), 0);
	w = fx_writer(data_path, &fd);
	assert_non_null(w);
	assert_int_equal(guest_mmap(w, 50, "/bin/byid"), 0);
	assert_int_equal(guest_sample(w, 50, FX_ALPHA + 1, KP_CPL_USER), 0);
	assert_int_equal(guest_mmap(w, 51, "/bin/bylink"), 0);
	assert_int_equal(guest_sample(w, 51, FX_BETA + 1, KP_CPL_USER), 0);
	assert_int_equal(fx_close(w, fd), 0);

	snprintf(cmd, sizeof(cmd), "%s/dbg", dir);
	opt.guest_root = cmd;
	assert_int_equal(profile_load(&p, data_path, &opt, err, sizeof(err)), 0);
	assert_string_equal(func_of(p, 0), "alpha");
	assert_string_equal(func_of(p, 1), "beta");
	profile_free(p);

	/* Without the debug files the stripped programs have nothing: the symbols came from them. */
	snprintf(cmd, sizeof(cmd), "rm -r '%s/dbg/usr' '%s/dbg/bin/.debug'", dir, dir);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s/dbg", dir);
	assert_int_equal(profile_load(&p, data_path, &opt, err, sizeof(err)), 0);
	assert_string_equal(func_of(p, 0), "[unknown]");
	assert_string_equal(func_of(p, 1), "[unknown]");
	profile_free(p);
}

/* A recording and an export, each with a task layout whose __per_cpu_offset is the one given. */
static void write_layout_files(const char *rec, const char *exp, uint64_t rec_pco, uint64_t exp_pco)
{
	struct kp_rec_task_layout lx = { .kind = KP_LAYOUT_LINUX_X86_64, .current_task = 0x1ad00, .task_pid = 0x9c0,
					 .task_tgid = 0x9c4, .task_comm = 0xbb8, .task_comm_size = 16, .task_size = 0x2700 };
	struct kp_writer *w;
	int fd;

	w = fx_writer(rec, &fd);
	assert_non_null(w);
	lx.per_cpu_offset = rec_pco;
	assert_int_equal(kp_writer_add(w, KP_REC_TASK_LAYOUT, &lx, sizeof(lx)), 0);
	assert_int_equal(guest_sample(w, 12, FX_ALPHA, KP_CPL_USER), 0);
	assert_int_equal(fx_close(w, fd), 0);
	w = fx_writer(exp, &fd);
	assert_non_null(w);
	lx.per_cpu_offset = exp_pco;
	assert_int_equal(kp_writer_add(w, KP_REC_TASK_LAYOUT, &lx, sizeof(lx)), 0);
	assert_int_equal(kp_writer_close(w, 0, 0), 0);
	close(fd);
}

/*
 * An export of another boot than the recording's (KASLR moved the kernel,
 * and __per_cpu_offset with it) would name its samples wrongly: refused,
 * naming both addresses. The recording's own export, or one from before
 * task layouts, is read.
 */
static void test_export_of_another_boot(void **state)
{
	char rec[700], exp[700], err[512];
	struct profile_options opt = { .guest_root = dir, .guest_export_path = exp };
	struct profile *p;

	(void)state;
	snprintf(rec, sizeof(rec), "%s/boot.data", dir);
	snprintf(exp, sizeof(exp), "%s/boot.export", dir);
	write_layout_files(rec, exp, 0xffffffff9b413880ULL, 0xffffffff8e213880ULL);
	assert_int_equal(profile_load(&p, rec, &opt, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "is not of the boot"));
	assert_non_null(strstr(err, "0xffffffff8e213880 there, 0xffffffff9b413880 in the recording"));
	write_layout_files(rec, exp, 0xffffffff9b413880ULL, 0xffffffff9b413880ULL);
	assert_int_equal(profile_load(&p, rec, &opt, err, sizeof(err)), 0);
	assert_int_equal(p->nr_samples, 1);
	profile_free(p);
	/* An export without a layout (an agent older than sample file 1.3): nothing to compare. */
	opt.guest_export_path = export_path;
	write_files();
	assert_int_equal(profile_load(&p, rec, &opt, err, sizeof(err)), 0);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_domains_apart),
		cmocka_unit_test(test_guest_kernel_elf),
		cmocka_unit_test(test_guest_root_confinement),
		cmocka_unit_test(test_guest_debug_files),
		cmocka_unit_test(test_export_of_another_boot),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
