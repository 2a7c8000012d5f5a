// SPDX-License-Identifier: MIT
#include "linux_kernel_fit.h"

#include <stddef.h>

#include "guest_idt.h"

/*
 * Exceptions every x86-64 Linux installs a handler of its own for, each
 * its own function (asm_exc_divide_error, ..., asm_exc_page_fault since
 * 5.8; divide_error, ..., page_fault before). External interrupt vectors
 * are left out: they enter through stubs inside one symbol.
 */
static const unsigned int fit_vectors[] = { 0, 3, 6, 13, 14 };

enum linux_kernel_fit linux_kernel_fit(const struct vmi_mem *mem, const struct guest_paging *pg, uint64_t idt_base,
				       uint16_t idt_limit, linux_symbol_start_fn is_start, void *ctx,
				       unsigned int *vec, uint64_t *handler)
{
	enum linux_kernel_fit fit = LINUX_KERNEL_UNKNOWN;

	for (size_t i = 0; i < sizeof(fit_vectors) / sizeof(fit_vectors[0]); i++) {
		uint64_t h = guest_idt_handler(mem, pg, idt_base, idt_limit, fit_vectors[i]);

		if (!h)
			continue;
		*vec = fit_vectors[i];
		*handler = h;
		if (!is_start(h, ctx))
			return LINUX_KERNEL_MOVED;
		fit = LINUX_KERNEL_FITS;
	}
	return fit;
}
