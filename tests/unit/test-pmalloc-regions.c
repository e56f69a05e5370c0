/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-pmalloc-regions: a pool carved into several PMAlloc regions per
 * part (pma_config_set_regions, doc/shared-heaps.md step 2): the regions
 * in the pool's table, threads taking a part's regions in turn, frees
 * across regions and parts, -ENOMEM only when every region is full,
 * stats summing the regions, reopen. Pools live in a fresh /dev/shm
 * directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "pmalloc.h"
#include "pmalloc/fsck.h"
#include "pmalloc/internal.h"
#include "pool/layout.h"
#include "pool/pool.h"
#include "../lib/test-dir.h"

#define PART_SIZE (32ULL << 20)
#define NBLOCKS 256

struct fixture {
	char dir[64];
	char path[96];
	char part1[112];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	test_dir_make(f->dir, sizeof(f->dir), f->path, sizeof(f->path),
		      "test-pmalloc-regions", "pool");
	snprintf(f->part1, sizeof(f->part1), "%s.part1", f->path);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	test_dir_remove(f->dir);
	free(f);
	return 0;
}

static struct pma_heap *create_heap(struct fixture *f, unsigned nparts,
				    unsigned regions)
{
	struct pma_config *cfg = NULL;
	struct pma_heap *heap = NULL;

	assert_int_equal(pma_config_new(&cfg), 0);
	assert_int_equal(pma_config_set_parts(cfg, nparts), 0);
	assert_int_equal(pma_config_set_regions(cfg, regions), 0);
	if (pma_heap_create_cfg(f->path, PART_SIZE, cfg, &heap) < 0)
		fail_msg("pma_heap_create_cfg: %s", pma_errormsg());
	pma_config_delete(&cfg);
	return heap;
}

static struct pma_heap *open_heap(struct fixture *f)
{
	struct pma_heap *heap = NULL;

	if (pma_heap_open(f->path, 0, &heap) < 0)
		fail_msg("pma_heap_open: %s", pma_errormsg());
	return heap;
}

/* the pool's heap regions (no heap open): their count; part and byte
 * offset of each into parts[], offs[]; all of one size, into *ret_size */
static unsigned read_regions(struct fixture *f, unsigned *parts, uint64_t *offs,
			     uint64_t *ret_size)
{
	const struct pool_hdr *h;
	struct pool *pool = NULL;
	unsigned i, n = 0;

	assert_int_equal(pool_open(f->path, POOL_OPEN_RDONLY, &pool), 0);
	h = pool_header(pool);
	for (i = 0; i < h->nregions; i++) {
		if (h->regions[i].type != POOL_REGION_PMALLOC)
			continue;
		if (n)
			assert_int_equal(h->regions[i].size, *ret_size);
		*ret_size = h->regions[i].size;
		parts[n] = h->regions[i].part;
		offs[n++] = h->regions[i].off;
	}
	pool_close(&pool);
	return n;
}

/* the index (in read_regions' order) of the region holding pool offset
 * off, or -1 */
static int region_of(uint64_t off, unsigned n, const unsigned *parts,
		     const uint64_t *offs, uint64_t size)
{
	uint64_t b = off & ((1ULL << 56) - 1);
	unsigned i;

	for (i = 0; i < n; i++)
		if (parts[i] == off >> 56 && b >= offs[i] && b - offs[i] < size)
			return (int)i;
	return -1;
}

struct worker {
	struct pma_heap *heap;
	uint64_t *slots;
	unsigned n;
	int rc;
};

static void *worker_alloc(void *arg)
{
	struct worker *w = arg;
	unsigned i;

	for (i = 0; i < w->n && w->rc == 0; i++)
		w->rc = pma_malloc_to(w->heap, 200, &w->slots[i]);
	return NULL;
}

/* n blocks allocated by a new thread into slots */
static void thread_alloc(struct pma_heap *heap, uint64_t *slots, unsigned n)
{
	struct worker w = { .heap = heap, .slots = slots, .n = n };
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, worker_alloc, &w), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(w.rc, 0);
}

static void test_config(void **state)
{
	struct pma_config *cfg = NULL;
	static const unsigned bad[] = { 0, 3, 6, 32, 17 };
	unsigned i;

	(void)state;
	assert_int_equal(pma_config_new(&cfg), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(pma_config_set_regions(cfg, bad[i]), -EINVAL);
		assert_non_null(strstr(pma_errormsg(), "power of two"));
	}
	assert_int_equal(pma_config_set_regions(cfg, 1), 0);
	assert_int_equal(pma_config_set_regions(cfg, 16), 0);
	assert_int_equal(pma_config_set_regions(NULL, 2), -EINVAL);
	pma_config_delete(&cfg);
}

/*
 * One part of 2 regions: the table holds 2 equal regions; two threads
 * allocate in different regions; frees across them; the heap fills both
 * before -ENOMEM; stats sum both; a reopen sees what was left.
 */
static void test_one_part(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *heap = create_heap(f, 1, 2);
	uint64_t offs[4], rsize = 0, a[NBLOCKS], b[NBLOCKS], *fill;
	unsigned parts[4], n, i, got = 0, in[2] = { 0, 0 };
	struct pma_heap_stats st, st1;
	size_t nfill = 2 * PART_SIZE / 4096;
	uint64_t live = 0;
	int ra, rb, r, rc = 0;

	pma_heap_close(heap);
	n = read_regions(f, parts, offs, &rsize);
	assert_int_equal(n, 2);
	assert_int_equal(parts[0], 0);
	assert_int_equal(parts[1], 0);
	assert_true(rsize >= PART_SIZE / 2 - (4ULL << 20));
	heap = open_heap(f);

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	thread_alloc(heap, a, NBLOCKS);
	thread_alloc(heap, b, NBLOCKS);
	ra = region_of(a[0], n, parts, offs, rsize);
	rb = region_of(b[0], n, parts, offs, rsize);
	assert_true(ra >= 0 && rb >= 0);
	assert_int_not_equal(ra, rb);
	for (i = 0; i < NBLOCKS; i++) {
		assert_int_equal(region_of(a[i], n, parts, offs, rsize), ra);
		assert_int_equal(region_of(b[i], n, parts, offs, rsize), rb);
		assert_true(pma_usable_size(heap, a[i]) >= 200);
		assert_non_null(pma_direct(heap, b[i]));
	}
	assert_int_equal(pma_heap_stats(heap, &st), 0);
	assert_int_equal(st.parts, 1);
	assert_true(st.used_bytes >= 2 * NBLOCKS * 200);
	assert_int_equal(pma_heap_part_stats(heap, 0, &st1), 0);
	assert_int_equal(st1.used_bytes, st.used_bytes);
	assert_int_equal(st1.heap_size, st.heap_size);
	/* this thread frees both threads' blocks: across regions */
	for (i = 0; i < NBLOCKS; i++) {
		assert_int_equal(pma_free_from(heap, &a[i]), 0);
		assert_int_equal(pma_free_from(heap, &b[i]), 0);
	}
	assert_int_equal(pma_heap_checkpoint(heap), 0);
	assert_int_equal(pma_heap_stats(heap, &st), 0);
	assert_int_equal(st.used_bytes, 0);

	/* fill: both regions, the local one first, then -ENOMEM */
	fill = calloc(nfill, sizeof(*fill));
	assert_non_null(fill);
	for (i = 0; i < nfill; i++) {
		rc = pma_malloc_to(heap, 4000, &fill[i]);
		if (rc < 0)
			break;
		r = region_of(fill[i], n, parts, offs, rsize);
		assert_true(r >= 0);
		in[r]++;
		got++;
	}
	assert_int_equal(rc, -ENOMEM);
	assert_non_null(strstr(pma_errormsg(), "2 regions"));
	assert_true(in[0] > 0 && in[1] > 0);
	assert_int_equal(pma_heap_stats(heap, &st), 0);
	assert_true(st.free_bytes < st.heap_size / 10);
	/* half freed, reopen: the other half is live, nothing more */
	for (i = 0; i < got; i += 2)
		assert_int_equal(pma_free_from(heap, &fill[i]), 0);
	for (i = 1; i < got; i += 2)
		live += pma_usable_size(heap, fill[i]);
	assert_true(live >= (uint64_t)(got / 2) * 4000);
	pma_heap_close(heap);
	heap = open_heap(f);
	assert_int_equal(pma_heap_stats(heap, &st1), 0);
	assert_int_equal(st1.used_bytes, live);
	for (i = 1; i < got; i += 2)
		assert_true(pma_usable_size(heap, fill[i]) >= 4000);
	for (i = 1; i < got; i += 2)
		assert_int_equal(pma_free_from(heap, &fill[i]), 0);
	assert_int_equal(pma_heap_checkpoint(heap), 0);
	assert_int_equal(pma_heap_stats(heap, &st), 0);
	assert_int_equal(st.used_bytes, 0);
	pma_heap_close(heap);
	free(fill);
}

/*
 * Two parts of 2 regions each: 4 regions in the table, 2 per part; a
 * root table names blocks of every region; frees of every region from
 * one thread (across regions of its part and across parts, XFREE);
 * reopen keeps what is live; stats per part sum its regions.
 */
static void test_two_parts(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *heap = create_heap(f, 2, 2);
	uint64_t offs[8], rsize = 0, root = 0, *slots, used, blocks = 0;
	unsigned parts[8], n, i, seen[8] = { 0 };
	struct pma_heap_stats st, p0, p1;
	int r;

	pma_heap_close(heap);
	n = read_regions(f, parts, offs, &rsize);
	assert_int_equal(n, 4);
	heap = open_heap(f);
	assert_int_equal(pma_root(heap, 4 * NBLOCKS * sizeof(uint64_t), &root),
			 0);
	slots = pma_direct(heap, root);
	assert_non_null(slots);
	for (i = 0; i < 4; i++)
		thread_alloc(heap, slots + i * NBLOCKS, NBLOCKS);
	/* threads take their part's regions in turn */
	for (i = 0; i < 4 * NBLOCKS; i++) {
		r = region_of(slots[i], n, parts, offs, rsize);
		assert_true(r >= 0);
		seen[r]++;
	}
	/* both regions of the threads' part were used */
	assert_true((seen[0] && seen[1]) || (seen[2] && seen[3]));
	assert_int_equal(pma_heap_stats(heap, &st), 0);
	assert_int_equal(st.parts, 2);
	assert_int_equal(pma_heap_part_stats(heap, 0, &p0), 0);
	assert_int_equal(pma_heap_part_stats(heap, 1, &p1), 0);
	assert_int_equal(p0.used_bytes + p1.used_bytes, st.used_bytes);
	assert_int_equal(p0.heap_size + p1.heap_size, st.heap_size);
	used = st.used_bytes;
	pma_heap_close(heap);

	/* reopen: every block still live, stats the same */
	heap = open_heap(f);
	assert_int_equal(pma_root(heap, 4 * NBLOCKS * sizeof(uint64_t), &root),
			 0);
	slots = pma_direct(heap, root);
	assert_int_equal(pma_heap_stats(heap, &st), 0);
	assert_int_equal(st.used_bytes, used);
	for (i = 0; i < 4 * NBLOCKS; i++) {
		assert_true(pma_usable_size(heap, slots[i]) >= 200);
		blocks += pma_usable_size(heap, slots[i]);
	}
	/* one thread frees every region's blocks */
	for (i = 0; i < 4 * NBLOCKS; i++)
		assert_int_equal(pma_free_from(heap, &slots[i]), 0);
	assert_int_equal(pma_heap_checkpoint(heap), 0);
	pma_heap_close(heap);
	heap = open_heap(f);
	assert_int_equal(pma_heap_stats(heap, &st), 0);
	assert_int_equal(st.used_bytes, used - blocks);
	pma_heap_close(heap);
}

/* a plain pool (1 region per part) keeps one region per part */
static void test_plain(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *heap = create_heap(f, 2, 1);
	uint64_t offs[8], rsize = 0;
	unsigned parts[8];

	pma_heap_close(heap);
	assert_int_equal(read_regions(f, parts, offs, &rsize), 2);
	assert_int_equal(parts[0], 0);
	assert_int_equal(parts[1], 1);
}

/* open with a region mask: 0 or -errno (no failure) */
static int open_mask(struct fixture *f, uint64_t mask, unsigned flags,
		     struct pma_heap **ret_heap)
{
	struct pma_config *cfg = NULL;
	int rc;

	assert_int_equal(pma_config_new(&cfg), 0);
	assert_int_equal(pma_config_set_flags(cfg, flags), 0);
	assert_int_equal(pma_config_set_region_mask(cfg, mask), 0);
	rc = pma_heap_open_cfg(f->path, cfg, ret_heap);
	pma_config_delete(&cfg);
	return rc;
}

#define ROOT_WORDS 64

/* a pool's heap regions (read_regions) */
struct regs {
	unsigned n, parts[8];
	uint64_t offs[8], size;
};

/* a pool of 1 part x 2 regions, its regions into r, opened with mask 0x1 */
static struct pma_heap *two_regions(struct fixture *f, struct regs *r)
{
	struct pma_heap *a = NULL;

	pma_heap_close(create_heap(f, 1, 2));
	r->size = 0;
	r->n = read_regions(f, r->parts, r->offs, &r->size);
	assert_int_equal(open_mask(f, 0x1, 0, &a), 0);
	return a;
}

/* a page shared with forked children */
static void *shared_page(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	return p;
}

/* the whole pool after masked opens: every word of the root array is 0
 * or names a live block, and the live bytes are exactly those (no leak,
 * nothing freed twice); the count of non-zero words in [lo, hi) */
static unsigned check_whole(struct fixture *f, unsigned lo, unsigned hi,
			    int want_region, const struct regs *r)
{
	struct pma_heap_stats st;
	struct pma_heap *heap = open_heap(f);
	uint64_t root, *w, live = 0;
	unsigned i, nz = 0;
	size_t u;

	assert_int_equal(pma_root(heap, ROOT_WORDS * 8, &root), 0);
	live += pma_usable_size(heap, root);
	w = pma_direct(heap, root);
	for (i = 0; i < ROOT_WORDS; i++) {
		if (!w[i])
			continue;
		u = pma_usable_size(heap, w[i]);
		assert_true(u >= 100);
		live += u;
		if (i >= lo && i < hi) {
			nz++;
			if (want_region >= 0)
				assert_int_equal(region_of(w[i], r->n, r->parts,
							   r->offs, r->size),
						 want_region);
		}
	}
	assert_int_equal(pma_heap_stats(heap, &st), 0);
	assert_int_equal(st.used_bytes, live);
	pma_heap_close(heap);
	return nz;
}

/* two opens of one pool with disjoint region masks (1 part x 2
 * regions): each allocates in its own region only, dest words anywhere;
 * a foreign block is freed through a free ring and applied by its
 * holder; overlaps and whole-pool opens are refused while they run; the
 * whole pool after them */
/* pma_pool_ring_pending for dest_mask, from a read-only mapping of the
 * pool taken without a lock (as pmad's sync service reads it) */
static uint64_t probe_pending(const struct fixture *f, uint64_t dest_mask)
{
	struct pool *pool = NULL;
	uint64_t n = ~0ULL;

	assert_int_equal(pool_open(f->path, POOL_OPEN_RDONLY | POOL_OPEN_NOLOCK,
				   &pool),
			 0);
	assert_int_equal(pma_pool_ring_pending(pool, dest_mask, &n), 0);
	pool_close(&pool);
	return n;
}

static void test_mask_two_opens(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *a = NULL, *b = NULL, *c = NULL;
	uint64_t root, root_b, *w, *wb, keep, pending;
	struct regs r;
	unsigned i;

	a = two_regions(f, &r);
	assert_int_equal(r.n, 2);
	assert_int_equal(open_mask(f, 0x2, 0, &b), 0);
	assert_int_equal(pma_heap_regions(a), 2);
	/* the root: only slot 0's holder makes it (b cannot take slot 0
	 * while a holds it), both read it */
	assert_int_equal(pma_root(b, ROOT_WORDS * 8, &root_b), -EBUSY);
	assert_non_null(strstr(pma_errormsg(), "could not take region 0 of "
					       "part 0 (slot 0)"));
	assert_non_null(strstr(pma_errormsg(), "region 0 of part 0 is"));
	assert_int_equal(pma_root(a, ROOT_WORDS * 8, &root), 0);
	assert_int_equal(pma_root(b, ROOT_WORDS * 8, &root_b), 0);
	assert_int_equal(root_b, root);
	/* two mappings of the same files: the same memory */
	w = pma_direct(a, root);
	wb = pma_direct(b, root);
	wb[40] = 7;
	assert_int_equal(w[40], 7);
	wb[40] = 0;
	/* overlapping and exclusive opens are refused */
	assert_int_equal(open_mask(f, 0x3, 0, &c), -EBUSY);
	assert_non_null(strstr(pma_errormsg(), "region 0 of part 0"));
	assert_int_equal(open_mask(f, 0x2, 0, &c), -EBUSY);
	assert_non_null(strstr(pma_errormsg(), "region 1 of part 0"));
	assert_int_equal(pma_heap_open(f->path, 0, &c), -EBUSY);
	/* each allocates in its region; b's dest words are in a's block */
	for (i = 0; i < 16; i++) {
		assert_int_equal(pma_malloc_to(a, 200, &w[i]), 0);
		assert_int_equal(pma_malloc_to(b, 200, &wb[16 + i]), 0);
		assert_int_equal(region_of(w[i], r.n, r.parts, r.offs, r.size),
				 0);
		assert_int_equal(
			region_of(w[16 + i], r.n, r.parts, r.offs, r.size), 1);
	}
	/* a foreign block: freed through a's ring, applied by b's sync */
	keep = w[16];
	assert_int_equal(pma_usable_size(a, keep), 0);
	assert_int_equal(pma_free_from(a, &w[16]), 0);
	assert_int_equal(w[16], 0);
	assert_true(pma_usable_size(b, keep) > 0); /* not applied yet */
	assert_int_equal(pma_heap_ring_pending(a, &pending), 0);
	assert_int_equal(pending, 1);
	assert_int_equal(pma_heap_ring_pending(b, &pending), 0);
	assert_int_equal(pending, 1);
	/* the same from the pool's words, per destination region */
	assert_int_equal(probe_pending(f, 0x2), 1);
	assert_int_equal(probe_pending(f, 0x1), 0);
	assert_int_equal(probe_pending(f, 0x3), 1);
	assert_int_equal(probe_pending(f, 0), 0);
	assert_int_equal(pma_heap_sync(b), 1);
	assert_int_equal(pma_usable_size(b, keep), 0);
	assert_int_equal(pma_heap_ring_pending(a, &pending), 0);
	assert_int_equal(pending, 0);
	assert_int_equal(probe_pending(f, 0x3), 0);
	assert_int_equal(pma_heap_sync(b), 0);
	/* and the other way, with b's dest word in a's block */
	assert_int_equal(pma_free_from(b, &wb[0]), 0);
	assert_int_equal(w[0], 0);
	assert_int_equal(pma_heap_sync(a), 1);
	/* own blocks, with the dest in the other region's block */
	assert_int_equal(pma_free_from(b, &wb[17]), 0);
	assert_int_equal(w[17], 0);
	assert_int_equal(pma_free_from(a, &w[1]), 0);
	assert_int_equal(pma_heap_checkpoint(a), 0);
	assert_int_equal(pma_heap_checkpoint(b), 0);
	pma_heap_close(a);
	/* a's slot is free again: another masked open takes it */
	assert_int_equal(open_mask(f, 0x1, 0, &a), 0);
	assert_int_equal(pma_malloc_to(a, 200, &w[1]), 0);
	pma_heap_close(a);
	pma_heap_close(b);
	assert_int_equal(check_whole(f, 0, 16, 0, &r), 15);
	assert_int_equal(check_whole(f, 16, 32, 1, &r), 14);
}

static void test_mask_bad(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *h = NULL;

	pma_heap_close(create_heap(f, 1, 2));
	assert_int_equal(open_mask(f, 0x4, 0, &h), -EINVAL);
	assert_non_null(strstr(pma_errormsg(), "no region slot 2"));
	assert_int_equal(open_mask(f, 0x1, PMA_HEAP_RDONLY, &h), -EINVAL);
	assert_int_equal(open_mask(f, 0x1, PMA_HEAP_FORMAT, &h), -EINVAL);
	/* nothing was left locked */
	assert_int_equal(open_mask(f, 0x3, 0, &h), 0);
	pma_heap_close(h);
}

/* a ring holds 64 frees the holder has not applied: the 65th waits
 * (-EAGAIN, nothing changed) until it syncs; a block freed twice through
 * rings is applied once (the second ignored); a close applies the rest */
static void test_mask_ring_full(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *a = NULL, *b = NULL;
	uint64_t root, *w, *wb, keep;
	struct regs r;
	unsigned i;

	a = two_regions(f, &r);
	assert_int_equal(open_mask(f, 0x2, 0, &b), 0);
	/* (a word more than check_whole looks at) */
	assert_int_equal(pma_root(a, (ROOT_WORDS + 1) * 8, &root), 0);
	w = pma_direct(a, root);
	wb = pma_direct(b, root);
	/* b's blocks in a's root array, freed by a: one more than a ring
	 * holds, while b does nothing */
	for (i = 0; i <= ROOT_WORDS; i++)
		assert_int_equal(pma_malloc_to(b, 300, &wb[i]), 0);
	for (i = 0; i < 64; i++)
		assert_int_equal(pma_free_from(a, &w[i]), 0);
	keep = w[ROOT_WORDS];
	assert_int_equal(pma_free_from(a, &w[ROOT_WORDS]), -EAGAIN);
	assert_non_null(strstr(pma_errormsg(), "has not applied"));
	assert_int_equal(w[ROOT_WORDS], keep);
	assert_int_equal(pma_heap_sync(b), 64);
	assert_int_equal(pma_free_from(a, &w[ROOT_WORDS]), 0);
	assert_int_equal(pma_heap_sync(b), 1);
	/* a double free through the ring: applied once, then ignored */
	for (i = 0; i < 3; i++)
		assert_int_equal(pma_malloc_to(b, 300, &wb[i]), 0);
	assert_int_equal(pma_free_from(a, &w[0]), 0);
	w[0] = w[1];
	assert_int_equal(pma_free_from(a, &w[0]), 0);
	assert_int_equal(pma_free_from(a, &w[1]), 0);
	assert_int_equal(pma_heap_sync(b), 3); /* one of them ignored */
	/* left for b's close to apply */
	assert_int_equal(pma_free_from(a, &w[2]), 0);
	pma_heap_close(b);
	pma_heap_close(a);
	assert_int_equal(check_whole(f, 0, ROOT_WORDS, 1, &r), 0);
}

/* fsck of free rings: after the holder of region 1 died, a's frees of
 * its blocks wait in a's ring: "ring-pending"; one names a block that is
 * no longer live (a stale offset): "ring-entry-not-live"; a writable
 * open applies them (skipping that one) and fsck is quiet again */
struct ring_codes {
	unsigned pending, not_live, errors;
};

static int ring_code(const struct pool_fsck_finding *fi, void *arg)
{
	struct ring_codes *c = arg;

	if (!strcmp(fi->code, "ring-pending"))
		c->pending++;
	else if (!strcmp(fi->code, "ring-entry-not-live"))
		c->not_live++;
	else if (fi->severity == POOL_FSCK_ERROR)
		c->errors++;
	return 0;
}

static struct ring_codes ring_fsck(struct fixture *f)
{
	struct ring_codes c = { 0 };
	struct pool_fsck_sink sink = { .fn = ring_code, .arg = &c };

	assert_int_equal(pma_fsck(f->path, &sink), 0);
	return c;
}

static void test_mask_ring_fsck(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *a = NULL, *b = NULL;
	struct ring_codes c;
	uint64_t root, *w, *wb, stale;
	struct regs r;
	int st;
	pid_t pid;

	a = two_regions(f, &r);
	assert_int_equal(pma_root(a, ROOT_WORDS * 8, &root), 0);
	w = pma_direct(a, root);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) { /* region 1: two blocks, one freed again */
		if (open_mask(f, 0x2, 0, &b) < 0)
			_exit(2);
		wb = pma_direct(b, root);
		if (pma_malloc_to(b, 300, &wb[0]) < 0 ||
		    pma_malloc_to(b, 300, &wb[1]) < 0)
			_exit(3);
		stale = wb[1];
		if (pma_free_from(b, &wb[1]) < 0)
			_exit(4);
		wb[2] = stale; /* a word that names a freed block */
		pma_persist(b, &wb[2], sizeof(wb[2]));
		raise(SIGKILL); /* no close: nothing drains region 1 */
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_true(w[0] != 0 && w[2] != 0);
	assert_int_equal(pma_free_from(a, &w[0]), 0); /* through a's ring */
	assert_int_equal(pma_free_from(a, &w[2]), 0); /* a stale one */
	pma_heap_close(a); /* drains region 0 only */
	c = ring_fsck(f);
	assert_int_equal(c.pending, 1); /* region 1: 2 entries wait */
	assert_int_equal(c.not_live, 1);
	assert_int_equal(c.errors, 0);
	/* a writable open of everything applies them */
	assert_int_equal(pma_heap_open(f->path, 0, &a), 0);
	pma_heap_close(a);
	c = ring_fsck(f);
	assert_int_equal(c.pending + c.not_live + c.errors, 0);
	assert_int_equal(check_whole(f, 0, ROOT_WORDS, -1, &r), 0);
}

/* a committed ring entry damaged between two others (below the
 * producer word): "ring-entry-invalid", the holder would apply nothing
 * from it on; --repair --advanced voids it (that free is lost: its block
 * stays allocated), the producer word stays, and the rest apply */
struct ring_notes {
	unsigned invalid, advanced, pending, voided, prod, errors;
};

static int ring_note(const struct pool_fsck_finding *fi, void *arg)
{
	struct ring_notes *c = arg;

	if (!strcmp(fi->code, "ring-entry-invalid")) {
		c->invalid++;
		c->advanced += pma_fsck_blocks_repair(fi, 0) &&
			       !pma_fsck_blocks_repair(fi, 1);
	} else if (!strcmp(fi->code, "ring-pending"))
		c->pending++;
	else if (!strcmp(fi->code, "repair-ring-entry-void"))
		c->voided++;
	else if (!strcmp(fi->code, "repair-ring-prod"))
		c->prod++;
	else if (fi->severity != POOL_FSCK_INFO)
		c->errors++;
	return 0;
}

static void test_mask_ring_damaged(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *a = NULL, *b = NULL;
	struct ring_notes c = { 0 }, n = { 0 };
	struct pool_fsck_sink sink = { .fn = ring_note, .arg = &c };
	struct pool_fsck_sink notes = { .fn = ring_note, .arg = &n };
	uint64_t root, *w, *wb, blocks[4], xring_off, word, ent;
	struct regs r;
	unsigned i;
	int st, fd;
	pid_t pid;

	a = two_regions(f, &r);
	assert_int_equal(pma_root(a, ROOT_WORDS * 8, &root), 0);
	w = pma_direct(a, root);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) { /* region 1: four blocks, then its holder dies */
		if (open_mask(f, 0x2, 0, &b) < 0)
			_exit(2);
		wb = pma_direct(b, root);
		for (i = 0; i < 4; i++)
			if (pma_malloc_to(b, 300, &wb[i]) < 0)
				_exit(3);
		raise(SIGKILL);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	for (i = 0; i < 4; i++) {
		blocks[i] = w[i];
		assert_int_equal(pma_free_from(a, &w[i]), 0); /* entry i */
	}
	pma_heap_close(a);
	/* entry 1 of region 0's ring for slot 1: its tag flipped */
	fd = open(f->path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &xring_off, 8,
			       (off_t)(r.offs[0] + offsetof(struct pma_heap_hdr,
							    xring_off))),
			 8);
	ent = r.offs[0] + xring_off +
	      (1 * PMA_XRING_CAP + 1) * sizeof(struct pma_xent);
	assert_int_equal(pread(fd, &word, 8, (off_t)ent), 8);
	word ^= 1;
	assert_int_equal(pwrite(fd, &word, 8, (off_t)ent), 8);
	close(fd);
	assert_int_equal(pma_fsck(f->path, &sink), 0);
	assert_int_equal(c.invalid, 1);
	assert_int_equal(c.pending, 1); /* (entry 0 only, as a drain sees) */
	assert_int_equal(c.errors, 0);
	/* only --advanced repairs it (pmactl fsck --repair alone: exit 3) */
	assert_int_equal(c.advanced, 1);
	assert_int_equal(
		pma_fsck_repair_flags(f->path, PMA_FSCK_DRY_RUN, &notes), 0);
	assert_int_equal(n.voided + n.prod, 0);
	assert_int_equal(
		pma_fsck_repair_flags(f->path, PMA_FSCK_ADVANCED, &notes), 0);
	assert_int_equal(n.voided, 1);
	assert_int_equal(n.prod, 1);
	/* the open of the repair applied entries 0, 2 and 3 */
	memset(&c, 0, sizeof(c));
	assert_int_equal(pma_fsck(f->path, &sink), 0);
	assert_int_equal(c.invalid + c.pending + c.errors, 0);
	assert_int_equal(pma_heap_open(f->path, 0, &a), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(pma_usable_size(a, blocks[i]) != 0, i == 1);
	pma_heap_close(a);
}

/*
 * A consumer word whose store was lost (power) after a freer took it: the
 * freer wrote the next lap's entries into the slots below it. Made here
 * by storing an older consumer word back over the one a drain persisted.
 * The open moves the word past those slots (pma_xring_start): every free
 * is applied, the freer's frees go on (no -EAGAIN), fsck is clean.
 */
#define LOST_N 76 /* frees: 8, drained; 60, drained; 8 more (slots 4..11) */
static void test_mask_ring_lost_cons(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *a = NULL, *b = NULL;
	uint64_t root, *w, *wb, *tab, old_word = 0, *shared;
	struct ring_codes c;
	struct regs r;
	unsigned i;
	int st, fd;
	off_t cons_at;
	pid_t pid;

	a = two_regions(f, &r);
	assert_int_equal(pma_root(a, ROOT_WORDS * 8, &root), 0);
	pma_heap_close(a);
	cons_at = (off_t)(r.offs[1] + offsetof(struct pma_heap_hdr, xcons));
	shared = shared_page();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (open_mask(f, 0x1, 0, &a) < 0 ||
		    open_mask(f, 0x2, 0, &b) < 0)
			_exit(2);
		w = pma_direct(a, root);
		wb = pma_direct(b, root);
		if (pma_malloc_to(b, (LOST_N + 4) * 8, &wb[0]) < 0)
			_exit(3);
		tab = pma_direct(b, wb[0]);
		for (i = 0; i < LOST_N + 4; i++)
			if (pma_malloc_to(b, 200, &tab[i]) < 0)
				_exit(4);
		memcpy(shared, tab, (LOST_N + 4) * 8);
		tab = pma_direct(a, w[0]);
		for (i = 0; i < LOST_N; i++) {
			if (pma_free_from(a, &tab[i]) < 0)
				_exit(5);
			if (i == 7 && pma_heap_sync(b) != 8)
				_exit(6);
			if (i == 7) /* the consumer word at 8 */
				shared[511] = __atomic_load_n(&b->hdr->xcons[0],
							      __ATOMIC_ACQUIRE);
			if (i == 67 && pma_heap_sync(b) != 60)
				_exit(7);
		}
		raise(SIGKILL); /* entries 68..75 wait in slots 4..11 */
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	old_word = shared[511];
	assert_true(old_word != 0);
	fd = open(f->path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &old_word, 8, cons_at), 8);
	close(fd);
	/* fsck reads past the next lap's slots too: no error (entries
	 * below the lost word are warned as not live: applied already) */
	c = ring_fsck(f);
	assert_int_equal(c.errors, 0);
	assert_int_equal(pma_heap_open(f->path, 0, &a), 0);
	w = pma_direct(a, root);
	tab = pma_direct(a, w[0]);
	for (i = 0; i < LOST_N + 4; i++) {
		assert_int_equal(tab[i] != 0, i >= LOST_N);
		assert_int_equal(pma_usable_size(a, shared[i]) != 0,
				 i >= LOST_N);
	}
	/* and frees through the ring go on (the word moved past slot 11) */
	pma_heap_close(a);
	assert_int_equal(open_mask(f, 0x1, 0, &a), 0);
	w = pma_direct(a, root);
	tab = pma_direct(a, w[0]);
	for (i = LOST_N; i < LOST_N + 4; i++)
		assert_int_equal(pma_free_from(a, &tab[i]), 0);
	pma_heap_close(a);
	c = ring_fsck(f);
	assert_int_equal(c.pending, 1); /* (one finding: 4 frees) */
	assert_int_equal(c.not_live + c.errors, 0);
	assert_int_equal(pma_heap_open(f->path, 0, &a), 0);
	for (i = 0; i < LOST_N + 4; i++)
		assert_int_equal(pma_usable_size(a, shared[i]), 0);
	pma_heap_close(a);
	munmap(shared, 4096);
}

/* frees of blocks of a region whose holder closed: past a ring's worth,
 * the freer opens the region itself (its open applies the ring) */
static void test_mask_ring_adopt(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *a = NULL, *b = NULL;
	uint64_t root, *w, *wb, *more;
	struct regs r;
	unsigned i;

	a = two_regions(f, &r);
	assert_int_equal(open_mask(f, 0x2, 0, &b), 0);
	assert_int_equal(pma_root(a, ROOT_WORDS * 8, &root), 0);
	w = pma_direct(a, root);
	wb = pma_direct(b, root);
	/* 64 words of b's blocks, and one more table of 64 in b's region */
	assert_int_equal(pma_malloc_to(b, 64 * 8, &wb[0]), 0);
	more = pma_direct(b, wb[0]);
	for (i = 0; i < 64; i++)
		assert_int_equal(pma_malloc_to(b, 200, &more[i]), 0);
	for (i = 1; i < ROOT_WORDS; i++)
		assert_int_equal(pma_malloc_to(b, 200, &wb[i]), 0);
	pma_heap_close(b);
	/* 127 frees of the closed region's blocks: no -EAGAIN */
	more = pma_direct(a, w[0]);
	for (i = 0; i < 64; i++)
		assert_int_equal(pma_free_from(a, &more[i]), 0);
	for (i = 1; i < ROOT_WORDS; i++)
		assert_int_equal(pma_free_from(a, &w[i]), 0);
	assert_int_equal(pma_free_from(a, &w[0]), 0);
	pma_heap_close(a);
	assert_int_equal(check_whole(f, 0, ROOT_WORDS, -1, &r), 0);
}

/* regions of layout 11 have no rings: -EXDEV */
static void test_mask_old_layout(void **state)
{
	struct fixture *f = *state;
	struct pma_config *cfg = NULL;
	struct pma_heap *a = NULL, *b = NULL;
	uint64_t root, *w, *wb;

	assert_int_equal(pma_config_new(&cfg), 0);
	assert_int_equal(pma_config_set_regions(cfg, 2), 0);
	assert_int_equal(pma_config_set_format(cfg, 11, 0), 0);
	assert_int_equal(pma_heap_create_cfg(f->path, PART_SIZE, cfg, &a), 0);
	pma_config_delete(&cfg);
	pma_heap_close(a);
	assert_int_equal(open_mask(f, 0x1, 0, &a), 0);
	assert_int_equal(open_mask(f, 0x2, 0, &b), 0);
	assert_int_equal(pma_root(a, ROOT_WORDS * 8, &root), 0);
	w = pma_direct(a, root);
	wb = pma_direct(b, root);
	assert_int_equal(pma_malloc_to(b, 300, &wb[0]), 0);
	assert_int_equal(pma_free_from(a, &w[0]), -EXDEV);
	assert_non_null(strstr(pma_errormsg(), "region 1 of part 0"));
	assert_int_equal(pma_free_from(b, &wb[0]), 0);
	pma_heap_close(b);
	pma_heap_close(a);
}

/* a child process holds region 1 and allocates and frees (dest words in
 * the parent's root block) until it is killed; the parent allocates in
 * region 0 meanwhile. The whole pool then: nothing lost or leaked */
static void test_mask_fork_kill(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *a = NULL, *b = NULL;
	uint64_t root, *w;
	struct timespec ts = { 0, 150 * 1000 * 1000 };
	struct regs r;
	unsigned i, round;
	volatile unsigned *rounds;
	int st;
	pid_t pid;

	rounds = shared_page();
	a = two_regions(f, &r);
	assert_int_equal(pma_root(a, ROOT_WORDS * 8, &root), 0);
	w = pma_direct(a, root);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (open_mask(f, 0x2, 0, &b) < 0)
			_exit(2);
		w = pma_direct(b, root);
		for (round = 0;; round++, (*rounds)++)
			for (i = 32; i < ROOT_WORDS; i++)
				if ((w[i] ? pma_free_from(b, &w[i]) :
					    pma_malloc_to(b, 200 + round % 300,
							  &w[i])) < 0)
					_exit(3);
	}
	for (round = 0; round < 200; round++)
		for (i = 0; i < 32; i++)
			assert_int_equal(w[i] ? pma_free_from(a, &w[i]) :
						pma_malloc_to(a, 100, &w[i]),
					 0);
	nanosleep(&ts, NULL);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_true(*rounds > 0); /* it was killed while at work */
	/* the dead child's slot can be taken at once */
	assert_int_equal(open_mask(f, 0x2, 0, &b), 0);
	pma_heap_close(b);
	pma_heap_close(a);
	(void)check_whole(f, 0, 32, 0, &r);
	(void)check_whole(f, 32, ROOT_WORDS, 1, &r);
	munmap((void *)rounds, 4096);
}

/* each side allocates into its half of the table and frees the other
 * side's half (through free rings): n rounds, or forever (n == 0) */
static unsigned cross_run(struct pma_heap *h, uint64_t *w, unsigned mine,
			  unsigned rounds, volatile unsigned *freed)
{
	unsigned r, i, half = ROOT_WORDS / 2, other = mine ? 0 : half;
	unsigned got = 0;
	uint64_t v;
	int rc;

	for (r = 0; !rounds || r < rounds; r++) {
		for (i = 0; i < half; i++) {
			if (!__atomic_load_n(&w[mine + i], __ATOMIC_ACQUIRE) &&
			    pma_malloc_to(h, 100 + (r + i) % 400, &w[mine + i]))
				return got;
			v = __atomic_load_n(&w[other + i], __ATOMIC_ACQUIRE);
			if (!v)
				continue;
			rc = pma_free_from(h, &w[other + i]);
			if (rc == -EAGAIN) /* the other side stopped draining */
				return got;
			if (rc < 0) {
				fprintf(stderr, "free: %s\n", pma_errormsg());
				_exit(20);
			}
			got++;
			if (freed)
				(*freed)++;
		}
	}
	return got;
}

/* two processes, each holding a region, free each other's blocks
 * (free rings both ways) while allocating their own; the child is
 * killed with SIGKILL, another open takes its region (recovered, the
 * parent's frees of its blocks applied) while the parent goes on; the
 * whole pool after all of it: every word names a live block or is 0,
 * and nothing else is live */
static void test_mask_fork_cross(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *a = NULL, *b = NULL;
	uint64_t root, *w, *wb;
	struct timespec t0, t1;
	volatile unsigned *freed;
	struct regs r;
	int st;
	pid_t pid;

	freed = shared_page();
	a = two_regions(f, &r);
	assert_int_equal(pma_root(a, ROOT_WORDS * 8, &root), 0);
	w = pma_direct(a, root);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (open_mask(f, 0x2, 0, &b) < 0)
			_exit(2);
		freed[1] = 1; /* ready */
		(void)cross_run(b, pma_direct(b, root), ROOT_WORDS / 2, 0,
				freed);
		fprintf(stderr, "child: %s\n", pma_errormsg());
		_exit(3); /* (its frees stopped: the parent quit draining) */
	}
	while (!freed[1])
		sched_yield();
	/* both at work for a while, then the child dies mid-way */
	assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &t0), 0);
	do {
		(void)cross_run(a, w, 0, 1, NULL);
		assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &t1), 0);
	} while ((t1.tv_sec - t0.tv_sec) * 1000000000L +
			 (t1.tv_nsec - t0.tv_nsec) <
		 300 * 1000 * 1000L);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_true(*freed > 0); /* the child freed the parent's blocks */
	assert_true(atomic_load(&a->xring_frees) > 0); /* and the other way */
	print_message("# child freed %u parent blocks, parent %lu of the "
		      "child's (free rings)\n",
		      freed[0], atomic_load(&a->xring_frees));
	/* the parent goes on (its ring to the dead region fills) while
	 * another open recovers that region and applies what it owes */
	(void)cross_run(a, w, 0, 2, NULL);
	assert_int_equal(open_mask(f, 0x2, 0, &b), 0);
	wb = pma_direct(b, root);
	(void)cross_run(b, wb, ROOT_WORDS / 2, 20, NULL);
	(void)cross_run(a, w, 0, 20, NULL);
	pma_heap_close(b);
	pma_heap_close(a);
	(void)check_whole(f, 0, ROOT_WORDS / 2, 0, &r);
	(void)check_whole(f, ROOT_WORDS / 2, ROOT_WORDS, 1, &r);
	munmap((void *)freed, 4096);
}

struct xfree_arg {
	struct pma_heap *heap;
	uint64_t *word;
	int free;
};

static void *xfree_worker(void *arg)
{
	struct xfree_arg *x = arg;

	if (x->free)
		assert_int_equal(pma_free_from(x->heap, x->word), 0);
	else
		assert_int_equal(pma_malloc_to(x->heap, 200, x->word), 0);
	return NULL;
}

static void xfree_thread(struct pma_heap *heap, uint64_t *word, int free)
{
	struct xfree_arg x = { heap, word, free };
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, xfree_worker, &x), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
}

/* a whole-pool open that died with an XFREE in its logs (a free across
 * parts, threads interleaved over 2 parts): masked opens refuse the
 * pool (either side of the record), a whole open applies it, then they
 * work */
static void test_mask_xfree_leftover(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *h = NULL;
	uint64_t root, *w;
	int st;
	pid_t pid;

	pma_heap_close(create_heap(f, 2, 1));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (pma_heap_open(f->path, PMA_HEAP_INTERLEAVE, &h) < 0 ||
		    pma_root(h, 64, &root) < 0)
			_exit(2);
		w = pma_direct(h, root);
		xfree_thread(h, &w[0], 0); /* first thread: part 0 */
		xfree_thread(h, &w[0], 1); /* second: part 1, an XFREE */
		_exit(w[0] == 0 ? 0 : 3); /* no close: the record stays */
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(open_mask(f, 0x1, 0, &h), -EBUSY);
	assert_non_null(strstr(pma_errormsg(), "open the whole pool once"));
	assert_int_equal(open_mask(f, 0x2, 0, &h), -EBUSY);
	pma_heap_close(open_heap(f));
	assert_int_equal(open_mask(f, 0x1, 0, &h), 0);
	pma_heap_close(h);
	assert_int_equal(open_mask(f, 0x2, 0, &h), 0);
	pma_heap_close(h);
}

/* pma_heap_add_regions: a masked open whose region is full takes
 * another and allocates on; bad adds change nothing (a slot locked by a
 * failed add is given back); the whole pool after it */
static void test_add_more_room(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *a = NULL, *b = NULL, *whole;
	uint64_t root, *w;
	struct regs r;
	unsigned i, n0, n1 = 0;
	int rc;

	pma_heap_close(create_heap(f, 1, 4));
	r.size = 0;
	r.n = read_regions(f, r.parts, r.offs, &r.size);
	assert_int_equal(r.n, 4);
	assert_int_equal(open_mask(f, 0x1, 0, &a), 0);
	assert_int_equal(pma_root(a, ROOT_WORDS * 8, &root), 0);
	w = pma_direct(a, root);
	for (i = 0; i < ROOT_WORDS; i++) {
		rc = pma_malloc_to(a, 1 << 20, &w[i]);
		if (rc == -ENOMEM)
			break;
		assert_int_equal(rc, 0);
		assert_int_equal(region_of(w[i], r.n, r.parts, r.offs, r.size),
				 0);
	}
	n0 = i;
	assert_true(n0 > 2 && 2 * n0 < ROOT_WORDS);
	assert_int_equal(pma_heap_add_regions(a, 0), -EINVAL);
	assert_int_equal(pma_heap_add_regions(a, 0x1), -EEXIST);
	assert_int_equal(pma_heap_add_regions(a, 0x10), -EINVAL);
	assert_non_null(strstr(pma_errormsg(), "no region slot 4"));
	assert_int_equal(open_mask(f, 0x4, 0, &b), 0);
	assert_int_equal(pma_heap_add_regions(a, 0x6), -EBUSY);
	assert_non_null(strstr(pma_errormsg(), "region 2 of part 0"));
	assert_int_equal(pma_malloc_to(a, 1 << 20, &w[n0]), -ENOMEM);
	/* more room: region 1 (locked by the failed add, then let go) */
	assert_int_equal(pma_heap_add_regions(a, 0x2), 0);
	for (i = n0; i < 2 * n0; i++) {
		rc = pma_malloc_to(a, 1 << 20, &w[i]);
		if (rc == -ENOMEM)
			break;
		assert_int_equal(rc, 0);
		n1 += region_of(w[i], r.n, r.parts, r.offs, r.size) == 1;
	}
	assert_true(n1 >= n0 - 1);
	/* frees in both regions, then allocations again */
	for (i = 0; i < 2 * n0; i += 2)
		if (w[i])
			assert_int_equal(pma_free_from(a, &w[i]), 0);
	for (i = 0; i < 2 * n0; i += 4)
		assert_int_equal(pma_malloc_to(a, 300, &w[i]), 0);
	assert_int_equal(pma_heap_add_regions(a, 0x4), -EBUSY);
	pma_heap_close(b);
	pma_heap_close(a);
	(void)check_whole(f, 0, ROOT_WORDS, -1, &r);
	whole = open_heap(f);
	assert_int_equal(pma_heap_add_regions(whole, 0x2), -EINVAL);
	pma_heap_close(whole);
}

struct hook_seen {
	unsigned calls;
	int rc; /* what the hook returns */
	int add; /* the hook adds slot 0 first */
};

static int root_hook(struct pma_heap *heap, void *arg, char *why,
		     size_t why_len)
{
	struct hook_seen *h = arg;

	h->calls++;
	if (h->rc < 0)
		snprintf(why, why_len, "the hook says no");
	if (h->add) {
		int rc = pma_heap_add_regions(heap, 1);

		if (rc < 0)
			return rc;
	}
	return h->rc;
}

/* can another open take slot 0 now? */
static int slot0_free(struct fixture *f)
{
	struct pma_heap *h = NULL;
	int rc = open_mask(f, 0x1, 0, &h);

	if (rc == 0)
		pma_heap_close(h);
	else
		assert_int_equal(rc, -EBUSY);
	return rc == 0;
}

static int open_hook(struct fixture *f, uint64_t mask, struct hook_seen *h,
		     struct pma_heap **ret_heap)
{
	struct pma_config *cfg = NULL;
	int rc;

	assert_int_equal(pma_config_new(&cfg), 0);
	assert_int_equal(pma_config_set_region_mask(cfg, mask), 0);
	assert_int_equal(pma_config_set_root_hook(cfg, root_hook, h), 0);
	rc = pma_heap_open_cfg(f->path, cfg, ret_heap);
	pma_config_delete(&cfg);
	return rc;
}

/* pma_root in an open without slot 0 and no root yet: it takes slot 0
 * (pma_heap_add_regions, or the config's hook) and makes the root in
 * region 0; the others read it */
static void test_root_takes_slot0(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *a = NULL, *b = NULL, *c = NULL;
	struct hook_seen h = { 0 };
	uint64_t root, root_c, *w;
	struct regs r;

	pma_heap_close(create_heap(f, 1, 4));
	r.size = 0;
	r.n = read_regions(f, r.parts, r.offs, &r.size);
	assert_int_equal(r.n, 4);
	/* a hook that fails: its error, nothing taken */
	h.rc = -EACCES;
	assert_int_equal(open_hook(f, 0x2, &h, &b), 0);
	assert_int_equal(pma_root(b, ROOT_WORDS * 8, &root), -EACCES);
	assert_non_null(strstr(pma_errormsg(), "(slot 0), where it is made: "
					       "the hook says no"));
	assert_int_equal(h.calls, 1);
	assert_true(slot0_free(f));
	/* a hook that says yes but gives no slot 0 */
	h.rc = 0;
	assert_int_equal(pma_root(b, ROOT_WORDS * 8, &root), -EXDEV);
	assert_non_null(strstr(pma_errormsg(), "did not give this open"));
	assert_int_equal(h.calls, 2);
	/* a hook that adds slot 0: the root is made in region 0 */
	h.add = 1;
	assert_int_equal(pma_root(b, ROOT_WORDS * 8, &root), 0);
	assert_int_equal(h.calls, 3);
	assert_false(slot0_free(f));
	assert_int_equal(region_of(root, r.n, r.parts, r.offs, r.size), 0);
	/* made: no more calls, the same root, a bigger one refused */
	assert_int_equal(pma_root(b, ROOT_WORDS * 8, &root_c), 0);
	assert_int_equal(root_c, root);
	assert_int_equal(pma_root(b, 1 << 20, &root_c), -EINVAL);
	assert_int_equal(h.calls, 3);
	w = pma_direct(b, root);
	assert_int_equal(pma_malloc_to(b, 200, &w[0]), 0);
	/* another open reads it; slot 0 is b's */
	assert_int_equal(open_mask(f, 0x4, 0, &c), 0);
	assert_int_equal(pma_root(c, ROOT_WORDS * 8, &root_c), 0);
	assert_int_equal(root_c, root);
	pma_heap_close(c);
	pma_heap_close(b);
	assert_int_equal(check_whole(f, 0, 1, -1, &r), 1);
	/* no hook: pma_root adds slot 0 itself; -EBUSY while another open
	 * holds it */
	assert_int_equal(unlink(f->path), 0);
	pma_heap_close(create_heap(f, 1, 4));
	assert_int_equal(open_mask(f, 0x1, 0, &a), 0);
	assert_int_equal(open_mask(f, 0x8, 0, &c), 0);
	assert_int_equal(pma_root(c, ROOT_WORDS * 8, &root), -EBUSY);
	pma_heap_close(a);
	assert_true(slot0_free(f));
	assert_int_equal(pma_root(c, ROOT_WORDS * 8, &root), 0);
	assert_false(slot0_free(f));
	assert_int_equal(region_of(root, r.n, r.parts, r.offs, r.size), 0);
	w = pma_direct(c, root);
	assert_int_equal(pma_malloc_to(c, 200, &w[0]), 0);
	pma_heap_close(c);
	assert_int_equal(check_whole(f, 0, 1, -1, &r), 1);
}

struct room_seen {
	unsigned calls;
	unsigned next; /* the slot the hook adds next */
	unsigned last; /* no slot past this one */
};

static int room_hook(struct pma_heap *heap, void *arg, char *why,
		     size_t why_len)
{
	struct room_seen *r = arg;

	r->calls++;
	if (r->next > r->last) {
		snprintf(why, why_len, "no region left for the test");
		return -EBUSY;
	}
	return pma_heap_add_regions(heap, 1ULL << r->next++);
}

/* an allocation that finds the open's regions full asks the room hook
 * for more and goes on; -ENOMEM with the hook's reason when it has none;
 * no call for a size no region holds */
static void test_room_hook(void **state)
{
	struct fixture *f = *state;
	struct room_seen rs = { .next = 1, .last = 3 };
	struct pma_config *cfg = NULL;
	struct pma_heap *a = NULL;
	unsigned i, in[4] = { 0 };
	uint64_t root, *w;
	struct regs r;
	int rc, k;

	pma_heap_close(create_heap(f, 1, 4));
	r.size = 0;
	r.n = read_regions(f, r.parts, r.offs, &r.size);
	assert_int_equal(r.n, 4);
	assert_int_equal(pma_config_new(&cfg), 0);
	assert_int_equal(pma_config_set_region_mask(cfg, 0x1), 0);
	assert_int_equal(pma_config_set_room_hook(cfg, room_hook, &rs), 0);
	assert_int_equal(pma_heap_open_cfg(f->path, cfg, &a), 0);
	pma_config_delete(&cfg);
	assert_int_equal(pma_root(a, ROOT_WORDS * 8, &root), 0);
	w = pma_direct(a, root);
	/* bigger than a region: -ENOMEM at once, the hook not asked */
	assert_int_equal(pma_malloc_to(a, r.size * 2, &w[0]), -ENOMEM);
	assert_int_equal(rs.calls, 0);
	for (i = 0; i < ROOT_WORDS; i++) {
		rc = pma_malloc_to(a, 1 << 20, &w[i]);
		if (rc == -ENOMEM)
			break;
		assert_int_equal(rc, 0);
		k = region_of(w[i], r.n, r.parts, r.offs, r.size);
		assert_true(k >= 0);
		in[k]++;
	}
	assert_true(i < ROOT_WORDS);
	assert_non_null(strstr(pma_errormsg(), "no room for 1048576 bytes"));
	assert_non_null(strstr(pma_errormsg(), "no region left for the test"));
	/* three regions added, then the hook's refusal */
	assert_int_equal(rs.calls, 4);
	for (k = 0; k < 4; k++)
		assert_true(in[k] >= in[0] - 1 && in[k] > 2);
	pma_heap_close(a);
	assert_int_equal(check_whole(f, 0, ROOT_WORDS, -1, &r), i);
}

/* the region added was left by a process killed while it held it: its
 * allocations are recovered; a free the adder made of one of its blocks
 * before the add (through a free ring) is applied by the add */
static void test_add_recovers(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *a = NULL, *b = NULL;
	uint64_t root, *w;
	struct regs r;
	unsigned i;
	int st;
	pid_t pid;

	a = two_regions(f, &r);
	assert_int_equal(pma_root(a, ROOT_WORDS * 8, &root), 0);
	w = pma_direct(a, root);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (open_mask(f, 0x2, 0, &b) < 0)
			_exit(2);
		for (i = 32; i < 48; i++)
			if (pma_malloc_to(b, 200, &w[i]) < 0)
				_exit(3);
		if (pma_free_from(b, &w[32]) < 0)
			_exit(4);
		_exit(0); /* no close: a crash */
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(w[32], 0);
	assert_int_equal(pma_free_from(a, &w[33]), 0); /* a ring entry */
	assert_int_equal(w[33], 0);
	assert_int_equal(probe_pending(f, 0x2), 1);
	assert_int_equal(pma_heap_add_regions(a, 0x2), 0);
	assert_int_equal(probe_pending(f, 0x2), 0);
	for (i = 34; i < 48; i++)
		assert_int_equal(region_of(w[i], r.n, r.parts, r.offs, r.size),
				 1);
	assert_int_equal(pma_free_from(a, &w[34]), 0); /* now its own */
	for (i = 0; i < 8; i++)
		assert_int_equal(pma_malloc_to(a, 100, &w[i]), 0);
	pma_heap_close(a);
	assert_int_equal(check_whole(f, 32, 48, 1, &r), 13);
	(void)check_whole(f, 0, 8, -1, &r);
}

struct churn {
	struct pma_heap *heap;
	uint64_t *w;
	unsigned lo, hi;
	atomic_int *stop;
	atomic_ulong ops, enomem;
	int rc;
};

/* allocate or free each word of [lo, hi) in turn until told to stop */
static void *churn_run(void *arg)
{
	struct churn *c = arg;
	unsigned i;
	int rc;

	while (!atomic_load(c->stop) && c->rc == 0)
		for (i = c->lo; i < c->hi && c->rc == 0; i++) {
			rc = c->w[i] ? pma_free_from(c->heap, &c->w[i]) :
				       pma_malloc_to(c->heap,
						     (512 << 10) + i * 64,
						     &c->w[i]);
			atomic_fetch_add(&c->ops, 1);
			if (rc == -ENOMEM)
				atomic_fetch_add(&c->enomem, 1);
			else
				c->rc = rc;
		}
	return NULL;
}

/* until each churn's counter (ops or enomem) passes its mark, 10 s at
 * most (a loaded machine): 1 if they did */
static int churn_wait(struct churn *c, int enomem, const unsigned long *mark)
{
	struct timespec ts = { 0, 1000 * 1000 };
	unsigned n;

	for (n = 0; n < 10000; n++) {
		if ((enomem ? atomic_load(&c[0].enomem) :
			      atomic_load(&c[0].ops)) > mark[0] &&
		    (enomem ? atomic_load(&c[1].enomem) :
			      atomic_load(&c[1].ops)) > mark[1])
			return 1;
		if (c[0].rc || c[1].rc)
			return 0;
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* two threads allocate and free, failing for lack of room (each has seen
 * -ENOMEM), while the region is added, and go on for a while after it:
 * nothing fails but for room, and the pool after it holds exactly what
 * their words name */
static void test_add_while_running(void **state)
{
	struct fixture *f = *state;
	struct churn c[2];
	pthread_t t[2];
	atomic_int stop = 0;
	struct pma_heap *a;
	uint64_t root, *w;
	unsigned long mark[2] = { 0, 0 };
	struct regs r;
	unsigned j;
	int ok;

	a = two_regions(f, &r);
	assert_int_equal(pma_root(a, ROOT_WORDS * 8, &root), 0);
	w = pma_direct(a, root);
	for (j = 0; j < 2; j++) {
		memset(&c[j], 0, sizeof(c[j]));
		c[j].heap = a;
		c[j].w = w;
		c[j].lo = j * 32;
		c[j].hi = j * 32 + 32;
		c[j].stop = &stop;
		assert_int_equal(pthread_create(&t[j], NULL, churn_run, &c[j]),
				 0);
	}
	/* region 0 alone cannot hold both halves */
	ok = churn_wait(c, 1, mark);
	if (ok && pma_heap_add_regions(a, 0x2) < 0)
		fail_msg("pma_heap_add_regions: %s", pma_errormsg());
	for (j = 0; j < 2; j++)
		mark[j] = atomic_load(&c[j].ops) + 64;
	ok = ok && churn_wait(c, 0, mark);
	atomic_store(&stop, 1);
	for (j = 0; j < 2; j++) {
		assert_int_equal(pthread_join(t[j], NULL), 0);
		if (c[j].rc)
			fail_msg("thread %u: %s", j, pma_errormsg());
	}
	assert_true(ok);
	pma_heap_close(a);
	(void)check_whole(f, 0, ROOT_WORDS, -1, &r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config),
		cmocka_unit_test_setup_teardown(test_one_part, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_parts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_plain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mask_two_opens, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mask_bad, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mask_ring_fsck, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mask_ring_damaged, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mask_ring_lost_cons, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mask_ring_full, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mask_old_layout, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mask_ring_adopt, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mask_fork_kill, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mask_xfree_leftover, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mask_fork_cross, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_root_takes_slot0, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_room_hook, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_add_more_room, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_add_recovers, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_add_while_running, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
