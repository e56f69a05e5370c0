/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/view log: the bookkeeping-log records of a heap not yet
 * checkpointed, as the document `pmactl log --json` prints (count,
 * heap_parts, records[]), built by pmactl for a heap it opened read-only
 * and by pmad for a pool it holds (pmactl-log(1)).
 */
#include <errno.h>
#include <string.h>

#include "pmalloc.h"
#include "util/errmsg.h"
#include "util/json.h"
#include "view/view.h"

struct walk {
	long part, arena; /* arena -1: all */
	unsigned flags;
	struct json_object *arr;
	uint64_t count;
};

/* a record that names a slab (its class is shown) */
static int is_slab_op(const struct pma_log_entry *e)
{
	return !strcmp(e->type, "slab_new") || !strcmp(e->type, "slab_free");
}

static int walk_entry(const struct pma_log_entry *e, void *arg)
{
	struct walk *w = arg;
	struct json_object *o;
	int err;

	if (w->arena >= 0 &&
	    ((long)e->arena != w->arena || (long)e->part != w->part))
		return 0;
	o = json_object_new_object();
	if (!o)
		return -ENOMEM;
	err = util_json_add_u64(o, "arena", e->arena);
	err |= util_json_add_u64(o, "part", e->part);
	err |= util_json_add_u64(o, "index", e->index);
	err |= util_json_add_str(o, "type", e->type);
	err |= util_json_add_hex(o, "offset", e->off);
	if (e->dest)
		err |= util_json_add_hex(o, "dest", e->dest);
	if (e->size)
		err |= view_add_size(o, "size", e->size, w->flags);
	if (is_slab_op(e))
		err |= util_json_add_u64(o, "class", e->cls);
	if (err || json_object_array_add(w->arr, o) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	w->count++;
	return 0;
}

/* arena (of part) must be one of this heap's */
static int arena_check(struct pma_heap *heap, long part, long arena,
		       unsigned *ret_parts)
{
	struct pma_heap_stats st = { 0 }, ps = { 0 };
	int rc = pma_heap_stats(heap, &st);

	if (rc < 0)
		return rc;
	*ret_parts = st.parts;
	if (arena < 0)
		return 0;
	if (part < 0 || pma_heap_part_stats(heap, (unsigned)part, &ps) < 0)
		return util_errmsg_set(ENOENT,
				       "part %ld holds no heap (the heap has "
				       "%u part%s)",
				       part, st.parts,
				       st.parts == 1 ? "" : "s");
	if (arena >= (long)ps.narenas)
		return util_errmsg_set(
			ENOENT, "arena %ld does not exist (%s%u arenas)", arena,
			st.parts > 1 ? "its part has " : "the heap has ",
			ps.narenas);
	return 0;
}

int view_log_json(struct pma_heap *heap, long part, long arena, unsigned flags,
		  struct json_object *obj)
{
	struct walk w = { .part = part, .arena = arena, .flags = flags };
	unsigned parts = 1;
	int rc = arena_check(heap, part, arena, &parts);

	if (rc < 0)
		return rc;
	w.arr = json_object_new_array();
	if (!w.arr)
		return util_errmsg_set(ENOMEM, "out of memory");
	rc = pma_log_foreach(heap, walk_entry, &w);
	if (rc < 0) {
		json_object_put(w.arr);
		if (rc == -ENOMEM)
			return util_errmsg_set(ENOMEM, "out of memory");
		util_errmsg_prefix("cannot decode the log");
		return rc;
	}
	if (util_json_add_u64(obj, "count", w.count) < 0 ||
	    util_json_add_u64(obj, "heap_parts", parts) < 0 ||
	    util_json_add_obj(obj, "records", w.arr) < 0)
		return util_errmsg_set(ENOMEM, "out of memory");
	return 0;
}
