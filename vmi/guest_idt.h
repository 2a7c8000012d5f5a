/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_VMI_GUEST_IDT_H
#define KVMPROF_VMI_GUEST_IDT_H

/* The guest's interrupt descriptor table, read through the page walker. */

#include <stdint.h>

#include "guest_walk.h"
#include "vmi_mem.h"

/*
 * The handler address of vector vec's 64-bit gate in the IDT at idt_base
 * (IDTR's base, guest-virtual) with IDTR's limit; 0 if the gate lies past
 * the limit, is not present or cannot be read.
 */
uint64_t guest_idt_handler(const struct vmi_mem *mem, const struct guest_paging *pg, uint64_t idt_base,
			   uint16_t idt_limit, unsigned int vec);

#endif
