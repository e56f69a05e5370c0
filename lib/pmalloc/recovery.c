/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc checkpoint and recovery. Both apply every arena's records
 * [head, tail) to the PM page map and bitmaps: first each log's own ops in
 * log order (phase 1), then the frees that may follow another log's
 * allocation of the same space (RFREE, EXT_FREE; phase 2; an EXT_LFREE
 * frees an extent of its own log: phase 1). One fence makes
 * the applied state, the pending dest words and the staged heads durable;
 * only then do all heads move together, by one head_gen store (second
 * fence): the logs are only consistent with each other over the same
 * range. A crash anywhere re-applies the same range, which yields the same
 * state. Recovery also redoes the dest words of each log's last ops
 * and clears a torn record at the tail; the read-only open runs the same
 * replay into DRAM copies (rdonly.c), and so does recovery's dry run,
 * which checks every record before recovery writes anything. A checkpoint
 * takes the ops from the arenas' DRAM copies (arena->ops, written with the
 * records) and writes the slab bitmaps from the DRAM slabs (the same end
 * state); recovery decodes the ops from the log and applies them one by
 * one.
 * Lock order: every arena lock, in index order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pmalloc/internal.h"
#include "pmem/fast.h"
#include "util/errmsg.h"
#include "util/log.h"

/* the op in DRAM copy d (checkpoints: the log holds the same, written
 * from the same op) */
static void dram_op(const struct pma_dram_op *d, struct pma_op *ret_op)
{
	ret_op->type = d->type;
	ret_op->index = d->k;
	ret_op->off = d->off;
	ret_op->dest = 0;
	ret_op->npages = d->npages;
	ret_op->cls = d->cls;
	ret_op->owner = d->owner;
	ret_op->old_cls = d->old_cls;
	ret_op->nrecs = 0; /* 1 or 2 in the log: the apply does not need it */
	ret_op->slab = NULL;
}

static int dram_is_phase2(const struct pma_dram_op *d)
{
	return d->type == PMA_REC_RFREE || d->type == PMA_REC_EXT_FREE;
}

/* an arena's last PMA_DEST_REDO runs of ops with a dest, oldest first:
 * the ops whose dest stores may not be durable (pma_log_commit); an op on
 * the same word as the op before it replaces it */
struct redo_ring {
	struct pma_op op[PMA_DEST_REDO];
	unsigned n;
};

static void redo_push(struct redo_ring *r, const struct pma_op *op)
{
	/* a SLAB_NEW is part of the next op; no dest: nothing to redo */
	if (op->type == PMA_REC_SLAB_NEW || !op->dest)
		return;
	if (r->n && r->op[r->n - 1].dest == op->dest) {
		r->op[r->n - 1] = *op;
		return;
	}
	if (r->n == PMA_DEST_REDO) {
		memmove(&r->op[0], &r->op[1], (r->n - 1) * sizeof(r->op[0]));
		r->n--;
	}
	r->op[r->n++] = *op;
}

/* apply one op, naming it in the error message */
static int apply_one(struct pma_heap *heap, const struct pma_arena *arena,
		     const struct pma_op *op, struct pma_dirty *dirty)
{
	int rc = pma_apply_op(heap, op, dirty);

	if (rc < 0)
		util_errmsg_prefix("arena %u record %llu", arena->id,
				   (unsigned long long)op->index);
	return rc;
}

/*
 * A checkpoint's pass over arena's ops of one phase: the DRAM copies of
 * its ops that are not block ops, in log order (no decode). Block ops are
 * not applied one by one and have no copy: each marked its slab dirty
 * (pma_slab_mark_dirty), and sync_bitmaps copies those slabs' live
 * bitmaps to PM. With every arena lock held, a live bitmap is the state
 * after every logged op on the slab, the same as applying them in order;
 * and replaying the range again after a crash (blind sets and clears, in
 * order) still ends in that state.
 */
static int apply_arena_dram(struct pma_heap *heap, struct pma_arena *arena,
			    int phase2, uint64_t cut, struct pma_dirty *dirty)
{
	const struct pma_dram_op *d;
	struct pma_op op;
	uint64_t i;
	int rc;

	/* phase 2 applies only EXT_FREE ops here (an RFREE is a block op),
	 * and each one is on the arena's ext_freed list until then */
	if (phase2 && !arena->ext_freed.count)
		return 0;
	for (i = 0; i < arena->struct_ops; i++) {
		d = &arena->ops[i];
		pma_assert(d->k >= arena->head && d->k < arena->tail);
		if (d->k >= cut) /* a local checkpoint's cut: later */
			break;
		/* NONE: an EXT_ALLOC cancelled by its EXT_LFREE (alloc.c) */
		if (d->type == PMA_REC_NONE || dram_is_phase2(d) != phase2)
			continue;
		if (pma_rec_is_ext(d->type)) {
			rc = pma_apply_extent_trusted(
				heap, d->off, d->npages,
				d->type == PMA_REC_EXT_ALLOC, dirty);
			if (rc < 0)
				return util_errmsg_set(-rc, "out of memory");
			continue;
		}
		dram_op(d, &op);
		rc = apply_one(heap, arena, &op, dirty);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* recovery: arena's ops of one phase decoded from the PM log, applied
 * one by one; the ops to redo collected in ret_redo (if not NULL) */
static int apply_arena_log(struct pma_heap *heap, struct pma_arena *arena,
			   int phase2, struct pma_dirty *dirty,
			   struct redo_ring *ret_redo)
{
	uint32_t cap = heap->geom.log_cap;
	struct pma_op op;
	uint64_t k;
	int rc;

	for (k = arena->head; k < arena->tail; k += op.nrecs) {
		rc = pma_booklog_read_op(arena->log, cap, k, heap->osh, &op);
		if (rc < 0)
			return util_errmsg_set(EIO,
					       "arena %u: record %llu "
					       "unreadable",
					       arena->id,
					       (unsigned long long)k);
		if (ret_redo && !phase2)
			redo_push(ret_redo, &op);
		if (pma_op_is_phase2(&op) != phase2)
			continue;
		rc = apply_one(heap, arena, &op, dirty);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* phase 1 then phase 2 over every arena. ckpt: a checkpoint (the DRAM
 * copies; block ops are left to sync_bitmaps), else decode
 * the logs; redo[i]: arena i's ops to redo (NULL: none wanted) */
static int apply_all(struct pma_heap *heap, struct pma_dirty *dirty,
		     struct redo_ring *redo, int ckpt)
{
	struct pma_arena *arena;
	unsigned i;
	int phase2, rc;

	for (phase2 = 0; phase2 <= 1; phase2++) {
		for (i = 0; i < heap->geom.narenas; i++) {
			arena = &heap->arenas[i];
			rc = ckpt ? apply_arena_dram(heap, arena, phase2,
						     arena->tail, dirty) :
				    apply_arena_log(heap, arena, phase2, dirty,
						    redo ? &redo[i] : NULL);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

/*
 * A local checkpoint that retires its window only up to a cut writes its
 * slabs' bitmaps as they were at the cut (the state a replay from the cut
 * starts from, which the bank checks rely on, banks.c): the bits the
 * arena's block ops after the cut touched get the value they had before
 * the first of those ops (an allocation found its block free, a free
 * found it live); a slab made after the cut is not written at all.
 */
struct revert_ent {
	struct pma_slab *slab; /* NULL: empty */
	uint64_t touched[PMA_NBANKS][PMA_SLAB_LINE_WORDS];
	uint64_t set[PMA_NBANKS][PMA_SLAB_LINE_WORDS];
	int skip; /* made after the cut */
};

struct revert {
	struct revert_ent *ent;
	size_t mask, count;
};

static struct revert_ent *revert_slot(struct revert_ent *ent, size_t mask,
				      const struct pma_slab *slab)
{
	size_t i = ((uintptr_t)slab >> 6) * 0x9e3779b97f4a7c15ULL >> 24;

	for (i &= mask; ent[i].slab && ent[i].slab != slab; i = (i + 1) & mask)
		;
	return &ent[i];
}

/* slab's entry, made if new; NULL if out of memory */
static struct revert_ent *revert_get(struct revert *r, struct pma_slab *slab)
{
	struct revert_ent *e, *n;
	size_t i;

	if (2 * (r->count + 1) > r->mask + 1) {
		n = calloc(2 * (r->mask + 1), sizeof(*n));
		if (!n)
			return NULL;
		for (i = 0; i <= r->mask; i++)
			if (r->ent[i].slab)
				*revert_slot(n, 2 * r->mask + 1,
					     r->ent[i].slab) = r->ent[i];
		free(r->ent);
		r->ent = n;
		r->mask = 2 * r->mask + 1;
	}
	e = revert_slot(r->ent, r->mask, slab);
	if (!e->slab) {
		e->slab = slab;
		r->count++;
	}
	return e;
}

/* the reverts of arena's records [cut, tail), decoded from its log */
static int revert_build(struct pma_heap *heap, struct pma_arena *arena,
			uint64_t cut, struct revert *r)
{
	uint32_t cap = heap->geom.log_cap, idx;
	struct revert_ent *e;
	struct pma_slab *slab;
	_Atomic uint64_t *w;
	struct pma_op op;
	uint64_t k, mask, w0;
	size_t bank, word;

	r->mask = 63;
	r->count = 0;
	r->ent = calloc(r->mask + 1, sizeof(*r->ent));
	if (!r->ent)
		return util_errmsg_set(ENOMEM, "out of memory");
	/* this arena's own records, written under the lock it holds:
	 * read their type and payload without checking them again (every
	 * record alone; an EXT_LEN is skipped as any other non-block op) */
	for (k = cut; k < arena->tail; k++) {
		w0 = __atomic_load_n(
			&pma_booklog_slot(arena->log, cap, k)->word0,
			__ATOMIC_RELAXED);
		op.type = (unsigned)(w0 & ((1u << PMA_REC_TYPE_BITS) - 1));
		op.off = (w0 >> PMA_REC_PAYLOAD_SHIFT) << heap->osh;
		if (op.type != PMA_REC_SLAB_NEW &&
		    op.type != PMA_REC_SLAB_MORPH && !pma_rec_is_block(op.type))
			continue;
		if (op.type == PMA_REC_RFREE || op.type == PMA_REC_XFREE)
			continue; /* another arena's (or part's) block */
		slab = pma_heap_slab_at(heap, op.off);
		if (!slab)
			continue;
		e = revert_get(r, slab);
		if (!e)
			return util_errmsg_set(ENOMEM, "out of memory");
		/* version 9: a slab with a mixed op after the cut (morph.c)
		 * is not written; every op of it in the window is after the
		 * cut (pma_checkpoint_local), or its morph is, whose replay
		 * needs nothing of its live words */
		if (op.type == PMA_REC_SLAB_NEW || slab->morph_k > cut) {
			e->skip = 1;
			continue;
		}
		if (pma_slab_index(slab, op.off, &idx) < 0)
			continue;
		w = pma_slab_iword(slab->live, idx, &mask);
		bank = (size_t)(w - &slab->live[0][0]) / PMA_SLAB_LINE_WORDS;
		word = (size_t)(w - &slab->live[0][0]) % PMA_SLAB_LINE_WORDS;
		if (e->touched[bank][word] & mask)
			continue;
		e->touched[bank][word] |= mask;
		if (op.type != PMA_REC_ALLOC)
			e->set[bank][word] |= mask;
	}
	return 0;
}

/* version 9: a slab that was mixed since open: its header (class, old
 * class) and old bitmap as they are in DRAM. A slab that is plain again
 * keeps the old class on media (morph_from, with an empty old bitmap)
 * while a mixed op of it is in its owner's window: a replay of the
 * window over what this checkpoint writes must still tell its old
 * blocks' frees apart (apply.c, apply_old_free) */
static int sync_morph(struct pma_heap *heap, struct pma_slab *slab,
		      struct pma_dirty *dirty)
{
	struct pma_slab_hdr *sh = pma_addr(heap, slab->off);
	uint16_t from = slab->old_cls == PMA_CLS_NONE ?
				0 :
				(uint16_t)(slab->old_cls + 1);
	uint64_t *line, v;
	unsigned l, k;
	int changed;

	if (!from && slab->morph_k > heap->arenas[slab->owner].head)
		from = sh->morph_from;

	if (sh->cls != slab->cls || sh->block_size != slab->block_size ||
	    sh->nblocks != slab->nblocks || sh->morph_from != from) {
		sh->cls = slab->cls;
		sh->block_size = slab->block_size;
		sh->nblocks = slab->nblocks;
		sh->morph_from = from;
		if (pma_dirty_add(dirty, sh, sizeof(*sh)) < 0)
			return -ENOMEM;
	}
	line = (uint64_t *)((char *)sh + PMA_SLAB_BITMAP_OFF);
	for (l = 0; l < PMA_NBANKS; l++, line += PMA_LINE / 8) {
		changed = 0;
		for (k = 0; k < PMA_SLAB_LINE_WORDS; k++) {
			v = slab->old_cls != PMA_CLS_NONE ?
				    slab->old_live[l][k] :
				    0;
			if (line[PMA_SLAB_OLD_WORD + k] == v)
				continue;
			__atomic_store_n(&line[PMA_SLAB_OLD_WORD + k], v,
					 __ATOMIC_RELAXED);
			changed = 1;
		}
		if (!changed && (!heap->checked ||
				 line[PMA_SLAB_OLD_CHECK] ==
					 pma_check_old(line + PMA_SLAB_OLD_WORD,
						       slab->off, l)))
			continue;
		if (heap->checked)
			__atomic_store_n(&line[PMA_SLAB_OLD_CHECK],
					 pma_check_old(line + PMA_SLAB_OLD_WORD,
						       slab->off, l),
					 __ATOMIC_RELAXED);
		if (pma_dirty_add(dirty, line, PMA_LINE) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* one slab's live bitmap into its PM bitmap (the same interleaved
 * layout): compare and store word by word, mark the banks that changed;
 * r: reverts of a local checkpoint's cut (NULL: none) */
static int sync_slab(struct pma_heap *heap, struct pma_slab *slab,
		     struct revert *r, struct pma_dirty *dirty)
{
	uint64_t *line = (uint64_t *)((char *)pma_addr(heap, slab->off) +
				      PMA_SLAB_BITMAP_OFF);
	const struct revert_ent *e = NULL;
	unsigned l, k;
	int changed;
	uint64_t v;

	if (r && r->count) {
		e = revert_slot(r->ent, r->mask, slab);
		if (!e->slab)
			e = NULL;
		else if (e->skip)
			return 0;
	}

	for (l = 0; l < PMA_NBANKS; l++, line += PMA_LINE / 8) {
		changed = 0;
		for (k = 0; k < PMA_SLAB_LINE_WORDS; k++) {
			/* a remote free sets rpend before it clears live:
			 * read live first (acquire), and a cleared bit
			 * shows in rpend until the owner's SYNC_FREE is
			 * durable; live | rpend never holds a free that the
			 * logs do not commit */
			v = atomic_load_explicit(&slab->live[l][k],
						 memory_order_acquire);
			v |= atomic_load_explicit(&slab->rpend[l][k],
						  memory_order_acquire);
			if (e)
				v = (v & ~e->touched[l][k]) | e->set[l][k];
			if (line[k] == v)
				continue;
			__atomic_store_n(&line[k], v, __ATOMIC_RELAXED);
			changed = 1;
		}
		if (!changed)
			continue;
		if (heap->checked)
			pma_check_bank_seal(pma_addr(heap, slab->off),
					    slab->off, l);
		if (pma_dirty_add(dirty, line, PMA_LINE) < 0)
			return -ENOMEM;
	}
	if (slab->morph_k || slab->old_cls != PMA_CLS_NONE)
		return sync_morph(heap, slab, dirty);
	return 0;
}

/* write the live bitmaps (live | rpend) of arena's dirty slabs to PM */
static int sync_arena_bitmaps(struct pma_heap *heap, struct pma_arena *arena,
			      struct revert *r, struct pma_dirty *dirty)
{
	struct pma_slab *slab;
	int rc;

	for (slab = arena->dirty_slabs; slab; slab = slab->dirty_next) {
		rc = sync_slab(heap, slab, r, dirty);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* checkpoint: write each dirty slab's live bitmap to its PM bitmap */
static int sync_bitmaps(struct pma_heap *heap, struct pma_dirty *dirty)
{
	unsigned i;
	int rc;

	for (i = 0; i < heap->geom.narenas; i++) {
		rc = sync_arena_bitmaps(heap, &heap->arenas[i], NULL, dirty);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* arena's ops before cut are retired: its dirty list starts again (its
 * slabs' bitmaps on media hold every op up to tail; a replay of the
 * records after cut sets and clears the same bits again), and its DRAM
 * op copies before cut go (on a failed checkpoint nothing is reset, so
 * the next one writes those slabs again) */
static void reset_arena(struct pma_arena *arena, uint64_t cut)
{
	struct pma_slab *slab;
	uint64_t i, n = 0;

	/* a cut inside the window wrote the slabs as of the cut: the next
	 * checkpoint writes them again */
	for (slab = arena->dirty_slabs; slab && cut == arena->tail;
	     slab = slab->dirty_next)
		atomic_store_explicit(&slab->dirty, 0, memory_order_relaxed);
	if (cut == arena->tail) {
		arena->dirty_slabs = NULL;
		arena->mix_first = 0;
	}
	for (i = 0; i < arena->struct_ops && cut != arena->tail; i++)
		if (arena->ops[i].k >= cut)
			arena->ops[n++] = arena->ops[i];
	arena->struct_ops = n;
}

/* after the heads moved: the arenas start a new window */
static void reset_dirty(struct pma_heap *heap)
{
	unsigned i;

	for (i = 0; i < heap->geom.narenas; i++)
		reset_arena(&heap->arenas[i], heap->arenas[i].tail);
}

/* write head into arena's staging slot, the one its next generation
 * selects (flushed, not fenced: it means nothing until the generation
 * moves) */
static void stage_head(struct pma_heap *heap, struct pma_arena *arena,
		       uint64_t head)
{
	uint64_t gen = arena->gen + 1;
	unsigned next = (unsigned)gen & 1;

	__atomic_store_n(&arena->desc->head[next], head, __ATOMIC_RELAXED);
	if (heap->checked)
		__atomic_store_n(&arena->desc->check[next],
				 pma_check_head(head, arena->id, gen),
				 __ATOMIC_RELAXED);
	pm_flush(heap->map, arena->desc, sizeof(*arena->desc));
}

/* every arena's tail into its staging head slot */
static void stage_heads(struct pma_heap *heap)
{
	unsigned i;

	for (i = 0; i < heap->geom.narenas; i++)
		stage_head(heap, &heap->arenas[i], heap->arenas[i].tail);
}

/* after the fence that made the applied state and the staged heads
 * durable: move all heads at once with one 8-byte store, and fence */
static void flip_heads(struct pma_heap *heap)
{
	unsigned i;

	heap->head_gen++;
	__atomic_store_n(&heap->hdr->head_gen,
			 heap->checked ? pma_check_gen(heap->head_gen) :
					 heap->head_gen,
			 __ATOMIC_RELAXED);
	pm_flush(heap->map, &heap->hdr->head_gen, sizeof(uint64_t));
	pm_drain(heap->map);
	for (i = 0; i < heap->geom.narenas; i++) {
		heap->arenas[i].gen = (heap->arenas[i].gen + 1) & PMA_GEN_MASK;
		heap->arenas[i].head = heap->arenas[i].tail;
		heap->arenas[i].est_mark = heap->arenas[i].tail;
		atomic_store_explicit(&heap->arenas[i].head_pub,
				      heap->arenas[i].tail,
				      memory_order_release);
	}
	atomic_store_explicit(&heap->log_records, 0, memory_order_relaxed);
}

/* a local checkpoint, after the fence that made its applied state and
 * its staged head durable: move arena's head alone (its lgen), fence */
static void flip_local(struct pma_heap *heap, struct pma_arena *arena,
		       uint64_t cut)
{
	arena->lgen = (arena->lgen + 1) & PMA_GEN_MASK;
	__atomic_store_n(&arena->desc->lgen,
			 pma_check_lgen(arena->lgen, arena->id),
			 __ATOMIC_RELAXED);
	pm_flush(heap->map, &arena->desc->lgen, sizeof(uint64_t));
	pm_drain(heap->map);
	arena->gen = (arena->gen + 1) & PMA_GEN_MASK;
	arena->head = cut;
	atomic_store_explicit(&arena->head_pub, cut, memory_order_release);
}

/* the DRAM slab of the block at pool offset off of another part of
 * heap's pool, its index in *ret_idx; NULL if none */
static struct pma_slab *xblock_slab(struct pma_heap *heap, uint64_t off,
				    uint32_t *ret_idx)
{
	unsigned part = pool_off_part(off);
	struct pma_heap *o;
	struct pma_slab *slab;

	o = part < POOL_MAX_PARTS ? pma_heap_route(heap, off) : NULL;
	slab = o ? pma_heap_slab_at(o, pool_off_byte(off)) : NULL;
	if (!slab || pma_slab_index(slab, pool_off_byte(off), ret_idx) < 0)
		return NULL;
	return slab;
}

/* is the free of the block at pool offset off (an XFREE) applied by its
 * owner (its SYNC_FREE durable: rpend clear)? */
static int xblock_synced(struct pma_heap *heap, uint64_t off)
{
	struct pma_slab *slab;
	uint64_t mask;
	uint32_t idx;

	slab = xblock_slab(heap, off, &idx);
	return !slab ||
	       !(atomic_load_explicit(pma_slab_iword(slab->rpend, idx, &mask),
				      memory_order_acquire) &
		 mask);
}

/* arena's XFREEs before cut are retired: their blocks go back to their
 * owners (in the other parts) through rret, taken at the owner's next
 * pma_arena_xsync */
static void xfreed_release(struct pma_heap *heap, struct pma_arena *arena,
			   uint64_t cut)
{
	struct pma_slab *slab;
	const struct pma_ret *r;
	struct pma_heap *o;
	uint32_t idx;
	size_t i;

	for (i = 0; i < arena->xfreed.count; i++) {
		r = &arena->xfreed.e[i];
		if (r->k >= cut)
			break;
		slab = xblock_slab(heap, r->off, &idx);
		if (!slab)
			continue;
		o = pma_heap_route(heap, r->off);
		atomic_fetch_or(&slab->rret[idx / 64], 1ULL << (idx % 64));
		/* after rret: remote_quiet reads xout first, then rret */
		atomic_fetch_sub(&slab->xout, 1);
		pma_xlist_push(&o->arenas[slab->owner], slab);
	}
	pma_retq_trim(&arena->xfreed, cut);
}

/*
 * After arena's head moved to cut (cut == tail for a global checkpoint,
 * which holds every arena lock): its frees before cut become reusable.
 * A remote-freed block goes back to its owner: at once under a global
 * checkpoint, else through the owner's rret bits (the owner takes it at
 * its next sync). Freed extents and released slabs go to the free-extent
 * index; the arena's local runs too, once nothing of its window is left.
 */
static void release_pending(struct pma_heap *heap, struct pma_arena *arena,
			    uint64_t cut, int global)
{
	struct pma_slab *slab;
	uint64_t page, e, freed = 0;
	struct pma_ret *r;
	uint32_t idx;
	size_t i;

	for (i = 0; i < arena->rfreed.count; i++) {
		r = &arena->rfreed.e[i];
		if (r->k >= cut)
			break;
		slab = pma_heap_slab_at(heap, r->off);
		if (!slab || pma_slab_index(slab, r->off, &idx))
			continue;
		if (global) {
			pma_slab_give(slab, idx);
			pma_partial_push(&heap->arenas[slab->owner], slab);
			pma_slab_empty_check(&heap->arenas[slab->owner], slab);
		} else {
			atomic_fetch_or(&slab->rret[idx / 64],
					1ULL << (idx % 64));
			pma_rlist_push(&heap->arenas[slab->owner], slab);
		}
	}
	pma_retq_trim(&arena->rfreed, cut);
	xfreed_release(heap, arena, cut);
	pthread_mutex_lock(&heap->ext_lock);
	/* the slabs this checkpoint released: reserve_ext_nodes made room */
	for (i = 0; i < arena->slab_freed.count; i++)
		if (arena->slab_freed.e[i].k < cut)
			pma_expect_ok(pma_ext_put(&heap->ext,
						  arena->slab_freed.e[i].off,
						  PMA_CHUNK_PAGES));
	for (i = 0; i < arena->ext_freed.count; i++) {
		if (arena->ext_freed.e[i].k >= cut)
			continue;
		page = arena->ext_freed.e[i].off;
		e = atomic_exchange(&heap->pmap[page], 0);
		/* cannot fail: reserve_ext_nodes made room */
		pma_expect_ok(
			pma_ext_put(&heap->ext, page, pma_pmap_npages(e)));
		freed += pma_pmap_npages(e);
	}
	/* the arena's locally freed extents go to everyone once no record
	 * of them is left in the window */
	for (i = 0; cut == arena->tail && i < arena->local.count; i++) {
		pma_expect_ok(pma_ext_put(&heap->ext, arena->local.runs[i].page,
					  arena->local.runs[i].npages));
	}
	pthread_mutex_unlock(&heap->ext_lock);
	if (cut == arena->tail) {
		freed += arena->local.pages;
		arena->local.count = 0;
		arena->local.pages = 0;
	}
	pma_retq_trim(&arena->slab_freed, cut);
	pma_retq_trim(&arena->ext_freed, cut);
	pma_retq_trim(&arena->synced, cut);
	atomic_fetch_sub(&heap->pending_pages, arena->pend_pub);
	arena->pend_pages -= freed;
	if (arena->pend_pages)
		atomic_fetch_add(&heap->pending_pages, arena->pend_pages);
	arena->pend_pub = arena->pend_pages;
}

/* the index nodes arena's release_pending(cut) needs at most */
static size_t ext_nodes_needed(const struct pma_arena *arena, uint64_t cut)
{
	size_t i, n = cut == arena->tail ? arena->local.count : 0;

	for (i = 0; i < arena->ext_freed.count; i++)
		n += arena->ext_freed.e[i].k < cut;
	for (i = 0; i < arena->slab_freed.count; i++)
		n += arena->slab_freed.e[i].k < cut;
	return n;
}

/* before a checkpoint changes anything: index nodes for every extent
 * release_pending will give back (one each at most), so that it cannot
 * fail after the heads moved; -ENOMEM (nothing changed) if there is no
 * memory for them. arena: only its own, up to cut (a local checkpoint),
 * else every arena's */
static int reserve_ext_nodes(struct pma_heap *heap, struct pma_arena *arena,
			     uint64_t cut)
{
	size_t n = 0;
	unsigned i;
	int rc;

	if (arena)
		n = ext_nodes_needed(arena, cut);
	for (i = 0; !arena && i < heap->geom.narenas; i++)
		n += ext_nodes_needed(&heap->arenas[i], heap->arenas[i].tail);
	if (!n)
		return 0;
	pthread_mutex_lock(&heap->ext_lock);
	rc = pma_ext_reserve(&heap->ext, n);
	pthread_mutex_unlock(&heap->ext_lock);
	return rc < 0 ? util_errmsg_set(ENOMEM, "out of memory for the "
						"free-extent index") :
			0;
}

static int any_records(const struct pma_heap *heap)
{
	unsigned i;

	for (i = 0; i < heap->geom.narenas; i++)
		if (heap->arenas[i].tail != heap->arenas[i].head)
			return 1;
	return 0;
}

PMA_API int pma_heap_checkpoint(struct pma_heap *heap)
{
	unsigned p;
	int rc = 0;

	if (!heap)
		return util_errmsg_set(EINVAL, "no heap");
	if (pma_heap_writable(heap) < 0)
		return -EROFS;
	heap = heap->top;
	(void)pma_heap_sync(heap); /* other opens' frees first */
	for (p = 0; p < PMA_MAX_SLOTS && rc == 0; p++)
		if (pma_sib(heap, p))
			rc = pma_checkpoint(pma_sib(heap, p));
	return rc;
}

static int checkpoint_arena(struct pma_heap *heap)
{
	struct pma_arena *arena;
	int rc;

	if (!heap->local)
		return pma_checkpoint(heap);
	arena = pma_arena_get(heap);
	pma_arena_lock(arena);
	rc = pma_checkpoint_local(arena);
	/* the owner's fast paths look at fast_end: the head moved */
	arena->fast_end = 0;
	pma_arena_unlock(arena);
	return rc;
}

PMA_API int pma_heap_checkpoint_arena(struct pma_heap *heap)
{
	unsigned p;
	int rc = 0;

	if (!heap)
		return util_errmsg_set(EINVAL, "no heap");
	if (pma_heap_writable(heap) < 0)
		return -EROFS;
	heap = heap->top;
	if (heap->nsib == 1)
		return checkpoint_arena(heap);
	/* the thread's arena in each part it has used */
	for (p = 0; p < PMA_MAX_SLOTS && rc == 0; p++)
		if (heap->sib[p] &&
		    pma_tls_binding[p].heap_id == heap->sib[p]->id)
			rc = checkpoint_arena(heap->sib[p]);
	return rc;
}

/*
 * Releasing empty slabs (every arena lock held, before the apply): a
 * SLAB_FREE record in the owner's log (applied by this checkpoint with
 * the rest: the page map entry goes to 0), the slab off its partial list
 * and out of the DRAM page map and slab table (a free or usable_size that
 * looks it up now finds no slab: the block is not live), its chunk on the
 * arena's slab_freed list, given to the heap once the heads moved
 * (release_pending). Only the owner's log can name the slab's blocks in
 * this window: every block is available, so no other arena's remote free
 * of one waits for this checkpoint (it would not be available before),
 * and allocations from another arena's slabs are logged in the owner's
 * log.
 */

/* release slab (empty, on its partial list) of arena, its owner; if
 * there is no log room or no memory it stays a slab, where it is */
static void slab_release(struct pma_heap *heap, struct pma_arena *arena,
			 struct pma_slab *slab)
{
	struct pma_op op = { .type = PMA_REC_SLAB_FREE,
			     .off = slab->off,
			     .cls = slab->cls,
			     .owner = slab->owner };
	uint64_t page = pma_page_of(heap, slab->off);

	if (pma_retq_push(&arena->slab_freed, page, arena->tail, PMA_NO_DEP,
			  0) < 0)
		return;
	if (pma_log_append_struct(arena, &op) < 0) {
		arena->slab_freed.count--;
		return;
	}
	pma_partial_unlink(arena, slab);
	/* durable before the apply, and before the next record is written,
	 * as every op's (recovery takes a valid record after an invalid one
	 * for corruption) */
	pm_drain(heap->map);
	/* the entry first: pma_lazy_get reads it before the table */
	atomic_store_explicit(&heap->pmap[page], 0, memory_order_release);
	atomic_store_explicit(&heap->slabs[page / PMA_CHUNK_PAGES], NULL,
			      memory_order_release);
	slab->next = arena->released;
	arena->released = slab;
	atomic_fetch_add_explicit(&heap->slabs_released, 1,
				  memory_order_relaxed);
}

/* release slab if it is empty and on its partial list, unless keep says
 * not: 0 keeps none, 1 the slab the arena allocates from next (first on
 * its list), more keeps all */
static void release_one(struct pma_heap *heap, struct pma_arena *arena,
			struct pma_slab *slab, unsigned keep)
{
	/* a mixed slab may have every block available (its old blocks
	 * past its last one) but is not empty */
	if (slab->navail != slab->nblocks || slab->old_cls != PMA_CLS_NONE ||
	    !slab->in_partial || keep > 1 ||
	    (keep && arena->partial[slab->cls] == slab))
		return;
	slab_release(heap, arena, slab);
}

/* release arena's empty slabs (see above): those that became empty since
 * the last checkpoint (O(1) each), or all (force: every partial list);
 * their records made durable */
static void release_empty_arena(struct pma_heap *heap, struct pma_arena *arena,
				int force)
{
	/* an older layout's log gets no SLAB_FREE */
	int able = heap->geom.version >= PMA_HEAP_VERSION_SLAB_FREE;
	struct pma_slab *slab, *next;
	unsigned cls;

	for (slab = arena->cands; slab; slab = next) {
		next = slab->cand_next;
		slab->empty_cand = 0;
		slab->cand_next = NULL;
		if (able && !force)
			release_one(heap, arena, slab, heap->slab_keep);
	}
	arena->cands = NULL;
	if (!able || !force)
		return;
	for (cls = 0; cls < PMA_NCLASSES; cls++)
		for (slab = arena->partial[cls]; slab; slab = next) {
			next = slab->next;
			release_one(heap, arena, slab, 0);
		}
}

static void release_empty(struct pma_heap *heap, int force)
{
	unsigned i;

	for (i = 0; i < heap->geom.narenas; i++)
		release_empty_arena(heap, &heap->arenas[i], force);
}

/* after arena's dirty list was reset: the slabs it released are on no
 * list any more */
static void released_to_spare(struct pma_heap *heap, struct pma_arena *arena)
{
	struct pma_slab *slab = arena->released, *last;

	if (!slab)
		return;
	for (last = slab; last->next; last = last->next)
		;
	pthread_mutex_lock(&heap->ext_lock);
	last->next = heap->spare_slabs;
	heap->spare_slabs = slab;
	pthread_mutex_unlock(&heap->ext_lock);
	arena->released = NULL;
}

/* the blocks of slab whose bits are set in words bits[]: rpend set (on)
 * or cleared */
static void rpend_set_bits(struct pma_slab *slab, _Atomic uint64_t *bits,
			   int on)
{
	uint64_t b, mask;
	uint32_t idx;
	unsigned w;

	for (w = 0; w < PMA_LIVE_WORDS; w++)
		for (b = atomic_load(&bits[w]); b; b &= b - 1) {
			idx = w * 64 + (uint32_t)__builtin_ctzll(b);
			if (on)
				atomic_fetch_or(pma_slab_iword(slab->rpend, idx,
							       &mask),
						mask);
			else
				pma_slab_rpend_clear(slab, idx);
		}
}

/*
 * The global checkpoint's side of two-phase frees (every arena lock held,
 * so no remote free runs). Every committed remote free (rdone) is retired
 * by this checkpoint together with its owner's bitmap, so no SYNC_FREE is
 * written: before the apply its rpend bit goes and the owner's slab is
 * marked dirty (its image shows the block free); the slabs stay on a
 * chain (in_rlist set). Once the heads moved (ok) their rdone bits go and
 * the blocks whose remote frees a local checkpoint retired (rret) go back
 * to the owner; if the checkpoint failed, the rpend bits come back and the
 * chain goes back on the owner's rlist.
 */
static struct pma_slab *remote_begin(struct pma_arena *arena)
{
	struct pma_slab *chain = atomic_exchange(&arena->rlist, NULL), *slab;
	unsigned w;

	for (slab = chain; slab; slab = slab->rnext)
		for (w = 0; w < PMA_LIVE_WORDS; w++)
			if (atomic_load(&slab->rdone[w])) {
				pma_slab_mark_dirty(arena, slab);
				rpend_set_bits(slab, slab->rdone, 0);
				break;
			}
	return chain;
}

static void remote_end(struct pma_arena *arena, struct pma_slab *chain, int ok)
{
	struct pma_slab *slab, *next;
	uint64_t bits;
	unsigned w;
	int gave;

	for (slab = chain; slab; slab = next) {
		next = slab->rnext;
		if (!ok) {
			rpend_set_bits(slab, slab->rdone, 1);
			slab->rnext = atomic_load(&arena->rlist);
			atomic_store(&arena->rlist, slab);
			continue;
		}
		atomic_store(&slab->in_rlist, 0);
		gave = 0;
		for (w = 0; w < PMA_LIVE_WORDS; w++) {
			atomic_store(&slab->rdone[w], 0);
			bits = atomic_exchange(&slab->rret[w], 0);
			gave |= bits != 0;
			for (; bits; bits &= bits - 1)
				pma_slab_give(slab,
					      w * 64 +
						      (uint32_t)__builtin_ctzll(
							      bits));
		}
		if (gave) {
			pma_partial_push(arena, slab);
			pma_slab_empty_check(arena, slab);
		}
	}
}

/* the log room a checkpoint lets pma_arena_xsync use in arena (lock
 * held): what an op may need (PMA_OP_RECS) and a SLAB_FREE stay free */
static uint64_t xsync_room(const struct pma_arena *arena)
{
	uint64_t used = arena->tail - arena->head + 8;
	uint32_t cap = arena->heap->geom.log_cap;

	return used < cap ? cap - used : 0;
}

/*
 * A global checkpoint of heap (every arena lock of its part, and the
 * pool's xckpt_lock, held) retires every record of its windows, its
 * XFREEs too: each must first be applied by its block's owner, an arena
 * of another part (doc/shared-heaps.md, step 1). With this part's arena
 * locks held no XFREE is added, so the set is fixed; the owner arena's
 * lock is taken alone (the xckpt_lock orders this against the other
 * parts' global checkpoints, which do the same the other way; no op holds
 * an arena lock while it waits for another) and pma_arena_xsync writes
 * the owner's SYNC_FREE records. -EAGAIN, with nothing retired, if an
 * owner's log has no room for them (its next checkpoint makes room).
 */
static int xfree_sync_owners(struct pma_heap *heap)
{
	const struct pma_ret *r;
	struct pma_arena *arena, *owner;
	struct pma_slab *slab;
	struct pma_heap *o;
	uint32_t idx;
	unsigned i;
	size_t j;

	for (i = 0; i < heap->geom.narenas; i++) {
		arena = &heap->arenas[i];
		for (j = arena->xfreed.ok; j < arena->xfreed.count; j++) {
			r = &arena->xfreed.e[j];
			if (xblock_synced(heap, r->off))
				continue;
			slab = xblock_slab(heap, r->off, &idx);
			o = pma_heap_route(heap, r->off);
			owner = &o->arenas[slab->owner];
			pma_arena_lock(owner);
			(void)pma_arena_xsync(owner, xsync_room(owner));
			/* the owner's fast paths look at fast_end: its
			 * tail moved (arena_fast_refresh) */
			owner->fast_end = 0;
			pma_arena_unlock(owner);
			if (!xblock_synced(heap, r->off))
				return util_errmsg_set(
					EAGAIN,
					"part %u arena %u: no log room to "
					"apply the frees of its blocks made "
					"in part %u",
					o->part, owner->id, heap->part);
		}
	}
	return 0;
}

/* pma_checkpoint with ckpt_lock held; force: release every empty slab;
 * carry: one an op found due, which leaves the owed SYNC_FREEs of this
 * part's arenas to their ops' fences (an explicit one, or at close,
 * writes them: retired with this window, nothing owed after a close) */
static int checkpoint_locked(struct pma_heap *heap, int force, int carry)
{
	struct pma_slab *chains[PMA_MAX_ARENAS];
	struct pma_dirty dirty = { 0 };
	unsigned n = heap->geom.narenas, i;
	int multi = heap->top->nsib > 1, rc = 0;

	if (multi)
		pthread_mutex_lock(&heap->top->xckpt_lock);
	pma_arenas_lock(heap);
	/* the frees of this part's blocks by other parts (XFREE), applied
	 * in the owners' logs: retired with this window if written; at a
	 * checkpoint an op found due most are left to the owners' next ops
	 * (alloc.c, carry_put), and the freeing part's checkpoint makes the
	 * rest written (xfree_sync_owners) */
	for (i = 0; multi && i < n; i++)
		if ((carry ? pma_arena_xsync_carry : pma_arena_xsync)(
			    &heap->arenas[i], xsync_room(&heap->arenas[i])))
			heap->arenas[i].fast_end = 0; /* its tail moved */
	for (i = 0; i < n; i++)
		chains[i] = remote_begin(&heap->arenas[i]);
	release_empty(heap, force);
	if (!any_records(heap))
		goto out_unlock;
	if (multi) {
		rc = xfree_sync_owners(heap);
		if (rc < 0)
			goto out_unlock;
	}
	rc = reserve_ext_nodes(heap, NULL, 0);
	if (rc < 0)
		goto out_unlock;
	dirty.off = pm_flush_is_noop(heap->map);
	rc = apply_all(heap, &dirty, NULL, 1);
	if (rc == 0)
		rc = sync_bitmaps(heap, &dirty);
	if (rc < 0)
		goto out_unlock;
	for (i = 0; i < heap->geom.narenas; i++)
		pma_arena_flush_dest(&heap->arenas[i]);
	pma_dirty_flush(heap, &dirty);
	stage_heads(heap);
	/* the applied state must be durable before the heads move */
	pm_drain(heap->map);
	flip_heads(heap);
	reset_dirty(heap);
	for (i = 0; i < heap->geom.narenas; i++) {
		released_to_spare(heap, &heap->arenas[i]);
		release_pending(heap, &heap->arenas[i], heap->arenas[i].tail,
				1);
	}
	atomic_fetch_add(&heap->checkpoints, 1);
out_unlock:
	/* no records: no remote free is committed, the chains are empty
	 * but for rret bits, which go back (ok) */
	for (i = 0; i < n; i++)
		remote_end(&heap->arenas[i], chains[i], rc == 0);
	pma_arenas_unlock(heap);
	if (multi)
		pthread_mutex_unlock(&heap->top->xckpt_lock);
	pma_dirty_release(&dirty);
	return rc;
}

/* a checkpoint under ckpt_lock; wait: for a running one to end (then
 * run), else skip (0) */
static int checkpoint_take(struct pma_heap *heap, int wait, int force)
{
	int rc;

	if (wait)
		pthread_mutex_lock(&heap->ckpt_lock);
	else if (pthread_mutex_trylock(&heap->ckpt_lock) != 0)
		return 0;
	rc = checkpoint_locked(heap, force, !wait);
	pthread_mutex_unlock(&heap->ckpt_lock);
	return rc;
}

int pma_checkpoint(struct pma_heap *heap)
{
	return checkpoint_take(heap, 1, 0);
}

int pma_checkpoint_trim(struct pma_heap *heap)
{
	return checkpoint_take(heap, 1, 1);
}

int pma_checkpoint_due(struct pma_heap *heap)
{
	return checkpoint_take(heap, 0, 0);
}

/*
 * Local (per-arena) checkpoints, version 8 (doc/pmalloc.md, "Per-arena
 * checkpoints"). Only arena's lock is held: other arenas run their ops and
 * their own checkpoints meanwhile. Arena's window [head, tail) is retired
 * up to a cut: the first record that must wait for another arena.
 *  - An RFREE of a block owned by arena O waits until O's SYNC_FREE of it
 *    is durable (O cleared the block's rpend bit after that fence): then
 *    O's log holds the free after O's own records of the block, and
 *    recovery never needs this RFREE to undo one of them.
 *  - An EXT_FREE of an extent that arena O allocated since open waits
 *    until O's head passed O's tail at the time of the free (O's
 *    EXT_ALLOC is retired: a replay of O's window cannot allocate the
 *    extent again over a later reuse of its pages).
 * Everything else in the window depends on this log alone: its own block
 * ops (its slabs' bitmaps hold live | rpend, which never shows a free
 * that is not committed), SLAB_NEW, EXT_ALLOC, EXT_LFREE, SLAB_FREE.
 * Blocks and extents freed by records before the cut become reusable once
 * the head moved: remote-freed blocks through their owner's rret bits.
 */

/* the first record of arena's window that another arena must act on
 * before it can be retired (tail if none) */
static uint64_t local_cut(struct pma_heap *heap, struct pma_arena *arena)
{
	uint64_t cut = arena->tail, mask;
	const struct pma_ret *r;
	struct pma_slab *slab;
	uint32_t idx;
	size_t i;

	for (i = arena->rfreed.ok; i < arena->rfreed.count; i++) {
		r = &arena->rfreed.e[i];
		slab = pma_heap_slab_at(heap, r->off);
		if (slab && pma_slab_index(slab, r->off, &idx) == 0 &&
		    atomic_load_explicit(pma_slab_iword(slab->rpend, idx,
							&mask),
					 memory_order_acquire) &
			    mask) {
			cut = r->k;
			break;
		}
	}
	arena->rfreed.ok = i;
	/* version 10: an XFREE waits until its block's owner, in another
	 * part, applied it (SYNC_FREE durable, rpend clear) */
	for (i = arena->xfreed.ok; i < arena->xfreed.count; i++) {
		r = &arena->xfreed.e[i];
		if (r->k >= cut)
			break;
		if (!xblock_synced(heap, r->off)) {
			if (r->k < cut)
				cut = r->k;
			break;
		}
	}
	arena->xfreed.ok = i;
	/* a SYNC_FREE stays until its block came back: given back to
	 * avail (or taken again since: live), or in rret */
	for (i = arena->synced.ok; i < arena->synced.count; i++) {
		r = &arena->synced.e[i];
		if (r->k >= cut)
			break;
		slab = pma_heap_slab_at(heap, r->off);
		if (slab && pma_slab_index(slab, r->off, &idx) == 0 &&
		    !(slab->avail[idx / 64] & 1ULL << (idx % 64)) &&
		    !(atomic_load(&slab->rret[idx / 64]) &
		      1ULL << (idx % 64)) &&
		    !pma_slab_is_live(slab, idx)) {
			cut = r->k;
			break;
		}
	}
	arena->synced.ok = i;
	for (i = 0; i < arena->ext_freed.count; i++) {
		r = &arena->ext_freed.e[i];
		if (r->k >= cut)
			break;
		if (r->dep_arena != PMA_NO_DEP &&
		    atomic_load_explicit(&heap->arenas[r->dep_arena].head_pub,
					 memory_order_acquire) < r->dep_k) {
			cut = r->k;
			break;
		}
	}
	return cut;
}

/* the log room arena leaves for an op (arena_lock_room's PMA_OP_RECS)
 * and a local checkpoint's SLAB_FREE records */
#define PMA_LOCAL_SPARE 64

int pma_checkpoint_local(struct pma_arena *arena)
{
	struct pma_heap *heap = arena->heap;
	uint32_t cap = heap->geom.log_cap;
	struct pma_dirty dirty = { 0 };
	struct revert r = { 0 };
	uint64_t used, cut;
	int rc;

	if (!heap->local)
		return util_errmsg_set(ENOTSUP,
				       "heap version %u has no "
				       "per-arena checkpoints",
				       heap->geom.version);
	/* phase 2 of the remote frees of this arena's blocks first: their
	 * SYNC_FREE records join this window */
	used = arena->tail - arena->head;
	if (used + PMA_LOCAL_SPARE < cap)
		(void)pma_arena_sync(arena, cap - used - PMA_LOCAL_SPARE);
	cut = local_cut(heap, arena);
	if (cut == arena->tail) {
		/* a cut inside the window keeps the slabs: their chunks
		 * would wait for this log anyway */
		release_empty_arena(heap, arena, 0);
		cut = arena->tail;
	}
	/* version 9: a cut inside the window goes before its first mixed
	 * op (see revert_build) */
	if (cut < arena->tail && arena->mix_first && arena->mix_first - 1 < cut)
		cut = arena->mix_first - 1;
	if (cut == arena->head)
		return 0;
	rc = reserve_ext_nodes(heap, arena, cut);
	if (rc < 0)
		return rc;
	dirty.off = pm_flush_is_noop(heap->map);
	if (cut < arena->tail)
		atomic_fetch_add_explicit(&heap->local_partial, 1,
					  memory_order_relaxed);
	rc = cut < arena->tail ? revert_build(heap, arena, cut, &r) : 0;
	if (rc == 0)
		rc = apply_arena_dram(heap, arena, 0, cut, &dirty);
	if (rc == 0)
		rc = apply_arena_dram(heap, arena, 1, cut, &dirty);
	if (rc == 0)
		rc = sync_arena_bitmaps(heap, arena, &r, &dirty);
	free(r.ent);
	if (rc < 0) {
		pma_dirty_release(&dirty);
		return rc;
	}
	pma_arena_flush_dest(arena);
	pma_dirty_flush(heap, &dirty);
	pma_dirty_release(&dirty);
	stage_head(heap, arena, cut);
	/* the applied state must be durable before the head moves */
	pm_drain(heap->map);
	flip_local(heap, arena, cut);
	reset_arena(arena, cut);
	released_to_spare(heap, arena);
	release_pending(heap, arena, cut, 0);
	atomic_fetch_add_explicit(&heap->local_checkpoints, 1,
				  memory_order_relaxed);
	return 0;
}

/*
 * Recovery: store the dest words of each log's last ops again (their
 * stores may not be durable, see pma_log_commit). Two logs' ops may name
 * the same dest (one arena allocated into it, another freed from it, in
 * either order), so frees go first, then allocations whose block is still
 * live after the replay store it: a block freed later is not live, and a
 * later allocation into a freed dest wins over the free. A free clears the
 * word if it names the freed block (even if that block is live again: then
 * a later allocation of the same arena owns it and is redone after), or a
 * block that is not live: an older value of the word whose later stores
 * were never flushed. Another live block can only be a later allocation's
 * durable result. An allocation is redone only if no later op of its
 * arena's window names the same block: a block is reused before a
 * checkpoint only after a free by its owner arena, the arena that
 * allocates it, so a later allocation of it is in the same window and
 * owns it. Invariant: after recovery no dest word named by a replayed op
 * names a block that is not live.
 */
/* cur (a pool offset) names a live block of the heap of its part (after
 * that heap's replay: pma_recover_parts replays every part first) */
static int pm_live_anywhere(struct pma_heap *heap, uint64_t cur)
{
	struct pma_heap *h = pma_heap_route(heap, cur);

	/* a block of a region another open holds (a masked open): its
	 * liveness is that open's; a word naming it belongs to it now */
	if (!h && pma_heap_slot_of(heap, cur) >= 0)
		return 1;
	return h && pma_pm_live_at(h, pool_off_byte(cur));
}

static uint64_t pmap_entry_now(const void *heap, uint64_t page)
{
	return pma_pmap_now(heap, page);
}

/* the byte offset (in its part) of the slab whose header or bitmap holds
 * dest word dest, after the replay (pma_pmap_now), else 0 */
static uint64_t dest_slab_hdr(struct pma_heap *heap, uint64_t dest)
{
	uint64_t b = pool_off_byte(dest), page;

	heap = pma_heap_route(heap, dest);
	if (!heap || b < heap->data_base)
		return 0;
	page = pma_slab_hdr_page(b - heap->data_base, heap->geom.npages,
				 pmap_entry_now, heap);
	return page == UINT64_MAX ? 0 : pma_page_off(heap, page);
}

/* the pool offset of the block (or extent) op names: an XFREE's is in
 * another part */
static uint64_t op_block(const struct pma_heap *heap, const struct pma_op *op)
{
	if (op->type == PMA_REC_XFREE)
		return pool_off_make(op->owner, op->off);
	return pma_pool_off(heap, op->off);
}

static int redo_dest(struct pma_heap *heap, const struct pma_op *op, int allocs,
		     int dry_run)
{
	int is_alloc = op->type == PMA_REC_ALLOC ||
		       op->type == PMA_REC_EXT_ALLOC;
	uint64_t *addr, cur, value = 0;

	if (!op->dest || is_alloc != allocs || op->type == PMA_REC_SLAB_NEW)
		return 0;
	addr = pma_heap_dest_addr(heap, op->dest);
	if (!addr)
		return util_errmsg_set(EIO, "log names bad dest 0x%llx",
				       (unsigned long long)op->dest);
	if (dry_run)
		return 0;
	/* the dry run refused a dest in a slab header after this part's
	 * replay; one in another part's slab header that the other part's
	 * replay made (after the dry runs) is never written either */
	if (dest_slab_hdr(heap, op->dest)) {
		util_warn("record %llu: dest word 0x%llx is in a slab "
			  "header after the replay: not redone",
			  (unsigned long long)op->index,
			  (unsigned long long)op->dest);
		return 0;
	}
	/* acquire: a word another open cleared by a ring free (a release
	 * store after its entry's fence) shows the entry below */
	cur = __atomic_load_n(addr, __ATOMIC_ACQUIRE);
	if (is_alloc) {
		if (!pma_pm_is_live(heap, op))
			return 0;
		value = pma_pool_off(heap, op->off);
		/* version 12: a block a committed ring entry frees (not yet
		 * applied: the drain at the end of the open frees it) is
		 * not stored again. Asked after the word is read: a free
		 * that cleared it wrote its entry first */
		if (cur != value && pma_xring_pending(heap, value))
			return 0;
	} else if (!cur ||
		   (cur != op_block(heap, op) && pm_live_anywhere(heap, cur))) {
		return 0; /* a later op (or the user) owns the word now */
	}
	if (cur == value)
		return 0;
	__atomic_store_n(addr, value, __ATOMIC_RELAXED);
	pm_flush(pool_part_map(heap->pool, pool_off_part(op->dest)), addr,
		 sizeof(*addr));
	return 0;
}

/* the ops of a redo ring redo_dest stores to: every free, and each
 * allocation no later op of the ring names (if its block is live) */
static int redo_stores(const struct redo_ring *r, unsigned i, int allocs)
{
	const struct pma_op *op = &r->op[i];
	unsigned j;

	if (!op->dest || op->type == PMA_REC_SLAB_NEW ||
	    (op->type == PMA_REC_ALLOC || op->type == PMA_REC_EXT_ALLOC) !=
		    allocs)
		return 0;
	for (j = i + 1; allocs && j < r->n; j++)
		if (r->op[j].off == op->off &&
		    r->op[j].type != PMA_REC_XFREE) /* another part's */
			return 0; /* a later op of the window names it */
	return 1;
}

/*
 * The root word is a dest only of the root object's allocation (pma_root,
 * once; the root is never freed): a free naming it, or an allocation of
 * another block while it holds the root, is a damaged log. The redo would
 * clear or overwrite the root word (and the open then fail its check, or
 * seal the wrong root); refused, naming the record, before anything is
 * written. fsck reports the same (root-check).
 */
static int redo_root_check(struct pma_heap *heap, const struct pma_op *op,
			   unsigned arena, int allocs)
{
	struct pma_heap *h = pma_heap_route(heap, op->dest);
	uint64_t root;

	if (!h ||
	    op->dest != pma_pool_off(h, h->region_off + PMA_ROOT_WORD_OFF))
		return 0;
	root = __atomic_load_n(&h->hdr->root_off, __ATOMIC_RELAXED);
	if (!allocs)
		return util_errmsg_set(EIO,
				       "arena %u record %llu: a free through "
				       "the root word 0x%llx (the root object "
				       "is never freed: damaged log)",
				       arena, (unsigned long long)op->index,
				       (unsigned long long)op->dest);
	if (root && root != pma_pool_off(heap, op->off))
		return util_errmsg_set(
			EIO,
			"arena %u record %llu: allocates 0x%llx "
			"to the root word, which holds the "
			"root 0x%llx (made once: damaged log)",
			arena, (unsigned long long)op->index,
			(unsigned long long)pma_pool_off(heap, op->off),
			(unsigned long long)root);
	return 0;
}

/*
 * The dry run's check of the dest words the redo would store (after the
 * replay into the shadow: its page map, its slab copies): a word in a
 * slab's header or bitmap is allocator metadata, which no dest the
 * library logs names (pma_heap_dest_check refuses the heap's other
 * metadata). The redo would overwrite the slab header, so the log is
 * refused, naming the record, before anything is written. The same
 * predicate as fsck's log-op-dest (pma_slab_hdr_page), for the same ops.
 */
static int redo_meta_check(struct pma_heap *heap, const struct redo_ring *r,
			   unsigned arena)
{
	const struct pma_op *op;
	unsigned i;
	int allocs;
	uint64_t slab;

	for (allocs = 0; allocs < 2; allocs++)
		for (i = 0; i < r->n; i++) {
			op = &r->op[i];
			if (!redo_stores(r, i, allocs) ||
			    (allocs && !pma_pm_is_live(heap, op)))
				continue;
			if (redo_root_check(heap, op, arena, allocs) < 0)
				return -EIO;
			if (!(slab = dest_slab_hdr(heap, op->dest)))
				continue;
			return util_errmsg_set(
				EIO,
				"arena %u record %llu: dest word 0x%llx is in "
				"the header of the slab at 0x%llx of part %u "
				"(allocator metadata): the redo of the %s "
				"would overwrite it (damaged log)",
				arena, (unsigned long long)op->index,
				(unsigned long long)op->dest,
				(unsigned long long)slab,
				pool_off_part(op->dest),
				allocs ? "allocation" : "free");
		}
	return 0;
}

/* redo one arena's window: frees (allocs == 0) or allocations; dry_run:
 * only check the dest words */
static int redo_ring(struct pma_heap *heap, const struct redo_ring *r,
		     int allocs, int dry_run)
{
	unsigned i;
	int rc;

	for (i = 0; i < r->n; i++) {
		if (!redo_stores(r, i, allocs))
			continue;
		rc = redo_dest(heap, &r->op[i], allocs, dry_run);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* recovery: zero the (possibly torn) slots at and after the tail */
static void clear_tail(struct pma_heap *heap, struct pma_arena *arena)
{
	uint32_t cap = heap->geom.log_cap;
	struct pma_rec *slot;
	uint64_t k;

	for (k = arena->tail; k < arena->tail + 2 && k - arena->head < cap;
	     k++) {
		slot = pma_booklog_slot(arena->log, cap, k);
		if (!slot->word0 && !slot->word1)
			continue;
		memset(slot, 0, sizeof(*slot));
		pm_flush(heap->map, slot, sizeof(*slot));
	}
}

static int xfree_into(struct pma_heap *o, struct pma_dirty *dirty, int write);

/* apply every log from its head; on a version 7 heap the bitmap banks
 * the replay changes are checked and resealed (banks.c) */
static int replay(struct pma_heap *heap, struct pma_dirty *dirty,
		  struct redo_ring *redo, int xf)
{
	int rc, end;

	if (!heap->checked) {
		rc = apply_all(heap, dirty, redo, 0);
		if (rc == 0 && xf)
			rc = xfree_into(heap, dirty, 1);
		return rc == 0 ? pma_apply_torn_check(heap, dirty) : rc;
	}
	rc = pma_banks_begin(heap);
	if (rc < 0)
		return rc;
	rc = apply_all(heap, dirty, redo, 0);
	/* a heap over several parts: the other parts' XFREEs of this
	 * part's blocks, as ops of this replay (xfree_recover) */
	if (rc == 0 && xf)
		rc = xfree_into(heap, dirty, 1);
	if (rc == 0)
		rc = pma_apply_torn_check(heap, dirty);
	end = pma_banks_end(heap, rc == 0);
	return rc < 0 ? rc : end;
}

/* replay and redo; dry_run: into the shadow copies, nothing flushed */
static int recover_apply(struct pma_heap *heap, struct redo_ring *redo,
			 int dry_run)
{
	struct pma_dirty dirty = { 0 };
	unsigned i, n = heap->geom.narenas;
	int rc;

	memset(redo, 0, n * sizeof(*redo));
	rc = replay(heap, &dirty, redo, 0);
	/* every arena's frees, then every arena's allocations */
	for (i = 0; rc == 0 && i < 2 * n; i++)
		rc = redo_ring(heap, &redo[i < n ? i : i - n], i >= n, dry_run);
	if (rc == 0 && !dry_run)
		pma_dirty_flush(heap, &dirty);
	pma_dirty_release(&dirty);
	return rc;
}

/* version 7: a root word of 0 whose check is set (pma_root sealed it)
 * is damage unless the redo of the root's allocation writes it now */
static int root_zero_check(struct pma_heap *heap, const struct redo_ring *redo)
{
	uint64_t word =
		pma_pool_off(heap, heap->region_off + PMA_ROOT_WORD_OFF);
	unsigned i, j;

	if (!heap->checked || heap->hdr->root_off || !heap->hdr->root_check)
		return 0;
	for (i = 0; i < heap->geom.narenas; i++)
		for (j = 0; j < redo[i].n; j++)
			if (redo[i].op[j].dest == word &&
			    (redo[i].op[j].type == PMA_REC_ALLOC ||
			     redo[i].op[j].type == PMA_REC_EXT_ALLOC))
				return 0;
	return util_errmsg_set(EIO,
			       "heap header: the root word is 0 but its check "
			       "says a root object was made (damaged)");
}

/* the whole replay into DRAM copies first: a log that contradicts the
 * heap is refused before PM is written (a no-op without records) */
static int recover_dry_run(struct pma_heap *heap, struct redo_ring *redo)
{
	struct pma_shadow shadow;
	unsigned i;
	int rc;

	if (!any_records(heap)) {
		rc = pma_pmap_check_spans(heap, NULL);
		if (rc == 0)
			rc = root_zero_check(heap, redo); /* no ops: n = 0 */
		return rc < 0 ? rc : pma_root_dry_check(heap, heap->pmap_pm);
	}
	rc = pma_shadow_begin(heap, &shadow);
	if (rc < 0)
		return rc;
	rc = recover_apply(heap, redo, 1);
	if (rc == 0)
		rc = pma_pmap_check_spans(heap, &shadow);
	for (i = 0; rc == 0 && i < heap->geom.narenas; i++)
		rc = redo_meta_check(heap, &redo[i], i);
	if (rc == 0)
		rc = root_zero_check(heap, redo);
	if (rc == 0)
		rc = pma_root_dry_check(heap, shadow.pmap_pm);
	pma_shadow_end(heap, &shadow);
	return rc;
}

/*
 * The slots after the end of arena's log (past tail + 1, which may hold
 * the other half of a torn op) must hold no valid record: appends are
 * fenced op by op, so a crash tears only the last op. A valid record
 * there means a record before it was corrupted, not torn: ending the log
 * at the corrupt record would drop committed ops, and new appends would
 * later reach the stale records and make them part of the log again.
 */
static int log_end_check(struct pma_heap *heap, const struct pma_arena *arena)
{
	uint32_t cap = heap->geom.log_cap;
	uint64_t end = arena->head + cap, k = arena->tail + 2, payload, value;
	unsigned type;

	if (k >= end)
		return 0;
	/* a slot that holds the previous lap's record k - cap, whole, was
	 * never reached by this lap's appends (they go in order, each op
	 * fenced before the next): after it only the other half of an op
	 * torn at it can be of this lap. Logs start in lap 1 (format_logs),
	 * so this ends at once; a log still in lap 0 (formatted before) has
	 * zeros ahead, and each of its slots is read, in memory order. */
	if (k < cap)
		k = pma_booklog_first_valid(arena->log, cap, k, end);
	else
		for (; k < end; k++) {
			if (pma_booklog_decode(arena->log, cap, k, &type,
					       &payload, &value) == 0)
				break;
			if (pma_booklog_decode(arena->log, cap, k - cap, &type,
					       &payload, &value) == 0 &&
			    k + 2 < end)
				end = k + 2;
		}
	if (k >= end)
		return 0;
	return util_errmsg_set(EIO,
			       "arena %u: record %llu is invalid but record "
			       "%llu after it is valid (corrupt log)",
			       arena->id, (unsigned long long)arena->tail,
			       (unsigned long long)k);
}

/*
 * A head h > 0 follows a valid record h - 1: every head is a tail a
 * checkpoint (or recovery) staged, after record h - 1 was made durable,
 * and its slot is written again only by record h - 1 + log_cap, the last
 * of a full log (whose slot that then is; a kill between that record's
 * two stores leaves neither, pma_booklog_head_ok). A head that fails
 * these was not written by a checkpoint: scanning from it would find no records and drop
 * every op not yet checkpointed without a word (a corrupt arena
 * descriptor or head_gen).
 */
static int head_check(struct pma_heap *heap, const struct pma_arena *arena)
{
	if (pma_booklog_head_ok(arena->log, heap->geom.log_cap, arena->head))
		return 0;
	return util_errmsg_set(EIO,
			       "arena %u: log head %llu does not follow a "
			       "record of the log (corrupt arena descriptor "
			       "or head generation)",
			       arena->id, (unsigned long long)arena->head);
}

/*
 * The first invalid op of a log is where the crash tore the last append,
 * or a log that never went further: its slot (for an extent op whose
 * EXT_LEN is missing, the slot after) holds a torn or an old record. A
 * record whose words are both of its lap but that fails its checksum was
 * written whole and damaged since: ending the log there would drop a
 * committed op without a word (version 7; older heaps were not written
 * with this rule in mind... it holds for them too, but they keep their
 * behaviour).
 */
static int tail_check(struct pma_heap *heap, const struct pma_arena *arena)
{
	uint32_t cap = heap->geom.log_cap;
	uint64_t k = arena->tail, payload, value;
	unsigned type;

	if (!heap->checked || k - arena->head >= cap)
		return 0;
	if (pma_booklog_decode(arena->log, cap, k, &type, &payload, &value) ==
		    0 &&
	    ++k - arena->head >= cap)
		return 0;
	if (!pma_booklog_slot_damaged(arena->log, cap, k))
		return 0;
	if (pma_booklog_type_unknown(arena->log, cap, k, &type))
		return util_errmsg_set(EIO,
				       "arena %u: log record %llu has unknown "
				       "record type %u (written whole, its "
				       "checksum is valid)",
				       arena->id, (unsigned long long)k, type);
	return util_errmsg_set(EIO,
			       "arena %u: log record %llu is damaged (written "
			       "whole, fails its checksum)",
			       arena->id, (unsigned long long)k);
}

/* every arena's tail: the first invalid op from its head */
static int find_tails(struct pma_heap *heap)
{
	struct pma_arena *arena;
	unsigned i;
	int rc;

	for (i = 0; i < heap->geom.narenas; i++) {
		arena = &heap->arenas[i];
		rc = head_check(heap, arena);
		if (rc < 0)
			return rc;
		arena->tail = pma_booklog_find_tail(
			arena->log, heap->geom.log_cap, arena->head);
		rc = tail_check(heap, arena);
		if (rc == 0)
			rc = log_end_check(heap, arena);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int pma_recover_rdonly(struct pma_heap *heap)
{
	struct pma_dirty dirty = { 0 };
	int rc;

	/* the same checks as pma_recover, in the same order: the page map
	 * before the replay, then its spans after it */
	rc = find_tails(heap);
	if (rc == 0)
		rc = pma_pmap_check(heap);
	if (rc < 0)
		return rc;
	rc = replay(heap, &dirty, NULL, 0);
	pma_dirty_release(&dirty); /* DRAM copies: nothing to flush */
	/* the replayed copy of the page map: its entries, then that no
	 * slab or extent lies in another (pma_recover checks the same
	 * before it writes) */
	if (rc == 0)
		rc = pma_pmap_check(heap);
	return rc < 0 ? rc : pma_pmap_check_spans(heap, NULL);
}

/* a part's recovery state while pma_recover_parts runs */
struct part_recovery {
	struct redo_ring *redo;
	struct pma_dirty dirty;
};

/* the checks and the dry run of pma_recover, for one part */
static int recover_prepare(struct pma_heap *heap, struct part_recovery *pr)
{
	int rc;

	pr->redo = calloc(heap->geom.narenas, sizeof(*pr->redo));
	if (!pr->redo)
		return util_errmsg_set(ENOMEM, "out of memory");
	rc = find_tails(heap);
	if (rc == 0)
		rc = pma_pmap_check(heap);
	if (rc == 0)
		rc = recover_dry_run(heap, pr->redo);
	return rc;
}

/* recovery, write: give X's free (an XFREE of another part) to the log of
 * X's owner arena in o, the part of X: a SYNC_FREE at its tail, durable
 * before any head moves */
static int xfree_sync_append(struct pma_heap *o, uint64_t off)
{
	uint32_t cap = o->geom.log_cap;
	uint64_t chunk = pma_page_of(o, off);
	const struct pma_slab_hdr *sh;
	struct pma_arena *arena;
	struct pma_rec rec, *slot;
	int zeroed = 0;
	uint64_t k;

	chunk -= chunk % PMA_CHUNK_PAGES;
	sh = pma_slab_meta(o, pma_page_off(o, chunk));
	if (!sh || sh->owner >= o->geom.narenas)
		return util_errmsg_set(EIO, "no slab holds 0x%llx",
				       (unsigned long long)off);
	arena = &o->arenas[sh->owner];
	/* the record, and the two slots clear_tail zeroes after it */
	if (arena->tail + 3 - arena->head > cap)
		return util_errmsg_set(ENOSPC,
				       "arena %u has no log room for the "
				       "free of 0x%llx made in another part",
				       arena->id, (unsigned long long)off);
	/* its slot and the ones after it may hold records of the op the
	 * crash cut short (a torn one at the tail, a valid one after it):
	 * zeroed first, durable before the record is written (a torn
	 * write must not mix with a record of the same lap, nor a valid
	 * record follow it, see clear_tail) */
	for (k = arena->tail; k < arena->tail + 3; k++) {
		slot = pma_booklog_slot(arena->log, cap, k);
		if (!slot->word0 && !slot->word1)
			continue;
		memset(slot, 0, sizeof(*slot));
		pm_flush(o->map, slot, sizeof(*slot));
		zeroed = 1;
	}
	if (zeroed)
		pm_drain(o->map);
	pma_booklog_encode(arena->tail, cap, PMA_REC_SYNC_FREE, off >> o->osh,
			   0, &rec);
	slot = pma_booklog_slot(arena->log, cap, arena->tail);
	__atomic_store_n(&slot->word0, rec.word0, __ATOMIC_RELAXED);
	__atomic_store_n(&slot->word1, rec.word1, __ATOMIC_RELAXED);
	pm_flush(o->map, slot, sizeof(*slot));
	/* one record per fence: a log ends in at most one torn op, and
	 * no valid record may follow an invalid one */
	pm_drain(o->map);
	arena->tail++;
	return 0;
}

/* apply to part o every XFREE of heap's windows that names a block of o
 * still live in o after o's replay (write: and give it to the owner's
 * log, xfree_sync_append) */
static int xfree_apply_to(struct pma_heap *heap, struct pma_heap *o,
			  struct pma_dirty *dirty, int write)
{
	struct pma_op op, fop = { .type = PMA_REC_FREE, .nrecs = 1 };
	struct pma_arena *arena;
	unsigned i;
	uint64_t k;
	int rc;

	for (i = 0; i < heap->geom.narenas; i++) {
		arena = &heap->arenas[i];
		for (k = arena->head; k < arena->tail; k += op.nrecs) {
			rc = pma_booklog_read_op(arena->log, heap->geom.log_cap,
						 k, heap->osh, &op);
			if (rc < 0)
				return util_errmsg_set(EIO,
						       "arena %u: record %llu "
						       "unreadable",
						       arena->id,
						       (unsigned long long)k);
			if (op.type != PMA_REC_XFREE || op.owner != o->part ||
			    pma_heap_route(o, pool_off_make(op.owner,
							    op.off)) != o ||
			    !pma_pm_live_at(o, op.off))
				continue;
			fop.off = op.off;
			fop.index = k;
			/* the owner's record first: an image that holds the
			 * bit cleared holds the record that clears it, so
			 * the next replay of o's window meets it (the bank
			 * checks, banks.c) */
			rc = write ? xfree_sync_append(o, op.off) : 0;
			if (rc == 0)
				rc = pma_apply_op(o, &fop, dirty);
			if (rc < 0) {
				util_errmsg_prefix("part %u arena %u record "
						   "%llu (xfree)",
						   heap->part, arena->id,
						   (unsigned long long)k);
				return rc;
			}
		}
	}
	return 0;
}

/* the XFREEs of the other parts' windows that name blocks of o (still
 * live after o's own window), applied to o: see xfree_recover */
static int xfree_into(struct pma_heap *o, struct pma_dirty *dirty, int write)
{
	struct pma_heap *h;
	unsigned p;
	int rc = 0;

	if (o->geom.version < PMA_HEAP_VERSION_XFREE)
		return 0;
	for (p = 0; rc == 0 && p < PMA_MAX_SLOTS; p++)
		if ((h = o->top->sib[p]) && h != o &&
		    h->geom.version >= PMA_HEAP_VERSION_XFREE)
			rc = xfree_apply_to(h, o, dirty, write);
	return rc;
}

/*
 * The XFREEs of every part's windows (frees of another part's blocks,
 * phase 1 of doc/shared-heaps.md step 1) are applied to the parts that
 * own the blocks, after each owner part's own window, in the same replay
 * (its bank checks see them as ops of the window). A block already free
 * there is left alone: its owner applied the free and may have retired
 * that; the XFREE is retired only after the free is durable in the
 * block's part, and the block is reused only after that. Writing
 * (recover_multi), each applied XFREE first gets the SYNC_FREE its owner
 * would have written, in the owner's log, durable before the bit is
 * cleared and before any head moves: the parts' heads move by separate
 * stores, and a part whose head moved past its XFREE while the owner's
 * window still held the block's ALLOC would otherwise have the next
 * recovery make the block live again. A read-only open applies them to
 * its DRAM copies after every part's replay (xfree_recover).
 */
static int xfree_recover(struct pma_heap *top, struct pma_dirty *dirty)
{
	struct pma_heap *o;
	unsigned q;
	int rc = 0, end;

	for (q = 0; rc == 0 && q < PMA_MAX_SLOTS; q++) {
		if (!(o = top->sib[q]))
			continue;
		if (o->checked) {
			rc = pma_banks_begin(o);
			if (rc < 0)
				return rc;
		}
		rc = xfree_into(o, &dirty[q], 0);
		if (o->checked) {
			end = pma_banks_end(o, rc == 0);
			if (rc == 0)
				rc = end;
		}
	}
	return rc;
}

/*
 * Recovery of a heap over several parts: a dest word may lie in another
 * part than the block it names, so the redo of dest words (frees, then
 * allocations, see redo_dest) runs over every part's windows together,
 * after every part's replay (its liveness tests read the part that owns
 * the block). Everything is checked (every part's dry run) before
 * anything is written. The parts' heads move independently: no block has
 * records in two parts' logs, and a re-run redo meets the words it wrote
 * (their blocks live, or cleared) as a later op's.
 */
static int recover_multi(struct pma_heap *top)
{
	struct part_recovery pr[PMA_MAX_SLOTS];
	struct pma_heap *h;
	unsigned p, i;
	int rc = 0, step;

	memset(pr, 0, sizeof(pr));
	for (p = 0; rc == 0 && p < PMA_MAX_SLOTS; p++)
		if (top->sib[p]) {
			rc = recover_prepare(top->sib[p], &pr[p]);
			if (rc < 0)
				util_errmsg_prefix("part %u", p);
		}
	for (p = 0; rc == 0 && p < PMA_MAX_SLOTS; p++)
		if ((h = top->sib[p])) {
			memset(pr[p].redo, 0,
			       h->geom.narenas * sizeof(*pr[p].redo));
			rc = replay(h, &pr[p].dirty, pr[p].redo, 1);
		}

	/* every part's frees, then every part's allocations */
	for (step = 0; rc == 0 && step < 2; step++)
		for (p = 0; rc == 0 && p < PMA_MAX_SLOTS; p++)
			for (i = 0; (h = top->sib[p]) && rc == 0 &&
				    i < h->geom.narenas;
			     i++)
				rc = redo_ring(h, &pr[p].redo[i], step, 0);
	for (p = 0; p < PMA_MAX_SLOTS; p++) {
		if (!(h = top->sib[p]))
			continue;
		if (rc == 0)
			pma_dirty_flush(h, &pr[p].dirty);
		pma_dirty_release(&pr[p].dirty);
		free(pr[p].redo);
	}
	if (rc < 0)
		return rc;
	for (p = 0; p < PMA_MAX_SLOTS; p++) {
		if (!(h = top->sib[p]))
			continue;
		for (i = 0; i < h->geom.narenas; i++)
			clear_tail(h, &h->arenas[i]);
		stage_heads(h);
		/* applied state and dests (of every part: one fence
		 * orders the thread's flushes to every mapping) durable
		 * before the records can go */
		pm_drain(h->map);
		flip_heads(h);
	}
	return 0;
}

int pma_recover_parts(struct pma_heap *top)
{
	unsigned p;
	int rc;

	struct pma_dirty dirty[PMA_MAX_SLOTS];

	if (!top->rdonly)
		return top->nsib > 1 ? recover_multi(top) : pma_recover(top);
	for (p = 0; p < PMA_MAX_SLOTS; p++)
		if (top->sib[p]) {
			rc = pma_recover_rdonly(top->sib[p]);
			if (rc < 0)
				return rc;
		}
	if (top->nsib == 1)
		return 0;
	/* into the DRAM copies, as the replays */
	memset(dirty, 0, sizeof(dirty));
	rc = xfree_recover(top, dirty);
	for (p = 0; p < PMA_MAX_SLOTS; p++)
		pma_dirty_release(&dirty[p]);
	return rc;
}

int pma_recover(struct pma_heap *heap)
{
	struct redo_ring *redo;
	unsigned i;
	int rc;

	redo = calloc(heap->geom.narenas, sizeof(*redo));
	if (!redo)
		return util_errmsg_set(ENOMEM, "out of memory");
	/* nothing is written before every check passed: a refused heap
	 * stays as it was (pma_rebuild then meets only checked entries) */
	rc = find_tails(heap);
	if (rc == 0)
		rc = pma_pmap_check(heap);
	if (rc == 0)
		rc = recover_dry_run(heap, redo);
	if (rc == 0)
		rc = recover_apply(heap, redo, 0);
	free(redo);
	if (rc < 0)
		return rc;
	for (i = 0; i < heap->geom.narenas; i++)
		clear_tail(heap, &heap->arenas[i]);
	stage_heads(heap);
	/* applied state and dests durable before the records can go */
	pm_drain(heap->map);
	flip_heads(heap);
	return 0;
}
