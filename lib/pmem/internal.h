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
#include "util/tls.h"

struct pm_crash_map;

/* stats.c: a thread's counters; the one-line case below is inlined into
 * pm_flush / pm_drain (a log append flushes one line per op) */
#define PM_MRU_LINES 4 /* distinct lines remembered for reflush detection */
#define PM_NO_LINE UINTPTR_MAX

struct pm_tstats {
	struct pm_stats s; /* this thread's counters */
	uintptr_t mru[PM_MRU_LINES]; /* last distinct lines, [0] newest */
	uintptr_t last_xpline; /* XPLine of the last flushed line */
	int registered; /* on stats_threads, key set */
	int node; /* pm_thread_set_node, -1 unknown */
	struct pm_tstats *next, **pprev; /* stats_threads links */
};

extern UTIL_TLS_FAST struct pm_tstats pm_tls_stats;
void pm_stats_register(struct pm_tstats *t);

static inline void ctr_add(uint64_t *ctr, uint64_t v)
{
	__atomic_store_n(ctr, *ctr + v, __ATOMIC_RELAXED);
}

/* count the lines of [addr, addr+len) as remote if map's node and the
 * thread's are known and differ (the caller saw map->node != t->node) */
void pm_stats_count_remote(struct pm_tstats *t, int map_node, const void *addr,
			   size_t len);

static inline struct pm_tstats *pm_stats_self(void)
{
	struct pm_tstats *t = &pm_tls_stats;

	if (__builtin_expect(!t->registered, 0))
		pm_stats_register(t);
	return t;
}

/* one flushed line: a reflush if it is in the MRU; move it to the front
 * (the same result as the general case in stats.c for n = 1), unrolled */
_Static_assert(PM_MRU_LINES == 4, "pm_stats_count_line is unrolled for 4");
static inline void pm_stats_count_line(struct pm_tstats *t, uintptr_t line,
				       size_t len)
{
	uintptr_t *m = t->mru, xp = line / PM_XPLINE;
	int hit = 1;

	ctr_add(&t->s.lines_flushed, 1);
	ctr_add(&t->s.bytes_persisted, len);
	if (m[0] != line) {
		if (m[1] == line) {
			m[1] = m[0];
		} else if (m[2] == line) {
			m[2] = m[1];
			m[1] = m[0];
		} else {
			hit = m[3] == line;
			m[3] = m[2];
			m[2] = m[1];
			m[1] = m[0];
		}
		m[0] = line;
	}
	if (hit)
		ctr_add(&t->s.reflushes, 1);
	if (xp != t->last_xpline) {
		ctr_add(&t->s.xplines, 1);
		t->last_xpline = xp;
	}
}

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
	/* pm_flush does nothing: a BYTE mapping the crash simulator does not
	 * watch (pm_map_noflush_update keeps it; read at every flush) */
	int noflush;
	int node; /* NUMA node of the memory, -1 unknown */
};

/* recompute map->noflush after gran or crash changed: a BYTE mapping
 * never flushes, armed or not (the simulator models it as eADR: every
 * store is durable by the next fence, see crash.c) */
static inline void pm_map_noflush_update(struct pm_map *map)
{
	map->noflush = map->gran == PM_GRAN_BYTE;
}

/* wait for this thread's flushes: libpmem2's drain function, inline where
 * it is one instruction (x86-64: libpmem2's drain is sfence, after
 * clwb/clflushopt and as the ordering fence of a BYTE mapping; PAGE
 * mappings keep pmem2's) */
static inline void pm_fence(const struct pm_map *map)
{
#if defined(__x86_64__)
	if (map->gran != PM_GRAN_PAGE) {
		__builtin_ia32_sfence();
		return;
	}
#endif
	map->drain_fn();
}

/* stats.c: account a flushed range / a fence to the calling thread */
void pm_stats_count_range(const void *addr, size_t len);
/* flush.c: pm_flush / pm_drain beyond their inline case (fast.h) */
void pm_flush_general(struct pm_map *map, const void *addr, size_t len);
void pm_drain_general(struct pm_map *map);
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
/* discard: [off, off + len) reads as zeros and is durable (pm_map_discarded) */
void pm_crash_on_discard(struct pm_map *map, size_t off, size_t len);

#endif
