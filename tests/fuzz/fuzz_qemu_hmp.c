// SPDX-License-Identifier: MIT
/*
 * QEMU's monitor replies as kvmprof record --domain reads them
 * (host-profiler/qemu_hmp.c): registers, the memory map and gpa2hva. The
 * first byte picks the parser; the rest is QEMU's text (a QEMU a guest
 * escaped into could write anything).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_hmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct qemu_vcpu_regs regs[QEMU_HMP_MAX_VCPUS];
	struct qemu_ram_range ranges[QEMU_HMP_MAX_RANGES];
	char *text;
	uint64_t hva;

	if (!size)
		return 0;
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = 0;
	switch (data[0] % 3) {
	case 0: {
		int n = qemu_hmp_parse_registers(text, regs, (int)(data[0] / 3 % QEMU_HMP_MAX_VCPUS) + 1);

		for (int i = 0; i < n; i++)
			if (regs[i].cpl > 3)
				abort();
		break;
	}
	case 1: {
		int n = qemu_hmp_parse_mtree(text, ranges, QEMU_HMP_MAX_RANGES);

		/* What the parser promises: ranges in order, none empty, none overlapping. */
		for (int i = 0; i < n; i++)
			if (!ranges[i].size || (i && ranges[i].gpa < ranges[i - 1].gpa + ranges[i - 1].size))
				abort();
		break;
	}
	default:
		qemu_hmp_parse_gpa2hva(text, &hva);
	}
	free(text);
	return 0;
}
