/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pmem: the persistence layer, the ONLY code that flushes or fences.
 *
 * A struct pm_map is one libpmem2 mapping of a file or devdax device. Writers
 * store into pm_map_addr() directly, then make ranges durable with
 * pm_flush() + pm_drain() (or pm_persist(), which is both). A store is
 * durable only once its cache line was flushed and a fence (drain) followed.
 *
 * Per-thread counters (always on) measure what the caller asked for:
 * cache lines flushed, fences, reflushes, XPLines and bytes persisted.
 * On a BYTE mapping (eADR: the CPU caches are persistent) a flush writes
 * nothing back: pm_flush does nothing and counts nothing, pm_persist only
 * fences. pm_memcpy / pm_memset still count the bytes they store.
 *
 * Crash simulation (built with --enable-crash-sim, see crash.h) keeps a
 * shadow durable image per mapping and is fed from the same calls.
 */
#ifndef PMAD_PMEM_PM_H
#define PMAD_PMEM_PM_H

#include <stddef.h>
#include <stdint.h>

#define PM_CACHELINE 64
#define PM_XPLINE 256

/* store granularity: what a store needs before it is durable */
enum pm_granularity {
	PM_GRAN_BYTE = 0, /* eADR: a fence is enough */
	PM_GRAN_CACHE_LINE = 1, /* ADR: clwb/clflushopt + sfence */
	PM_GRAN_PAGE = 2, /* page cache: msync */
};

/* "BYTE", "CACHE_LINE", "PAGE" */
const char *pm_granularity_name(enum pm_granularity g);

enum pm_map_flags {
	PM_MAP_RDONLY = 1
			<< 0, /* map read-only (inspect of a read-only pool) */
	/* map copy-on-write (MAP_PRIVATE): stores never reach the file, and
	 * flushes make nothing durable (pmactl fsck --recovery); files only */
	PM_MAP_PRIVATE = 1 << 1,
};

struct pm_map;

/*
 * Map the whole of fd (a regular file or a devdax character device).
 * Returns 0 or a negative errno; pm_errormsg() says why. The map keeps no
 * reference to fd beyond the call (the caller still owns and closes it).
 */
int pm_map_new(int fd, unsigned flags, struct pm_map **ret_map);
/* unmap and free; *map becomes NULL; accepts NULL */
void pm_map_delete(struct pm_map **map);

void *pm_map_addr(const struct pm_map *map);
size_t pm_map_size(const struct pm_map *map);
enum pm_granularity pm_map_granularity(const struct pm_map *map);

/*
 * The file range [off, off + len) under map was deallocated (a hole
 * punched by lib/pool, made durable by the caller): it reads as zeros,
 * also after a crash. Nothing to do for the mapping itself; the crash
 * simulator's durable image gets the zeros too.
 */
void pm_map_discarded(struct pm_map *map, size_t off, size_t len);

/* write back the cache lines covering [addr, addr+len); no ordering */
void pm_flush(struct pm_map *map, const void *addr, size_t len);
/* fence: every earlier flush of this thread is durable when it returns */
void pm_drain(struct pm_map *map);
/* pm_flush + pm_drain */
void pm_persist(struct pm_map *map, const void *addr, size_t len);

enum pm_copy_flags {
	PM_COPY_NODRAIN = 1 << 0, /* flush (or stream) but do not fence */
};
/*
 * Copy / fill and make durable. Large copies use non-temporal stores (via
 * libpmem2), small ones temporal stores + flush. With PM_COPY_NODRAIN the
 * caller must pm_drain() before relying on durability.
 */
void *pm_memcpy(struct pm_map *map, void *dst, const void *src, size_t len,
		unsigned flags);
void *pm_memset(struct pm_map *map, void *dst, int c, size_t len,
		unsigned flags);

/* per-thread counters; cheap enough to stay on in benchmarks */
struct pm_stats {
	uint64_t lines_flushed; /* cache lines the caller flushed */
	uint64_t fences; /* pm_drain calls (explicit or implied) */
	uint64_t reflushes; /* flushes of a line flushed again while
				     fewer than 4 other distinct lines were
				     flushed since its last flush */
	uint64_t xplines; /* 256-byte XPLines written back: a flushed
				     line in a different XPLine than the
				     previously flushed line counts one */
	uint64_t bytes_persisted; /* bytes in flush/persist/memcpy ranges */
	/* of lines_flushed, those of a mapping on another NUMA node than
	 * the thread's (both known: pm_map_set_node, pm_thread_set_node) */
	uint64_t remote_lines;
};
/* the NUMA node a mapping's memory is on (-1: unknown, the default) */
void pm_map_set_node(struct pm_map *map, int node);
/* the node the calling thread runs on, as its caller last saw it (-1:
 * unknown, the default); flushes into a mapping on another node count
 * as remote_lines */
void pm_thread_set_node(int node);
/* the calling thread's counters */
void pm_stats_get(struct pm_stats *ret_stats);
void pm_stats_reset(void);
/* counters summed over all threads that ever flushed (exited ones too) */
void pm_stats_get_global(struct pm_stats *ret_stats);

/* last error message of this thread ("" if none) */
const char *pm_errormsg(void);

#endif
