/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util crc: CRC-32C (Castagnoli, reflected polynomial 0x82F63B78). x86-64
 * CPUs with SSE4.2 compute it with the crc32 instruction, 8 bytes a step
 * (log records checksum every append); elsewhere a table, one byte a step.
 */
#include <pthread.h>
#include <string.h>

#include "util/crc.h"

#define CRC32C_POLY 0x82F63B78u

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static int crc_inited; /* crc_init has run (atomic) */
int util_crc_hw_ready; /* the crc32 instruction is there (crc.h) */

static void crc_init(void)
{
	uint32_t i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		crc_table[i] = c;
	}
#if defined(__x86_64__)
	__atomic_store_n(&util_crc_hw_ready, __builtin_cpu_supports("sse4.2"),
			 __ATOMIC_RELAXED);
#endif
}

/* crc is the running (inverted) value */
static uint32_t crc32c_sw(uint32_t crc, const unsigned char *p, size_t len)
{
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t crc, const unsigned char *p, size_t len)
{
	uint64_t c = crc, v;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&v, p, sizeof(v));
		c = __builtin_ia32_crc32di(c, v);
	}
	crc = (uint32_t)c;
	while (len--)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return crc;
}
#else
static uint32_t crc32c_hw(uint32_t crc, const unsigned char *p, size_t len)
{
	return crc32c_sw(crc, p, len);
}
#endif

/* checked without a call once initialised: log appends checksum every
 * record */
static inline void crc_ready(void)
{
	if (__builtin_expect(!__atomic_load_n(&crc_inited, __ATOMIC_ACQUIRE),
			     0)) {
		pthread_once(&crc_once, crc_init);
		__atomic_store_n(&crc_inited, 1, __ATOMIC_RELEASE);
	}
}

uint32_t util_crc32c(uint32_t crc, const void *buf, size_t len)
{
	crc_ready();
	if (__atomic_load_n(&util_crc_hw_ready, __ATOMIC_RELAXED))
		return ~crc32c_hw(~crc, buf, len);
	return ~crc32c_sw(~crc, buf, len);
}

/* util_crc32c_3w's out-of-line case (first call, or no crc32 instruction;
 * the hardware case is inline in crc.h) */
uint32_t util_crc32c_3w_call(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t buf[3] = { a, b, c };

	return util_crc32c(0, buf, sizeof(buf));
}

/* the table implementation, for tests that compare the two */
uint32_t util_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc_init);
	return ~crc32c_sw(~crc, buf, len);
}
