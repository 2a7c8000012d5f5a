/* SPDX-License-Identifier: MIT */
/*
 * The printf-style formatter of the kernel (kprintf, panic) and the user
 * library (printf). Ring 0 is emulated instruction by instruction, so it
 * stays short: digits are produced in place, no second pass.
 */
#include <stdint.h>

#include <guest/format.h>
#include <guest/string.h>

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

/* s[0..n) padded to width: on the left with pad, or (left) on the right with spaces. */
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
		char tmp[24]; /* 20 decimal digits and a sign */
		int n = sizeof(tmp);
		uint64_t v;
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
			int64_t s = lng ? va_arg(ap, int64_t) : va_arg(ap, int);
			neg = s < 0;
			v = neg ? -(uint64_t)s : (uint64_t)s;
			break;
		}
		case 'u':
			v = lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned);
			break;
		case 'X':
			digits = "0123456789ABCDEF";
			/* fall through */
		case 'x':
			v = lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned);
			base = 16;
			break;
		case 'p':
			v = (uint64_t)va_arg(ap, void *);
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
			tmp[--n] = digits[v % base];
			v /= base;
		} while (v);
		if (neg && pad == '0') {
			put(&o, '-'); /* the zeros go between the sign and the digits */
			width--;
		} else if (neg) {
			tmp[--n] = '-';
		}
		put_padded(&o, tmp + n, sizeof(tmp) - (size_t)n, width, left, pad);
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
