/* SPDX-License-Identifier: BSD-3-Clause */
/* util crc: CRC-32C (Castagnoli), the checksum of every on-media header. */
#ifndef PMAD_UTIL_CRC_H
#define PMAD_UTIL_CRC_H

#include <stddef.h>
#include <stdint.h>

/* crc32c of buf, continuing from crc (start with 0) */
uint32_t util_crc32c(uint32_t crc, const void *buf, size_t len);
/* util_crc32c(0, {a, b, c}, 24) on a little-endian machine, without the
 * buffer (a log record's checksum) */
uint32_t util_crc32c_3w(uint64_t a, uint64_t b, uint64_t c);
/* the portable table version (tests compare it with the fast path) */
uint32_t util_crc32c_sw(uint32_t crc, const void *buf, size_t len);

#endif
