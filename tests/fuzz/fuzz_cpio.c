// SPDX-License-Identifier: MIT
/* The bundled guest's initrd reader (newc cpio): walking every entry, and finding files by path. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cpio_entry e;
	size_t off = 0;
	uint8_t *copy = malloc(size ? size : 1);
	int n = 0;

	if (!copy)
		return 0;
	memcpy(copy, data, size); /* exact size: an over-read is an ASan report */
	while (n++ < 10000 && cpio_next(copy, size, &off, &e) == 0)
		;
	cpio_find(copy, size, "/bin/agent", &e);
	cpio_find(copy, size, "./init", &e);
	free(copy);
	return 0;
}
