// SPDX-License-Identifier: MIT
#include "linux_kernel_fit.h"

#include <stddef.h>

#include "guest_idt.h"

/*
 * Exceptions every x86-64 Linux installs a handler of its own for, each
 * its own function, named since 5.8 and before. External interrupt vectors
 * are left out: they enter through stubs inside one symbol.
 */
static const struct {
	unsigned int vec;
	const char *name[2];
} fit_handlers[] = {
	{ 0, { "asm_exc_divide_error", "divide_error" } },
	{ 3, { "asm_exc_int3", "int3" } },
	{ 6, { "asm_exc_invalid_op", "invalid_op" } },
	{ 13, { "asm_exc_general_protection", "general_protection" } },
	{ 14, { "asm_exc_page_fault", "page_fault" } },
};

#define FIT_NHANDLERS (sizeof(fit_handlers) / sizeof(fit_handlers[0]))

const char *linux_kernel_fit_handler_name(unsigned int vec, unsigned int era)
{
	for (size_t i = 0; i < FIT_NHANDLERS; i++)
		if (fit_handlers[i].vec == vec)
			return era < 2 ? fit_handlers[i].name[era] : NULL;
	return NULL;
}

enum linux_kernel_fit linux_kernel_fit(const struct vmi_mem *mem, const struct guest_paging *pg, uint64_t idt_base,
				       uint16_t idt_limit, linux_symbol_start_fn is_start, void *ctx,
				       unsigned int *vec, uint64_t *handler)
{
	enum linux_kernel_fit fit = LINUX_KERNEL_UNKNOWN;

	for (size_t i = 0; i < FIT_NHANDLERS; i++) {
		uint64_t h = guest_idt_handler(mem, pg, idt_base, idt_limit, fit_handlers[i].vec);

		if (!h)
			continue;
		*vec = fit_handlers[i].vec;
		*handler = h;
		if (!is_start(h, ctx))
			return LINUX_KERNEL_MOVED;
		fit = LINUX_KERNEL_FITS;
	}
	return fit;
}
