// SPDX-License-Identifier: MIT
/*
 * The export's task layout (guest-agent/kernel_layout.c): offsets from the real
 * Debian 6.1 kernel's BTF (build/debian/vmlinux, fetched by
 * tests/debian-kernel.sh; its .BTF section is what /sys/kernel/btf/vmlinux
 * shows in L2), from hand-built BTF (pcpu_hot, anonymous members, hostile
 * shapes), and the kallsyms lookups.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <cmocka.h>

#include "kernel_layout.h"

/* kallsyms as the 6.1 kernel shows it: per-CPU symbols at their offsets, a module symbol of the same name. */
static const char ksyms_61[] =
	"0000000000000000 A fixed_percpu_data\n"
	"000000000001fbc0 D current_task_x\n"
	"0000000000020d40 D current_task\n"
	"ffffffff81000000 T startup_64\n"
	"ffffffff82a1e9a0 D __per_cpu_offset\n"
	"ffffffffc0001000 d current_task\t[evil]\n";

static const char *debian_vmlinux(void)
{
	const char *p = getenv("KVMPROF_DEBIAN_VMLINUX");

	return p ? p : "build/debian/vmlinux";
}

static void test_layout_debian_61(void **state)
{
	struct kp_rec_task_layout l;
	char why[LAYOUT_WHY_MAX];
	const char *path = debian_vmlinux();

	(void)state;
	if (access(path, R_OK))
		fail_msg("%s: missing; run tests/debian-kernel.sh (make test does)", path);
	assert_int_equal(layout_from(ksyms_61, strlen(ksyms_61), path, &l, why), 0);
	print_message("# Debian 6.1 task_struct: pid +%u tgid +%u comm +%u[%u], %u bytes\n", l.task_pid, l.task_tgid,
		      l.task_comm, l.task_comm_size, l.task_size);
	assert_int_equal(l.kind, KP_LAYOUT_LINUX_X86_64);
	assert_int_equal(l.flags, 0);
	assert_int_equal(l.current_task, 0x20d40); /* the kernel's own symbol, not the module's or a prefix */
	assert_int_equal(l.per_cpu_offset, 0xffffffff82a1e9a0ULL);
	/* pid_t pid; pid_t tgid; next to each other since 2.6; TASK_COMM_LEN is 16. */
	assert_int_equal(l.task_tgid, l.task_pid + 4);
	assert_int_equal(l.task_comm_size, 16);
	assert_true(l.task_pid > 64 && l.task_comm > l.task_tgid);
	assert_true(l.task_size >= 4096 && l.task_size < 65536);
	assert_true(l.task_comm + l.task_comm_size <= l.task_size);
	assert_int_equal(l.reserved, 0);
}

/* The BTF of the machine running the tests, when it has one (a 6.18 kernel here). */
static void test_layout_running_kernel_btf(void **state)
{
	struct kp_rec_task_layout l;
	char why[LAYOUT_WHY_MAX];

	(void)state;
	if (access(LAYOUT_BTF_PATH, R_OK)) {
		print_message("# no %s here: skipped\n", LAYOUT_BTF_PATH);
		return;
	}
	assert_int_equal(layout_from(ksyms_61, strlen(ksyms_61), LAYOUT_BTF_PATH, &l, why), 0);
	assert_int_equal(l.task_tgid, l.task_pid + 4);
	assert_int_equal(l.task_comm_size, 16);
}

static char btf_file[64];

static void write_btf(struct btf *btf)
{
	uint32_t size;
	const void *raw = btf__raw_data(btf, &size);
	FILE *f;

	assert_non_null(raw);
	snprintf(btf_file, sizeof(btf_file), "/tmp/kvmprof-test-btf.%d", (int)getpid());
	f = fopen(btf_file, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(raw, 1, size, f), size);
	fclose(f);
	btf__free(btf);
}

/*
 * struct pcpu_hot { union { struct { task_struct *current_task; ... } } }
 * as 6.2-6.14 have it (a cacheline-sized union), and task_struct with its
 * fields inside an anonymous struct (randomized layouts do that), pid_t a
 * typedef.
 */
static void make_btf(bool with_comm, unsigned int comm_len, bool bitfield_pid)
{
	struct btf *btf = btf__new_empty();
	int i32, chr, pidt, arr, anon, task, ptr, inner, uni, hot, u64;

	assert_non_null(btf);
	i32 = btf__add_int(btf, "int", 4, BTF_INT_SIGNED);
	chr = btf__add_int(btf, "char", 1, BTF_INT_CHAR);
	u64 = btf__add_int(btf, "long unsigned int", 8, 0);
	pidt = btf__add_typedef(btf, "pid_t", i32);
	arr = btf__add_array(btf, i32, chr, comm_len);
	assert_true(i32 > 0 && chr > 0 && pidt > 0 && arr > 0 && u64 > 0);
	anon = btf__add_struct(btf, NULL, 64);
	assert_true(anon > 0);
	assert_int_equal(btf__add_field(btf, "flags", u64, 0, 0), 0);
	assert_int_equal(btf__add_field(btf, "pid", pidt, bitfield_pid ? 64 : 128, bitfield_pid ? 3 : 0), 0);
	assert_int_equal(btf__add_field(btf, "tgid", pidt, 160, 0), 0);
	if (with_comm)
		assert_int_equal(btf__add_field(btf, "comm", arr, 256, 0), 0);
	task = btf__add_struct(btf, "task_struct", 4096);
	assert_true(task > 0);
	assert_int_equal(btf__add_field(btf, "state", u64, 0, 0), 0);
	assert_int_equal(btf__add_field(btf, NULL, anon, 1024 * 8, 0), 0);
	ptr = btf__add_ptr(btf, task);
	inner = btf__add_struct(btf, NULL, 16);
	assert_true(ptr > 0 && inner > 0);
	assert_int_equal(btf__add_field(btf, "preempt_count", i32, 0, 0), 0);
	assert_int_equal(btf__add_field(btf, "current_task", ptr, 64, 0), 0);
	uni = btf__add_union(btf, NULL, 64);
	assert_true(uni > 0);
	assert_int_equal(btf__add_field(btf, NULL, inner, 0, 0), 0);
	assert_int_equal(btf__add_field(btf, "pad", arr, 0, 0), 0);
	hot = btf__add_struct(btf, "pcpu_hot", 64);
	assert_true(hot > 0);
	assert_int_equal(btf__add_field(btf, NULL, uni, 0, 0), 0);
	write_btf(btf);
}

static const char ksyms_62[] =
	"ffffffff82a1e9a0 D __per_cpu_offset\n"
	"0000000000032000 D pcpu_hot\n";

static void test_layout_pcpu_hot_and_anonymous_members(void **state)
{
	struct kp_rec_task_layout l;
	char why[LAYOUT_WHY_MAX];

	(void)state;
	make_btf(true, 16, false);
	assert_int_equal(layout_from(ksyms_62, strlen(ksyms_62), btf_file, &l, why), 0);
	assert_int_equal(l.flags, KP_LAYOUT_PCPU_HOT);
	assert_int_equal(l.current_task, 0x32000 + 8);
	assert_int_equal(l.task_pid, 1024 + 16);
	assert_int_equal(l.task_tgid, 1024 + 20);
	assert_int_equal(l.task_comm, 1024 + 32);
	assert_int_equal(l.task_comm_size, 16);
	assert_int_equal(l.task_size, 4096);
	/* With current_task in kallsyms (6.1, 6.15+), that wins. */
	assert_int_equal(layout_from(ksyms_61, strlen(ksyms_61), btf_file, &l, why), 0);
	assert_int_equal(l.flags, 0);
	assert_int_equal(l.current_task, 0x20d40);
	unlink(btf_file);
}

static void test_layout_refusals(void **state)
{
	static const char no_offset[] = "0000000000020d40 D current_task\n";
	static const char hidden[] = "0000000000000000 D current_task\n0000000000000000 D __per_cpu_offset\n";
	static const char no_task[] = "ffffffff82a1e9a0 D __per_cpu_offset\n";
	static const char garbage[] = "zzzz D __per_cpu_offset\n\n \n  D\nffffffff82a1e9a0 D\n";
	struct kp_rec_task_layout l;
	char why[LAYOUT_WHY_MAX];

	(void)state;
	assert_int_equal(layout_from(no_offset, strlen(no_offset), debian_vmlinux(), &l, why), -ENOENT);
	assert_non_null(strstr(why, "__per_cpu_offset"));
	assert_int_equal(layout_from(hidden, strlen(hidden), debian_vmlinux(), &l, why), -EINVAL);
	assert_int_equal(layout_from(garbage, strlen(garbage), debian_vmlinux(), &l, why), -ENOENT);
	assert_true(layout_from(ksyms_61, strlen(ksyms_61), "/nonexistent/btf", &l, why) < 0);
	assert_non_null(strstr(why, "BTF"));
	/* A kernel without current_task and without pcpu_hot in its BTF (6.1's has none). */
	assert_int_equal(layout_from(no_task, strlen(no_task), debian_vmlinux(), &l, why), -ENOENT);
	assert_int_equal(layout_from(ksyms_62, strlen(ksyms_62), debian_vmlinux(), &l, why), -ENOENT);
	/* task_struct without comm; with a 100-byte comm; with pid a bit field. */
	make_btf(false, 16, false);
	assert_int_equal(layout_from(ksyms_62, strlen(ksyms_62), btf_file, &l, why), -ENOENT);
	make_btf(true, 100, false);
	assert_int_equal(layout_from(ksyms_62, strlen(ksyms_62), btf_file, &l, why), -EINVAL);
	make_btf(true, 16, true);
	assert_int_equal(layout_from(ksyms_62, strlen(ksyms_62), btf_file, &l, why), -ENOENT);
	/* Not BTF at all. */
	{
		FILE *f = fopen(btf_file, "wb");

		assert_non_null(f);
		fputs("this is not BTF\n", f);
		fclose(f);
	}
	assert_true(layout_from(ksyms_62, strlen(ksyms_62), btf_file, &l, why) < 0);
	unlink(btf_file);
	/* Nothing was filled on failure. */
	assert_int_equal(l.kind, 0);
}

/*
 * Layouts the kallsyms and BTF allow but the VMM's sample-start would
 * refuse (found by fuzz_task_layout): the agent refuses them itself, with
 * the VMM's reason (lib/common/task_layout.c, the one check both use).
 */
static void test_layout_refused_as_the_vmm_would(void **state)
{
	static const char misaligned_offsets[] = "ffffffff82a1e9a4 D __per_cpu_offset\n0000000000032000 D pcpu_hot\n";
	static const char misaligned_hot[] = "ffffffff82a1e9a0 D __per_cpu_offset\n0000000000032004 D pcpu_hot\n";
	static const char user_half_hot[] = "ffffffff82a1e9a0 D __per_cpu_offset\n0000000900000000 D pcpu_hot\n";
	struct kp_rec_task_layout l;
	char why[LAYOUT_WHY_MAX];

	(void)state;
	make_btf(true, 16, false);
	assert_int_equal(layout_from(misaligned_offsets, strlen(misaligned_offsets), btf_file, &l, why), -EINVAL);
	assert_non_null(strstr(why, "per_cpu_offset 0xffffffff82a1e9a4 is not an aligned kernel address"));
	assert_int_equal(layout_from(misaligned_hot, strlen(misaligned_hot), btf_file, &l, why), -EINVAL);
	assert_non_null(strstr(why, "not 8-byte aligned"));
	assert_int_equal(layout_from(user_half_hot, strlen(user_half_hot), btf_file, &l, why), -EINVAL);
	assert_non_null(strstr(why, "neither a per-CPU offset nor a kernel address"));
	assert_int_equal(l.kind, 0);
	/* A one-byte comm holds no name: only its NUL. */
	make_btf(true, 1, false);
	assert_int_equal(layout_from(ksyms_62, strlen(ksyms_62), btf_file, &l, why), -EINVAL);
	assert_non_null(strstr(why, "comm field (1 bytes"));
	unlink(btf_file);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_debian_61),
		cmocka_unit_test(test_layout_running_kernel_btf),
		cmocka_unit_test(test_layout_pcpu_hot_and_anonymous_members),
		cmocka_unit_test(test_layout_refusals),
		cmocka_unit_test(test_layout_refused_as_the_vmm_would),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
