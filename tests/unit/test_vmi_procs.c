// SPDX-License-Identifier: MIT
/*
 * Process attribution (vmi/guest_procs.c, vmi/guest_attrib.c): which process a vCPU runs, from
 * the bundled guest's descriptor or a Linux task layout, and what a
 * consumer of samples must be told about it first: a process once (name,
 * text mapping), a Linux process again when its name changes, news not
 * marked told comes again, and a full table forgets new processes rather
 * than stopping to name them. Fake guest RAM, malloc'd so ASan sees a read
 * past it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "desc_reader.h"
#include "guest_attrib.h"
#include "guest_procs.h"
#include "common/task_layout.h"
#include "vmi_mem.h"

#define RAM_SIZE (1u << 20)

/* The bundled guest, paging off: per-CPU {u64 pad; u64 cur} by index, proc {u32 pid; char path[64]; u64 text[3]}. */
#define PERCPU 0x1000u
#define STRIDE 0x100u
#define PROC_A 0x8000u
#define PROC_B 0x9000u

/* Linux: one 1 GiB page maps the kernel half's KBASE onto guest RAM from 0. */
#define KBASE 0xffffffff80000000ULL
#define K(x) (KBASE + (uint64_t)(x))
#define LX_PML4 0x1000u
#define LX_PDPT 0x2000u
#define LX_PCPU_OFFSET 0x3000u
#define LX_CPU0 0x10000u
#define LX_CPU1 0x20000u
#define LX_CUR 0x40u
#define LX_TASK 0x30000u
#define LX_IDLE 0x40000u

struct fake {
	struct vmi_mem mem;
	struct guest_paging pg;
	struct kp_guest_desc desc;
	struct kp_rec_task_layout lx;
	struct guest_procs_seen seen;
};

static void put(struct fake *f, uint64_t gpa, const void *v, size_t n)
{
	void *p = vmi_mem_ptr(&f->mem, gpa, n);

	assert_non_null(p);
	memcpy(p, v, n);
}

static void put_u32(struct fake *f, uint64_t gpa, uint32_t v) { put(f, gpa, &v, 4); }
static void put_u64(struct fake *f, uint64_t gpa, uint64_t v) { put(f, gpa, &v, 8); }

static struct fake *fake_new(void)
{
	struct fake *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->mem = vmi_mem_mapped(calloc(1, RAM_SIZE), RAM_SIZE);
	assert_non_null(f->mem.base);
	assert_int_equal(guest_procs_seen_init(&f->seen), 0);
	return f;
}

static void fake_free(struct fake *f)
{
	guest_procs_seen_free(&f->seen);
	free(f->mem.base);
	free(f);
}

static struct fake *desc_fake(struct guest_os *os)
{
	struct fake *f = fake_new();
	char why[GUEST_DESC_WHY_MAX];

	f->pg.mode = GUEST_PAGING_OFF;
	f->desc = (struct kp_guest_desc){
		.magic = KP_GDESC_MAGIC, .version = KP_GDESC_VERSION, .size = sizeof(struct kp_guest_desc),
		.cpu_map = KP_GDESC_CPU_BY_INDEX, .percpu_count = 2, .percpu_gva = PERCPU,
		.percpu_stride = STRIDE, .cpu_cur_off = 8,
		.proc_pid_off = 0, .proc_path_off = 8, .proc_path_size = 64,
		.proc_text_start_off = 72, .proc_text_end_off = 80, .proc_text_pgoff_off = 88,
		.kernel_text_start = 0x100000, .kernel_text_end = 0x108000, .kernel_path = "/kernel.elf",
	};
	assert_int_equal(guest_desc_check(&f->desc, why), 0);
	put_u64(f, PERCPU + 8, PROC_A);
	put_u64(f, PERCPU + STRIDE + 8, 0); /* CPU 1 idle */
	put_u32(f, PROC_A, 7);
	put(f, PROC_A + 8, "/bin/matmul", 12);
	put_u64(f, PROC_A + 72, 0x40001000);
	put_u64(f, PROC_A + 80, 0x40003000);
	put_u64(f, PROC_A + 88, 0x1000);
	put_u32(f, PROC_B, 9);
	put(f, PROC_B + 8, "/bin/hash", 10); /* no text segment: end 0 */
	*os = (struct guest_os){ .desc = &f->desc };
	return f;
}

static struct fake *linux_fake(struct guest_os *os)
{
	struct fake *f = fake_new();
	char why[GUEST_DESC_WHY_MAX];

	f->pg = (struct guest_paging){ .mode = GUEST_PAGING_4LEVEL, .cr3 = LX_PML4, .nxe = true };
	f->lx = (struct kp_rec_task_layout){
		.kind = KP_LAYOUT_LINUX_X86_64, .current_task = LX_CUR, .per_cpu_offset = K(LX_PCPU_OFFSET),
		.task_pid = 0x100, .task_tgid = 0x104, .task_comm = 0x200, .task_comm_size = 16, .task_size = 0x1000,
	};
	assert_int_equal(task_layout_check(&f->lx, why, sizeof(why)), 0);
	put_u64(f, LX_PML4 + 511 * 8, LX_PDPT | 3);
	put_u64(f, LX_PDPT + 510 * 8, 0 | 3 | 0x80);
	put_u64(f, LX_PCPU_OFFSET, K(LX_CPU0));
	put_u64(f, LX_PCPU_OFFSET + 8, K(LX_CPU1));
	put_u64(f, LX_CPU0 + LX_CUR, K(LX_TASK));
	put_u64(f, LX_CPU1 + LX_CUR, K(LX_IDLE));
	put_u32(f, LX_TASK + 0x100, 42); /* pid: the thread */
	put_u32(f, LX_TASK + 0x104, 40); /* tgid: the process */
	put(f, LX_TASK + 0x200, "hotloop", 8);
	put(f, LX_IDLE + 0x200, "swapper/1", 10);
	*os = (struct guest_os){ .linux_layout = &f->lx };
	return f;
}

static void test_desc_current(void **state)
{
	struct guest_os os;
	struct fake *f = desc_fake(&os);
	struct guest_task t;
	int entry = -1;

	(void)state;
	assert_int_equal(guest_procs_current(&os, &f->mem, &f->pg, 0, &entry, &t), 0);
	assert_int_equal(t.pid, 7);
	assert_int_equal(t.tid, 7);
	assert_int_equal(t.gva, PROC_A);
	assert_int_equal(guest_procs_current(&os, &f->mem, &f->pg, 1, &entry, &t), 0);
	assert_int_equal(t.pid, 0); /* idle: known, no process */
	/* No entry for CPU 5, or a process record past RAM: unknown, and nothing left behind. */
	assert_int_equal(guest_procs_current(&os, &f->mem, &f->pg, 5, &entry, &t), -ENOENT);
	assert_true(t.pid == 0 && t.tid == 0 && t.gva == 0);
	put_u64(f, PERCPU + 8, RAM_SIZE - 2);
	assert_int_equal(guest_procs_current(&os, &f->mem, &f->pg, 0, &entry, &t), -EFAULT);
	assert_true(t.pid == 0 && t.tid == 0 && t.gva == 0);
	fake_free(f);
}

static void test_desc_news(void **state)
{
	struct guest_os os;
	struct fake *f = desc_fake(&os);
	struct guest_task a = { .gva = PROC_A, .pid = 7, .tid = 7 }, b = { .gva = PROC_B, .pid = 9, .tid = 9 };
	struct guest_proc_news n;

	(void)state;
	assert_true(guest_procs_news(&f->seen, &os, &f->mem, &f->pg, &a, &n));
	assert_int_equal(n.pid, 7);
	assert_string_equal(n.comm, "matmul"); /* no name field: the path's last part */
	assert_true(n.has_text);
	assert_string_equal(n.path, "/bin/matmul");
	assert_int_equal(n.text_start, 0x40001000);
	assert_int_equal(n.text_len, 0x2000);
	assert_int_equal(n.text_pgoff, 0x1000);
	/* Not told (the consumer's ring was full): the news stays due. */
	assert_true(guest_procs_news(&f->seen, &os, &f->mem, &f->pg, &a, &n));
	guest_procs_told(&f->seen, &n);
	assert_false(guest_procs_news(&f->seen, &os, &f->mem, &f->pg, &a, &n));
	/* The bundled guest's names are read once: a later change is not news. */
	put(f, PROC_A + 8, "/bin/other", 11);
	assert_false(guest_procs_news(&f->seen, &os, &f->mem, &f->pg, &a, &n));
	/* A process without a text segment: a name, no mapping. */
	assert_true(guest_procs_news(&f->seen, &os, &f->mem, &f->pg, &b, &n));
	assert_string_equal(n.comm, "hash");
	assert_false(n.has_text);
	assert_string_equal(n.path, "");
	assert_int_equal(f->seen.n, 1);
	fake_free(f);
}

static void test_linux_current(void **state)
{
	struct guest_os os;
	struct fake *f = linux_fake(&os);
	struct guest_task t;
	int entry = -1;

	(void)state;
	assert_int_equal(guest_procs_current(&os, &f->mem, &f->pg, 0, &entry, &t), 0);
	assert_int_equal(t.pid, 40); /* the process is the tgid */
	assert_int_equal(t.tid, 42);
	assert_int_equal(t.gva, K(LX_TASK));
	assert_int_equal(entry, -1); /* the descriptor's cache is not Linux's business */
	assert_int_equal(guest_procs_current(&os, &f->mem, &f->pg, 1, &entry, &t), 0);
	assert_int_equal(t.pid, 0); /* the swapper: idle */
	/* A current-task pointer into user space: a lie, unknown. */
	put_u64(f, LX_CPU0 + LX_CUR, 0x400000);
	assert_int_equal(guest_procs_current(&os, &f->mem, &f->pg, 0, &entry, &t), -EFAULT);
	assert_true(t.pid == 0 && t.tid == 0 && t.gva == 0);
	fake_free(f);
}

static void test_linux_rename(void **state)
{
	struct guest_os os;
	struct fake *f = linux_fake(&os);
	struct guest_task t = { .gva = K(LX_TASK), .pid = 40, .tid = 42 };
	struct guest_proc_news n;
	uint32_t first;

	(void)state;
	assert_true(guest_procs_news(&f->seen, &os, &f->mem, &f->pg, &t, &n));
	assert_int_equal(n.pid, 40);
	assert_string_equal(n.comm, "hotloop");
	assert_false(n.has_text); /* Linux mappings come from the agent's export */
	first = n.name_hash;
	guest_procs_told(&f->seen, &n);
	assert_false(guest_procs_news(&f->seen, &os, &f->mem, &f->pg, &t, &n));
	/* exec keeps the tgid and changes the name: news again, once. */
	put(f, LX_TASK + 0x200, "hotloop2", 9);
	assert_true(guest_procs_news(&f->seen, &os, &f->mem, &f->pg, &t, &n));
	assert_string_equal(n.comm, "hotloop2");
	assert_int_not_equal(n.name_hash, first);
	guest_procs_told(&f->seen, &n);
	assert_false(guest_procs_news(&f->seen, &os, &f->mem, &f->pg, &t, &n));
	assert_int_equal(f->seen.n, 1);
	/* An unreadable name is news too, as "[unknown]". */
	t.gva = K(RAM_SIZE - 0x100);
	assert_true(guest_procs_news(&f->seen, &os, &f->mem, &f->pg, &t, &n));
	assert_string_equal(n.comm, "[unknown]");
	fake_free(f);
}

static void test_table_full(void **state)
{
	struct guest_os os;
	struct fake *f = desc_fake(&os);
	struct guest_task t = { .gva = PROC_A };
	struct guest_proc_news n;

	(void)state;
	for (uint32_t pid = 1; pid <= GUEST_PROCS_MAX; pid++) {
		t.pid = t.tid = pid;
		assert_true(guest_procs_news(&f->seen, &os, &f->mem, &f->pg, &t, &n));
		guest_procs_told(&f->seen, &n);
	}
	assert_int_equal(f->seen.n, GUEST_PROCS_MAX);
	/* Full: a new process is named with every sample rather than never. */
	t.pid = t.tid = 100000;
	assert_true(guest_procs_news(&f->seen, &os, &f->mem, &f->pg, &t, &n));
	guest_procs_told(&f->seen, &n);
	assert_true(guest_procs_news(&f->seen, &os, &f->mem, &f->pg, &t, &n));
	assert_int_equal(f->seen.n, GUEST_PROCS_MAX);
	/* The ones it holds are still known. */
	t.pid = t.tid = 1;
	assert_false(guest_procs_news(&f->seen, &os, &f->mem, &f->pg, &t, &n));
	t.pid = t.tid = GUEST_PROCS_MAX;
	assert_false(guest_procs_news(&f->seen, &os, &f->mem, &f->pg, &t, &n));
	fake_free(f);
}

static void test_no_source(void **state)
{
	struct fake *f = fake_new();
	struct guest_os none = { 0 };
	struct guest_task t = { .gva = 1, .pid = 1, .tid = 1 };
	struct guest_proc_news n;
	int entry = -1;

	(void)state;
	assert_int_equal(guest_procs_current(&none, &f->mem, &f->pg, 0, &entry, &t), -ENOENT);
	assert_true(t.pid == 0 && t.gva == 0);
	t.pid = 3;
	assert_false(guest_procs_news(&f->seen, &none, &f->mem, &f->pg, &t, &n));
	fake_free(f);
}

/* A sink that records what it was told, and can refuse (a full ring). */
struct told {
	char lines[16][128];
	int n;
	bool full;
};

static bool told_comm(void *opaque, uint32_t pid, uint64_t time, const char *comm)
{
	struct told *t = opaque;

	if (t->full)
		return false;
	assert_true(t->n < 16);
	snprintf(t->lines[t->n++], sizeof(t->lines[0]), "comm %u %s @%llu", pid, comm, (unsigned long long)time);
	return true;
}

static bool told_mmap(void *opaque, uint32_t pid, uint64_t time, uint64_t start, uint64_t len, uint64_t pgoff,
		      const char *path)
{
	struct told *t = opaque;

	if (t->full)
		return false;
	assert_true(t->n < 16);
	snprintf(t->lines[t->n++], sizeof(t->lines[0]), "mmap %d %s 0x%llx+0x%llx@0x%llx @%llu", (int)pid, path,
		 (unsigned long long)start, (unsigned long long)len, (unsigned long long)pgoff,
		 (unsigned long long)time);
	return true;
}

static void test_attribute_desc(void **state)
{
	struct guest_os os;
	struct fake *f = desc_fake(&os);
	struct told t = { 0 };
	const struct guest_attrib_sink sink = { told_comm, told_mmap, &t };
	struct guest_attrib a;
	uint32_t pid, tid;

	(void)state;
	assert_int_equal(guest_attrib_init(&a), 0);
	/* A full sink: nothing is remembered as told, the process is still named. */
	t.full = true;
	guest_attribute(&a, &os, &f->mem, &f->pg, 0, 5, &sink, &pid, &tid);
	assert_int_equal(pid, 7);
	assert_int_equal(tid, 7);
	assert_int_equal(t.n, 0);
	/* The kernel's mapping once, then the process's name and text, once. */
	t.full = false;
	guest_attribute(&a, &os, &f->mem, &f->pg, 0, 6, &sink, &pid, &tid);
	guest_attribute(&a, &os, &f->mem, &f->pg, 0, 7, &sink, &pid, &tid);
	assert_int_equal(t.n, 3);
	assert_string_equal(t.lines[0], "mmap -1 /kernel.elf 0x100000+0x8000@0x0 @6");
	assert_string_equal(t.lines[1], "comm 7 matmul @6");
	assert_string_equal(t.lines[2], "mmap 7 /bin/matmul 0x40001000+0x2000@0x1000 @6");
	guest_attrib_free(&a);

	/* CPU 1 is idle: pid 0 is "[idle]", said once. */
	t.n = 0;
	assert_int_equal(guest_attrib_init(&a), 0);
	guest_attribute(&a, &os, &f->mem, &f->pg, 1, 9, &sink, &pid, &tid);
	guest_attribute(&a, &os, &f->mem, &f->pg, 1, 10, &sink, &pid, &tid);
	assert_int_equal(pid, 0);
	assert_int_equal(t.n, 2);
	assert_string_equal(t.lines[1], "comm 0 [idle] @9");
	/* Paging unreadable: the process is unknown, and pid 0 now says so. */
	guest_attribute(&a, &os, &f->mem, NULL, 1, 11, &sink, &pid, &tid);
	assert_int_equal(pid, 0);
	assert_int_equal(t.n, 3);
	assert_string_equal(t.lines[2], "comm 0 [unknown] @11");
	guest_attrib_free(&a);
	fake_free(f);
}

static void test_attribute_linux_and_nothing(void **state)
{
	struct guest_os os, none = { 0 };
	struct fake *f = linux_fake(&os);
	struct told t = { 0 };
	const struct guest_attrib_sink sink = { told_comm, told_mmap, &t };
	struct guest_attrib a;
	uint32_t pid, tid;

	(void)state;
	assert_int_equal(guest_attrib_init(&a), 0);
	guest_attribute(&a, &os, &f->mem, &f->pg, 0, 1, &sink, &pid, &tid);
	assert_int_equal(pid, 40);
	assert_int_equal(tid, 42);
	/* Linux: no kernel mapping from here (kallsyms come from the export), the name only. */
	assert_int_equal(t.n, 1);
	assert_string_equal(t.lines[0], "comm 40 hotloop @1");
	guest_attrib_free(&a);
	/* Nothing known of the guest: pid 0, "[unknown]". */
	t.n = 0;
	assert_int_equal(guest_attrib_init(&a), 0);
	guest_attribute(&a, &none, &f->mem, &f->pg, 0, 2, &sink, &pid, &tid);
	assert_int_equal(pid, 0);
	assert_int_equal(t.n, 1);
	assert_string_equal(t.lines[0], "comm 0 [unknown] @2");
	guest_attrib_free(&a);
	fake_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_desc_current),
		cmocka_unit_test(test_desc_news),
		cmocka_unit_test(test_linux_current),
		cmocka_unit_test(test_linux_rename),
		cmocka_unit_test(test_table_full),
		cmocka_unit_test(test_no_source),
		cmocka_unit_test(test_attribute_desc),
		cmocka_unit_test(test_attribute_linux_and_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
