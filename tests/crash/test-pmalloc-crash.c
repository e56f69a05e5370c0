/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-pmalloc-crash: crash-simulation sweep of PMAlloc (--enable-crash-sim).
 * A child process runs a mixed workload (2 threads, malloc_to/free_from of
 * per-slot sizes incl. large extents in both log forms, cross-thread
 * frees, global and per-arena checkpoints that release emptied slabs); at
 * EVERY fence of the workload its hook writes the crash image (durable
 * lines only, or plus a random subset of dirty lines in 8-byte words) to a
 * file and waits while the parent recovers a copy and checks it: every
 * dest word is 0 or names a live block of its slot's size, no block is
 * named twice, nothing leaked (live blocks == named blocks + root), and the
 * heap keeps working. The recrash sweep first crashes the recovery itself.
 * A failing image is saved under /tmp/pmalloc-fail-N/ with a dump of its
 * logs; `test-pmalloc-crash replay FILE` recovers and checks it again.
 * The driver (fork, image at each fence, recover, save/replay) is
 * tests/lib/crash-sweep.c; this file holds the workload and the checks.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "pmalloc.h"
#include "pmalloc/internal.h"
#include "../lib/test-cfg.h"
#include "pmem/crash.h"
#include "pmem/fast.h"
#include "pool/pool.h"
#include "crash-fsck.h"
#include "crash-sweep.h"
#include "pma-check.h"

#define HEAP_SIZE (4ULL << 20)
#define NSLOTS 64
#define OPS_PER_THREAD 120
#define NTHREADS 2

/* the size a slot always asks for: small classes up to 4000 B, the
 * largest classes (a few blocks per slab) and some extents */
static size_t slot_size(unsigned s)
{
	uint32_t h = s * 2654435761u;

	if (s % 7 == 3)
		return 16384 + (h >> 16) % (200 * 1024);
	if (s % 7 == 5)
		return 4001 + (h >> 8) % (PMA_SMALL_MAX - 4000);
	return 1 + (h >> 8) % 4000;
}

/* ------------------------------------------------------------ child */

struct work {
	struct pma_heap *heap;
	uint64_t *slots;
	pthread_mutex_t locks[NSLOTS];
	uint64_t rnd; /* per-run variation of the op sequence */
};

static struct work work;

/* the next slot: random, the next one (a walk along a line of dest
 * words), the same again, or its neighbour in the line (two words taking
 * turns): the patterns whose dest stores share a line and stay unflushed
 * together (pma_log_commit) */
static unsigned next_slot(uint64_t rnd, unsigned last)
{
	switch ((rnd >> 32) % 4) {
	case 0:
		return (unsigned)(rnd % NSLOTS);
	case 1:
		return (last + 1) % NSLOTS;
	case 2:
		return last;
	default:
		return last ^ 1;
	}
}

static void *worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg, i, s = id * NSLOTS / NTHREADS;
	uint64_t rnd = id * 0x9e3779b97f4a7c15ULL + 1 + work.rnd;
	int rc;

	for (i = 0; i < OPS_PER_THREAD; i++) {
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		s = next_slot(rnd, s);
		pthread_mutex_lock(&work.locks[s]);
		if (work.slots[s])
			rc = pma_free_from(work.heap, &work.slots[s]);
		else
			rc = pma_malloc_to(work.heap, slot_size(s),
					   &work.slots[s]);
		pthread_mutex_unlock(&work.locks[s]);
		if (rc && rc != -ENOMEM)
			_exit(4);
		if (id == 0 && i % 40 == 39 && pma_heap_checkpoint(work.heap))
			_exit(5);
		/* per-arena checkpoints at other points of each thread (a
		 * global one on a heap older than version 8) */
		if (i % (id ? 17 : 23) == (id ? 16 : 11) &&
		    pma_heap_checkpoint_arena(work.heap))
			_exit(6);
	}
	return NULL;
}

/* run the workload once, stopping at each fence for the parent */
static void child_run(const char *path, uint64_t rnd)
{
	pthread_t tid[NTHREADS];
	uint64_t root;
	const char *s;
	unsigned i;

	/* summary groups of one chunk: the run marks groups all along */
	test_cfg.sum_shift = PMA_SUM_SHIFT_MIN;
	/* every checkpoint releases the slabs that became empty */
	test_cfg.slab_keep = 0;
	/* arenas checkpoint alone too (pma_heap_checkpoint_arena below) */
	test_cfg.flags |= PMA_HEAP_LOCAL_CHECKPOINTS;
	if (test_heap_create(path, HEAP_SIZE, PMA_HEAP_FORCE, &work.heap) ||
	    pma_root(work.heap, NSLOTS * 8, &root))
		_exit(7);
	work.slots = pma_direct(work.heap, root);
	/* the extents here are 4 to 54 pages: both the one-record (EXT_ALLOC1
	 * ...) and the two-record form of extent ops */
	work.heap->ext1_pages = 16;
	/* a BYTE sweep must run the paths that flush nothing */
	s = getenv("PMEM2_FORCE_GRANULARITY");
	if (pm_flush_is_noop(work.heap->map) != (s && !strcmp(s, "BYTE")))
		_exit(9);
	for (i = 0; i < NSLOTS; i++)
		pthread_mutex_init(&work.locks[i], NULL);
	work.rnd = rnd;
	crash_sweep_arm(work.heap->map);
	for (i = 0; i < NTHREADS; i++)
		pthread_create(&tid[i], NULL, worker, (void *)(uintptr_t)i);
	for (i = 0; i < NTHREADS; i++)
		pthread_join(tid[i], NULL);
	/* what the run did that the sweep must cover */
	fprintf(stderr,
		"# run: %lu local checkpoints (%lu cut inside the window), "
		"%lu remote frees synced, %lu global checkpoints\n",
		atomic_load(&work.heap->local_checkpoints),
		atomic_load(&work.heap->local_partial),
		atomic_load(&work.heap->rfrees_synced),
		atomic_load(&work.heap->checkpoints));
	/* the end, then how many slabs the run released */
	crash_sweep_finish(atomic_load(&work.heap->slabs_released));
}

/* ------------------------------------------------------------ dump */

static void dump_arena(char *base, const struct pma_heap_hdr *hdr, unsigned a)
{
	const struct pma_arena_desc *desc =
		(const void *)((char *)hdr + hdr->arena_off + 64ULL * a);
	struct pma_rec *log = (void *)((char *)hdr + hdr->log_off +
				       (uint64_t)a * hdr->log_cap * 16);
	uint64_t head = desc->head[hdr->head_gen & 1], k = head, j;
	struct pma_rec *slot;
	struct pma_op op;

	(void)base;
	print_message("#  arena %u: head %llu (gen %llu; other slot %llu)\n", a,
		      (unsigned long long)head,
		      (unsigned long long)hdr->head_gen,
		      (unsigned long long)desc->head[(hdr->head_gen + 1) & 1]);
	while (k - head < hdr->log_cap &&
	       pma_booklog_read_op(log, hdr->log_cap, k,
				   pma_rec_osh(hdr->version), &op) == 0) {
		print_message("#   %5llu %-9s off 0x%llx dest 0x%llx npages "
			      "%llu cls %u owner %u\n",
			      (unsigned long long)k,
			      pma_booklog_type_name(op.type),
			      (unsigned long long)op.off,
			      (unsigned long long)op.dest,
			      (unsigned long long)op.npages, op.cls, op.owner);
		k += op.nrecs;
	}
	for (j = k; j < k + 3; j++) {
		slot = pma_booklog_slot(log, hdr->log_cap, j);
		print_message("#   %5llu (tail%s) raw %016llx %016llx\n",
			      (unsigned long long)j, j == k ? "" : "+",
			      (unsigned long long)slot->word0,
			      (unsigned long long)slot->word1);
	}
}

/* decode the logs of a crash image as they are BEFORE recovery */
static void dump_image(const char *file)
{
	const struct pool_region *r;
	struct pma_heap_hdr *hdr;
	uint64_t *slots;
	struct pool *pool;
	char *base;
	unsigned a, s;

	if (pool_open(file, POOL_OPEN_RDONLY, &pool) < 0) {
		print_message("# cannot open %s: %s\n", file, pool_errormsg());
		return;
	}
	r = pool_region_find(pool, POOL_REGION_PMALLOC, 0);
	base = pm_map_addr(pool_part_map(pool, 0));
	hdr = (void *)(base + (r ? r->off : 0));
	if (!r || memcmp(hdr->magic, PMA_HEAP_MAGIC, PMA_HEAP_MAGIC_LEN)) {
		print_message("# %s: no heap\n", file);
		pool_close(&pool);
		return;
	}
	print_message("# image %s before recovery: heap at 0x%llx, data at "
		      "0x%llx\n",
		      file, (unsigned long long)r->off,
		      (unsigned long long)(r->off + hdr->data_off));
	for (a = 0; a < hdr->narenas; a++)
		dump_arena(base, hdr, a);
	slots = pool_direct(pool, hdr->root_off);
	for (s = 0; slots && s < NSLOTS; s++)
		if (slots[s])
			print_message("#  slot %2u = 0x%llx\n", s,
				      (unsigned long long)slots[s]);
	pool_close(&pool);
}

/* ------------------------------------------------------------ check */

/* PMA_HEAP_RDONLY view of the image (logs replayed in DRAM only) */
static int rdonly_stats(const char *file, struct pma_heap_stats *ret_st,
			char *why, size_t why_len)
{
	struct pma_heap *heap;

	if (test_heap_open(file, PMA_HEAP_RDONLY, &heap) < 0 ||
	    pma_heap_stats(heap, ret_st) < 0) {
		snprintf(why, why_len, "rdonly open: %s", pma_errormsg());
		return -1;
	}
	pma_heap_close(heap);
	return 0;
}

/* the read-only view equals the recovered state */
static int same_stats(const struct pma_heap_stats *a,
		      const struct pma_heap_stats *b)
{
	unsigned c;

	if (a->used_bytes != b->used_bytes || a->free_bytes != b->free_bytes ||
	    a->extents != b->extents || a->largest_free != b->largest_free)
		return 0;
	for (c = 0; c < a->nclasses; c++)
		if (a->classes[c].slabs != b->classes[c].slabs ||
		    a->classes[c].used != b->classes[c].used)
			return 0;
	return 1;
}

/* the invariants of a recovered heap; then use it. 0 or -1 with why */
static int check_heap(const char *file, unsigned *ret_live, char *why,
		      size_t why_len)
{
	struct pma_heap_stats ro, rw;
	struct pma_heap *heap;
	uint64_t root = 0, offs[NSLOTS], *slots, live;
	unsigned s, n = 0;
	int rc;

	/* pmactl fsck: a crash image holds no error */
	if (crash_fsck(file, POOL_FSCK_ERROR, "before recovery", why, why_len) <
	    0)
		return -1;
	if (rdonly_stats(file, &ro, why, why_len) < 0)
		return -1;
	rc = test_heap_open(file, 0, &heap);
	if (rc < 0) {
		snprintf(why, why_len, "open: %s", pma_errormsg());
		return -1;
	}
	CHECK(pma_heap_stats(heap, &rw) == 0 && same_stats(&ro, &rw),
	      "read-only view differs from the recovered heap (used %llu/"
	      "%llu free %llu/%llu)",
	      (unsigned long long)ro.used_bytes,
	      (unsigned long long)rw.used_bytes,
	      (unsigned long long)ro.free_bytes,
	      (unsigned long long)rw.free_bytes);
	/* the summary marks every entry's group, on media too */
	CHECK(pma_sum_check(heap) == 0, "%s", pma_errormsg());
	CHECK(heap->geom.sum_shift == PMA_SUM_SHIFT_MIN && heap->sum_bad == 0,
	      "summary: shift %u, %llu invalid words", heap->geom.sum_shift,
	      (unsigned long long)heap->sum_bad);
	CHECK(pma_root(heap, NSLOTS * 8, &root) == 0, "root: %s",
	      pma_errormsg());
	slots = pma_direct(heap, root);
	for (s = 0; s < NSLOTS; s++) {
		if (!slots[s])
			continue;
		if (pma_check_usable(heap, s, slots[s], slot_size(s), why,
				     why_len) < 0)
			goto out_close;
		offs[n++] = slots[s];
	}
	if (pma_check_unique(offs, n, why, why_len) < 0)
		goto out_close;
	/* live blocks counted from the heap's own state; unnamed ones
	 * printed */
	live = pma_check_live(heap, offs, n, root);
	CHECK(live == n + 1ULL, "%llu live blocks, %u named + root (leak)",
	      (unsigned long long)live, n);
	*ret_live = n;
	/* it keeps working: free everything, allocate again */
	for (s = 0; s < NSLOTS; s++)
		CHECK(pma_free_from(heap, &slots[s]) == 0, "free slot %u: %s",
		      s, pma_errormsg());
	live = pma_check_live(heap, NULL, 0, 0);
	CHECK(live == 1, "%llu live blocks after freeing all",
	      (unsigned long long)live);
	for (s = 0; s < NSLOTS; s += 3)
		CHECK(pma_malloc_to(heap, slot_size(s), &slots[s]) == 0,
		      "malloc slot %u: %s", s, pma_errormsg());
	pma_heap_close(heap);
	/* recovered, used and closed: no finding at all */
	return crash_fsck(file, POOL_FSCK_INFO, "after recovery", why, why_len);

out_close:
	pma_heap_close(heap);
	return -1;
}

/* ------------------------------------------------------------ sweeps */

static int recover_only(const char *file)
{
	return pma_check_recover(file, &test_cfg);
}

static const struct crash_sweep_ops pmalloc_ops = {
	.name = "pmalloc",
	.workload = child_run,
	.check = check_heap,
	.recover = recover_only,
	.dump = dump_image,
	.stat_name = "live slots",
	.extra_name = "slabs released",
};

static void sweep(struct crash_sweep *sw)
{
	pma_check_sweep(&pmalloc_ops, sw);
	assert_true(sw->fences > 2ULL * OPS_PER_THREAD * sw->runs);
	/* the images cover checkpoints that release slabs */
	assert_true(sw->extra >= sw->runs);
	assert_int_equal(sw->images, sw->fences);
}

/*
 * The sweeps: durable images, torn ones (random dirty words too), and
 * recoveries crashed themselves first (every second image), each on
 * CACHE_LINE mappings and again on BYTE ones (eADR). runs: the default
 * number of interleavings (PMA_CRASH_RUNS overrides it). A re-crashed
 * recovery stops at its fence 1 or 2: it fences twice (apply + staged
 * heads, head flip).
 */
static struct crash_sweep sweeps[] = {
	{ .name = "durable", .runs = 2 },
	{ .name = "torn", .seed_base = 0x5eed0000, .runs = 2 },
	{ .name = "recrash",
	  .seed_base = 0xabcd0000,
	  .recrash_every = 2,
	  .recrash_fences = 2,
	  .runs = 1 },
	{ .name = "byte durable", .runs = 2, .byte = 1 },
	{ .name = "byte torn", .seed_base = 0xb17e0000, .runs = 2, .byte = 1 },
	{ .name = "byte recrash",
	  .seed_base = 0xb17eabcd0000,
	  .recrash_every = 2,
	  .recrash_fences = 2,
	  .runs = 1,
	  .byte = 1 },
};

/* one entry of sweeps (the test's initial state) */
static void test_sweep(void **state)
{
	struct crash_sweep sw = *(const struct crash_sweep *)*state;

	sweep(&sw);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		{ "test_sweep_durable", test_sweep, NULL, NULL, &sweeps[0] },
		{ "test_sweep_torn", test_sweep, NULL, NULL, &sweeps[1] },
		{ "test_sweep_recrash", test_sweep, NULL, NULL, &sweeps[2] },
		{ "test_sweep_byte_durable", test_sweep, NULL, NULL,
		  &sweeps[3] },
		{ "test_sweep_byte_torn", test_sweep, NULL, NULL, &sweeps[4] },
		{ "test_sweep_byte_recrash", test_sweep, NULL, NULL,
		  &sweeps[5] },
	};

	return pma_check_main(&pmalloc_ops, argc, argv, tests,
			      sizeof(tests) / sizeof(tests[0]),
			      crash_fsck_report);
}
