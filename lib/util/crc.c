/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util crc: CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), table
 * driven, one byte per step. Headers are small; this is not a hot path.
 */
#include <pthread.h>

#include "util/crc.h"

#define CRC32C_POLY 0x82F63B78u

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_table_init(void)
{
	uint32_t i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		crc_table[i] = c;
	}
}

uint32_t util_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	pthread_once(&crc_once, crc_table_init);
	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}
