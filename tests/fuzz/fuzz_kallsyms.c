// SPDX-License-Identifier: MIT
/* kallsyms text (a recording's KSYMS, --kallsyms, a guest's export) and its lookups. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kallsyms.h"
#include "procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kallsyms *ks = NULL;
	char *copy;

	if (!kallsyms_parse(&ks, (const char *)data, size)) {
		uint64_t addr = 0;

		memcpy(&addr, data, size < 8 ? size : 8);
		kallsyms_lookup(ks, addr);
		kallsyms_lookup(ks, ~addr);
		kallsyms_lookup(ks, 0xffffffff81000000ull + (addr & 0xffffff));
		kallsyms_count(ks);
		kallsyms_hidden(ks);
		kallsyms_free(ks);
	}
	procfs_kallsyms_hidden((const char *)data, size);
	/* The recorder's filter keeps text symbols in place. */
	copy = malloc(size ? size : 1);
	if (copy) {
		memcpy(copy, data, size);
		procfs_kallsyms_keep_text(copy, size);
		free(copy);
	}
	return 0;
}
