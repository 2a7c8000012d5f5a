// SPDX-License-Identifier: MIT
/*
 * kvmprof record --domain's guest sampler (host-profiler/domain_sampler.c)
 * without libvirt: a monitor that answers with canned register dumps, and
 * "guest RAM" that is a buffer of this process, read through qemu_ram's
 * own process_vm_readv path (this process's pid, the buffer's address as
 * QEMU's mapping). Checked: the records a register sample writes (the
 * bundled guest's kernel mapping, a process's name and text, [idle]), the
 * join of guest-time host samples to the nearest register sample within
 * the window and nowhere else, perf's guest RIP kept with the snapshot's
 * process but not its stack, and a monitor that fails or lies.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "desc_reader.h"
#include "domain_sampler.h"
#include "format/sample_file.h"

#define RAM_SIZE (1u << 20)
/* The bundled guest's shape, paging off (the descriptor's addresses are physical). */
#define DESC 0x2000u
#define PERCPU 0x3000u
#define STRIDE 0x100u
#define PROC_A 0x8000u
#define USTACK 0x9000u

static uint8_t *ram_buf;
static struct qemu_ram ram;
static char reply[4096];
static int monitor_rc;
static unsigned int monitor_calls;
static char path[64];
static int fd;
static struct kp_writer *w;

static int fake_hmp(void *ctx, const char *cmd, char **out, char *err, size_t errlen)
{
	(void)ctx;
	monitor_calls++;
	assert_string_equal(cmd, "info registers -a");
	if (monitor_rc) {
		snprintf(err, errlen, "monitor gone");
		return monitor_rc;
	}
	*out = strdup(reply);
	return *out ? 0 : -ENOMEM;
}

static const struct qemu_monitor mon = { .hmp = fake_hmp };

static void put(uint64_t gpa, const void *v, size_t n)
{
	memcpy(ram_buf + gpa, v, n);
}

static void put_u64(uint64_t gpa, uint64_t v)
{
	put(gpa, &v, 8);
}

/* One vCPU's dump as QEMU 7.2 prints it (CRLF), paging off, the fields the sampler reads. */
static size_t vcpu_dump(char *buf, size_t len, unsigned int cpu, uint64_t rip, uint64_t rsp, uint64_t rbp, int cpl,
			int hlt)
{
	return (size_t)snprintf(buf, len,
				"CPU#%u\r\nRAX=0000000000000000 RBX=0000000000000000\r\n"
				"RSI=0000000000000000 RDI=0000000000000000 RBP=%016llx RSP=%016llx\r\n"
				"RIP=%016llx RFL=00000202 [-------] CPL=%d II=0 A20=1 SMM=0 HLT=%d\r\n"
				"TR =0028 0000000000000000 00000067 00008b00 DPL=0 TSS64-busy\r\n"
				"CR0=00000011 CR2=0000000000000000 CR3=0000000000000000 CR4=00000000\r\n"
				"EFER=0000000000000000\r\n",
				cpu, (unsigned long long)rbp, (unsigned long long)rsp, (unsigned long long)rip, cpl, hlt);
}

static int setup(void **state)
{
	struct kp_guest_desc d = {
		.magic = KP_GDESC_MAGIC, .version = KP_GDESC_VERSION, .size = sizeof(struct kp_guest_desc),
		.cpu_map = KP_GDESC_CPU_BY_INDEX, .percpu_count = 2, .percpu_gva = PERCPU, .percpu_stride = STRIDE,
		.cpu_cur_off = 8, .proc_pid_off = 0, .proc_path_off = 8, .proc_path_size = 64,
		.proc_text_start_off = 72, .proc_text_end_off = 80, .proc_text_pgoff_off = 88,
		.kernel_text_start = 0x100000, .kernel_text_end = 0x108000, .kernel_path = "/kernel.elf",
	};
	uint32_t pid = 7;
	size_t n;

	(void)state;
	ram_buf = calloc(1, RAM_SIZE);
	assert_non_null(ram_buf);
	put(DESC, &d, sizeof(d));
	put_u64(PERCPU + 8, PROC_A); /* vCPU 0 runs matmul, vCPU 1 nothing */
	put(PROC_A, &pid, 4);
	put(PROC_A + 8, "/bin/matmul", 12);
	put_u64(PROC_A + 72, 0x40001000);
	put_u64(PROC_A + 80, 0x40003000);
	put_u64(PROC_A + 88, 0x1000);
	/* matmul's stack: one frame above the sampled one, returning into main at 0x40002222. */
	put_u64(USTACK, USTACK + 0x40);
	put_u64(USTACK + 8, 0x40002222);
	put_u64(USTACK + 0x40, 0);
	put_u64(USTACK + 0x48, 0);
	/* QEMU's map of it: one RAM range, at this buffer in this process. */
	memset(&ram, 0, sizeof(ram));
	ram.pid = getpid();
	ram.nranges = 1;
	ram.range[0] = (struct qemu_ram_range){ .gpa = 0, .size = RAM_SIZE, .hva = (uint64_t)(uintptr_t)ram_buf,
						.name = "pc.ram" };
	ram.size = RAM_SIZE;
	n = vcpu_dump(reply, sizeof(reply), 0, 0x40001234, USTACK - 0x20, USTACK, 3, 0);
	vcpu_dump(reply + n, sizeof(reply) - n, 1, 0x105f48, 0x1f0000, 0x1eff10, 0, 1);
	monitor_rc = 0;
	monitor_calls = 0;
	snprintf(path, sizeof(path), "/tmp/test_domain_sampler.%d", (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(kp_writer_open(&w, fd, KP_SOURCE_HOST_PROFILER), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (w)
		kp_writer_abort(w);
	w = NULL;
	close(fd);
	unlink(path);
	free(ram_buf);
	return 0;
}

/* Closes the file and reads its records back, one line each, into out. */
static void records(char lines[][160], int max, int *n)
{
	struct kp_reader *r;
	struct kp_record rec;
	char err[256];
	int k;

	assert_int_equal(kp_writer_close(w, 0, 0), 0);
	w = NULL;
	assert_int_equal(kp_reader_open(&r, path, err, sizeof(err)), 0);
	*n = 0;
	while ((k = kp_reader_next(r, &rec, err, sizeof(err))) > 0 && *n < max) {
		char *l = lines[(*n)++];

		switch (rec.type) {
		case KP_REC_COMM:
			snprintf(l, 160, "comm %u %s%s", rec.comm->pid, rec.comm->comm,
				 rec.comm->flags & KP_COMM_GUEST ? " guest" : "");
			break;
		case KP_REC_MMAP:
			snprintf(l, 160, "mmap %d %s 0x%llx+0x%llx domain %u", (int)rec.mmap->pid, rec.mmap->filename,
				 (unsigned long long)rec.mmap->start, (unsigned long long)rec.mmap->len,
				 rec.mmap->domain);
			break;
		case KP_REC_SAMPLE: {
			const struct kp_rec_sample *s = rec.sample;

			snprintf(l, 160, "sample pid %u cpu %u ip 0x%llx cpl %u period %llu time %llu domain %u chain %u%s",
				 s->pid, s->cpu, (unsigned long long)s->ip, s->cpl, (unsigned long long)s->period,
				 (unsigned long long)s->time, s->domain, s->nr_callchain,
				 s->nr_callchain && s->callchain[0] == 0x40002222 ? " main" : "");
			break;
		}
		default:
			snprintf(l, 160, "type %u", rec.type);
		}
	}
	assert_int_equal(k, 0);
	kp_reader_close(r);
}

static struct kp_rec_sample host_sample(uint32_t tid, uint64_t time)
{
	return (struct kp_rec_sample){ .tid = tid, .pid = 500, .time = time, .ip = 0xffffffff81234567ull,
				       .period = 1000000, .cpl = KP_CPL_KERNEL };
}

static void test_snapshot_and_join(void **state)
{
	static const pid_t tids[2] = { 1001, 1002 };
	struct domain_sampler ds;
	struct kp_rec_sample h;
	char lines[16][160];
	uint64_t t;
	int n;

	(void)state;
	assert_int_equal(domain_sampler_init(&ds, &mon, &ram, tids, 2, 100, true, w, 0), 0);
	assert_int_equal(ds.window_ns, 30000000); /* three periods at 100 Hz */
	domain_sampler_use_desc(&ds, DESC);
	assert_int_equal(domain_sampler_take(&ds), 0);
	assert_int_equal(monitor_calls, 1);
	assert_int_equal(ds.desc_state, 1);
	t = ds.vcpu[0].hist[0].time;
	/* vCPU 0's thread, 5 ms after the register sample: matmul's RIP, process and stack, the host's weight and time. */
	h = host_sample(1001, t + 5000000);
	assert_int_equal(domain_sampler_join(&ds, &h, false), 1);
	/* vCPU 1 was idle in its kernel: pid 0, kernel mode. */
	h = host_sample(1002, t - 1000000);
	assert_int_equal(domain_sampler_join(&ds, &h, false), 1);
	/* Past the window, or a thread that is no vCPU's: not attributed, counted. */
	h = host_sample(1001, t + 31000000);
	assert_int_equal(domain_sampler_join(&ds, &h, false), 0);
	h = host_sample(4242, t);
	assert_int_equal(domain_sampler_join(&ds, &h, false), 0);
	assert_int_equal(ds.joined, 2);
	assert_int_equal(ds.unjoined, 2);
	/* perf's guest RIP (hardware-virtualization hosts): kept, with the process, without the snapshot's stack. */
	h = host_sample(1001, t);
	h.ip = 0x40001300;
	h.cpl = KP_CPL_USER;
	assert_int_equal(domain_sampler_join(&ds, &h, true), 1);
	assert_int_equal(ds.perf_guest_ip, 1);
	domain_sampler_free(&ds);
	records(lines, 16, &n);
	assert_int_equal(n, 8);
	/* What each vCPU's samples need first (as each of kvmprof-vmm's rings carries it). */
	assert_string_equal(lines[0], "mmap -1 /kernel.elf 0x100000+0x8000 domain 1");
	assert_string_equal(lines[1], "comm 7 matmul guest");
	assert_string_equal(lines[2], "mmap 7 /bin/matmul 0x40001000+0x2000 domain 1");
	assert_string_equal(lines[3], "mmap -1 /kernel.elf 0x100000+0x8000 domain 1");
	assert_string_equal(lines[4], "comm 0 [idle] guest");
	{
		char want[160];

		snprintf(want, sizeof(want), "sample pid 7 cpu 0 ip 0x40001234 cpl 3 period 1000000 time %llu domain 1 chain 1 main",
			 (unsigned long long)(t + 5000000));
		assert_string_equal(lines[5], want);
		snprintf(want, sizeof(want), "sample pid 0 cpu 1 ip 0x105f48 cpl 0 period 1000000 time %llu domain 1 chain 0",
			 (unsigned long long)(t - 1000000));
		assert_string_equal(lines[6], want);
		snprintf(want, sizeof(want), "sample pid 7 cpu 0 ip 0x40001300 cpl 3 period 1000000 time %llu domain 1 chain 0",
			 (unsigned long long)t);
		assert_string_equal(lines[7], want);
	}
}

static void test_nearest_of_many(void **state)
{
	static const pid_t tids[1] = { 1001 };
	struct domain_sampler ds;
	struct kp_rec_sample h;
	uint64_t t0, t1;

	(void)state;
	assert_int_equal(domain_sampler_init(&ds, &mon, &ram, tids, 1, 250, false, w, 0), 0);
	assert_int_equal(ds.window_ns, 20000000); /* 3 periods at 250 Hz are 12 ms: the 20 ms floor */
	domain_sampler_use_desc(&ds, DESC);
	assert_int_equal(domain_sampler_take(&ds), 0);
	put_u64(PERCPU + 8, 0); /* matmul leaves vCPU 0 */
	usleep(2000);
	assert_int_equal(domain_sampler_take(&ds), 0);
	t0 = ds.vcpu[0].hist[0].time;
	t1 = ds.vcpu[0].hist[1].time;
	assert_true(t1 > t0);
	/* Nearer the first: matmul; nearer the second: idle. */
	h = host_sample(1001, t0 + (t1 - t0) / 4);
	assert_int_equal(domain_sampler_join(&ds, &h, false), 1);
	h = host_sample(1001, t1 - (t1 - t0) / 4);
	assert_int_equal(domain_sampler_join(&ds, &h, false), 1);
	/* More register samples than the history holds: the oldest are gone, the newest still join. */
	for (int i = 0; i < DOMAIN_SAMPLER_HISTORY + 5; i++)
		assert_int_equal(domain_sampler_take(&ds), 0);
	h = host_sample(1001, t0 - 1000000000);
	assert_int_equal(domain_sampler_join(&ds, &h, false), 0);
	h = host_sample(1001, ds.vcpu[0].hist[(ds.vcpu[0].count - 1) % DOMAIN_SAMPLER_HISTORY].time);
	assert_int_equal(domain_sampler_join(&ds, &h, false), 1);
	assert_int_equal(ds.vcpu[0].count, DOMAIN_SAMPLER_HISTORY + 7);
	domain_sampler_free(&ds);
	{
		char lines[16][160];
		int n;

		records(lines, 16, &n);
		/* The kernel's mapping, matmul's name and text, [idle], then the samples in join order. */
		assert_int_equal(n, 7);
		assert_string_equal(lines[3], "comm 0 [idle] guest");
		assert_true(strstr(lines[4], "sample pid 7 ") == lines[4]);
		assert_true(strstr(lines[5], "sample pid 0 ") == lines[5]);
		assert_true(strstr(lines[6], "sample pid 0 ") == lines[6]);
	}
}

static void test_monitor_fails_or_lies(void **state)
{
	static const pid_t tids[2] = { 1001, 1002 };
	struct domain_sampler ds;
	char lines[16][160];
	int n;

	(void)state;
	assert_int_equal(domain_sampler_init(&ds, &mon, &ram, tids, 2, 100, false, w, 0), 0);
	monitor_rc = -EIO;
	assert_int_equal(domain_sampler_take(&ds), -EIO);
	assert_string_equal(ds.last_error, "monitor gone");
	monitor_rc = 0;
	snprintf(reply, sizeof(reply), "Error: something else\r\n");
	assert_int_equal(domain_sampler_take(&ds), -EBADMSG);
	assert_int_equal(ds.round_failures, 2);
	/* A vCPU number past the domain's vCPUs is left out, the others taken. */
	vcpu_dump(reply, sizeof(reply), 5, 0x1000, 0x2000, 0x2000, 0, 0);
	assert_int_equal(domain_sampler_take(&ds), 0);
	assert_int_equal(ds.vcpu[0].count + ds.vcpu[1].count, 0);
	/* No way to name processes (no descriptor, no layout): pid 0, "[unknown]", said once. */
	vcpu_dump(reply, sizeof(reply), 0, 0x40001234, USTACK - 0x20, USTACK, 3, 0);
	assert_int_equal(domain_sampler_take(&ds), 0);
	assert_int_equal(domain_sampler_take(&ds), 0);
	assert_int_equal(ds.vcpu[0].count, 2);
	assert_int_equal(ds.vcpu[0].hist[0].pid, 0);
	domain_sampler_free(&ds);
	records(lines, 16, &n);
	assert_int_equal(n, 1);
	assert_string_equal(lines[0], "comm 0 [unknown] guest");
}

static void test_hostile_descriptor_and_no_memory(void **state)
{
	static const pid_t tids[1] = { 1001 };
	struct domain_sampler ds;
	struct kp_rec_sample h;
	uint32_t bad = 0x12345678;

	(void)state;
	/* A descriptor that does not check: refused once with the reason, processes unknown. */
	put(DESC, &bad, 4);
	assert_int_equal(domain_sampler_init(&ds, &mon, &ram, tids, 1, 100, true, w, 0), 0);
	domain_sampler_use_desc(&ds, DESC);
	assert_int_equal(domain_sampler_take(&ds), 0);
	assert_int_equal(ds.desc_state, -1);
	assert_true(ds.desc_why[0]);
	assert_int_equal(ds.vcpu[0].hist[0].pid, 0);
	domain_sampler_free(&ds);
	/* Past the end of RAM: unreadable, not a crash. */
	assert_int_equal(domain_sampler_init(&ds, &mon, &ram, tids, 1, 100, true, w, 0), 0);
	domain_sampler_use_desc(&ds, RAM_SIZE - 8);
	assert_int_equal(domain_sampler_take(&ds), 0);
	assert_int_equal(ds.desc_state, -1);
	domain_sampler_free(&ds);
	/* No guest memory at all: RIPs still join, without process or stack. */
	assert_int_equal(domain_sampler_init(&ds, &mon, NULL, tids, 1, 100, true, w, 0), 0);
	domain_sampler_use_desc(&ds, DESC);
	assert_int_equal(domain_sampler_take(&ds), 0);
	h = host_sample(1001, ds.vcpu[0].hist[0].time);
	assert_int_equal(domain_sampler_join(&ds, &h, false), 1);
	assert_int_equal(ds.vcpu[0].hist[0].ip, 0x40001234);
	assert_int_equal(ds.vcpu[0].hist[0].nr_callchain, 0);
	domain_sampler_free(&ds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_snapshot_and_join, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nearest_of_many, setup, teardown),
		cmocka_unit_test_setup_teardown(test_monitor_fails_or_lies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_descriptor_and_no_memory, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
