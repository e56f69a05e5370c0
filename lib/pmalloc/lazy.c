/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc lazy slab loading: open reads only the page map, whose slab
 * entries carry the class and owner arena; a slab's header and bitmap
 * (one page fault each) are read at its first use, so open time follows
 * the log and the page map, not the number of slabs.
 *
 * A slab is loaded (a) by pma_heap_slab_at, from any thread (free,
 * usable_size, checkpoints): the loaded copy is installed in
 * heap->slabs[chunk] with a compare-exchange, the loser frees its copy;
 * (b) by its owner when the arena has no partial slab of the class:
 * pma_lazy_refill pops the arena's unloaded slabs of that class, loads
 * them, and puts those with free blocks on the partial list before a new
 * slab is made. A slab loaded by (a) is popped by (b) like any other and
 * put on the list then, unless a free already did; if it became empty
 * and a checkpoint released it meanwhile, (b) skips its chunk.
 *
 * Why loading late reads the current state: recovery applied every
 * logged op to PM before open, and every later op on a block (alloc,
 * free, remote free) goes through the block's DRAM slab, which loads it
 * first; checkpoints write only bitmaps of slabs named by logged ops,
 * i.e. loaded ones. So the PM bitmap of a slab nobody loaded since open
 * is still exactly its current state.
 */
#include <errno.h>
#include <stdlib.h>

#include "pmalloc/internal.h"
#include "util/errmsg.h"

/* the unloaded-slab stack of arena owner, class cls */
static struct pma_pending *stack_of(struct pma_heap *heap, unsigned owner,
				    unsigned cls)
{
	return &heap->unloaded[(size_t)owner * PMA_NCLASSES + cls];
}

int pma_lazy_add(struct pma_heap *heap, uint64_t page, uint64_t entry)
{
	unsigned owner = pma_pmap_owner(entry), cls = pma_pmap_cls(entry);

	pma_assert(cls < PMA_NCLASSES && owner < heap->geom.narenas);
	if (!heap->unloaded) {
		heap->unloaded =
			calloc((size_t)heap->geom.narenas * PMA_NCLASSES,
			       sizeof(*heap->unloaded));
		if (!heap->unloaded)
			return util_errmsg_set(ENOMEM, "out of memory");
	}
	if (pma_pending_push(stack_of(heap, owner, cls),
			     page / PMA_CHUNK_PAGES) < 0)
		return util_errmsg_set(ENOMEM, "out of memory");
	atomic_fetch_add_explicit(&heap->nunloaded, 1, memory_order_relaxed);
	return 0;
}

void pma_lazy_release(struct pma_heap *heap)
{
	size_t i;

	for (i = 0;
	     heap->unloaded && i < (size_t)heap->geom.narenas * PMA_NCLASSES;
	     i++)
		free(heap->unloaded[i].offs);
	free(heap->unloaded);
	heap->unloaded = NULL;
}

uint64_t pma_lazy_unloaded(struct pma_heap *heap)
{
	return atomic_load(&heap->nunloaded);
}

/* the slab header + bitmap as recovery left them: PM, or the read-only
 * open's DRAM copy (made only during the replay at open, so read-only
 * once the heap is open and safe to read from any thread), or during the
 * dry run of a writable open its copy of a slab the replay wrote */
static const struct pma_slab_hdr *meta_of(struct pma_heap *heap, uint64_t page)
{
	void *copy = heap->ro_slab_meta ?
			     heap->ro_slab_meta[page / PMA_CHUNK_PAGES] :
			     NULL;

	return copy ? copy : pma_addr(heap, pma_page_off(heap, page));
}

/* the slab at page from its header and bitmap, which must match its page
 * map entry e (stats call it directly: a look without installing) */
int pma_lazy_peek(struct pma_heap *heap, uint64_t page, uint64_t e,
		  struct pma_slab *slab)
{
	const struct pma_slab_hdr *sh = meta_of(heap, page);
	unsigned cls = pma_pmap_cls(e), owner = pma_pmap_owner(e);
	int bank;

	if (cls >= heap->nclasses || sh->magic != PMA_SLAB_MAGIC ||
	    sh->cls != cls || sh->owner != owner ||
	    sh->block_size != pma_class_size(cls) ||
	    sh->nblocks != pma_class_nblocks(cls))
		return util_errmsg_set(EIO,
				       "corrupt slab at 0x%llx (header "
				       "does not match its page map entry)",
				       (unsigned long long)pma_page_off(heap,
									page));
	bank = heap->checked ? pma_check_banks(sh, pma_page_off(heap, page)) :
			       -1;
	if (bank >= 0)
		return util_errmsg_set(
			EIO,
			"corrupt slab at 0x%llx (allocation "
			"bitmap bank %d fails its check)",
			(unsigned long long)pma_page_off(heap, page), bank);
	if (heap->geom.version >= PMA_HEAP_VERSION_MORPH && sh->morph_from &&
	    heap->checked &&
	    (bank = pma_check_olds(sh, pma_page_off(heap, page))) >= 0)
		return util_errmsg_set(
			EIO,
			"corrupt slab at 0x%llx (old bitmap bank %d fails "
			"its check)",
			(unsigned long long)pma_page_off(heap, page), bank);
	pma_slab_init(slab, pma_page_off(heap, page), cls, owner);
	pma_slab_load(slab, sh);
	if (heap->geom.version < PMA_HEAP_VERSION_MORPH)
		return 0;
	/* before the slab is published: see may_mix */
	if (sh->morph_from)
		atomic_store(&heap->may_mix, 1);
	return pma_morph_load(slab, sh);
}

int pma_lazy_get(struct pma_heap *heap, uint64_t chunk,
		 struct pma_slab **ret_slab)
{
	uint64_t page = chunk * PMA_CHUNK_PAGES, e;
	struct pma_slab *slab, *cur;
	int rc;

	*ret_slab = NULL;
	if (page >= heap->geom.npages)
		return 0;
	e = atomic_load_explicit(&heap->pmap[page], memory_order_acquire);
	if (pma_pmap_kind(e) != PMA_PMAP_SLAB)
		return 0;
	/* arena_slab_new stores the slab before its page map entry: a slab
	 * made since open is seen here, and never read from PM (whose
	 * header is written only by the next checkpoint) */
	cur = atomic_load_explicit(&heap->slabs[chunk], memory_order_acquire);
	if (cur) {
		*ret_slab = cur;
		return 0;
	}
	slab = pma_slab_alloc();
	if (!slab)
		return util_errmsg_set(ENOMEM, "out of memory");
	rc = pma_lazy_peek(heap, page, e, slab);
	if (rc < 0) {
		free(slab);
		return rc;
	}
	if (!atomic_compare_exchange_strong_explicit(&heap->slabs[chunk], &cur,
						     slab, memory_order_acq_rel,
						     memory_order_acquire)) {
		/* another thread installed the same state */
		pma_morph_release(slab);
		free(slab);
		*ret_slab = cur;
		return 0;
	}
	atomic_fetch_sub_explicit(&heap->nunloaded, 1, memory_order_relaxed);
	*ret_slab = slab;
	return 0;
}

int pma_lazy_refill(struct pma_arena *arena, unsigned cls)
{
	struct pma_heap *heap = arena->heap;
	struct pma_pending *st;
	struct pma_slab *slab;
	int rc;

	if (!heap->unloaded)
		return 0;
	st = stack_of(heap, arena->id, cls);
	while (!arena->partial[cls] && st->count) {
		rc = pma_lazy_get(heap, st->offs[st->count - 1], &slab);
		if (rc < 0)
			return rc; /* stays on the stack */
		st->count--;
		/* loaded now, or earlier by pma_heap_slab_at. Loaded that
		 * way, it may have been released since (the chunk is no slab,
		 * or another one: its owner has it); else it is not on the
		 * list (a listed slab has a free block, the list is empty) */
		if (!slab || slab->owner != arena->id || slab->cls != cls ||
		    slab->in_partial)
			continue;
		if (slab->navail) {
			pma_partial_push(arena, slab);
			pma_slab_empty_check(arena, slab);
		}
	}
	return 0;
}
