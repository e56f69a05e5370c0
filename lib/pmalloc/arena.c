/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc arenas: one bookkeeping log and the slabs allocated from it
 * (binding threads to arenas and locking them: owner.c); the log
 * append/commit primitives every operation goes through are in alloc.c,
 * where they inline into the op paths.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pmalloc/internal.h"
#include "pmem/fast.h"
#include "util/errmsg.h"

int pma_arena_init(struct pma_heap *heap, unsigned id, struct pma_arena *arena)
{
	struct pma_arena_desc *descs =
		pma_addr(heap, heap->region_off + heap->geom.arena_off);
	struct pma_rec *logs =
		pma_addr(heap, heap->region_off + heap->geom.log_off);

	memset(arena, 0, sizeof(*arena));
	if (pthread_mutex_init(&arena->lock, NULL))
		return util_errmsg_set(ENOMEM, "cannot create arena lock");
	arena->heap = heap;
	arena->membarrier = heap->membarrier;
	arena->id = id;
	arena->desc = &descs[id];
	arena->log = logs + (size_t)id * heap->geom.log_cap;
	arena->gen = heap->head_gen;
	if (heap->geom.version >= PMA_HEAP_VERSION_LOCAL) {
		if (pma_check_lgen_decode(arena->desc->lgen, id, &arena->lgen))
			return util_errmsg_set(
				EIO,
				"arena %u: descriptor "
				"generation word 0x%llx is "
				"damaged (check mismatch)",
				id, (unsigned long long)arena->desc->lgen);
		arena->gen = (heap->head_gen + arena->lgen) & PMA_GEN_MASK;
	}
	arena->head = arena->desc->head[arena->gen & 1];
	if (heap->checked &&
	    arena->desc->check[arena->gen & 1] !=
		    pma_check_head(arena->head, id, arena->gen))
		return util_errmsg_set(EIO,
				       "arena %u: descriptor head %llu is "
				       "damaged (check mismatch)",
				       id, (unsigned long long)arena->head);
	arena->tail = arena->head;
	atomic_store_explicit(&arena->head_pub, arena->head,
			      memory_order_relaxed);
	arena->est_mark = arena->head;
	arena->cur_k = ~0ULL;
	arena->ops = pma_zmap(heap->geom.log_cap * sizeof(*arena->ops));
	if (!arena->ops) {
		pthread_mutex_destroy(&arena->lock);
		return util_errmsg_set(ENOMEM, "out of memory for arena %u",
				       id);
	}
	return 0;
}

void pma_arena_release(struct pma_arena *arena)
{
	free(arena->rfreed.e);
	free(arena->ext_freed.e);
	free(arena->slab_freed.e);
	free(arena->synced.e);
	free(arena->xfreed.e);
	free(arena->local.runs);
	pma_zunmap(arena->ops, arena->heap->geom.log_cap * sizeof(*arena->ops));
	pthread_mutex_destroy(&arena->lock);
}

void *pma_grow(void *v, size_t *alloc, size_t size, size_t first)
{
	size_t n = *alloc ? *alloc * 2 : first;
	void *w = reallocarray(v, n, size);

	if (w)
		*alloc = n;
	return w;
}

int pma_retq_push(struct pma_retq *q, uint64_t off, uint64_t k,
		  uint32_t dep_arena, uint64_t dep_k)
{
	struct pma_ret *v;

	if (q->count == q->alloc) {
		v = pma_grow(q->e, &q->alloc, sizeof(*v), 64);
		if (!v)
			return -ENOMEM;
		q->e = v;
	}
	q->e[q->count++] = (struct pma_ret){
		.off = off, .k = k, .dep_k = dep_k, .dep_arena = dep_arena
	};
	return 0;
}

void pma_retq_trim(struct pma_retq *q, uint64_t cut)
{
	size_t n = 0;

	while (n < q->count && q->e[n].k < cut) /* a prefix: log order */
		n++;
	if (!n)
		return; /* q->e may be NULL */
	memmove(q->e, q->e + n, (q->count - n) * sizeof(*q->e));
	q->count -= n;
	q->ok = q->ok > n ? q->ok - n : 0;
}

int pma_pending_push(struct pma_pending *p, uint64_t off)
{
	uint64_t *v;

	if (p->count == p->alloc) {
		v = pma_grow(p->offs, &p->alloc, sizeof(*v), 64);
		if (!v)
			return -ENOMEM;
		p->offs = v;
	}
	p->offs[p->count++] = off;
	return 0;
}

/* index of the first run starting after page (runs are sorted by page and
 * never adjacent: neighbours are merged when put): counted, not searched
 * (a few runs, at most PMA_LOCAL_RUNS; a binary search mispredicts about
 * every other step on random pages) */
static size_t runs_after(const struct pma_runs *r, uint64_t page)
{
	size_t i, n = 0;

	for (i = 0; i < r->count; i++)
		n += r->runs[i].page <= page;
	return n;
}

static void runs_remove(struct pma_runs *r, size_t i)
{
	memmove(&r->runs[i], &r->runs[i + 1],
		(r->count - i - 1) * sizeof(*r->runs));
	r->count--;
}

int pma_runs_put(struct pma_runs *r, uint64_t page, uint64_t npages)
{
	size_t i = runs_after(r, page);
	struct pma_run *prev = i ? &r->runs[i - 1] : NULL;
	struct pma_run *next = i < r->count ? &r->runs[i] : NULL;
	struct pma_run *v;

	if (prev && prev->page + prev->npages == page) {
		prev->npages += npages;
		if (next && page + npages == next->page) {
			prev->npages += next->npages;
			runs_remove(r, i);
		}
	} else if (next && page + npages == next->page) {
		next->page = page;
		next->npages += npages;
	} else {
		if (r->count == PMA_LOCAL_RUNS) /* see pma_runs_take */
			return -ENOSPC;
		if (r->count == r->alloc) {
			v = pma_grow(r->runs, &r->alloc, sizeof(*v), 16);
			if (!v)
				return -ENOMEM;
			r->runs = v;
		}
		if (!r->runs) /* not reached: alloc > count here */
			return -ENOMEM;
		if (i < r->count)
			memmove(&r->runs[i + 1], &r->runs[i],
				(r->count - i) * sizeof(*r->runs));
		r->runs[i].page = page;
		r->runs[i].npages = npages;
		r->count++;
	}
	r->pages += npages;
	return 0;
}

int pma_runs_take(struct pma_runs *r, uint64_t npages, uint64_t *ret_page)
{
	struct pma_run *run;
	uint64_t best = UINT64_MAX, key, n, i;

	/* best fit, the lowest of equals: the minimum of npages << 6 | i
	 * over the runs that fit, a conditional move per run, not a branch
	 * (run sizes are random: a branchy scan mispredicts at every run) */
	_Static_assert(PMA_LOCAL_RUNS <= 64, "a run index fits in 6 bits");
	for (i = 0; i < r->count; i++) {
		n = r->runs[i].npages;
		key = (n << 6 | i) | -(uint64_t)(n < npages); /* or ~0 */
		best = key < best ? key : best;
	}
	if (best == UINT64_MAX)
		return -ENOMEM;
	run = &r->runs[best & 63];
	*ret_page = run->page;
	run->page += npages;
	run->npages -= npages;
	r->pages -= npages;
	if (!run->npages)
		runs_remove(r, (size_t)(run - r->runs));
	return 0;
}

void pma_arena_flush_dest(struct pma_arena *arena)
{
	if (!arena->dest_line)
		return;
	/* dest_line is the line's address as an integer */
	/* NOLINTNEXTLINE(performance-no-int-to-ptr) */
	pm_flush_fast(arena->dest_map, (const void *)arena->dest_line,
		      PMA_LINE);
	arena->dest_line = 0;
	arena->dest_last = NULL;
}
