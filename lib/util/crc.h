/* SPDX-License-Identifier: BSD-3-Clause */
/* util crc: CRC-32C (Castagnoli), the checksum of every on-media header. */
#ifndef PMAD_UTIL_CRC_H
#define PMAD_UTIL_CRC_H

#include <stddef.h>
#include <stdint.h>

/* crc32c of buf, continuing from crc (start with 0) */
uint32_t util_crc32c(uint32_t crc, const void *buf, size_t len);
/* util_crc32c_3w out of line: before the first crc call, or without the
 * crc32 instruction */
uint32_t util_crc32c_3w_call(uint64_t a, uint64_t b, uint64_t c);
/* 1 once crc.c found the crc32 instruction (x86-64 with SSE4.2); set
 * before the first crc returns, never cleared */
extern int util_crc_hw_ready;

/* util_crc32c(0, {a, b, c}, 24) on a little-endian machine, without the
 * buffer (a log record's checksum, at every log append): inline, three
 * crc32 instructions once the CPU is known to have them (inline asm: the
 * caller need not be compiled for SSE4.2) */
static inline uint32_t util_crc32c_3w(uint64_t a, uint64_t b, uint64_t c)
{
#if defined(__x86_64__)
	if (__builtin_expect(
		    __atomic_load_n(&util_crc_hw_ready, __ATOMIC_RELAXED), 1)) {
		uint64_t crc = 0xffffffffu;

		__asm__("crc32q %1, %0" : "+r"(crc) : "rm"(a));
		__asm__("crc32q %1, %0" : "+r"(crc) : "rm"(b));
		__asm__("crc32q %1, %0" : "+r"(crc) : "rm"(c));
		return ~(uint32_t)crc;
	}
#endif
	return util_crc32c_3w_call(a, b, c);
}
/* the portable table version (tests compare it with the fast path) */
uint32_t util_crc32c_sw(uint32_t crc, const void *buf, size_t len);

#endif
