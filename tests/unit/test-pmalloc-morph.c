/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Slab morphing (layout version 9, doc/morphing.md): the state machine
 * (plain -> mixed -> plain), its persistence across reopen and kill, the
 * off switch, and morphs under concurrent allocation and remote frees.
 * Every check looks at the blocks the dest words name: each live, none
 * overlapping another, and the class counts of pma_heap_stats.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "pmalloc.h"
#include "pmalloc/internal.h"
#include "../lib/test-cfg.h"

#define MIB (1024ULL * 1024)
#define HEAP_SIZE (32 * MIB)
#define NDEST 8192

struct fx {
	char dir[64];
	char path[96];
	struct pma_heap *heap;
	uint64_t *dests; /* NDEST words in the root object */
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	test_cfg_reset();
	test_cfg.format_version = PMA_HEAP_VERSION;
	assert_int_equal(pma_config_set_morph(&test_cfg, 20, 1), 0);
	strcpy(f->dir, "/dev/shm/pma-morph-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/heap", f->dir);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	pma_heap_close(f->heap);
	unlink(f->path);
	rmdir(f->dir);
	free(f);
	return 0;
}

static void fx_root(struct fx *f)
{
	uint64_t root;

	assert_int_equal(pma_root(f->heap, NDEST * 8, &root), 0);
	f->dests = pma_direct(f->heap, root);
	assert_non_null(f->dests);
}

static void fx_create(struct fx *f)
{
	assert_int_equal(test_heap_create(f->path, HEAP_SIZE, 0, &f->heap), 0);
	fx_root(f);
}

static void fx_reopen(struct fx *f)
{
	pma_heap_close(f->heap);
	f->heap = NULL;
	assert_int_equal(test_heap_open(f->path, 0, &f->heap), 0);
	fx_root(f);
}

struct blk {
	uint64_t off, size;
};

static int blk_cmp(const void *a, const void *b)
{
	const struct blk *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* every dest names a live block, no two overlap; the named blocks of
 * each class match the stats' used counts; returns the named blocks */
static unsigned check_blocks(struct fx *f)
{
	struct blk *b = calloc(NDEST, sizeof(*b));
	uint64_t used[PMA_NCLASSES] = { 0 };
	struct pma_heap_stats st;
	unsigned i, n = 0;

	assert_non_null(b);
	for (i = 0; i < NDEST; i++) {
		if (!f->dests[i])
			continue;
		b[n].off = f->dests[i];
		b[n].size = pma_usable_size(f->heap, f->dests[i]);
		if (!b[n].size)
			fail_msg("dest %u: 0x%llx is not live", i,
				 (unsigned long long)f->dests[i]);
		if (b[n].size <= PMA_SMALL_MAX)
			used[pma_class_of(b[n].size)]++;
		n++;
	}
	qsort(b, n, sizeof(*b), blk_cmp);
	for (i = 1; i < n; i++)
		if (b[i - 1].off + b[i - 1].size > b[i].off)
			fail_msg("0x%llx (%llu bytes) overlaps 0x%llx",
				 (unsigned long long)b[i - 1].off,
				 (unsigned long long)b[i - 1].size,
				 (unsigned long long)b[i].off);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	for (i = 0; i < PMA_NCLASSES; i++)
		if (st.classes[i].used != used[i])
			fail_msg("class %u: stats say %llu used, %llu named", i,
				 (unsigned long long)st.classes[i].used,
				 (unsigned long long)used[i]);
	free(b);
	return n;
}

/* fill dests [lo, hi) with blocks of size */
static void fill(struct fx *f, unsigned lo, unsigned hi, size_t size)
{
	unsigned i;

	for (i = lo; i < hi; i++)
		assert_int_equal(pma_malloc_to(f->heap, size, &f->dests[i]), 0);
}

/* phase 1 of fragbench W2 in small: 100 B blocks, all but every tenth
 * freed, a checkpoint (the slabs are idle), then 130 B blocks */
static void shift(struct fx *f, unsigned n, uint64_t *ret_slabs)
{
	struct pma_heap_stats st;
	unsigned i;

	fill(f, 0, n, 100);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	*ret_slabs = st.classes[pma_class_of(100)].slabs;
	for (i = 0; i < n; i++)
		if (i % 10)
			assert_int_equal(pma_free_from(f->heap, &f->dests[i]),
					 0);
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	fill(f, n, 2 * n, 130);
}

static void test_morph_cycle(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats st, st0;
	unsigned i, n = 3000;
	uint64_t slabs;

	fx_create(f);
	shift(f, n, &slabs);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_true(st.slabs_morphed > 0);
	assert_true(st.mixed_slabs > 0);
	assert_int_equal(st.classes[pma_class_of(100)].used, n / 10);
	assert_int_equal(st.classes[pma_class_of(130)].used, n);
	/* the 130 B blocks went into the 100 B class's slabs, mostly: fewer
	 * slabs in all than new ones alone would have needed */
	assert_true(st.classes[pma_class_of(130)].slabs +
			    st.classes[pma_class_of(100)].slabs <
		    slabs + n * 192 / 65536);
	check_blocks(f);
	/* persistent: the same after a checkpoint and a reopen */
	fx_reopen(f);
	assert_int_equal(pma_heap_stats(f->heap, &st0), 0);
	assert_int_equal(st0.mixed_slabs, st.mixed_slabs);
	check_blocks(f);
	/* the old blocks go: the slabs become plain */
	for (i = 0; i < n; i++)
		assert_int_equal(pma_free_from(f->heap, &f->dests[i]), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.mixed_slabs, 0);
	check_blocks(f);
	fx_reopen(f);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.mixed_slabs, 0);
	check_blocks(f);
	/* and all: the heap is empty but for the root */
	for (i = n; i < 2 * n; i++)
		assert_int_equal(pma_free_from(f->heap, &f->dests[i]), 0);
	check_blocks(f);
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	for (i = 0; i < PMA_NCLASSES; i++)
		assert_int_equal(st.classes[i].used, 0);
}

/* frees of old blocks and of new ones by their dests in a mixed slab
 * are told apart; a double free of an old block is refused */
static void test_morph_frees(void **state)
{
	struct fx *f = *state;
	uint64_t off, slabs;
	unsigned n = 1000;

	fx_create(f);
	shift(f, n, &slabs);
	off = f->dests[10];
	assert_true(pma_usable_size(f->heap, off) == 128);
	assert_int_equal(pma_free_from(f->heap, &f->dests[10]), 0);
	f->dests[10] = off;
	assert_int_equal(pma_free_from(f->heap, &f->dests[10]), -EINVAL);
	f->dests[10] = 0;
	check_blocks(f);
	fx_reopen(f);
	check_blocks(f);
}

/* PMA_HEAP_NO_MORPH and a threshold of 0: no morph; a version 8 heap
 * never morphs (no record it does not know) */
static void test_morph_off(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats st;
	struct pma_config *cfg;
	uint64_t slabs;

	test_cfg.flags |= PMA_HEAP_NO_MORPH;
	fx_create(f);
	shift(f, 2000, &slabs);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.slabs_morphed, 0);
	check_blocks(f);
	pma_heap_close(f->heap);
	f->heap = NULL;
	unlink(f->path);

	assert_int_equal(pma_config_set_morph(&test_cfg, 0, 1), 0);
	fx_create(f);
	shift(f, 2000, &slabs);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.slabs_morphed, 0);
	pma_heap_close(f->heap);
	f->heap = NULL;
	unlink(f->path);

	assert_int_equal(pma_config_set_morph(&test_cfg, 20, 1), 0);
	test_cfg.flags = 0;
	test_cfg.format_version = PMA_HEAP_VERSION_LOCAL;
	fx_create(f);
	shift(f, 2000, &slabs);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.slabs_morphed, 0);
	assert_int_equal(st.layout_version, PMA_HEAP_VERSION_LOCAL);
	check_blocks(f);
	fx_reopen(f);
	check_blocks(f);

	assert_int_equal(pma_config_new(&cfg), 0);
	assert_int_equal(pma_config_set_morph(cfg, 101, 1), -EINVAL);
	assert_int_equal(pma_config_set_morph(cfg, 100, 0), 0);
	pma_config_delete(&cfg);
}

/*
 * Not here yet (known defect, doc/morphing.md "Status"): with morphs
 * forced (pma_config_set_morph(cfg, 100, 0)) a long random workload makes
 * a mixed slab's avail count drift from its avail bitmap, and a block is
 * handed out twice; the kill-and-recover and two-thread tests of that
 * workload fail, so morphing is off by default.
 */

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
	const struct CMUnitTest tests[] = {
		T(test_morph_cycle),
		T(test_morph_frees),
		T(test_morph_off),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
