/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc inspection: heap statistics (for pmactl inspect --heap) and the
 * decoder of the bookkeeping logs (pmactl log). Both lock every arena in
 * index order to see a consistent state.
 */
#include <errno.h>
#include <string.h>

#include "pmalloc/internal.h"
#include "util/errmsg.h"

static unsigned popcount_live(struct pma_slab *slab)
{
	unsigned l, k, n = 0;

	for (l = 0; l < PMA_NBANKS; l++)
		for (k = 0; k < PMA_SLAB_LINE_WORDS; k++)
			n += (unsigned)__builtin_popcountll(
				atomic_load(&slab->live[l][k]));
	return n;
}

/* add the slab's counts to st, and to its owner's in as[0 .. nas - 1] */
static void stats_slab(struct pma_slab *slab, struct pma_heap_stats *st,
		       struct pma_arena_stats *as, unsigned nas)
{
	struct pma_class_stats *cs = &st->classes[slab->cls];
	unsigned used = popcount_live(slab);
	uint64_t used_bytes = (uint64_t)used * slab->block_size;
	uint64_t free_bytes =
		(uint64_t)(slab->nblocks - used) * slab->block_size;

	cs->slabs++;
	cs->blocks += slab->nblocks;
	cs->used += used;
	if (slab->old_cls != PMA_CLS_NONE) {
		/* a mixed slab: its live blocks of the old class are that
		 * class's, and are not free */
		uint64_t ob = (uint64_t)slab->old_count * slab->old_block_size;

		st->classes[slab->old_cls].used += slab->old_count;
		used_bytes += ob;
		free_bytes = free_bytes > ob ? free_bytes - ob : 0;
		st->mixed_slabs++;
	}
	st->slab_bytes += PMA_CHUNK;
	st->used_bytes += used_bytes;
	st->free_bytes += free_bytes;
	if (slab->owner < nas) {
		as[slab->owner].slabs++;
		as[slab->owner].used_bytes += used_bytes;
		as[slab->owner].free_bytes += free_bytes;
	}
}

/* slabs and extents from the DRAM page map mirror; a slab not loaded
 * since open is read from PM (its current state, see lazy.c) without
 * loading it, so inspecting a heap does not load every slab */
static int stats_scan(struct pma_heap *heap, struct pma_heap_stats *st,
		      struct pma_arena_stats *as, unsigned nas)
{
	struct pma_slab *slab, tmp;
	uint64_t page = 0, e, n;
	int rc;

	while (page < heap->geom.npages) {
		e = atomic_load(&heap->pmap[page]);
		n = pma_pmap_npages(e);
		if (pma_pmap_kind(e) == PMA_PMAP_FREE || n == 0) {
			page++;
			continue;
		}
		if (pma_pmap_kind(e) == PMA_PMAP_SLAB) {
			slab = atomic_load(
				&heap->slabs[page / PMA_CHUNK_PAGES]);
			if (!slab) {
				rc = pma_lazy_peek(heap, page, e, &tmp);
				if (rc < 0)
					return rc;
				slab = &tmp;
			}
			stats_slab(slab, st, as, nas);
			if (slab == &tmp)
				pma_morph_release(&tmp);
		} else if (pma_pmap_kind(e) == PMA_PMAP_EXTENT) {
			st->extents++;
			st->extent_bytes += n * PMA_PAGE;
			st->used_bytes += n * PMA_PAGE;
		}
		page += n;
	}
	return 0;
}

static void stats_local(const struct pma_runs *r, struct pma_heap_stats *st)
{
	size_t i;

	st->free_bytes += r->pages * PMA_PAGE;
	for (i = 0; i < r->count; i++)
		if (r->runs[i].npages * PMA_PAGE > st->largest_free)
			st->largest_free = r->runs[i].npages * PMA_PAGE;
}

/* the snapshot of both stats calls: the heap's, and the first nas arenas'
 * into as (zeroed by the caller) */
static int stats_collect(struct pma_heap *heap, struct pma_heap_stats *ret_st,
			 struct pma_arena_stats *as, unsigned nas)
{
	struct pma_heap_stats st;
	struct pma_arena *arena;
	unsigned i;
	int rc;

	memset(&st, 0, sizeof(st));
	st.narenas = heap->geom.narenas;
	st.nclasses = heap->nclasses;
	st.log_cap = heap->geom.log_cap;
	st.heap_size = heap->geom.npages * PMA_PAGE;
	st.checkpoints = atomic_load(&heap->checkpoints);
	st.local_checkpoints = atomic_load(&heap->local_checkpoints);
	st.slabs_morphed = atomic_load(&heap->slabs_morphed);
	st.remote_frees_synced = atomic_load(&heap->rfrees_synced);
	st.layout_version = heap->geom.version;
	pma_sum_stats(heap, &st.map_groups, &st.map_groups_marked);
	st.map_group_bytes = heap->sum ? PMA_PAGE << heap->geom.sum_shift : 0;
	st.map_summary_invalid = heap->sum_bad;
	for (i = 0; i < st.nclasses; i++)
		st.classes[i].block_size = pma_class_size(i);
	pma_arenas_lock(heap);
	for (i = 0; i < heap->geom.narenas; i++) {
		arena = &heap->arenas[i];
		st.log_records += arena->tail - arena->head;
		if (i < nas) {
			as[i].log_records = arena->tail - arena->head;
			as[i].remote_frees = arena->rfreed.count;
			as[i].local_free_bytes = arena->local.pages * PMA_PAGE;
		}
	}
	pthread_mutex_lock(&heap->ext_lock);
	rc = stats_scan(heap, &st, as, nas);
	st.free_bytes += pma_ext_free_pages(&heap->ext) * PMA_PAGE;
	st.largest_free = pma_ext_largest(&heap->ext) * PMA_PAGE;
	st.meta_bytes = heap->geom.data_off;
	st.footprint_bytes =
		st.meta_bytes +
		(heap->geom.npages - pma_ext_free_pages(&heap->ext)) * PMA_PAGE;
	st.peak_footprint_bytes =
		st.meta_bytes +
		(heap->geom.npages - pma_ext_free_low(&heap->ext)) * PMA_PAGE;
	/* extents freed locally, not yet given back to the heap */
	for (i = 0; i < heap->geom.narenas; i++)
		stats_local(&heap->arenas[i].local, &st);
	pthread_mutex_unlock(&heap->ext_lock);
	pma_arenas_unlock(heap);
	st.parts = 1;
	st.node = heap->node;
	for (i = 0; i < nas; i++) {
		as[i].part = heap->part;
		as[i].arena = i;
	}
	if (rc == 0)
		*ret_st = st;
	return rc;
}

/* add part's stats b to the whole heap's a */
static void stats_add(struct pma_heap_stats *a, const struct pma_heap_stats *b)
{
	unsigned i;

	a->narenas += b->narenas;
	a->heap_size += b->heap_size;
	a->used_bytes += b->used_bytes;
	a->free_bytes += b->free_bytes;
	a->slab_bytes += b->slab_bytes;
	a->extents += b->extents;
	a->extent_bytes += b->extent_bytes;
	if (b->largest_free > a->largest_free)
		a->largest_free = b->largest_free;
	a->log_records += b->log_records;
	a->checkpoints += b->checkpoints;
	for (i = 0; i < b->nclasses && i < PMA_STATS_MAX_CLASSES; i++) {
		a->classes[i].slabs += b->classes[i].slabs;
		a->classes[i].blocks += b->classes[i].blocks;
		a->classes[i].used += b->classes[i].used;
	}
	a->map_groups += b->map_groups;
	a->map_groups_marked += b->map_groups_marked;
	a->map_summary_invalid += b->map_summary_invalid;
	a->local_checkpoints += b->local_checkpoints;
	a->remote_frees_synced += b->remote_frees_synced;
	a->meta_bytes += b->meta_bytes;
	a->footprint_bytes += b->footprint_bytes;
	a->peak_footprint_bytes += b->peak_footprint_bytes;
	a->mixed_slabs += b->mixed_slabs;
	a->slabs_morphed += b->slabs_morphed;
	a->parts++;
}

PMA_API int pma_heap_stats(struct pma_heap *heap,
			   struct pma_heap_stats *ret_stats)
{
	struct pma_heap_stats st, part;
	unsigned p;
	int rc;

	if (!heap || !ret_stats)
		return util_errmsg_set(EINVAL, "no heap or ret_stats");
	heap = heap->top;
	rc = stats_collect(heap, &st, NULL, 0);
	for (p = 1; rc == 0 && p < PMA_MAX_SLOTS; p++) {
		if (!pma_sib(heap, p))
			continue;
		rc = stats_collect(pma_sib(heap, p), &part, NULL, 0);
		if (rc == 0)
			stats_add(&st, &part);
	}
	if (rc < 0)
		return rc;
	for (p = 0, st.parts = 0; p < POOL_MAX_PARTS; p++)
		st.parts += pma_part_heap(heap, p) != NULL;
	if (heap->nsib > 1)
		st.node = -1;
	st.fallbacks = atomic_load(&heap->fallbacks);
	st.remote_part_frees = atomic_load(&heap->remote_part_frees);
	st.ring_frees = atomic_load(&heap->xring_frees);
	st.ring_frees_applied = atomic_load(&heap->xring_applied);
	st.ring_frees_ignored = atomic_load(&heap->xring_ignored);
	*ret_stats = st;
	return 0;
}

PMA_API unsigned pma_heap_regions(const struct pma_heap *heap)
{
	return heap ? heap->top->nreg : 0;
}

PMA_API int pma_heap_part_stats(struct pma_heap *heap, unsigned part,
				struct pma_heap_stats *ret_stats)
{
	struct pma_heap_stats st, reg;
	struct pma_heap *top;
	unsigned i;
	int rc;

	if (!heap || !ret_stats)
		return util_errmsg_set(EINVAL, "no heap or ret_stats");
	top = heap->top;
	if (!pma_part_heap(top, part))
		return util_errmsg_set(ENOENT, "part %u holds no heap", part);
	/* the part's regions summed (slots part * nreg ...) */
	rc = stats_collect(pma_part_heap(top, part), &st, NULL, 0);
	for (i = 0; rc == 0 && i < top->nreg; i++) {
		if (!pma_sib(top, part * top->nreg + i) ||
		    pma_sib(top, part * top->nreg + i) ==
			    pma_part_heap(top, part))
			continue;
		rc = stats_collect(pma_sib(top, part * top->nreg + i), &reg,
				   NULL, 0);
		if (rc == 0)
			stats_add(&st, &reg);
	}
	if (rc < 0)
		return rc;
	st.parts = 1;
	*ret_stats = st;
	return 0;
}

PMA_API int pma_heap_arena_stats(struct pma_heap *heap,
				 struct pma_arena_stats *ret_stats, unsigned n)
{
	struct pma_heap_stats st;
	struct pma_heap *h;
	unsigned p, nas, total = 0;
	int rc;

	if (!heap || (!ret_stats && n))
		return util_errmsg_set(EINVAL, "no heap or ret_stats");
	heap = heap->top;
	for (p = 0; p < PMA_MAX_SLOTS; p++) {
		if (!(h = pma_sib(heap, p)))
			continue;
		nas = total >= n		  ? 0 :
		      n - total < h->geom.narenas ? n - total :
						    h->geom.narenas;
		if (nas)
			memset(ret_stats + total, 0, nas * sizeof(*ret_stats));
		rc = stats_collect(h, &st, nas ? ret_stats + total : NULL, nas);
		if (rc < 0)
			return rc;
		total += h->geom.narenas;
	}
	return (int)total;
}

static void entry_fill(struct pma_heap *heap, unsigned arena,
		       const struct pma_op *op, struct pma_log_entry *e)
{
	struct pma_slab *slab;

	memset(e, 0, sizeof(*e));
	e->arena = arena;
	e->part = heap->part;
	e->index = op->index;
	e->type = pma_booklog_type_name(op->type);
	e->off = pma_pool_off(heap, op->off);
	e->dest = op->dest;
	if (op->type == PMA_REC_XFREE) {
		/* a block of another part: its offset, its size there */
		e->off = pool_off_make(op->owner, op->off);
		heap = pma_heap_route(heap, e->off);
		slab = heap ? pma_heap_slab_at(heap, op->off) : NULL;
		e->size = slab ? slab->block_size : 0;
	} else if (op->type == PMA_REC_SLAB_NEW ||
		   op->type == PMA_REC_SLAB_FREE) {
		e->cls = op->cls;
		e->size = pma_class_size(op->cls);
	} else if (op->npages) {
		e->size = op->npages * PMA_PAGE;
	} else {
		slab = pma_heap_slab_at(heap, op->off);
		e->size = slab ? slab->block_size : 0;
	}
}

static int foreach_arena(struct pma_heap *heap, struct pma_arena *arena,
			 pma_log_fn fn, void *arg)
{
	struct pma_log_entry entry;
	struct pma_op op;
	uint64_t k;
	int rc;

	for (k = arena->head; k < arena->tail; k += op.nrecs) {
		if (pma_booklog_read_op(arena->log, heap->geom.log_cap, k,
					heap->osh, &op))
			return util_errmsg_set(EIO,
					       "arena %u: record %llu "
					       "unreadable",
					       arena->id,
					       (unsigned long long)k);
		entry_fill(heap, arena->id, &op, &entry);
		rc = fn(&entry, arg);
		if (rc)
			return rc;
	}
	return 0;
}

PMA_API int pma_log_foreach(struct pma_heap *heap, pma_log_fn fn, void *arg)
{
	struct pma_heap *h;
	unsigned i, p;
	int rc = 0;

	if (!heap || !fn)
		return util_errmsg_set(EINVAL, "no heap or callback");
	for (p = 0; p < PMA_MAX_SLOTS && rc == 0; p++) {
		if (!(h = pma_sib(heap->top, p)))
			continue;
		pma_arenas_lock(h);
		for (i = 0; i < h->geom.narenas && rc == 0; i++)
			rc = foreach_arena(h, &h->arenas[i], fn, arg);
		pma_arenas_unlock(h);
	}
	return rc;
}
