/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pma publish: persistence entry points for the layers above PMAlloc
 * (HDPM), which store into blocks of the heap and must make those stores
 * durable without flushing themselves (only lib/pmem flushes or fences).
 * They act on the mapping of the part addr lies in (a block of any part
 * of the heap: pma_direct).
 */
#include <string.h>

#include "pmalloc.h"
#include "pmalloc/internal.h"
#include "pmem/pm.h"

/* the mapping of the part addr is in (part 0's first: one compare) */
static struct pm_map *map_of(struct pma_heap *heap, const void *addr)
{
	uint64_t off;

	if ((uintptr_t)addr - (uintptr_t)heap->part_base < heap->part_size)
		return heap->map;
	off = pool_offset(heap->pool, addr);
	return off ? pool_part_map(heap->pool, pool_off_part(off)) : heap->map;
}

void pma_flush(struct pma_heap *heap, const void *addr, size_t len)
{
	pm_flush(map_of(heap, addr), addr, len);
}

void pma_drain(struct pma_heap *heap)
{
	pm_drain(heap->map);
}

void pma_persist(struct pma_heap *heap, const void *addr, size_t len)
{
	pm_persist(map_of(heap, addr), addr, len);
}

void pma_memcpy_flush(struct pma_heap *heap, void *dst, const void *src,
		      size_t len)
{
	pm_memcpy(map_of(heap, dst), dst, src, len, PM_COPY_NODRAIN);
}

void pma_memset_flush(struct pma_heap *heap, void *dst, int c, size_t len)
{
	pm_memset(map_of(heap, dst), dst, c, len, PM_COPY_NODRAIN);
}

PMA_API void pma_pm_counters(struct pma_pm_counters *c, int thread_only)
{
	struct pm_stats st;

	if (!c)
		return;
	if (thread_only)
		pm_stats_get(&st);
	else
		pm_stats_get_global(&st);
	*c = (struct pma_pm_counters){
		.lines_flushed = st.lines_flushed,
		.fences = st.fences,
		.reflushes = st.reflushes,
		.bytes_persisted = st.bytes_persisted,
		.remote_lines = st.remote_lines,
		.xplines = st.xplines,
	};
}

PMA_API const char *pma_heap_persistence(const struct pma_heap *heap)
{
	return heap ? pm_granularity_name(pm_map_granularity(heap->map)) : NULL;
}
