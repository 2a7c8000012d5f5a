// SPDX-License-Identifier: MIT
/*
 * The kernel loaders (`--kernel FILE`): a PVH ELF or a bzImage, loaded into
 * 32 MiB of guest memory with an initrd and a command line, through the
 * same boot_load the VMM calls. The first byte picks which loader the
 * input is dressed for, so both get their share (0 as it is, 1 behind a
 * valid ELF identification, 2 behind a bzImage boot sector and "HdrS"),
 * and with bit 2 set the next two bytes are the file's length (the input
 * cut there, or padded with zeros), so that the fuzzer tries every size
 * near a header's end directly instead of growing inputs to reach it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "boot.h"
#include "guest_mem.h"
#include "memmap.h"

#define MEM_SIZE (32u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *host;
	static const uint8_t initrd[64] = "initrd";
	struct guest_mem mem;
	struct memmap map;
	struct boot_entry entry;
	char err[BOOT_ERR_MAX];
	uint8_t *img;
	size_t n;

	if (size < 3 || size > (8u << 20))
		return 0;
	if (!host && !(host = calloc(1, MEM_SIZE)))
		return 0;
	mem = (struct guest_mem){ host, MEM_SIZE };
	memmap_build(&map, MEM_SIZE);
	/* An exactly sized heap copy: reading past the file's end is an ASan report. */
	n = data[0] & 4 ? (size_t)(data[1] | data[2] << 8) : size - 3;
	img = calloc(1, n ? n : 1);
	if (!img)
		return 0;
	memcpy(img, data + 3, n < size - 3 ? n : size - 3);
	if (data[0] % 3 == 1 && n >= 16)
		memcpy(img, "\x7f" "ELF\x02\x01\x01", 7);
	if (data[0] % 3 == 2 && n >= 0x206) {
		img[0x1fe] = 0x55;
		img[0x1ff] = 0xaa;
		memcpy(img + 0x202, "HdrS", 4);
	}
	struct boot_config cfg = { .mem = &mem, .map = &map, .kernel = img, .kernel_size = n,
				   .initrd = initrd, .initrd_size = sizeof(initrd), .cmdline = "console=ttyS0" };
	boot_load(&cfg, &entry, err);
	free(img);
	return 0;
}
