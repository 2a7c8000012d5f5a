/* SPDX-License-Identifier: MIT */
/*
 * printf-style formatting of the bundled guest (guest/lib/format.c), compiled
 * into both the kernel and the user library.
 *
 * Conversions: %d %i %u %x %X %s %c %p %%; length l, ll or z (64 bits);
 * a decimal width; flags '-' (left-justify) and '0' (zero padding of numbers,
 * after the sign). Anything else is printed as is. Like C's, the functions
 * return the length of the whole result and store at most size - 1
 * characters and a terminating NUL.
 */
#ifndef GUEST_FORMAT_H
#define GUEST_FORMAT_H

#include <stdarg.h>
#include <stddef.h>

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int snprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
