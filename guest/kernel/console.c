/* SPDX-License-Identifier: MIT */
/* COM1 console (polled), a small printf, panic and power-off. */
#include "kernel.h"

int quiet;
static volatile int console_lock;

static void serial_putc(char c)
{
	/* Bounded wait for THR empty: a missing UART must not hang us. */
	for (int i = 0; i < 10000; i++)
		if (inb(KVMPROF_COM1_PORT + 5) & 0x20)
			break;
	outb(KVMPROF_COM1_PORT, (uint8_t)c);
}

static void serial_write(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		serial_putc(s[i]);
}

/* Whole writes are serialised across CPUs. */
void console_write(const char *s, size_t n)
{
	spin_lock(&console_lock);
	serial_write(s, n);
	spin_unlock(&console_lock);
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

static void put_num(struct out *o, uint64_t v, unsigned base, int neg, int width, char pad)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	if (neg)
		tmp[n++] = '-';
	while (width-- > n)
		put(o, pad);
	while (n)
		put(o, tmp[--n]);
}

/* %s %c %d %i %u %x %p %%, with l/ll/z, a width and 0 padding. */
int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = { buf, size, 0 };
	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			put(&o, *fmt);
			continue;
		}
		fmt++;
		char pad = ' ';
		int width = 0, lng = 0;
		if (*fmt == '0')
			pad = '0', fmt++;
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		while (*fmt == 'l' || *fmt == 'z')
			lng = 1, fmt++;
		switch (*fmt) {
		case 's': {
			const char *s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			size_t n = strlen(s);
			while (width-- > (int)n)
				put(&o, ' ');
			while (*s)
				put(&o, *s++);
			break;
		}
		case 'c':
			put(&o, (char)va_arg(ap, int));
			break;
		case 'd':
		case 'i': {
			int64_t v = lng ? va_arg(ap, int64_t) : va_arg(ap, int);
			put_num(&o, v < 0 ? -(uint64_t)v : (uint64_t)v, 10, v < 0, width, pad);
			break;
		}
		case 'u':
			put_num(&o, lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned), 10, 0, width, pad);
			break;
		case 'x':
			put_num(&o, lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned), 16, 0, width, pad);
			break;
		case 'p':
			put(&o, '0');
			put(&o, 'x');
			put_num(&o, (uint64_t)va_arg(ap, void *), 16, 0, width, pad);
			break;
		case '%':
			put(&o, '%');
			break;
		case '\0':
			fmt--;
			break;
		default:
			put(&o, '%');
			put(&o, *fmt);
		}
	}
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return (int)o.len;
}

int ksnprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = kvsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

static void kvprintf(const char *fmt, va_list ap)
{
	char buf[256];
	int n = kvsnprintf(buf, sizeof(buf), fmt, ap);
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	console_write(buf, (size_t)n);
}

void kprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	kvprintf(fmt, ap);
	va_end(ap);
}

/* Non-essential messages: suppressed by the `quiet` command-line flag. */
void kinfo(const char *fmt, ...)
{
	if (quiet)
		return;
	va_list ap;
	va_start(ap, fmt);
	kvprintf(fmt, ap);
	va_end(ap);
}

void poweroff(uint32_t status)
{
	outl(KVMPROF_EXIT_PORT, status);
	for (;;)
		__asm__ volatile("cli; hlt");
}

void panic(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	__asm__ volatile("cli");
	va_start(ap, fmt);
	int n = kvsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	/* Never deadlock on a console lock held by a CPU that faulted. */
	int locked = spin_trylock_bounded(&console_lock, 100000);
	serial_write("kernel panic: ", 14);
	serial_write(buf, (size_t)n);
	if (locked)
		spin_unlock(&console_lock);
	poweroff(PANIC_STATUS);
}
