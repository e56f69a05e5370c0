/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Slab morphing (layout version 9, doc/morphing.md): the owner turns a
 * mostly free slab of class A into a slab of class B that needs one; the
 * live A-blocks stay where they are (the old bitmap), and a B-block is
 * handed out only while it overlaps no live A-block (blocked). Every free
 * of a mixed slab's block goes through the owner's lock and log (a remote
 * freer takes the owner's lock instead of the two-phase path), so a mixed
 * slab has no remote free in flight; a morph picks only a slab with none
 * (rpend, rdone, rret, synced all clear).
 *
 * Crash steps: the old bitmap (words 3-5 of each bank, its check in word
 * 6) is written and made durable first, while the header still says A
 * (a plain slab's old words mean nothing); then SLAB_MORPH and the first
 * B allocation are appended and fenced together. The apply of SLAB_MORPH
 * (apply.c) rewrites the header and clears the live words, and never
 * derives the old bitmap from anything else: any torn state a checkpoint
 * leaves replays to the same end state.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "pmalloc/internal.h"
#include "util/errmsg.h"

/* slabs of other classes a morph looks at for a candidate */
#define PMA_MORPH_SCAN 4096

/* word and mask of old block i (interleaved, as live) */
static inline uint64_t *old_word(struct pma_slab *slab, uint32_t i,
				 uint64_t *ret_mask)
{
	uint32_t bit = i / PMA_NBANKS;

	*ret_mask = 1ULL << (bit % 64);
	return &slab->old_live[i % PMA_NBANKS][bit / 64];
}

/* the blocks of size bs (nb of them) that old block i of size obs
 * overlaps: [*first, *last], none if *first > *last */
static void overlap(uint32_t obs, uint32_t bs, uint32_t nb, uint32_t i,
		    uint32_t *first, uint32_t *last)
{
	uint64_t lo = (uint64_t)i * obs, hi = lo + obs - 1;

	*first = (uint32_t)(lo / bs);
	*last = (uint32_t)(hi / bs);
	if (*last >= nb)
		*last = nb - 1;
}

/* blocked counts of the blocks of size bs (nb) from the old bitmap ol
 * (interleaved, blocks of obs bytes, onb of them); NULL if out of
 * memory. The live old blocks in *ret_count */
static uint16_t *blocked_of(const uint64_t ol[PMA_NBANKS][PMA_SLAB_LINE_WORDS],
			    uint32_t obs, uint32_t onb, uint32_t bs,
			    uint32_t nb, uint32_t *ret_count)
{
	uint16_t *blocked = calloc(nb, sizeof(*blocked));
	uint32_t i, j, bit, first, last, n = 0;

	if (!blocked)
		return NULL;
	for (i = 0; i < onb; i++) {
		bit = i / PMA_NBANKS;
		if (!(ol[i % PMA_NBANKS][bit / 64] & (1ULL << (bit % 64))))
			continue;
		n++;
		overlap(obs, bs, nb, i, &first, &last);
		for (j = first; j <= last && first <= last; j++)
			blocked[j]++;
	}
	*ret_count = n;
	return blocked;
}

/* blocked_of from slab->old_live (old_block_size, old_nblocks) */
static uint16_t *blocked_make(struct pma_slab *slab, uint32_t bs, uint32_t nb,
			      uint32_t *ret_count)
{
	return blocked_of(
		(const uint64_t(*)[PMA_SLAB_LINE_WORDS])slab->old_live,
		slab->old_block_size, slab->old_nblocks, bs, nb, ret_count);
}

/* avail := the blocks neither live nor blocked */
static void avail_make(struct pma_slab *slab)
{
	uint32_t j;

	memset(slab->avail, 0, sizeof(slab->avail));
	slab->avail_words = 0;
	slab->navail = 0;
	for (j = 0; j < slab->nblocks; j++)
		if (!slab->blocked[j] && !pma_slab_is_live(slab, j))
			pma_slab_give(slab, j);
}

static void set_geom(struct pma_slab *slab, unsigned cls)
{
	slab->cls = (uint16_t)cls;
	slab->block_size = pma_class_size(cls);
	slab->block_inv = pma_class_inv(cls);
	slab->nblocks = pma_class_nblocks(cls);
}

/* the old bitmap is empty: a plain slab of its class again */
static void make_plain(struct pma_slab *slab)
{
	slab->old_cls = PMA_CLS_NONE;
	slab->old_count = 0;
	free(slab->blocked);
	slab->blocked = NULL;
	atomic_store(&slab->mixed, 0);
}

int pma_morph_load(struct pma_slab *slab, const void *slab_pm)
{
	const struct pma_slab_hdr *sh = slab_pm;
	const uint64_t *bm =
		(const uint64_t *)(const void *)((const char *)slab_pm +
						 PMA_SLAB_BITMAP_OFF);
	unsigned old = sh->morph_from - 1u;
	uint32_t i, n;
	uint64_t mask;

	if (!sh->morph_from)
		return 0;
	if (old >= PMA_NCLASSES || old == sh->cls)
		return util_errmsg_set(EIO,
				       "corrupt slab at 0x%llx (old class %u)",
				       (unsigned long long)slab->off, old);
	slab->old_cls = (uint16_t)old;
	slab->old_block_size = pma_class_size(old);
	slab->old_nblocks = pma_class_nblocks(old);
	memset(slab->old_live, 0, sizeof(slab->old_live));
	for (i = 0; i < slab->old_nblocks; i++) {
		uint32_t bit = i / PMA_NBANKS;

		mask = 1ULL << (bit % 64);
		if (bm[(i % PMA_NBANKS) * (PMA_LINE / 8) + PMA_SLAB_OLD_WORD +
		       bit / 64] &
		    mask)
			slab->old_live[i % PMA_NBANKS][bit / 64] |= mask;
	}
	slab->blocked = blocked_make(slab, slab->block_size, slab->nblocks, &n);
	if (!slab->blocked)
		return util_errmsg_set(ENOMEM, "out of memory");
	slab->old_count = n;
	if (!n) {
		make_plain(slab);
		return 0;
	}
	atomic_store(&slab->mixed, 1);
	avail_make(slab);
	return 0;
}

void pma_morph_release(struct pma_slab *slab)
{
	free(slab->blocked);
	slab->blocked = NULL;
}

int pma_morph_free_old(struct pma_arena *arena, struct pma_slab *slab,
		       uint64_t off)
{
	uint64_t rel = off - slab->off - PMA_SLAB_HDR_SIZE, mask, *w;
	uint32_t i, j, first, last;

	(void)arena;
	if (rel >= PMA_CHUNK - PMA_SLAB_HDR_SIZE || rel % slab->old_block_size)
		return 0;
	i = (uint32_t)(rel / slab->old_block_size);
	if (i >= slab->old_nblocks)
		return 0;
	w = old_word(slab, i, &mask);
	if (!(*w & mask))
		return 0;
	*w &= ~mask;
	slab->old_count--;
	overlap(slab->old_block_size, slab->block_size, slab->nblocks, i,
		&first, &last);
	for (j = first; j <= last && first <= last; j++)
		if (!--slab->blocked[j] && !pma_slab_is_live(slab, j))
			pma_slab_give(slab, j);
	if (!slab->old_count)
		make_plain(slab);
	return 1;
}

int pma_morph_old_live(struct pma_slab *slab, uint64_t off)
{
	uint64_t rel = off - slab->off - PMA_SLAB_HDR_SIZE, mask;
	uint32_t i;

	if (slab->old_cls == PMA_CLS_NONE ||
	    rel >= PMA_CHUNK - PMA_SLAB_HDR_SIZE || rel % slab->old_block_size)
		return 0;
	i = (uint32_t)(rel / slab->old_block_size);
	return i < slab->old_nblocks && (*old_word(slab, i, &mask) & mask);
}

/* no remote free of slab's blocks is in flight or waits for a log (owner
 * lock held, mixed set and rbusy drained) */
static int remote_quiet(struct pma_arena *arena, struct pma_slab *slab)
{
	unsigned l, k;
	size_t i;

	/* an XFREE not yet retired by its freeing part (xout) shows in
	 * rret once it is: xout is read first (xfreed_release sets rret,
	 * then lowers xout) */
	if (atomic_load(&slab->xout) || atomic_load(&slab->in_rlist))
		return 0;
	for (l = 0; l < PMA_NBANKS; l++)
		for (k = 0; k < PMA_SLAB_LINE_WORDS; k++)
			if (atomic_load(&slab->rpend[l][k]))
				return 0;
	for (k = 0; k < PMA_LIVE_WORDS; k++)
		if (atomic_load(&slab->rdone[k]) || atomic_load(&slab->rret[k]))
			return 0;
	for (i = 0; i < arena->synced.count; i++)
		if (arena->synced.e[i].off - slab->off < PMA_CHUNK)
			return 0;
	return 1;
}

/* write the old bitmap (and its checks) to PM, durably (owner lock; the
 * header still names the slab's class: the words mean nothing yet). A
 * header that still names an old class of an earlier morph (kept while
 * a replay could need it, recovery.c sync_morph; no mixed op of the
 * slab is in the window now, see candidate) says plain first */
static void old_persist(struct pma_heap *heap, struct pma_slab *slab)
{
	char *meta = pma_addr(heap, slab->off);
	struct pma_slab_hdr *sh = (struct pma_slab_hdr *)(void *)meta;
	uint64_t *line;
	unsigned l, k;

	if (sh->morph_from) {
		sh->morph_from = 0;
		pm_flush(heap->map, sh, sizeof(*sh));
		pm_drain(heap->map);
	}

	for (l = 0; l < PMA_NBANKS; l++) {
		line = (uint64_t *)(void *)(meta + PMA_SLAB_BITMAP_OFF +
					    l * PMA_LINE);
		for (k = 0; k < PMA_SLAB_LINE_WORDS; k++)
			__atomic_store_n(&line[PMA_SLAB_OLD_WORD + k],
					 slab->old_live[l][k],
					 __ATOMIC_RELAXED);
		__atomic_store_n(&line[PMA_SLAB_OLD_CHECK],
				 pma_check_old(line + PMA_SLAB_OLD_WORD,
					       slab->off, l),
				 __ATOMIC_RELAXED);
	}
	pm_flush(heap->map, meta + PMA_SLAB_BITMAP_OFF, PMA_SLAB_BITMAP_SIZE);
	pm_drain(heap->map);
}

/* is slab (of arena, on a partial list, not its head) a candidate? its
 * live blocks in *ret_live */
static int candidate(const struct pma_arena *arena, const struct pma_slab *slab,
		     unsigned pct, uint32_t *ret_live)
{
	const struct pma_heap *heap = arena->heap;
	uint32_t live = slab->nblocks - slab->navail;

	if (slab->old_cls != PMA_CLS_NONE || !live ||
	    (uint64_t)live * 100 > (uint64_t)slab->nblocks * pct)
		return 0;
	/* made in this window: its header is not on media yet; mixed in
	 * this window: a replay of it still needs the old bitmap on media
	 * (a morph writes it first) */
	if (slab->new_k > arena->head || slab->morph_k > arena->head)
		return 0;
	if (heap->cfg.morph_idle && slab->alloc_k > arena->head)
		return 0;
	*ret_live = live;
	return 1;
}

/* a morph goes ahead only for a slab with live old blocks (else it is
 * empty: released, not morphed) whose free new blocks are >= half of
 * them */
static int morph_worth(uint32_t count, uint32_t nfree, uint32_t nb)
{
	return count && nfree >= nb / 2;
}

/* turn slab (class A, owner arena, on its partial list) into a slab of
 * class cls; 0, or -ENOENT (it stays as it was) */
static int morph(struct pma_arena *arena, struct pma_slab *slab, unsigned cls)
{
	struct pma_heap *heap = arena->heap;
	struct pma_op op = { .type = PMA_REC_SLAB_MORPH };
	uint32_t nb = pma_class_nblocks(cls), bs = pma_class_size(cls);
	uint32_t count, j, nfree = 0;
	uint16_t *blocked;
	uint64_t page;
	unsigned l, k, old = slab->cls;

	atomic_store(&slab->mixed, 1);
	while (atomic_load(&slab->rbusy))
		sched_yield();
	if (!remote_quiet(arena, slab))
		goto out_plain;
	for (l = 0; l < PMA_NBANKS; l++)
		for (k = 0; k < PMA_SLAB_LINE_WORDS; k++)
			slab->old_live[l][k] = atomic_load_explicit(
				&slab->live[l][k], memory_order_relaxed);
	slab->old_block_size = slab->block_size;
	slab->old_nblocks = slab->nblocks;
	blocked = blocked_make(slab, bs, nb, &count);
	if (!blocked)
		goto out_plain;
	for (j = 0; j < nb; j++)
		nfree += !blocked[j];
	if (!morph_worth(count, nfree, nb)) {
		free(blocked);
		goto out_plain;
	}
	old_persist(heap, slab);

	pma_partial_unlink(arena, slab);
	op.off = slab->off;
	op.cls = cls;
	op.old_cls = old;
	op.owner = arena->id;
	slab->morph_k = arena->tail + 1;
	if (!arena->mix_first)
		arena->mix_first = arena->tail + 1;
	pma_expect_ok(pma_log_append_struct(arena, &op));
	slab->old_cls = (uint16_t)old;
	slab->old_count = count;
	slab->blocked = blocked;
	set_geom(slab, cls);
	for (l = 0; l < PMA_NBANKS; l++)
		for (k = 0; k < PMA_SLAB_LINE_WORDS; k++)
			atomic_store_explicit(&slab->live[l][k], 0,
					      memory_order_relaxed);
	avail_make(slab);
	page = pma_page_of(heap, slab->off);
	atomic_store(&heap->pmap[page], pma_pmap_make_slab(cls, arena->id));
	pma_slab_mark_dirty(arena, slab);
	pma_partial_push(arena, slab);
	atomic_fetch_add_explicit(&heap->slabs_morphed, 1,
				  memory_order_relaxed);
	return 0;

out_plain:
	atomic_store(&slab->mixed, 0);
	return -ENOENT;
}

/* the new blocks (size bs, nb of them) an old block (size obs, onb of
 * them) overlaps, on average over its positions, times 256 */
static uint64_t overlap_avg(uint32_t obs, uint32_t onb, uint32_t bs,
			    uint32_t nb)
{
	uint32_t i, first, last;
	uint64_t sum = 0;

	for (i = 0; i < onb; i++) {
		overlap(obs, bs, nb, i, &first, &last);
		sum += first <= last ? last - first + 1 : 0;
	}
	return onb ? sum * 256 / onb : 0;
}

/*
 * The candidate a morph into cls gets most from: the fewest new blocks
 * its live old blocks would block (live x the average overlap of its
 * class with cls: 112 B blocks under 224 B ones block one each, 160 B
 * ones about 1.6), so a free class pairs with the classes it tiles.
 */
int pma_morph_try(struct pma_arena *arena, unsigned cls)
{
	struct pma_heap *heap = arena->heap;
	unsigned pct = heap->morph_pct, a, scanned = 0;
	uint32_t bs = pma_class_size(cls), nb = pma_class_nblocks(cls), live;
	struct pma_slab *slab, *best = NULL;
	uint64_t best_score = UINT64_MAX, f;

	if (!pct)
		return -ENOENT;
	for (a = 0; a < heap->nclasses && scanned < PMA_MORPH_SCAN; a++) {
		if (a == cls || !arena->partial[a] || !arena->partial[a]->next)
			continue;
		f = overlap_avg(pma_class_size(a), pma_class_nblocks(a), bs,
				nb);
		/* the head of the list is the slab the class allocates
		 * from */
		for (slab = arena->partial[a]->next;
		     slab && scanned < PMA_MORPH_SCAN;
		     slab = slab->next, scanned++) {
			if (!candidate(arena, slab, pct, &live) ||
			    live * f >= best_score)
				continue;
			best = slab;
			best_score = live * f;
		}
	}
	if (!best)
		return -ENOENT;
	return morph(arena, best, cls);
}

int pma_morph_fits(const uint64_t live[PMA_NBANKS][PMA_SLAB_LINE_WORDS],
		   unsigned old, unsigned cls, uint32_t *ret_free)
{
	uint32_t nb = pma_class_nblocks(cls), count, j, nfree = 0;
	uint16_t *blocked;

	blocked = blocked_of(live, pma_class_size(old), pma_class_nblocks(old),
			     pma_class_size(cls), nb, &count);
	if (!blocked)
		return util_errmsg_set(ENOMEM, "out of memory");
	for (j = 0; j < nb; j++)
		nfree += !blocked[j];
	free(blocked);
	*ret_free = nfree;
	return morph_worth(count, nfree, nb);
}

int pma_morph_slab(struct pma_arena *arena, struct pma_slab *slab, unsigned cls,
		   unsigned pct)
{
	uint32_t live;

	if (cls >= arena->heap->nclasses || cls == slab->cls ||
	    slab->owner != arena->id || !slab->in_partial ||
	    atomic_load(&slab->in_xlist) || !candidate(arena, slab, pct, &live))
		return -ENOENT;
	return morph(arena, slab, cls);
}
