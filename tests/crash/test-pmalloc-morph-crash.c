/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-pmalloc-morph-crash: crash-simulation sweep of slab morphing
 * (layout version 9, doc/morphing.md; --enable-crash-sim). Unarmed, a
 * child fills two slabs with old-class blocks (1000 B) holding patterns,
 * frees 7 of 8 and checkpoints. Then, armed (an image at EVERY fence):
 * with morphs forced (100% used, no idle rule) it allocates new-class
 * blocks (600 B: the first morphs a slab), one thread frees and
 * allocates new blocks and checkpoints while a second frees the old
 * blocks (a mixed slab's old frees from another arena, through the
 * owner's lock), till the slabs are plain again. Every image, recovered
 * (and re-crashed in recovery for some): each slot whose generation word
 * is set names a live block of its size holding its pattern, no two
 * named blocks overlap, live blocks == named + root, fsck finds no error
 * before recovery and nothing after, and the heap keeps working.
 * The pass sweeps do the same with morphing off, the morphs made by a
 * morph pass (pma_heap_morph, pmactl morph: its checkpoint, each morph
 * step and the fence after it) at the start of the armed part.
 */
#include <errno.h>
#include <pthread.h>
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
#include "pmem/crash.h"
#include "crash-fsck.h"
#include "crash-sweep.h"
#include "pma-check.h"

#define HEAP_SIZE (4ULL << 20)
#define NOLD 126 /* old-class slots: two slabs of 1024-byte blocks */
#define NNEW 24 /* new-class slots */
#define NSLOTS (NOLD + NNEW)
#define OLD_SIZE 1000
#define NEW_SIZE 600
#define OPS 40 /* new-class ops of the first thread */

/* the root: slots, then one generation word per slot (0: the slot's
 * pattern is not known durable; else the block holds pattern gen) */
struct root {
	uint64_t slot[NSLOTS];
	uint64_t gen[NSLOTS];
};

static size_t slot_size(unsigned s)
{
	return s < NOLD ? OLD_SIZE : NEW_SIZE;
}

/* ------------------------------------------------------------ child */

static struct {
	struct pma_heap *heap;
	struct root *root;
	struct pma_check_slots sl; /* the root's slots */
	uint64_t rnd;
} work;

/* allocate slot s and write its pattern; the generation word is set
 * only once the pattern is durable */
static void slot_alloc(unsigned s, uint64_t gen)
{
	if (pma_check_slot_alloc(work.heap, &work.sl, s, gen))
		_exit(4);
}

static void slot_free(unsigned s)
{
	if (pma_check_slot_free(work.heap, &work.sl, s))
		_exit(5);
}

/* new-class blocks: allocated (morphs), freed, a checkpoint */
static void *new_ops(void *arg)
{
	uint64_t rnd = work.rnd * 0x9e3779b97f4a7c15ULL + 1;
	unsigned s, i;

	(void)arg;
	for (s = NOLD; s < NOLD + NNEW / 2; s++)
		slot_alloc(s, 1);
	for (i = 0; i < OPS; i++) {
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		s = NOLD + (unsigned)(rnd % NNEW);
		if (work.root->slot[s])
			slot_free(s);
		else
			slot_alloc(s, 2 + i);
		if (i == OPS / 2 && pma_heap_checkpoint(work.heap))
			_exit(6);
	}
	return NULL;
}

/* the old blocks go, from another thread (arena) */
static void *old_frees(void *arg)
{
	unsigned s;

	(void)arg;
	for (s = 0; s < NOLD; s++)
		if (work.root->slot[s])
			slot_free(s);
	return NULL;
}

/* pass: morphing off, a morph pass morphs instead of the allocator */
static void child_common(const char *path, uint64_t rnd, int pass)
{
	struct pma_morph_req req = { .class_size = pma_class_size(
					     pma_class_of(NEW_SIZE, 1)),
				     .used_pct = 20 };
	struct pma_morph_report rep;
	struct pma_heap_stats st;
	pthread_t a, b;
	uint64_t root;
	unsigned s;

	test_cfg.format_version = PMA_HEAP_VERSION;
	if (pma_config_set_morph(&test_cfg, pass ? 0 : 100, 0) ||
	    test_heap_create(path, HEAP_SIZE, PMA_HEAP_FORCE, &work.heap) ||
	    pma_root(work.heap, sizeof(struct root), &root))
		_exit(7);
	work.root = pma_direct(work.heap, root);
	work.sl = (struct pma_check_slots){ NSLOTS, work.root->slot,
					    work.root->gen, slot_size };
	work.rnd = rnd;
	for (s = 0; s < NOLD; s++)
		slot_alloc(s, 1);
	for (s = 0; s < NOLD; s++)
		if (s % 8)
			slot_free(s);
	if (pma_heap_checkpoint(work.heap))
		_exit(7);
	crash_sweep_arm(work.heap->map);
	/* both old slabs (1 of 8 blocks live) and the root's morphed by
	 * a pass */
	if (pass &&
	    (pma_heap_morph(work.heap, &req, &rep) || rep.slabs_morphed != 3))
		_exit(10);
	/* the morph and the first mixed ops, one thread */
	slot_alloc(NOLD + NNEW - 1, 1);
	if (pma_heap_stats(work.heap, &st) || !st.slabs_morphed)
		_exit(8); /* the sweep must cover a morph */
	pthread_create(&a, NULL, new_ops, NULL);
	pthread_create(&b, NULL, old_frees, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	/* ... and its end: plain again (but the root's slab, after a pass:
	 * its old block, the root, stays) */
	if (pma_heap_stats(work.heap, &st) || st.mixed_slabs != (pass ? 1 : 0))
		_exit(9);
	crash_sweep_finish(st.slabs_morphed);
}

static void child_run(const char *path, uint64_t rnd)
{
	child_common(path, rnd, 0);
}

static void child_pass(const char *path, uint64_t rnd)
{
	child_common(path, rnd, 1);
}

/* ------------------------------------------------------------ check */

static int check_heap(const char *file, unsigned *ret_live, char *why,
		      size_t why_len)
{
	struct pma_check_slots sl = { .n = NSLOTS, .size = slot_size };
	struct pma_heap *heap;
	uint64_t root = 0, live;
	struct root *r;
	unsigned s, n = 0, m;

	/* pmactl fsck: a crash image holds no error */
	if (crash_fsck(file, POOL_FSCK_ERROR, "before recovery", why, why_len) <
	    0)
		return -1;
	test_cfg.format_version = PMA_HEAP_VERSION;
	if (pma_config_set_morph(&test_cfg, 100, 0) < 0 ||
	    test_heap_open(file, 0, &heap) < 0) {
		snprintf(why, why_len, "open: %s", pma_errormsg());
		return -1;
	}
	CHECK(pma_root(heap, sizeof(*r), &root) == 0, "root: %s",
	      pma_errormsg());
	r = pma_direct(heap, root);
	sl.slot = r->slot;
	sl.gen = r->gen;
	/* every named block live and intact, none overlapping another */
	if (pma_check_slots(heap, &sl, &n, why, why_len) < 0)
		goto out_close;
	/* live blocks of both classes of a mixed slab, and extents */
	live = pma_check_live(heap, NULL, 0, 0);
	CHECK(live == n + 1ULL, "%llu live blocks, %u named + root (leak)",
	      (unsigned long long)live, n);
	*ret_live = n;
	/* the recovered heap works: new blocks overlap no live one (of
	 * either class), and frees of both classes go */
	for (s = NOLD; s < NSLOTS; s++)
		if (!r->slot[s])
			CHECK(pma_malloc_to(heap, NEW_SIZE, &r->slot[s]) == 0,
			      "malloc slot %u: %s", s, pma_errormsg());
	if (pma_check_slots(heap, &sl, &m, why, why_len) < 0)
		goto out_close;
	for (s = 0; s < NSLOTS; s += 2)
		CHECK(pma_free_from(heap, &r->slot[s]) == 0, "free slot %u: %s",
		      s, pma_errormsg());
	CHECK(pma_heap_checkpoint(heap) == 0, "checkpoint: %s", pma_errormsg());
	pma_heap_close(heap);
	/* recovered, used and closed: no finding at all */
	return crash_fsck(file, POOL_FSCK_INFO, "after recovery", why, why_len);

out_close:
	pma_heap_close(heap);
	return -1;
}

static int recover_only(const char *file)
{
	test_cfg.format_version = PMA_HEAP_VERSION;
	if (pma_config_set_morph(&test_cfg, 100, 0) < 0)
		return 1;
	return pma_check_recover(file, &test_cfg);
}

static const struct crash_sweep_ops morph_ops = {
	.name = "pmalloc-morph",
	.workload = child_run,
	.check = check_heap,
	.recover = recover_only,
	.dump = NULL,
	.stat_name = "live slots",
	.extra_name = "slabs morphed",
};

static const struct crash_sweep_ops pass_ops = {
	.name = "pmalloc-morph-pass",
	.workload = child_pass,
	.check = check_heap,
	.recover = recover_only,
	.dump = NULL,
	.stat_name = "live slots",
	.extra_name = "slabs morphed",
};

static struct crash_sweep sweeps[] = {
	{ .name = "durable", .runs = 1 },
	{ .name = "torn", .seed_base = 0x3a0f0000, .runs = 1 },
	{ .name = "recrash",
	  .seed_base = 0x3a0fabcd0000,
	  .recrash_every = 3,
	  .recrash_fences = 2,
	  .runs = 1 },
	{ .name = "byte durable", .runs = 1, .byte = 1 },
	{ .name = "pass durable", .runs = 1 },
	{ .name = "pass torn", .seed_base = 0x3a1f0000, .runs = 1 },
	{ .name = "pass recrash",
	  .seed_base = 0x3a1fabcd0000,
	  .recrash_every = 3,
	  .recrash_fences = 2,
	  .runs = 1 },
};

static void test_sweep(void **state)
{
	struct crash_sweep sw = *(const struct crash_sweep *)*state;

	pma_check_sweep(strncmp(sw.name, "pass", 4) ? &morph_ops : &pass_ops,
			&sw);
	assert_true(sw.fences > (uint64_t)NNEW * sw.runs);
	/* every run morphed (exit 8 otherwise) */
	assert_true(sw.extra >= sw.runs);
	assert_int_equal(sw.images, sw.fences);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		{ "test_morph_durable", test_sweep, NULL, NULL, &sweeps[0] },
		{ "test_morph_torn", test_sweep, NULL, NULL, &sweeps[1] },
		{ "test_morph_recrash", test_sweep, NULL, NULL, &sweeps[2] },
		{ "test_morph_byte_durable", test_sweep, NULL, NULL,
		  &sweeps[3] },
		{ "test_morph_pass_durable", test_sweep, NULL, NULL,
		  &sweeps[4] },
		{ "test_morph_pass_torn", test_sweep, NULL, NULL, &sweeps[5] },
		{ "test_morph_pass_recrash", test_sweep, NULL, NULL,
		  &sweeps[6] },
	};

	return pma_check_main(&morph_ops, argc, argv, tests,
			      sizeof(tests) / sizeof(tests[0]),
			      crash_fsck_report);
}
