/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/view heap: a PMAlloc heap as JSON, from one consistent snapshot of
 * its statistics: arenas, log use, size classes with their slabs and
 * blocks, used/free bytes, the largest free extent and the page map.
 */
#include <errno.h>
#include <stdlib.h>

#include "pmalloc.h"
#include "pool/layout.h"
#include "util/errmsg.h"
#include "util/json.h"
#include "view/view.h"

static struct json_object *json_arenas(const struct pma_heap_stats *st,
				       const struct pma_arena_stats *as,
				       unsigned flags)
{
	struct json_object *arr = json_object_new_array();
	struct json_object *a;
	unsigned i;
	int err;

	for (i = 0; arr && as && i < st->narenas; i++) {
		a = json_object_new_object();
		if (!a)
			goto out_put;
		err = util_json_add_u64(a, "arena", as[i].arena);
		err |= util_json_add_u64(a, "part", as[i].part);
		err |= util_json_add_u64(a, "slabs", as[i].slabs);
		err |= view_add_size(a, "used", as[i].used_bytes, flags);
		err |= view_add_size(a, "free", as[i].free_bytes, flags);
		err |= util_json_add_u64(a, "log_records", as[i].log_records);
		err |= util_json_add_u64(a, "remote_frees", as[i].remote_frees);
		err |= view_add_size(a, "local_free", as[i].local_free_bytes,
				     flags);
		if (err || json_object_array_add(arr, a) < 0) {
			json_object_put(a);
			goto out_put;
		}
	}
	return arr;
out_put:
	json_object_put(arr);
	return NULL;
}

static struct json_object *json_classes(const struct pma_heap_stats *st,
					unsigned flags)
{
	struct json_object *arr = json_object_new_array();
	struct json_object *c;
	unsigned ord[PMA_STATS_MAX_CLASSES], n, i, j, k;
	int err;

	/* by block size (a version 11 heap's 16-byte classes have indices
	 * after the largest class) */
	n = st->nclasses < PMA_STATS_MAX_CLASSES ? st->nclasses :
						   PMA_STATS_MAX_CLASSES;
	for (k = 0; k < n; k++) {
		for (j = k; j > 0 && st->classes[ord[j - 1]].block_size >
					     st->classes[k].block_size;
		     j--)
			ord[j] = ord[j - 1];
		ord[j] = k;
	}
	for (k = 0; arr && k < n; k++) {
		i = ord[k];
		c = json_object_new_object();
		if (!c)
			goto out_put;
		err = util_json_add_u64(c, "class", i);
		err |= view_add_size(c, "block_size", st->classes[i].block_size,
				     flags);
		err |= util_json_add_u64(c, "slabs", st->classes[i].slabs);
		err |= util_json_add_u64(c, "blocks", st->classes[i].blocks);
		err |= util_json_add_u64(c, "used", st->classes[i].used);
		if (err || json_object_array_add(arr, c) < 0) {
			json_object_put(c);
			goto out_put;
		}
	}
	return arr;
out_put:
	json_object_put(arr);
	return NULL;
}

/* "numa": the heap's parts (one per NUMA node in a pool of several),
 * each with its node, arenas, size, used and free bytes and the remote
 * frees its arenas logged that the blocks' owners have not applied yet;
 * the placement counters of this open (0 in a read-only view) */
static struct json_object *json_numa(struct pma_heap *heap,
				     const struct pma_heap_stats *st,
				     const struct pma_arena_stats *as,
				     unsigned flags)
{
	struct json_object *n = json_object_new_object();
	struct json_object *arr = json_object_new_array();
	struct json_object *o;
	struct pma_heap_stats ps;
	uint64_t pending;
	unsigned p, i;
	int err = !n || !arr;

	for (p = 0; !err && p < POOL_MAX_PARTS; p++) {
		if (pma_heap_part_stats(heap, p, &ps) < 0)
			continue;
		for (i = 0, pending = 0; as && i < st->narenas; i++)
			if (as[i].part == p)
				pending += as[i].remote_frees;
		o = json_object_new_object();
		err = !o;
		err = err || util_json_add_u64(o, "part", p);
		err = err || util_json_add_i64(o, "node", ps.node);
		err = err || util_json_add_u64(o, "narenas", ps.narenas);
		err = err || view_add_size(o, "size", ps.heap_size, flags);
		err = err || view_add_size(o, "used", ps.used_bytes, flags);
		err = err || view_add_size(o, "free", ps.free_bytes, flags);
		err = err ||
		      util_json_add_u64(o, "remote_frees_pending", pending);
		if (err || json_object_array_add(arr, o) < 0) {
			json_object_put(o);
			err = 1;
		}
	}
	err = err || util_json_add_u64(n, "fallbacks", st->fallbacks);
	err = err ||
	      util_json_add_u64(n, "remote_part_frees", st->remote_part_frees);
	if (err) {
		json_object_put(arr);
		json_object_put(n);
		return NULL;
	}
	if (util_json_add_obj(n, "parts", arr) < 0) { /* arr is n's */
		json_object_put(n);
		return NULL;
	}
	return n;
}

/* the heap's and (*ret_as, st->narenas entries, to free) each arena's */
static int stats_read(struct pma_heap *heap, struct pma_heap_stats *st,
		      struct pma_arena_stats **ret_as)
{
	struct pma_arena_stats *as;
	int rc;

	rc = pma_heap_stats(heap, st);
	if (rc < 0)
		return util_errmsg_set(-rc, "heap statistics: %s",
				       pma_errormsg());
	as = calloc(st->narenas ? st->narenas : 1, sizeof(*as));
	if (!as)
		return util_errmsg_set(ENOMEM, "out of memory");
	rc = pma_heap_arena_stats(heap, as, st->narenas);
	if (rc < 0) {
		free(as);
		return util_errmsg_set(-rc, "heap statistics: %s",
				       pma_errormsg());
	}
	*ret_as = as;
	return 0;
}

static int heap_fill(struct json_object *h, const struct pma_heap_stats *st,
		     unsigned flags)
{
	int err;

	err = util_json_add_u64(h, "narenas", st->narenas);
	err |= util_json_add_u64(h, "log_capacity", st->log_cap);
	err |= util_json_add_u64(h, "log_records", st->log_records);
	err |= util_json_add_u64(h, "checkpoints", st->checkpoints);
	err |= util_json_add_u64(h, "local_checkpoints", st->local_checkpoints);
	err |= view_add_size(h, "size", st->heap_size, flags);
	err |= view_add_size(h, "used", st->used_bytes, flags);
	err |= view_add_size(h, "free", st->free_bytes, flags);
	err |= view_add_size(h, "slab_bytes", st->slab_bytes, flags);
	err |= util_json_add_u64(h, "extents", st->extents);
	err |= view_add_size(h, "extent_bytes", st->extent_bytes, flags);
	err |= view_add_size(h, "largest_free_extent", st->largest_free, flags);
	err |= util_json_add_u64(h, "layout_version", st->layout_version);
	err |= util_json_add_u64(h, "map_groups", st->map_groups);
	err |= util_json_add_u64(h, "map_groups_marked", st->map_groups_marked);
	err |= view_add_size(h, "map_group_size", st->map_group_bytes, flags);
	err |= util_json_add_u64(h, "map_summary_invalid",
				 st->map_summary_invalid);
	return err;
}

int view_heap_json(struct pma_heap *heap, unsigned flags,
		   struct json_object *obj)
{
	struct json_object *h, *classes, *arenas, *numa;
	struct pma_arena_stats *as = NULL;
	struct pma_heap_stats st;
	uint64_t ring = 0;
	int rc, err;

	rc = stats_read(heap, &st, &as);
	if (rc < 0)
		return rc;
	h = json_object_new_object();
	classes = json_classes(&st, flags);
	arenas = json_arenas(&st, as, flags);
	numa = json_numa(heap, &st, as, flags);
	free(as);
	if (!h || !classes || !arenas || !numa) {
		json_object_put(h);
		json_object_put(classes);
		json_object_put(arenas);
		json_object_put(numa);
		return util_errmsg_set(ENOMEM, "out of memory");
	}
	err = heap_fill(h, &st, flags);
	err |= util_json_add_u64(h, "parts", st.parts);
	err |= util_json_add_u64(h, "regions_per_part", pma_heap_regions(heap));
	if (pma_heap_ring_pending(heap, &ring) == 0)
		err |= util_json_add_u64(h, "ring_frees_pending", ring);
	err |= util_json_add_obj(h, "arenas", arenas);
	err |= util_json_add_obj(h, "classes", classes);
	err |= util_json_add_obj(h, "numa", numa);
	err |= util_json_add_obj(obj, "heap", h);
	return err ? util_errmsg_set(ENOMEM, "out of memory") : 0;
}

int view_heap_stat_json(struct pma_heap *heap, unsigned flags,
			struct json_object *obj)
{
	struct pma_heap_stats st;
	int rc, err;

	rc = pma_heap_stats(heap, &st);
	if (rc < 0)
		return util_errmsg_set(-rc, "heap statistics: %s",
				       pma_errormsg());
	err = view_add_size(obj, "heap_size", st.heap_size, flags);
	err |= view_add_size(obj, "used", st.used_bytes, flags);
	err |= view_add_size(obj, "free", st.free_bytes, flags);
	err |= view_add_size(obj, "largest_free_extent", st.largest_free,
			     flags);
	err |= util_json_add_u64(obj, "log_records", st.log_records);
	err |= util_json_add_u64(obj, "log_capacity",
				 (uint64_t)st.log_cap * st.narenas);
	err |= util_json_add_u64(obj, "narenas", st.narenas);
	err |= util_json_add_u64(obj, "checkpoints", st.checkpoints);
	/* automatic morphing (layout 9+, on by default) */
	err |= util_json_add_u64(obj, "slabs_morphed", st.slabs_morphed);
	err |= util_json_add_u64(obj, "mixed_slabs", st.mixed_slabs);
	return err ? util_errmsg_set(ENOMEM, "out of memory") : 0;
}
