// SPDX-License-Identifier: MIT
/*
 * The bundled guest's descriptor (vmi/desc_reader.c): the checks of a
 * registered descriptor, and reading the current process through one, against fake
 * guest RAM (malloc'd, so ASan catches any read past it) with paging off
 * (linear = physical; the page walk itself is test_vmi_walk's subject).
 * Linux guests' task layout (vmi/linux_task.c) against a fake kernel half:
 * one 1 GiB page maps 0xffffffff80000000 onto guest RAM from 0.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "desc_reader.h"
#include "linux_task.h"
#include "common/task_layout.h"
#include "vmi_mem.h"

#define RAM_SIZE (1u << 20)
#define PERCPU 0x1000u
#define STRIDE 0x100u
#define PROC_A 0x8000u
#define PROC_B 0x9000u

/* A guest's layout: per-CPU {u32 apic_id; u32 pad; u64 cur}, proc {u32 pid; char path[64]; u64 text[3]}. */
static struct kp_guest_desc good(void)
{
	return (struct kp_guest_desc){
		.magic = KP_GDESC_MAGIC, .version = KP_GDESC_VERSION, .size = sizeof(struct kp_guest_desc),
		.cpu_map = KP_GDESC_CPU_BY_APIC_ID, .percpu_count = 2, .percpu_gva = PERCPU,
		.percpu_stride = STRIDE, .cpu_cur_off = 8, .cpu_apic_id_off = 0,
		.proc_pid_off = 0, .proc_path_off = 8, .proc_path_size = 64,
		.proc_text_start_off = 72, .proc_text_end_off = 80, .proc_text_pgoff_off = 88,
		.kernel_text_start = 0x100000, .kernel_text_end = 0x108000, .kernel_path = "/kernel.elf",
	};
}

struct fake {
	struct vmi_mem mem;
	struct guest_paging pg;
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
	f->mem.base = calloc(1, RAM_SIZE);
	assert_non_null(f->mem.base);
	f->mem.size = RAM_SIZE;
	f->pg.mode = GUEST_PAGING_OFF;
	/* CPU entry 0 is APIC 1's, entry 1 APIC 0's: mapping by APIC id is not by index. */
	put_u32(f, PERCPU, 1);
	put_u64(f, PERCPU + 8, PROC_B);
	put_u32(f, PERCPU + STRIDE, 0);
	put_u64(f, PERCPU + STRIDE + 8, PROC_A);
	put_u32(f, PROC_A, 7);
	put(f, PROC_A + 8, "/bin/matmul", 12);
	put_u64(f, PROC_A + 72, 0x40001000);
	put_u64(f, PROC_A + 80, 0x40002000);
	put_u64(f, PROC_A + 88, 0x1000);
	put_u32(f, PROC_B, 9);
	put(f, PROC_B + 8, "hash", 5);
	return f;
}

static void fake_free(struct fake *f)
{
	free(f->mem.base);
	free(f);
}

static void test_check_good(void **state)
{
	struct kp_guest_desc d = good();
	char why[GUEST_DESC_WHY_MAX];

	(void)state;
	assert_int_equal(guest_desc_check(&d, why), 0);
	d.cpu_map = KP_GDESC_CPU_BY_INDEX;
	d.cpu_apic_id_off = 0xffffffff; /* unused by index: not checked */
	assert_int_equal(guest_desc_check(&d, why), 0);
}

static void test_check_lies(void **state)
{
	char why[GUEST_DESC_WHY_MAX];
	struct kp_guest_desc d;

	(void)state;
#define REFUSED(field_change)                                         \
	do {                                                          \
		d = good();                                           \
		field_change;                                         \
		why[0] = '\0';                                        \
		assert_int_equal(guest_desc_check(&d, why), -EINVAL); \
		assert_true(why[0] != '\0');                          \
	} while (0)
	REFUSED(d.magic = 0);
	REFUSED(d.version = 2);
	REFUSED(d.size = 151);
	REFUSED(d.cpu_map = 2);
	REFUSED(d.percpu_count = 0);
	REFUSED(d.percpu_count = KP_GDESC_MAX_CPUS + 1);
	REFUSED(d.percpu_stride = 4);
	REFUSED(d.percpu_stride = KP_GDESC_MAX_STRIDE + 1);
	REFUSED(d.percpu_gva = UINT64_MAX - 0x100);
	REFUSED(d.cpu_cur_off = STRIDE - 7);
	REFUSED(d.cpu_cur_off = 0xfffffffc);
	REFUSED(d.cpu_apic_id_off = STRIDE - 3);
	REFUSED(d.proc_pid_off = KP_GDESC_MAX_PROC - 3);
	REFUSED(d.proc_pid_off = 0xffffffff);
	REFUSED(d.proc_comm_size = 65);
	REFUSED(d.proc_comm_off = 0xfffffff0; d.proc_comm_size = 16);
	REFUSED(d.proc_path_size = 1);
	REFUSED(d.proc_path_size = KP_GDESC_PATH_MAX + 1);
	REFUSED(d.proc_path_off = KP_GDESC_MAX_PROC - 10);
	REFUSED(d.proc_text_start_off = 0xfffffffa);
	REFUSED(d.proc_text_end_off = KP_GDESC_MAX_PROC);
	REFUSED(d.proc_text_pgoff_off = KP_GDESC_MAX_PROC - 7);
	REFUSED(d.reserved = 1);
	REFUSED(d.kernel_text_end = d.kernel_text_start - 1);
	REFUSED(d.kernel_text_end = d.kernel_text_start + (1ULL << 33));
	REFUSED(memset(d.kernel_path, 'a', sizeof(d.kernel_path)));
	REFUSED(strcpy(d.kernel_path, "kernel.elf"));
	REFUSED(d.kernel_path[0] = '\0');
#undef REFUSED
}

static void test_current(void **state)
{
	struct fake *f = fake_new();
	struct kp_guest_desc d = good();
	uint64_t proc;
	uint32_t pid;
	int entry = -1;

	(void)state;
	assert_int_equal(guest_desc_current(&d, &f->mem, &f->pg, 0, &entry, &proc, &pid), 0);
	assert_int_equal(entry, 1);
	assert_int_equal(proc, PROC_A);
	assert_int_equal(pid, 7);
	assert_int_equal(guest_desc_current(&d, &f->mem, &f->pg, 1, &entry, &proc, &pid), 0);
	assert_int_equal(entry, 0);
	assert_int_equal(pid, 9);
	/* The cached entry is checked again: the guest renumbered its CPUs. */
	entry = 1;
	assert_int_equal(guest_desc_current(&d, &f->mem, &f->pg, 1, &entry, &proc, &pid), 0);
	assert_int_equal(entry, 0);
	entry = 1000;
	assert_int_equal(guest_desc_current(&d, &f->mem, &f->pg, 1, &entry, &proc, &pid), 0);
	assert_int_equal(entry, 0);
	/* By index: vCPU 1 is entry 1. */
	d.cpu_map = KP_GDESC_CPU_BY_INDEX;
	entry = -1;
	assert_int_equal(guest_desc_current(&d, &f->mem, &f->pg, 1, &entry, &proc, &pid), 0);
	assert_int_equal(pid, 7);
	assert_int_equal(guest_desc_current(&d, &f->mem, &f->pg, 2, &entry, &proc, &pid), -ENOENT);
	d = good();
	/* Idle: no process. */
	put_u64(f, PERCPU + STRIDE + 8, 0);
	entry = -1;
	assert_int_equal(guest_desc_current(&d, &f->mem, &f->pg, 0, &entry, &proc, &pid), 0);
	assert_int_equal(proc, 0);
	assert_int_equal(pid, 0);
	/* A current pointer past RAM, and one whose pid field is past it. */
	put_u64(f, PERCPU + STRIDE + 8, RAM_SIZE + 0x1000);
	assert_int_equal(guest_desc_current(&d, &f->mem, &f->pg, 0, &entry, &proc, &pid), -EFAULT);
	assert_int_equal(pid, 0);
	put_u64(f, PERCPU + STRIDE + 8, RAM_SIZE - 2);
	assert_int_equal(guest_desc_current(&d, &f->mem, &f->pg, 0, &entry, &proc, &pid), -EFAULT);
	assert_int_equal(pid, 0);
	put_u64(f, PERCPU + STRIDE + 8, UINT64_MAX - 4);
	assert_int_equal(guest_desc_current(&d, &f->mem, &f->pg, 0, &entry, &proc, &pid), -EFAULT);
	assert_int_equal(proc, 0);
	/* No entry for this APIC id; a per-CPU array outside RAM. */
	assert_int_equal(guest_desc_current(&d, &f->mem, &f->pg, 5, &entry, &proc, &pid), -ENOENT);
	d.percpu_gva = RAM_SIZE - 2; /* the APIC id field straddles the end of RAM */
	entry = -1;
	assert_int_equal(guest_desc_current(&d, &f->mem, &f->pg, 0, &entry, &proc, &pid), -ENOENT);
	d.percpu_count = KP_GDESC_MAX_CPUS;
	d.percpu_gva = 0x10000000000ULL;
	assert_int_equal(guest_desc_current(&d, &f->mem, &f->pg, 0, &entry, &proc, &pid), -ENOENT);
	fake_free(f);
}

static void test_proc_info(void **state)
{
	struct fake *f = fake_new();
	struct kp_guest_desc d = good();
	struct guest_desc_proc p;

	(void)state;
	assert_int_equal(guest_desc_proc_info(&d, &f->mem, &f->pg, PROC_A, &p), 0);
	assert_string_equal(p.comm, "matmul");
	assert_string_equal(p.path, "/bin/matmul");
	assert_int_equal(p.text_start, 0x40001000);
	assert_int_equal(p.text_end, 0x40002000);
	assert_int_equal(p.text_pgoff, 0x1000);
	/* A relative path names it too; no text segment. */
	assert_int_equal(guest_desc_proc_info(&d, &f->mem, &f->pg, PROC_B, &p), -EFAULT);
	assert_string_equal(p.comm, "hash");
	assert_int_equal(p.text_end, 0);
	/* A path without its NUL, control bytes, a long last component. */
	memset(f->mem.base + PROC_A + 8, 'x', 64);
	assert_int_equal(guest_desc_proc_info(&d, &f->mem, &f->pg, PROC_A, &p), -EFAULT);
	assert_string_equal(p.comm, "[unknown]");
	assert_string_equal(p.path, "");
	put(f, PROC_A + 8, "/a/\x01\x1b[31mverylongprogramname", 29);
	assert_int_equal(guest_desc_proc_info(&d, &f->mem, &f->pg, PROC_A, &p), 0);
	assert_int_equal(strlen(p.comm), KP_COMM_MAX - 1);
	assert_null(strchr(p.path, '\x1b'));
	/* Its own name field. */
	d.proc_comm_off = 8;
	d.proc_comm_size = 16;
	put(f, PROC_A + 8, "worker", 7);
	assert_int_equal(guest_desc_proc_info(&d, &f->mem, &f->pg, PROC_A, &p), 0);
	assert_string_equal(p.comm, "worker");
	/* Text end before start; a process past RAM. */
	put_u64(f, PROC_A + 80, 0x1000);
	assert_int_equal(guest_desc_proc_info(&d, &f->mem, &f->pg, PROC_A, &p), -EFAULT);
	assert_int_equal(p.text_start, 0);
	assert_int_equal(guest_desc_proc_info(&d, &f->mem, &f->pg, RAM_SIZE - 4, &p), -EFAULT);
	assert_string_equal(p.comm, "[unknown]");
	assert_int_equal(guest_desc_proc_info(&d, &f->mem, &f->pg, UINT64_MAX - 8, &p), -EFAULT);
	fake_free(f);
}

/* Random RAM and random descriptors that pass the checks: nothing reads outside RAM (ASan). */
static void test_fuzz(void **state)
{
	struct fake *f = fake_new();
	char why[GUEST_DESC_WHY_MAX];
	unsigned int seed = 12345;

	(void)state;
	for (size_t i = 0; i < 4096; i++)
		((uint32_t *)f->mem.base)[i] = (uint32_t)rand_r(&seed);
	for (int iter = 0; iter < 20000; iter++) {
		struct kp_guest_desc d = good();
		struct guest_desc_proc p;
		uint64_t proc;
		uint32_t pid;
		int entry = (int)(rand_r(&seed) % 300) - 20;

		d.cpu_map = (uint32_t)rand_r(&seed) & 1;
		d.percpu_count = 1 + (uint32_t)rand_r(&seed) % KP_GDESC_MAX_CPUS;
		d.percpu_stride = 8 + (uint32_t)rand_r(&seed) % 512;
		d.percpu_gva = (uint64_t)rand_r(&seed) % (RAM_SIZE + 0x2000);
		d.cpu_cur_off = (uint32_t)rand_r(&seed) % (d.percpu_stride - 7);
		d.cpu_apic_id_off = (uint32_t)rand_r(&seed) % (d.percpu_stride - 3);
		d.proc_pid_off = (uint32_t)rand_r(&seed) % 0x2000;
		d.proc_path_off = (uint32_t)rand_r(&seed) % 0x2000;
		d.proc_path_size = 2 + (uint32_t)rand_r(&seed) % (KP_GDESC_PATH_MAX - 1);
		d.proc_comm_size = (uint32_t)rand_r(&seed) % 65;
		d.proc_comm_off = (uint32_t)rand_r(&seed) % 0x2000;
		assert_int_equal(guest_desc_check(&d, why), 0);
		guest_desc_current(&d, &f->mem, &f->pg, (uint32_t)rand_r(&seed) % 300, &entry, &proc, &pid);
		guest_desc_proc_info(&d, &f->mem, &f->pg, iter % 2 ? proc : (uint64_t)rand_r(&seed) % (RAM_SIZE + 64), &p);
		assert_non_null(memchr(p.comm, '\0', sizeof(p.comm)));
		assert_true(p.comm[0] != '\0');
		assert_non_null(memchr(p.path, '\0', sizeof(p.path)));
	}
	fake_free(f);
}

/* --- Linux guests ------------------------------------------------------------ */

#define KBASE 0xffffffff80000000ULL
#define K(x) (KBASE + (uint64_t)(x))
#define LX_PML4 0x1000u
#define LX_PDPT 0x2000u
#define LX_PCPU_OFFSET 0x3000u /* __per_cpu_offset[] */
#define LX_CPU0 0x10000u       /* per-CPU areas */
#define LX_CPU1 0x20000u
#define LX_CUR 0x40u           /* &current_task, zero-based */
#define LX_TASK_A 0x30000u
#define LX_IDLE 0x40000u

static struct kp_rec_task_layout lx_good(void)
{
	return (struct kp_rec_task_layout){
		.kind = KP_LAYOUT_LINUX_X86_64, .current_task = LX_CUR, .per_cpu_offset = K(LX_PCPU_OFFSET),
		.task_pid = 0x100, .task_tgid = 0x104, .task_comm = 0x200, .task_comm_size = 16, .task_size = 0x1000,
	};
}

static struct fake *lx_fake(void)
{
	struct fake *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->mem.base = calloc(1, RAM_SIZE);
	assert_non_null(f->mem.base);
	f->mem.size = RAM_SIZE;
	f->pg.mode = GUEST_PAGING_4LEVEL;
	f->pg.cr3 = LX_PML4;
	put_u64(f, LX_PML4 + 511 * 8, LX_PDPT | 3);     /* present, writable */
	put_u64(f, LX_PDPT + 510 * 8, 0 | 3 | 0x80);    /* a 1 GiB page at 0 */
	put_u64(f, LX_PCPU_OFFSET, K(LX_CPU0));
	put_u64(f, LX_PCPU_OFFSET + 8, K(LX_CPU1));
	put_u64(f, LX_CPU0 + LX_CUR, K(LX_TASK_A));
	put_u64(f, LX_CPU1 + LX_CUR, K(LX_IDLE));
	put_u32(f, LX_TASK_A + 0x100, 42); /* pid: the thread */
	put_u32(f, LX_TASK_A + 0x104, 40); /* tgid: the process */
	put(f, LX_TASK_A + 0x200, "hotloop", 8);
	put(f, LX_IDLE + 0x200, "swapper/1", 10);
	return f;
}

static void test_linux_check(void **state)
{
	struct kp_rec_task_layout l;
	char why[GUEST_DESC_WHY_MAX];

	(void)state;
	l = lx_good();
	assert_int_equal(task_layout_check(&l, why, sizeof(why)), 0);
	l.current_task = K(0x1000); /* not zero-based (Linux 6.15+): an address */
	assert_int_equal(task_layout_check(&l, why, sizeof(why)), 0);
	l = lx_good();
	l.flags = KP_LAYOUT_PCPU_HOT;
	assert_int_equal(task_layout_check(&l, why, sizeof(why)), 0);
#define LX_REFUSED(change)                                              \
	do {                                                            \
		l = lx_good();                                          \
		change;                                                 \
		why[0] = '\0';                                          \
		assert_int_equal(task_layout_check(&l, why, sizeof(why)), -EINVAL);  \
		assert_true(why[0] != '\0');                            \
	} while (0)
	LX_REFUSED(l.kind = 2);
	LX_REFUSED(l.flags = 2);
	LX_REFUSED(l.reserved = 1);
	LX_REFUSED(l.per_cpu_offset = 0x3000);               /* a user address */
	LX_REFUSED(l.per_cpu_offset = 0x00007fffffff0000ULL);
	LX_REFUSED(l.per_cpu_offset = K(LX_PCPU_OFFSET) + 4); /* misaligned */
	LX_REFUSED(l.per_cpu_offset = UINT64_MAX - 7);        /* the array would wrap */
	LX_REFUSED(l.current_task = 0x100000000ULL);          /* neither an offset nor a kernel address */
	LX_REFUSED(l.current_task = 0x41);
	LX_REFUSED(l.task_size = 0);
	LX_REFUSED(l.task_size = TASK_LAYOUT_TASK_MAX + 1);
	LX_REFUSED(l.task_pid = 0x1000 - 3);
	LX_REFUSED(l.task_tgid = 0xffffffff);
	LX_REFUSED(l.task_comm_size = 1);
	LX_REFUSED(l.task_comm_size = KP_LAYOUT_COMM_MAX + 1);
	LX_REFUSED(l.task_comm = 0x1000 - 15);
	LX_REFUSED(l.task_comm = 0xfffffff8);
#undef LX_REFUSED
}

static void test_linux_current(void **state)
{
	struct fake *f = lx_fake();
	struct kp_rec_task_layout l = lx_good();
	uint64_t task;
	uint32_t tgid, pid;
	char comm[KP_COMM_MAX + 1];

	(void)state;
	assert_int_equal(guest_linux_current(&l, &f->mem, &f->pg, 0, &task, &tgid, &pid), 0);
	assert_int_equal(task, K(LX_TASK_A));
	assert_int_equal(tgid, 40);
	assert_int_equal(pid, 42);
	assert_true(guest_linux_comm(&l, &f->mem, &f->pg, task, comm));
	assert_string_equal(comm, "hotloop");
	/* The idle task: pid 0, tgid 0. */
	assert_int_equal(guest_linux_current(&l, &f->mem, &f->pg, 1, &task, &tgid, &pid), 0);
	assert_int_equal(task, K(LX_IDLE));
	assert_int_equal(tgid, 0);
	assert_int_equal(pid, 0);
	/* pid and tgid apart: two reads. */
	l.task_tgid = 0x300;
	put_u32(f, LX_TASK_A + 0x300, 40);
	assert_int_equal(guest_linux_current(&l, &f->mem, &f->pg, 0, &task, &tgid, &pid), 0);
	assert_int_equal(tgid, 40);
	assert_int_equal(pid, 42);
	l = lx_good();
	/* current_task as an address (not zero-based): base + address, wrapping as the kernel computes it. */
	put_u64(f, LX_PCPU_OFFSET, LX_CPU0);
	l.current_task = K(LX_CUR);
	assert_int_equal(guest_linux_current(&l, &f->mem, &f->pg, 0, &task, &tgid, &pid), 0);
	assert_int_equal(tgid, 40);
	l = lx_good();
	put_u64(f, LX_PCPU_OFFSET, K(LX_CPU0));
	/* A CPU beyond the array's bound, or whose base is not mapped (3rd entry is 0 -> user half). */
	assert_int_equal(guest_linux_current(&l, &f->mem, &f->pg, KP_GDESC_MAX_CPUS, &task, &tgid, &pid), -EFAULT);
	assert_int_equal(guest_linux_current(&l, &f->mem, &f->pg, 2, &task, &tgid, &pid), -EFAULT);
	assert_int_equal(task, 0);
	assert_int_equal(tgid, 0);
	/* A base that points the slot past RAM (mapped by the 1 GiB page, but not RAM). */
	put_u64(f, LX_PCPU_OFFSET + 16, K(RAM_SIZE));
	assert_int_equal(guest_linux_current(&l, &f->mem, &f->pg, 2, &task, &tgid, &pid), -EFAULT);
	/* Task pointers that lie: 0, a user address, past RAM, so high the fields would wrap. */
	put_u64(f, LX_CPU0 + LX_CUR, 0);
	assert_int_equal(guest_linux_current(&l, &f->mem, &f->pg, 0, &task, &tgid, &pid), -EFAULT);
	put_u64(f, LX_CPU0 + LX_CUR, LX_TASK_A);
	assert_int_equal(guest_linux_current(&l, &f->mem, &f->pg, 0, &task, &tgid, &pid), -EFAULT);
	put_u64(f, LX_CPU0 + LX_CUR, K(RAM_SIZE - 0x104));
	assert_int_equal(guest_linux_current(&l, &f->mem, &f->pg, 0, &task, &tgid, &pid), -EFAULT);
	put_u64(f, LX_CPU0 + LX_CUR, UINT64_MAX - 0x100);
	assert_int_equal(guest_linux_current(&l, &f->mem, &f->pg, 0, &task, &tgid, &pid), -EFAULT);
	assert_int_equal(task, 0);
	/* Negative ids, a thread of process 0. */
	put_u64(f, LX_CPU0 + LX_CUR, K(LX_TASK_A));
	put_u32(f, LX_TASK_A + 0x100, 0x80000000u);
	assert_int_equal(guest_linux_current(&l, &f->mem, &f->pg, 0, &task, &tgid, &pid), -EFAULT);
	put_u32(f, LX_TASK_A + 0x100, 42);
	put_u32(f, LX_TASK_A + 0x104, 0);
	assert_int_equal(guest_linux_current(&l, &f->mem, &f->pg, 0, &task, &tgid, &pid), -EFAULT);
	assert_int_equal(pid, 0);
	fake_free(f);
}

static void test_linux_comm(void **state)
{
	struct fake *f = lx_fake();
	struct kp_rec_task_layout l = lx_good();
	char comm[KP_COMM_MAX + 1];

	(void)state;
	/* A full field without its NUL: cut to what a COMM record holds. */
	put(f, LX_TASK_A + 0x200, "0123456789abcdef", 16);
	assert_true(guest_linux_comm(&l, &f->mem, &f->pg, K(LX_TASK_A), comm));
	assert_string_equal(comm, "0123456789abcde");
	put(f, LX_TASK_A + 0x200, "a\x01" "b\x7f", 5);
	assert_true(guest_linux_comm(&l, &f->mem, &f->pg, K(LX_TASK_A), comm));
	assert_string_equal(comm, "a?b?");
	/* A 64-byte field (the largest allowed) is read whole; the name still fits the record. */
	l.task_comm_size = KP_LAYOUT_COMM_MAX;
	assert_true(guest_linux_comm(&l, &f->mem, &f->pg, K(LX_TASK_A), comm));
	l = lx_good();
	put(f, LX_TASK_A + 0x200, "", 1);
	assert_false(guest_linux_comm(&l, &f->mem, &f->pg, K(LX_TASK_A), comm));
	assert_string_equal(comm, "[unknown]");
	assert_false(guest_linux_comm(&l, &f->mem, &f->pg, 0, comm));
	assert_false(guest_linux_comm(&l, &f->mem, &f->pg, K(RAM_SIZE - 0x208), comm));
	assert_false(guest_linux_comm(&l, &f->mem, &f->pg, UINT64_MAX - 0x10, comm));
	assert_string_equal(comm, "[unknown]");
	fake_free(f);
}

/* Layouts that pass the check, over random memory and random page tables: no crash, no read outside RAM. */
static void test_linux_fuzz(void **state)
{
	struct fake *f = lx_fake();
	char why[GUEST_DESC_WHY_MAX], comm[KP_COMM_MAX + 1];
	unsigned int seed = 54321;

	(void)state;
	for (int iter = 0; iter < 20000; iter++) {
		struct kp_rec_task_layout l = lx_good();
		uint64_t task;
		uint32_t tgid, pid;

		/* Scribble over tables, per-CPU data and tasks, now and then. */
		if (iter % 64 == 0)
			for (int k = 0; k < 256; k++) {
				uint64_t at = ((uint64_t)rand_r(&seed) % (RAM_SIZE / 8)) * 8;
				uint64_t v = ((uint64_t)rand_r(&seed) << 33) ^ ((uint64_t)rand_r(&seed) << 2) ^
					     (uint64_t)(iter % 3 == 0 ? KBASE : 0);

				put_u64(f, at, v);
			}
		l.task_size = 1 + (uint32_t)rand_r(&seed) % TASK_LAYOUT_TASK_MAX;
		l.task_pid = (uint32_t)rand_r(&seed) % (l.task_size < 4 ? 1 : l.task_size - 3);
		l.task_tgid = iter % 2 ? l.task_pid + 4 : (uint32_t)rand_r(&seed) % (l.task_size < 4 ? 1 : l.task_size - 3);
		l.task_comm_size = 2 + (uint32_t)rand_r(&seed) % (KP_LAYOUT_COMM_MAX - 1);
		l.task_comm = (uint32_t)rand_r(&seed) % 0x2000;
		l.current_task = ((uint64_t)rand_r(&seed) % 0x40000) & ~7ULL;
		if (iter % 5 == 0)
			l.per_cpu_offset = (KBASE + (uint64_t)rand_r(&seed) % (RAM_SIZE + 0x4000)) & ~7ULL;
		if (task_layout_check(&l, why, sizeof(why)))
			continue;
		if (guest_linux_current(&l, &f->mem, &f->pg, (uint32_t)rand_r(&seed) % 4, &task, &tgid, &pid) == 0)
			assert_true(task >= KBASE && (int32_t)tgid >= 0 && (int32_t)pid >= 0);
		else
			assert_true(task == 0 && tgid == 0 && pid == 0);
		guest_linux_comm(&l, &f->mem, &f->pg, iter % 2 ? task : K((uint64_t)rand_r(&seed) % (RAM_SIZE + 64)),
				 comm);
		assert_non_null(memchr(comm, '\0', sizeof(comm)));
		assert_true(comm[0] != '\0');
	}
	fake_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_good),
		cmocka_unit_test(test_check_lies),
		cmocka_unit_test(test_current),
		cmocka_unit_test(test_proc_info),
		cmocka_unit_test(test_fuzz),
		cmocka_unit_test(test_linux_check),
		cmocka_unit_test(test_linux_current),
		cmocka_unit_test(test_linux_comm),
		cmocka_unit_test(test_linux_fuzz),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
