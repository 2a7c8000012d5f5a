/* SPDX-License-Identifier: MIT */
/* Tiny libc of the kvmprof bundled guest: system calls, strings, printf.
 * The formatter and the string functions are shared with the kernel (guest/lib/). */
#ifndef GUEST_LIBC_H
#define GUEST_LIBC_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <guest/format.h>
#include <guest/string.h>
#include <guest/syscall.h>

long syscall3(long nr, long a, long b, long c);
long write(int fd, const void *buf, size_t len);
void exit(int status) __attribute__((noreturn));
int getpid(void);
int yield(void);
int sleep_ms(unsigned long ms);
uint64_t clock_ns(void);

/* PMU (see guest/include/guest/syscall.h); negative errno on failure. */
long pmu_info(struct pmu_info *info);
long pmu_open(const struct pmu_event *ev, int n);
long pmu_start(void);
long pmu_stop(void);
long pmu_read(uint64_t *counts, int n);
long pmu_close(void);
long pmu_sample_start(const struct pmu_event *ev, uint64_t period, unsigned flags);
long pmu_sample_stop(struct pmu_sample_stats *st);
long pmu_samples(uint64_t *rips, int max);
long pmu_test_rdmsr(uint32_t msr, uint64_t *val);
long pmu_test_wrmsr(uint32_t msr, uint64_t val);
long pmu_test_portio(unsigned long n);
long pmu_test_rdpmc(uint32_t ecx, uint64_t *val);
/* System-wide sampling (every CPU, user and kernel): see syscall.h. */
long pmu_all_start(const struct pmu_event *ev, uint64_t period, unsigned flags);
long pmu_all_stop(struct pmu_all_stats *st);
long pmu_all_read(struct pmu_record *rec, long max);
long pmu_all_read_buf(void *buf, long bytes);

/* Processes: args are split at spaces (NULL: none). */
long spawn(const char *path, const char *args);
long waitpid(int pid, int *status, unsigned flags);
long proc_list(struct proc_info *buf, long max);

/* Opens and starts user-mode instructions + cycles; 0, or -errno (-ENODEV: no PMU). */
long pmu_count_insn_cycles(void);
/* Stops them: counts in n[0], n[1]; returns 0 or -errno (also that of the opening). */
long pmu_stop_insn_cycles(long opened, uint64_t n[2]);
/* Prints "NAME: instructions=N cycles=N", "NAME: no PMU" or "NAME: PMU error E". */
void pmu_print_insn_cycles(const char *name, long status, const uint64_t n[2]);

/* strlen, strcmp, strncmp, memcmp: <guest/string.h> (guest/lib/string.c) */
void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
/* Decimal or 0x-hex; returns def if s is NULL or not a number. */
long atol_def(const char *s, long def);

/* vsnprintf, snprintf: <guest/format.h> (guest/lib/format.c) */
int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int puts(const char *s);
void print_str(const char *s);
void print_dec(long v);
void print_hex(unsigned long v);

#endif
