/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmabench backends for a PMAlloc heap over several parts, one per NUMA
 * node (pma_numa_nodes: the real ones, or PMAD_FAKE_NUMA's): "pmalloc-numa"
 * places each thread's blocks in its own node's part (local-first, the
 * default), "pmalloc-spread" lets the threads take the parts in turn
 * whatever node they run on (PMA_HEAP_INTERLEAVE). pmabench pins worker
 * i to the i-th CPU it may use, so the dest words of a thread's slots go
 * into a table in the part of that CPU's node (made at open by a thread
 * pinned there): with local-first, a thread writes nothing on another
 * node while its part has room, which pma_pm_counters' remote_lines
 * counts.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench.h"
#include "pmalloc.h"

#define NUMA_MAX_PARTS 8

struct bench_numa {
	struct pma_heap *heap;
	unsigned nparts;
	char paths[NUMA_MAX_PARTS][PATH_MAX];
	uint64_t *root; /* the tables' offsets, one per part */
	uint64_t *table[NUMA_MAX_PARTS]; /* by part; NULL if no CPU's */
	/* by the k-th CPU the process may use: the table of its part */
	unsigned ncpus;
	uint64_t **cpu_table;
};

/* the CPUs the process may use, in order (pmabench's pinning) */
static unsigned allowed_cpus(int *cpus, unsigned max)
{
	cpu_set_t set;
	unsigned n = 0;
	int c;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	for (c = 0; c < CPU_SETSIZE && n < max; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	return n;
}

/* the config of a pool with a part per node of nodes[n] */
static int numa_config(struct pma_config *cfg, const int *nodes, unsigned n)
{
	unsigned i;
	int rc;

	rc = pma_config_set_parts(cfg, n);
	for (i = 0; rc == 0 && i < n; i++)
		rc = pma_config_set_part_node(cfg, i, nodes[i]);
	if (rc == 0)
		rc = pma_config_set_flags(cfg, PMA_HEAP_FORCE);
	return rc;
}

/* a pool with one part per online node (at least 2), a heap over all */
static int numa_create(struct bench_numa *b, const char *dir,
		       uint64_t pool_size, unsigned flags)
{
	struct pma_config *cfg;
	int nodes[NUMA_MAX_PARTS];
	unsigned i, n;
	int rc;

	rc = pma_numa_nodes(nodes, NUMA_MAX_PARTS);
	if (rc < 0)
		return rc;
	n = (unsigned)rc < NUMA_MAX_PARTS ? (unsigned)rc : NUMA_MAX_PARTS;
	if (n < 2)
		return -ENODEV; /* one node: the plain pmalloc rows */
	/* the names pma_heap_create_cfg gives the parts */
	snprintf(b->paths[0], sizeof(b->paths[0]), "%s/pmabench-%d-numa.pool",
		 dir, (int)getpid());
	for (i = 1; i < n; i++)
		snprintf(b->paths[i], sizeof(b->paths[i]), "%.4000s.part%u",
			 b->paths[0], i);
	rc = pma_config_new(&cfg);
	if (rc < 0)
		return rc;
	rc = numa_config(cfg, nodes, n);
	if (rc == 0)
		rc = pma_heap_create_cfg(b->paths[0], pool_size / n, cfg,
					 &b->heap);
	pma_config_delete(&cfg);
	if (rc == 0)
		b->nparts = n;
	if (rc == 0 && flags) { /* reopen with the placement asked */
		pma_heap_close(b->heap);
		b->heap = NULL;
		rc = pma_heap_open(b->paths[0], flags, &b->heap);
	}
	return rc;
}

/* one CPU's share of numa_tables, in a thread started on that CPU: a
 * new thread reads its CPU at its first allocation (a thread that moves
 * is followed only within PMA_PLACE_RECHECK of its allocations, so the
 * opening thread pinned in turn would still allocate on its first CPU) */
struct table_job {
	struct bench_numa *b;
	size_t nslots;
	unsigned part; /* out: the part its blocks go to */
	int rc;
};

static void *table_thread(void *arg)
{
	struct table_job *j = arg;
	struct bench_numa *b = j->b;
	uint64_t *probe = &b->root[NUMA_MAX_PARTS];

	/* a probe block shows the thread's part */
	j->rc = pma_malloc_to(b->heap, 64, probe);
	if (j->rc < 0)
		return NULL;
	j->part = (unsigned)(*probe >> 56);
	j->rc = pma_free_from(b->heap, probe);
	if (j->rc == 0 && j->part >= NUMA_MAX_PARTS)
		j->rc = -ERANGE;
	if (j->rc == 0 && !b->table[j->part]) {
		j->rc = pma_zalloc_to(b->heap, j->nslots * sizeof(uint64_t),
				      &b->root[j->part]);
		if (j->rc == 0)
			b->table[j->part] =
				pma_direct(b->heap, b->root[j->part]);
	}
	return NULL;
}

/* a table of nslots dest words in the part of each CPU's node, made by a
 * thread on that CPU (local-first puts it there), one CPU at a time */
static int numa_tables(struct bench_numa *b, size_t nslots)
{
	int cpus[CPU_SETSIZE];
	struct table_job job = { b, nslots, 0, 0 };
	pthread_attr_t attr;
	cpu_set_t one;
	pthread_t tid;
	unsigned k;
	uint64_t root;
	int rc;

	b->ncpus = allowed_cpus(cpus, CPU_SETSIZE);
	b->cpu_table = calloc(b->ncpus ? b->ncpus : 1, sizeof(*b->cpu_table));
	if (!b->cpu_table || !b->ncpus)
		return -ENOMEM;
	rc = pma_root(b->heap, (size_t)NUMA_MAX_PARTS * 2 * sizeof(uint64_t),
		      &root);
	if (rc < 0)
		return rc;
	b->root = pma_direct(b->heap, root);
	for (k = 0; k < b->ncpus && rc == 0; k++) {
		CPU_ZERO(&one);
		CPU_SET(cpus[k], &one);
		rc = -pthread_attr_init(&attr);
		if (rc < 0)
			break;
		rc = -pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
		if (rc == 0 && (rc = -pthread_create(&tid, &attr, table_thread,
						     &job)) == 0) {
			pthread_join(tid, NULL);
			rc = job.rc;
		}
		pthread_attr_destroy(&attr);
		if (rc == 0)
			b->cpu_table[k] = b->table[job.part];
	}
	return rc;
}

static void numa_close(void *ctx)
{
	struct bench_numa *b = ctx;
	unsigned i;

	if (!b)
		return;
	pma_heap_close(b->heap);
	for (i = 0; i < b->nparts; i++)
		(void)unlink(b->paths[i]);
	free(b->cpu_table);
	free(b);
}

static int numa_open_flags(const char *dir, uint64_t pool_size, size_t nslots,
			   unsigned flags, void **ret_ctx)
{
	struct bench_numa *b = calloc(1, sizeof(*b));
	int rc;

	if (!b)
		return -ENOMEM;
	rc = numa_create(b, dir, pool_size, flags);
	if (rc == 0)
		rc = numa_tables(b, nslots);
	if (rc < 0) {
		numa_close(b);
		return rc;
	}
	*ret_ctx = b;
	return 0;
}

static int numa_open(const char *dir, uint64_t pool_size, size_t nslots,
		     void **ret_ctx)
{
	return numa_open_flags(dir, pool_size, nslots, 0, ret_ctx);
}

static int spread_open(const char *dir, uint64_t pool_size, size_t nslots,
		       void **ret_ctx)
{
	return numa_open_flags(dir, pool_size, nslots, PMA_HEAP_INTERLEAVE,
			       ret_ctx);
}

/* slot's dest word: in the table of the part of the CPU its thread is
 * pinned to (worker i: slots from i * bench_slots_per_thread) */
static uint64_t *numa_slot(struct bench_numa *b, size_t slot)
{
	size_t k = slot / bench_slots_per_thread % b->ncpus;

	return &b->cpu_table[k][slot];
}

static int numa_alloc(void *ctx, size_t slot, size_t size)
{
	struct bench_numa *b = ctx;

	return pma_malloc_to(b->heap, size, numa_slot(b, slot));
}

static int numa_free(void *ctx, size_t slot)
{
	struct bench_numa *b = ctx;

	return pma_free_from(b->heap, numa_slot(b, slot));
}

static int numa_is_live(void *ctx, size_t slot)
{
	struct bench_numa *b = ctx;

	return __atomic_load_n(numa_slot(b, slot), __ATOMIC_RELAXED) != 0;
}

static int64_t numa_checkpoints(void *ctx)
{
	struct bench_numa *b = ctx;
	struct pma_heap_stats st;

	if (pma_heap_stats(b->heap, &st) < 0)
		return -1;
	return (int64_t)(st.checkpoints + st.local_checkpoints);
}

const struct bench_alloc bench_alloc_pmalloc_numa = {
	.name = "pmalloc-numa",
	.has_counters = 1,
	.open = numa_open,
	.close = numa_close,
	.alloc = numa_alloc,
	.free = numa_free,
	.is_live = numa_is_live,
	.errormsg = pma_errormsg,
	.checkpoints = numa_checkpoints,
};

const struct bench_alloc bench_alloc_pmalloc_spread = {
	.name = "pmalloc-spread",
	.has_counters = 1,
	.open = spread_open,
	.close = numa_close,
	.alloc = numa_alloc,
	.free = numa_free,
	.is_live = numa_is_live,
	.errormsg = pma_errormsg,
	.checkpoints = numa_checkpoints,
};
