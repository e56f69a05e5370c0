/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-pmalloc-extent: the free-extent index of lib/pmalloc/extent.c on its
 * own. Fixed cases (first fit, alignment, merges, the rebuild's
 * increasing-order puts), -ENOMEM through the shared allocation fault
 * point, and a randomized differential test against a page-per-byte model
 * with the tree invariants (pma_ext_check) verified after every operation.
 * PMA_EXT_SEED=n reruns the random test with another seed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pmalloc/internal.h"
#include "util/errmsg.h"
#include "util/io.h"

static void check_index(const struct pma_ext_index *idx)
{
	if (pma_ext_check(idx) < 0)
		fail_msg("pma_ext_check: %s", util_errmsg());
}

/* ------------------------------------------------------------ fixed cases */

static void test_extent_index(void **state)
{
	struct pma_ext_index idx = { 0 };
	uint64_t s;
	(void)state;

	assert_int_equal(pma_ext_put(&idx, 0, 100), 0);
	assert_int_equal(pma_ext_take(&idx, 3, 1, &s), 0);
	assert_int_equal(s, 0);
	assert_int_equal(pma_ext_take(&idx, 16, 16, &s), 0);
	assert_int_equal(s, 16); /* aligned: leaves [3,16) free */
	assert_int_equal(idx.count, 2);
	assert_int_equal(pma_ext_free_pages(&idx), 100 - 19);
	check_index(&idx);
	assert_int_equal(pma_ext_take(&idx, 200, 1, &s), -ENOMEM);
	assert_int_equal(pma_ext_put(&idx, 16, 16), 0); /* merges both */
	assert_int_equal(idx.count, 1);
	assert_int_equal(pma_ext_put(&idx, 0, 3), 0);
	assert_int_equal(idx.count, 1);
	assert_int_equal(pma_ext_largest(&idx), 100);
	check_index(&idx);
	assert_int_equal(pma_ext_take(&idx, 100, 1, &s), 0);
	assert_int_equal(idx.count, 0);
	assert_int_equal(pma_ext_largest(&idx), 0);
	assert_int_equal(pma_ext_free_pages(&idx), 0);
	check_index(&idx);
	pma_ext_index_release(&idx);
}

/* a run long enough but not once aligned is passed over for a later one */
static void test_extent_align_near_miss(void **state)
{
	struct pma_ext_index idx = { 0 };
	uint64_t s;
	(void)state;

	assert_int_equal(pma_ext_put(&idx, 1, 16), 0); /* [1,17) */
	assert_int_equal(pma_ext_put(&idx, 20, 30), 0); /* [20,50) */
	assert_int_equal(pma_ext_put(&idx, 100, 5), 0); /* [100,105) */
	assert_int_equal(pma_ext_largest(&idx), 30);
	assert_int_equal(pma_ext_take(&idx, 16, 16, &s), 0);
	assert_int_equal(s, 32); /* [20,32) and [48,50) stay free */
	assert_int_equal(idx.count, 4);
	assert_int_equal(pma_ext_largest(&idx), 16);
	assert_int_equal(pma_ext_free_pages(&idx), 16 + 12 + 2 + 5);
	check_index(&idx);
	/* no 16-aligned 16 pages left; unaligned, the first run fits */
	assert_int_equal(pma_ext_take(&idx, 16, 16, &s), -ENOMEM);
	assert_int_equal(pma_ext_take(&idx, 16, 1, &s), 0);
	assert_int_equal(s, 1);
	/* a 5-aligned 2 pages: [20,32) holds [20,22) */
	assert_int_equal(pma_ext_take(&idx, 2, 5, &s), 0);
	assert_int_equal(s, 20);
	check_index(&idx);
	pma_ext_index_release(&idx);
}

/* pma_rebuild puts every free run in increasing start order */
static void test_extent_increasing_puts(void **state)
{
	struct pma_ext_index idx = { 0 };
	const uint64_t n = 100000;
	uint64_t i, s;
	(void)state;

	for (i = 0; i < n; i++)
		assert_int_equal(pma_ext_put(&idx, i * 10, 1 + i % 7), 0);
	assert_int_equal(idx.count, n);
	assert_int_equal(pma_ext_largest(&idx), 7);
	check_index(&idx); /* includes the AVL balance of every node */
	/* 7 pages: the first run with i % 7 == 6, i.e. i = 6 */
	assert_int_equal(pma_ext_take(&idx, 7, 1, &s), 0);
	assert_int_equal(s, 60);
	assert_int_equal(pma_ext_take(&idx, 8, 1, &s), -ENOMEM);
	/* fill every gap: one run remains */
	for (i = 0; i < n; i++) {
		uint64_t len = 1 + i % 7;

		if (i == 6)
			assert_int_equal(pma_ext_put(&idx, 60, 10), 0);
		else
			assert_int_equal(
				pma_ext_put(&idx, i * 10 + len, 10 - len), 0);
	}
	assert_int_equal(idx.count, 1);
	assert_int_equal(pma_ext_largest(&idx), n * 10);
	check_index(&idx);
	pma_ext_index_release(&idx);
}

/* only a new run and a split in the middle need a node, and only a node
 * beyond the allocated blocks needs memory; on -ENOMEM the index is
 * unchanged */
static void test_extent_enomem(void **state)
{
	struct pma_ext_index idx = { 0 };
	const uint64_t nfill = PMA_EXT_BLOCK_NODES - 1;
	uint64_t i, s = 12345;
	(void)state;

	/* fill the first block of nodes exactly */
	assert_int_equal(pma_ext_put(&idx, 1, 100), 0); /* [1,101) */
	for (i = 0; i < nfill; i++)
		assert_int_equal(pma_ext_put(&idx, 1000 + i * 4, 2), 0);
	check_index(&idx);
	util_fault_inject_at(UTIL_FAULT_ALLOC, 1);
	assert_int_equal(pma_ext_put(&idx, 200, 10), -ENOMEM);
	assert_int_equal(idx.count, 1 + nfill);
	assert_int_equal(pma_ext_free_pages(&idx), 100 + 2 * nfill);
	check_index(&idx);
	util_fault_inject_at(UTIL_FAULT_ALLOC, 1);
	assert_int_equal(pma_ext_take(&idx, 10, 16, &s), -ENOMEM); /* split */
	assert_int_equal(s, 12345);
	assert_int_equal(idx.count, 1 + nfill);
	assert_int_equal(pma_ext_free_pages(&idx), 100 + 2 * nfill);
	assert_int_equal(pma_ext_largest(&idx), 100);
	check_index(&idx);
	/* trims and merges need no node: the armed fault stays unused */
	util_fault_inject_at(UTIL_FAULT_ALLOC, 1);
	assert_int_equal(pma_ext_take(&idx, 10, 1, &s), 0);
	assert_int_equal(s, 1);
	assert_int_equal(pma_ext_take(&idx, 10, 91, &s), 0);
	assert_int_equal(s, 91); /* [11,91) left */
	assert_int_equal(pma_ext_put(&idx, 91, 10), 0);
	assert_int_equal(pma_ext_put(&idx, 1, 10), 0);
	assert_int_equal(pma_ext_free_pages(&idx), 100 + 2 * nfill);
	assert_int_equal(util_fault_hit(UTIL_FAULT_ALLOC), 1);
	check_index(&idx);
	/* a node freed by a merge is reused without new memory */
	assert_int_equal(pma_ext_put(&idx, 1002, 2), 0); /* joins 2 runs */
	util_fault_inject_at(UTIL_FAULT_ALLOC, 1);
	assert_int_equal(pma_ext_put(&idx, 200, 10), 0);
	assert_int_equal(idx.count, 1 + nfill);
	assert_int_equal(util_fault_hit(UTIL_FAULT_ALLOC), 1);
	/* and with the fault disarmed, a new block */
	assert_int_equal(pma_ext_put(&idx, 300, 10), 0);
	assert_int_equal(idx.count, 2 + nfill);
	check_index(&idx);
	pma_ext_index_release(&idx);
}

/* after pma_ext_reserve(n), n puts need no memory, whatever the tree */
static void test_extent_reserve(void **state)
{
	struct pma_ext_index idx = { 0 };
	uint64_t i;
	(void)state;

	/* enough nodes that the reserve needs a second block */
	util_fault_inject_at(UTIL_FAULT_ALLOC, 1);
	assert_int_equal(pma_ext_reserve(&idx, 3 * PMA_EXT_BLOCK_NODES / 2),
			 -ENOMEM);
	assert_int_equal(pma_ext_reserve(&idx, 3 * PMA_EXT_BLOCK_NODES / 2), 0);
	util_fault_inject_at(UTIL_FAULT_ALLOC, 1);
	/* isolated runs: each put takes a node */
	for (i = 0; i < 3 * PMA_EXT_BLOCK_NODES / 2; i++)
		assert_int_equal(pma_ext_put(&idx, 10 * i, 2), 0);
	assert_int_equal(idx.count, 3 * PMA_EXT_BLOCK_NODES / 2);
	check_index(&idx);
	/* no put allocated: the armed fault is still there */
	assert_int_equal(util_fault_hit(UTIL_FAULT_ALLOC), 1);
	assert_int_equal(pma_ext_reserve(&idx, 0), 0);
	pma_ext_index_release(&idx);
}

/* ------------------------------------------------------------ random */

#define RND_PAGES 2048
#define RND_OPS 200000

struct range {
	uint64_t start, npages;
};

struct model {
	uint8_t used[RND_PAGES]; /* 1 = not free */
	struct range taken[RND_PAGES]; /* ranges to give back */
	size_t ntaken;
	uint64_t rng;
};

static uint64_t rnd(struct model *m, uint64_t n)
{
	/* xorshift64*: reproducible from the seed on every libc */
	m->rng ^= m->rng >> 12;
	m->rng ^= m->rng << 25;
	m->rng ^= m->rng >> 27;
	return (m->rng * 0x2545f4914f6cdd1dULL >> 11) % n;
}

/* first fit over the maximal free runs, as the index must answer */
static int model_take(const struct model *m, uint64_t npages, uint64_t align,
		      uint64_t *ret_start)
{
	uint64_t p = 0, end, s;

	while (p < RND_PAGES) {
		if (m->used[p]) {
			p++;
			continue;
		}
		for (end = p; end < RND_PAGES && !m->used[end]; end++)
			;
		s = (p + align - 1) / align * align;
		if (s + npages <= end) {
			*ret_start = s;
			return 0;
		}
		p = end;
	}
	return -ENOMEM;
}

static void model_mark(struct model *m, uint64_t start, uint64_t npages,
		       uint8_t used)
{
	uint64_t i;

	for (i = start; i < start + npages; i++) {
		assert_int_equal(m->used[i], !used); /* the test's own logic */
		m->used[i] = used;
	}
}

/* compare largest, free pages and the run count with the model */
static void model_compare(const struct model *m,
			  const struct pma_ext_index *idx, unsigned op)
{
	uint64_t largest = 0, free_pages = 0, runs = 0, len = 0, i;

	for (i = 0; i < RND_PAGES; i++) {
		if (m->used[i]) {
			len = 0;
			continue;
		}
		runs += len == 0;
		len++;
		free_pages++;
		if (len > largest)
			largest = len;
	}
	if (pma_ext_check(idx) < 0)
		fail_msg("op %u: pma_ext_check: %s", op, util_errmsg());
	if (pma_ext_largest(idx) != largest ||
	    pma_ext_free_pages(idx) != free_pages || idx->count != runs)
		fail_msg("op %u: largest %llu free %llu runs %zu, model %llu "
			 "%llu %llu",
			 op, (unsigned long long)pma_ext_largest(idx),
			 (unsigned long long)pma_ext_free_pages(idx),
			 idx->count, (unsigned long long)largest,
			 (unsigned long long)free_pages,
			 (unsigned long long)runs);
}

/* a request like the allocator's (slabs, small and large extents) and a
 * few other alignments */
static void random_request(struct model *m, uint64_t *npages, uint64_t *align)
{
	static const uint64_t aligns[] = { 2, 3, 8, 64 };
	uint64_t r = rnd(m, 100);

	*align = 1;
	if (r < 35) {
		*npages = 1 + rnd(m, 4);
	} else if (r < 60) {
		*npages = 1 + rnd(m, 40);
	} else if (r < 80) {
		*npages = 16;
		*align = 16;
	} else if (r < 88) {
		*npages = 1 + rnd(m, 40);
		*align = 16;
	} else if (r < 94) {
		*npages = 1 + rnd(m, 40);
		*align = aligns[rnd(m, 4)];
	} else {
		*npages = 100 + rnd(m, 500);
	}
}

static void random_take(struct model *m, struct pma_ext_index *idx, unsigned op)
{
	uint64_t npages, align, s = 0, want = 0;
	int rc, want_rc;

	random_request(m, &npages, &align);
	want_rc = model_take(m, npages, align, &want);
	rc = pma_ext_take(idx, npages, align, &s);
	if (rc != want_rc || (rc == 0 && s != want))
		fail_msg("op %u: take(%llu, %llu) = %d at %llu, model %d at "
			 "%llu",
			 op, (unsigned long long)npages,
			 (unsigned long long)align, rc, (unsigned long long)s,
			 want_rc, (unsigned long long)want);
	if (rc < 0)
		return;
	model_mark(m, s, npages, 1);
	m->taken[m->ntaken].start = s;
	m->taken[m->ntaken].npages = npages;
	m->ntaken++;
}

/* give back a random taken range, or one end of it (the rest stays taken) */
static void random_put(struct model *m, struct pma_ext_index *idx, unsigned op)
{
	size_t i = rnd(m, m->ntaken);
	struct range *t = &m->taken[i];
	struct range put = *t;
	uint64_t k;
	int rc;

	if (t->npages > 1 && rnd(m, 4) == 0) {
		k = 1 + rnd(m, t->npages - 1);
		if (rnd(m, 2)) {
			put.npages = k;
			t->start += k;
		} else {
			put.start = t->start + k;
			put.npages = t->npages - k;
		}
		t->npages -= put.npages;
	} else {
		*t = m->taken[--m->ntaken];
	}
	model_mark(m, put.start, put.npages, 0);
	rc = pma_ext_put(idx, put.start, put.npages);
	if (rc != 0)
		fail_msg("op %u: put(%llu, %llu) = %d", op,
			 (unsigned long long)put.start,
			 (unsigned long long)put.npages, rc);
}

/* the rebuild: used ranges at random, free runs put in increasing order */
static void random_start(struct model *m, struct pma_ext_index *idx)
{
	uint64_t p = 0, len;

	while (p < RND_PAGES) {
		len = 1 + rnd(m, 24);
		if (len > RND_PAGES - p)
			len = RND_PAGES - p;
		if (rnd(m, 2)) {
			model_mark(m, p, len, 1);
			m->taken[m->ntaken].start = p;
			m->taken[m->ntaken].npages = len;
			m->ntaken++;
		} else {
			/* merges when the previous run was free too */
			assert_int_equal(pma_ext_put(idx, p, len), 0);
		}
		p += len;
	}
}

static void test_extent_random(void **state)
{
	struct model *m = calloc(1, sizeof(*m));
	struct pma_ext_index idx = { 0 };
	const char *env = getenv("PMA_EXT_SEED");
	unsigned op;
	(void)state;

	assert_non_null(m);
	m->rng = env ? strtoull(env, NULL, 0) : 0x9e3779b97f4a7c15ULL;
	if (m->rng == 0)
		m->rng = 1;
	random_start(m, &idx);
	model_compare(m, &idx, 0);
	for (op = 1; op <= RND_OPS; op++) {
		/* a slight bias to taking keeps the space fragmented */
		if (m->ntaken == 0 || rnd(m, 100) < 52)
			random_take(m, &idx, op);
		else
			random_put(m, &idx, op);
		model_compare(m, &idx, op);
	}
	/* give everything back: a single run */
	while (m->ntaken)
		random_put(m, &idx, op);
	model_compare(m, &idx, op);
	assert_int_equal(idx.count, 1);
	assert_int_equal(pma_ext_largest(&idx), RND_PAGES);
	pma_ext_index_release(&idx);
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_extent_index),
		cmocka_unit_test(test_extent_align_near_miss),
		cmocka_unit_test(test_extent_increasing_puts),
		cmocka_unit_test(test_extent_enomem),
		cmocka_unit_test(test_extent_reserve),
		cmocka_unit_test(test_extent_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
