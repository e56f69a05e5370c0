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
#include "pool/layout.h"
#include "pool/pool.h"

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
	snprintf(f->dir, sizeof(f->dir),
		 "/dev/shm/test-pmalloc-regions.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/pool", f->dir);
	snprintf(f->part1, sizeof(f->part1), "%s.part1", f->path);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	unlink(f->path);
	unlink(f->part1);
	rmdir(f->dir);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config),
		cmocka_unit_test_setup_teardown(test_one_part, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_parts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_plain, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
