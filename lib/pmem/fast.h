/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pmem fast paths for the hottest callers (lib/pmalloc's op path): a
 * one-line pm_flush and pm_drain, inline. pm_flush and pm_drain are these
 * same functions (flush.c); every other case (several lines, an armed
 * crash simulator, a thread's first flush) goes to the *_general ones.
 * This is still lib/pmem code: nothing outside lib/pmem flushes or fences.
 */
#ifndef PMAD_PMEM_FAST_H
#define PMAD_PMEM_FAST_H

#include "pmem/internal.h"
#include "pmem/pm.h"

/* does pm_flush do nothing on map? A BYTE mapping (eADR: a store is
 * durable once a fence made it visible) that the crash simulator does not
 * watch: the caller may skip the work done only to batch flushes */
static inline int pm_flush_is_noop(const struct pm_map *map)
{
	return map->noflush;
}

/* pm_flush(map, addr, len) */
static inline void pm_flush_fast(struct pm_map *map, const void *addr,
				 size_t len)
{
	uintptr_t line = (uintptr_t)addr & ~(uintptr_t)(PM_CACHELINE - 1);

	if (pm_flush_is_noop(map))
		return;
	if (__builtin_expect(len == 0 ||
				     (uintptr_t)addr + len - 1 - line >=
					     PM_CACHELINE ||
				     map->crash || !pm_tls_stats.registered,
			     0)) {
		pm_flush_general(map, addr, len);
		return;
	}
	pm_stats_count_line(&pm_tls_stats, line, len);
	if (__builtin_expect(map->node != pm_tls_stats.node, 0))
		pm_stats_count_remote(&pm_tls_stats, map->node, addr, len);
	map->flush_fn(addr, len);
}

/* pm_drain(map) */
static inline void pm_drain_fast(struct pm_map *map)
{
	if (__builtin_expect(map->crash || !pm_tls_stats.registered, 0)) {
		pm_drain_general(map);
		return;
	}
	ctr_add(&pm_tls_stats.s.fences, 1);
	pm_fence(map);
}

#endif
