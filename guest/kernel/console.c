/* SPDX-License-Identifier: MIT */
/* COM1 console (polled), kprintf (formatting: guest/lib/format.c), panic and power-off. */
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

static void kvprintf(const char *fmt, va_list ap)
{
	char buf[256];
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
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

void console_write_unlocked(const char *s, size_t n)
{
	serial_write(s, n);
}

void poweroff(uint32_t status)
{
	if (!acpi_poweroff_only)
		outl(KVMPROF_EXIT_PORT, status);
	/* Still running: no exit port on this machine (QEMU without isa-debug-exit). */
	acpi_poweroff(status);
	for (;;)
		__asm__ volatile("cli; hlt");
}

void panic(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	__asm__ volatile("cli");
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	/* Never deadlock on a console lock held by a CPU that faulted. */
	int locked = spin_trylock_bounded(&console_lock, 100000);
	console_write_unlocked("kernel panic: ", 14);
	console_write_unlocked(buf, (size_t)n);
	if (locked)
		spin_unlock(&console_lock);
	poweroff(PANIC_STATUS);
}
