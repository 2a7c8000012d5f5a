// SPDX-License-Identifier: MIT
/* /proc and /sys text: a maps line and a CPU list, NUL-terminated as the readers hand them over. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collection/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procfs_map m;
	int cpus[64];
	char *line = malloc(size + 1);

	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	procfs_parse_maps_line(line, &m);
	procfs_parse_cpu_list(line, cpus, 64);
	free(line);
	return 0;
}
