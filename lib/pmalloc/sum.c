/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The page map summary (layout.h, version 5): one bit per group of pages
 * that says whether the group's part of the page map may hold an entry.
 * Open reads the page map of marked groups only, so its time follows
 * the pages the heap ever used, not the heap's size. Bits are set by the
 * apply of a checkpoint or a recovery (pma_sum_mark, from pmap_write), in
 * DRAM and on media, and flushed with the page map lines before the heads
 * move. A writable open clears the bits of groups it found empty
 * (pma_sum_trim, which also rewrites the words found invalid at open), so
 * a heap that was full once is read in full once.
 */
#include <stdlib.h>

#include "pmalloc/internal.h"
#include "util/crc.h"
#include "util/errmsg.h"

uint64_t pma_sum_encode(uint64_t bits, uint64_t w)
{
	uint64_t check;

	bits &= PMA_SUM_BITS_MASK;
	check = (util_crc32c_3w(bits, w, PMA_SUM_SEED) & 0x7fff) | 0x8000;
	return bits | check << PMA_SUM_BITS;
}

static uint64_t *sum_media(struct pma_heap *heap)
{
	return pma_addr(heap, heap->region_off + heap->geom.sum_off);
}

void pma_sum_format(struct pma_heap *heap)
{
	uint64_t *words = sum_media(heap);
	uint64_t w;

	for (w = 0; w < heap->geom.sum_words; w++)
		words[w] = pma_sum_encode(0, w);
}

int pma_sum_load(struct pma_heap *heap)
{
	const uint64_t *words;
	uint64_t w, v;

	if (!heap->geom.sum_words)
		return 0; /* no summary: every scan reads the whole map */
	heap->sum = calloc(heap->geom.sum_words, sizeof(*heap->sum));
	if (!heap->sum)
		return util_errmsg_set(ENOMEM, "out of memory");
	words = sum_media(heap);
	for (w = 0; w < heap->geom.sum_words; w++) {
		v = __atomic_load_n(&words[w], __ATOMIC_RELAXED);
		if (v == pma_sum_encode(v, w)) {
			heap->sum[w] = v & PMA_SUM_BITS_MASK;
		} else { /* read its groups' entries: nothing is hidden */
			heap->sum[w] = PMA_SUM_BITS_MASK;
			heap->sum_bad++;
		}
	}
	if (!heap->rdonly)
		heap->sum_pm = sum_media(heap);
	return 0;
}

void pma_sum_release(struct pma_heap *heap)
{
	free(heap->sum);
	heap->sum = NULL;
	heap->sum_pm = NULL;
}

int pma_sum_mark_call(struct pma_heap *heap, uint64_t page,
		      struct pma_dirty *dirty)
{
	uint64_t mask, w = pma_sum_word(heap, page, &mask);
	uint64_t p = page >> heap->geom.sum_shift << heap->geom.sum_shift;
	uint64_t end = pma_sum_group_end(heap, page);
	int rc;

	pma_assert(heap->sum && w < heap->geom.sum_words && !heap->shadow);
	heap->sum[w] |= mask;
	if (!heap->sum_pm)
		return 0; /* read-only: the DRAM copy of the page map */
	/*
	 * Nothing has read this group's entries before: an entry here is
	 * one the replay running now writes again (the rest of a checkpoint
	 * a crash cut short), or garbage a corruption left, which would
	 * make the group refused once marked. Either way it goes: the
	 * invariant says the group holds no entry.
	 */
	for (; p < end; p++) {
		if (!__atomic_load_n(&heap->pmap_pm[p], __ATOMIC_RELAXED))
			continue;
		__atomic_store_n(&heap->pmap_pm[p], 0, __ATOMIC_RELAXED);
		rc = pma_dirty_add(dirty, &heap->pmap_pm[p], sizeof(uint64_t));
		if (rc < 0)
			return rc;
	}
	/* one 8-byte store: the word is the old or the new one after a
	 * crash, and either is valid (an invalid word found at open is
	 * all set in DRAM, so this rewrites it valid) */
	__atomic_store_n(&heap->sum_pm[w], pma_sum_encode(heap->sum[w], w),
			 __ATOMIC_RELAXED);
	return pma_dirty_add(dirty, &heap->sum_pm[w], sizeof(uint64_t));
}

int pma_sum_check(struct pma_heap *heap)
{
	uint64_t page, w;

	for (w = 0; heap->sum_pm && w < heap->geom.sum_words; w++)
		if (heap->sum_pm[w] != pma_sum_encode(heap->sum[w], w))
			return util_errmsg_set(
				EIO,
				"page map summary word %llu "
				"is 0x%llx, not 0x%llx",
				(unsigned long long)w,
				(unsigned long long)heap->sum_pm[w],
				(unsigned long long)pma_sum_encode(heap->sum[w],
								   w));
	for (page = 0; heap->sum && page < heap->geom.npages; page++)
		if (heap->pmap_pm[page] && !pma_sum_has(heap, page))
			return util_errmsg_set(
				EIO,
				"page map entry %llu (0x%llx) "
				"is in a group the summary "
				"does not mark",
				(unsigned long long)page,
				(unsigned long long)heap->pmap_pm[page]);
	return 0;
}

void pma_sum_trim(struct pma_heap *heap, const uint64_t *seen)
{
	uint64_t w, v;
	int wrote = 0;

	for (w = 0; heap->sum_pm && w < heap->geom.sum_words; w++) {
		heap->sum[w] &= seen[w];
		/* one 8-byte store: every state after a crash is valid (each
		 * group it unmarks is empty, no record is pending) */
		v = pma_sum_encode(heap->sum[w], w);
		if (__atomic_load_n(&heap->sum_pm[w], __ATOMIC_RELAXED) == v)
			continue;
		__atomic_store_n(&heap->sum_pm[w], v, __ATOMIC_RELAXED);
		pm_flush(heap->map, &heap->sum_pm[w], sizeof(uint64_t));
		wrote = 1;
	}
	if (wrote)
		pm_drain(heap->map);
}

void pma_sum_stats(const struct pma_heap *heap, uint64_t *ret_groups,
		   uint64_t *ret_marked)
{
	uint64_t groups = 0, marked = 0, w, bits, first;

	if (heap->sum) {
		groups =
			pma_sum_groups(heap->geom.npages, heap->geom.sum_shift);
		for (w = 0; w < heap->geom.sum_words; w++) {
			bits = heap->sum[w];
			first = w * PMA_SUM_BITS;
			/* an invalid last word has bits past the end */
			if (groups - first < PMA_SUM_BITS)
				bits &= (1ULL << (groups - first)) - 1;
			marked += (uint64_t)__builtin_popcountll(bits);
		}
	}
	*ret_groups = groups;
	*ret_marked = marked;
}

uint64_t pma_sum_next(const struct pma_heap *heap, uint64_t page)
{
	uint64_t npages = heap->geom.npages;
	unsigned shift = heap->geom.sum_shift;
	uint64_t g, w, bits;

	if (!heap->sum || page >= npages)
		return page < npages ? page : npages;
	g = page >> shift;
	w = g / PMA_SUM_BITS;
	bits = heap->sum[w] >> (g % PMA_SUM_BITS);
	if (bits & 1)
		return page;
	while (!bits) {
		if (++w >= heap->geom.sum_words)
			return npages;
		bits = heap->sum[w];
		g = w * PMA_SUM_BITS;
	}
	g += (uint64_t)__builtin_ctzll(bits);
	return g << shift < npages ? g << shift : npages;
}
