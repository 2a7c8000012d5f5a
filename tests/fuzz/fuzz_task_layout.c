// SPDX-License-Identifier: MIT
/*
 * The agent's task-layout reader (guest-agent/kernel_layout.c): kallsyms text and
 * a BTF file, as `kvmprof-agent export` reads them from the guest's kernel.
 * Input: [kallsyms length: 2 bytes, little-endian][kallsyms][BTF, raw or
 * an ELF with .BTF]. libbpf parses the BTF (not instrumented here); the
 * harness reaches layout.c's member search and kallsyms lookups, and the
 * shared task_layout_check the layout must pass before it is sent.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "kernel_layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kp_rec_task_layout out;
	char why[LAYOUT_WHY_MAX], path[64];
	size_t klen;
	int fd;

	if (size < 2)
		return 0;
	klen = (size_t)data[0] | (size_t)data[1] << 8;
	data += 2;
	size -= 2;
	if (klen > size)
		klen = size;
	fd = fuzz_memfd(data + klen, size - klen, path);
	if (fd < 0)
		return 0;
	layout_from((const char *)data, klen, path, &out, why);
	close(fd);
	return 0;
}
