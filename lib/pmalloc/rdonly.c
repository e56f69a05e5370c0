/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc read-only open (PMA_HEAP_RDONLY, for inspection tools). The pool
 * is mapped read-only; recovery runs the same replay as a writable open
 * (recovery.c, apply.c) but into DRAM copies of the page map and of each
 * touched slab's header + bitmap, made here on first use, so the DRAM state
 * equals what a recovery would produce while PM is never written. Dest
 * words are not redone and the heads do not move, so pma_log_foreach shows
 * the records still to be checkpointed. Writing operations get -EROFS.
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

	if (!heap->rdonly)
		return pma_addr(heap, off);
	pma_assert(chunk < heap->nchunks &&
		   off % PMA_CHUNK == heap->data_base % PMA_CHUNK);
	copy = heap->ro_slab_meta[chunk];
	if (!copy) {
		copy = malloc(PMA_SLAB_HDR_SIZE);
		if (!copy)
			return NULL;
		memcpy(copy, pma_addr(heap, off), PMA_SLAB_HDR_SIZE);
		heap->ro_slab_meta[chunk] = copy;
	}
	return copy;
}
