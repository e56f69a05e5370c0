/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pmem flush: flush / drain / persist / memcpy / memset through the
 * functions libpmem2 picked for the mapping. Every call is counted (the
 * counters measure what the caller asked for), except flushes on a BYTE
 * mapping, which write nothing back (pm_flush_is_noop); an armed mapping
 * feeds the crash simulator whatever its granularity.
 */
#include <libpmem2.h>

#include "pmem/fast.h"
#include "pmem/internal.h"
#include "pmem/pm.h"

/* pm_flush_fast's other cases: several lines, an armed mapping, the
 * thread's first flush (pm_stats_count_range registers it) */
void pm_flush_general(struct pm_map *map, const void *addr, size_t len)
{
	if (len == 0 || pm_flush_is_noop(map))
		return;
	pm_stats_count_range(addr, len);
	pm_stats_count_remote(&pm_tls_stats, map->node, addr, len);
	if (map->crash)
		pm_crash_on_flush(map, addr, len);
	map->flush_fn(addr, len);
}

void pm_drain_general(struct pm_map *map)
{
	pm_stats_count_fence();
	/* the simulator numbers the fence before it takes effect */
	if (map->crash)
		pm_crash_on_fence(map);
	pm_fence(map);
}

void pm_flush(struct pm_map *map, const void *addr, size_t len)
{
	pm_flush_fast(map, addr, len);
}

void pm_drain(struct pm_map *map)
{
	pm_drain_fast(map);
}

void pm_persist(struct pm_map *map, const void *addr, size_t len)
{
	if (map->crash) {
		pm_flush(map, addr, len);
		pm_drain(map);
		return;
	}
	if (len && !pm_flush_is_noop(map)) {
		pm_stats_count_range(addr, len);
		pm_stats_count_remote(&pm_tls_stats, map->node, addr, len);
	}
	pm_stats_count_fence();
	map->persist_fn(addr, len);
}

/* pmem2 flags for a copy/fill of len bytes; we always fence ourselves */
static unsigned pm_mem_flags(size_t len)
{
	unsigned flags = PMEM2_F_MEM_NODRAIN;

	if (len >= PM_XPLINE)
		flags |= PMEM2_F_MEM_NONTEMPORAL;
	return flags;
}

/* account the written range as flushed, then fence unless NODRAIN */
static void pm_mem_done(struct pm_map *map, const void *dst, size_t len,
			unsigned flags)
{
	if (len) {
		pm_stats_count_range(dst, len);
		pm_stats_count_remote(&pm_tls_stats, map->node, dst, len);
		if (map->crash)
			pm_crash_on_flush(map, dst, len);
	}
	if (!(flags & PM_COPY_NODRAIN))
		pm_drain(map);
}

void *pm_memcpy(struct pm_map *map, void *dst, const void *src, size_t len,
		unsigned flags)
{
	map->memcpy_fn(dst, src, len, pm_mem_flags(len));
	pm_mem_done(map, dst, len, flags);
	return dst;
}

void *pm_memset(struct pm_map *map, void *dst, int c, size_t len,
		unsigned flags)
{
	map->memset_fn(dst, c, len, pm_mem_flags(len));
	pm_mem_done(map, dst, len, flags);
	return dst;
}
