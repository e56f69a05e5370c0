/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pool regions: carve a part's data area [POOL_DATA_OFF, size) into
 * POOL_ALIGN-aligned regions, first fit, recorded in the region table.
 * Adding a region is one pool_hdr_write(): the region exists once the new
 * header copy is durable, and not at all before.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pool/internal.h"
#include "util/errmsg.h"

struct region_span {
	uint64_t off;
	uint64_t size;
};

static int span_cmp(const void *a, const void *b)
{
	const struct region_span *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* first gap of size bytes in part's data area; -ENOSPC if none */
static int region_fit(const struct pool_hdr *h, unsigned part, uint64_t size,
		      uint64_t *ret_off)
{
	struct region_span spans[POOL_MAX_REGIONS];
	uint64_t cursor = POOL_DATA_OFF, end = h->parts[part].size;
	unsigned i, n = 0;

	for (i = 0; i < h->nregions; i++) {
		if (h->regions[i].part != part)
			continue;
		spans[n].off = h->regions[i].off;
		spans[n++].size = h->regions[i].size;
	}
	if (n > 1)
		qsort(spans, n, sizeof(spans[0]), span_cmp);
	for (i = 0; i <= n; i++) {
		/* the gap before region i (or before the end of the part) */
		uint64_t gap_end = i < n ? spans[i].off : end;

		if (gap_end >= cursor && gap_end - cursor >= size) {
			*ret_off = cursor;
			return 0;
		}
		if (i < n && spans[i].off + spans[i].size > cursor)
			cursor = spans[i].off + spans[i].size;
	}
	return util_errmsg_set(ENOSPC,
			       "no free space for %llu bytes in part %u",
			       (unsigned long long)size, part);
}

static int region_args_check(const struct pool *pool, uint32_t type,
			     unsigned part, uint64_t size, const char *name)
{
	if (pool->flags & POOL_OPEN_RDONLY)
		return util_errmsg_set(EROFS, "'%s': pool is open read-only",
				       pool->parts[0].path);
	if (type == POOL_REGION_FREE)
		return util_errmsg_set(EINVAL, "region type 0 means free");
	if (part >= pool->nparts)
		return util_errmsg_set(EINVAL, "no part %u (pool has %u)", part,
				       pool->nparts);
	if (!size)
		return util_errmsg_set(EINVAL, "region size is zero");
	if (size > pool->parts[part].size)
		return util_errmsg_set(ENOSPC,
				       "region of %llu bytes is larger than "
				       "part %u",
				       (unsigned long long)size, part);
	if (name && strlen(name) > POOL_REGION_NAME_LEN)
		return util_errmsg_set(EINVAL,
				       "region name '%s' is longer than %u "
				       "bytes",
				       name, POOL_REGION_NAME_LEN);
	if (pool->hdr.nregions >= POOL_MAX_REGIONS)
		return util_errmsg_set(ENFILE,
				       "region table is full (%u regions)",
				       POOL_MAX_REGIONS);
	return 0;
}

int pool_regions_add(struct pool *pool, uint32_t type, unsigned n,
		     const unsigned *parts, const uint64_t *sizes,
		     const char *name)
{
	struct pool_region *r;
	struct pool_hdr *h;
	uint64_t off = 0, size;
	unsigned i;
	int rc;

	if (n == 0)
		return util_errmsg_set(EINVAL, "no region to add");
	for (i = 0; i < n; i++) {
		rc = region_args_check(pool, type, parts[i], sizes[i], name);
		if (rc < 0)
			return rc;
	}
	if (pool->hdr.nregions + n > POOL_MAX_REGIONS)
		return util_errmsg_set(ENFILE,
				       "region table is full (%u regions)",
				       POOL_MAX_REGIONS);
	h = malloc(sizeof(*h));
	if (!h)
		return util_errmsg_set(ENOMEM, "out of memory");
	*h = pool->hdr;
	for (i = 0; i < n; i++) {
		/* no overflow: size <= part size <= 2^56 */
		size = (sizes[i] + POOL_ALIGN - 1) & ~(POOL_ALIGN - 1);
		rc = region_fit(h, parts[i], size, &off);
		if (rc < 0) {
			free(h);
			return rc;
		}
		r = &h->regions[h->nregions++];
		memset(r, 0, sizeof(*r));
		r->type = type;
		r->part = parts[i];
		r->off = off;
		r->size = size;
		if (name) /* NUL-padded, not necessarily NUL-terminated */
			memcpy(r->name, name, strlen(name));
	}
	rc = pool_hdr_write(pool, h);
	free(h);
	return rc;
}

int pool_region_add(struct pool *pool, uint32_t type, unsigned part,
		    uint64_t size, const char *name, unsigned *ret_index)
{
	int rc = pool_regions_add(pool, type, 1, &part, &size, name);

	if (!rc && ret_index)
		*ret_index = pool->hdr.nregions - 1;
	return rc;
}

const struct pool_region *pool_region_find(const struct pool *pool,
					   uint32_t type, unsigned part)
{
	const struct pool_region *r;
	unsigned i;

	for (i = 0; i < pool->hdr.nregions; i++) {
		r = &pool->hdr.regions[i];
		if (r->type == type && r->part == part)
			return r;
	}
	return NULL;
}
