/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_GUEST_MEM_H
#define KVMPROF_GUEST_MEM_H

#include <stddef.h>
#include <stdint.h>

/*
 * Guest RAM as the host sees it: one contiguous mapping of guest-physical
 * [0, size). Every access the VMM makes on the guest's behalf goes through
 * guest_mem_ptr(), which refuses ranges that leave guest RAM.
 */
struct guest_mem {
	uint8_t *host;
	uint64_t size;
};

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
