/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc objects: offset <-> address, what an offset names (slab block,
 * extent), usable size, the root object, and the checks that keep dest
 * words out of pool and heap metadata. All lock-free readers of the DRAM
 * state: a slab a checkpoint released while they read it was empty (no
 * live block), and its DRAM slab stays allocated while the heap is open
 * (reused for a new slab: then it describes that one).
 */
#include <errno.h>

#include "pmalloc/internal.h"
#include "util/errmsg.h"

PMA_API const char *pma_errormsg(void)
{
	return util_errmsg();
}

PMA_API void *pma_direct(struct pma_heap *heap, uint64_t off)
{
	return heap && off ? pool_direct(heap->pool, off) : NULL;
}

PMA_API uint64_t pma_offset(struct pma_heap *heap, const void *addr)
{
	return heap && addr ? pool_offset(heap->pool, addr) : 0;
}

struct pma_slab *pma_heap_slab_load(struct pma_heap *heap, uint64_t chunk)
{
	struct pma_slab *slab;

	if (pma_lazy_get(heap, chunk, &slab) < 0)
		return NULL;
	return slab;
}

uint64_t *pma_heap_dest_addr(struct pma_heap *heap, uint64_t off)
{
	char *addr;

	if (pma_heap_dest_check(heap, off) < 0)
		return NULL;
	addr = pool_direct(heap->pool, off);
	/* the whole word must be mapped */
	if (!addr || !pool_direct(heap->pool, off + sizeof(uint64_t) - 1))
		return NULL;
	return (uint64_t *)addr;
}

PMA_API size_t pma_usable_size(struct pma_heap *heap, uint64_t off)
{
	uint64_t b = pool_off_byte(off), e;
	struct pma_slab *slab;
	uint32_t idx;

	if (!heap || pool_off_part(off) != heap->part || b < heap->data_base ||
	    pma_page_of(heap, b) >= heap->geom.npages)
		return 0;
	slab = pma_heap_slab_at(heap, b);
	if (slab) {
		if (pma_slab_index(slab, b, &idx) < 0 ||
		    !pma_slab_is_live(slab, idx))
			return 0;
		return slab->block_size;
	}
	e = atomic_load(&heap->pmap[pma_page_of(heap, b)]);
	if (b % PMA_PAGE || pma_pmap_kind(e) != PMA_PMAP_EXTENT)
		return 0;
	return pma_pmap_npages(e) * PMA_PAGE;
}

PMA_API int pma_root(struct pma_heap *heap, size_t size, uint64_t *ret_off)
{
	uint64_t off;
	size_t have;
	int rc = 0;

	if (!heap || !ret_off || !size)
		return util_errmsg_set(EINVAL, "no heap, size or ret_off");
	pthread_mutex_lock(&heap->root_lock);
	off = __atomic_load_n(&heap->hdr->root_off, __ATOMIC_ACQUIRE);
	if (!off) { /* -EROFS if read-only */
		rc = pma_alloc_to(heap, size, &heap->hdr->root_off,
				  PMA_ALLOC_ZERO);
		off = heap->hdr->root_off;
	} else if (!(have = pma_usable_size(heap, off))) {
		rc = util_errmsg_set(EIO,
				     "the root word 0x%llx names no live "
				     "block (corrupt heap)",
				     (unsigned long long)off);
	} else if (have < size) {
		rc = util_errmsg_set(EINVAL,
				     "root object has %zu bytes, %zu "
				     "asked",
				     have, size);
	}
	pthread_mutex_unlock(&heap->root_lock);
	if (rc == 0)
		*ret_off = off;
	return rc;
}
