/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pool header: validation of raw part and pool headers (trusting no
 * field: these parse media and fuzzer input), checksums, and the
 * crash-safe double-header update. Check order is fixed: length, magic,
 * version, checksum, features, then the tables (a header from a newer
 * major version may checksum differently, so version comes first).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <uuid/uuid.h>

#include "pool/internal.h"
#include "util/crc.h"
#include "util/errmsg.h"

/* largest part: its byte offsets must fit below POOL_OFF_PART_SHIFT */
#define POOL_PART_MAX_SIZE (POOL_OFF_MASK + 1)

uint32_t pool_hdr_checksum(const struct pool_hdr *hdr)
{
	return util_crc32c(0, hdr, offsetof(struct pool_hdr, checksum));
}

uint32_t pool_part_hdr_checksum(const struct pool_part_hdr *phdr)
{
	return util_crc32c(0, phdr, offsetof(struct pool_part_hdr, checksum));
}

int pool_uuid_cmp(const uint8_t a[16], const uint8_t b[16])
{
	return memcmp(a, b, 16);
}

void pool_uuid_format(const uint8_t uuid[16], char out[37])
{
	uuid_unparse_lower(uuid, out);
}

const char *pool_errormsg(void)
{
	return util_errmsg();
}

/* a part size is legal: aligned, room for headers + data, offset-able */
static int part_size_check(uint64_t size, const char *what)
{
	if (size < POOL_PART_MIN_SIZE || size % POOL_ALIGN ||
	    size > POOL_PART_MAX_SIZE)
		return util_errmsg_set(EBADMSG,
				       "%s: bad part size %llu (must be a "
				       "multiple of %llu, %llu..%llu)",
				       what, (unsigned long long)size,
				       POOL_ALIGN, POOL_PART_MIN_SIZE,
				       (unsigned long long)POOL_PART_MAX_SIZE);
	return 0;
}

int pool_part_hdr_check(const void *buf, size_t len)
{
	struct pool_part_hdr h;

	if (len < sizeof(h))
		return util_errmsg_set(EINVAL,
				       "not a pmad pool (%zu bytes, too short "
				       "for a part header)",
				       len);
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, POOL_PART_MAGIC, POOL_MAGIC_LEN) != 0)
		return util_errmsg_set(
			EINVAL, "not a pmad pool (bad part header magic)");
	if (h.major != POOL_FORMAT_MAJOR)
		return util_errmsg_set(EPROTONOSUPPORT,
				       "pool format version %u.%u is not "
				       "supported (this build reads %u.x)",
				       h.major, h.minor, POOL_FORMAT_MAJOR);
	if (h.checksum != pool_part_hdr_checksum(&h))
		return util_errmsg_set(EBADMSG,
				       "part header checksum mismatch");
	if (h.nparts < 1 || h.nparts > POOL_MAX_PARTS)
		return util_errmsg_set(EBADMSG,
				       "part header names %u parts (1..%u "
				       "allowed)",
				       h.nparts, POOL_MAX_PARTS);
	if (h.part_index >= h.nparts)
		return util_errmsg_set(EBADMSG,
				       "part header index %u is not below its "
				       "part count %u",
				       h.part_index, h.nparts);
	return part_size_check(h.size, "part header");
}

/* the part table: sizes and NUL-terminated path hints */
static int hdr_parts_check(const struct pool_hdr *h)
{
	const struct pool_part_entry *e;
	char what[32];
	unsigned i;
	int rc;

	for (i = 0; i < h->nparts; i++) {
		e = &h->parts[i];
		snprintf(what, sizeof(what), "part table entry %u", i);
		rc = part_size_check(e->size, what);
		if (rc < 0)
			return rc;
		if (!memchr(e->path_hint, '\0', sizeof(e->path_hint)))
			return util_errmsg_set(EBADMSG,
					       "%s: path hint is not "
					       "NUL-terminated",
					       what);
	}
	return 0;
}

/* region i lies inside the data area of an existing part */
static int hdr_region_bounds(const struct pool_hdr *h, unsigned i)
{
	const struct pool_region *r = &h->regions[i];
	uint64_t part_size;

	if (r->type == POOL_REGION_FREE)
		return util_errmsg_set(EBADMSG,
				       "region %u is free but below the "
				       "region count %u",
				       i, h->nregions);
	if (r->part >= h->nparts)
		return util_errmsg_set(EBADMSG, "region %u names part %u of %u",
				       i, r->part, h->nparts);
	part_size = h->parts[r->part].size;
	if (r->off < POOL_DATA_OFF || r->off % POOL_ALIGN || !r->size ||
	    r->size % POOL_ALIGN || r->off > part_size ||
	    r->size > part_size - r->off)
		return util_errmsg_set(EBADMSG,
				       "region %u [0x%llx, +0x%llx) is outside "
				       "the data area of part %u (size 0x%llx)",
				       i, (unsigned long long)r->off,
				       (unsigned long long)r->size, r->part,
				       (unsigned long long)part_size);
	return 0;
}

/* the region table: bounds, then no two regions of a part overlap */
static int hdr_regions_check(const struct pool_hdr *h)
{
	const struct pool_region *a, *b;
	unsigned i, j;
	int rc;

	for (i = 0; i < h->nregions; i++) {
		rc = hdr_region_bounds(h, i);
		if (rc < 0)
			return rc;
	}
	for (i = 0; i < h->nregions; i++) {
		a = &h->regions[i];
		for (j = i + 1; j < h->nregions; j++) {
			b = &h->regions[j];
			/* bounds checked above: off + size cannot wrap */
			if (a->part == b->part && a->off < b->off + b->size &&
			    b->off < a->off + a->size)
				return util_errmsg_set(EBADMSG,
						       "regions %u and %u "
						       "overlap",
						       i, j);
		}
	}
	return 0;
}

/* fields that only mean something once the checksum matched */
static int hdr_tables_check(const struct pool_hdr *h)
{
	int rc;

	if (h->feat_incompat & ~POOL_FEAT_INCOMPAT_KNOWN)
		return util_errmsg_set(
			EPROTONOSUPPORT,
			"pool uses unknown incompatible "
			"features 0x%llx",
			(unsigned long long)(h->feat_incompat &
					     ~POOL_FEAT_INCOMPAT_KNOWN));
	if (h->hdr_size != POOL_HDR_SIZE)
		return util_errmsg_set(EBADMSG,
				       "pool header size %u, expected %llu",
				       h->hdr_size, POOL_HDR_SIZE);
	if (h->nparts < 1 || h->nparts > POOL_MAX_PARTS)
		return util_errmsg_set(EBADMSG,
				       "pool header names %u parts (1..%u "
				       "allowed)",
				       h->nparts, POOL_MAX_PARTS);
	if (h->nregions > POOL_MAX_REGIONS)
		return util_errmsg_set(EBADMSG,
				       "pool header names %u regions (at most "
				       "%u)",
				       h->nregions, POOL_MAX_REGIONS);
	rc = hdr_parts_check(h);
	if (rc < 0)
		return rc;
	return hdr_regions_check(h);
}

int pool_hdr_check(const void *buf, size_t len)
{
	/* a copy: buf may be unaligned and must not be trusted twice */
	struct pool_hdr h;

	if (len < sizeof(h))
		return util_errmsg_set(EINVAL,
				       "not a pmad pool (%zu bytes, too short "
				       "for a pool header)",
				       len);
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, POOL_HDR_MAGIC, POOL_MAGIC_LEN) != 0)
		return util_errmsg_set(
			EINVAL, "not a pmad pool (bad pool header magic)");
	if (h.major != POOL_FORMAT_MAJOR)
		return util_errmsg_set(EPROTONOSUPPORT,
				       "pool format version %u.%u is not "
				       "supported (this build reads %u.x)",
				       h.major, h.minor, POOL_FORMAT_MAJOR);
	if (h.checksum != pool_hdr_checksum(&h))
		return util_errmsg_set(EBADMSG,
				       "pool header checksum mismatch");
	return hdr_tables_check(&h);
}

#define GEN_OFF offsetof(struct pool_hdr, generation)
#define GEN_END (GEN_OFF + sizeof(uint64_t))

/* the 8-byte word at off of the copy at dst: one store, durable */
static void word_store(struct pm_map *map, char *dst, size_t off,
		       const struct pool_hdr *h)
{
	uint64_t *w = (uint64_t *)(dst + off), v;

	memcpy(&v, (const char *)h + off, sizeof(v));
	__atomic_store_n(w, v, __ATOMIC_RELAXED);
	pm_persist(map, w, sizeof(v));
}

/*
 * The generation word goes first with the seal last, and last with the
 * seal first: a copy a crash tore in an update then holds the other
 * copy's seal and a generation one away from the other copy's (layout.h),
 * which pool_fsck tells from damage at rest (pool-hdr-torn-update).
 */
void pool_hdr_copy_write(struct pm_map *map, unsigned copy,
			 const struct pool_hdr *h, enum pool_hdr_seal order)
{
	char *dst = (char *)pm_map_addr(map) + pool_hdr_copy_off(copy);
	const char *src = (const char *)h;

	if (order == POOL_HDR_SEAL_FIRST) {
		/* a torn body then carries the seal of the complete copy */
		word_store(map, dst, POOL_HDR_SEAL_OFF, h);
		memcpy(dst, src, GEN_OFF);
		memcpy(dst + GEN_END, src + GEN_END,
		       POOL_HDR_SEAL_OFF - GEN_END);
		pm_persist(map, dst, POOL_HDR_SEAL_OFF);
		word_store(map, dst, GEN_OFF, h);
		return;
	}
	word_store(map, dst, GEN_OFF, h);
	memcpy(dst, src, POOL_HDR_SEAL_OFF);
	pm_persist(map, dst, POOL_HDR_SEAL_OFF);
	/* the body is durable: one 8-byte store makes the copy valid */
	word_store(map, dst, POOL_HDR_SEAL_OFF, h);
}

int pool_hdr_sync(struct pool *pool)
{
	if (pool->flags & POOL_OPEN_RDONLY)
		return util_errmsg_set(EROFS, "'%s': pool is open read-only",
				       pool->parts[0].path);
	pool_hdr_copy_write(pool->parts[0].map, pool->hdr_copy ^ 1, &pool->hdr,
			    POOL_HDR_SEAL_FIRST);
	pool->other_differs = 0;
	return 0;
}

int pool_hdr_write(struct pool *pool, const struct pool_hdr *new_hdr)
{
	struct pm_map *map = pool->parts[0].map;
	unsigned copy = pool->hdr_copy ^ 1;
	struct pool_hdr h;
	int rc;

	if (pool->flags & POOL_OPEN_RDONLY)
		return util_errmsg_set(EROFS, "'%s': pool is open read-only",
				       pool->parts[0].path);
	if (pool->flags & POOL_OPEN_SHARED)
		return util_errmsg_set(EBUSY,
				       "'%s': pool is open shared; its header "
				       "changes only with the pool open alone",
				       pool->parts[0].path);
	/* the protocol needs two equal copies to start from */
	if (pool->other_differs) {
		rc = pool_hdr_sync(pool);
		if (rc < 0)
			return rc;
	}
	h = *new_hdr;
	h.generation = pool->hdr.generation + 1;
	h.checksum = pool_hdr_checksum(&h);
	/* the non-current copy is the commit point ... */
	pool_hdr_copy_write(map, copy, &h, POOL_HDR_SEAL_LAST);
	/* ... then the old current copy follows, so both are equal again */
	pool_hdr_copy_write(map, copy ^ 1, &h, POOL_HDR_SEAL_FIRST);
	pool->hdr = h;
	pool->hdr_copy = copy;
	pool->other_valid = 1;
	return 0;
}

/* invalid copy d held the state of valid copy v: they differ only in the
 * body or only in the seal (layout.h), or d was never written */
int pool_hdr_same_state(const struct pool_hdr *d, const struct pool_hdr *v)
{
	const char *a = (const char *)d, *b = (const char *)v;
	size_t i;

	if (!memcmp(a, b, POOL_HDR_SEAL_OFF) ||
	    !memcmp(a + POOL_HDR_SEAL_OFF, b + POOL_HDR_SEAL_OFF,
		    POOL_HDR_SEAL_SIZE))
		return 1;
	for (i = 0; i < sizeof(*d); i++)
		if (a[i])
			return 0;
	return 1; /* all zero: create stopped before writing it */
}
