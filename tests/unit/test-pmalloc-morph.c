/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Slab morphing (layout version 9, doc/morphing.md): the state machine
 * (plain -> mixed -> plain), its persistence across reopen and kill, the
 * off switch, and morphs under concurrent allocation and remote frees.
 * Every check looks at the blocks the dest words name: each live, none
 * overlapping another, and the class counts of pma_heap_stats.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
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
#include "pmalloc/fsck.h"
#include "../lib/test-cfg.h"
#include "../lib/test-dir.h"

#define MIB (1024ULL * 1024)
#define HEAP_SIZE (32 * MIB)
#define NDEST 8192

struct fx {
	char dir[64];
	char path[96];
	struct pma_heap *heap;
	uint64_t *dests; /* NDEST words in the root object */
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	test_cfg_reset();
	test_cfg.format_version = PMA_HEAP_VERSION;
	assert_int_equal(pma_config_set_morph(&test_cfg, 20, 1), 0);
	test_dir_make(f->dir, sizeof(f->dir), f->path, sizeof(f->path),
		      "pma-morph", "heap");
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

static void fx_root(struct fx *f)
{
	uint64_t root;

	assert_int_equal(pma_root(f->heap, NDEST * 8, &root), 0);
	f->dests = pma_direct(f->heap, root);
	assert_non_null(f->dests);
}

static void fx_create(struct fx *f)
{
	assert_int_equal(test_heap_create(f->path, HEAP_SIZE, 0, &f->heap), 0);
	fx_root(f);
}

static void fx_reopen(struct fx *f)
{
	pma_heap_close(f->heap);
	f->heap = NULL;
	assert_int_equal(test_heap_open(f->path, 0, &f->heap), 0);
	fx_root(f);
}

struct blk {
	uint64_t off, size;
};

static int blk_cmp(const void *a, const void *b)
{
	const struct blk *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

struct walk {
	struct blk *b;
	unsigned n, cap;
};

static int walk_one(uint64_t off, uint64_t size, void *arg)
{
	struct walk *w = arg;

	if (w->n == w->cap)
		return -ENOSPC;
	w->b[w->n].off = off;
	w->b[w->n++].size = size;
	return 0;
}

/* pma_block_foreach lists exactly the n named blocks b (sorted) and the
 * root object, each with its usable size */
static void check_walk(struct fx *f, const struct blk *b, unsigned n)
{
	struct walk w = { .cap = n + 2 };
	uint64_t root = pma_offset(f->heap, f->dests);
	unsigned i, j = 0;

	w.b = calloc(w.cap, sizeof(*w.b));
	assert_non_null(w.b);
	assert_int_equal(pma_block_foreach(f->heap, walk_one, &w), 0);
	assert_int_equal(w.n, n + 1);
	qsort(w.b, w.n, sizeof(*w.b), blk_cmp);
	for (i = 0; i < w.n; i++) {
		if (w.b[i].off == root) {
			assert_true(w.b[i].size >= (uint64_t)NDEST * 8);
			continue;
		}
		assert_true(j < n);
		assert_int_equal(w.b[i].off, b[j].off);
		assert_int_equal(w.b[i].size, b[j].size);
		j++;
	}
	assert_int_equal(pma_block_foreach(f->heap, NULL, NULL), -EINVAL);
	free(w.b);
}

/* every dest names a live block, no two overlap; the named blocks of
 * each class match the stats' used counts, and pma_block_foreach lists
 * them (and the root); returns the named blocks */
static unsigned check_blocks(struct fx *f)
{
	struct blk *b = calloc(NDEST, sizeof(*b));
	uint64_t used[PMA_NCLASSES] = { 0 };
	struct pma_heap_stats st;
	unsigned i, n = 0;

	assert_non_null(b);
	for (i = 0; i < NDEST; i++) {
		if (!f->dests[i])
			continue;
		b[n].off = f->dests[i];
		b[n].size = pma_usable_size(f->heap, f->dests[i]);
		if (!b[n].size)
			fail_msg("dest %u: 0x%llx is not live", i,
				 (unsigned long long)f->dests[i]);
		if (b[n].size <= PMA_SMALL_MAX)
			used[pma_class_of(b[n].size, 1)]++;
		n++;
	}
	qsort(b, n, sizeof(*b), blk_cmp);
	for (i = 1; i < n; i++)
		if (b[i - 1].off + b[i - 1].size > b[i].off)
			fail_msg("0x%llx (%llu bytes) overlaps 0x%llx",
				 (unsigned long long)b[i - 1].off,
				 (unsigned long long)b[i - 1].size,
				 (unsigned long long)b[i].off);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	for (i = 0; i < PMA_NCLASSES; i++)
		if (st.classes[i].used != used[i])
			fail_msg("class %u: stats say %llu used, %llu named", i,
				 (unsigned long long)st.classes[i].used,
				 (unsigned long long)used[i]);
	check_walk(f, b, n);
	free(b);
	return n;
}

/* fill dests [lo, hi) with blocks of size */
static void fill(struct fx *f, unsigned lo, unsigned hi, size_t size)
{
	unsigned i;

	for (i = lo; i < hi; i++)
		assert_int_equal(pma_malloc_to(f->heap, size, &f->dests[i]), 0);
}

/* phase 1 of fragbench W2 in small: 100 B blocks, all but every tenth
 * freed, a checkpoint (the slabs are idle), then 130 B blocks */
static void shift(struct fx *f, unsigned n, uint64_t *ret_slabs)
{
	struct pma_heap_stats st;
	unsigned i;

	fill(f, 0, n, 100);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	*ret_slabs = st.classes[pma_class_of(100, 1)].slabs;
	for (i = 0; i < n; i++)
		if (i % 10)
			assert_int_equal(pma_free_from(f->heap, &f->dests[i]),
					 0);
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	fill(f, n, 2 * n, 130);
}

static void test_morph_cycle(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats st, st0;
	unsigned i, n = 3000;
	uint64_t slabs;

	fx_create(f);
	shift(f, n, &slabs);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_true(st.slabs_morphed > 0);
	assert_true(st.mixed_slabs > 0);
	assert_int_equal(st.classes[pma_class_of(100, 1)].used, n / 10);
	assert_int_equal(st.classes[pma_class_of(130, 1)].used, n);
	/* the 130 B blocks went into the 100 B class's slabs, mostly: fewer
	 * slabs in all than new ones alone would have needed */
	assert_true(st.classes[pma_class_of(130, 1)].slabs +
			    st.classes[pma_class_of(100, 1)].slabs <
		    slabs + n * 192 / 65536);
	check_blocks(f);
	/* persistent: the same after a checkpoint and a reopen */
	fx_reopen(f);
	assert_int_equal(pma_heap_stats(f->heap, &st0), 0);
	assert_int_equal(st0.mixed_slabs, st.mixed_slabs);
	check_blocks(f);
	/* the old blocks go: the slabs become plain */
	for (i = 0; i < n; i++)
		assert_int_equal(pma_free_from(f->heap, &f->dests[i]), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.mixed_slabs, 0);
	check_blocks(f);
	fx_reopen(f);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.mixed_slabs, 0);
	check_blocks(f);
	/* and all: the heap is empty but for the root */
	for (i = n; i < 2 * n; i++)
		assert_int_equal(pma_free_from(f->heap, &f->dests[i]), 0);
	check_blocks(f);
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	for (i = 0; i < PMA_NCLASSES; i++)
		assert_int_equal(st.classes[i].used, 0);
}

/* frees of old blocks and of new ones by their dests in a mixed slab
 * are told apart; a double free of an old block is refused */
static void test_morph_frees(void **state)
{
	struct fx *f = *state;
	uint64_t off, slabs;
	unsigned n = 1000;

	fx_create(f);
	shift(f, n, &slabs);
	off = f->dests[10];
	assert_true(pma_usable_size(f->heap, off) == 112); /* version 11 */
	assert_int_equal(pma_free_from(f->heap, &f->dests[10]), 0);
	f->dests[10] = off;
	assert_int_equal(pma_free_from(f->heap, &f->dests[10]), -EINVAL);
	f->dests[10] = 0;
	check_blocks(f);
	fx_reopen(f);
	check_blocks(f);
}

/* PMA_HEAP_NO_MORPH and a threshold of 0: no morph; a version 8 heap
 * never morphs (no record it does not know) */
static void test_morph_off(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats st;
	struct pma_config *cfg;
	uint64_t slabs;

	test_cfg.flags |= PMA_HEAP_NO_MORPH;
	fx_create(f);
	shift(f, 2000, &slabs);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.slabs_morphed, 0);
	check_blocks(f);
	pma_heap_close(f->heap);
	f->heap = NULL;
	unlink(f->path);

	assert_int_equal(pma_config_set_morph(&test_cfg, 0, 1), 0);
	fx_create(f);
	shift(f, 2000, &slabs);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.slabs_morphed, 0);
	pma_heap_close(f->heap);
	f->heap = NULL;
	unlink(f->path);

	assert_int_equal(pma_config_set_morph(&test_cfg, 20, 1), 0);
	test_cfg.flags = 0;
	test_cfg.format_version = PMA_HEAP_VERSION_LOCAL;
	fx_create(f);
	shift(f, 2000, &slabs);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.slabs_morphed, 0);
	assert_int_equal(st.layout_version, PMA_HEAP_VERSION_LOCAL);
	check_blocks(f);
	fx_reopen(f);
	check_blocks(f);

	assert_int_equal(pma_config_new(&cfg), 0);
	assert_int_equal(pma_config_set_morph(cfg, 101, 1), -EINVAL);
	assert_int_equal(pma_config_set_morph(cfg, 100, 0), 0);
	pma_config_delete(&cfg);
}

static int count_mixed(const struct pma_slab_info *s, void *arg)
{
	unsigned *n = arg;

	*n += s->old_block_size != 0;
	return 0;
}

/* pma_heap_morph with morphing off: the dry run plans what the pass
 * does and writes nothing; blocks stay named and apart; new-class blocks
 * come from the morphed slabs; bad requests fail */
static void test_morph_pass(void **state)
{
	struct fx *f = *state;
	struct pma_morph_req req = { .class_size = 144, .dry_run = 1 };
	struct pma_morph_report plan, did;
	struct pma_heap_stats st;
	unsigned i, mixed = 0;
	uint64_t slabs;

	assert_int_equal(pma_config_set_morph(&test_cfg, 0, 1), 0);
	fx_create(f);
	fill(f, 0, 2000, 100);
	for (i = 0; i < 2000; i++)
		if (i % 10)
			assert_int_equal(pma_free_from(f->heap, &f->dests[i]),
					 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	slabs = st.classes[pma_class_of(100, 1)].slabs;
	assert_true(slabs >= 3);

	assert_int_equal(pma_heap_morph(f->heap, &req, &plan), 0);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.slabs_morphed, 0);
	assert_int_equal(plan.used_pct, PMA_MORPH_PASS_PCT);
	assert_int_equal(plan.candidates, slabs);
	assert_true(plan.slabs_morphed > 0);
	assert_int_equal(plan.nmoves, 1);
	assert_int_equal(plan.moves[0].from_size, 112);
	assert_int_equal(plan.moves[0].to_size, 144);
	assert_int_equal(plan.live_bytes, 200 * 112);

	req.class_size = 100;
	assert_int_equal(pma_heap_morph(f->heap, &req, &did), -EINVAL);
	req.class_size = 144;
	req.used_pct = 101;
	assert_int_equal(pma_heap_morph(f->heap, &req, &did), -EINVAL);
	req.used_pct = 0;

	req.dry_run = 0;
	assert_int_equal(pma_heap_morph(f->heap, &req, &did), 0);
	assert_memory_equal(&plan.moves, &did.moves, sizeof(did.moves));
	assert_int_equal(plan.slabs_morphed, did.slabs_morphed);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.slabs_morphed, did.slabs_morphed);
	assert_int_equal(st.mixed_slabs, did.slabs_morphed);
	assert_int_equal(pma_slab_foreach(f->heap, count_mixed, &mixed), 0);
	assert_int_equal(mixed, did.slabs_morphed);
	check_blocks(f);
	/* 130 B blocks from the morphed slabs, none over an old block */
	fill(f, 2000, 2000 + 500, 130);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.classes[pma_class_of(130, 1)].slabs,
			 did.slabs_morphed);
	check_blocks(f);
	fx_reopen(f);
	check_blocks(f);
	assert_int_equal(pma_heap_morph(f->heap, &req, &did), 0);
	assert_int_equal(did.slabs_morphed, 0);

	/* read-only: only the dry run */
	pma_heap_close(f->heap);
	f->heap = NULL;
	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &f->heap), 0);
	assert_int_equal(pma_heap_morph(f->heap, &req, &did), -EROFS);
	req.dry_run = 1;
	assert_int_equal(pma_heap_morph(f->heap, &req, &did), 0);
	pma_heap_close(f->heap);
	f->heap = NULL;
	unlink(f->path);

	/* layout 10 has no 144-byte class */
	test_cfg.format_version = PMA_HEAP_VERSION_XFREE;
	fx_create(f);
	assert_int_equal(pma_heap_morph(f->heap, &req, &did), -EINVAL);
	assert_non_null(strstr(pma_errormsg(), "nearest are 128 and 192"));
	pma_heap_close(f->heap);
	f->heap = NULL;
	unlink(f->path);

	/* layout 8 cannot morph */
	test_cfg.format_version = PMA_HEAP_VERSION_LOCAL;
	req.class_size = 192;
	fx_create(f);
	assert_int_equal(pma_heap_morph(f->heap, &req, &did), -EOPNOTSUPP);
}

struct range_free {
	struct fx *f;
	unsigned lo, hi;
};

static void *free_range(void *arg)
{
	struct range_free *r = arg;
	unsigned i;

	for (i = r->lo; i < r->hi; i++)
		if (pma_free_from(r->f->heap, &r->f->dests[i]) != 0)
			return arg;
	return NULL;
}

/* a heap that does not morph (PMA_HEAP_NO_MORPH) but holds mixed slabs
 * from an open that did: loading one makes the heap's remote frees check
 * for mixed slabs again (may_mix), so another thread's frees of old
 * blocks go through the owner and the slabs become plain */
static void test_morph_reopen_off(void **state)
{
	struct fx *f = *state;
	struct range_free rf;
	struct pma_heap_stats st;
	uint64_t slabs;
	unsigned n = 3000;
	pthread_t t;
	void *ret;

	fx_create(f);
	shift(f, n, &slabs);
	test_cfg.flags |= PMA_HEAP_NO_MORPH;
	fx_reopen(f);
	assert_int_equal(f->heap->morph_pct, 0);
	check_blocks(f); /* loads the slabs */
	assert_int_equal(atomic_load(&f->heap->may_mix), 1);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_true(st.mixed_slabs > 0);
	/* the old blocks from another thread (arena), the new ones here */
	rf.f = f;
	rf.lo = 0;
	rf.hi = n;
	assert_int_equal(pthread_create(&t, NULL, free_range, &rf), 0);
	free_range(&(struct range_free){ .f = f, .lo = n, .hi = 2 * n });
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_null(ret);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_int_equal(st.mixed_slabs, 0);
	assert_int_equal(st.slabs_morphed, 0);
	check_blocks(f);
	fx_reopen(f);
	check_blocks(f);
	/* a fresh heap without morphing: nothing checks for mixed slabs */
	pma_heap_close(f->heap);
	f->heap = NULL;
	unlink(f->path);
	fx_create(f);
	assert_int_equal(atomic_load(&f->heap->may_mix), 0);
}

/* ---- fsck of mixed slabs */

struct codes {
	const char *want;
	unsigned n, other; /* findings of want, other findings */
};

static int code_note(const struct pool_fsck_finding *fi, void *arg)
{
	struct codes *c = arg;

	if (!strcmp(fi->code, c->want))
		c->n++;
	else
		c->other++;
	return 0;
}

/* fsck of the heap at f->path: the findings of code want, others */
static struct codes fsck_codes(struct fx *f, const char *want)
{
	struct codes c = { .want = want };
	struct pool_fsck_sink sink = { .fn = code_note, .arg = &c };

	assert_int_equal(pma_fsck(f->path, &sink), 0);
	return c;
}

/* a closed heap's mixed slab: its offset, a live old block i and the
 * first block j of the slab's class that overlaps it */
struct mixed_at {
	uint64_t off;
	uint32_t i, j;
};

static struct mixed_at find_mixed(struct pma_heap *heap)
{
	struct mixed_at m = { 0 };
	struct pma_slab *slab;
	uint64_t c;
	uint32_t i;

	for (c = 0; c < heap->nchunks; c++) {
		slab = pma_heap_slab_at(
			heap, pma_page_off(heap, c * PMA_CHUNK_PAGES));
		if (!slab || slab->old_cls == PMA_CLS_NONE)
			continue;
		for (i = 0; i < slab->old_nblocks; i++)
			if (pma_morph_old_live(
				    slab,
				    slab->off + PMA_SLAB_HDR_SIZE +
					    (uint64_t)i *
						    slab->old_block_size)) {
				m.off = slab->off;
				m.i = i;
				m.j = (uint32_t)((uint64_t)i *
						 slab->old_block_size /
						 slab->block_size);
				return m;
			}
	}
	fail_msg("no mixed slab");
	return m;
}

/* the heap file's bitmap line of bank l of the slab at off (part 0: a
 * byte offset is the file offset) */
static uint64_t *pm_line(char *base, uint64_t off, unsigned l)
{
	return (uint64_t *)(void *)(base + off + PMA_SLAB_BITMAP_OFF +
				    l * PMA_LINE);
}

/* a valid mixed slab is no finding; a block of its class set over a live
 * old block (the bank resealed), an old bit flipped without its check,
 * an old class that is its own: each is found */
static void test_morph_fsck(void **state)
{
	struct fx *f = *state;
	struct mixed_at m;
	struct codes c;
	uint64_t slabs, *line, save;
	unsigned l;
	char *base;
	size_t len;
	int fd;

	fx_create(f);
	shift(f, 1000, &slabs);
	m = find_mixed(f->heap);
	pma_heap_close(f->heap);
	f->heap = NULL;
	c = fsck_codes(f, "slab-morph-overlap");
	assert_int_equal(c.n + c.other, 0);

	fd = open(f->path, O_RDWR);
	assert_true(fd >= 0);
	len = (size_t)lseek(fd, 0, SEEK_END);
	base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(base != MAP_FAILED);

	l = m.j % PMA_NBANKS;
	line = pm_line(base, m.off, l);
	save = line[0];
	line[(m.j / PMA_NBANKS) / 64] |= 1ULL << (m.j / PMA_NBANKS % 64);
	line[PMA_SLAB_BANK_CHECK] = pma_check_bank(line, m.off, l);
	c = fsck_codes(f, "slab-morph-overlap");
	assert_int_equal(c.n, 1);
	line[0] = save;
	line[PMA_SLAB_BANK_CHECK] = pma_check_bank(line, m.off, l);

	l = m.i % PMA_NBANKS;
	line = pm_line(base, m.off, l);
	line[PMA_SLAB_OLD_WORD] ^= 1ULL << 63;
	c = fsck_codes(f, "slab-old-bitmap-check");
	assert_int_equal(c.n, 1);
	line[PMA_SLAB_OLD_WORD] ^= 1ULL << 63;

	((struct pma_slab_hdr *)(void *)(base + m.off))->morph_from =
		(uint16_t)(((struct pma_slab_hdr *)(void *)(base + m.off))->cls +
			   1);
	c = fsck_codes(f, "slab-morph-class");
	assert_int_equal(c.n, 1);

	munmap(base, len);
	close(fd);
	/* no heap to close in the teardown: reopen would refuse it */
	unlink(f->path);
}

/* ---- forced morphs under a random workload (the v9 patch's defect:
 * a mixed slab's navail drifted from its avail bitmap and block 0 was
 * handed out twice) */

#define RND_SLOTS 4096
#define RND_GRAN \
	16 /* granule of the hand-out map (blocks are 16-byte aligned) */

/* sizes of several classes, so that classes keep needing slabs */
static const size_t rnd_sizes[] = { 64, 100, 130, 200, 250, 400, 700 };

struct rnd {
	struct fx *f;
	_Atomic uint32_t *owner; /* per granule of the heap: slot + 1 */
	_Atomic int *state; /* per slot: 0 empty, 1 busy, 2 full */
	uint64_t base, ngran;
	unsigned seed;
	unsigned long ops;
	unsigned free_lo, free_hi; /* dests freed first (rnd_thread) */
};

/* a mixed slab's blocked counts are the live old blocks each new block
 * overlaps, and old_count the live old blocks */
static void check_blocked(struct pma_slab *slab)
{
	uint16_t *want = calloc(slab->nblocks, sizeof(*want));
	uint32_t i, j, n = 0, bit;
	uint64_t lo, hi;

	assert_non_null(want);
	for (i = 0; i < slab->old_nblocks; i++) {
		bit = i / PMA_NBANKS;
		if (!(slab->old_live[i % PMA_NBANKS][bit / 64] &
		      1ULL << (bit % 64)))
			continue;
		n++;
		lo = (uint64_t)i * slab->old_block_size;
		hi = lo + slab->old_block_size - 1;
		for (j = (uint32_t)(lo / slab->block_size);
		     j <= hi / slab->block_size && j < slab->nblocks; j++)
			want[j]++;
	}
	if (n != slab->old_count)
		fail_msg("slab 0x%llx: old_count %u, %u old bits",
			 (unsigned long long)slab->off, slab->old_count, n);
	for (j = 0; j < slab->nblocks; j++)
		if (want[j] != slab->blocked[j])
			fail_msg("slab 0x%llx: block %u blocked %u, want %u",
				 (unsigned long long)slab->off, j,
				 slab->blocked[j], want[j]);
	free(want);
}

/* every loaded slab: avail is exactly navail bits (avail_words agrees),
 * no available block is live or blocked by an old block */
static void check_slabs(struct pma_heap *heap)
{
	struct pma_slab *slab;
	uint64_t c;
	uint32_t n, j;
	unsigned w, a;

	/* a listed slab has a free block (pma_partial_take) */
	for (a = 0; a < heap->geom.narenas; a++)
		for (w = 0; w < PMA_NCLASSES; w++)
			for (slab = heap->arenas[a].partial[w]; slab;
			     slab = slab->next)
				if (!slab->navail || slab->cls != w)
					fail_msg("slab 0x%llx on the partial "
						 "list of class %u: class %u, "
						 "navail %u",
						 (unsigned long long)slab->off,
						 w, slab->cls, slab->navail);
	for (c = 0; c < heap->nchunks; c++) {
		slab = atomic_load(&heap->slabs[c]);
		if (!slab)
			continue;
		for (n = 0, w = 0; w < PMA_LIVE_WORDS; w++) {
			n += (uint32_t)__builtin_popcountll(slab->avail[w]);
			if (!!slab->avail[w] != !!(slab->avail_words & 1U << w))
				fail_msg("slab 0x%llx: avail_words bit %u",
					 (unsigned long long)slab->off, w);
		}
		if (n != slab->navail)
			fail_msg("slab 0x%llx (class %u, old %u): navail %u, "
				 "%u avail bits",
				 (unsigned long long)slab->off, slab->cls,
				 slab->old_cls, slab->navail, n);
		if (slab->old_cls != PMA_CLS_NONE)
			check_blocked(slab);
		for (j = 0; j < slab->nblocks; j++) {
			if (!(slab->avail[j / 64] & 1ULL << (j % 64)))
				continue;
			if (pma_slab_is_live(slab, j) ||
			    (slab->blocked && slab->blocked[j]))
				fail_msg("slab 0x%llx: block %u available "
					 "but live or blocked",
					 (unsigned long long)slab->off, j);
		}
	}
}

/* claim the granules of the block of slot i; fails on a double hand-out */
static void rnd_claim(struct rnd *r, unsigned i, uint64_t off, size_t size)
{
	uint64_t g = (off - r->base) / RND_GRAN, end;
	uint32_t zero;

	end = g + (size + RND_GRAN - 1) / RND_GRAN;
	assert_true(end <= r->ngran);
	for (; g < end; g++) {
		zero = 0;
		if (!atomic_compare_exchange_strong(&r->owner[g], &zero, i + 1))
			fail_msg("0x%llx (slot %u, %zu bytes) handed out "
				 "twice: slot %u holds it",
				 (unsigned long long)off, i, size, zero - 1);
	}
}

static void rnd_release(struct rnd *r, uint64_t off, size_t size)
{
	uint64_t g = (off - r->base) / RND_GRAN, end;

	end = g + (size + RND_GRAN - 1) / RND_GRAN;
	for (; g < end; g++)
		atomic_store(&r->owner[g], 0);
}

/* one random op on a random slot; 1 if one ran */
static int rnd_op(struct rnd *r)
{
	struct fx *f = r->f;
	unsigned i = (unsigned)rand_r(&r->seed) % RND_SLOTS;
	int st = 0, full = 2;
	size_t size;
	uint64_t off;

	if (atomic_compare_exchange_strong(&r->state[i], &st, 1)) {
		size = rnd_sizes[(unsigned)rand_r(&r->seed) %
				 (sizeof(rnd_sizes) / sizeof(*rnd_sizes))];
		/* a size mix that drifts: the classes keep shifting */
		if ((r->ops / 3000) % 2)
			size += 64 * ((unsigned)rand_r(&r->seed) % 4);
		assert_int_equal(pma_malloc_to(f->heap, size, &f->dests[i]), 0);
		off = f->dests[i];
		rnd_claim(r, i, off, pma_usable_size(f->heap, off));
		atomic_store(&r->state[i], 2);
		return 1;
	}
	if (atomic_compare_exchange_strong(&r->state[i], &full, 1)) {
		off = f->dests[i];
		rnd_release(r, off, pma_usable_size(f->heap, off));
		assert_int_equal(pma_free_from(f->heap, &f->dests[i]), 0);
		atomic_store(&r->state[i], 0);
		return 1;
	}
	return 0;
}

static void rnd_init(struct rnd *r, struct fx *f)
{
	memset(r, 0, sizeof(*r));
	r->f = f;
	r->base = f->heap->data_base;
	r->ngran = f->heap->data_len / RND_GRAN;
	r->owner = calloc(r->ngran, sizeof(*r->owner));
	r->state = calloc(RND_SLOTS, sizeof(*r->state));
	assert_non_null(r->owner);
	assert_non_null(r->state);
	r->seed = getenv("MORPH_SEED") ? (unsigned)atoi(getenv("MORPH_SEED")) :
					 1;
}

static void rnd_fini(struct rnd *r)
{
	free(r->owner);
	free(r->state);
}

static void forced_setup(struct fx *f)
{
	/* every slab on a partial list is a candidate, idle or not */
	assert_int_equal(pma_config_set_morph(&test_cfg, 100, 0), 0);
	fx_create(f);
}

/* one thread: after every op, nothing handed out twice and every slab's
 * navail is its avail bitmap's popcount; then a reopen sees it all */
static void test_morph_random(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats st;
	struct rnd r;
	unsigned long n = 0;
	uint64_t morphed = 0;

	forced_setup(f);
	rnd_init(&r, f);
	while (n < 60000) {
		r.ops = n;
		n += (unsigned long)rnd_op(&r);
		check_slabs(f->heap);
		if (n % 7919 == 0)
			assert_int_equal(pma_heap_checkpoint(f->heap), 0);
		if (n % 10007 == 0) {
			assert_int_equal(pma_heap_stats(f->heap, &st), 0);
			morphed += st.slabs_morphed;
			fx_reopen(f);
			check_slabs(f->heap);
		}
	}
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_true(morphed + st.slabs_morphed > 0);
	check_blocks(f);
	fx_reopen(f);
	check_slabs(f->heap);
	check_blocks(f);
	rnd_fini(&r);
}

static void *rnd_thread(void *arg)
{
	struct rnd *r = arg;
	unsigned long n = 0;
	unsigned i;

	for (i = r->free_lo; i < r->free_hi; i++)
		assert_int_equal(pma_free_from(r->f->heap, &r->f->dests[i]), 0);
	while (n < 40000) {
		r->ops = n;
		n += (unsigned long)rnd_op(r);
	}
	return NULL;
}

/* two threads (two arenas) on one slot array: each frees the other's
 * blocks too (remote frees of mixed slabs' blocks); nothing handed out
 * twice, and at the end every slab is consistent */
static void test_morph_random_mt(void **state)
{
	struct fx *f = *state;
	struct pma_heap_stats st;
	struct rnd r[2];
	pthread_t t;
	unsigned i;

	forced_setup(f);
	/* this thread's arena holds idle slabs of 100-byte blocks, 1 in 10
	 * live: its first allocation of another class morphs one, while
	 * the other thread frees those old blocks (remote frees of a mixed
	 * slab's old blocks) */
	fill(f, RND_SLOTS, RND_SLOTS + 2000, 100);
	for (i = RND_SLOTS; i < RND_SLOTS + 2000; i++)
		if (i % 10)
			assert_int_equal(pma_free_from(f->heap, &f->dests[i]),
					 0);
	assert_int_equal(pma_heap_checkpoint(f->heap), 0);
	rnd_init(&r[0], f);
	r[1] = r[0];
	r[1].seed = 4242;
	r[1].free_lo = RND_SLOTS;
	r[1].free_hi = RND_SLOTS + 2000;
	assert_int_equal(pthread_create(&t, NULL, rnd_thread, &r[1]), 0);
	(void)rnd_thread(&r[0]);
	assert_int_equal(pthread_join(t, NULL), 0);
	check_slabs(f->heap);
	assert_int_equal(pma_heap_stats(f->heap, &st), 0);
	assert_true(st.slabs_morphed > 0);
	check_blocks(f);
	fx_reopen(f);
	check_slabs(f->heap);
	check_blocks(f);
	rnd_fini(&r[0]);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
	const struct CMUnitTest tests[] = {
		T(test_morph_cycle),	 T(test_morph_frees),
		T(test_morph_off),	 T(test_morph_reopen_off),
		T(test_morph_fsck),	 T(test_morph_random),
		T(test_morph_random_mt), T(test_morph_pass),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
