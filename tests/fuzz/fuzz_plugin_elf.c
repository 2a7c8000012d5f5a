// SPDX-License-Identifier: MIT
/*
 * The plugin loader's look at a file before dlopen (vmm/plugin_elf.c): an
 * ELF64 header, program headers, the dynamic section and its string
 * table, all from the file. Whatever it finds must be a string inside the
 * file; anything else is a reader bug ASan catches.
 */
#include <stdint.h>
#include <string.h>

#include "plugin_elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char runtime[64];
	const char *init = NULL;

	if (plugin_elf_scan(data, size, runtime, sizeof(runtime), &init) == 1 &&
	    (!init || !memchr(runtime, '\0', sizeof(runtime))))
		__builtin_trap();
	return 0;
}
