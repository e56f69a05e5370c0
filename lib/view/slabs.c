/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/view slabs: a PMAlloc heap's slabs (pma_slab_foreach) as the "slabs"
 * object of `pmactl inspect --slabs --json`: per part, arena and size
 * class the slabs with their used and free blocks, and every mixed slab
 * (morphed, still holding live blocks of its old class); and the report
 * of a morph pass (pma_heap_morph) as `pmactl morph --json` prints it.
 * Built by pmactl for a pool it opened and by pmad for one it holds.
 */
#include <errno.h>
#include <stdlib.h>

#include "pmalloc.h"
#include "util/errmsg.h"
#include "util/json.h"
#include "view/view.h"

struct row {
	unsigned part, arena;
	uint32_t block_size;
	uint64_t slabs, used, avail;
};

struct acc {
	struct row *rows;
	size_t n, alloc;
	struct json_object *mixed;
	unsigned flags;
};

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->part != y->part)
		return x->part < y->part ? -1 : 1;
	if (x->arena != y->arena)
		return x->arena < y->arena ? -1 : 1;
	return x->block_size < y->block_size ? -1 :
					       x->block_size > y->block_size;
}

static struct row *row_of(struct acc *a, const struct pma_slab_info *s)
{
	struct row *r;
	size_t i;

	for (i = a->n; i > 0; i--) {
		r = &a->rows[i - 1];
		if (r->part == s->part && r->arena == s->arena &&
		    r->block_size == s->block_size)
			return r;
	}
	if (a->n == a->alloc) {
		size_t na = a->alloc ? 2 * a->alloc : 64;

		r = realloc(a->rows, na * sizeof(*r));
		if (!r)
			return NULL;
		a->rows = r;
		a->alloc = na;
	}
	r = &a->rows[a->n++];
	*r = (struct row){ .part = s->part,
			   .arena = s->arena,
			   .block_size = s->block_size };
	return r;
}

static int mixed_add(struct acc *a, const struct pma_slab_info *s)
{
	struct json_object *m = json_object_new_object();
	int err;

	if (!m)
		return -ENOMEM;
	err = util_json_add_u64(m, "part", s->part);
	err |= util_json_add_u64(m, "arena", s->arena);
	err |= util_json_add_u64(m, "offset", s->off);
	err |= view_add_size(m, "old_block_size", s->old_block_size, a->flags);
	err |= view_add_size(m, "block_size", s->block_size, a->flags);
	err |= util_json_add_u64(m, "old_live_blocks", s->old_used);
	err |= util_json_add_u64(m, "used_blocks", s->used);
	err |= util_json_add_u64(m, "free_blocks", s->avail);
	if (err || json_object_array_add(a->mixed, m) < 0) {
		json_object_put(m);
		return -ENOMEM;
	}
	return 0;
}

static int slab_cb(const struct pma_slab_info *s, void *arg)
{
	struct acc *a = arg;
	struct row *r = row_of(a, s);

	if (!r)
		return -ENOMEM;
	r->slabs++;
	r->used += s->used;
	r->avail += s->avail;
	return s->old_block_size ? mixed_add(a, s) : 0;
}

static struct json_object *rows_json(struct acc *a)
{
	struct json_object *arr = json_object_new_array(), *o;
	size_t i;
	int err;

	if (a->n) /* a->rows may be NULL, which qsort may not take */
		qsort(a->rows, a->n, sizeof(*a->rows), row_cmp);
	for (i = 0; arr && i < a->n; i++) {
		o = json_object_new_object();
		if (!o) {
			json_object_put(arr);
			return NULL;
		}
		err = util_json_add_u64(o, "part", a->rows[i].part);
		err |= util_json_add_u64(o, "arena", a->rows[i].arena);
		err |= view_add_size(o, "block_size", a->rows[i].block_size,
				     a->flags);
		err |= util_json_add_u64(o, "slabs", a->rows[i].slabs);
		err |= util_json_add_u64(o, "used_blocks", a->rows[i].used);
		err |= util_json_add_u64(o, "free_blocks", a->rows[i].avail);
		if (err || json_object_array_add(arr, o) < 0) {
			json_object_put(o);
			json_object_put(arr);
			return NULL;
		}
	}
	return arr;
}

int view_slabs_json(struct pma_heap *heap, unsigned flags,
		    struct json_object *obj)
{
	struct acc a = { .flags = flags };
	struct json_object *s = json_object_new_object(), *rows = NULL;
	size_t nmixed;
	int rc, err;

	a.mixed = json_object_new_array();
	if (!s || !a.mixed) {
		rc = util_errmsg_set(ENOMEM, "out of memory");
		goto out;
	}
	rc = pma_slab_foreach(heap, slab_cb, &a);
	if (rc == -ENOMEM)
		util_errmsg_set(ENOMEM, "out of memory");
	else if (rc < 0)
		util_errmsg_set(-rc, "%s", pma_errormsg());
	if (rc < 0)
		goto out;
	rows = rows_json(&a);
	nmixed = json_object_array_length(a.mixed);
	err = !rows;
	err |= util_json_add_obj(s, "classes", rows);
	err |= util_json_add_u64(s, "mixed_count", nmixed);
	err |= util_json_add_obj(s, "mixed", a.mixed);
	a.mixed = NULL;
	err |= util_json_add_obj(obj, "slabs", s);
	s = NULL;
	rc = err ? util_errmsg_set(ENOMEM, "out of memory") : 0;
out:
	json_object_put(a.mixed);
	json_object_put(s);
	free(a.rows);
	return rc;
}

int view_morph_json(const struct pma_morph_report *r, int dry_run,
		    unsigned flags, struct json_object *obj)
{
	struct json_object *arr = json_object_new_array(), *m;
	unsigned i;
	int err = !arr;

	for (i = 0; arr && i < r->nmoves; i++) {
		m = json_object_new_object();
		if (!m) {
			err = 1;
			break;
		}
		err |= view_add_size(m, "from_block_size",
				     r->moves[i].from_size, flags);
		err |= view_add_size(m, "to_block_size", r->moves[i].to_size,
				     flags);
		err |= util_json_add_u64(m, "slabs", r->moves[i].slabs);
		err |= view_add_size(m, "live_bytes", r->moves[i].live_bytes,
				     flags);
		err |= view_add_size(m, "free_bytes", r->moves[i].free_bytes,
				     flags);
		if (json_object_array_add(arr, m) < 0) {
			json_object_put(m);
			err = 1;
		}
	}
	err |= util_json_add_bool(obj, "dry_run", dry_run);
	err |= util_json_add_u64(obj, "used_pct", r->used_pct);
	err |= util_json_add_u64(obj, "candidates", r->candidates);
	err |= util_json_add_u64(obj, "slabs_morphed", r->slabs_morphed);
	err |= view_add_size(obj, "bytes_morphed", r->bytes_morphed, flags);
	err |= view_add_size(obj, "live_bytes", r->live_bytes, flags);
	err |= view_add_size(obj, "free_bytes", r->free_bytes, flags);
	err |= util_json_add_obj(obj, "moves", arr);
	err |= util_json_add_u64(obj, "moves_dropped", r->moves_dropped);
	return err ? util_errmsg_set(ENOMEM, "out of memory") : 0;
}
