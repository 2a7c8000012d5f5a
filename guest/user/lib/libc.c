/* SPDX-License-Identifier: MIT */
#include "libc.h"

/*
 * System call: ud2 with rax = number (see guest/include/guest/syscall.h).
 * The wrappers it is inlined into are leaves, and gcc gives a leaf that
 * uses no stack no frame even with -fno-omit-frame-pointer; asking for the
 * frame's address makes one, so that a guest kernel stack followed on into
 * user code (vmi's guest_callchain) names the wrapper's caller too.
 */
long syscall3(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("" : : "r"(__builtin_frame_address(0)));
	__asm__ volatile("ud2" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "memory");
	return ret;
}

long write(int fd, const void *buf, size_t len)
{
	return syscall3(SYS_write, fd, (long)buf, (long)len);
}

void exit(int status)
{
	syscall3(SYS_exit, status, 0, 0);
	for (;;)
		__asm__ volatile("ud2");
}

int getpid(void)
{
	return (int)syscall3(SYS_getpid, 0, 0, 0);
}

int yield(void)
{
	return (int)syscall3(SYS_yield, 0, 0, 0);
}

int sleep_ms(unsigned long ms)
{
	return (int)syscall3(SYS_sleep, (long)ms, 0, 0);
}

uint64_t clock_ns(void)
{
	return (uint64_t)syscall3(SYS_clock, 0, 0, 0);
}

long pmu_info(struct pmu_info *info)
{
	return syscall3(SYS_pmu_info, (long)info, 0, 0);
}

long pmu_open(const struct pmu_event *ev, int n)
{
	return syscall3(SYS_pmu_open, (long)ev, n, 0);
}

long pmu_start(void)
{
	return syscall3(SYS_pmu_start, 0, 0, 0);
}

long pmu_stop(void)
{
	return syscall3(SYS_pmu_stop, 0, 0, 0);
}

long pmu_read(uint64_t *counts, int n)
{
	return syscall3(SYS_pmu_read, (long)counts, n, 0);
}

long pmu_close(void)
{
	return syscall3(SYS_pmu_close, 0, 0, 0);
}

long pmu_sample_start(const struct pmu_event *ev, uint64_t period, unsigned flags)
{
	return syscall3(SYS_pmu_sample_start, (long)ev, (long)period, flags);
}

long pmu_sample_stop(struct pmu_sample_stats *st)
{
	return syscall3(SYS_pmu_sample_stop, (long)st, 0, 0);
}

long pmu_samples(uint64_t *rips, int max)
{
	return syscall3(SYS_pmu_samples, (long)rips, max, 0);
}

long pmu_test_rdmsr(uint32_t msr, uint64_t *val)
{
	return syscall3(SYS_pmu_test_rdmsr, msr, (long)val, 0);
}

long pmu_test_wrmsr(uint32_t msr, uint64_t val)
{
	return syscall3(SYS_pmu_test_wrmsr, msr, (long)val, 0);
}

long pmu_test_portio(unsigned long n)
{
	return syscall3(SYS_pmu_test_portio, (long)n, 0, 0);
}

long pmu_test_rdpmc(uint32_t ecx, uint64_t *val)
{
	return syscall3(SYS_pmu_test_rdpmc, ecx, (long)val, 0);
}

long pmu_all_start(const struct pmu_event *ev, uint64_t period, unsigned flags)
{
	return syscall3(SYS_pmu_all_start, (long)ev, (long)period, flags);
}

long pmu_all_stop(struct pmu_all_stats *st)
{
	return syscall3(SYS_pmu_all_stop, (long)st, 0, 0);
}

long pmu_all_read(struct pmu_record *rec, long max)
{
	return syscall3(SYS_pmu_all_read, (long)rec, max, 0);
}

long pmu_all_read_buf(void *buf, long bytes)
{
	return syscall3(SYS_pmu_all_read_buf, (long)buf, bytes, 0);
}

long spawn(const char *path, const char *args)
{
	return syscall3(SYS_spawn, (long)path, (long)args, 0);
}

long waitpid(int pid, int *status, unsigned flags)
{
	return syscall3(SYS_waitpid, pid, (long)status, flags);
}

long proc_list(struct proc_info *buf, long max)
{
	return syscall3(SYS_proc_list, (long)buf, max, 0);
}

long pmu_count_insn_cycles(void)
{
	static const struct pmu_event ev[2] = {
		{ .kind = PMU_INSTRUCTIONS, .flags = PMU_USR },
		{ .kind = PMU_CYCLES, .flags = PMU_USR },
	};
	long r = pmu_open(ev, 2);
	return r ? r : pmu_start();
}

long pmu_stop_insn_cycles(long opened, uint64_t n[2])
{
	long r = opened;
	if (r == 0 && (r = pmu_stop()) == 0 && (r = pmu_read(n, 2)) == 2)
		r = 0;
	else if (r >= 0)
		r = -GUEST_EINVAL;
	pmu_close();
	return r;
}

void pmu_print_insn_cycles(const char *name, long status, const uint64_t n[2])
{
	if (status == 0)
		printf("%s: instructions=%lu cycles=%lu\n", name, n[0], n[1]);
	else if (status == -GUEST_ENODEV)
		printf("%s: no PMU\n", name);
	else
		printf("%s: PMU error %ld\n", name, status);
}

void *memcpy(void *dst, const void *src, size_t n)
{
	void *d = dst;
	__asm__ volatile("rep movsb" : "+D"(d), "+S"(src), "+c"(n) : : "memory");
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	void *d = dst;
	__asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
	return dst;
}

long atol_def(const char *s, long def)
{
	long v = 0, base = 10;
	int neg = 0, digits = 0;
	if (!s)
		return def;
	if (*s == '-')
		neg = 1, s++;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		base = 16, s += 2;
	for (; *s; s++, digits++) {
		int d;
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return def;
		v = v * base + d;
	}
	if (!digits)
		return def;
	return neg ? -v : v;
}

int printf(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	write(1, buf, (size_t)n);
	return n;
}

void print_str(const char *s)
{
	write(1, s, strlen(s));
}

int puts(const char *s)
{
	print_str(s);
	write(1, "\n", 1);
	return 0;
}

void print_dec(long v)
{
	printf("%ld", v);
}

void print_hex(unsigned long v)
{
	printf("0x%lx", v);
}
