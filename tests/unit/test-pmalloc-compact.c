/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of pma_heap_compact / pma_heap_compact_plan and the footprint
 * statistics (issue 19): empty slabs released (also slabs not loaded
 * since open), logs truncated, holes punched (the file's allocated bytes
 * drop), blocks intact, the plan equals what the compaction does, a
 * read-only heap refused, an old layout keeps its slabs, and compaction
 * in a loop while two threads allocate, write and free.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "pmalloc.h"
#include "pmalloc/internal.h"
#include "../lib/test-cfg.h"

#define HEAP_SIZE (32ULL << 20)
#define NBLOCKS 20000

struct fx {
	char path[128];
	struct pma_heap *heap;
	uint64_t *slots; /* the root: NBLOCKS words */
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->path, sizeof(f->path), "/dev/shm/test-compact-%d",
		 (int)getpid());
	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	pma_heap_close(f->heap);
	(void)unlink(f->path);
	free(f);
	test_cfg.format_version = PMA_HEAP_VERSION;
	test_cfg.slab_keep = 1;
	return 0;
}

static void fx_open(struct fx *f, unsigned flags)
{
	uint64_t root;

	assert_int_equal(test_heap_open(f->path, flags, &f->heap), 0);
	assert_int_equal(pma_root(f->heap, NBLOCKS * 8, &root), 0);
	f->slots = pma_direct(f->heap, root);
}

static void fx_create(struct fx *f)
{
	uint64_t root;

	assert_int_equal(test_heap_create(f->path, HEAP_SIZE, PMA_HEAP_FORCE,
					  &f->heap),
			 0);
	assert_int_equal(pma_root(f->heap, NBLOCKS * 8, &root), 0);
	f->slots = pma_direct(f->heap, root);
}

static unsigned char pat(uint64_t i, size_t j)
{
	return (unsigned char)(i * 37 + j + 1);
}

/* n blocks of size into slots, each filled with its pattern */
static void fill(struct fx *f, unsigned n, size_t size)
{
	unsigned char *p;
	unsigned i;

	for (i = 0; i < n; i++) {
		assert_int_equal(pma_malloc_to(f->heap, size, &f->slots[i]), 0);
		p = pma_direct(f->heap, f->slots[i]);
		memset(p, pat(i, 0), size);
	}
}

static void check_kept(struct fx *f, unsigned n, size_t size)
{
	unsigned char *p;
	unsigned i;
	size_t j;

	for (i = 0; i < n; i++) {
		if (!f->slots[i])
			continue;
		assert_true(pma_usable_size(f->heap, f->slots[i]) >= size);
		p = pma_direct(f->heap, f->slots[i]);
		for (j = 0; j < size; j++)
			assert_int_equal(p[j], pat(i, 0));
	}
}

static uint64_t file_blocks(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (uint64_t)st.st_blocks * 512;
}

/* slabs emptied since open and slabs found empty at open (not loaded)
 * are released; the logs truncated; holes punched; blocks intact */
static void test_compact_releases_and_punches(void **state)
{
	struct pma_compact_report plan, r;
	struct pma_heap_stats st0, st1;
	struct fx *f = *state;
	unsigned i;

	test_cfg.slab_keep = 2; /* normal checkpoints keep every empty slab */
	fx_create(f);
	fill(f, NBLOCKS, 100);
	for (i = 0; i < NBLOCKS; i++)
		if (i % 2000)
			assert_int_equal(pma_free_from(f->heap, &f->slots[i]),
					 0);
	/* half of the empty slabs stay unloaded across a reopen */
	pma_heap_close(f->heap);
	fx_open(f, 0);
	assert_int_equal(pma_heap_stats(f->heap, &st0), 0);
	assert_int_equal(pma_heap_compact_plan(f->heap, &plan), 0);
	assert_int_equal(pma_heap_compact(f->heap, &r), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st1), 0);
	/* 20000 blocks of 128 B in ~40 slabs, 10 kept blocks */
	assert_true(r.slabs_released >= 25);
	assert_int_equal(r.slabs_released, plan.slabs_released);
	assert_int_equal(r.free_runs_after, plan.free_runs_after);
	assert_int_equal(r.largest_free_after, plan.largest_free_after);
	assert_int_equal(r.punched_bytes, plan.punched_bytes);
	assert_true(r.largest_free_after > r.largest_free_before);
	assert_int_equal(r.log_records_after, 0);
	assert_int_equal(st1.log_records, 0);
	assert_int_equal(r.punched, 1);
	assert_true(r.file_bytes_after < r.file_bytes_before);
	assert_int_equal(r.file_bytes_after, file_blocks(f->path));
	assert_true(r.reclaimed_bytes >= r.slabs_released * PMA_CHUNK);
	assert_true(st1.footprint_bytes <
		    st0.footprint_bytes - r.slabs_released * PMA_CHUNK + 1);
	check_kept(f, NBLOCKS, 100);
	/* the punched pages are used again, and a reopen sees it all */
	fill(f, 1000, 3000);
	pma_heap_close(f->heap);
	fx_open(f, 0);
	check_kept(f, 1000, 3000);
}

/* the peak stays, the footprint follows what is held */
static void test_peak_footprint(void **state)
{
	struct pma_heap_stats a, b, c;
	struct fx *f = *state;
	unsigned i;

	test_cfg.slab_keep = 0;
	fx_create(f);
	assert_int_equal(pma_heap_stats(f->heap, &a), 0);
	assert_true(a.meta_bytes > 0 && a.footprint_bytes > a.meta_bytes);
	assert_int_equal(a.peak_footprint_bytes, a.footprint_bytes);
	for (i = 0; i < 40; i++)
		assert_int_equal(
			pma_malloc_to(f->heap, 256 << 10, &f->slots[i]), 0);
	assert_int_equal(pma_heap_stats(f->heap, &b), 0);
	assert_true(b.footprint_bytes >= a.footprint_bytes + 40 * (256 << 10));
	assert_int_equal(b.peak_footprint_bytes, b.footprint_bytes);
	for (i = 0; i < 40; i++)
		assert_int_equal(pma_free_from(f->heap, &f->slots[i]), 0);
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	assert_int_equal(pma_heap_stats(f->heap, &c), 0);
	assert_int_equal(c.footprint_bytes, a.footprint_bytes);
	assert_int_equal(c.peak_footprint_bytes, b.peak_footprint_bytes);
}

/* read-only: compact is -EROFS, the plan works and writes nothing */
static void test_compact_rdonly(void **state)
{
	struct pma_compact_report r;
	struct fx *f = *state;

	fx_create(f);
	fill(f, 100, 64);
	pma_heap_close(f->heap);
	f->heap = NULL;
	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &f->heap), 0);
	assert_int_equal(pma_heap_compact(f->heap, &r), -EROFS);
	assert_int_equal(pma_heap_compact_plan(f->heap, &r), 0);
	assert_int_equal(r.slabs_released, 0);
	assert_true(r.largest_free_after > 0);
}

/* a version 5 heap has no SLAB_FREE: its empty slabs stay, said in the
 * note; holes are still punched in its free runs */
static void test_compact_old_layout(void **state)
{
	struct pma_compact_report r;
	struct fx *f = *state;
	unsigned i;

	test_cfg.format_version = 5;
	fx_create(f);
	fill(f, 2000, 100);
	for (i = 0; i < 2000; i++)
		assert_int_equal(pma_free_from(f->heap, &f->slots[i]), 0);
	assert_int_equal(pma_heap_compact(f->heap, &r), 0);
	assert_int_equal(r.slabs_released, 0);
	assert_non_null(strstr(r.note, "layout version 5"));
	assert_true(r.punched_bytes > 0);
}

/* ------------------------------------------------------------ threads */

#define TSLOTS 2000
#define TOPS 40000

struct worker {
	struct fx *f;
	unsigned first; /* its slots: [first, first + TSLOTS) */
	uint64_t gen[TSLOTS];
	int failed;
	_Atomic int done;
};

static size_t tsize(unsigned s)
{
	return s % 9 == 4 ? 20000 + s * 13 : 32 + s % 900;
}

/* check and free every block of w */
static void worker_free_all(struct worker *w)
{
	unsigned char *p;
	uint64_t *slot;
	unsigned s;

	for (s = 0; s < TSLOTS && !w->failed; s++) {
		slot = &w->f->slots[w->first + s];
		if (!*slot)
			continue;
		p = pma_direct(w->f->heap, *slot);
		if (p[0] != (unsigned char)w->gen[s] ||
		    p[tsize(s) - 1] != (unsigned char)w->gen[s] ||
		    pma_free_from(w->f->heap, slot))
			w->failed = 3;
	}
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	uint64_t rnd = w->first + 99, *slot;
	unsigned char *p;
	unsigned i, s;

	for (i = 0; i < TOPS && !w->failed; i++) {
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		s = (unsigned)(rnd % TSLOTS);
		/* now and then free everything: slabs become empty */
		if (i % 10000 == 4999)
			worker_free_all(w);
		slot = &w->f->slots[w->first + s];
		if (*slot) {
			p = pma_direct(w->f->heap, *slot);
			if (p[0] != (unsigned char)w->gen[s] ||
			    p[tsize(s) - 1] != (unsigned char)w->gen[s] ||
			    pma_free_from(w->f->heap, slot))
				w->failed = 1;
			continue;
		}
		if (pma_malloc_to(w->f->heap, tsize(s), slot)) {
			w->failed = 2;
			break;
		}
		w->gen[s] = i + 1;
		p = pma_direct(w->f->heap, *slot);
		memset(p, (unsigned char)w->gen[s], tsize(s));
	}
	atomic_store(&w->done, 1);
	return NULL;
}

/* compaction in a loop while two threads allocate, check and free:
 * nothing a thread wrote changes, nothing is lost */
static void test_compact_concurrent(void **state)
{
	struct worker w[2] = { { 0 } };
	struct pma_compact_report r;
	struct fx *f = *state;
	uint64_t released = 0, punched = 0, named = 0;
	pthread_t t[2];
	unsigned i, s, rounds = 0;
	unsigned char *p;

	test_cfg.slab_keep = 2;
	fx_create(f);
	for (i = 0; i < 2; i++) {
		w[i].f = f;
		w[i].first = i * TSLOTS;
		assert_int_equal(pthread_create(&t[i], NULL, worker_run, &w[i]),
				 0);
	}
	while (rounds < 5 || !atomic_load(&w[0].done) ||
	       !atomic_load(&w[1].done)) {
		assert_int_equal(pma_heap_compact(f->heap, &r), 0);
		released += r.slabs_released;
		punched += r.punched_bytes;
		rounds++;
	}
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(w[0].failed, 0);
	assert_int_equal(w[1].failed, 0);
	assert_int_equal(pma_heap_compact(f->heap, &r), 0);
	punched += r.punched_bytes;
	assert_true(punched > 0);
	for (i = 0; i < 2; i++)
		for (s = 0; s < TSLOTS; s++) {
			if (!f->slots[w[i].first + s])
				continue;
			named++;
			p = pma_direct(f->heap, f->slots[w[i].first + s]);
			assert_int_equal(p[0], (unsigned char)w[i].gen[s]);
			assert_int_equal(p[tsize(s) - 1],
					 (unsigned char)w[i].gen[s]);
		}
	print_message("# %u compactions during the run: %llu slabs "
		      "released, %llu bytes punched; %llu blocks named\n",
		      rounds, (unsigned long long)released,
		      (unsigned long long)punched, (unsigned long long)named);
	pma_heap_close(f->heap);
	fx_open(f, 0);
	for (i = 0; i < 2; i++)
		for (s = 0; s < TSLOTS; s++)
			if (f->slots[w[i].first + s])
				assert_true(pma_usable_size(
						    f->heap,
						    f->slots[w[i].first + s]) >=
					    tsize(s));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_compact_releases_and_punches, fx_setup,
			fx_teardown),
		cmocka_unit_test_setup_teardown(test_peak_footprint, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_compact_rdonly, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(test_compact_old_layout,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_compact_concurrent,
						fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
