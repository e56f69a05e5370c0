/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/view pool: an open pool's header, persistence granularity, parts and
 * regions as JSON (what `pmactl inspect` shows). Part paths are absolute:
 * part 0 is opened by the path a user typed and the others by the path
 * stored at create.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool/fsck.h"
#include "pool/pool.h"
#include "util/errmsg.h"
#include "util/json.h"
#include "util/size.h"
#include "view/view.h"

int view_add_size(struct json_object *obj, const char *key, uint64_t size,
		  unsigned flags)
{
	char buf[UTIL_SIZE_BUF];

	if (flags & VIEW_HUMAN)
		return util_json_add_str(
			obj, key, util_size_format(size, buf, sizeof(buf)));
	return util_json_add_u64(obj, key, size);
}

static const char *region_type_name(uint32_t type)
{
	switch (type) {
	case POOL_REGION_FREE:
		return "free";
	case POOL_REGION_PMALLOC:
		return "pmalloc";
	case POOL_REGION_HDPM:
		return "hdpm";
	case POOL_REGION_USER:
		return "user";
	default:
		return "unknown";
	}
}

static uint64_t pool_total_size(const struct pool_hdr *hdr)
{
	uint64_t total = 0;
	uint32_t i;

	for (i = 0; i < hdr->nparts && i < POOL_MAX_PARTS; i++)
		total += hdr->parts[i].size;
	return total;
}

static const char *part_path(const struct pool *pool, unsigned i,
			     char buf[PATH_MAX])
{
	const char *path = pool_part_path(pool, i);

	return realpath(path, buf) ? buf : path;
}

static int json_header(const struct pool *pool, unsigned flags,
		       struct json_object *root)
{
	const struct pool_hdr *hdr = pool_header(pool);
	struct json_object *feat = json_object_new_object();
	char uuid[37], version[16];
	int err = 0; /* each helper returns 0 or -ENOMEM: OR them */

	if (!feat)
		return -ENOMEM;
	pool_uuid_format(hdr->uuid, uuid);
	snprintf(version, sizeof(version), "%u.%u", hdr->major, hdr->minor);
	err |= util_json_add_str(root, "uuid", uuid);
	err |= util_json_add_str(root, "version", version);
	err |= util_json_add_u64(root, "major", hdr->major);
	err |= util_json_add_u64(root, "minor", hdr->minor);
	err |= util_json_add_u64(root, "generation", hdr->generation);
	err |= util_json_add_str(root, "header_copy",
				 pool_header_copy(pool) ? "B" : "A");
	err |= util_json_add_bool(root, "header_other_valid",
				  pool_header_other_valid(pool));
	err |= util_json_add_bool(root, "header_damaged",
				  pool_header_damage(pool) != NULL);
	if (pool_header_damage(pool))
		err |= util_json_add_str(root, "header_damage",
					 pool_header_damage(pool));
	err |= util_json_add_u64(feat, "compat", hdr->feat_compat);
	err |= util_json_add_u64(feat, "incompat", hdr->feat_incompat);
	err |= util_json_add_u64(feat, "ro_compat", hdr->feat_ro_compat);
	err |= util_json_add_obj(root, "features", feat);
	err |= util_json_add_u64(root, "create_time", hdr->create_time);
	err |= util_json_add_str(root, "granularity",
				 pm_granularity_name(pool_granularity(pool)));
	err |= view_add_size(root, "size", pool_total_size(hdr), flags);
	err |= util_json_add_u64(root, "nparts", hdr->nparts);
	return err ? -ENOMEM : 0;
}

static struct json_object *json_part(const struct pool *pool, unsigned i,
				     unsigned flags)
{
	const struct pool_part_entry *e = &pool_header(pool)->parts[i];
	struct json_object *part = json_object_new_object();
	char uuid[37], path[PATH_MAX];
	int err = 0;

	if (!part)
		return NULL;
	pool_uuid_format(e->uuid, uuid);
	err |= util_json_add_u64(part, "index", i);
	err |= util_json_add_str(part, "path", part_path(pool, i, path));
	err |= util_json_add_str(part, "uuid", uuid);
	err |= view_add_size(part, "size", e->size, flags);
	if (e->node >= 0) /* unknown values are omitted */
		err |= util_json_add_i64(part, "numa_node", e->node);
	err |= util_json_add_bool(part, "devdax",
				  !!(e->flags & POOL_PART_DEVDAX));
	if (err) {
		json_object_put(part);
		return NULL;
	}
	return part;
}

static struct json_object *json_region(const struct pool_region *r, unsigned i,
				       unsigned flags)
{
	struct json_object *region = json_object_new_object();
	char name[POOL_REGION_NAME_LEN + 1];
	int err = 0;

	if (!region)
		return NULL;
	memcpy(name, r->name, POOL_REGION_NAME_LEN);
	name[POOL_REGION_NAME_LEN] = '\0';
	err |= util_json_add_u64(region, "index", i);
	err |= util_json_add_str(region, "type", region_type_name(r->type));
	err |= util_json_add_u64(region, "part", r->part);
	err |= util_json_add_hex(region, "offset", r->off);
	err |= view_add_size(region, "size", r->size, flags);
	if (name[0])
		err |= util_json_add_str(region, "name", name);
	if (err) {
		json_object_put(region);
		return NULL;
	}
	return region;
}

/* append items 0..count-1 made by one of the two builders above */
static int json_array(const struct pool *pool, int regions, unsigned flags,
		      struct json_object *root)
{
	const struct pool_hdr *hdr = pool_header(pool);
	unsigned i, count = regions ? hdr->nregions : pool_part_count(pool);
	struct json_object *arr = json_object_new_array();
	struct json_object *item;

	if (!arr)
		return -ENOMEM;
	for (i = 0; i < count && (!regions || i < POOL_MAX_REGIONS); i++) {
		item = regions ? json_region(&hdr->regions[i], i, flags) :
				 json_part(pool, i, flags);
		if (!item || json_object_array_add(arr, item) < 0) {
			json_object_put(item);
			json_object_put(arr);
			return -ENOMEM;
		}
	}
	return util_json_add_obj(root, regions ? "regions" : "parts", arr);
}

int view_pool_json(const struct pool *pool, unsigned flags,
		   struct json_object *obj)
{
	if (json_header(pool, flags, obj) < 0 ||
	    json_array(pool, 0, flags, obj) < 0 ||
	    json_array(pool, 1, flags, obj) < 0)
		return util_errmsg_set(ENOMEM, "out of memory");
	return 0;
}

int view_fsck_finding_json(const struct pool_fsck_finding *f,
			   struct json_object *arr)
{
	struct json_object *o = json_object_new_object();
	int err;

	if (!o)
		return -ENOMEM;
	err = util_json_add_str(o, "code", f->code);
	err |= util_json_add_str(o, "severity",
				 pool_fsck_severity_name(f->severity));
	err |= util_json_add_u64(o, "part", f->part);
	err |= util_json_add_hex(o, "offset", f->off);
	err |= util_json_add_str(o, "message", f->message);
	if (err || json_object_array_add(arr, o) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	return 0;
}
