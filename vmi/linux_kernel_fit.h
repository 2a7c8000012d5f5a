/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_VMI_LINUX_KERNEL_FIT_H
#define KVMPROF_VMI_LINUX_KERNEL_FIT_H

/*
 * Whether kernel symbols taken inside a Linux guest (its `kvmprof-agent
 * export`) belong to the kernel the guest runs now. Kernel address
 * randomization (KASLR) moves the kernel at every boot, so an export of an
 * earlier boot points at nothing: its __per_cpu_offset and current_task are
 * elsewhere, and no process gets a name. The test needs nothing but the
 * CPU's own pointers into the running kernel's text, the IDT's exception
 * handlers: each must start a text symbol of the export. A kernel moved by
 * a multiple of 2 MiB (KASLR's alignment) puts them between the export's
 * symbols or outside its text; the same boot puts every one on its symbol.
 */

#include <stdbool.h>
#include <stdint.h>

#include "guest_walk.h"
#include "vmi_mem.h"

/* Whether addr is where one of the export's text symbols starts. */
typedef bool (*linux_symbol_start_fn)(uint64_t addr, void *ctx);

enum linux_kernel_fit {
	LINUX_KERNEL_FITS,     /* every handler read starts a symbol */
	LINUX_KERNEL_MOVED,    /* one does not: *vec and *handler say which */
	LINUX_KERNEL_UNKNOWN,  /* no handler could be read (no IDT yet, unreadable memory) */
};

/*
 * Checks the handlers of #DE, #BP, #UD, #GP and #PF in the IDT at idt_base
 * (IDTR's base and limit, guest-virtual, read through pg). On
 * LINUX_KERNEL_MOVED, *vec and *handler are the first handler that starts
 * no symbol; on LINUX_KERNEL_FITS, the last one checked.
 */
enum linux_kernel_fit linux_kernel_fit(const struct vmi_mem *mem, const struct guest_paging *pg, uint64_t idt_base,
				       uint16_t idt_limit, linux_symbol_start_fn is_start, void *ctx,
				       unsigned int *vec, uint64_t *handler);

/*
 * The function Linux names the handler of exception vector vec, for era 0
 * (5.8 and later, asm_exc_page_fault) or era 1 (before, page_fault); NULL
 * for a vector linux_kernel_fit does not check or an era past 1.
 */
const char *linux_kernel_fit_handler_name(unsigned int vec, unsigned int era);

#endif
