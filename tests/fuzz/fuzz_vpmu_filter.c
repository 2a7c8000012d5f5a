// SPDX-License-Identifier: MIT
/* The vPMU event filter file (`--vpmu-filter FILE`), and the decisions made from a parsed one. */
#include <stdint.h>

#include "vpmu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vpmu_filter f;
	char err[VPMU_ERR_MAX];

	if (vpmu_filter_parse((const char *)data, size, &f, err))
		return 0;
	for (unsigned int i = 0; i < 4 && i < size; i++) {
		vpmu_filter_allows_event(&f, data[i], (uint8_t)(data[i] >> 1));
		vpmu_filter_allows_fixed(&f, data[i] & 7);
	}
	return 0;
}
