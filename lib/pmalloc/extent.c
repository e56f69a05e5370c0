/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc free-extent index (DRAM only, rebuilt from the page map at open):
 * free page ranges sorted by start and always coalesced. Take is first fit
 * with an alignment (slabs need 16-page alignment); put merges with both
 * neighbours. Protected by heap->ext_lock.
 * XXX: linear first fit; a size-ordered tree is the next step for heaps
 * with many free fragments.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pmalloc/internal.h"

void pma_ext_index_release(struct pma_ext_index *idx)
{
	free(idx->v);
	memset(idx, 0, sizeof(*idx));
}

static int ext_reserve(struct pma_ext_index *idx, size_t more)
{
	size_t n;
	struct pma_ext *v;

	if (idx->count + more <= idx->alloc)
		return 0;
	n = idx->alloc ? idx->alloc * 2 : 64;
	while (n < idx->count + more)
		n *= 2;
	v = reallocarray(idx->v, n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	idx->v = v;
	idx->alloc = n;
	return 0;
}

static void ext_insert_at(struct pma_ext_index *idx, size_t i, struct pma_ext e)
{
	memmove(&idx->v[i + 1], &idx->v[i],
		(idx->count - i) * sizeof(idx->v[0]));
	idx->v[i] = e;
	idx->count++;
}

static void ext_remove_at(struct pma_ext_index *idx, size_t i)
{
	memmove(&idx->v[i], &idx->v[i + 1],
		(idx->count - i - 1) * sizeof(idx->v[0]));
	idx->count--;
}

/* carve [start, start+npages) out of entry i (which contains it) */
static int ext_carve(struct pma_ext_index *idx, size_t i, uint64_t start,
		     uint64_t npages)
{
	struct pma_ext e = idx->v[i];
	uint64_t end = start + npages, e_end = e.start + e.npages;
	struct pma_ext after = { end, e_end - end };

	if (start > e.start && end < e_end) {
		if (ext_reserve(idx, 1) < 0)
			return -ENOMEM;
		idx->v[i].npages = start - e.start;
		ext_insert_at(idx, i + 1, after);
	} else if (start > e.start) {
		idx->v[i].npages = start - e.start;
	} else if (end < e_end) {
		idx->v[i] = after;
	} else {
		ext_remove_at(idx, i);
	}
	return 0;
}

int pma_ext_take(struct pma_ext_index *idx, uint64_t npages, uint64_t align,
		 uint64_t *ret_start)
{
	size_t i;
	uint64_t start;
	int rc;

	for (i = 0; i < idx->count; i++) {
		start = (idx->v[i].start + align - 1) / align * align;
		if (start + npages > idx->v[i].start + idx->v[i].npages)
			continue;
		rc = ext_carve(idx, i, start, npages);
		if (rc < 0)
			return rc;
		*ret_start = start;
		return 0;
	}
	return -ENOMEM;
}

/* index of the first entry with start > page */
static size_t ext_upper(const struct pma_ext_index *idx, uint64_t page)
{
	size_t lo = 0, hi = idx->count;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (idx->v[mid].start > page)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

int pma_ext_put(struct pma_ext_index *idx, uint64_t start, uint64_t npages)
{
	size_t i = ext_upper(idx, start);
	struct pma_ext e = { start, npages };
	int merge_prev, merge_next;

	merge_prev = i > 0 &&
		     idx->v[i - 1].start + idx->v[i - 1].npages == start;
	merge_next = i < idx->count && start + npages == idx->v[i].start;
	if (merge_prev && merge_next) {
		idx->v[i - 1].npages += npages + idx->v[i].npages;
		ext_remove_at(idx, i);
	} else if (merge_prev) {
		idx->v[i - 1].npages += npages;
	} else if (merge_next) {
		idx->v[i].start = start;
		idx->v[i].npages += npages;
	} else {
		if (ext_reserve(idx, 1) < 0)
			return -ENOMEM;
		ext_insert_at(idx, i, e);
	}
	return 0;
}

uint64_t pma_ext_largest(const struct pma_ext_index *idx)
{
	uint64_t max = 0;
	size_t i;

	for (i = 0; i < idx->count; i++)
		if (idx->v[i].npages > max)
			max = idx->v[i].npages;
	return max;
}

uint64_t pma_ext_free_pages(const struct pma_ext_index *idx)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < idx->count; i++)
		sum += idx->v[i].npages;
	return sum;
}
