/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz-pool-hdr: libFuzzer target for the raw header checks of lib/pool.
 * Every input goes through pool_hdr_check() and pool_part_hdr_check();
 * an input they accept is then walked field by field (UUIDs formatted,
 * every part and region read) so that "valid" really means safe to use.
 * Random bytes rarely carry a right CRC, so each input is also checked
 * once more with its checksum fixed up, to reach the table checks.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pool/internal.h"
#include "pool/layout.h"
#include "pool/pool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* a checked pool header: its tables must be within bounds */
static void inspect_hdr(const uint8_t *data)
{
	struct pool_hdr *h = malloc(sizeof(*h));
	volatile uint64_t sink = 0;
	char uuid[37];
	unsigned i;

	if (!h)
		abort();
	memcpy(h, data, sizeof(*h));
	pool_uuid_format(h->uuid, uuid);
	if (strlen(uuid) != 36 || h->nparts < 1 || h->nparts > POOL_MAX_PARTS ||
	    h->nregions > POOL_MAX_REGIONS)
		abort();
	for (i = 0; i < h->nparts; i++) {
		pool_uuid_format(h->parts[i].uuid, uuid);
		sink += strlen(h->parts[i].path_hint) + h->parts[i].size;
	}
	for (i = 0; i < h->nregions; i++) {
		const struct pool_region *r = &h->regions[i];

		if (r->part >= h->nparts || r->off < POOL_DATA_OFF ||
		    r->off > h->parts[r->part].size ||
		    r->size > h->parts[r->part].size - r->off)
			abort();
		sink += pool_off_make(r->part, r->off);
	}
	(void)sink;
	free(h);
}

/* a checked part header */
static void inspect_part_hdr(const uint8_t *data)
{
	struct pool_part_hdr ph;
	char uuid[37];

	memcpy(&ph, data, sizeof(ph));
	pool_uuid_format(ph.pool_uuid, uuid);
	pool_uuid_format(ph.part_uuid, uuid);
	if (ph.part_index >= ph.nparts || ph.size < POOL_PART_MIN_SIZE)
		abort();
}

/* the same checks on a copy whose checksums are made to match */
static void check_resealed(const uint8_t *data, size_t size)
{
	struct pool_part_hdr ph;
	struct pool_hdr *h;

	if (size >= sizeof(*h)) {
		h = malloc(sizeof(*h));
		if (!h)
			abort();
		memcpy(h, data, sizeof(*h));
		h->checksum = pool_hdr_checksum(h);
		if (pool_hdr_check(h, sizeof(*h)) == 0)
			inspect_hdr((const uint8_t *)h);
		free(h);
	}
	if (size >= sizeof(ph)) {
		memcpy(&ph, data, sizeof(ph));
		ph.checksum = pool_part_hdr_checksum(&ph);
		if (pool_part_hdr_check(&ph, sizeof(ph)) == 0)
			inspect_part_hdr((const uint8_t *)&ph);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (pool_hdr_check(data, size) == 0)
		inspect_hdr(data);
	if (pool_part_hdr_check(data, size) == 0)
		inspect_part_hdr(data);
	check_resealed(data, size);
	/* the error message must always be a terminated string */
	if (strlen(pool_errormsg()) >= 4096)
		abort();
	return 0;
}
