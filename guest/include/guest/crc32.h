/* SPDX-License-Identifier: MIT */
/*
 * CRC-32 as zlib computes it (polynomial 0xEDB88320 reflected, initial and
 * final XOR 0xffffffff), for the sample-file records the bundled guest's
 * agent writes (include/kvmprof/sample_format.h); the host checks them with
 * zlib's crc32(). Start with crc = 0 and chain calls over consecutive
 * pieces: crc32_update(crc32_update(0, a, n), b, m) == CRC of a then b.
 */
#ifndef GUEST_CRC32_H
#define GUEST_CRC32_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32_update(uint32_t crc, const void *buf, size_t len);

#endif
