/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Lazy slab loading (lib/pmalloc/lazy.c): open reads only the page map,
 * whose slab entries carry class and owner; a slab is loaded at its first
 * use. The fixture fills a 72 MiB heap (4 arenas) with blocks of 4 classes
 * from every arena, frees some (own and remote frees: partial slabs), and
 * reopens it; then: nothing is loaded at open, stats are unchanged, frees
 * into unloaded slabs work and catch double frees, allocations fill the
 * old slabs before a new one is made, two threads load one slab at once,
 * read-only opens and corrupt page map entries.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "pmalloc.h"
#include "pmalloc/internal.h"
#include "../lib/test-cfg.h"
#include "../lib/test-dir.h"
#include "pmem/pm.h"
#include "util/crc.h"

#define MIB (1024ULL * 1024)
#define HEAP_SIZE (72 * MIB) /* 4 arenas */
#define NDEST 8192
#define NCLS 4
#define MAXA 16

static const size_t cls_size[NCLS] = { 500, 1000, 4000, 14000 };

struct fx {
	char dir[64];
	char path[96];
	struct pma_heap *heap;
	uint64_t root;
	uint64_t *dests; /* NDEST words in the pool */
	unsigned narenas;
	/* dests[base[a][c] .. + count[c]) were allocated by arena a */
	unsigned base[MAXA][NCLS];
	unsigned count[NCLS];
	unsigned next; /* first unused dest */
	uint64_t offs[NDEST]; /* what each dest held after the fill */
	unsigned char cls_of[NDEST]; /* index into cls_size */
	uint64_t slabs; /* slabs after the fill */
	struct pma_heap_stats st; /* stats after the fill */
};

static uint32_t nblocks_of(unsigned c)
{
	return pma_class_nblocks(pma_class_of(cls_size[c], 1));
}

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	/* these tests count slabs: none is released when it is empty
	 * (test-pmalloc tests that) */
	test_cfg.slab_keep = UINT_MAX;
	test_dir_make(f->dir, sizeof(f->dir), f->path, sizeof(f->path),
		      "test-lazy", "heap");
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

static uint64_t count_slabs(const struct pma_heap_stats *st)
{
	uint64_t n = 0;
	unsigned c;

	for (c = 0; c < st->nclasses; c++)
		n += st->classes[c].slabs;
	return n;
}

static void stats_equal(const struct pma_heap_stats *a,
			const struct pma_heap_stats *b)
{
	unsigned c;

	assert_int_equal(a->used_bytes, b->used_bytes);
	assert_int_equal(a->free_bytes, b->free_bytes);
	assert_int_equal(a->slab_bytes, b->slab_bytes);
	assert_int_equal(a->extents, b->extents);
	assert_int_equal(a->largest_free, b->largest_free);
	for (c = 0; c < a->nclasses; c++) {
		assert_int_equal(a->classes[c].slabs, b->classes[c].slabs);
		assert_int_equal(a->classes[c].blocks, b->classes[c].blocks);
		assert_int_equal(a->classes[c].used, b->classes[c].used);
	}
}

/* ------------------------------------------------------------ threads on
 * a chosen arena (pma_arena_bind) */

typedef int (*job_fn)(struct fx *f, unsigned arena, void *arg);

struct job {
	struct fx *f;
	unsigned arena;
	job_fn fn;
	void *arg;
	int bound;
	int rc;
};

static void *job_main(void *p)
{
	struct job *j = p;

	if (pma_arena_bind(j->f->heap, j->arena)->id != j->arena)
		return NULL;
	j->bound = 1;
	j->rc = j->fn(j->f, j->arena, j->arg);
	return NULL;
}

static void run_on(struct fx *f, unsigned arena, job_fn fn, void *arg)
{
	struct job j = { f, arena, fn, arg, 0, 0 };
	pthread_t tid;

	assert_int_equal(pthread_create(&tid, NULL, job_main, &j), 0);
	assert_int_equal(pthread_join(tid, NULL), 0);
	assert_true(j.bound);
	assert_int_equal(j.rc, 0);
}

/* ------------------------------------------------------------ the fill */

static int fill_arena(struct fx *f, unsigned a, void *arg)
{
	unsigned c, i, d;

	(void)arg;
	for (c = 0; c < NCLS; c++)
		for (i = 0; i < f->count[c]; i++) {
			d = f->base[a][c] + i;
			if (pma_malloc_to(f->heap, cls_size[c], &f->dests[d]))
				return -1;
			f->offs[d] = f->dests[d];
		}
	/* own frees: every 4th block from 1 */
	for (c = 0; c < NCLS; c++)
		for (i = 1; i < f->count[c]; i += 4)
			if (pma_free_from(f->heap,
					  &f->dests[f->base[a][c] + i]))
				return -2;
	return 0;
}

/* remote frees: every 4th block from 2 of the previous arena's */
static int free_remote(struct fx *f, unsigned a, void *arg)
{
	unsigned prev = (a + f->narenas - 1) % f->narenas, c, i;

	(void)arg;
	for (c = 0; c < NCLS; c++)
		for (i = 2; i < f->count[c]; i += 4)
			if (pma_free_from(f->heap,
					  &f->dests[f->base[prev][c] + i]))
				return -1;
	return 0;
}

static void reopen(struct fx *f)
{
	uint64_t root;

	pma_heap_close(f->heap);
	f->heap = NULL;
	assert_int_equal(test_heap_open(f->path, 0, &f->heap), 0);
	assert_int_equal(pma_root(f->heap, NDEST * 8, &root), 0);
	assert_int_equal(root, f->root);
	f->dests = pma_direct(f->heap, f->root);
}

/* every arena: 3.5 slabs of each class, a quarter freed by the owner and
 * a quarter by the next arena; stats; reopen */
static void fill(struct fx *f)
{
	unsigned a, c;

	assert_int_equal(test_heap_create(f->path, HEAP_SIZE, 0, &f->heap), 0);
	assert_int_equal(pma_root(f->heap, NDEST * 8, &f->root), 0);
	f->dests = pma_direct(f->heap, f->root);
	f->narenas = f->heap->geom.narenas;
	assert_true(f->narenas >= 4 && f->narenas <= MAXA);
	for (c = 0; c < NCLS; c++)
		f->count[c] = nblocks_of(c) * 7 / 2;
	for (a = 0; a < f->narenas; a++)
		for (c = 0; c < NCLS; c++) {
			f->base[a][c] = f->next;
			memset(&f->cls_of[f->next], (int)c, f->count[c]);
			f->next += f->count[c];
		}
	assert_true(f->next <= NDEST / 2);
	for (a = 0; a < f->narenas; a++)
		run_on(f, a, fill_arena, NULL);
	for (a = 0; a < f->narenas; a++)
		run_on(f, a, free_remote, NULL);
	assert_int_equal(pma_heap_stats(f->heap, &f->st), 0);
	f->slabs = count_slabs(&f->st);
	assert_int_equal(f->slabs, (uint64_t)f->narenas * NCLS * 4);
	reopen(f);
}

/* ------------------------------------------------------------ tests */

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

/* the block size of dest d's class */
static size_t bsize(const struct fx *f, unsigned d)
{
	return pma_class_size(pma_class_of(cls_size[f->cls_of[d]], 1));
}

/* (i) open loads no slab; (v) stats see the unloaded slabs and equal the
 * stats before the reopen, before and after every slab is loaded */
static void test_open_loads_nothing(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats st;
	uint64_t c;
	unsigned d;

	fill(f);
	assert_int_equal(pma_lazy_unloaded(f->heap), f->slabs);
	for (c = 0; c < f->heap->nchunks; c++)
		assert_null(atomic_load(&f->heap->slabs[c]));
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	stats_equal(&st, &f->st);
	assert_int_equal(pma_lazy_unloaded(f->heap), f->slabs);
	/* usable_size loads the slab of every block it is asked about */
	for (d = 0; d < f->next; d++)
		assert_int_equal(pma_usable_size(f->heap, f->offs[d]),
				 f->dests[d] ? bsize(f, d) : 0);
	assert_int_equal(pma_lazy_unloaded(f->heap), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	stats_equal(&st, &f->st);
}

/* (ii) frees into unloaded slabs (own and remote), double frees of a
 * block freed now and of one freed before the reopen */
static int free_some(struct fx *f, unsigned a, void *arg)
{
	unsigned c, i, d;

	(void)arg;
	/* arena a frees the live blocks of arena (a + 2)'s class a % NCLS
	 * and its own of class (a + 1) % NCLS */
	for (i = 0; i < f->count[a % NCLS]; i++) {
		d = f->base[(a + 2) % f->narenas][a % NCLS] + i;
		if (f->dests[d] && pma_free_from(f->heap, &f->dests[d]))
			return -1;
	}
	c = (a + 1) % NCLS;
	for (i = 0; i < f->count[c]; i++) {
		d = f->base[a][c] + i;
		if (f->dests[d] && pma_free_from(f->heap, &f->dests[d]))
			return -2;
	}
	return 0;
}

static void test_free_unloaded(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats st;
	uint64_t *spare, before;
	unsigned d, a, c;

	fill(f);
	spare = &f->dests[NDEST - 1];
	/* a live block: freed once, then again through a copy */
	d = f->base[1][2];
	assert_int_not_equal(f->dests[d], 0);
	before = pma_lazy_unloaded(f->heap);
	assert_int_equal(pma_free_from(f->heap, &f->dests[d]), 0);
	assert_int_equal(f->dests[d], 0);
	assert_int_equal(pma_lazy_unloaded(f->heap), before - 1);
	*spare = f->offs[d];
	assert_int_equal(pma_free_from(f->heap, spare), -EINVAL);
	assert_non_null(strstr(pma_errormsg(), "double free"));
	/* a block freed before the reopen, in a slab not loaded yet */
	d = f->base[2][3] + 1;
	assert_int_equal(f->dests[d], 0);
	*spare = f->offs[d];
	assert_int_equal(pma_free_from(f->heap, spare), -EINVAL);
	assert_non_null(strstr(pma_errormsg(), "double free"));
	assert_int_equal(pma_lazy_unloaded(f->heap), before - 2);
	*spare = 0;
	for (a = 0; a < f->narenas; a++)
		run_on(f, a, free_some, NULL);
	/* what is left live: exactly the blocks still named */
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	before = 0;
	for (d = 0; d < f->next; d++)
		before += f->dests[d] ? bsize(f, d) : 0;
	assert_int_equal(st.used_bytes, before + NDEST * 8);
	for (c = 0; c < NCLS; c++)
		assert_int_equal(
			st.classes[pma_class_of(cls_size[c], 1)].slabs,
			f->st.classes[pma_class_of(cls_size[c], 1)].slabs);
	reopen(f);
	assert_int_equal(pma_lazy_unloaded(f->heap), f->slabs);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.used_bytes, before + NDEST * 8);
	for (d = 0; d < f->next; d++)
		assert_int_equal(pma_usable_size(f->heap, f->offs[d]),
				 f->dests[d] ? bsize(f, d) : 0);
}

/* (iii) allocations fill the free blocks of unloaded slabs (and of slabs
 * loaded meanwhile by a lookup) before a new slab is made */
static int alloc_n(struct fx *f, unsigned a, void *arg)
{
	const unsigned *n = arg; /* per class */
	unsigned c, i;

	(void)a;
	for (c = 0; c < NCLS; c++)
		for (i = 0; i < n[c]; i++)
			if (f->next >= NDEST - 1 ||
			    pma_malloc_to(f->heap, cls_size[c],
					  &f->dests[f->next++]))
				return -1;
	return 0;
}

static void test_alloc_reuses_unloaded(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats st;
	unsigned a, c, i, d, nfree[MAXA][NCLS], one[NCLS];
	uint64_t loaded;

	fill(f);
	for (a = 0; a < f->narenas; a++)
		for (c = 0; c < NCLS; c++) {
			nfree[a][c] = 4 * nblocks_of(c);
			for (i = 0; i < f->count[c]; i++)
				nfree[a][c] -= !!f->dests[f->base[a][c] + i];
		}
	/* arena 1's slabs are loaded by lookups (pma_heap_slab_at), not by
	 * their owner: they are on no partial list yet */
	for (c = 0; c < NCLS; c++)
		for (i = 0; i < f->count[c]; i++) {
			d = f->base[1][c] + i;
			assert_int_equal(pma_usable_size(f->heap, f->offs[d]),
					 f->dests[d] ? bsize(f, d) : 0);
		}
	loaded = f->slabs - pma_lazy_unloaded(f->heap);
	assert_int_equal(loaded, NCLS * 4);
	for (a = 0; a < f->narenas; a++)
		run_on(f, a, alloc_n, nfree[a]);
	assert_int_equal(pma_lazy_unloaded(f->heap), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(count_slabs(&st), f->slabs); /* no new slab */
	for (c = 0; c < NCLS; c++) {
		i = pma_class_of(cls_size[c], 1);
		assert_int_equal(st.classes[i].used, st.classes[i].blocks);
	}
	/* now full: one more block per class and arena makes a new slab */
	for (c = 0; c < NCLS; c++)
		one[c] = 1;
	for (a = 0; a < f->narenas; a++)
		run_on(f, a, alloc_n, one);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(count_slabs(&st),
			 f->slabs + (uint64_t)f->narenas * NCLS);
}

/* (iv) two threads free blocks of the same unloaded slabs at once: both
 * look the slab up, one installs its copy, the other uses it */
struct racer {
	struct fx *f;
	unsigned parity;
	pthread_barrier_t *barrier;
	int rc;
};

static void *racer_main(void *arg)
{
	struct racer *r = arg;
	struct fx *f = r->f;
	unsigned a, c, s, i, d;

	for (c = 0; c < NCLS; c++)
		for (a = 0; a < f->narenas; a++)
			for (s = 0; s < 4; s++) {
				pthread_barrier_wait(r->barrier);
				for (i = s * nblocks_of(c);
				     i < (s + 1) * nblocks_of(c) &&
				     i < f->count[c];
				     i++) {
					d = f->base[a][c] + i;
					if (i % 2 == r->parity && f->dests[d] &&
					    pma_free_from(f->heap,
							  &f->dests[d]))
						r->rc = -1;
				}
			}
	return NULL;
}

static void test_concurrent_load(void **state)
{
	struct fx *f = *state;
	pthread_barrier_t barrier;
	struct racer r[2];
	pthread_t tid[2];
	struct pma_heap_stats st;
	unsigned t;

	fill(f);
	pthread_barrier_init(&barrier, NULL, 2);
	for (t = 0; t < 2; t++) {
		r[t] = (struct racer){ f, t, &barrier, 0 };
		assert_int_equal(
			pthread_create(&tid[t], NULL, racer_main, &r[t]), 0);
	}
	for (t = 0; t < 2; t++) {
		assert_int_equal(pthread_join(tid[t], NULL), 0);
		assert_int_equal(r[t].rc, 0);
	}
	pthread_barrier_destroy(&barrier);
	/* each slab was loaded exactly once, every block is free */
	assert_int_equal(pma_lazy_unloaded(f->heap), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(count_slabs(&st), f->slabs);
	assert_int_equal(st.used_bytes, NDEST * 8); /* the root */
	reopen(f);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.used_bytes, NDEST * 8);
	assert_int_equal(count_slabs(&st), f->slabs);
}

/* read-only open after a crash with pending frees: stats and
 * usable_size from the replayed DRAM copies and unloaded PM slabs */
static void test_rdonly_lazy(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats ro, rw;
	int status;
	unsigned d;
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		fill(f);
		/* pending (un-checkpointed) frees of loaded slabs, then crash */
		for (d = 0; d < f->next; d += 3)
			if (f->dests[d] && pma_free_from(f->heap, &f->dests[d]))
				_exit(10);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &f->heap), 0);
	assert_true(pma_lazy_unloaded(f->heap) > 0);
	assert_int_equal(pma_heap_stats(f->heap, &ro), 0);
	assert_int_equal(pma_root(f->heap, 8, &f->root), 0);
	f->dests = pma_direct(f->heap, f->root);
	for (d = 0; d < NDEST; d++)
		if (f->dests[d])
			assert_true(pma_usable_size(f->heap, f->dests[d]) >=
				    500);
	pma_heap_close(f->heap);
	f->heap = NULL;
	assert_int_equal(test_heap_open(f->path, 0, &f->heap), 0);
	assert_int_equal(pma_heap_stats(f->heap, &rw), 0);
	assert_true(pma_lazy_unloaded(f->heap) > 0);
	stats_equal(&ro, &rw);
}

/* ------------------------------------------------------------ format */

static void close_heap(struct fx *f)
{
	pma_heap_close(f->heap);
	f->heap = NULL;
}

/* heaps of layout versions 1 (no class/owner in the page map) and 2 (no
 * EXT_LFREE records) are refused, read-only too */
static void test_version1(void **state)
{
	struct fx *f = *state;
	struct pma_heap_hdr *hdr;
	char want[64];
	uint32_t v;

	for (v = 1; v <= 2; v++) {
		assert_int_equal(test_heap_create(f->path, HEAP_SIZE,
						  PMA_HEAP_FORCE, &f->heap),
				 0);
		hdr = f->heap->hdr;
		assert_int_equal(hdr->version, PMA_HEAP_VERSION);
		hdr->version = v;
		hdr->checksum = util_crc32c(0, hdr, PMA_HDR_CSUM_LEN);
		pm_persist(f->heap->map, hdr, 256);
		close_heap(f);
		assert_int_equal(test_heap_open(f->path, 0, &f->heap),
				 -EPROTONOSUPPORT);
		snprintf(want, sizeof(want), "heap version %u is not", v);
		assert_non_null(strstr(pma_errormsg(), want));
		assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY,
						&f->heap),
				 -EPROTONOSUPPORT);
	}
}

/* edit the PM page map entry of the first slab (and its header) of the
 * closed heap through the pool: the heap may not open any more */
struct pm_edit {
	struct pool *pool;
	struct pm_map *map;
	uint64_t *entry;
	uint64_t page; /* the entry's page */
	struct pma_slab_hdr *sh;
};

static void edit_begin(struct fx *f, struct pm_edit *ed)
{
	const struct pool_region *r;
	struct pma_heap_hdr *hdr;
	uint64_t *pmap, p;

	memset(ed, 0, sizeof(*ed));
	assert_int_equal(pool_open(f->path, 0, &ed->pool), 0);
	r = pool_region_find(ed->pool, POOL_REGION_PMALLOC, 0);
	assert_non_null(r);
	ed->map = pool_part_map(ed->pool, 0);
	hdr = (void *)((char *)pm_map_addr(ed->map) + r->off);
	pmap = (void *)((char *)hdr + hdr->pmap_off);
	for (p = 0; p < hdr->npages && !ed->entry; p++)
		if (pma_pmap_kind(pmap[p]) == PMA_PMAP_SLAB)
			ed->entry = &pmap[p];
	assert_non_null(ed->entry);
	ed->page = (uint64_t)(ed->entry - pmap);
	ed->sh = (void *)((char *)hdr + hdr->data_off +
			  (uint64_t)(ed->entry - pmap) * PMA_PAGE);
}

static void edit_end(struct pm_edit *ed)
{
	pm_persist(ed->map, ed->entry, 8);
	pm_persist(ed->map, ed->sh, sizeof(*ed->sh));
	pool_close(&ed->pool);
}

/* a slab entry's class and owner are checked at open; the slab header
 * is checked against its entry when the slab is loaded */
static void test_corrupt_entry(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats st;
	struct pm_edit ed;
	uint64_t good, dest = 0;
	unsigned cls = pma_class_of(100, 1);

	assert_int_equal(test_heap_create(f->path, HEAP_SIZE, 0, &f->heap), 0);
	assert_int_equal(pma_malloc_to(f->heap, 100, &f->root), 0);
	close_heap(f);
	edit_begin(f, &ed);
	good = *ed.entry;
	/* a version 7 entry: with its check (layout.h) */
	assert_int_equal(good,
			 pma_check_pmap(pma_pmap_make_slab(cls, 0), ed.page));
	assert_int_equal(pma_pmap_cls(good), cls);
	assert_int_equal(pma_pmap_owner(good), 0);
	assert_int_equal(pma_pmap_npages(good), PMA_CHUNK_PAGES);
	/* owner >= narenas, with a valid check */
	*ed.entry = pma_check_pmap(pma_pmap_make_slab(cls, 63), ed.page);
	edit_end(&ed);
	assert_int_equal(test_heap_open(f->path, 0, &f->heap), -EIO);
	assert_non_null(strstr(pma_errormsg(), "corrupt page map entry"));
	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &f->heap),
			 -EIO);

	edit_begin(f, &ed);
	/* no such class */
	*ed.entry =
		pma_check_pmap(pma_pmap_make_slab(PMA_NCLASSES, 0), ed.page);
	edit_end(&ed);
	assert_int_equal(test_heap_open(f->path, 0, &f->heap), -EIO);
	assert_non_null(strstr(pma_errormsg(), "corrupt page map entry"));

	/* a valid entry whose slab header says another class: open does not
	 * read the header; loading the slab fails */
	edit_begin(f, &ed);
	*ed.entry = good;
	ed.sh->cls = (uint16_t)(cls + 1);
	edit_end(&ed);
	assert_int_equal(test_heap_open(f->path, 0, &f->heap), 0);
	assert_int_equal(pma_lazy_unloaded(f->heap), 1);
	assert_int_equal(pma_heap_stats(f->heap, &st), -EIO);
	assert_non_null(strstr(pma_errormsg(), "corrupt slab"));
	assert_int_equal(pma_usable_size(f->heap, f->root), 0);
	assert_int_equal(pma_malloc_to(f->heap, 100, &dest), -EIO);
	assert_non_null(strstr(pma_errormsg(), "corrupt slab"));
	assert_int_equal(dest, 0);
	assert_int_equal(pma_lazy_unloaded(f->heap), 1);
	close_heap(f);

	edit_begin(f, &ed);
	ed.sh->cls = (uint16_t)cls; /* repaired */
	edit_end(&ed);
	assert_int_equal(test_heap_open(f->path, 0, &f->heap), 0);
	assert_int_equal(pma_usable_size(f->heap, f->root),
			 pma_class_size(cls));
	assert_int_equal(pma_lazy_unloaded(f->heap), 0);
}

/* a class of the 16-byte steps (layout 11) in a layout 10 heap's page
 * map: no class of that heap, however valid its check */
static void test_fine_class_old_layout(void **state)
{
	struct fx *f = *state;
	uint32_t saved = test_cfg.format_version;
	unsigned fine = pma_class_of(100, 1);
	struct pm_edit ed;
	uint64_t good;

	assert_true(fine >= PMA_NCLASSES_V10);
	test_cfg.format_version = PMA_HEAP_VERSION_XFREE;
	assert_int_equal(test_heap_create(f->path, HEAP_SIZE, 0, &f->heap), 0);
	test_cfg.format_version = saved;
	assert_int_equal(pma_malloc_to(f->heap, 100, &f->root), 0);
	/* layout 10: 64-byte steps */
	assert_int_equal(pma_usable_size(f->heap, f->root), 128);
	close_heap(f);
	edit_begin(f, &ed);
	good = *ed.entry;
	*ed.entry = pma_check_pmap(pma_pmap_make_slab(fine, 0), ed.page);
	edit_end(&ed);
	assert_int_equal(test_heap_open(f->path, 0, &f->heap), -EIO);
	assert_non_null(strstr(pma_errormsg(), "corrupt page map entry"));
	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &f->heap),
			 -EIO);
	edit_begin(f, &ed);
	*ed.entry = good;
	edit_end(&ed);
	assert_int_equal(test_heap_open(f->path, 0, &f->heap), 0);
	assert_int_equal(pma_usable_size(f->heap, f->root), 128);
	close_heap(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_open_loads_nothing),    T(test_free_unloaded),
		T(test_alloc_reuses_unloaded), T(test_concurrent_load),
		T(test_rdonly_lazy),	       T(test_version1),
		T(test_corrupt_entry),	       T(test_fine_class_old_layout),
	};

	/* real clwb + sfence on tmpfs (set before the first mapping) */
	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
