/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-pmalloc-compact-crash: crash-simulation sweep of pma_heap_compact
 * (--enable-crash-sim). A child fills slots with blocks of per-slot sizes
 * (small classes and extents) whose bytes hold a pattern, frees most of
 * them (empty slabs, which normal checkpoints keep here: only compaction
 * releases them), then one thread goes on allocating, writing patterns
 * and freeing while another compacts the heap three times (checkpoints,
 * empty slabs released, holes punched in the free runs: the simulator's
 * durable image gets the zeros). At EVERY fence the image is recovered
 * and checked: every slot whose generation word is set names a live block
 * holding its pattern (a punch never hit a live block), no block is named
 * twice or overlaps another, live blocks == named blocks + root, and the
 * heap keeps working. The driver is tests/lib/crash-sweep.c, the shared
 * checks tests/lib/pma-check.c.
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
#include "pmem/fast.h"
#include "crash-fsck.h"
#include "crash-sweep.h"
#include "pma-check.h"

#define HEAP_SIZE (4ULL << 20)
#define NSLOTS 40
#define OPS 60 /* random ops of the allocating thread after the fill */
#define NCOMPACT 3

/* the root: slots, then one generation word per slot (0: the slot's
 * pattern is not known durable; else the block holds pattern gen) */
struct root {
	uint64_t slot[NSLOTS];
	uint64_t gen[NSLOTS];
};

static size_t slot_size(unsigned s)
{
	uint32_t h = s * 2654435761u;

	if (s % 5 == 2)
		return 16384 + (h >> 16) % (80 * 1024);
	return 64 + (h >> 8) % 1500;
}

/* ------------------------------------------------------------ child */

static struct {
	struct pma_heap *heap;
	struct root *root;
	uint64_t rnd;
	_Atomic int filled; /* the fill is done: compaction may start */
	uint64_t released, punched;
	struct pma_check_slots sl; /* the root's slots */
} work;

/* allocate slot s (if there is room) and write its pattern; the
 * generation word is set only once the pattern is durable */
static void slot_alloc(unsigned s, uint64_t gen)
{
	int rc = pma_check_slot_alloc(work.heap, &work.sl, s, gen);

	if (rc && rc != -ENOMEM)
		_exit(4);
}

static void slot_free(unsigned s)
{
	if (pma_check_slot_free(work.heap, &work.sl, s))
		_exit(5);
}

static void *allocator(void *arg)
{
	uint64_t rnd = work.rnd * 0x9e3779b97f4a7c15ULL + 1;
	unsigned s, i;

	(void)arg;
	for (s = 0; s < NSLOTS; s++)
		slot_alloc(s, 1);
	/* most go: empty slabs and free extents for the compaction */
	for (s = 0; s < NSLOTS; s++)
		if (s % 6 && work.root->slot[s])
			slot_free(s);
	atomic_store(&work.filled, 1);
	for (i = 0; i < OPS; i++) {
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		s = (unsigned)(rnd % NSLOTS);
		if (work.root->slot[s])
			slot_free(s);
		else
			slot_alloc(s, 2 + i);
	}
	return NULL;
}

static void *compactor(void *arg)
{
	struct pma_compact_report r;
	unsigned i;

	(void)arg;
	while (!atomic_load(&work.filled))
		sched_yield();
	for (i = 0; i < NCOMPACT; i++) {
		if (pma_heap_compact(work.heap, &r))
			_exit(6);
		work.released += r.slabs_released;
		work.punched += r.punched_bytes;
	}
	return NULL;
}

static void child_run(const char *path, uint64_t rnd)
{
	pthread_t a, c;
	uint64_t root;

	test_cfg.sum_shift = PMA_SUM_SHIFT_MIN;
	/* normal checkpoints keep every empty slab: compaction releases */
	test_cfg.slab_keep = 2;
	if (test_heap_create(path, HEAP_SIZE, PMA_HEAP_FORCE, &work.heap) ||
	    pma_root(work.heap, sizeof(struct root), &root))
		_exit(7);
	work.root = pma_direct(work.heap, root);
	work.sl = (struct pma_check_slots){ NSLOTS, work.root->slot,
					    work.root->gen, slot_size };
	work.rnd = rnd;
	crash_sweep_arm(work.heap->map);
	pthread_create(&a, NULL, allocator, NULL);
	pthread_create(&c, NULL, compactor, NULL);
	pthread_join(a, NULL);
	pthread_join(c, NULL);
	fprintf(stderr, "# run: %llu slabs released, %llu bytes punched\n",
		(unsigned long long)work.released,
		(unsigned long long)work.punched);
	if (!work.punched)
		_exit(8); /* the sweep must cover punching */
	crash_sweep_finish(work.released);
}

/* ------------------------------------------------------------ check */

static int check_heap(const char *file, unsigned *ret_live, char *why,
		      size_t why_len)
{
	struct pma_check_slots sl = { .n = NSLOTS, .size = slot_size };
	struct pma_compact_report rep;
	struct pma_heap *heap;
	uint64_t root = 0, live;
	struct root *r;
	unsigned s, n = 0;

	/* pmactl fsck: a crash image holds no error */
	if (crash_fsck(file, POOL_FSCK_ERROR, "before recovery", why, why_len) <
	    0)
		return -1;
	if (test_heap_open(file, 0, &heap) < 0) {
		snprintf(why, why_len, "open: %s", pma_errormsg());
		return -1;
	}
	CHECK(pma_root(heap, sizeof(*r), &root) == 0, "root: %s",
	      pma_errormsg());
	r = pma_direct(heap, root);
	sl.slot = r->slot;
	sl.gen = r->gen;
	/* every named block live and holding its pattern, none named
	 * twice or overlapping another */
	if (pma_check_slots(heap, &sl, &n, why, why_len) < 0)
		goto out_close;
	live = pma_check_live(heap, NULL, 0, 0);
	CHECK(live == n + 1ULL, "%llu live blocks, %u named + root (leak)",
	      (unsigned long long)live, n);
	*ret_live = n;
	/* compaction of the recovered heap works and keeps every block */
	CHECK(pma_heap_compact(heap, &rep) == 0, "compact: %s", pma_errormsg());
	for (s = 0; s < NSLOTS; s++)
		if (r->slot[s] &&
		    pma_check_slot(heap, &sl, s, why, why_len) < 0)
			goto out_close;
	for (s = 0; s < NSLOTS; s++)
		CHECK(pma_free_from(heap, &r->slot[s]) == 0, "free slot %u: %s",
		      s, pma_errormsg());
	for (s = 0; s < NSLOTS; s += 2)
		CHECK(pma_malloc_to(heap, slot_size(s), &r->slot[s]) == 0,
		      "malloc slot %u: %s", s, pma_errormsg());
	pma_heap_close(heap);
	/* recovered, compacted, used and closed: no finding at all */
	return crash_fsck(file, POOL_FSCK_INFO, "after recovery", why, why_len);

out_close:
	pma_heap_close(heap);
	return -1;
}

static int recover_only(const char *file)
{
	return pma_check_recover(file, &test_cfg);
}

static const struct crash_sweep_ops compact_ops = {
	.name = "pmalloc-compact",
	.workload = child_run,
	.check = check_heap,
	.recover = recover_only,
	.dump = NULL,
	.stat_name = "live slots",
	.extra_name = "slabs released",
};

static struct crash_sweep sweeps[] = {
	{ .name = "durable", .runs = 1 },
	{ .name = "torn", .seed_base = 0xc0ac0000, .runs = 1 },
	{ .name = "recrash",
	  .seed_base = 0xc0acabcd0000,
	  .recrash_every = 3,
	  .recrash_fences = 2,
	  .runs = 1 },
	{ .name = "byte durable", .runs = 1, .byte = 1 },
};

static void test_sweep(void **state)
{
	struct crash_sweep sw = *(const struct crash_sweep *)*state;

	pma_check_sweep(&compact_ops, &sw);
	assert_true(sw.fences > (uint64_t)NSLOTS * sw.runs);
	/* every run released slabs by compaction (and punched: exit 8) */
	assert_true(sw.extra >= sw.runs);
	assert_int_equal(sw.images, sw.fences);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		{ "test_compact_durable", test_sweep, NULL, NULL, &sweeps[0] },
		{ "test_compact_torn", test_sweep, NULL, NULL, &sweeps[1] },
		{ "test_compact_recrash", test_sweep, NULL, NULL, &sweeps[2] },
		{ "test_compact_byte_durable", test_sweep, NULL, NULL,
		  &sweeps[3] },
	};

	return pma_check_main(&compact_ops, argc, argv, tests,
			      sizeof(tests) / sizeof(tests[0]),
			      crash_fsck_report);
}
