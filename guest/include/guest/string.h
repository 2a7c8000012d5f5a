/* SPDX-License-Identifier: MIT */
/*
 * String and memory comparison of the bundled guest (guest/lib/string.c),
 * compiled into both the kernel and the user library. memcpy and memset are
 * not here: each side has its own (the kernel's use `rep movsq/stosq`).
 */
#ifndef GUEST_STRING_H
#define GUEST_STRING_H

#include <stddef.h>

size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
int memcmp(const void *a, const void *b, size_t n);

#endif
