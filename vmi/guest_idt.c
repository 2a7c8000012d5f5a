// SPDX-License-Identifier: MIT
#include "guest_idt.h"

uint64_t guest_idt_handler(const struct vmi_mem *mem, const struct guest_paging *pg, uint64_t idt_base,
			   uint16_t idt_limit, unsigned int vec)
{
	uint8_t g[16];

	if (vec > 255 || idt_limit < vec * 16 + 15 || guest_read_virt(mem, pg, idt_base + vec * 16, g, sizeof(g)) ||
	    !(g[5] & 0x80)) /* P, in the type byte */
		return 0;
	/* Offset bits 15:0 at bytes 0-1, 31:16 at 6-7, 63:32 at 8-11. */
	return (uint64_t)g[0] | (uint64_t)g[1] << 8 | (uint64_t)g[6] << 16 | (uint64_t)g[7] << 24 |
	       (uint64_t)g[8] << 32 | (uint64_t)g[9] << 40 | (uint64_t)g[10] << 48 | (uint64_t)g[11] << 56;
}
