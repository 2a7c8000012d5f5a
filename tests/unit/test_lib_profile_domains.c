/* SPDX-License-Identifier: MIT */
/*
 * lib/profile with two namespaces: a host-side recording where the VMM
 * (native) and the guest use the same pid, the same file name and the same
 * kernel addresses, which must resolve each in its own domain; a guest's
 * export read with profile_add_guest_record; the guest kernel from its ELF.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "lib_fixture.h"
#include "profile.h"

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
	assert_int_equal(fx_comm(w, 12, 12, 1, 0, "exported"), 0);
	assert_int_equal(fx_mmap(w, 12, 1, 0x40000000, 0x40000, 0, "/bin/fx", NULL, 0), 0);
	assert_int_equal(fx_close(w, fd), 0);
}

static int add_file(struct profile *p, const char *path, bool guest)
{
	struct kp_reader *r;
	struct kp_record rec;
	char err[512];
	int rc = kp_reader_open(&r, path, err, sizeof(err));

	if (rc)
		return rc;
	while ((rc = kp_reader_next(r, &rec, err, sizeof(err))) > 0) {
		rc = guest ? profile_add_guest_record(p, &rec) : profile_add_record(p, &rec);
		if (rc)
			break;
	}
	kp_reader_close(r);
	return rc;
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
	struct profile_options opt = { .guest_root = dir, .guest_kallsyms_path = gks_path };
	struct profile *p;

	(void)state;
	write_files();
	assert_int_equal(profile_new(&p, &opt), 0);
	assert_int_equal(add_file(p, data_path, false), 0);
	assert_int_equal(add_file(p, export_path, true), 0);
	assert_int_equal(profile_finish(p), 0);
	assert_int_equal(p->nr_samples, 6);

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_domains_apart),
		cmocka_unit_test(test_guest_kernel_elf),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
