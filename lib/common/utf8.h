/* SPDX-License-Identifier: MIT */
/*
 * Names in a recording come from the profiled system, a guest's included,
 * and may hold any bytes. Before they reach a terminal or a line-based
 * format, everything that could act on the terminal is replaced: C0
 * controls, DEL, C1 controls (U+0080-U+009F, and the raw bytes 0x80-0x9f
 * that 8-bit terminals read as CSI and friends) and bytes that are not
 * valid UTF-8. Valid UTF-8 text passes unchanged.
 */
#ifndef KVMPROF_UTF8_H
#define KVMPROF_UTF8_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The length (1-4) of the valid UTF-8 sequence at s and its code point; 0 if s starts none. */
size_t utf8_decode(const unsigned char *s, uint32_t *cp);
/* The length of the character at s if it is safe to print (see above), else 0. */
size_t utf8_printable_len(const char *s);
/* In place: every byte of an unsafe character, and every byte found in `also`, becomes `repl`. */
void utf8_sanitize(char *s, char repl, const char *also);
/* Writes s to out as utf8_sanitize would leave it (no copy, no length limit). */
void utf8_fputs_sanitized(const char *s, FILE *out, char repl, const char *also);

#endif
