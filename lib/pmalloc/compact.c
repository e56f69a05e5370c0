/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc compaction (pma_heap_compact): nothing moves a user's object.
 * 1. Every slab not loaded since open is loaded, so that empty ones are
 *    on their arena's partial lists (lazy.c keeps them on stacks).
 * 2. A checkpoint (remote frees go back to their owners' slabs), then a
 *    trimming one (recovery.c): every empty slab is released (SLAB_FREE),
 *    the logs are applied and every head moves to its tail (the logs are
 *    truncated), and freed pages go to the free-extent index, coalesced.
 * 3. Holes are punched in every free run of the index, with ext_lock held
 *    from the first punch until the punch is durable (fdatasync).
 * Invariant step 3 relies on: a run in heap->ext is free in the durable
 * page map and named by no record after the heads (pages enter the index
 * at open, from the recovered page map, or after the checkpoint that made
 * their free durable moved the heads past it), and pages leave it only by
 * pma_ext_take under ext_lock. So what is punched is durably free, and no
 * allocation can take it before its zeros are durable; a crash in the
 * middle leaves some free pages zeroed, which nothing reads.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pmalloc/internal.h"
#include "util/errmsg.h"

/* load every slab of arena still on its unloaded stacks (arena lock
 * held) and list those with a free block; 0 or -ENOMEM / -EIO */
static int load_arena(struct pma_heap *heap, struct pma_arena *arena)
{
	struct pma_pending *st;
	struct pma_slab *slab;
	unsigned cls;
	int rc;

	for (cls = 0; cls < PMA_NCLASSES; cls++) {
		st = &heap->unloaded[(size_t)arena->id * PMA_NCLASSES + cls];
		while (st->count) {
			rc = pma_lazy_get(heap, st->offs[st->count - 1], &slab);
			if (rc < 0)
				return rc; /* stays on the stack */
			st->count--;
			/* as pma_lazy_refill: released or reused since */
			if (!slab || slab->owner != arena->id ||
			    slab->cls != cls || slab->in_partial ||
			    !slab->navail)
				continue;
			pma_partial_push(arena, slab);
			pma_slab_empty_check(arena, slab);
		}
	}
	return 0;
}

int pma_heap_load_all(struct pma_heap *heap)
{
	struct pma_arena *arena;
	unsigned i;
	int rc = 0;

	if (!heap->unloaded)
		return 0;
	for (i = 0; i < heap->geom.narenas && rc == 0; i++) {
		arena = &heap->arenas[i];
		pma_arena_lock(arena);
		rc = load_arena(heap, arena);
		pma_arena_unlock(arena);
	}
	return rc;
}

/* log records, free runs and the largest one now */
static void snapshot(struct pma_heap *heap, uint64_t *ret_records,
		     uint64_t *ret_runs, uint64_t *ret_largest)
{
	uint64_t records = 0;
	unsigned i;

	pma_arenas_lock(heap);
	for (i = 0; i < heap->geom.narenas; i++)
		records += heap->arenas[i].tail - heap->arenas[i].head;
	pthread_mutex_lock(&heap->ext_lock);
	*ret_runs = heap->ext.count;
	*ret_largest = pma_ext_largest(&heap->ext) * PMA_PAGE;
	pthread_mutex_unlock(&heap->ext_lock);
	pma_arenas_unlock(heap);
	*ret_records = records;
}

struct punch {
	struct pma_heap *heap;
	uint64_t bytes; /* punched */
	uint64_t free_bytes; /* in the runs */
};

static int punch_run(uint64_t start, uint64_t npages, void *arg)
{
	struct punch *p = arg;
	uint64_t len = npages * PMA_PAGE;
	int rc;

	p->free_bytes += len;
	rc = pool_part_punch(p->heap->pool, p->heap->part,
			     pma_page_off(p->heap, start), len);
	if (rc < 0)
		return rc;
	p->bytes += len;
	return 0;
}

/* step 3: 0 (punched, or skipped with a note) or -errno */
static int punch_free(struct pma_heap *heap, struct pma_compact_report *r)
{
	struct punch p = { .heap = heap };
	int rc, src;

	if (pool_part_is_devdax(heap->pool, heap->part)) {
		snprintf(r->note, sizeof(r->note),
			 "devdax part: no holes can be punched");
		return 0;
	}
	pthread_mutex_lock(&heap->ext_lock);
	rc = pma_ext_foreach(&heap->ext, punch_run, &p);
	/* durable before any punched page can be taken again: a reuse
	 * must never meet a hole the file system drops later */
	src = p.bytes ? pool_part_sync(heap->pool, heap->part) : 0;
	r->free_runs_after = heap->ext.count;
	r->largest_free_after = pma_ext_largest(&heap->ext) * PMA_PAGE;
	pthread_mutex_unlock(&heap->ext_lock);
	r->free_bytes_after = p.free_bytes;
	r->punched_bytes = p.bytes;
	if (rc == -EOPNOTSUPP && !p.bytes) {
		snprintf(r->note, sizeof(r->note),
			 "the file system cannot punch holes");
		return src;
	}
	r->punched = rc == 0 && src == 0;
	return rc < 0 ? rc : src;
}

/* add part's report b to the whole heap's a (a zeroed for the first);
 * notes are kept with their part's index */
static void report_add(struct pma_compact_report *a,
		       const struct pma_compact_report *b,
		       const struct pma_heap *heap, unsigned nparts)
{
	size_t len = strlen(a->note);
	unsigned part = heap->part;

	a->log_records_before += b->log_records_before;
	a->log_records_after += b->log_records_after;
	a->slabs_released += b->slabs_released;
	a->free_runs_before += b->free_runs_before;
	a->free_runs_after += b->free_runs_after;
	if (b->largest_free_before > a->largest_free_before)
		a->largest_free_before = b->largest_free_before;
	if (b->largest_free_after > a->largest_free_after)
		a->largest_free_after = b->largest_free_after;
	a->free_bytes_after += b->free_bytes_after;
	a->punched_bytes += b->punched_bytes;
	/* file bytes are the part's: a part's later regions (several
	 * per part) add what they changed, not the part again */
	if (heap->slot % heap->top->nreg == 0) {
		a->file_bytes_before += b->file_bytes_before;
		a->file_bytes_after += b->file_bytes_after;
	} else {
		a->file_bytes_after += b->file_bytes_after;
		a->file_bytes_after -= b->file_bytes_before;
	}
	a->reclaimed_bytes += b->reclaimed_bytes;
	a->punched |= b->punched;
	if (!b->note[0] || len + 2 >= sizeof(a->note))
		return;
	if (nparts == 1)
		snprintf(a->note, sizeof(a->note), "%s", b->note);
	else
		snprintf(a->note + len, sizeof(a->note) - len,
			 "%spart %u: %.60s", len ? "; " : "", part, b->note);
}

/* compact the heap of one part (see the top of this file) */
static int compact_part(struct pma_heap *heap, struct pma_compact_report *ret)
{
	struct pma_compact_report r;
	uint64_t released, dummy;
	int rc;

	memset(&r, 0, sizeof(r));
	snapshot(heap, &r.log_records_before, &r.free_runs_before,
		 &r.largest_free_before);
	rc = pool_part_alloc_bytes(heap->pool, heap->part,
				   &r.file_bytes_before);
	if (rc == 0)
		rc = pma_heap_load_all(heap);
	released = atomic_load(&heap->slabs_released);
	/* the first gives remote frees back (a slab they empty becomes a
	 * candidate), the second releases every empty slab */
	if (rc == 0)
		rc = pma_checkpoint(heap);
	if (rc == 0)
		rc = pma_checkpoint_trim(heap);
	if (rc < 0)
		return rc;
	r.slabs_released = atomic_load(&heap->slabs_released) - released;
	if (heap->geom.version < PMA_HEAP_VERSION_SLAB_FREE)
		snprintf(r.note, sizeof(r.note),
			 "layout version %u: empty slabs stay slabs",
			 heap->geom.version);
	rc = punch_free(heap, &r);
	if (rc < 0)
		return rc;
	snapshot(heap, &r.log_records_after, &dummy, &dummy);
	rc = pool_part_alloc_bytes(heap->pool, heap->part, &r.file_bytes_after);
	if (rc < 0)
		return rc;
	if (r.file_bytes_before > r.file_bytes_after)
		r.reclaimed_bytes = r.file_bytes_before - r.file_bytes_after;
	*ret = r;
	return 0;
}

PMA_API int pma_heap_compact(struct pma_heap *heap,
			     struct pma_compact_report *ret)
{
	struct pma_compact_report all, part;
	unsigned p;
	int rc;

	if (!heap)
		return util_errmsg_set(EINVAL, "no heap");
	if (pma_heap_writable(heap) < 0)
		return -EROFS;
	heap = heap->top;
	memset(&all, 0, sizeof(all));
	for (p = 0; p < PMA_MAX_SLOTS; p++) {
		if (!pma_sib(heap, p))
			continue;
		rc = compact_part(pma_sib(heap, p), &part);
		if (rc < 0)
			return rc;
		report_add(&all, &part, pma_sib(heap, p), heap->nsib);
	}
	if (ret)
		*ret = all;
	return 0;
}

/* ------------------------------------------------------------ plan */

/* the free runs of the page map if every empty slab were free */
struct plan {
	struct pma_heap *heap;
	uint64_t run_start, run_len; /* the run being built (pages) */
	uint64_t runs, largest, free_pages, empty_slabs;
};

static void plan_end_run(struct plan *p)
{
	if (!p->run_len)
		return;
	p->runs++;
	p->free_pages += p->run_len;
	if (p->run_len > p->largest)
		p->largest = p->run_len;
	p->run_len = 0;
}

static void plan_free(struct plan *p, uint64_t page, uint64_t n)
{
	if (!p->run_len)
		p->run_start = page;
	p->run_len += n;
}

/* is the slab at page (entry e) without a live block? 0/1 or -EIO */
static int slab_empty(struct pma_heap *heap, uint64_t page, uint64_t e)
{
	struct pma_slab *slab, tmp;
	unsigned l, k;
	int rc;

	slab = atomic_load(&heap->slabs[page / PMA_CHUNK_PAGES]);
	if (!slab) {
		rc = pma_lazy_peek(heap, page, e, &tmp);
		if (rc < 0)
			return rc;
		slab = &tmp;
	}
	/* a mixed slab holds live blocks of its old class */
	rc = slab->old_cls == PMA_CLS_NONE;
	for (l = 0; l < PMA_NBANKS; l++)
		for (k = 0; k < PMA_SLAB_LINE_WORDS; k++)
			if (atomic_load(&slab->live[l][k]) |
			    atomic_load(&slab->rpend[l][k]))
				rc = 0;
	if (slab == &tmp)
		pma_morph_release(&tmp);
	return rc;
}

/* the page map walk (every arena lock and ext_lock held) */
static int plan_scan(struct pma_heap *heap, struct plan *p)
{
	int release = heap->geom.version >= PMA_HEAP_VERSION_SLAB_FREE;
	uint64_t page = 0, e, n;
	int empty;

	while (page < heap->geom.npages) {
		e = atomic_load(&heap->pmap[page]);
		n = pma_pmap_npages(e);
		if (pma_pmap_kind(e) == PMA_PMAP_FREE || n == 0) {
			plan_free(p, page++, 1);
			continue;
		}
		empty = 0;
		if (release && pma_pmap_kind(e) == PMA_PMAP_SLAB) {
			empty = slab_empty(heap, page, e);
			if (empty < 0)
				return empty;
		}
		if (empty) {
			p->empty_slabs++;
			plan_free(p, page, n);
		} else {
			plan_end_run(p);
		}
		page += n;
	}
	plan_end_run(p);
	return 0;
}

/* the plan of one part's heap */
static int plan_part(struct pma_heap *heap, struct pma_compact_report *ret)
{
	struct pma_compact_report r;
	struct plan p;
	int rc;

	memset(&r, 0, sizeof(r));
	memset(&p, 0, sizeof(p));
	p.heap = heap;
	snapshot(heap, &r.log_records_before, &r.free_runs_before,
		 &r.largest_free_before);
	rc = pool_part_alloc_bytes(heap->pool, heap->part,
				   &r.file_bytes_before);
	if (rc < 0)
		return rc;
	pma_arenas_lock(heap);
	pthread_mutex_lock(&heap->ext_lock);
	rc = plan_scan(heap, &p);
	pthread_mutex_unlock(&heap->ext_lock);
	pma_arenas_unlock(heap);
	if (rc < 0)
		return rc;
	r.slabs_released = p.empty_slabs;
	r.free_runs_after = p.runs;
	r.largest_free_after = p.largest * PMA_PAGE;
	r.free_bytes_after = p.free_pages * PMA_PAGE;
	if (pool_part_is_devdax(heap->pool, heap->part))
		snprintf(r.note, sizeof(r.note),
			 "devdax part: no holes can be punched");
	else
		r.punched_bytes = r.free_bytes_after;
	/* at most: which free pages the file system has allocated is not
	 * known (tmpfs reports fallocated pages as holes to SEEK_DATA) */
	r.reclaimed_bytes = r.punched_bytes < r.file_bytes_before ?
				    r.punched_bytes :
				    r.file_bytes_before;
	r.file_bytes_after = r.file_bytes_before - r.reclaimed_bytes;
	*ret = r;
	return 0;
}

PMA_API int pma_heap_compact_plan(struct pma_heap *heap,
				  struct pma_compact_report *ret)
{
	struct pma_compact_report all, part;
	unsigned p;
	int rc;

	if (!heap || !ret)
		return util_errmsg_set(EINVAL, "no heap or ret");
	heap = heap->top;
	memset(&all, 0, sizeof(all));
	for (p = 0; p < PMA_MAX_SLOTS; p++) {
		if (!pma_sib(heap, p))
			continue;
		rc = plan_part(pma_sib(heap, p), &part);
		if (rc < 0)
			return rc;
		report_add(&all, &part, pma_sib(heap, p), heap->nsib);
	}
	if (!all.note[0])
		snprintf(all.note, sizeof(all.note),
			 "dry run: nothing changed; reclaimed is at most");
	*ret = all;
	return 0;
}
