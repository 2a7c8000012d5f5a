/* SPDX-License-Identifier: MIT */
/* Tiny libc of the kvmprof bundled guest: system calls, strings, printf. */
#ifndef GUEST_LIBC_H
#define GUEST_LIBC_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <guest/syscall.h>

long syscall3(long nr, long a, long b, long c);
long write(int fd, const void *buf, size_t len);
void exit(int status) __attribute__((noreturn));
int getpid(void);
int yield(void);
int sleep_ms(unsigned long ms);
uint64_t clock_ns(void);

size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
/* Decimal or 0x-hex; returns def if s is NULL or not a number. */
long atol_def(const char *s, long def);

/* %d %i %u %x %X %s %c %p %%, l/ll/z, width, '0' and '-' flags. */
int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int snprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int puts(const char *s);
void print_str(const char *s);
void print_dec(long v);
void print_hex(unsigned long v);

#endif
