/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tests/lib/pma-check (pma-check.h): the checks of a recovered PMAlloc
 * heap and the sweep scaffolding the pmalloc crash tests share.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "pmalloc.h"
#include "pmalloc/internal.h"
#include "pma-check.h"

unsigned char pma_check_pattern(unsigned s, uint64_t gen, size_t j)
{
	return (unsigned char)(s * 31 + gen * 7 + j * 13 + 1);
}

static void gen_set(struct pma_heap *heap, const struct pma_check_slots *sl,
		    unsigned s, uint64_t gen)
{
	sl->gen[s] = gen;
	pma_persist(heap, &sl->gen[s], sizeof(uint64_t));
}

int pma_check_slot_alloc(struct pma_heap *heap,
			 const struct pma_check_slots *sl, unsigned s,
			 uint64_t gen)
{
	unsigned char *p;
	size_t j, n = sl->size(s);
	int rc;

	rc = pma_malloc_to(heap, n, &sl->slot[s]);
	if (rc)
		return rc;
	p = pma_direct(heap, sl->slot[s]);
	for (j = 0; j < n; j++)
		p[j] = pma_check_pattern(s, gen, j);
	pma_persist(heap, p, n);
	gen_set(heap, sl, s, gen);
	return 0;
}

int pma_check_slot_free(struct pma_heap *heap, const struct pma_check_slots *sl,
			unsigned s)
{
	gen_set(heap, sl, s, 0);
	return pma_free_from(heap, &sl->slot[s]);
}

int pma_check_slot(struct pma_heap *heap, const struct pma_check_slots *sl,
		   unsigned s, char *why, size_t why_len)
{
	const unsigned char *p = pma_direct(heap, sl->slot[s]);
	size_t j, n = sl->size(s);
	uint64_t gen = sl->gen[s];

	if (pma_usable_size(heap, sl->slot[s]) < n) {
		snprintf(why, why_len, "slot %u: 0x%llx is not a live block", s,
			 (unsigned long long)sl->slot[s]);
		return -1;
	}
	for (j = 0; gen && j < n; j++)
		if (p[j] != pma_check_pattern(s, gen, j)) {
			snprintf(why, why_len,
				 "slot %u (gen %llu): byte %zu is 0x%02x, "
				 "want 0x%02x",
				 s, (unsigned long long)gen, j, p[j],
				 pma_check_pattern(s, gen, j));
			return -1;
		}
	return 0;
}

struct blk {
	uint64_t off, size;
};

static int blk_cmp(const void *a, const void *b)
{
	const struct blk *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

int pma_check_slots(struct pma_heap *heap, const struct pma_check_slots *sl,
		    unsigned *ret_n, char *why, size_t why_len)
{
	struct blk *b = calloc(sl->n ? sl->n : 1, sizeof(*b));
	unsigned s, n = 0;
	int rc = -1;

	if (!b) {
		snprintf(why, why_len, "out of memory");
		return -1;
	}
	for (s = 0; s < sl->n; s++) {
		if (sl->gen[s] && !sl->slot[s]) {
			snprintf(why, why_len,
				 "slot %u: gen %llu set, no block", s,
				 (unsigned long long)sl->gen[s]);
			goto out;
		}
		if (!sl->slot[s])
			continue;
		if (pma_check_slot(heap, sl, s, why, why_len) < 0)
			goto out;
		b[n].off = sl->slot[s];
		b[n++].size = pma_usable_size(heap, sl->slot[s]);
	}
	qsort(b, n, sizeof(b[0]), blk_cmp);
	for (s = 1; s < n; s++) {
		if (b[s - 1].off == b[s].off) {
			snprintf(why, why_len, "0x%llx named twice",
				 (unsigned long long)b[s].off);
			goto out;
		}
		if (b[s - 1].off + b[s - 1].size > b[s].off) {
			snprintf(why, why_len, "0x%llx overlaps 0x%llx",
				 (unsigned long long)b[s - 1].off,
				 (unsigned long long)b[s].off);
			goto out;
		}
	}
	*ret_n = n;
	rc = 0;
out:
	free(b);
	return rc;
}

int pma_check_usable(struct pma_heap *heap, unsigned s, uint64_t off,
		     size_t want, char *why, size_t why_len)
{
	if (pma_usable_size(heap, off) >= want)
		return 0;
	snprintf(why, why_len, "slot %u: 0x%llx usable %zu want %zu", s,
		 (unsigned long long)off, pma_usable_size(heap, off), want);
	return -1;
}

static int off_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int pma_check_unique(uint64_t *offs, unsigned n, char *why, size_t why_len)
{
	unsigned i;

	qsort(offs, n, sizeof(offs[0]), off_cmp);
	for (i = 1; i < n; i++)
		if (offs[i] == offs[i - 1]) {
			snprintf(why, why_len, "0x%llx named twice",
				 (unsigned long long)offs[i]);
			return -1;
		}
	return 0;
}

/* a live block at off that offs does not name (nor root) */
static int leaked(const uint64_t *offs, unsigned n, uint64_t root, uint64_t off)
{
	return offs && off != root &&
	       !bsearch(&off, offs, n, sizeof(*offs), off_cmp);
}

/* a mixed slab's old blocks still live */
static uint64_t old_live(const struct pma_slab *slab)
{
	uint64_t live = 0;
	unsigned l, k;

	if (slab->old_cls == PMA_CLS_NONE)
		return 0;
	for (l = 0; l < PMA_NBANKS; l++)
		for (k = 0; k < PMA_SLAB_LINE_WORDS; k++)
			live += (uint64_t)__builtin_popcountll(
				slab->old_live[l][k]);
	return live;
}

uint64_t pma_check_live(struct pma_heap *heap, const uint64_t *offs, unsigned n,
			uint64_t root)
{
	uint64_t c, page, off, live = 0;
	struct pma_slab *slab;
	uint32_t i;

	for (c = 0; c < heap->nchunks; c++) {
		/* loads the slabs not used since open (lazy.c) */
		slab = pma_heap_slab_at(
			heap, pma_page_off(heap, c * PMA_CHUNK_PAGES));
		if (!slab)
			continue;
		for (i = 0; i < slab->nblocks; i++) {
			if (!pma_slab_is_live(slab, i))
				continue;
			live++;
			off = pma_pool_off(heap, pma_slab_block_off(slab, i));
			if (leaked(offs, n, root, off))
				print_message("# leaked block 0x%llx (class "
					      "%u, owner %u)\n",
					      (unsigned long long)off,
					      slab->cls, slab->owner);
		}
		live += old_live(slab);
	}
	for (page = 0; page < heap->geom.npages; page++) {
		if (pma_pmap_kind(heap->pmap[page]) != PMA_PMAP_EXTENT)
			continue;
		live++;
		off = pma_pool_off(heap, pma_page_off(heap, page));
		if (leaked(offs, n, root, off))
			print_message("# leaked extent 0x%llx\n",
				      (unsigned long long)off);
	}
	return live;
}

int pma_check_open_mask(const struct pma_config *cfg, const char *path,
			uint64_t mask, struct pma_heap **ret_heap)
{
	struct pma_config c = *cfg;

	c.region_mask = mask;
	return pma_heap_open_cfg(path, &c, ret_heap);
}

int pma_check_recover(const char *file, const struct pma_config *cfg)
{
	struct pma_heap *heap;

	if (pma_heap_open_cfg(file, cfg, &heap))
		return 1;
	pma_heap_close(heap);
	return 0;
}

unsigned pma_check_runs(unsigned dflt)
{
	const char *s = getenv("PMA_CRASH_RUNS");

	return s && atoi(s) > 0 ? (unsigned)atoi(s) : dflt;
}

void pma_check_sweep(const struct crash_sweep_ops *ops, struct crash_sweep *sw)
{
	sw->runs = pma_check_runs(sw->runs);
	if (crash_sweep_run(ops, sw) < 0)
		fail_msg("%s failed", sw->name);
}

int pma_check_main(const struct crash_sweep_ops *ops, int argc, char **argv,
		   const struct CMUnitTest *tests, size_t n,
		   void (*report)(void))
{
	int rc;

	rc = crash_sweep_main(ops, argc, argv);
	if (rc >= 0)
		return rc;
	rc = _cmocka_run_group_tests("tests", tests, n, NULL, NULL);
	if (report)
		report();
	crash_sweep_cleanup();
	return rc;
}
