/* SPDX-License-Identifier: MIT */
#ifndef KVMPROF_CHECKSUM_H
#define KVMPROF_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/* The byte that makes the bytes of a firmware table (MP, ACPI) sum to zero. */
static inline uint8_t checksum8(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint8_t sum = 0;

	while (len--)
		sum += *b++;
	return (uint8_t)-sum;
}

#endif
