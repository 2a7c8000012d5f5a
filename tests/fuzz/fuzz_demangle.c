// SPDX-License-Identifier: MIT
/*
 * Symbol names through the demangler (lib/symbols/symtab_demangle.c: libiberty's
 * C++ and Rust demanglers, left by longjmp when the output is full). The
 * first byte picks the buffer's size (16 bytes to 4 KiB) and whether
 * parameters are shown; the rest is the name. A demangled name must be
 * a non-empty string that fits its buffer (its bytes are the name's and
 * may be anything: the reports sanitize names when they print them).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/symtab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char out[SYMTAB_DEMANGLED_MAX];
	size_t cap, len;
	unsigned flags;
	char *name;

	if (!size)
		return 0;
	cap = 16 + (size_t)(data[0] >> 1) * (SYMTAB_DEMANGLED_MAX - 16) / 127;
	flags = data[0] & 1 ? SYMTAB_DEMANGLE_PARAMS : 0;
	name = malloc(size);
	if (!name)
		return 0;
	memcpy(name, data + 1, size - 1);
	name[size - 1] = 0;
	memset(out, 'x', sizeof(out));
	if (symtab_demangle(name, out, cap, flags)) {
		len = strnlen(out, cap);
		if (len >= cap || !len)
			abort();
	}
	free(name);
	return 0;
}
