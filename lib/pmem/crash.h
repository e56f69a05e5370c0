/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pmem crash simulation (test builds, --enable-crash-sim).
 *
 * Every pm_map keeps a shadow "durable image": what the media would hold
 * after a power failure. pm_flush() snapshots the flushed lines into a
 * pending set; pm_drain() (fence) moves the pending snapshots of the calling
 * thread into the durable image. Stores that were never flushed, or flushed
 * but not fenced, are not durable.
 *
 * A crash image is the durable image, optionally plus a random subset of the
 * lines that are dirty (current content differs) and were not durable, each
 * applied in 8-byte words only (8-byte atomicity, so a torn line mixes old
 * and new words, never bytes within a word).
 *
 * The simulator is compiled in only with --enable-crash-sim, and armed at
 * run time: mappings made while it is armed get a shadow image. It is armed
 * by PM_CRASH_SIM=1 or PM_CRASH_AT=N in the environment (read at the first
 * pm_map_new) or by pm_crash_arm(). Unarmed, the only cost is one branch.
 *
 * Fences are numbered globally from 1. Triggers:
 *  - PM_CRASH_AT=N in the environment: just before fence N takes effect,
 *    every live mapping's crash image (seed from PM_CRASH_SEED, default 0 =
 *    durable image only) is written over its file and the process _exit()s
 *    with status PM_CRASH_EXIT_CODE.
 *  - pm_crash_set_hook(): a callback at every fence, before it takes effect,
 *    that may write images with pm_crash_write_image() (in-process sweeps).
 * In builds without crash simulation, pm_crash_enabled() returns 0 and the
 * other calls return -ENOTSUP.
 */
#ifndef PMAD_PMEM_CRASH_H
#define PMAD_PMEM_CRASH_H

#include <stddef.h>
#include <stdint.h>

#include "pmem/pm.h"

#define PM_CRASH_EXIT_CODE 86

/* 1 if this build has the simulator */
int pm_crash_enabled(void);

/* arm (1) or disarm (0) for mappings created afterwards; -ENOTSUP if the
 * build has no simulator */
int pm_crash_arm(int on);

/* number of fences issued so far (global, all threads); 0 if disabled */
uint64_t pm_crash_fence_count(void);

/* hook called before fence number fence_no takes effect */
typedef void (*pm_crash_hook_fn)(uint64_t fence_no, void *arg);
int pm_crash_set_hook(pm_crash_hook_fn fn, void *arg);

/*
 * Build a crash image of map into buf (pm_map_size(map) bytes).
 * seed 0: the durable image alone. seed != 0: the durable image plus a
 * pseudo-random subset (from seed) of non-durable dirty lines, applied in
 * 8-byte words. Returns 0 or -errno.
 */
int pm_crash_image(struct pm_map *map, uint64_t seed, void *buf);
/* same, written to the file at path (whole mapping size) */
int pm_crash_write_image(struct pm_map *map, uint64_t seed, const char *path);

/* number of cache lines currently dirty but not durable (for tests) */
size_t pm_crash_dirty_lines(struct pm_map *map);

#endif
