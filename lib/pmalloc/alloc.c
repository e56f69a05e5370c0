/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc operations: malloc_to / free_from for slab blocks and extents.
 * Each op runs under its arena lock: update the DRAM state, append the
 * record(s) and flush them (plus the previous op's dest line), ONE fence,
 * then store the dest word. The PM bitmaps and page map are not touched
 * here; checkpoints bring them up to date from the log.
 * A block freed by a non-owner arena, and every freed extent, becomes
 * reusable only after a checkpoint made the free durable (see
 * doc/pmalloc.md, "why per-log order is enough").
 */
#include <errno.h>
#include <string.h>

#include "pmalloc/internal.h"
#include "util/errmsg.h"

/* lock the arena with room for one op (2 records) in its log */
static int arena_lock_room(struct pma_arena *arena)
{
	int rc;

	pthread_mutex_lock(&arena->lock);
	while (arena->tail + 2 - arena->head > arena->heap->geom.log_cap) {
		pthread_mutex_unlock(&arena->lock);
		rc = pma_checkpoint(arena->heap);
		if (rc < 0)
			return rc;
		pthread_mutex_lock(&arena->lock);
	}
	return 0;
}

/* checkpoint when half the log is used, or when freed extents waiting
 * for a checkpoint hold 1 / PMA_PENDING_DIV of the heap: they are not
 * reusable before, and another thread could otherwise fill the heap with
 * them between a failed allocation's checkpoint and its retry (call
 * without the lock) */
static void arena_maybe_checkpoint(struct pma_arena *arena)
{
	struct pma_heap *heap = arena->heap;
	uint64_t used;

	pthread_mutex_lock(&arena->lock);
	used = arena->tail - arena->head;
	pthread_mutex_unlock(&arena->lock);
	if (used >= heap->geom.log_cap / 2 ||
	    atomic_load(&heap->pending_pages) >=
		    heap->geom.npages / PMA_PENDING_DIV)
		(void)pma_checkpoint(heap); /* retried at the next op */
}

/* a new slab of class cls for arena, logged (SLAB_NEW), on its list */
static int arena_slab_new(struct pma_arena *arena, unsigned cls)
{
	struct pma_heap *heap = arena->heap;
	struct pma_op op = { .type = PMA_REC_SLAB_NEW, .cls = cls };
	struct pma_slab *slab;
	uint64_t page;
	int rc;

	pthread_mutex_lock(&heap->ext_lock);
	rc = pma_ext_take(&heap->ext, PMA_CHUNK_PAGES, PMA_CHUNK_PAGES, &page);
	pthread_mutex_unlock(&heap->ext_lock);
	if (rc < 0)
		return rc;
	slab = pma_slab_new(pma_page_off(heap, page), cls, arena->id);
	if (!slab)
		goto out_put;
	op.off = slab->off;
	op.owner = arena->id;
	rc = pma_log_append_op(arena, &op);
	pma_assert(rc == 0);
	/* slab first: a reader seeing the entry must not load it from PM */
	atomic_store(&heap->slabs[page / PMA_CHUNK_PAGES], slab);
	atomic_store(&heap->pmap[page], pma_pmap_make_slab(cls, arena->id));
	slab->next = arena->partial[cls];
	arena->partial[cls] = slab;
	slab->in_partial = 1;
	return 0;

out_put:
	pthread_mutex_lock(&heap->ext_lock);
	(void)pma_ext_put(&heap->ext, page, PMA_CHUNK_PAGES);
	pthread_mutex_unlock(&heap->ext_lock);
	return -ENOMEM;
}

static int alloc_small(struct pma_arena *arena, size_t size, uint64_t *dest,
		       unsigned flags)
{
	struct pma_heap *heap = arena->heap;
	unsigned cls = pma_class_of(size);
	struct pma_op op = { .type = PMA_REC_ALLOC };
	struct pma_slab *slab;
	uint32_t idx;
	int rc;

	rc = arena_lock_room(arena);
	if (rc < 0)
		return rc;
	if (!arena->partial[cls]) {
		rc = pma_lazy_refill(arena, cls); /* old slabs first */
		if (rc == 0 && !arena->partial[cls])
			rc = arena_slab_new(arena, cls);
		if (rc < 0)
			goto out_unlock;
	}
	slab = arena->partial[cls];
	rc = pma_slab_take(slab, &idx);
	pma_assert(rc == 0);
	if (!slab->navail) {
		arena->partial[cls] = slab->next;
		slab->in_partial = 0;
	}
	op.off = pma_slab_block_off(slab, idx);
	op.dest = pma_offset(heap, dest);
	/* zeros must be durable before the record commits the block: a
	 * second fence, zalloc only */
	if (flags & PMA_ALLOC_ZERO)
		pm_memset(heap->map, pma_addr(heap, op.off), 0,
			  slab->block_size, 0);
	rc = pma_log_append_op(arena, &op);
	pma_assert(rc == 0);
	pma_log_commit(arena, dest, pma_pool_off(heap, op.off));
out_unlock:
	pthread_mutex_unlock(&arena->lock);
	return rc;
}

static int alloc_large(struct pma_arena *arena, size_t size, uint64_t *dest,
		       unsigned flags)
{
	struct pma_heap *heap = arena->heap;
	struct pma_op op = { .type = PMA_REC_EXT_ALLOC };
	uint64_t page;
	int rc;

	op.npages = size / PMA_PAGE + (size % PMA_PAGE != 0);
	rc = arena_lock_room(arena);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&heap->ext_lock);
	rc = pma_ext_take(&heap->ext, op.npages, 1, &page);
	pthread_mutex_unlock(&heap->ext_lock);
	if (rc < 0)
		goto out_unlock;
	atomic_store(&heap->pmap[page],
		     pma_pmap_make(PMA_PMAP_EXTENT, op.npages));
	op.off = pma_page_off(heap, page);
	op.dest = pma_offset(heap, dest);
	/* zeros durable before the record commits the extent */
	if (flags & PMA_ALLOC_ZERO)
		pm_memset(heap->map, pma_addr(heap, op.off), 0,
			  op.npages * PMA_PAGE, 0);
	rc = pma_log_append_op(arena, &op);
	pma_assert(rc == 0);
	pma_log_commit(arena, dest, pma_pool_off(heap, op.off));
out_unlock:
	pthread_mutex_unlock(&arena->lock);
	return rc;
}

/* the checks every operation starts with: a heap open for writing and a
 * dest that is an aligned word outside the heap metadata (-EINVAL) */
static int op_check(struct pma_heap *heap, const uint64_t *dest)
{
	uint64_t off;
	int rc;

	if (!heap)
		return util_errmsg_set(EINVAL, "no heap");
	rc = pma_heap_writable(heap);
	if (rc < 0)
		return rc;
	if (!dest || (uintptr_t)dest % sizeof(*dest))
		return util_errmsg_set(EINVAL,
				       "dest %p is not an aligned "
				       "8-byte word",
				       (const void *)dest);
	off = pma_offset(heap, dest);
	if (off && pma_heap_dest_check(heap, off) < 0)
		return util_errmsg_set(EINVAL,
				       "dest 0x%llx is inside pool or "
				       "heap metadata",
				       (unsigned long long)off);
	return 0;
}

int pma_alloc_to(struct pma_heap *heap, size_t size, uint64_t *dest,
		 unsigned flags)
{
	struct pma_arena *arena;
	int rc, attempt;

	rc = op_check(heap, dest);
	if (rc < 0)
		return rc;
	if (size == 0 || size > heap->geom.npages * PMA_PAGE)
		return size ? util_errmsg_set(ENOMEM,
					      "%zu bytes exceed the "
					      "heap",
					      size) :
			      util_errmsg_set(EINVAL, "size 0");
	arena = pma_arena_get(heap);
	for (attempt = 0;; attempt++) {
		rc = size <= PMA_SMALL_MAX ?
			     alloc_small(arena, size, dest, flags) :
			     alloc_large(arena, size, dest, flags);
		/* frees waiting for a checkpoint may make room */
		if (rc != -ENOMEM || attempt)
			break;
		rc = pma_checkpoint(heap);
		if (rc < 0)
			return rc;
	}
	if (rc == -ENOMEM)
		return util_errmsg_set(ENOMEM,
				       "heap full: no room for %zu "
				       "bytes",
				       size);
	if (rc == 0)
		arena_maybe_checkpoint(arena);
	return rc;
}

static int free_block(struct pma_arena *arena, struct pma_slab *slab,
		      uint64_t off, uint64_t *dest)
{
	struct pma_op op = { .off = off,
			     .dest = pma_offset(arena->heap, dest) };
	int own = slab->owner == arena->id;
	uint32_t idx;
	int rc;

	if (pma_slab_index(slab, off, &idx) < 0)
		return util_errmsg_set(EINVAL, "0x%llx is not a block",
				       (unsigned long long)off);
	rc = arena_lock_room(arena);
	if (rc < 0)
		return rc;
	if (!own && pma_pending_push(&arena->rfreed, off) < 0) {
		rc = util_errmsg_set(ENOMEM, "out of memory");
		goto out_unlock;
	}
	if (pma_slab_unlive(slab, idx) < 0) {
		arena->rfreed.count -= !own;
		rc = util_errmsg_set(EINVAL, "double free of 0x%llx",
				     (unsigned long long)off);
		goto out_unlock;
	}
	op.type = own ? PMA_REC_FREE : PMA_REC_RFREE;
	rc = pma_log_append_op(arena, &op);
	pma_assert(rc == 0);
	pma_log_commit(arena, dest, 0);
	if (own) {
		pma_slab_give(slab, idx);
		if (!slab->in_partial) {
			slab->next = arena->partial[slab->cls];
			arena->partial[slab->cls] = slab;
			slab->in_partial = 1;
		}
	}
out_unlock:
	pthread_mutex_unlock(&arena->lock);
	return rc;
}

static int free_extent(struct pma_arena *arena, uint64_t off, uint64_t *dest)
{
	struct pma_heap *heap = arena->heap;
	struct pma_op op = { .type = PMA_REC_EXT_FREE, .off = off };
	uint64_t page = pma_page_of(heap, off);
	uint64_t e = atomic_load(&heap->pmap[page]);
	int rc;

	if (off % PMA_PAGE || pma_pmap_kind(e) != PMA_PMAP_EXTENT ||
	    !atomic_compare_exchange_strong(&heap->pmap[page], &e,
					    pma_pmap_make(PMA_PMAP_FREEING,
							  pma_pmap_npages(e))))
		return util_errmsg_set(EINVAL,
				       "0x%llx is not a live block "
				       "(bad offset or double free)",
				       (unsigned long long)off);
	op.npages = pma_pmap_npages(e);
	op.dest = pma_offset(heap, dest);
	rc = arena_lock_room(arena);
	if (rc < 0)
		goto out_restore;
	rc = pma_pending_push(&arena->ext_freed, page);
	if (rc < 0) {
		pthread_mutex_unlock(&arena->lock);
		goto out_restore;
	}
	rc = pma_log_append_op(arena, &op);
	pma_assert(rc == 0);
	pma_log_commit(arena, dest, 0);
	atomic_fetch_add(&heap->pending_pages, op.npages);
	pthread_mutex_unlock(&arena->lock);
	return 0;

out_restore:
	atomic_store(&heap->pmap[page], e);
	return util_errmsg_set(-rc, "cannot free 0x%llx",
			       (unsigned long long)off);
}

PMA_API int pma_free_from(struct pma_heap *heap, uint64_t *dest)
{
	struct pma_arena *arena;
	struct pma_slab *slab;
	uint64_t off, b;
	int rc;

	rc = op_check(heap, dest);
	if (rc < 0)
		return rc;
	off = __atomic_load_n(dest, __ATOMIC_ACQUIRE);
	if (!off)
		return 0;
	b = pool_off_byte(off);
	if (pool_off_part(off) != heap->part || b % 64 || b < heap->data_base ||
	    pma_page_of(heap, b) >= heap->geom.npages)
		return util_errmsg_set(EINVAL, "0x%llx is not in the heap",
				       (unsigned long long)off);
	arena = pma_arena_get(heap);
	slab = pma_heap_slab_at(heap, b);
	rc = slab ? free_block(arena, slab, b, dest) :
		    free_extent(arena, b, dest);
	if (rc == 0)
		arena_maybe_checkpoint(arena);
	return rc;
}

PMA_API int pma_malloc_to(struct pma_heap *heap, size_t size, uint64_t *dest)
{
	return pma_alloc_to(heap, size, dest, 0);
}

PMA_API int pma_zalloc_to(struct pma_heap *heap, size_t size, uint64_t *dest)
{
	return pma_alloc_to(heap, size, dest, PMA_ALLOC_ZERO);
}
