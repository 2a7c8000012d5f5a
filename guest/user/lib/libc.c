/* SPDX-License-Identifier: MIT */
#include "libc.h"

/* System call: ud2 with rax = number (see guest/include/guest/syscall.h). */
long syscall3(long nr, long a, long b, long c)
{
	long ret;
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

size_t strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

int strcmp(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i] || !a[i])
			return (unsigned char)a[i] - (unsigned char)b[i];
	return 0;
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

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	for (size_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return x[i] - y[i];
	return 0;
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

struct out {
	char *buf;
	size_t size, len;
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void put_padded(struct out *o, const char *s, size_t n, int width, int left, char pad)
{
	if (!left)
		for (int i = (int)n; i < width; i++)
			put(o, pad);
	for (size_t i = 0; i < n; i++)
		put(o, s[i]);
	if (left)
		for (int i = (int)n; i < width; i++)
			put(o, ' ');
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = { buf, size, 0 };
	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			put(&o, *fmt);
			continue;
		}
		fmt++;
		int left = 0, width = 0, lng = 0;
		char pad = ' ';
		for (;; fmt++) {
			if (*fmt == '-')
				left = 1;
			else if (*fmt == '0')
				pad = '0';
			else
				break;
		}
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		while (*fmt == 'l' || *fmt == 'z')
			lng = 1, fmt++;
		char tmp[24];
		int n = 0;
		unsigned long v;
		int neg = 0;
		const char *digits = "0123456789abcdef";
		unsigned base = 10;
		switch (*fmt) {
		case 's': {
			const char *s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			put_padded(&o, s, strlen(s), width, left, ' ');
			continue;
		}
		case 'c':
			tmp[0] = (char)va_arg(ap, int);
			put_padded(&o, tmp, 1, width, left, ' ');
			continue;
		case '%':
			put(&o, '%');
			continue;
		case 'd':
		case 'i': {
			long s = lng ? va_arg(ap, long) : va_arg(ap, int);
			neg = s < 0;
			v = neg ? -(unsigned long)s : (unsigned long)s;
			break;
		}
		case 'u':
			v = lng ? va_arg(ap, unsigned long) : va_arg(ap, unsigned);
			break;
		case 'X':
			digits = "0123456789ABCDEF";
			/* fall through */
		case 'x':
			v = lng ? va_arg(ap, unsigned long) : va_arg(ap, unsigned);
			base = 16;
			break;
		case 'p':
			v = (unsigned long)va_arg(ap, void *);
			base = 16;
			put(&o, '0');
			put(&o, 'x');
			break;
		case '\0':
			fmt--;
			continue;
		default:
			put(&o, '%');
			put(&o, *fmt);
			continue;
		}
		do {
			tmp[n++] = digits[v % base];
			v /= base;
		} while (v);
		if (neg && pad == '0') {
			put(&o, '-');
			width--;
		} else if (neg) {
			tmp[n++] = '-';
		}
		char rev[24];
		for (int i = 0; i < n; i++)
			rev[i] = tmp[n - 1 - i];
		put_padded(&o, rev, (size_t)n, width, left, pad);
	}
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return (int)o.len;
}

int snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
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
