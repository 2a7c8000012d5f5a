/* SPDX-License-Identifier: MIT */
/*
 * Memory helpers of the kernel. Bulk work uses string instructions: under the
 * instruction-emulated ring 0 one `rep movsq` is ~100x cheaper than a loop.
 * strlen, strcmp, strncmp and memcmp are shared with user space: guest/lib/string.c.
 */
#include "kernel.h"

void *memcpy(void *dst, const void *src, size_t n)
{
	void *d = dst;
	size_t q = n >> 3, r = n & 7;
	__asm__ volatile("rep movsq" : "+D"(d), "+S"(src), "+c"(q) : : "memory");
	__asm__ volatile("rep movsb" : "+D"(d), "+S"(src), "+c"(r) : : "memory");
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	if (d <= s || d >= s + n)
		return memcpy(dst, src, n);
	while (n--)
		d[n] = s[n];
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	void *d = dst;
	__asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
	return dst;
}

void page_zero(void *page)
{
	size_t n = PAGE_SIZE / 8;
	__asm__ volatile("rep stosq" : "+D"(page), "+c"(n) : "a"(0UL) : "memory");
}

/* Decimal, at most n characters, all of them digits. */
int parse_uint(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	if (n == 0 || n > 18)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}
