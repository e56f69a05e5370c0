/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmabench backend for jemalloc, the volatile upper bound: mallocx/dallocx
 * (Debian ships jemalloc unprefixed) into a DRAM slot array. The process
 * malloc stays glibc's: bench/Makemodule.am puts libc before libjemalloc
 * in the link, and pmabench checks that at start.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jemalloc/jemalloc.h>

#include "bench.h"

struct bench_je {
	size_t nslots;
	void **slots;
};

static int bje_open(const char *dir, uint64_t pool_size, size_t nslots,
		    void **ret_ctx)
{
	struct bench_je *b;

	(void)dir;
	(void)pool_size;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->nslots = nslots;
	b->slots = aligned_alloc(64, nslots * sizeof(*b->slots));
	if (!b->slots) {
		free(b);
		return -ENOMEM;
	}
	memset(b->slots, 0, nslots * sizeof(*b->slots));
	*ret_ctx = b;
	return 0;
}

static void bje_close(void *ctx)
{
	struct bench_je *b = ctx;
	size_t i;

	if (!b)
		return;
	for (i = 0; i < b->nslots; i++)
		if (b->slots[i])
			dallocx(b->slots[i], 0);
	free(b->slots);
	free(b);
}

static int bje_alloc(void *ctx, size_t slot, size_t size)
{
	struct bench_je *b = ctx;

	b->slots[slot] = mallocx(size, 0);
	return b->slots[slot] ? 0 : -ENOMEM;
}

static int bje_free(void *ctx, size_t slot)
{
	struct bench_je *b = ctx;

	dallocx(b->slots[slot], 0);
	b->slots[slot] = NULL;
	return 0;
}

static int bje_is_live(void *ctx, size_t slot)
{
	struct bench_je *b = ctx;

	return __atomic_load_n(&b->slots[slot], __ATOMIC_RELAXED) != NULL;
}

static const char *bje_errormsg(void)
{
	return "mallocx failed";
}

const struct bench_alloc bench_alloc_jemalloc = {
	.name = "jemalloc",
	.has_counters = 0,
	.open = bje_open,
	.close = bje_close,
	.alloc = bje_alloc,
	.free = bje_free,
	.is_live = bje_is_live,
	.errormsg = bje_errormsg,
};
