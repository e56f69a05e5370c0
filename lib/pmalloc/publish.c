/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pma publish: persistence entry points for the layers above PMAlloc
 * (HDPM), which store into blocks of the heap and must make those stores
 * durable without flushing themselves (only lib/pmem flushes or fences).
 * They act on the heap's part mapping; the caller keeps its addresses
 * inside that part (pma_direct of a block of this heap).
 */
#include <string.h>

#include "pmalloc.h"
#include "pmalloc/internal.h"
#include "pmem/pm.h"

void pma_flush(struct pma_heap *heap, const void *addr, size_t len)
{
	pm_flush(heap->map, addr, len);
}

void pma_drain(struct pma_heap *heap)
{
	pm_drain(heap->map);
}

void pma_persist(struct pma_heap *heap, const void *addr, size_t len)
{
	pm_persist(heap->map, addr, len);
}

void pma_memcpy_flush(struct pma_heap *heap, void *dst, const void *src,
		      size_t len)
{
	pm_memcpy(heap->map, dst, src, len, PM_COPY_NODRAIN);
}

void pma_memset_flush(struct pma_heap *heap, void *dst, int c, size_t len)
{
	pm_memset(heap->map, dst, c, len, PM_COPY_NODRAIN);
}
