/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-pmalloc-root-crash: crash-simulation sweep of pma_root in an open
 * with a region mask that does not hold slot 0 (--enable-crash-sim). The
 * root lives in region 0 of part 0, so such a pma_root takes slot 0
 * first (pma_heap_add_regions: the region locked, recovered, its rings
 * applied) and then makes the root there (allocation, root word, its
 * check). A pool of 1 part x 2 regions: an open of slot 0 allocates
 * blocks of several classes (DRAM dests), frees them and closes; then an open of slot 1 only calls pma_root
 * and allocates into the root's words, freeing some again.
 * At EVERY fence of the second open an image is written; the parent
 * recovers a copy the way pmad recovers a dead client's regions (a
 * masked open of each slot, closed) and then opens the whole pool: the
 * root word is 0 or a live block of the root's size, every word of the
 * root is 0 or a live block, the used bytes are those blocks' (no
 * leak), and the heap works; fsck finds no error in the image
 * and nothing at all after recovery. `test-pmalloc-root-crash replay
 * FILE` checks a saved image again.
 */
#include <errno.h>
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
#include "crash-fsck.h"
#include "crash-sweep.h"
#include "pma-check.h"

#define POOL_SIZE (8ULL << 20)
#define ROOT_WORDS 32
#define KEEP_WORDS 16 /* blocks of the first open of region 0 */

static size_t word_size(unsigned i)
{
	return 24 + (i * 2654435761u >> 8) % 2000;
}

/* ------------------------------------------------------------ child */

static void child_run(const char *path, uint64_t rnd)
{
	struct pma_heap *heap = NULL;
	uint64_t root, keep[KEEP_WORDS], *w;
	unsigned i, n = 0;

	test_cfg.regions = 2;
	test_cfg.sum_shift = PMA_SUM_SHIFT_MIN;
	(void)unlink(path);
	if (test_heap_create(path, POOL_SIZE, 0, &heap) < 0)
		_exit(7);
	pma_heap_close(heap);
	/* region 0 had a holder before: slabs of several classes, their
	 * blocks freed again (DRAM dests) */
	if (pma_check_open_mask(&test_cfg, path, 0x1, &heap) < 0)
		_exit(8);
	for (i = 0; i < KEEP_WORDS; i++)
		if (pma_malloc_to(heap, word_size(i), &keep[i]) < 0)
			_exit(9);
	for (i = 0; i < KEEP_WORDS; i++)
		if (pma_free_from(heap, &keep[i]) < 0)
			_exit(9);
	pma_heap_close(heap);
	if (pma_check_open_mask(&test_cfg, path, 0x2, &heap) < 0)
		_exit(10);
	crash_sweep_arm(heap->map);
	if (pma_root(heap, ROOT_WORDS * 8, &root) < 0)
		_exit(11);
	w = pma_direct(heap, root);
	for (i = 0; i < ROOT_WORDS; i++) {
		if (pma_malloc_to(heap, word_size(i), &w[i]) < 0)
			_exit(12);
		n++;
		if ((rnd >> (i % 64)) & 1 && pma_free_from(heap, &w[i]) < 0)
			_exit(13);
	}
	crash_sweep_finish(n);
}

/* ----------------------------------------------------------- parent */

/* bytes live in the whole heap */
static uint64_t used_bytes(struct pma_heap *heap)
{
	struct pma_heap_stats st;

	if (pma_heap_stats(heap, &st) < 0)
		return ~0ULL;
	return st.used_bytes;
}

static int recover_masked(const char *file)
{
	struct pma_heap *heap = NULL;
	uint64_t s;

	for (s = 1; s <= 2; s <<= 1) {
		if (pma_check_open_mask(&test_cfg, file, s, &heap) < 0)
			return -1;
		pma_heap_close(heap);
	}
	return 0;
}

static int check_heap(const char *file, unsigned *ret_live, char *why,
		      size_t why_len)
{
	struct pma_heap *heap = NULL;
	uint64_t root, *w, want = 0;
	unsigned i, n = 0;

	if (crash_fsck(file, POOL_FSCK_ERROR, "before recovery", why, why_len) <
	    0)
		return -1;
	if (recover_masked(file) < 0) {
		snprintf(why, why_len, "masked opens: %s", pma_errormsg());
		return -1;
	}
	if (test_heap_open(file, 0, &heap) < 0) {
		snprintf(why, why_len, "open: %s", pma_errormsg());
		return -1;
	}
	root = heap->hdr->root_off;
	if (root) {
		CHECK(pma_usable_size(heap, root) >= ROOT_WORDS * 8,
		      "root 0x%llx usable %zu", (unsigned long long)root,
		      pma_usable_size(heap, root));
		w = pma_direct(heap, root);
		want += pma_usable_size(heap, root);
		for (i = 0; i < ROOT_WORDS; i++) {
			if (!w[i])
				continue;
			CHECK(pma_usable_size(heap, w[i]) >= word_size(i),
			      "word %u: 0x%llx usable %zu", i,
			      (unsigned long long)w[i],
			      pma_usable_size(heap, w[i]));
			want += pma_usable_size(heap, w[i]);
			n++;
		}
	}
	CHECK(used_bytes(heap) == want, "%llu bytes used, %llu named",
	      (unsigned long long)used_bytes(heap), (unsigned long long)want);
	*ret_live = n;
	/* the heap works: the root (made now if the crash came first) */
	CHECK(pma_root(heap, ROOT_WORDS * 8, &root) == 0, "root: %s",
	      pma_errormsg());
	w = pma_direct(heap, root);
	for (i = 0; i < ROOT_WORDS; i++)
		CHECK(pma_free_from(heap, &w[i]) == 0 &&
			      pma_malloc_to(heap, word_size(i), &w[i]) == 0,
		      "word %u: %s", i, pma_errormsg());
	pma_heap_close(heap);
	return crash_fsck(file, POOL_FSCK_INFO, "after recovery", why, why_len);

out_close:
	pma_heap_close(heap);
	return -1;
}

static int recover_only(const char *file)
{
	return recover_masked(file) < 0 ? 1 : 0;
}

static const struct crash_sweep_ops root_ops = {
	.name = "pmalloc-root",
	.workload = child_run,
	.check = check_heap,
	.recover = recover_only,
	.dump = NULL,
	.stat_name = "root words named",
	.extra_name = "allocations into the root",
};

static struct crash_sweep sweeps[] = {
	{ .name = "root durable", .runs = 1 },
	{ .name = "root torn", .seed_base = 0x700f0000, .runs = 2 },
	{ .name = "root recrash",
	  .seed_base = 0x700fabcd0000,
	  .recrash_every = 2,
	  .recrash_fences = 3,
	  .runs = 1 },
	{ .name = "root byte torn",
	  .seed_base = 0x700fb1700000,
	  .runs = 1,
	  .byte = 1 },
};

static void test_sweep(void **state)
{
	struct crash_sweep sw = *(const struct crash_sweep *)*state;

	if (crash_sweep_run(&root_ops, &sw) < 0)
		fail_msg("%s failed", sw.name);
	/* the add, the root and its words: many fences, each imaged */
	assert_true(sw.fences > ROOT_WORDS);
	assert_int_equal(sw.images, sw.fences);
	assert_int_equal(sw.extra, (uint64_t)ROOT_WORDS * sw.runs);
	/* some images hold the root with words named */
	assert_true(sw.stat_max > 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		{ "test_sweep_durable", test_sweep, NULL, NULL, &sweeps[0] },
		{ "test_sweep_torn", test_sweep, NULL, NULL, &sweeps[1] },
		{ "test_sweep_recrash", test_sweep, NULL, NULL, &sweeps[2] },
		{ "test_sweep_byte_torn", test_sweep, NULL, NULL, &sweeps[3] },
	};

	return pma_check_main(&root_ops, argc, argv, tests,
			      sizeof(tests) / sizeof(tests[0]), NULL);
}
