/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-pmalloc: the public API of libpmalloc (create/open/close, malloc_to,
 * free_from, large extents, root, usable_size, errors, persistence across
 * reopen, threads, fences per op) and internal invariants through
 * internal.h (class table, interleaved bitmap and log slots, record
 * validity, dirty-line set, pending extents; the free-extent index has its
 * own test-pmalloc-extent). Heaps live in a fresh /dev/shm directory.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <semaphore.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "pmalloc.h"
#include "pmalloc/internal.h"
#include "../lib/test-cfg.h"
#include "../lib/test-dir.h"
#include "util/io.h"
#include "pmem/pm.h"
#include "pool/pool.h"

#define MIB (1024ULL * 1024)
#define HEAP_SIZE (16 * MIB)
#define NDEST 4096

struct fx {
	char dir[64];
	char path[96];
	struct pma_heap *heap;
	uint64_t root; /* pool offset of the dest array */
	uint64_t *dests; /* NDEST words in the pool */
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	test_cfg_reset();
	test_dir_make(f->dir, sizeof(f->dir), f->path, sizeof(f->path),
		      "test-pmalloc", "heap");
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	pma_heap_close(f->heap);
	test_dir_remove(f->dir);
	free(f);
	return 0;
}

/* create the heap and a root holding NDEST dest words */
static void fx_create(struct fx *f, uint64_t size)
{
	assert_int_equal(test_heap_create(f->path, size, 0, &f->heap), 0);
	assert_int_equal(pma_root(f->heap, NDEST * 8, &f->root), 0);
	f->dests = pma_direct(f->heap, f->root);
	assert_non_null(f->dests);
}

static void fx_reopen(struct fx *f)
{
	uint64_t root;

	pma_heap_close(f->heap);
	f->heap = NULL;
	assert_int_equal(test_heap_open(f->path, 0, &f->heap), 0);
	assert_int_equal(pma_root(f->heap, NDEST * 8, &root), 0);
	assert_int_equal(root, f->root);
	f->dests = pma_direct(f->heap, f->root);
}

/* ------------------------------------------------------------ internals */

static void test_class_table(void **state)
{
	unsigned c, d, n, fine;
	size_t size;
	(void)state;

	assert_int_equal(pma_class_size(0), 64);
	assert_int_equal(pma_class_size(PMA_NCLASSES_V10 - 1), PMA_SMALL_MAX);
	assert_int_equal(pma_nclasses(PMA_HEAP_VERSION_FINE - 1),
			 PMA_NCLASSES_V10);
	assert_int_equal(pma_nclasses(PMA_HEAP_VERSION), pma_class_count());
	for (c = 0; c < pma_class_count(); c++) {
		assert_int_equal(pma_class_size(c) % 16, 0);
		if (c < PMA_NCLASSES_V10)
			assert_int_equal(pma_class_size(c) % 64, 0);
		if (c && c < PMA_NCLASSES_V10)
			assert_true(pma_class_size(c) > pma_class_size(c - 1));
		if (c < 16)
			assert_int_equal(pma_class_size(c), 64 * (c + 1));
		for (d = 0; d < c; d++)
			assert_int_not_equal(pma_class_size(c),
					     pma_class_size(d));
		assert_true(pma_class_nblocks(c) >= 4);
		assert_true(pma_class_nblocks(c) <= PMA_SLAB_MAX_BLOCKS);
	}
	/* version 11 has every multiple of 16 from 64 to 256 */
	for (size = 64; size <= 256; size += 16)
		assert_int_equal(pma_class_size(pma_class_of(size, 1)), size);
	/* each size gets the smallest class of its heap that holds it */
	for (fine = 0; fine < 2; fine++) {
		n = pma_nclasses(fine ? PMA_HEAP_VERSION_FINE :
					PMA_HEAP_VERSION_FINE - 1);
		for (size = 1; size <= PMA_SMALL_MAX; size++) {
			c = pma_class_of(size, (int)fine);
			assert_true(c < n);
			assert_true(pma_class_size(c) >= size);
			for (d = 0; d < n; d++)
				if (pma_class_size(d) >= size &&
				    pma_class_size(d) < pma_class_size(c))
					fail_msg("size %zu fine %u: class %u "
						 "(%u B) not %u (%u B)",
						 size, fine, c,
						 pma_class_size(c), d,
						 pma_class_size(d));
		}
	}
	/* the reciprocal gives the exact quotient for every offset in a
	 * slab, for every class */
	for (c = 0; c < pma_class_count(); c++) {
		uint64_t inv = pma_class_inv(c), bs = pma_class_size(c), r;

		for (r = 0; r < PMA_CHUNK; r++)
			if (((r * inv) >> 32) != r / bs)
				fail_msg("class %u offset %llu", c,
					 (unsigned long long)r);
	}
}

static void test_interleaved_bitmap(void **state)
{
	static uint64_t slab[PMA_SLAB_HDR_SIZE / 8];
	uintptr_t line, prev = 0;
	uint64_t mask, *w;
	uint32_t i, n = pma_class_nblocks(0);
	(void)state;

	for (i = 0; i < n; i++) {
		w = pma_slab_bit(slab, i, &mask);
		line = ((uintptr_t)w - (uintptr_t)slab) / PMA_LINE;
		/* inside the bitmap, one of NBANKS lines */
		assert_true((uintptr_t)w - (uintptr_t)slab >=
			    PMA_SLAB_BITMAP_OFF);
		assert_true((uintptr_t)w - (uintptr_t)slab <
			    PMA_SLAB_BITMAP_OFF + PMA_SLAB_BITMAP_SIZE);
		assert_int_equal(line - 1, i % PMA_NBANKS);
		/* consecutive blocks use different lines */
		if (i)
			assert_int_not_equal(line, prev);
		prev = line;
		/* every bit distinct */
		assert_false(*w & mask);
		*w |= mask;
	}
}

/* per-block reference for pma_slab_load (the old bit-by-bit rebuild) */
static void check_slab_load(const uint64_t *pm, unsigned cls)
{
	struct pma_slab *slab = pma_slab_new(0, cls, 0);
	uint32_t i, live, avail, navail = 0;
	uint64_t mask;

	assert_non_null(slab);
	pma_slab_load(slab, pm);
	for (i = 0; i < PMA_LIVE_WORDS * 64; i++) {
		live = i < PMA_NBANKS * PMA_SLAB_LINE_WORDS * 64 &&
		       pma_slab_is_live(slab, i);
		avail = (slab->avail[i / 64] >> (i % 64)) & 1;
		if (i >= slab->nblocks) {
			assert_int_equal(live | avail, 0);
			continue;
		}
		mask = 0;
		assert_int_equal(live, !!(*pma_slab_bit((void *)pm, i, &mask) &
					  mask));
		assert_int_equal(avail, !live);
		navail += avail;
	}
	assert_int_equal(slab->navail, navail);
	for (i = 0; i < PMA_LIVE_WORDS; i++)
		assert_int_equal((slab->avail_words >> i) & 1,
				 !!slab->avail[i]);
	free(slab);
}

static void test_slab_load(void **state)
{
	static uint64_t pm[PMA_SLAB_HDR_SIZE / 8];
	uint64_t mask, x = 0x9e3779b97f4a7c15ULL;
	unsigned c, pat;
	uint32_t i, n;
	(void)state;

	for (c = 0; c < pma_class_count(); c++) {
		n = pma_class_nblocks(c);
		for (pat = 0; pat < 6; pat++) {
			/* 5: stray bits past nblocks must be ignored */
			memset(pm, pat == 5 ? 0xff : 0, sizeof(pm));
			for (i = 0; i < n; i++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				if (pat == 0 || (pat == 2 && i == n - 1) ||
				    (pat == 3 && x % 8 == 0) ||
				    (pat == 4 && x % 8 != 0))
					continue;
				if (pat == 5 && x % 3 == 0)
					*pma_slab_bit(pm, i, &mask) &= ~mask;
				else
					*pma_slab_bit(pm, i, &mask) |= mask;
			}
			check_slab_load(pm, c);
		}
	}
}

static void test_log_slots(void **state)
{
	/* line-aligned like the PM log (ASan may align statics to 32) */
	static struct pma_rec log[PMA_LOG_GROUP * 4]
		__attribute__((aligned(64)));
	uint32_t cap = PMA_LOG_GROUP * 4;
	uintptr_t line, prev = ~0UL;
	uint64_t k;
	static uint8_t used[PMA_LOG_GROUP * 4];
	(void)state;

	for (k = 0; k < cap; k++) {
		struct pma_rec *s = pma_booklog_slot(log, cap, k);

		line = (uintptr_t)s / PMA_LINE;
		assert_int_not_equal(line, prev);
		prev = line;
		assert_false(used[s - log]);
		used[s - log] = 1;
		assert_ptr_equal(pma_booklog_slot(log, cap, k + cap), s);
	}
}

static void test_record_validity(void **state)
{
	static struct pma_rec log[PMA_LOG_GROUP];
	uint32_t cap = PMA_LOG_GROUP;
	struct pma_rec *s = pma_booklog_slot(log, cap, 5), old;
	uint64_t payload, value;
	unsigned type;
	(void)state;

	/* zeroed slot: invalid */
	assert_int_equal(pma_booklog_decode(log, cap, 5, &type, &payload,
					    &value),
			 -EBADMSG);
	pma_booklog_encode(5, cap, PMA_REC_ALLOC, 0x12345, 0x10000, s);
	assert_int_equal(
		pma_booklog_decode(log, cap, 5, &type, &payload, &value), 0);
	assert_int_equal(type, PMA_REC_ALLOC);
	assert_int_equal(payload, 0x12345);
	assert_int_equal(value, 0x10000);
	/* the same slot read as the next lap: stale */
	assert_int_equal(pma_booklog_decode(log, cap, 5 + cap, &type, &payload,
					    &value),
			 -EBADMSG);
	/* torn: word0 of the new lap, word1 of the old one, and reverse */
	old = *s;
	pma_booklog_encode(5 + cap, cap, PMA_REC_FREE, 0x12345, 0x10000, s);
	s->word1 = old.word1;
	assert_int_equal(pma_booklog_decode(log, cap, 5 + cap, &type, &payload,
					    &value),
			 -EBADMSG);
	pma_booklog_encode(5 + cap, cap, PMA_REC_FREE, 0x12345, 0x10000, s);
	s->word0 = old.word0;
	assert_int_equal(pma_booklog_decode(log, cap, 5 + cap, &type, &payload,
					    &value),
			 -EBADMSG);
	/* torn against a zeroed slot */
	pma_booklog_encode(5, cap, PMA_REC_FREE, 0x12345, 0x10000, s);
	s->word1 = 0;
	assert_int_equal(pma_booklog_decode(log, cap, 5, &type, &payload,
					    &value),
			 -EBADMSG);
	/* a flipped payload bit: checksum */
	pma_booklog_encode(5, cap, PMA_REC_FREE, 0x12345, 0x10000, s);
	s->word0 ^= 1ULL << 40;
	assert_int_equal(pma_booklog_decode(log, cap, 5, &type, &payload,
					    &value),
			 -EBADMSG);
}

/* ------------------------------------------------------------ API */

static void test_malloc_free_reopen(void **state)
{
	struct fx *f = *state;
	size_t sizes[] = { 1,
			   64,
			   65,
			   200,
			   1000,
			   4096,
			   9000,
			   PMA_SMALL_MAX,
			   PMA_SMALL_MAX + 1,
			   100000,
			   3 * MIB };
	unsigned i, n = sizeof(sizes) / sizeof(sizes[0]);
	char *p;

	fx_create(f, HEAP_SIZE);
	for (i = 0; i < n; i++) {
		assert_int_equal(pma_malloc_to(f->heap, sizes[i], &f->dests[i]),
				 0);
		assert_int_not_equal(f->dests[i], 0);
		assert_true(pma_usable_size(f->heap, f->dests[i]) >= sizes[i]);
		p = pma_direct(f->heap, f->dests[i]);
		memset(p, 'a' + (int)i, sizes[i]);
		pm_persist(pool_part_map(f->heap->pool, 0), p, sizes[i]);
	}
	fx_reopen(f);
	for (i = 0; i < n; i++) {
		p = pma_direct(f->heap, f->dests[i]);
		assert_true(pma_usable_size(f->heap, f->dests[i]) >= sizes[i]);
		assert_int_equal(p[0], 'a' + (int)i);
		assert_int_equal(p[sizes[i] - 1], 'a' + (int)i);
	}
	for (i = 0; i < n; i++) {
		assert_int_equal(pma_free_from(f->heap, &f->dests[i]), 0);
		assert_int_equal(f->dests[i], 0);
	}
	fx_reopen(f);
	for (i = 0; i < n; i++)
		assert_int_equal(f->dests[i], 0);
}

static void test_errors(void **state)
{
	struct fx *f = *state;
	uint64_t copy, bad, local = 0;

	fx_create(f, HEAP_SIZE);
	assert_int_equal(pma_malloc_to(f->heap, 0, &f->dests[0]), -EINVAL);
	assert_int_equal(pma_malloc_to(f->heap, 64,
				       (uint64_t *)((char *)f->dests + 4)),
			 -EINVAL);
	/* dest inside the heap's log */
	assert_int_equal(pma_malloc_to(f->heap, 64,
				       (uint64_t *)f->heap->arenas[0].log),
			 -EINVAL);
	assert_int_equal(pma_malloc_to(f->heap, HEAP_SIZE * 2, &f->dests[0]),
			 -ENOMEM);
	assert_int_equal(pma_malloc_to(f->heap, 100, &f->dests[0]), 0);
	copy = f->dests[0];
	/* interior offset, offset outside the heap */
	bad = copy + 64;
	assert_int_equal(pma_free_from(f->heap, &bad), -EINVAL);
	assert_int_equal(pma_usable_size(f->heap, bad), 0);
	bad = copy + 8;
	assert_int_equal(pma_free_from(f->heap, &bad), -EINVAL);
	assert_non_null(strstr(pma_errormsg(), "not 16-byte aligned"));
	bad = 4096;
	assert_int_equal(pma_free_from(f->heap, &bad), -EINVAL);
	bad = f->heap->data_base + HEAP_SIZE * 4;
	assert_int_equal(pma_free_from(f->heap, &bad), -EINVAL);
	assert_int_equal(pma_free_from(f->heap, &f->dests[0]), 0);
	/* double free through a copy; *dest == 0 is a no-op */
	assert_int_equal(pma_free_from(f->heap, &copy), -EINVAL);
	assert_int_not_equal(copy, 0);
	assert_string_not_equal(pma_errormsg(), "");
	assert_int_equal(pma_free_from(f->heap, &f->dests[0]), 0);
	/* large double free */
	assert_int_equal(pma_malloc_to(f->heap, MIB, &f->dests[1]), 0);
	copy = f->dests[1];
	assert_int_equal(pma_free_from(f->heap, &f->dests[1]), 0);
	assert_int_equal(pma_free_from(f->heap, &copy), -EINVAL);
	/* dest outside the pool */
	assert_int_equal(pma_malloc_to(f->heap, 64, &local), 0);
	assert_true(pma_usable_size(f->heap, local) >= 64);
	assert_int_equal(pma_free_from(f->heap, &local), 0);
	assert_int_equal(local, 0);
}

static void test_root(void **state)
{
	struct fx *f = *state;
	uint64_t root2;
	char *p;
	size_t i;

	fx_create(f, HEAP_SIZE);
	p = pma_direct(f->heap, f->root);
	for (i = 0; i < NDEST * 8; i++)
		assert_int_equal(p[i], 0);
	assert_int_equal(pma_root(f->heap, 16, &root2), 0);
	assert_int_equal(root2, f->root);
	assert_int_equal(pma_root(f->heap, MIB, &root2), -EINVAL);
	/* the root is never freed, not through a copy of its offset either
	 * (the root word would name a block the next allocation gets) */
	root2 = f->root;
	assert_int_equal(pma_free_from(f->heap, &root2), -EINVAL);
	assert_non_null(strstr(pma_errormsg(), "is the root object"));
	assert_int_equal(root2, f->root);
	assert_int_equal(pma_usable_size(f->heap, f->root), NDEST * 8);
	fx_reopen(f);
	assert_int_equal(pma_free_from(f->heap, &root2), -EINVAL);
}

/* fill the heap with small blocks, then large ones, then free and redo */
static void test_full(void **state)
{
	struct fx *f = *state;
	unsigned i, n = 0, round;
	int rc;

	fx_create(f, 4 * MIB);
	for (round = 0; round < 2; round++) {
		for (n = 0; n < NDEST; n++) {
			rc = pma_malloc_to(f->heap, n % 2 ? 2000 : 12000,
					   &f->dests[n]);
			if (rc == -ENOMEM)
				break;
			assert_int_equal(rc, 0);
		}
		assert_true(n > 100);
		assert_true(n < NDEST);
		for (i = 0; i < n; i++)
			assert_int_equal(pma_free_from(f->heap, &f->dests[i]),
					 0);
	}
	fx_reopen(f);
	assert_int_equal(pma_malloc_to(f->heap, 2000, &f->dests[0]), 0);
}

static void test_large_no_cap(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats st;
	uint64_t size;

	fx_create(f, 64 * MIB);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	size = st.largest_free - 4096;
	assert_int_equal(pma_malloc_to(f->heap, size, &f->dests[0]), 0);
	assert_int_equal(pma_usable_size(f->heap, f->dests[0]), size);
	assert_int_equal(pma_malloc_to(f->heap, 8192, &f->dests[1]), -ENOMEM);
	assert_int_equal(pma_free_from(f->heap, &f->dests[0]), 0);
	/* the freed extent is reusable (after the checkpoint ENOMEM runs) */
	assert_int_equal(pma_malloc_to(f->heap, size, &f->dests[0]), 0);
	fx_reopen(f);
	assert_int_equal(pma_usable_size(f->heap, f->dests[0]), size);
}

/* the checkpoint's dirty-line set: each line once, in insertion order,
 * across set growth and with duplicates that are not adjacent */
static void test_dirty_set(void **state)
{
	struct pma_dirty dirty = { 0 };
	size_t i, n = 5000;
	uintptr_t a, base = (uintptr_t)1 << 30;

	(void)state;
	for (i = 0; i < 3 * n; i++) {
		a = base + ((i * 7919) % n) * PMA_LINE + (i % 8) * 8;
		assert_int_equal(pma_dirty_add(&dirty, (void *)a, 8), 0);
	}
	/* a range spanning 3 lines, two of them already in the set */
	assert_int_equal(pma_dirty_add(&dirty,
				       (void *)(base + (n - 2) * PMA_LINE),
				       2 * PMA_LINE + 1),
			 0);
	assert_int_equal(dirty.count, n + 1);
	for (i = 0; i < n; i++)
		assert_int_equal(dirty.lines[i],
				 base + ((i * 7919) % n) * PMA_LINE);
	assert_int_equal(dirty.lines[n], base + n * PMA_LINE);
	pma_dirty_release(&dirty);
}

/* the pages of freed extents waiting for a checkpoint, every arena's
 * (published or not) */
static uint64_t pending_pages_true(struct pma_heap *heap)
{
	uint64_t n = 0;
	unsigned i;

	for (i = 0; i < heap->geom.narenas; i++)
		n += heap->arenas[i].pend_pages;
	return n;
}

/* freed extents waiting for a checkpoint never hold much more than
 * 1 / PMA_PENDING_DIV of the heap (checkpoints come before the log is
 * half full), so another thread cannot fill the heap with them */
/* summary groups marked in DRAM, and groups holding a page map entry */
static uint64_t sum_marked(const struct pma_heap *heap)
{
	uint64_t w, n = 0;

	for (w = 0; w < heap->geom.sum_words; w++)
		n += (uint64_t)__builtin_popcountll(heap->sum[w]);
	return n;
}

static uint64_t sum_used(const struct pma_heap *heap)
{
	uint64_t p, n = 0, last = UINT64_MAX;

	for (p = 0; p < heap->geom.npages; p++)
		if (heap->pmap_pm[p] && p >> heap->geom.sum_shift != last) {
			last = p >> heap->geom.sum_shift;
			n++;
		}
	return n;
}

/*
 * The page map summary follows the heap's use: filled with extents, every
 * group is marked; emptied again, the next writable open unmarks the
 * groups with no entry (durably: a read-only open sees the same bits)
 */
static void test_sum_trim(void **state)
{
	struct fx *f = *state;
	uint64_t n = 0, i, groups;
	struct pma_heap *ro;
	int rc;

	fx_create(f, HEAP_SIZE);
	groups = (f->heap->geom.npages + (1ULL << f->heap->geom.sum_shift) -
		  1) >>
		 f->heap->geom.sum_shift;
	assert_true(groups >= 4);
	assert_int_equal(sum_marked(f->heap), 0); /* nothing checkpointed */
	while (n < NDEST &&
	       (rc = pma_malloc_to(f->heap, 64 * 1024, &f->dests[n])) == 0)
		n++;
	assert_int_equal(rc, -ENOMEM);
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	assert_int_equal(sum_marked(f->heap), groups);
	assert_int_equal(pma_sum_check(f->heap), 0);
	fx_reopen(f);
	assert_int_equal(sum_marked(f->heap), groups);
	for (i = 0; i < n; i++)
		assert_int_equal(pma_free_from(f->heap, &f->dests[i]), 0);
	fx_reopen(f);
	/* the root object's slab is left */
	assert_int_equal(sum_used(f->heap), 1);
	assert_int_equal(sum_marked(f->heap), 1);
	assert_int_equal(pma_sum_check(f->heap), 0);
	pma_heap_close(f->heap);
	f->heap = NULL;
	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &ro), 0);
	assert_int_equal(sum_marked(ro), 1);
	assert_int_equal(ro->sum_bad, 0);
	pma_heap_close(ro);
	/* and it works: the groups are marked again as they are used */
	assert_int_equal(test_heap_open(f->path, 0, &f->heap), 0);
	f->dests = pma_direct(f->heap, f->root);
	for (i = 0; i < n; i++)
		assert_int_equal(
			pma_malloc_to(f->heap, 64 * 1024, &f->dests[i]), 0);
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	assert_int_equal(sum_marked(f->heap), groups);
	assert_int_equal(pma_sum_check(f->heap), 0);
}

/*
 * An allocation that needs a new slab appends two records (SLAB_NEW, then
 * ALLOC): the log must have room for both when the op starts. With two
 * free slots left, the ALLOC found no room, and (release build) was not
 * logged: a crash before the next checkpoint lost the allocation while
 * its dest word could be durable. Checkpoints are held off (ckpt_lock)
 * so that the log fills to exactly two free slots.
 */
static void test_log_room_slab_new(void **state)
{
	struct fx *f = *state;
	struct pma_arena *arena;
	uint32_t cap;
	struct pma_op op;
	uint64_t b;

	fx_create(f, HEAP_SIZE); /* global checkpoints: ckpt_lock */
	arena = pma_arena_get(f->heap);
	cap = f->heap->geom.log_cap;
	assert_int_equal(pma_malloc_to(f->heap, 64, &f->dests[0]), 0);
	pthread_mutex_lock(&f->heap->ckpt_lock);
	while (arena->tail - arena->head < cap - 2) {
		if (f->dests[0])
			assert_int_equal(pma_free_from(f->heap, &f->dests[0]),
					 0);
		else
			assert_int_equal(
				pma_malloc_to(f->heap, 64, &f->dests[0]), 0);
	}
	pthread_mutex_unlock(&f->heap->ckpt_lock);
	assert_int_equal(arena->tail - arena->head, cap - 2);
	/* a class with no slab yet: SLAB_NEW + ALLOC */
	assert_int_equal(pma_malloc_to(f->heap, 5000, &f->dests[1]), 0);
	b = pool_off_byte(f->dests[1]);
	assert_int_equal(pma_booklog_read_op(arena->log, cap, arena->tail - 1,
					     f->heap->osh, &op),
			 0);
	assert_int_equal(op.type, PMA_REC_ALLOC);
	assert_int_equal(op.off, b);
}

/* allocate n blocks of size into dests[0, n), then free them */
static void alloc_free_n(struct fx *f, size_t size, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		assert_int_equal(pma_malloc_to(f->heap, size, &f->dests[i]), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(pma_free_from(f->heap, &f->dests[i]), 0);
}

/* empty slabs go back to the free pages at the next checkpoint, except
 * pma_slab_keep per class and arena; the release survives a reopen */
static void test_slab_release(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats st0, st;
	unsigned cls = pma_class_of(64, 1);
	unsigned n = 3 * pma_class_nblocks(cls) + 10;

	fx_create(f, HEAP_SIZE);
	assert_true(n <= NDEST);
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st0), 0);
	alloc_free_n(f, 64, n);
	/* four slabs, all empty: three go (some maybe at the checkpoints
	 * the frees ran) */
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.classes[cls].slabs +
				 atomic_load(&f->heap->slabs_released),
			 4);
	assert_int_equal(st.classes[cls].used, 0);
	assert_int_equal(st.slab_bytes,
			 st0.slab_bytes + st.classes[cls].slabs * 65536);
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	assert_int_equal(atomic_load(&f->heap->slabs_released), 3);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.classes[cls].slabs, 1);
	assert_int_equal(st.slab_bytes, st0.slab_bytes + 65536);
	/* all free but the kept slab's header */
	assert_int_equal(st.free_bytes, st0.free_bytes - PMA_SLAB_HDR_SIZE);
	fx_reopen(f);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.classes[cls].slabs, 1);
	assert_int_equal(st.slab_bytes, st0.slab_bytes + 65536);
	/* the kept slab serves the class again; nothing more is released */
	alloc_free_n(f, 64, 10);
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.classes[cls].slabs, 1);
	assert_int_equal(atomic_load(&f->heap->slabs_released), 0);
	/* again, on the lists the releases relinked (and DRAM slabs reused) */
	alloc_free_n(f, 64, n);
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.classes[cls].slabs, 1);
	assert_int_equal(st.classes[cls].used, 0);
	assert_int_equal(atomic_load(&f->heap->slabs_released), 3);
}

/* pma_heap_arena_stats: each arena's slabs, live blocks and log records
 * (they add up to the heap's), and a remote free waiting in the freeing
 * arena until the checkpoint gives the block back */
static void test_arena_stats(void **state)
{
	struct fx *f = *state;
	struct pma_arena_stats as[4];
	struct pma_heap_stats st;
	unsigned i;

	fx_create(f, HEAP_SIZE);
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	pma_arena_bind(f->heap, 0);
	for (i = 0; i < 10; i++)
		assert_int_equal(pma_malloc_to(f->heap, 100, &f->dests[i]), 0);
	pma_arena_bind(f->heap, 1);
	for (i = 10; i < 13; i++)
		assert_int_equal(pma_malloc_to(f->heap, 1000, &f->dests[i]), 0);
	assert_int_equal(pma_free_from(f->heap, &f->dests[0]), 0); /* remote */
	memset(as, 0xff, sizeof(as));
	assert_int_equal(pma_heap_arena_stats(f->heap, as, 4), 2);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.narenas, 2);
	assert_int_equal(as[0].slabs, 1);
	assert_int_equal(as[0].used_bytes, 9 * 112);
	assert_int_equal(as[0].used_bytes + as[0].free_bytes,
			 pma_class_nblocks(pma_class_of(100, 1)) * 112);
	assert_int_equal(as[1].slabs, 1);
	assert_int_equal(as[1].used_bytes, 3 * 1024);
	assert_int_equal(as[0].used_bytes + as[1].used_bytes,
			 st.used_bytes - st.extent_bytes);
	/* SLAB_NEW and the ALLOCs; SLAB_NEW, ALLOCs and the RFREE */
	assert_int_equal(as[0].log_records, 11);
	assert_int_equal(as[1].log_records, 5);
	assert_int_equal(as[0].log_records + as[1].log_records, st.log_records);
	assert_int_equal(as[0].remote_frees, 0);
	assert_int_equal(as[1].remote_frees, 1);
	assert_int_equal(as[2].slabs, UINT64_MAX); /* past narenas: untouched */
	/* fewer entries than arenas: only those are filled */
	memset(as, 0xff, sizeof(as));
	assert_int_equal(pma_heap_arena_stats(f->heap, as, 1), 2);
	assert_int_equal(as[0].slabs, 1);
	assert_int_equal(as[1].slabs, UINT64_MAX);
	assert_int_equal(pma_heap_arena_stats(f->heap, NULL, 0), 2);
	assert_int_equal(pma_heap_arena_stats(f->heap, NULL, 1), -EINVAL);
	assert_int_equal(pma_heap_arena_stats(NULL, as, 1), -EINVAL);
	/* the checkpoint empties the logs and hands the block back */
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	assert_int_equal(pma_heap_arena_stats(f->heap, as, 2), 2);
	for (i = 0; i < 2; i++) {
		assert_int_equal(as[i].log_records, 0);
		assert_int_equal(as[i].remote_frees, 0);
	}
	assert_int_equal(as[0].used_bytes, 9 * 112);
	/* and a reopen sees the same slabs */
	fx_reopen(f);
	assert_int_equal(pma_heap_arena_stats(f->heap, as, 2), 2);
	assert_int_equal(as[0].slabs, 1);
	assert_int_equal(as[0].used_bytes, 9 * 112);
	assert_int_equal(as[1].used_bytes, 3 * 1024);
}

/* a heap full of empty slabs: the large allocation that finds no room
 * releases them all (the -ENOMEM retry), though a normal checkpoint
 * releases none here (pma_slab_keep UINT_MAX); a version 5 heap never
 * releases one (its log gets no SLAB_FREE) */
static void test_slab_release_enomem(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats st0, st;
	unsigned cls = pma_class_of(4000, 1), n = 0, v;
	uint64_t big;
	int rc;

	for (v = PMA_HEAP_VERSION_SUM; v <= PMA_HEAP_VERSION; v++) {
		test_cfg.slab_keep = UINT_MAX;
		test_cfg.format_version = v;
		fx_create(f, 8 * MIB);
		test_cfg.format_version = PMA_HEAP_VERSION;
		assert_int_equal(pma_heap_stats(f->heap, &st0), 0);
		assert_int_equal(st0.layout_version, v);
		big = st0.largest_free - 65536;
		while (n < NDEST &&
		       (rc = pma_malloc_to(f->heap, 4000, &f->dests[n])) == 0)
			n++;
		assert_int_equal(rc, -ENOMEM);
		while (n)
			assert_int_equal(pma_free_from(f->heap, &f->dests[--n]),
					 0);
		assert_int_equal(pma_heap_checkpoint(f->heap), 0);
		assert_int_equal(pma_heap_stats(f->heap, &st), 0);
		assert_true(st.classes[cls].slabs > 100);
		assert_int_equal(st.classes[cls].used, 0);
		rc = pma_malloc_to(f->heap, big, &f->dests[0]);
		if (v < PMA_HEAP_VERSION_SLAB_FREE) {
			assert_int_equal(rc, -ENOMEM);
			assert_int_equal(atomic_load(&f->heap->slabs_released),
					 0);
			fx_reopen(f);
			assert_int_equal(pma_heap_stats(f->heap, &st), 0);
			assert_true(st.classes[cls].slabs > 100);
			pma_heap_close(f->heap);
			f->heap = NULL;
			assert_int_equal(unlink(f->path), 0);
			continue;
		}
		assert_int_equal(rc, 0);
		assert_true(atomic_load(&f->heap->slabs_released) > 100);
		assert_int_equal(pma_heap_stats(f->heap, &st), 0);
		assert_int_equal(st.classes[cls].slabs, 0);
		fx_reopen(f);
		assert_int_equal(pma_usable_size(f->heap, f->dests[0]), big);
		assert_int_equal(pma_heap_stats(f->heap, &st), 0);
		assert_int_equal(st.classes[cls].slabs, 0);
		assert_int_equal(st.layout_version, v);
		if (v < PMA_HEAP_VERSION) { /* the next version's heap */
			pma_heap_close(f->heap);
			f->heap = NULL;
			assert_int_equal(unlink(f->path), 0);
		}
	}
}

static void test_pending_extents(void **state)
{
	static const struct {
		uint64_t size, n;
	} runs[] = {
		{ MIB, 64 }, /* each free publishes (256 pages > slack) */
		{ 64 * 1024, 256 }, /* 16 pages: published in steps */
	};
	struct fx *f = *state;
	struct pma_heap_stats st;
	uint64_t limit, ckpts = 0, i;
	unsigned r;

	fx_create(f, HEAP_SIZE);
	/* the quarter, every arena's unpublished slack and one op */
	limit = f->heap->geom.npages / PMA_PENDING_DIV +
		f->heap->pend_slack * f->heap->geom.narenas + 256;
	assert_true(f->heap->pend_slack > 16);
	for (r = 0; r < 2; r++) {
		/* allocated through arena 0, freed through arena 1:
		 * EXT_FREE, the extents wait for a checkpoint */
		for (i = 0; i < runs[r].n; i++) {
			pma_arena_bind(f->heap, 0);
			assert_int_equal(pma_malloc_to(f->heap, runs[r].size,
						       &f->dests[0]),
					 0);
			pma_arena_bind(f->heap, 1);
			assert_int_equal(pma_free_from(f->heap, &f->dests[0]),
					 0);
			assert_true(pending_pages_true(f->heap) <= limit);
			/* published within each arena's slack */
			assert_true(atomic_load(&f->heap->pending_pages) +
					    f->heap->pend_slack *
						    f->heap->geom.narenas >=
				    pending_pages_true(f->heap));
		}
		assert_int_equal(pma_heap_stats(f->heap, &st), 0);
		/* 2 records per round (one-record extent ops), below half
		 * a log: the pending pages did it */
		assert_true(2 * runs[r].n < f->heap->geom.log_cap / 2);
		/* each one gave back at most limit pages */
		assert_true(st.checkpoints - ckpts >=
			    runs[r].n * runs[r].size / PMA_PAGE / limit);
		ckpts = st.checkpoints;
	}
	/* an arena that reuses what it frees publishes nothing */
	pma_arena_bind(f->heap, 0);
	assert_int_equal(pma_checkpoint(f->heap), 0);
	for (i = 0; i < 100; i++) {
		assert_int_equal(
			pma_malloc_to(f->heap, 64 * 1024, &f->dests[0]), 0);
		assert_int_equal(pma_free_from(f->heap, &f->dests[0]), 0);
		assert_int_equal(atomic_load(&f->heap->pending_pages), 0);
	}
	assert_int_equal(f->heap->arenas[0].pend_pages, 16);
	fx_reopen(f);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.used_bytes, (uint64_t)NDEST * 8); /* the root */
}

/* an arena's local runs: neighbours merge in any order, best fit */
static void test_local_runs(void **state)
{
	static const uint64_t order[] = { 3, 0, 5, 1, 4, 2 };
	struct pma_runs r = { 0 };
	uint64_t page;
	unsigned i;
	(void)state;

	/* six 4-page neighbours [100, 124) freed out of order: one run */
	for (i = 0; i < 6; i++)
		assert_int_equal(pma_runs_put(&r, 100 + 4 * order[i], 4), 0);
	assert_int_equal(r.count, 1);
	assert_int_equal(r.runs[0].page, 100);
	assert_int_equal(r.runs[0].npages, 24);
	assert_int_equal(r.pages, 24);
	/* a lone run of 8 and one of 30: 8 pages come from the 8-page run */
	assert_int_equal(pma_runs_put(&r, 500, 8), 0);
	assert_int_equal(pma_runs_put(&r, 900, 30), 0);
	assert_int_equal(r.count, 3);
	assert_int_equal(pma_runs_take(&r, 8, &page), 0);
	assert_int_equal(page, 500);
	assert_int_equal(r.count, 2);
	/* 20: the 24-page run; then 25 fits only the 30-page run */
	assert_int_equal(pma_runs_take(&r, 20, &page), 0);
	assert_int_equal(page, 100);
	assert_int_equal(pma_runs_take(&r, 25, &page), 0);
	assert_int_equal(page, 900);
	assert_int_equal(pma_runs_take(&r, 6, &page), -ENOMEM);
	assert_int_equal(r.pages, 4 + 5);
	free(r.runs);
}

/* runs match a page bitmap: sorted, never adjacent, exactly its free
 * pages */
#define RUNS_NPAGES 512
static void runs_check(const struct pma_runs *r, const uint8_t *free_pg)
{
	uint64_t p, covered = 0;
	size_t i;

	for (i = 0; i < r->count; i++) {
		assert_true(r->runs[i].npages > 0);
		if (i)
			assert_true(r->runs[i - 1].page +
					    r->runs[i - 1].npages <
				    r->runs[i].page);
		for (p = r->runs[i].page;
		     p < r->runs[i].page + r->runs[i].npages; p++)
			assert_true(free_pg[p]);
		covered += r->runs[i].npages;
	}
	for (p = 0; p < RUNS_NPAGES; p++)
		covered -= free_pg[p];
	assert_int_equal(covered, 0);
}

/* random puts and takes against a page bitmap: the runs stay exact, a
 * take is a best fit (no run of a size in [want, taken run) exists) */
static void test_local_runs_model(void **state)
{
	uint8_t free_pg[RUNS_NPAGES] = { 0 };
	struct pma_runs r = { 0 };
	uint64_t p, page, n, len, best, sum;
	unsigned it, full = 0;
	size_t i;
	int rc;
	(void)state;

	srand(11);
	for (it = 0; it < 20000; it++) {
		n = 1 + (uint64_t)rand() % 16;
		if (rand() % 2) { /* put n used pages at a random place */
			page = (uint64_t)rand() % (RUNS_NPAGES - n);
			for (p = page; p < page + n && !free_pg[p]; p++)
				;
			if (p < page + n)
				continue;
			rc = pma_runs_put(&r, page, n);
			if (rc == -ENOSPC) { /* a new run past the limit */
				assert_int_equal(r.count, PMA_LOCAL_RUNS);
				continue;
			}
			assert_int_equal(rc, 0);
			memset(&free_pg[page], 1, n);
			full += r.count == PMA_LOCAL_RUNS;
		} else {
			best = UINT64_MAX;
			for (i = 0; i < r.count; i++)
				if (r.runs[i].npages >= n &&
				    r.runs[i].npages < best)
					best = r.runs[i].npages;
			if (pma_runs_take(&r, n, &page) < 0) {
				assert_int_equal(best, UINT64_MAX);
				continue;
			}
			/* the run taken from started at page: its length */
			for (len = 0;
			     page + len < RUNS_NPAGES && free_pg[page + len];
			     len++)
				;
			assert_int_equal(len, best);
			assert_true(page == 0 || !free_pg[page - 1]);
			memset(&free_pg[page], 0, n);
		}
		runs_check(&r, free_pg);
		for (sum = 0, p = 0; p < RUNS_NPAGES; p++)
			sum += free_pg[p];
		assert_int_equal(r.pages, sum);
	}
	assert_true(full > 0); /* the limit was reached */
	free(r.runs);
}

static int lfree_cb(const struct pma_log_entry *e, void *arg)
{
	unsigned *counts = arg;

	counts[0] += !strcmp(e->type, "ext_lfree");
	counts[1] += !strcmp(e->type, "ext_free");
	return 0;
}

/* an extent freed through the arena that allocated it is reusable by
 * that arena at once (EXT_LFREE, no checkpoint); one freed through
 * another arena only after a checkpoint; both survive a reopen */
/* an extent allocated and freed through one arena within a few ops is
 * not applied by the checkpoint (the EXT_ALLOC copy is cancelled, the
 * EXT_LFREE keeps none); one whose allocation is further back is; both
 * leave the same heap */
static void test_ext_pair_cancelled(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats st;
	struct pma_arena *a;
	uint64_t used;
	unsigned i;

	fx_create(f, HEAP_SIZE);
	pma_arena_bind(f->heap, 0);
	a = &f->heap->arenas[0];
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	used = st.used_bytes;
	assert_int_equal(pma_malloc_to(f->heap, 5 * PMA_PAGE, &f->dests[0]), 0);
	assert_int_equal(a->struct_ops, 1);
	assert_int_equal(pma_free_from(f->heap, &f->dests[0]), 0);
	assert_int_equal(a->struct_ops, 1);
	assert_int_equal(a->ops[0].type, PMA_REC_NONE);
	/* 20 more allocations in between: the free keeps its copy */
	for (i = 0; i <= 20; i++)
		assert_int_equal(
			pma_malloc_to(f->heap, 5 * PMA_PAGE, &f->dests[i]), 0);
	assert_int_equal(pma_free_from(f->heap, &f->dests[0]), 0);
	assert_int_equal(a->struct_ops, 1 + 21 + 1);
	assert_int_equal(a->ops[1].type, PMA_REC_EXT_ALLOC);
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.used_bytes, used + 20 * 5 * PMA_PAGE);
	fx_reopen(f);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.used_bytes, used + 20 * 5 * PMA_PAGE);
	for (i = 1; i <= 20; i++)
		assert_int_equal(pma_usable_size(f->heap, f->dests[i]),
				 5 * PMA_PAGE);
}

/* an arena keeps at most PMA_LOCAL_RUNS local runs: past that its own
 * extents are freed EXT_FREE (waiting for a checkpoint), and the frees
 * succeed either way */
static void test_local_runs_limit(void **state)
{
	struct fx *f = *state;
	struct pma_arena *a;
	unsigned counts[2] = { 0, 0 }, i, n = PMA_LOCAL_RUNS + 6;

	fx_create(f, HEAP_SIZE);
	pma_arena_bind(f->heap, 0);
	a = &f->heap->arenas[0];
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	/* 2n extents of 4 pages; every other one freed: n runs that do
	 * not touch */
	for (i = 0; i < 2 * n; i++)
		assert_int_equal(
			pma_malloc_to(f->heap, 4 * PMA_PAGE, &f->dests[i]), 0);
	for (i = 0; i < 2 * n; i += 2)
		assert_int_equal(pma_free_from(f->heap, &f->dests[i]), 0);
	assert_int_equal(a->local.count, PMA_LOCAL_RUNS);
	assert_int_equal(a->ext_freed.count, n - PMA_LOCAL_RUNS);
	assert_int_equal(a->pend_pages, 4 * n);
	assert_int_equal(pma_log_foreach(f->heap, lfree_cb, counts), 0);
	assert_int_equal(counts[0], PMA_LOCAL_RUNS);
	assert_int_equal(counts[1], n - PMA_LOCAL_RUNS);
	/* the checkpoint gives them all to the heap; the rest survive */
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	assert_int_equal(a->local.count, 0);
	assert_int_equal(a->pend_pages, 0);
	fx_reopen(f);
	for (i = 0; i < 2 * n; i++)
		if (i % 2)
			assert_int_equal(pma_usable_size(f->heap, f->dests[i]),
					 4 * PMA_PAGE);
		else
			assert_int_equal(f->dests[i], 0);
}

static void test_local_extents(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats st;
	unsigned counts[2] = { 0, 0 };
	uint64_t x, free0;
	unsigned i;

	fx_create(f, HEAP_SIZE);
	pma_arena_bind(f->heap, 0);
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	free0 = st.free_bytes;
	for (i = 0; i < 50; i++) {
		assert_int_equal(pma_malloc_to(f->heap, MIB, &f->dests[0]), 0);
		if (i == 0)
			x = f->dests[0];
		assert_int_equal(f->dests[0], x); /* the same extent */
		assert_int_equal(pma_free_from(f->heap, &f->dests[0]), 0);
		/* counted as free while it waits in the arena */
		assert_int_equal(pma_heap_stats(f->heap, &st), 0);
		assert_int_equal(st.free_bytes, free0);
		assert_true(st.largest_free >= MIB);
	}
	assert_int_equal(st.checkpoints, 1);
	assert_int_equal(pma_log_foreach(f->heap, lfree_cb, counts), 0);
	assert_int_equal(counts[0], 50);
	assert_int_equal(counts[1], 0);

	/* freed through arena 1: not reused before a checkpoint */
	assert_int_equal(pma_malloc_to(f->heap, MIB, &f->dests[1]), 0);
	x = f->dests[1];
	pma_arena_bind(f->heap, 1);
	assert_int_equal(pma_free_from(f->heap, &f->dests[1]), 0);
	assert_int_equal(pma_malloc_to(f->heap, MIB, &f->dests[2]), 0);
	assert_int_not_equal(f->dests[2], x);
	pma_arena_bind(f->heap, 0);
	assert_int_equal(pma_malloc_to(f->heap, MIB, &f->dests[3]), 0);
	assert_int_not_equal(f->dests[3], x);
	/* a local free of a part of an arena's cached run, then reopen:
	 * the replay applies EXT_LFREE in log order with the allocations */
	assert_int_equal(pma_free_from(f->heap, &f->dests[3]), 0);
	assert_int_equal(pma_malloc_to(f->heap, MIB / 2, &f->dests[4]), 0);
	assert_int_equal(pma_malloc_to(f->heap, MIB / 4, &f->dests[5]), 0);
	assert_int_equal(pma_free_from(f->heap, &f->dests[4]), 0);
	fx_reopen(f);
	assert_int_equal(pma_usable_size(f->heap, f->dests[2]), MIB);
	assert_int_equal(pma_usable_size(f->heap, f->dests[5]), MIB / 4);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.extents, 3); /* and the root */
	assert_int_equal(st.used_bytes, (uint64_t)NDEST * 8 + MIB + MIB / 4);
	assert_int_equal(pma_free_from(f->heap, &f->dests[2]), 0);
	assert_int_equal(pma_free_from(f->heap, &f->dests[5]), 0);
}

/*
 * A checkpoint an op finds due while another one runs is skipped (the
 * running one retires the op's records), and the op's successor takes
 * the general path and runs it if it is still due: nothing is lost
 * when the running one ends first. Here the "running" checkpoint is
 * ckpt_lock held by the test: ops go on, the log fills past half, no
 * checkpoint happens, the fast path stays off (fast_end 0); the first
 * op after the unlock checkpoints.
 */
static void test_checkpoint_due_skipped(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats st0, st;
	struct pma_arena *arena;
	unsigned i, n;

	/* the global checkpoint's trigger (an arena of a heap with local
	 * checkpoints checkpoints itself first: test_local_checkpoint) */
	fx_create(f, HEAP_SIZE);
	assert_int_equal(pma_malloc_to(f->heap, 64, &f->dests[0]), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st0), 0);
	arena = pma_arena_get(f->heap);
	n = st0.log_cap; /* one record per op: past half of the log */
	pthread_mutex_lock(&f->heap->ckpt_lock);
	for (i = 0; i < n / 2 + 11; i++) { /* odd: ends allocated */
		if (f->dests[1])
			assert_int_equal(pma_free_from(f->heap, &f->dests[1]),
					 0);
		else
			assert_int_equal(
				pma_malloc_to(f->heap, 64, &f->dests[1]), 0);
	}
	assert_true(arena->tail - arena->head >= n / 2);
	assert_int_equal(arena->fast_end, 0);
	pthread_mutex_unlock(&f->heap->ckpt_lock);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.checkpoints, st0.checkpoints);
	assert_int_equal(pma_free_from(f->heap, &f->dests[0]), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.checkpoints, st0.checkpoints + 1);
	assert_int_equal(arena->tail, arena->head);
	/* the next op (general path) lets the fast path run again */
	assert_int_equal(pma_malloc_to(f->heap, 64, &f->dests[0]), 0);
	assert_true(arena->fast_end > arena->tail);
	assert_int_equal(n % 2, 0);
	fx_reopen(f);
	assert_true(pma_usable_size(f->heap, f->dests[1]) >= 64);
	assert_int_equal(pma_free_from(f->heap, &f->dests[1]), 0);
	assert_int_equal(pma_free_from(f->heap, &f->dests[0]), 0);
}

/* many ops: several checkpoints and log wraps, then reopen */
static void test_log_wrap(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats st;
	unsigned i, j;

	fx_create(f, HEAP_SIZE);
	for (i = 0; i < 20000; i++) {
		j = (i * 7919) % 512;
		if (f->dests[j])
			assert_int_equal(pma_free_from(f->heap, &f->dests[j]),
					 0);
		else
			assert_int_equal(pma_malloc_to(f->heap,
						       j % 3 ? 64 + j :
							       20000 + j,
						       &f->dests[j]),
					 0);
	}
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_true(st.checkpoints + st.local_checkpoints > 5);
	fx_reopen(f);
	for (j = 0; j < 512; j++) {
		if (f->dests[j])
			assert_true(pma_usable_size(f->heap, f->dests[j]) >=
				    (j % 3 ? 64 + j : 20000 + j));
		assert_int_equal(pma_free_from(f->heap, &f->dests[j]), 0);
	}
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.used_bytes, (uint64_t)NDEST * 8); /* the root */
}

/* fences and reflushes per op in steady state (dests on separate lines) */
static void test_fences_per_op(void **state)
{
	struct fx *f = *state;
	struct pm_stats ps;
	unsigned i, nops = 0;

	fx_create(f, HEAP_SIZE);
	pm_stats_reset();
	/* back to back on one dest, then batches of 400 */
	for (i = 0; i < 4000; i++) {
		assert_int_equal(pma_malloc_to(f->heap, 64,
					       &f->dests[(i * 8) % NDEST]),
				 0);
		assert_int_equal(
			pma_free_from(f->heap, &f->dests[(i * 8) % NDEST]), 0);
		nops += 2;
	}
	for (i = 0; i < 8000; i++) {
		uint64_t *d = &f->dests[(i % 400) * 8];

		if (i / 400 % 2 == 0)
			assert_int_equal(pma_malloc_to(f->heap, 64, d), 0);
		else
			assert_int_equal(pma_free_from(f->heap, d), 0);
		nops++;
	}
	pm_stats_get(&ps);
	print_message("# %u ops: %.3f fences/op, %.3f flushes/op, %.4f "
		      "reflushes/op\n",
		      nops, (double)ps.fences / nops,
		      (double)ps.lines_flushed / nops,
		      (double)ps.reflushes / nops);
	assert_true(ps.fences <= nops + nops / 50);
	assert_true(ps.reflushes <= nops / 50);

	/* packed dests (an array of pointers): the dest stores of 8 ops
	 * share a line, flushed once (dest batching) */
	pm_stats_reset();
	for (i = 0; i < 8000; i++) {
		uint64_t *d = &f->dests[i % 800];

		if (i / 800 % 2 == 0)
			assert_int_equal(pma_malloc_to(f->heap, 64, d), 0);
		else
			assert_int_equal(pma_free_from(f->heap, d), 0);
	}
	pm_stats_get(&ps);
	print_message("# packed: %.3f fences/op, %.3f flushes/op, %.4f "
		      "reflushes/op\n",
		      (double)ps.fences / 8000, (double)ps.lines_flushed / 8000,
		      (double)ps.reflushes / 8000);
	assert_true(ps.fences <= 8000 + 8000 / 50);
	/* 1 record line + 1/8 dest line per op, plus checkpoints */
	assert_true(ps.lines_flushed <= 8000 + 8000 / 8 + 8000 / 10);
	assert_true(ps.reflushes <= 8000 / 100);
}

/* a heap on a BYTE (eADR) mapping: no flush is issued (or counted), one
 * fence per op, random dests and large extents included; the dests and
 * blocks are all there after a reopen */
static void test_byte_heap(void **state)
{
	struct fx *f = *state;
	const char *old = getenv("PMEM2_FORCE_GRANULARITY");
	char *saved = old ? strdup(old) : NULL;
	uint64_t want[NDEST];
	struct pm_stats ps;
	unsigned i, j, nops = 0;
	size_t size;

	setenv("PMEM2_FORCE_GRANULARITY", "BYTE", 1);
	fx_create(f, HEAP_SIZE);
	if (saved)
		setenv("PMEM2_FORCE_GRANULARITY", saved, 1);
	else
		unsetenv("PMEM2_FORCE_GRANULARITY");
	free(saved);
	srand(7);
	/* warm up (slabs made), then count */
	for (i = 0; i < 20000; i++) {
		if (i == 2000)
			pm_stats_reset();
		j = (unsigned)rand() % NDEST;
		size = i % 97 == 0 ? 300 * 1024 : 64 + (size_t)rand() % 900;
		if (f->dests[j])
			assert_int_equal(pma_free_from(f->heap, &f->dests[j]),
					 0);
		else
			assert_int_equal(
				pma_malloc_to(f->heap, size, &f->dests[j]), 0);
		nops += i >= 2000;
	}
	pm_stats_get(&ps);
	print_message("# BYTE: %u ops, %.3f fences/op, %.4f flushes/op\n", nops,
		      (double)ps.fences / nops,
		      (double)ps.lines_flushed / nops);
	assert_true(ps.fences >= nops);
	assert_true(ps.fences <= nops + nops / 50);
	assert_true(ps.lines_flushed <= nops / 100);
	memcpy(want, f->dests, sizeof(want));
	fx_reopen(f);
	assert_memory_equal(f->dests, want, sizeof(want));
	for (j = 0; j < NDEST; j++)
		if (want[j])
			assert_int_equal(pma_free_from(f->heap, &f->dests[j]),
					 0);
}

/* a thread whose arena has no free block of a class and the heap no room
 * for a new slab takes one from another arena's slabs (not -ENOMEM) */
struct steal_arg {
	struct fx *f;
	unsigned from, n;
	int rc;
};

static void *steal_main(void *arg)
{
	struct steal_arg *a = arg;
	unsigned i;

	for (i = 0; i < a->n; i++) {
		a->rc = pma_malloc_to(a->f->heap, 2000,
				      &a->f->dests[a->from + i]);
		if (a->rc)
			return NULL;
	}
	return NULL;
}

static void test_alloc_other_arena(void **state)
{
	struct fx *f = *state;
	struct steal_arg a = { .f = f };
	pthread_t tid;
	unsigned i, n;
	int rc = 0;

	fx_create(f, 4 * MIB);
	/* this thread's arena fills the heap with 2000-byte blocks */
	for (n = 0; n < NDEST && rc == 0; n++)
		rc = pma_malloc_to(f->heap, 2000, &f->dests[n]);
	assert_int_equal(rc, -ENOMEM);
	n--;
	assert_true(n > 1000);
	for (i = 0; i < n; i += 2)
		assert_int_equal(pma_free_from(f->heap, &f->dests[i]), 0);
	/* another thread (another arena) gets the freed blocks */
	a.from = n;
	a.n = n / 2 < NDEST - n ? n / 2 : NDEST - n;
	assert_int_equal(pthread_create(&tid, NULL, steal_main, &a), 0);
	assert_int_equal(pthread_join(tid, NULL), 0);
	assert_int_equal(a.rc, 0);
	for (i = n; i < n + a.n; i++)
		assert_int_equal(pma_usable_size(f->heap, f->dests[i]), 2048);
	/* and the state survives a reopen */
	fx_reopen(f);
	for (i = n; i < n + a.n; i++)
		assert_int_equal(pma_free_from(f->heap, &f->dests[i]), 0);
}

static int count_cb(const struct pma_log_entry *e, void *arg)
{
	unsigned *counts = arg;

	if (!strcmp(e->type, "alloc"))
		counts[0]++;
	else if (!strcmp(e->type, "ext_alloc") && e->size == MIB)
		counts[1]++;
	else if (!strcmp(e->type, "free") &&
		 e->size == pma_class_size(pma_class_of(100, 1)))
		counts[2]++;
	else if (!strcmp(e->type, "slab_new"))
		counts[3]++;
	return 0;
}

static void test_log_foreach_stats(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats st;
	unsigned counts[4] = { 0 };

	fx_create(f, HEAP_SIZE);
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	assert_int_equal(pma_malloc_to(f->heap, 100, &f->dests[0]), 0);
	assert_int_equal(pma_malloc_to(f->heap, MIB, &f->dests[1]), 0);
	assert_int_equal(pma_free_from(f->heap, &f->dests[0]), 0);
	assert_int_equal(pma_log_foreach(f->heap, count_cb, counts), 0);
	assert_int_equal(counts[0], 1); /* alloc */
	assert_int_equal(counts[1], 1); /* ext_alloc */
	assert_int_equal(counts[2], 1); /* free */
	assert_int_equal(counts[3], 1); /* slab_new */
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	/* slab_new, alloc, ext_alloc1, free */
	assert_int_equal(st.log_records, 4);
	assert_int_equal(st.extents, 2); /* and the root */
	assert_int_equal(st.extent_bytes, MIB + NDEST * 8);
	assert_int_equal(st.classes[pma_class_of(100, 1)].used, 0);
	assert_int_equal(st.classes[pma_class_of(100, 1)].slabs, 1);
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.log_records, 0);
}

/* threads allocate, hand blocks to the next thread, which frees them */
#define NTHREADS 4
#define PER_THREAD 3000

struct thr {
	struct fx *f;
	unsigned id;
	pthread_barrier_t *barrier;
};

static void *thread_main(void *arg)
{
	struct thr *t = arg;
	struct pma_heap *heap = t->f->heap;
	uint64_t *mine = &t->f->dests[t->id * (NDEST / NTHREADS)];
	uint64_t *next =
		&t->f->dests[((t->id + 1) % NTHREADS) * (NDEST / NTHREADS)];
	unsigned i, round;

	for (round = 0; round < 3; round++) {
		for (i = 0; i < PER_THREAD / 3 && i < NDEST / NTHREADS; i++)
			if (pma_malloc_to(heap, 64 + (i % 50) * 64, &mine[i]))
				return (void *)1;
		pthread_barrier_wait(t->barrier);
		/* free the next thread's blocks: remote frees */
		for (i = 0; i < PER_THREAD / 3 && i < NDEST / NTHREADS; i++)
			if (pma_free_from(heap, &next[i]))
				return (void *)2;
		pthread_barrier_wait(t->barrier);
	}
	return NULL;
}

static void test_threads_remote_free(void **state)
{
	struct fx *f = *state;
	struct thr thr[NTHREADS];
	pthread_t tid[NTHREADS];
	pthread_barrier_t barrier;
	struct pma_heap_stats st;
	void *ret;
	unsigned i;

	fx_create(f, HEAP_SIZE);
	pthread_barrier_init(&barrier, NULL, NTHREADS);
	for (i = 0; i < NTHREADS; i++) {
		thr[i] = (struct thr){ f, i, &barrier };
		assert_int_equal(
			pthread_create(&tid[i], NULL, thread_main, &thr[i]), 0);
	}
	for (i = 0; i < NTHREADS; i++) {
		assert_int_equal(pthread_join(tid[i], &ret), 0);
		assert_null(ret);
	}
	pthread_barrier_destroy(&barrier);
	for (i = 0; i < NDEST; i++)
		assert_int_equal(f->dests[i], 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.used_bytes, (uint64_t)NDEST * 8);
	fx_reopen(f);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.used_bytes, (uint64_t)NDEST * 8);
}

/*
 * Per-arena checkpoints (layout 8) and two-phase frees. Thread A fills one
 * slab of 64-byte blocks; thread B frees every other block (RFREE in B's
 * log) and frees A's large extent. B's checkpoint can retire nothing yet
 * (A has not applied the frees, and A's extent allocation is not retired).
 * A's checkpoint applies them (SYNC_FREE) and retires its log up to them;
 * then B's retires everything, and A's next one the SYNC_FREEs. A's next allocations get the freed blocks back,
 * no global checkpoint ever runs, and a reopen shows the same heap.
 */
#define LC_N 1016 /* blocks of one slab of class 0 */

struct lc {
	struct fx *f;
	pthread_barrier_t bar;
	uint64_t big; /* index of A's extent dest */
	int rc;
};

static void *lc_thread_b(void *arg)
{
	struct lc *c = arg;
	struct pma_heap *heap = c->f->heap;
	unsigned i;

	pthread_barrier_wait(&c->bar); /* 1: A allocated */
	for (i = 0; i < LC_N; i += 2)
		c->rc |= pma_free_from(heap, &c->f->dests[i]);
	c->rc |= pma_free_from(heap, &c->f->dests[c->big]);
	c->rc |= pma_heap_checkpoint_arena(heap);
	pthread_barrier_wait(&c->bar); /* 2: main looks */
	pthread_barrier_wait(&c->bar); /* 3: A checkpointed */
	c->rc |= pma_heap_checkpoint_arena(heap);
	pthread_barrier_wait(&c->bar); /* 4: main looks */
	return NULL;
}

/* the records of the arena other than a's */
static uint64_t lc_other_records(struct pma_heap *heap, unsigned a)
{
	struct pma_arena_stats as[PMA_MAX_ARENAS];
	int n = pma_heap_arena_stats(heap, as, PMA_MAX_ARENAS), i;
	uint64_t r = 0;

	assert_true(n > 0);
	for (i = 0; i < n; i++)
		if ((unsigned)i != a)
			r += as[i].log_records;
	return r;
}

static void test_local_checkpoint(void **state)
{
	struct fx *f = *state;
	struct lc c = { .f = f, .big = LC_N };
	struct pma_heap_stats st0, st;
	uint64_t freed[LC_N / 2];
	struct pma_arena *a;
	pthread_t tid;
	unsigned i, j;

	test_cfg.flags |= PMA_HEAP_LOCAL_CHECKPOINTS; /* until the end */
	fx_create(f, HEAP_SIZE);
	assert_true(f->heap->geom.version >= PMA_HEAP_VERSION_LOCAL);
	a = pma_arena_get(f->heap);
	for (i = 0; i < LC_N; i++)
		assert_int_equal(pma_malloc_to(f->heap, 64, &f->dests[i]), 0);
	assert_int_equal(pma_malloc_to(f->heap, MIB, &f->dests[c.big]), 0);
	for (i = 0; i < LC_N / 2; i++)
		freed[i] = f->dests[2 * i];
	assert_int_equal(pma_heap_stats(f->heap, &st0), 0);
	pthread_barrier_init(&c.bar, NULL, 2);
	assert_int_equal(pthread_create(&tid, NULL, lc_thread_b, &c), 0);
	pthread_barrier_wait(&c.bar); /* 1 */
	pthread_barrier_wait(&c.bar); /* 2: B freed and checkpointed */
	assert_int_equal(c.rc, 0);
	/* nothing of B's log could go: A applied none of it */
	assert_int_equal(lc_other_records(f->heap, a->id), LC_N / 2 + 1);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.checkpoints, st0.checkpoints);
	assert_int_equal(st.remote_frees_synced, 0);
	/* A applies the remote frees (SYNC_FREE) and retires its log up to
	 * them: they stay until B retired its RFREEs */
	assert_int_equal(pma_heap_checkpoint_arena(f->heap), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.remote_frees_synced, LC_N / 2);
	assert_int_equal(a->tail - a->head, LC_N / 2);
	pthread_barrier_wait(&c.bar); /* 3 */
	pthread_barrier_wait(&c.bar); /* 4: B checkpointed again */
	assert_int_equal(pthread_join(tid, NULL), 0);
	pthread_barrier_destroy(&c.bar);
	assert_int_equal(c.rc, 0);
	assert_int_equal(lc_other_records(f->heap, a->id), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.checkpoints, st0.checkpoints); /* no global one */
	assert_true(st.local_checkpoints >= st0.local_checkpoints + 2);
	assert_int_equal(st.extents, st0.extents - 1);
	/* the freed blocks come back to A: no new slab */
	for (i = 0; i < LC_N / 2; i++) {
		assert_int_equal(pma_malloc_to(f->heap, 64, &f->dests[2 * i]),
				 0);
		for (j = 0; j < LC_N / 2 && freed[j] != f->dests[2 * i]; j++)
			;
		assert_true(j < LC_N / 2);
	}
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.slab_bytes, st0.slab_bytes);
	/* the blocks came back: A's whole window can go now */
	assert_int_equal(pma_heap_checkpoint_arena(f->heap), 0);
	assert_int_equal(a->tail, a->head);
	fx_reopen(f);
	test_cfg.flags &= ~(unsigned)PMA_HEAP_LOCAL_CHECKPOINTS;
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.used_bytes, (uint64_t)NDEST * 8 + LC_N * 64ULL);
	for (i = 0; i < LC_N; i++)
		assert_int_equal(pma_free_from(f->heap, &f->dests[i]), 0);
}

/*
 * Arena ownership under stress: more threads than arenas (owners on their
 * fast path, the others sharing through the mutex and revoking), a thread
 * checkpointing all the time, remote frees through hand-over words, and
 * waves of threads that exit (releasing arenas) and new ones that claim
 * them. Any two threads in one arena at once would hand out a block twice
 * or corrupt a log: every live offset must be unique, the heap must reopen
 * to the same state, and free everything back to the root alone.
 */
#define STRESS_THREADS 6
#define STRESS_SLOTS 48
#define STRESS_OPS 20000

struct stress {
	struct fx *f;
	unsigned id;
	int rc;
};

static atomic_int stress_stop;

static void *stress_main(void *arg)
{
	struct stress *t = arg;
	struct pma_heap *heap = t->f->heap;
	uint64_t *mine = &t->f->dests[t->id * STRESS_SLOTS];
	/* hand-over words: I fill mine, the next thread frees it */
	uint64_t *give = &t->f->dests[NDEST - 1 - t->id];
	uint64_t *take =
		&t->f->dests[NDEST - 1 -
			     (t->id + STRESS_THREADS - 1) % STRESS_THREADS];
	uint64_t rnd = t->id * 0x9e3779b97f4a7c15ULL + 7;
	unsigned i, s;
	int rc;

	for (i = 0; i < STRESS_OPS; i++) {
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		s = (unsigned)(rnd % STRESS_SLOTS);
		rc = mine[s] ? pma_free_from(heap, &mine[s]) :
			       pma_malloc_to(heap, 64 + rnd % 3000, &mine[s]);
		if (rc == 0 && i % 8 == 0 &&
		    !__atomic_load_n(give, __ATOMIC_ACQUIRE))
			rc = pma_malloc_to(heap, 200, give);
		if (rc == 0 && i % 8 == 4 &&
		    __atomic_load_n(take, __ATOMIC_ACQUIRE))
			rc = pma_free_from(heap, take);
		if (rc && rc != -ENOMEM) {
			t->rc = rc;
			return NULL;
		}
	}
	return NULL;
}

static void *checkpoint_main(void *arg)
{
	struct fx *f = arg;

	while (!atomic_load(&stress_stop))
		if (pma_heap_checkpoint(f->heap))
			return (void *)1;
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* two threads free one block at the same moment (a double free through
 * two dest words): the owner's free and a remote free race */
#define RACE_ROUNDS 20000 /* at least; until each side won 100 times */
#define RACE_ROUNDS_MAX 400000
/* valgrind runs one thread at a time: the frees cannot overlap there */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif
static uint64_t live_blocks(struct pma_heap *heap);
struct race {
	struct fx *f;
	_Atomic unsigned go, ready, done;
	/* extra spins for the helper (> 0) or the main thread (< 0): moved
	 * after each round towards the side that lost, so that the two
	 * frees meet whatever this machine's fixed head start of one side
	 * (the helper sees "go" first) and path lengths are */
	_Atomic int skew;
	int rc;
};

/* the skew moves by 16 spins after a win, doubled for each further
 * win of the same side in a row (up to 2^12 times): balanced rounds keep
 * it near where the frees meet, and a side that keeps winning (a loaded
 * machine, where a thread loses its CPU for a time slice) is delayed by
 * millions of spins within a few dozen rounds. A fixed step of 16 capped
 * at 100000 spins left the owner winning 0-100 times in 400000 rounds
 * with 2 cores busy */
#define RACE_SKEW_STEP 16
#define RACE_STREAK_MAX 12
#define RACE_SKEW_MAX 2000000

static int race_skew_step(unsigned streak)
{
	return RACE_SKEW_STEP
	       << (streak < RACE_STREAK_MAX ? streak : RACE_STREAK_MAX);
}

/* a short random pause, so that the two frees overlap in every phase,
 * plus extra spins (the skew) */
static void race_pause(unsigned *seed, int extra)
{
	unsigned mag = (unsigned)(extra < 0 ? -extra : extra), spin;

	/* the random part grows with the skew, so that the frees still
	 * meet in every phase once the skew is large */
	spin = (unsigned)rand_r(seed) % (400 + mag / 4) +
	       (unsigned)(extra > 0 ? extra : 0);
	for (; spin; spin--)
		__asm__ volatile("" ::: "memory");
}

/* wait until *v == want (or UINT_MAX: 1): spin, then yield (under
 * valgrind the threads take turns) */
static int race_wait(_Atomic unsigned *v, unsigned want)
{
	unsigned n, x;

	for (n = 0; (x = atomic_load(v)) != want; n++) {
		if (x == UINT_MAX)
			return 1;
		if (n > 1000)
			sched_yield();
	}
	return 0;
}

static void *race_main(void *arg)
{
	struct race *r = arg;
	unsigned i, seed = 9;

	for (i = 1;; i++) {
		if (race_wait(&r->go, i))
			return NULL;
		/* both threads run now: each pauses, then frees */
		atomic_store(&r->ready, i);
		race_pause(&seed, atomic_load(&r->skew));
		r->rc = pma_free_from(r->f->heap, &r->f->dests[8]);
		atomic_store(&r->done, i);
	}
	return NULL;
}

static void test_double_free_race(void **state)
{
	struct fx *f = *state;
	struct race r = { .f = f };
	unsigned i, seed = 5, won[2] = { 0, 0 }, none = 0, streak = 0, last = 2;
	uint64_t blk;
	pthread_t tid;
	int rc, skew;

	fx_create(f, HEAP_SIZE);
	assert_true(f->heap->geom.narenas >= 2);
	/* the helper binds to an arena of its own at its first free */
	assert_int_equal(pthread_create(&tid, NULL, race_main, &r), 0);
	for (i = 1; i <= RACE_ROUNDS_MAX &&
		    (i <= RACE_ROUNDS ||
		     (!RUNNING_ON_VALGRIND && (won[0] < 100 || won[1] < 100)));
	     i++) {
		assert_int_equal(pma_malloc_to(f->heap, 64, &f->dests[0]), 0);
		blk = f->dests[0];
		f->dests[8] = blk;
		atomic_store(&r.go, i);
		(void)race_wait(&r.ready, i);
		race_pause(&seed, -atomic_load(&r.skew));
		rc = pma_free_from(f->heap, &f->dests[0]);
		(void)race_wait(&r.done, i);
		/* never both */
		assert_false(rc == 0 && r.rc == 0);
		assert_true(rc == 0 || rc == -EINVAL);
		assert_true(r.rc == 0 || r.rc == -EINVAL);
		if (rc == 0 || r.rc == 0) {
			/* the loser's word still names the block */
			won[rc != 0]++;
			/* delay the winner next time */
			streak = (unsigned)(rc != 0) == last ? streak + 1 : 0;
			last = rc != 0;
			skew = atomic_load(&r.skew);
			if (rc == 0 && skew > -RACE_SKEW_MAX)
				atomic_store(&r.skew,
					     skew - race_skew_step(streak));
			if (rc != 0 && skew < RACE_SKEW_MAX)
				atomic_store(&r.skew,
					     skew + race_skew_step(streak));
			assert_int_equal(rc ? f->dests[0] : f->dests[8], blk);
			assert_int_equal(pma_usable_size(f->heap, blk), 0);
		} else {
			/* both failed (a protocol where each side backs out
			 * may do that): still live, freed once now */
			none++;
			assert_true(pma_usable_size(f->heap, blk) >= 64);
			assert_int_equal(pma_free_from(f->heap, &f->dests[0]),
					 0);
		}
		f->dests[0] = 0;
		f->dests[8] = 0;
	}
	atomic_store(&r.go, UINT_MAX);
	pthread_join(tid, NULL);
	print_message("# %u rounds: the owner's free won %u times, the remote "
		      "free %u, both failed %u times (skew %d)\n",
		      i - 1, won[0], won[1], none, atomic_load(&r.skew));
	/* the two paths did race (each won sometimes; on a loaded machine
	 * one thread may lose its CPU often, so 100 each is not required) */
	if (!RUNNING_ON_VALGRIND)
		assert_true(won[0] > 0 && won[1] > 0);
	/* no block lost or freed twice: only the root is live */
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	assert_int_equal(live_blocks(f->heap), 1);
	fx_reopen(f);
	assert_int_equal(live_blocks(f->heap), 1);
}

static void test_threads_ownership_stress(void **state)
{
	struct fx *f = *state;
	struct stress t[STRESS_THREADS];
	pthread_t tid[STRESS_THREADS], ck;
	struct pma_heap_stats st;
	uint64_t *live = calloc(NDEST, sizeof(*live));
	unsigned i, wave, n = 0;
	void *ret;

	assert_non_null(live);
	fx_create(f, 32 * MIB); /* 2 arenas */
	assert_true(f->heap->geom.narenas < STRESS_THREADS);
	print_message("# %u arenas, %d threads, membarrier %s\n",
		      f->heap->geom.narenas, STRESS_THREADS,
		      pma_owner_membarrier() ? "yes" : "no (fences)");
	atomic_store(&stress_stop, 0);
	assert_int_equal(pthread_create(&ck, NULL, checkpoint_main, f), 0);
	for (wave = 0; wave < 3; wave++) {
		for (i = 0; i < STRESS_THREADS; i++) {
			t[i] = (struct stress){ f, i, 0 };
			assert_int_equal(pthread_create(&tid[i], NULL,
							stress_main, &t[i]),
					 0);
		}
		for (i = 0; i < STRESS_THREADS; i++) {
			assert_int_equal(pthread_join(tid[i], NULL), 0);
			assert_int_equal(t[i].rc, 0);
		}
	}
	atomic_store(&stress_stop, 1);
	assert_int_equal(pthread_join(ck, &ret), 0);
	assert_null(ret);
	for (i = 0; i < NDEST; i++)
		if (f->dests[i]) {
			assert_true(pma_usable_size(f->heap, f->dests[i]) > 0);
			live[n++] = f->dests[i];
		}
	assert_true(n > STRESS_THREADS);
	qsort(live, n, sizeof(*live), cmp_u64);
	for (i = 1; i < n; i++)
		assert_true(live[i] != live[i - 1]);
	fx_reopen(f);
	for (i = 0; i < NDEST; i++)
		if (f->dests[i])
			assert_int_equal(pma_free_from(f->heap, &f->dests[i]),
					 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.used_bytes, (uint64_t)NDEST * 8);
	free(live);
}

/* a pool made without a heap: -ENOENT, then PMA_HEAP_FORMAT adds one */
/*
 * The heap configuration object: setters refuse bad values, a config is
 * copied at the call, two heaps of one process are tuned apart, a create
 * of several parts names them path.partN, and the public counters count.
 */
static void test_config(void **state)
{
	struct fx *f = *state;
	struct pma_config *cfg = NULL, *cfg2 = NULL;
	struct pma_pm_counters c0, c1;
	struct pma_heap *h2 = NULL;
	struct pma_heap_stats st;
	char p2[PATH_MAX], part1[PATH_MAX];
	uint64_t *slot;

	assert_int_equal(pma_config_new(NULL), -EINVAL);
	assert_int_equal(pma_config_new(&cfg), 0);
	assert_int_equal(pma_config_set_flags(cfg, 1u << 20), -EINVAL);
	assert_non_null(strstr(pma_errormsg(), "unknown heap flags"));
	assert_int_equal(pma_config_set_flags(cfg, PMA_HEAP_RDONLY |
							   PMA_HEAP_FORMAT),
			 -EINVAL);
	assert_int_equal(pma_config_set_membarrier(cfg, 2), -EINVAL);
	assert_int_equal(pma_config_set_parts(cfg, 0), -EINVAL);
	assert_int_equal(pma_config_set_parts(cfg, POOL_MAX_PARTS + 1),
			 -EINVAL);
	assert_int_equal(pma_config_set_part_node(cfg, POOL_MAX_PARTS, 0),
			 -EINVAL);
	assert_int_equal(pma_config_set_part_node(cfg, 0, -2), -EINVAL);
	assert_int_equal(pma_config_set_mode(cfg, 010000), -EINVAL);
	assert_int_equal(pma_heap_create_cfg(f->path, 8 * MIB, cfg, NULL),
			 -EINVAL);
	assert_int_equal(pma_config_set_flags(cfg, PMA_HEAP_RDONLY), 0);
	assert_int_equal(pma_heap_create_cfg(f->path, 8 * MIB, cfg, &f->heap),
			 -EINVAL);

	/* heap 1: membarrier off, keep every empty slab; two parts */
	assert_int_equal(pma_config_set_flags(cfg, PMA_HEAP_FORCE), 0);
	assert_int_equal(pma_config_set_membarrier(cfg, 0), 0);
	assert_int_equal(pma_config_set_slab_keep(cfg, UINT_MAX), 0);
	assert_int_equal(pma_config_set_parts(cfg, 2), 0);
	assert_int_equal(pma_config_set_mode(cfg, 0640), 0);
	assert_int_equal(pma_heap_create_cfg(f->path, 8 * MIB, cfg, &f->heap),
			 0);
	/* heap 2, same process: the defaults, one part */
	snprintf(p2, sizeof(p2), "%s/second", f->dir);
	assert_int_equal(pma_config_new(&cfg2), 0);
	assert_int_equal(pma_heap_create_cfg(p2, 8 * MIB, cfg2, &h2), 0);
	/* the configs are copies: changing or deleting them changes nothing */
	assert_int_equal(pma_config_set_slab_keep(cfg, 0), 0);
	pma_config_delete(&cfg);
	assert_null(cfg);
	pma_config_delete(&cfg);
	pma_config_delete(NULL);
	assert_int_equal(f->heap->slab_keep, UINT_MAX);
	assert_int_equal(f->heap->membarrier, 0);
	assert_int_equal(f->heap->arenas[0].membarrier, 0);
	assert_int_equal(h2->slab_keep, 1);
	assert_int_equal(h2->membarrier, pma_owner_membarrier());
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.parts, 2);
	snprintf(part1, sizeof(part1), "%s.part1", f->path);
	assert_int_equal(access(part1, F_OK), 0);
	assert_non_null(pma_heap_persistence(f->heap));
	assert_non_null(strstr(" BYTE CACHE_LINE PAGE ",
			       pma_heap_persistence(f->heap)));
	assert_null(pma_heap_persistence(NULL));

	/* the counters see one allocation's fence and lines */
	assert_int_equal(pma_root(h2, 64, &f->root), 0);
	slot = pma_direct(h2, f->root);
	pma_pm_counters(&c0, 1);
	assert_int_equal(pma_malloc_to(h2, 100, slot), 0);
	pma_pm_counters(&c1, 1);
	assert_true(c1.fences > c0.fences);
	assert_true(c1.lines_flushed > c0.lines_flushed);
	assert_true(c1.xplines > c0.xplines);
	assert_true(c1.xplines <= c1.lines_flushed);
	pma_pm_counters(&c1, 0);
	assert_true(c1.fences >= c0.fences);
	pma_pm_counters(NULL, 0);
	assert_int_equal(pma_free_from(h2, slot), 0);
	pma_heap_close(h2);
	pma_config_delete(&cfg2);
	(void)unlink(p2);
	pma_heap_close(f->heap);
	f->heap = NULL;
	(void)unlink(part1);
}

static void test_open_format(void **state)
{
	struct fx *f = *state;
	struct pool_create_params params = { 0 };
	const char *paths[1] = { f->path };
	struct pool *pool;
	unsigned idx;

	params.nparts = 1;
	params.paths = paths;
	params.part_size = 8 * MIB;
	params.mode = 0600;
	assert_int_equal(pool_create(&params, &pool), 0);
	assert_int_equal(pool_region_add(pool, POOL_REGION_USER, 0, MIB, "user",
					 &idx),
			 0);
	pool_close(&pool);
	assert_int_equal(test_heap_open(f->path, 0, &f->heap), -ENOENT);
	assert_int_equal(test_heap_open(f->path, PMA_HEAP_FORMAT, &f->heap), 0);
	assert_int_equal(pma_root(f->heap, 64, &f->root), 0);
	assert_int_equal(
		pma_malloc_to(f->heap, 5000, pma_direct(f->heap, f->root)), 0);
	pma_heap_close(f->heap);
	f->heap = NULL;
	assert_int_equal(test_heap_open(f->path, 0, &f->heap), 0);
	f->dests = pma_direct(f->heap, f->root);
	assert_true(pma_usable_size(f->heap, f->dests[0]) >= 5000);
	/* the heap did not overlap the user region */
	assert_true(f->heap->region_off >= POOL_DATA_OFF + MIB ||
		    f->heap->region_off + f->heap->geom.region_size <=
			    POOL_DATA_OFF);
}

static void test_corrupt_header(void **state)
{
	struct fx *f = *state;

	fx_create(f, HEAP_SIZE);
	f->heap->hdr->npages ^= 1; /* no flush needed: same mapping */
	pm_persist(f->heap->map, f->heap->hdr, 256);
	pma_heap_close(f->heap);
	f->heap = NULL;
	assert_int_equal(test_heap_open(f->path, 0, &f->heap), -EBADMSG);
	assert_non_null(strstr(pma_errormsg(), "checksum"));
}

/* ------------------------------------------------------------ crafted
 * crash states: a child process runs a fixed sequence of operations on
 * two arenas (the main thread is bound to arena 0, a helper thread to
 * arena 1), then edits PM to what a crash could leave and exits without
 * closing (no checkpoint); the parent recovers and checks. Deterministic
 * regression tests for the bugs the crash sweep found. */

struct helper {
	pthread_t tid;
	sem_t go, done;
	struct pma_heap *heap;
	uint64_t *dest; /* NULL: quit */
	size_t size; /* 0: free_from, else malloc_to */
	int rc;
};

static void *helper_main(void *arg)
{
	struct helper *h = arg;

	for (;;) {
		sem_wait(&h->go);
		if (!h->dest)
			return NULL;
		h->rc = h->size ? pma_malloc_to(h->heap, h->size, h->dest) :
				  pma_free_from(h->heap, h->dest);
		sem_post(&h->done);
	}
}

/* run one op in the helper thread (arena 1); _exit(20) on failure */
static void on_arena1(struct helper *h, size_t size, uint64_t *dest)
{
	h->size = size;
	h->dest = dest;
	sem_post(&h->go);
	sem_wait(&h->done);
	if (h->rc)
		_exit(20);
}

static void helper_start(struct helper *h, struct pma_heap *heap)
{
	memset(h, 0, sizeof(*h));
	h->heap = heap;
	sem_init(&h->go, 0, 0);
	sem_init(&h->done, 0, 0);
	if (pthread_create(&h->tid, NULL, helper_main, h))
		_exit(21);
}

static void helper_stop(struct helper *h)
{
	h->dest = NULL;
	sem_post(&h->go);
	pthread_join(h->tid, NULL);
}

/* run fn in a child that exits without closing the heap ("crash") */
static void craft_child(struct fx *f, void (*fn)(struct fx *f))
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		fx_create(f, HEAP_SIZE);
		if (f->heap->geom.narenas < 2)
			_exit(22);
		fn(f);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* craft_child, then recover */
static void craft(struct fx *f, void (*fn)(struct fx *f))
{
	craft_child(f, fn);
	assert_int_equal(test_heap_open(f->path, 0, &f->heap), 0);
	assert_int_equal(pma_root(f->heap, NDEST * 8, &f->root), 0);
	f->dests = pma_direct(f->heap, f->root);
}

static uint64_t live_blocks(struct pma_heap *heap)
{
	struct pma_heap_stats st;
	uint64_t n;
	unsigned c;

	assert_int_equal(pma_heap_stats(heap, &st), 0);
	n = st.extents;
	for (c = 0; c < st.nclasses; c++)
		n += st.classes[c].used;
	return n;
}

/* an extent op of up to PMA_REC_EXT1_NPAGES_MAX pages is one record
 * (EXT_ALLOC1 ...), a larger one two (EXT_ALLOC ..., EXT_LEN), and so is
 * every one where ext1_pages is 0 (a version 3 heap); the odd ones are
 * freed too (EXT_LFREE). Both forms replay at open */
static const struct {
	uint64_t size, ext1_pages;
	unsigned nrecs;
} ext_forms[] = {
	{ 64 * 1024, PMA_REC_EXT1_NPAGES_MAX, 1 },
	{ PMA_REC_EXT1_NPAGES_MAX * PMA_PAGE, PMA_REC_EXT1_NPAGES_MAX, 1 },
	{ PMA_REC_EXT1_NPAGES_MAX * PMA_PAGE + 1, PMA_REC_EXT1_NPAGES_MAX, 2 },
	{ 64 * 1024, 0, 2 },
	{ 128 * 1024, 0, 2 },
};
#define NFORMS (sizeof(ext_forms) / sizeof(ext_forms[0]))

static void craft_extent_record_forms(struct fx *f)
{
	struct pma_arena *a = &f->heap->arenas[0];
	uint64_t tail;
	unsigned i;

	pma_arena_bind(f->heap, 0);
	for (i = 0; i < NFORMS; i++) {
		f->heap->ext1_pages = ext_forms[i].ext1_pages;
		tail = a->tail;
		if (pma_malloc_to(f->heap, ext_forms[i].size, &f->dests[i]) ||
		    a->tail - tail != ext_forms[i].nrecs)
			_exit(30);
		if (i % 2 && (pma_free_from(f->heap, &f->dests[i]) ||
			      a->tail - tail != 2 * ext_forms[i].nrecs))
			_exit(31);
	}
}

static void test_extent_record_forms(void **state)
{
	struct fx *f = *state;
	unsigned i;

	craft(f, craft_extent_record_forms);
	assert_int_equal(f->heap->ext1_pages, PMA_REC_EXT1_NPAGES_MAX);
	for (i = 0; i < NFORMS; i++)
		if (i % 2)
			assert_int_equal(f->dests[i], 0);
		else
			assert_true(pma_usable_size(f->heap, f->dests[i]) >=
				    ext_forms[i].size);
	assert_int_equal(live_blocks(f->heap), 1 + (NFORMS + 1) / 2);
}

/*
 * Arena 1 allocates dest 0 and 1, arena 0 frees them (RFREE) and makes a
 * large allocation into dest 2, then a checkpoint applies both logs and
 * stages the heads, but the crash comes before head_gen flips. Before the
 * fix every arena head moved by its own store: arena 0's head could be
 * durable without arena 1's, recovery then re-applied arena 1's ALLOCs
 * without arena 0's RFREEs and leaked both blocks. Now all heads move
 * with one store, so the state is the old heads plus a re-appliable
 * checkpoint.
 */
static void craft_unflipped_checkpoint(struct fx *f)
{
	struct helper h;

	helper_start(&h, f->heap);
	on_arena1(&h, 100, &f->dests[0]);
	on_arena1(&h, 5000, &f->dests[1]);
	helper_stop(&h);
	if (pma_free_from(f->heap, &f->dests[0]) ||
	    pma_free_from(f->heap, &f->dests[1]) ||
	    pma_malloc_to(f->heap, 100000, &f->dests[2]) ||
	    pma_heap_checkpoint(f->heap))
		_exit(23);
	/* the flip never became durable */
	f->heap->hdr->head_gen = pma_check_gen(f->heap->head_gen - 1);
	pm_persist(f->heap->map, &f->heap->hdr->head_gen, 8);
}

static void test_crash_unflipped_checkpoint(void **state)
{
	struct fx *f = *state;

	craft(f, craft_unflipped_checkpoint);
	assert_int_equal(f->dests[0], 0);
	assert_int_equal(f->dests[1], 0);
	assert_int_equal(pma_usable_size(f->heap, f->dests[2]), 102400);
	assert_int_equal(live_blocks(f->heap), 2); /* root + dest 2 */
	fx_reopen(f);
	assert_int_equal(live_blocks(f->heap), 2);
}

/*
 * Arena 1 allocates D into w; arena 0 frees w (RFREE D) and allocates C
 * into w: that op skips flushing w (same word as its previous op), so the
 * stored 0 is never flushed. Arena 1 frees C from w (its last op) and
 * arena 0 allocates into another word (its last op, whose fence would
 * have flushed w but did not complete): w's durable value is still D.
 * Before the fix recovery only cleared w if it named C and left the
 * dangling D.
 */
static void craft_stale_dest(struct fx *f)
{
	uint64_t *w = &f->dests[0], d;
	struct helper h;

	helper_start(&h, f->heap);
	on_arena1(&h, 200, w);
	on_arena1(&h, 200, &f->dests[8]);
	d = *w;
	if (pma_free_from(f->heap, w) || pma_malloc_to(f->heap, 200, w))
		_exit(24);
	on_arena1(&h, 0, w);
	helper_stop(&h);
	if (pma_malloc_to(f->heap, 300, &f->dests[16]))
		_exit(25);
	*w = d; /* what the media holds */
	pm_persist(f->heap->map, w, 8);
}

static void test_crash_stale_dest(void **state)
{
	struct fx *f = *state;

	craft(f, craft_stale_dest);
	assert_int_equal(f->dests[0], 0);
	assert_int_equal(pma_usable_size(f->heap, f->dests[8]), 208);
	assert_int_equal(pma_usable_size(f->heap, f->dests[16]), 320);
	assert_int_equal(live_blocks(f->heap), 3);
}

/* un-checkpointed logs of both arenas: allocations, frees, remote frees,
 * extents (the child exits without closing) */
static void craft_pending_logs(struct fx *f)
{
	struct helper h;
	unsigned i;

	helper_start(&h, f->heap);
	for (i = 0; i < 40; i++)
		on_arena1(&h, 64 + i * 100, &f->dests[i]);
	on_arena1(&h, 300000, &f->dests[40]);
	on_arena1(&h, 0, &f->dests[3]);
	helper_stop(&h);
	for (i = 0; i < 40; i += 2)
		if (pma_free_from(f->heap, &f->dests[i + 1]) ||
		    pma_malloc_to(f->heap, 9000, &f->dests[100 + i]))
			_exit(26);
	if (pma_free_from(f->heap, &f->dests[40]) ||
	    pma_malloc_to(f->heap, 50000, &f->dests[41]))
		_exit(27);
}

static int count_records(const struct pma_log_entry *e, void *arg)
{
	(void)e;
	++*(unsigned *)arg;
	return 0;
}

static void *read_file(const char *path, size_t *ret_len)
{
	FILE *fp = fopen(path, "rb");
	char *buf;
	long len;

	assert_non_null(fp);
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	len = ftell(fp);
	rewind(fp);
	buf = malloc((size_t)len);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, fp), (size_t)len);
	fclose(fp);
	*ret_len = (size_t)len;
	return buf;
}

/* PMA_HEAP_RDONLY: replays into DRAM only, same view as a recovery */
/* a checkpoint that cannot get memory for the free-extent index fails
 * before it changes anything (no freed extent is lost), and the next one
 * gives every freed extent back */
static void test_checkpoint_enomem(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats st0, st;
	struct helper h;
	unsigned i;

	fx_create(f, HEAP_SIZE);
	assert_int_equal(pma_heap_stats(f->heap, &st0), 0);
	for (i = 0; i < 200; i++)
		assert_int_equal(
			pma_malloc_to(f->heap, 16 * 1024, &f->dests[i]), 0);
	/* every other one freed by arena 1: 100 separate pending extents,
	 * more than the index has spare nodes */
	helper_start(&h, f->heap);
	for (i = 0; i < 200; i += 2)
		on_arena1(&h, 0, &f->dests[i]);
	helper_stop(&h);
	util_fault_inject_at(UTIL_FAULT_ALLOC, 1);
	assert_int_equal(pma_heap_checkpoint(f->heap), -ENOMEM);
	assert_non_null(strstr(pma_errormsg(), "free-extent index"));
	assert_int_equal(util_fault_hit(UTIL_FAULT_ALLOC), 0);
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.extents, 100 + 1); /* and the root */
	/* no freed range lost from the free-extent index */
	assert_int_equal(st.free_bytes, st0.free_bytes - 100 * 16 * 1024);
	/* the 100 freed ranges are allocatable again */
	for (i = 0; i < 200; i += 2)
		assert_int_equal(
			pma_malloc_to(f->heap, 16 * 1024, &f->dests[i]), 0);
	fx_reopen(f);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.extents, 200 + 1);
	for (i = 0; i < 200; i++)
		assert_int_equal(pma_free_from(f->heap, &f->dests[i]), 0);
}

static void test_rdonly(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats ro, rw;
	struct pma_heap *other;
	uint64_t off, dest = 0;
	size_t len, len2;
	unsigned recs = 0, c;
	void *before, *after;

	craft_child(f, craft_pending_logs);
	before = read_file(f->path, &len);
	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &f->heap), 0);
	assert_int_equal(pma_heap_stats(f->heap, &ro), 0);
	assert_int_equal(pma_log_foreach(f->heap, count_records, &recs), 0);
	assert_true(recs > 80);
	assert_int_equal(ro.log_records >= recs, 1);
	assert_int_equal(pma_root(f->heap, 8, &off), 0);
	f->root = off;
	f->dests = pma_direct(f->heap, f->root);
	assert_int_equal(pma_usable_size(f->heap, f->dests[41]), 53248);
	assert_int_equal(pma_malloc_to(f->heap, 64, &dest), -EROFS);
	assert_int_equal(pma_zalloc_to(f->heap, 64, &dest), -EROFS);
	assert_int_equal(pma_free_from(f->heap, &f->dests[0]), -EROFS);
	assert_int_equal(pma_heap_checkpoint(f->heap), -EROFS);
	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &other), 0);
	pma_heap_close(other);
	assert_int_equal(test_heap_open(f->path, 0, &other), -EBUSY);
	assert_int_equal(test_heap_open(f->path,
					PMA_HEAP_RDONLY | PMA_HEAP_FORMAT,
					&other),
			 -EINVAL);
	pma_heap_close(f->heap);
	f->heap = NULL;
	after = read_file(f->path, &len2);
	assert_int_equal(len, len2);
	assert_memory_equal(before, after, len); /* PM never written */
	/* a real recovery reaches the state the DRAM replay showed */
	assert_int_equal(test_heap_open(f->path, 0, &f->heap), 0);
	assert_int_equal(pma_heap_stats(f->heap, &rw), 0);
	assert_int_equal(rw.log_records, 0);
	assert_int_equal(ro.used_bytes, rw.used_bytes);
	assert_int_equal(ro.free_bytes, rw.free_bytes);
	assert_int_equal(ro.extents, rw.extents);
	assert_int_equal(ro.largest_free, rw.largest_free);
	for (c = 0; c < ro.nclasses; c++) {
		assert_int_equal(ro.classes[c].slabs, rw.classes[c].slabs);
		assert_int_equal(ro.classes[c].used, rw.classes[c].used);
	}
	free(before);
	free(after);
}

/* a checkpoint wrote a new slab's page-map entry, but neither its header
 * line nor the head flip is durable: the read-only replay must rebuild
 * the slab from the log (it used to read the PM header and fail) */
static void craft_torn_slab_checkpoint(struct fx *f)
{
	uint64_t off;

	if (pma_malloc_to(f->heap, 700, &f->dests[0]) ||
	    pma_heap_checkpoint(f->heap))
		_exit(28);
	off = pool_off_byte(f->dests[0]) & ~(PMA_CHUNK - 1);
	off += f->heap->data_base % PMA_CHUNK;
	memset(pma_addr(f->heap, off), 0, PMA_LINE);
	pm_persist(f->heap->map, pma_addr(f->heap, off), PMA_LINE);
	f->heap->hdr->head_gen = pma_check_gen(f->heap->head_gen - 1);
	pm_persist(f->heap->map, &f->heap->hdr->head_gen, 8);
}

static void test_rdonly_torn_checkpoint(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats ro, rw;

	craft_child(f, craft_torn_slab_checkpoint);
	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &f->heap), 0);
	assert_int_equal(pma_heap_stats(f->heap, &ro), 0);
	pma_heap_close(f->heap);
	assert_int_equal(test_heap_open(f->path, 0, &f->heap), 0);
	assert_int_equal(pma_heap_stats(f->heap, &rw), 0);
	assert_int_equal(ro.used_bytes, rw.used_bytes);
	assert_int_equal(ro.classes[pma_class_of(700, 1)].used, 1);
	assert_int_equal(rw.classes[pma_class_of(700, 1)].used, 1);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_class_table),
		cmocka_unit_test(test_interleaved_bitmap),
		cmocka_unit_test(test_slab_load),
		cmocka_unit_test(test_log_slots),
		cmocka_unit_test(test_record_validity),
		T(test_malloc_free_reopen),
		T(test_errors),
		T(test_root),
		T(test_full),
		T(test_large_no_cap),
		cmocka_unit_test(test_dirty_set),
		T(test_pending_extents),
		T(test_extent_record_forms),
		T(test_local_runs_limit),
		T(test_ext_pair_cancelled),
		T(test_local_extents),
		cmocka_unit_test(test_local_runs),
		T(test_checkpoint_due_skipped),
		T(test_log_wrap),
		T(test_fences_per_op),
		T(test_byte_heap),
		T(test_local_runs_model),
		T(test_alloc_other_arena),
		T(test_log_foreach_stats),
		T(test_threads_remote_free),
		T(test_local_checkpoint),
		T(test_threads_ownership_stress),
		T(test_double_free_race),
		T(test_checkpoint_enomem),
		T(test_config),
		T(test_open_format),
		T(test_corrupt_header),
		T(test_crash_unflipped_checkpoint),
		T(test_crash_stale_dest),
		T(test_rdonly),
		T(test_rdonly_torn_checkpoint),
		T(test_sum_trim),
		T(test_slab_release),
		T(test_arena_stats),
		T(test_log_room_slab_new),
		T(test_slab_release_enomem),
	};

	/* real clwb + sfence on tmpfs (set before the first mapping) */
	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
	/* TEST_FILTER=test_double_free_race runs one test (a pattern) */
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
