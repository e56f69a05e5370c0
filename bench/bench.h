/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmabench internals: the allocator backends (pmalloc, libpmemobj,
 * jemalloc) behind one table of functions working on numbered destination
 * slots, the workloads that drive them, and the thread synchronisation the
 * workloads share. An "op" is one allocation or one free.
 */
#ifndef PMAD_BENCH_H
#define PMAD_BENCH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "pmalloc.h"

/* destination slots each worker thread owns (larson: per bin) */
#define BENCH_SLOTS_PER_THREAD 1024
#define BENCH_MAX_WLS 16 /* workloads in one pmabench run */
/* the slots each worker owns in the current run: BENCH_SLOTS_PER_THREAD,
 * or a workload's slots_total divided among its workers (run.c sets it
 * before the pool is made; backends that place slots by worker read it) */
extern size_t bench_slots_per_thread;

/*
 * An allocator backend. Every allocation is published into slot i of an
 * array of destination words: inside the pool for the persistent
 * allocators (so the publish is durable), in DRAM for jemalloc.
 */
struct bench_alloc {
	const char *name;
	int has_counters; /* pmalloc: lib/pmem counts flushes and fences */
	/* make a pool in dir with nslots empty slots */
	int (*open)(const char *dir, uint64_t pool_size, size_t nslots,
		    void **ret_ctx);
	/* close and remove the pool (DRAM: free what is left); accepts NULL */
	void (*close)(void *ctx);
	int (*alloc)(void *ctx, size_t slot, size_t size);
	int (*free)(void *ctx, size_t slot);
	/* slot names a live block */
	int (*is_live)(void *ctx, size_t slot);
	/* message for the last failure of this thread */
	const char *(*errormsg)(void);
	/* checkpoints since open, or -1 if unknown; NULL if never known */
	int64_t (*checkpoints)(void *ctx);
	/* fragbench: bytes of the pool the allocator holds now (*ret_now)
	 * and its own exact peak since open (*ret_peak, 0 if it keeps none:
	 * the caller samples now); 0 or -errno; NULL if unknown */
	int (*footprint)(void *ctx, uint64_t *ret_now, uint64_t *ret_peak);
};

extern const struct bench_alloc bench_alloc_pmalloc;
/* slab morphing off (the library's default is on) */
extern const struct bench_alloc bench_alloc_pmalloc_nomorph;
/* the slab morphing threshold of the pmalloc backends' heaps
 * (pma_config_set_morph; used_pct -1: the library's default) */
void bench_pmalloc_set_morph(int used_pct, int idle);
extern const struct bench_alloc bench_alloc_pmalloc_local;
/* a heap over one part per NUMA node: local-first, and parts in turn */
extern const struct bench_alloc bench_alloc_pmalloc_numa;
extern const struct bench_alloc bench_alloc_pmalloc_spread;
extern const struct bench_alloc bench_alloc_pmemobj;
/* pmalloc on a heap opened through pmad ($PMAD_SOCKET) with libpmad */
extern const struct bench_alloc bench_alloc_pmad;
extern const struct bench_alloc bench_alloc_jemalloc;
/* alloc-pmemobj.c: pools opened next enable libpmemobj's persistent
 * statistics too (fragbench; costs time, so pmabench leaves it off) */
extern int bench_pobj_stats;

/* ------------------------------------------------------------ sync */

/* a word a thread can wait on until it changes; futex based */
struct wl_event {
	_Atomic uint32_t val;
	_Atomic uint32_t waiters;
};

/* wait until ev->val != old or *abort; -ECANCELED on abort */
int wl_event_wait(struct wl_event *ev, uint32_t old, _Atomic int *abort);
void wl_event_set(struct wl_event *ev, uint32_t val);

typedef void (*wl_serial_fn)(void *arg);

/* a reusable barrier; the last thread to arrive runs fn before release */
struct wl_barrier {
	_Atomic uint32_t count;
	unsigned nthreads;
	struct wl_event gen;
	_Atomic int *abort;
};

void wl_barrier_init(struct wl_barrier *b, unsigned nthreads,
		     _Atomic int *abort);
int wl_barrier_wait(struct wl_barrier *b, wl_serial_fn fn, void *arg);

/* ------------------------------------------------------------ workloads.c */

struct wl_shared;

/* one worker thread's view of a run */
struct wl_thread {
	unsigned id; /* 0 .. os_threads-1 */
	const struct bench_alloc *alloc;
	void *ctx; /* the backend's pool */
	struct wl_shared *shared; /* per-run state of the workload */
	_Atomic int *abort; /* set by the first thread that fails */
	uint64_t rng; /* xorshift64* state */
	uint64_t pos; /* workload position (resumable) */
	uint64_t aux; /* workload counter (resumable) */
	uint64_t st[6]; /* more workload state (sh6bench; resumable) */
	int err; /* first error, negative errno */
	char errmsg[160]; /* and its message */
};

/* the calling thread's time spent waiting for other threads (barriers,
 * prod-con batches) since wl_wait_reset, in ns */
uint64_t wl_wait_ns(void);
void wl_wait_reset(void);

struct bench_workload {
	const char *name;
	const char *sizes; /* request sizes, for the README/JSON */
	unsigned threads_mult; /* OS threads per "thread" (prod-con: 2) */
	unsigned op_divisor; /* ops = --ops / op_divisor (large: 8) */
	uint64_t quantum; /* ops per thread must be a multiple of it */
	/* slots all workers own together, divided among them (Hoard's
	 * threadtest: 30000 objects over the threads); 0: each owns
	 * BENCH_SLOTS_PER_THREAD */
	size_t slots_total;
	unsigned extra_bins; /* slot sets beyond one per OS thread */
	/* perform exactly nops ops; resumes where the last call stopped */
	int (*run)(struct wl_thread *t, uint64_t nops);
};

/* the state threads of one run share (barriers, prod-con rings) */
int wl_shared_new(unsigned os_threads, _Atomic int *abort,
		  struct wl_shared **ret_shared);
void wl_shared_delete(struct wl_shared *shared);

extern const struct bench_workload *const bench_workloads[];

const struct bench_workload *bench_workload_find(const char *name);

/* ------------------------------------------------------------ run.c */

/* the measurement of one (bench, threads, allocator) row */
struct bench_result {
	const struct bench_alloc *alloc;
	int err; /* negative errno: the row failed */
	char errmsg[160];
	uint64_t ops; /* timed ops, all threads */
	double secs;
	double ops_per_sec;
	struct pma_pm_counters pm; /* persistence counter deltas */
	int64_t checkpoints; /* during the timed phase, -1: unknown */
	/* the share of the threads' timed phase spent waiting for each
	 * other in the workload (wl_wait_ns), 0..1 */
	double wait_frac;
};

/* pmalloc, pmemobj, jemalloc, pmalloc-local, pmalloc-numa, -spread */
#define BENCH_NALLOCS 8

struct bench_cfg;
/* measure each of allocs on (wl, threads) into ret[i]: cfg->repeat
 * rounds, the allocators taking turns in each, the median run of each
 * is kept; a failure is reported in ret[i].err, not returned */
void bench_run_group(const struct bench_cfg *cfg,
		     const struct bench_workload *wl, unsigned threads,
		     const struct bench_alloc *const *allocs, unsigned nallocs,
		     struct bench_result *ret);

/* ------------------------------------------------------------ recovery.c */

/* crash heaps holding cfg->rec_objs live objects, time the reopen, print */
int bench_recovery(const struct bench_cfg *cfg, const char *mode);
void bench_recovery_header(void);

/* ------------------------------------------------------------ pmabench.c */

struct bench_cfg {
	const char *dir; /* where pools are created */
	uint64_t ops; /* timed ops per row (all threads together) */
	uint64_t warmup; /* untimed ops per row before them */
	uint64_t pool_size; /* bytes per pool */
	uint64_t seed; /* random seed (same for every allocator) */
	uint64_t rec_objs[4]; /* recovery: live object counts */
	unsigned rec_nobjs;
	/* recovery: a pool of this many parts, one per node, filled by a
	 * thread on each node's CPU (0 or 1: one part) */
	unsigned rec_parts;
	unsigned repeat; /* runs per row; the median is reported */
	int pin; /* worker i runs on the i-th CPU the process may use */
	int json; /* JSON lines instead of a table */
};

/* print "key":v then sep to stdout; null for a negative v / a NULL v */
void bench_json_num(const char *key, double v, const char *sep);
void bench_json_str(const char *key, const char *v, const char *sep);

/* monotonic clock in nanoseconds */
uint64_t bench_now_ns(void);

#endif
