/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmabench backend for PMDK libpmemobj: pmemobj_alloc / pmemobj_free with
 * the destination PMEMoids in the pool's root object, so the allocation
 * and the store of its oid are one atomic, durable action, as in pmalloc.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <libpmemobj.h>

#include "bench.h"

#define BENCH_POBJ_LAYOUT "pmabench"

int bench_pobj_stats;

struct bench_pobj {
	PMEMobjpool *pop;
	PMEMoid *slots; /* in the pool: the root object */
	char path[PATH_MAX];
};

static int bpobj_open(const char *dir, uint64_t pool_size, size_t nslots,
		      void **ret_ctx)
{
	struct bench_pobj *b;
	PMEMoid root;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	snprintf(b->path, sizeof(b->path), "%s/pmabench-%d-pmemobj.pool", dir,
		 (int)getpid());
	(void)unlink(b->path);
	b->pop = pmemobj_create(b->path, BENCH_POBJ_LAYOUT, pool_size, 0600);
	if (!b->pop)
		goto out_free;
	root = pmemobj_root(b->pop, nslots * sizeof(PMEMoid));
	if (OID_IS_NULL(root))
		goto out_close;
	b->slots = pmemobj_direct(root);
	/* curr_allocated is a persistent statistic, off by default (the
	 * run_* ones are transient and on); on before any allocation but
	 * the root, which the callers' baseline holds anyway */
	if (bench_pobj_stats) {
		enum pobj_stats_enabled on = POBJ_STATS_ENABLED_BOTH;

		if (pmemobj_ctl_set(b->pop, "stats.enabled", &on))
			goto out_close;
	}
	*ret_ctx = b;
	return 0;

out_close:
	pmemobj_close(b->pop);
	(void)unlink(b->path);
out_free:
	free(b);
	return errno ? -errno : -EIO;
}

static void bpobj_close(void *ctx)
{
	struct bench_pobj *b = ctx;

	if (!b)
		return;
	pmemobj_close(b->pop);
	(void)unlink(b->path);
	free(b);
}

static int bpobj_alloc(void *ctx, size_t slot, size_t size)
{
	struct bench_pobj *b = ctx;

	if (pmemobj_alloc(b->pop, &b->slots[slot], size, 0, NULL, NULL))
		return errno ? -errno : -ENOMEM;
	return 0;
}

static int bpobj_free(void *ctx, size_t slot)
{
	struct bench_pobj *b = ctx;

	pmemobj_free(&b->slots[slot]);
	return 0;
}

static int bpobj_is_live(void *ctx, size_t slot)
{
	struct bench_pobj *b = ctx;

	return __atomic_load_n(&b->slots[slot].off, __ATOMIC_RELAXED) != 0;
}

/*
 * The chunks the heap holds: every run (run_active: allocated and free
 * units) plus the huge allocations (curr_allocated less run_allocated).
 * libpmemobj keeps no peak: the caller samples this.
 */
static int bpobj_footprint(void *ctx, uint64_t *ret_now, uint64_t *ret_peak)
{
	struct bench_pobj *b = ctx;
	uint64_t curr = 0, run_alloc = 0, run_active = 0;

	if (pmemobj_ctl_get(b->pop, "stats.heap.curr_allocated", &curr) ||
	    pmemobj_ctl_get(b->pop, "stats.heap.run_allocated", &run_alloc) ||
	    pmemobj_ctl_get(b->pop, "stats.heap.run_active", &run_active))
		return errno ? -errno : -EIO;
	*ret_now = run_active + (curr > run_alloc ? curr - run_alloc : 0);
	*ret_peak = 0;
	return 0;
}

const struct bench_alloc bench_alloc_pmemobj = {
	.name = "pmemobj",
	.has_counters = 0,
	.open = bpobj_open,
	.close = bpobj_close,
	.alloc = bpobj_alloc,
	.free = bpobj_free,
	.is_live = bpobj_is_live,
	.errormsg = pmemobj_errormsg,
	.footprint = bpobj_footprint,
};
