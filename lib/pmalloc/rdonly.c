/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc read-only open (PMA_HEAP_RDONLY, for inspection tools). The pool
 * is mapped read-only; recovery runs the same replay as a writable open
 * (recovery.c, apply.c) but into DRAM copies of the page map and of each
 * touched slab's header + bitmap, made here on first use, so the DRAM state
 * equals what a recovery would produce while PM is never written. Dest
 * words are not redone and the heads do not move, so pma_log_foreach shows
 * the records still to be checkpointed. Writing operations get -EROFS.
 * A writable open's recovery uses the same copies for its dry run (the
 * shadow): a log that contradicts the heap is refused before PM is
 * written.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pmalloc/internal.h"
#include "util/errmsg.h"

int pma_heap_writable(struct pma_heap *heap)
{
	if (heap->rdonly)
		return util_errmsg_set(EROFS, "heap is open read-only");
	return 0;
}

struct pma_slab_hdr *pma_slab_meta(struct pma_heap *heap, uint64_t off)
{
	uint64_t chunk = pma_page_of(heap, off) / PMA_CHUNK_PAGES;
	void *copy;

	if (!heap->ro_slab_meta)
		return pma_addr(heap, off);
	pma_assert(chunk < heap->nchunks &&
		   off % PMA_CHUNK == heap->data_base % PMA_CHUNK);
	copy = heap->ro_slab_meta[chunk];
	if (!copy) {
		copy = malloc(PMA_SLAB_HDR_SIZE);
		if (!copy)
			return NULL;
		if (pma_pending_push(&heap->ro_meta_made, chunk) < 0) {
			free(copy);
			return NULL;
		}
		memcpy(copy, pma_addr(heap, off), PMA_SLAB_HDR_SIZE);
		heap->ro_slab_meta[chunk] = copy;
	}
	return copy;
}

/* free the slab metadata copies made since the last call */
void pma_slab_meta_release(struct pma_heap *heap)
{
	size_t i;

	for (i = 0; heap->ro_slab_meta && i < heap->ro_meta_made.count; i++) {
		free(heap->ro_slab_meta[heap->ro_meta_made.offs[i]]);
		heap->ro_slab_meta[heap->ro_meta_made.offs[i]] = NULL;
	}
	free(heap->ro_meta_made.offs);
	memset(&heap->ro_meta_made, 0, sizeof(heap->ro_meta_made));
}

int pma_shadow_begin(struct pma_heap *heap, struct pma_shadow *ret_shadow)
{
	size_t size = heap->geom.npages * sizeof(uint64_t);

	pma_assert(!heap->rdonly && !heap->ro_slab_meta);
	/* fresh zero pages: only the entries and chunks written cost */
	ret_shadow->pmap_sink = pma_zmap(size);
	heap->ro_slab_meta = pma_zmap(heap->nchunks * sizeof(void *));
	if (!ret_shadow->pmap_sink || !heap->ro_slab_meta) {
		pma_zunmap(ret_shadow->pmap_sink, size);
		pma_zunmap(heap->ro_slab_meta, heap->nchunks * sizeof(void *));
		heap->ro_slab_meta = NULL;
		return util_errmsg_set(ENOMEM, "out of memory");
	}
	ret_shadow->pmap_pm = heap->pmap_pm;
	memset(&ret_shadow->written, 0, sizeof(ret_shadow->written));
	ret_shadow->sorted = 0;
	heap->pmap_pm = ret_shadow->pmap_sink;
	heap->shadow = ret_shadow;
	return 0;
}

void pma_shadow_end(struct pma_heap *heap, struct pma_shadow *shadow)
{
	pma_slab_meta_release(heap);
	pma_zunmap(heap->ro_slab_meta, heap->nchunks * sizeof(void *));
	heap->ro_slab_meta = NULL;
	heap->pmap_pm = shadow->pmap_pm;
	heap->shadow = NULL;
	free(shadow->written.offs);
	pma_zunmap(shadow->pmap_sink, heap->geom.npages * sizeof(uint64_t));
}
