/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_GUEST_MEM_H
#define KVMPROF_GUEST_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "vmi_mem.h"

/*
 * Guest RAM as the host sees it: one contiguous mapping of guest-physical
 * [0, size). The machine owns it; guest introspection (vmi/) reads it
 * through guest_mem_vmi. Every access goes through a bounds check
 * (vmi_mem_contains) that refuses ranges that leave guest RAM.
 */
struct guest_mem {
	uint8_t *host;
	uint64_t size;
};

/* The same RAM as vmi's readers take it: mapped here, so read with plain loads. */
static inline struct vmi_mem guest_mem_vmi(const struct guest_mem *mem)
{
	return vmi_mem_mapped(mem->host, mem->size);
}

int guest_mem_alloc(struct guest_mem *mem, uint64_t size);
void guest_mem_free(struct guest_mem *mem);

/* Host pointer for guest-physical [gpa, gpa + len), or NULL if any of it lies outside RAM. */
void *guest_mem_ptr(const struct guest_mem *mem, uint64_t gpa, uint64_t len);

/*
 * Copies out of guest memory; -EFAULT if the range lies outside RAM. The
 * guest may be writing the same bytes from another vCPU meanwhile: callers
 * get some mix of old and new bytes and must validate what they read.
 */
int guest_mem_read(const struct guest_mem *mem, uint64_t gpa, void *dst, uint64_t len);

/* Copies into guest memory; -EFAULT if the range lies outside RAM. */
int guest_mem_write(const struct guest_mem *mem, uint64_t gpa, const void *src, uint64_t len);

#endif
