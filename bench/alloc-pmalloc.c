/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmabench backend for PMAlloc: pma_malloc_to / pma_free_from with the
 * destination words in the heap's root object, so every publish and every
 * clear is durable (the same guarantee libpmemobj's backend gets).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench.h"
#include "pmalloc.h"

struct bench_pma {
	struct pma_heap *heap;
	uint64_t *slots; /* in the pool: the root object */
	char path[PATH_MAX];
};

/* fragbench --morph: the threshold of the pmalloc rows (-1: the
 * library's default) */
static int bpma_morph_pct = -1, bpma_morph_idle = 1;

void bench_pmalloc_set_morph(int used_pct, int idle)
{
	bpma_morph_pct = used_pct;
	bpma_morph_idle = idle;
}

/* a heap of the library's defaults (layout, slab morphing) but flags,
 * and the bench's morph threshold if set */
static int bpma_open_flags(const char *dir, uint64_t pool_size, size_t nslots,
			   unsigned flags, void **ret_ctx)
{
	struct pma_config *cfg;
	struct bench_pma *b;
	uint64_t root;
	int rc;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	snprintf(b->path, sizeof(b->path), "%s/pmabench-%d-pmalloc.pool", dir,
		 (int)getpid());
	rc = pma_config_new(&cfg);
	if (rc < 0)
		goto out_free;
	if (bpma_morph_pct >= 0)
		rc = pma_config_set_morph(cfg, (unsigned)bpma_morph_pct,
					  bpma_morph_idle);
	if (rc == 0)
		rc = pma_config_set_flags(cfg, PMA_HEAP_FORCE | flags);
	if (rc == 0)
		rc = pma_heap_create_cfg(b->path, pool_size, cfg, &b->heap);
	pma_config_delete(&cfg);
	if (rc < 0)
		goto out_free;
	rc = pma_root(b->heap, nslots * sizeof(uint64_t), &root);
	if (rc < 0)
		goto out_close;
	b->slots = pma_direct(b->heap, root);
	*ret_ctx = b;
	return 0;

out_close:
	pma_heap_close(b->heap);
	(void)unlink(b->path);
out_free:
	free(b);
	return rc;
}

static int bpma_open(const char *dir, uint64_t pool_size, size_t nslots,
		     void **ret_ctx)
{
	return bpma_open_flags(dir, pool_size, nslots, 0, ret_ctx);
}

static int bpma_open_local(const char *dir, uint64_t pool_size, size_t nslots,
			   void **ret_ctx)
{
	return bpma_open_flags(dir, pool_size, nslots,
			       PMA_HEAP_LOCAL_CHECKPOINTS, ret_ctx);
}

/* slab morphing off (PMA_HEAP_NO_MORPH): fragbench's comparison rows */
static int bpma_open_nomorph(const char *dir, uint64_t pool_size, size_t nslots,
			     void **ret_ctx)
{
	return bpma_open_flags(dir, pool_size, nslots, PMA_HEAP_NO_MORPH,
			       ret_ctx);
}

static void bpma_close(void *ctx)
{
	struct bench_pma *b = ctx;

	if (!b)
		return;
	pma_heap_close(b->heap);
	(void)unlink(b->path);
	free(b);
}

static int bpma_alloc(void *ctx, size_t slot, size_t size)
{
	struct bench_pma *b = ctx;

	return pma_malloc_to(b->heap, size, &b->slots[slot]);
}

static int bpma_free(void *ctx, size_t slot)
{
	struct bench_pma *b = ctx;

	return pma_free_from(b->heap, &b->slots[slot]);
}

static int bpma_is_live(void *ctx, size_t slot)
{
	struct bench_pma *b = ctx;

	return __atomic_load_n(&b->slots[slot], __ATOMIC_RELAXED) != 0;
}

static int64_t bpma_checkpoints(void *ctx)
{
	struct bench_pma *b = ctx;
	struct pma_heap_stats st;

	if (pma_heap_stats(b->heap, &st) < 0)
		return -1;
	/* both kinds: a local one is the same work for one arena */
	return (int64_t)(st.checkpoints + st.local_checkpoints);
}

/* the heap's pages in use (slabs, extents, freed extents waiting for a
 * checkpoint) plus its metadata, and the library's exact peak of it */
static int bpma_footprint(void *ctx, uint64_t *ret_now, uint64_t *ret_peak)
{
	struct bench_pma *b = ctx;
	struct pma_heap_stats st;
	int rc;

	rc = pma_heap_stats(b->heap, &st);
	if (rc < 0)
		return rc;
	*ret_now = st.footprint_bytes;
	*ret_peak = st.peak_footprint_bytes;
	return 0;
}

const struct bench_alloc bench_alloc_pmalloc = {
	.name = "pmalloc",
	.has_counters = 1,
	.open = bpma_open,
	.close = bpma_close,
	.alloc = bpma_alloc,
	.free = bpma_free,
	.is_live = bpma_is_live,
	.errormsg = pma_errormsg,
	.checkpoints = bpma_checkpoints,
	.footprint = bpma_footprint,
};

const struct bench_alloc bench_alloc_pmalloc_local = {
	.name = "pmalloc-local",
	.has_counters = 1,
	.open = bpma_open_local,
	.close = bpma_close,
	.alloc = bpma_alloc,
	.free = bpma_free,
	.is_live = bpma_is_live,
	.errormsg = pma_errormsg,
	.checkpoints = bpma_checkpoints,
	.footprint = bpma_footprint,
};

const struct bench_alloc bench_alloc_pmalloc_nomorph = {
	.name = "pmalloc-nomorph",
	.has_counters = 1,
	.open = bpma_open_nomorph,
	.close = bpma_close,
	.alloc = bpma_alloc,
	.free = bpma_free,
	.is_live = bpma_is_live,
	.errormsg = pma_errormsg,
	.checkpoints = bpma_checkpoints,
	.footprint = bpma_footprint,
};
