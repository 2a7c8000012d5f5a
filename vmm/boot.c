// SPDX-License-Identifier: MIT
/* What both boot protocols share: recognizing the kernel, the initrd's place, the command line. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "boot.h"
#include "kvmprof/platform.h"

bool boot_is_elf(const uint8_t *data, size_t size)
{
	return size >= 4 && memcmp(data, "\177ELF", 4) == 0;
}

bool boot_is_bzimage(const uint8_t *data, size_t size)
{
	return size >= 0x206 && data[0x1fe] == 0x55 && data[0x1ff] == 0xaa &&
	       memcmp(data + 0x202, "HdrS", 4) == 0;
}

int boot_load(const struct boot_config *cfg, struct boot_entry *entry, char err[BOOT_ERR_MAX])
{
	if (boot_is_elf(cfg->kernel, cfg->kernel_size))
		return boot_load_pvh(cfg, entry, err);
	if (boot_is_bzimage(cfg->kernel, cfg->kernel_size))
		return boot_load_bzimage(cfg, entry, err);
	snprintf(err, BOOT_ERR_MAX, "neither a PVH ELF kernel nor a Linux bzImage");
	return -ENOEXEC;
}

int boot_place_initrd(const struct boot_config *cfg, uint64_t low_limit, uint64_t max_end,
		      uint64_t *addr, char err[BOOT_ERR_MAX])
{
	uint64_t top = cfg->mem->size < max_end ? cfg->mem->size : max_end;
	uint64_t size = cfg->initrd_size;

	top &= ~0xfffULL;
	low_limit = (low_limit + 0xfff) & ~0xfffULL;
	if (size > top || ((top - size) & ~0xfffULL) < low_limit) {
		snprintf(err, BOOT_ERR_MAX,
			 "initrd of %zu bytes does not fit in guest memory above the kernel "
			 "(%llu MiB of RAM): use a larger --mem", cfg->initrd_size,
			 (unsigned long long)(cfg->mem->size >> 20));
		return -E2BIG;
	}
	*addr = (top - size) & ~0xfffULL;
	return guest_mem_write(cfg->mem, *addr, cfg->initrd, size);
}

int boot_write_cmdline(const struct boot_config *cfg, size_t max_len, char err[BOOT_ERR_MAX])
{
	const char *cmdline = cfg->cmdline ? cfg->cmdline : "";
	size_t len = strlen(cmdline);

	if (max_len > KVMPROF_CMDLINE_MAX - 1)
		max_len = KVMPROF_CMDLINE_MAX - 1;
	if (len > max_len) {
		snprintf(err, BOOT_ERR_MAX, "command line of %zu bytes is longer than the %zu this kernel accepts",
			 len, max_len);
		return -E2BIG;
	}
	return guest_mem_write(cfg->mem, KVMPROF_CMDLINE_ADDR, cmdline, len + 1);
}
