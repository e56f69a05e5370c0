/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pmem internals shared by map.c, flush.c, stats.c and crash.c.
 * struct pm_map wraps one pmem2 mapping and the functions taken from it.
 * crash is NULL unless the mapping was armed for crash simulation; the
 * flush path tests it with one branch and calls into crash.c only then.
 */
#ifndef PMAD_PMEM_INTERNAL_H
#define PMAD_PMEM_INTERNAL_H

#include <libpmem2.h>
#include <stddef.h>
#include <stdint.h>

#include "pmem/pm.h"

struct pm_crash_map;

struct pm_map {
	struct pmem2_map *pmem2; /* the libpmem2 mapping */
	unsigned char *addr; /* start of the mapping */
	size_t size; /* bytes mapped (whole source) */
	enum pm_granularity gran; /* what pmem2 reported */
	unsigned flags; /* enum pm_map_flags */
	pmem2_flush_fn flush_fn; /* write back, no ordering */
	pmem2_drain_fn drain_fn; /* fence */
	pmem2_persist_fn persist_fn; /* flush + drain */
	pmem2_memcpy_fn memcpy_fn; /* copy + flush (+ drain) */
	pmem2_memset_fn memset_fn; /* fill + flush (+ drain) */
	struct pm_crash_map *crash; /* shadow state, NULL if unarmed */
};

/* stats.c: account a flushed range / a fence to the calling thread */
void pm_stats_count_range(const void *addr, size_t len);
void pm_stats_count_fence(void);

/*
 * crash.c (crash-off.c without --enable-crash-sim, where attach does
 * nothing and the others are never reached because map->crash stays NULL).
 * attach: arm map if the simulator is armed (fd is dup'd); 0 or -errno.
 * detach: free the shadow and drop every thread's pending snapshots of map.
 * on_flush: snapshot the lines of [addr, addr+len) into this thread's
 * pending set. on_fence: number the fence, run PM_CRASH_AT / the hook, then
 * make this thread's pending snapshots durable in the shadows.
 */
int pm_crash_map_attach(struct pm_map *map, int fd);
void pm_crash_map_detach(struct pm_map *map);
void pm_crash_on_flush(struct pm_map *map, const void *addr, size_t len);
void pm_crash_on_fence(struct pm_map *map);

#endif
