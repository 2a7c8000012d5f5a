// SPDX-License-Identifier: MIT
#include <string.h>

#include "common/utf8.h"

size_t utf8_decode(const unsigned char *s, uint32_t *cp)
{
	size_t n, i;
	uint32_t c;

	if (s[0] < 0x80) {
		*cp = s[0];
		return s[0] ? 1 : 0;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, c = s[0] & 0x07;
	else
		return 0;
	/* A NUL is no continuation byte, so the string's end stops the loop: no over-read. */
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and code points past Unicode are not valid UTF-8. */
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

size_t utf8_printable_len(const char *s)
{
	uint32_t cp;
	size_t n = utf8_decode((const unsigned char *)s, &cp);

	if (!n || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
		return 0;
	return n;
}

void utf8_sanitize(char *s, char repl, const char *also)
{
	while (*s) {
		size_t n = utf8_printable_len(s);

		if (n == 1 && also && strchr(also, *s))
			n = 0;
		if (!n) {
			*s++ = repl;
			continue;
		}
		s += n;
	}
}

void utf8_fputs_sanitized(const char *s, FILE *out, char repl, const char *also)
{
	const char *run = s; /* safe bytes not yet written: one fwrite for each run of them */

	while (*s) {
		size_t n = utf8_printable_len(s);

		if (n == 1 && also && strchr(also, *s))
			n = 0;
		if (n) {
			s += n;
			continue;
		}
		fwrite(run, 1, (size_t)(s - run), out);
		putc(repl, out);
		run = ++s;
	}
	fwrite(run, 1, (size_t)(s - run), out);
}
