// SPDX-License-Identifier: MIT
/* kallsyms text (a recording's KSYMS, --kallsyms, a guest's export) and its lookups. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/kallsyms.h"
#include "collection/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kallsyms *ks = NULL;
	char *copy;

	struct kallsyms_sym s;

	if (!kallsyms_parse(&ks, (const char *)data, size)) {
		uint64_t addr = 0;

		memcpy(&addr, data, size < 8 ? size : 8);
		kallsyms_lookup(ks, addr, &s);
		kallsyms_lookup(ks, ~addr, &s);
		kallsyms_lookup(ks, 0xffffffff81000000ull + (addr & 0xffffff), &s);
		kallsyms_find(ks, "_text", KALLSYMS_IMAGE_OR_MODULE, &s);
		kallsyms_count(ks);
		kallsyms_hidden(ks);
		kallsyms_free(ks);
	}
	/* In two pieces, as KSYMS chunks come, cut where the first byte says. */
	ks = kallsyms_new();
	if (ks) {
		size_t cut = size ? data[0] % (size + 1) : 0;

		if (!kallsyms_add(ks, (const char *)data, cut) && !kallsyms_add(ks, (const char *)data + cut, size - cut)) {
			kallsyms_finish(ks);
			kallsyms_lookup(ks, 0xffffffff81000000ull, &s);
		}
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
