/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc operations: malloc_to / free_from for slab blocks and extents.
 * Each op runs under its arena lock: update the DRAM state, append the
 * record(s) and flush them (plus the previous op's dest line), ONE fence,
 * then store the dest word. The PM bitmaps and page map are not touched
 * here; checkpoints bring them up to date from the log.
 * A block freed by a non-owner arena, and every freed extent, becomes
 * reusable only after a checkpoint made the free durable (see
 * doc/pmalloc.md, "why per-log order is enough").
 */
#include <errno.h>
#include <string.h>

#include "pmalloc/internal.h"
#include "pmem/fast.h"
#include "util/errmsg.h"

/* log_cursor_sync after the tail moved without the cursor (a checkpoint,
 * recovery, a new arena) */
static void log_cursor_reset(struct pma_arena *arena)
{
	uint32_t cap = arena->heap->geom.log_cap;
	uint32_t slot = (uint32_t)(arena->tail % cap);

	arena->cur_k = arena->tail;
	arena->cur_lap = arena->tail / cap;
	arena->cur_epoch = pma_booklog_lap_epoch(arena->cur_lap);
	arena->cur_tag = pma_booklog_lap_tag(arena->cur_lap);
	arena->cur_r = slot % PMA_LOG_GROUP;
	arena->cur_group = pma_booklog_slot_at(arena->log, slot - arena->cur_r);
}

/* make the append cursor describe record tail */
static inline void log_cursor_sync(struct pma_arena *arena)
{
	if (__builtin_expect(arena->cur_k != arena->tail, 0))
		log_cursor_reset(arena);
}

/* the slot of record cur_k */
static inline struct pma_rec *log_cursor_slot(const struct pma_arena *arena)
{
	return arena->cur_group + pma_log_group_off[arena->cur_r];
}

/* move the cursor to the next slot: the next one in the group (the next
 * bank's line, see pma_log_group_off), or the next group, or the log's
 * first group in the next lap */
static inline void log_cursor_next(struct pma_arena *arena)
{
	arena->cur_k++;
	if (__builtin_expect(++arena->cur_r == PMA_LOG_GROUP, 0)) {
		arena->cur_r = 0;
		arena->cur_group += PMA_LOG_GROUP;
		if (arena->cur_group ==
		    arena->log + arena->heap->geom.log_cap) {
			arena->cur_group = arena->log;
			arena->cur_lap++;
			arena->cur_epoch =
				pma_booklog_lap_epoch(arena->cur_lap);
			arena->cur_tag = pma_booklog_lap_tag(arena->cur_lap);
		}
	}
	pma_assert(log_cursor_slot(arena) ==
		   pma_booklog_slot_at(arena->log,
				       (uint32_t)(arena->cur_k %
						  arena->heap->geom.log_cap)));
}

/* write record tail and flush its line; the caller fences. Inlined
 * always: once per op on the fast paths, where a call's register saves
 * cost as much as the record's encoding */
__attribute__((always_inline)) static inline void
log_put(struct pma_arena *arena, unsigned type, uint64_t payload,
	uint64_t value)
{
	struct pma_rec *slot = log_cursor_slot(arena);
	struct pma_rec rec;

	pma_assert(arena->cur_k == arena->tail);
	pma_booklog_encode_bits(arena->tail, arena->cur_epoch, arena->cur_tag,
				type, payload, value, &rec);
	__atomic_store_n(&slot->word0, rec.word0, __ATOMIC_RELAXED);
	__atomic_store_n(&slot->word1, rec.word1, __ATOMIC_RELAXED);
	pm_flush_fast(arena->heap->map, slot, sizeof(*slot));
	arena->tail++;
	log_cursor_next(arena);
}

/* append the one record of a block op (ALLOC, FREE, RFREE) of slab,
 * flushed, not fenced; the caller checked room and synced the cursor
 * (inlined always, see log_put) */
__attribute__((always_inline)) static inline void
log_append_block(struct pma_arena *arena, unsigned type, struct pma_slab *slab,
		 uint64_t off, uint64_t dest_off)
{
	/* a remote free changes nothing the owner writes to PM (live |
	 * rpend stays set, see struct pma_slab): only the owner's log
	 * marks its slabs */
	if (type != PMA_REC_RFREE)
		pma_slab_mark_dirty(arena, slab);
	log_put(arena, type, off >> arena->heap->osh, dest_off);
}

/*
 * Two-phase frees (version 8 protocol; older heaps run the same DRAM
 * steps and leave the rest to the global checkpoint). Phase 1, by the
 * freeing arena: rpend set, live cleared, RFREE committed, then rdone set
 * (remote_committed). Phase 2, by the owner (pma_arena_sync): a SYNC_FREE
 * in its own log, fenced, then rpend cleared; the freeing arena may
 * retire its RFREE once rpend is clear, and then hands the block back
 * through rret (recovery.c). See doc/pmalloc.md, "Per-arena checkpoints".
 * Frees from another part (XFREE, version 10) carry their SYNC_FREE on
 * the owner's ops' fences instead (carry_put below).
 */

/* the first step of a remote free of slab's block idx: 0, or -EINVAL (a
 * double free, nothing changed) */
static inline int remote_unlive(struct pma_slab *slab, uint32_t idx)
{
	if (pma_slab_rpend_set(slab, idx) < 0)
		return -EINVAL;
	if (pma_slab_unlive(slab, idx) < 0) {
		pma_slab_rpend_clear(slab, idx);
		return -EINVAL;
	}
	return 0;
}

/* the RFREE of slab's block idx is durable: for the owner to apply */
static inline void remote_committed(struct pma_heap *heap,
				    struct pma_slab *slab, uint32_t idx)
{
	atomic_fetch_or(&slab->rdone[idx / 64], 1ULL << (idx % 64));
	pma_rlist_push(&heap->arenas[slab->owner], slab);
}

/* SYNC_FREE records of the committed remote frees in bits (word w of
 * slab->rdone), at most two per fence (recovery allows one torn op of
 * two records at a log's end); then their rpend bits go */
static void sync_word(struct pma_arena *arena, struct pma_slab *slab,
		      unsigned w, uint64_t bits, int x)
{
	struct pma_heap *heap = arena->heap;
	uint64_t b = bits;
	uint32_t idx;
	unsigned n = 0;

	log_cursor_sync(arena);
	for (; b; b &= b - 1) {
		idx = w * 64 + (uint32_t)__builtin_ctzll(b);
		if (pma_retq_push(&arena->synced, pma_slab_block_off(slab, idx),
				  arena->tail, PMA_NO_DEP, 0) < 0) {
			/* no memory: the rest waits for the next sync */
			if (x) {
				atomic_fetch_or(&slab->xdone[w], b);
				pma_xlist_push(arena, slab);
			} else {
				atomic_fetch_or(&slab->rdone[w], b);
				pma_rlist_push(arena, slab);
			}
			bits &= ~b;
			break;
		}
		log_append_block(arena, PMA_REC_SYNC_FREE, slab,
				 pma_slab_block_off(slab, idx), 0);
		if (++n % 2 == 0)
			pm_drain(heap->map);
	}
	if (n % 2)
		pm_drain(heap->map);
	atomic_fetch_add_explicit(&heap->rfrees_synced, n,
				  memory_order_relaxed);
	if (x)
		atomic_fetch_sub(&arena->xowed, n);
	for (b = bits; b; b &= b - 1)
		pma_slab_rpend_clear(slab,
				     w * 64 + (uint32_t)__builtin_ctzll(b));
}

/* the blocks of slab whose remote frees are retired go back to avail */
static void take_back(struct pma_arena *arena, struct pma_slab *slab)
{
	uint64_t bits;
	unsigned w;
	int gave = 0;

	for (w = 0; w < PMA_LIVE_WORDS; w++) {
		if (!atomic_load_explicit(&slab->rret[w], memory_order_relaxed))
			continue;
		bits = atomic_exchange(&slab->rret[w], 0);
		for (; bits; bits &= bits - 1)
			pma_slab_give(slab,
				      w * 64 + (uint32_t)__builtin_ctzll(bits));
		gave = 1;
	}
	if (gave) {
		pma_partial_push(arena, slab);
		pma_slab_empty_check(arena, slab);
	}
}

/*
 * Carried SYNC_FREEs (version 10, struct pma_arena's carry). A
 * SYNC_FREE written by pma_arena_xsync costs a fence per two; carried,
 * it rides on a fence the owner pays anyway: carry_put appends the
 * oldest one's record before the record of an op of one record (lock
 * held, room for both: a carried one is owed, and xowed is kept free),
 * the op's commit fences both, and carry_done then clears the block's
 * rpend bit: only then may the freeing part retire its XFREE and the
 * block be reused. A crash before that fence leaves at most those two
 * records torn at the log's end, the shape recovery allows (an extent
 * op's two records, SLAB_NEW and ALLOC): whichever of them is lost is
 * not committed, and the XFREE, not retired, is applied again by
 * recovery (xfree_recover) if the SYNC_FREE is.
 */
static const struct pma_carry carry_none = { NULL, 0 };

static uint64_t xsync(struct pma_arena *arena, uint64_t room, int carry);

static struct pma_carry __attribute__((noinline))
carry_put_slow(struct pma_arena *arena)
{
	struct pma_carry c = arena->carry[arena->carry_first];
	uint64_t off = pma_slab_block_off(c.slab, c.idx);

	/* no memory: it waits for the next op, or for pma_arena_xsync */
	if (pma_retq_push(&arena->synced, off, arena->tail, PMA_NO_DEP, 0) < 0)
		return carry_none;
	log_cursor_sync(arena);
	log_append_block(arena, PMA_REC_SYNC_FREE, c.slab, off, 0);
	arena->carry_first = (arena->carry_first + 1) % PMA_CARRY_MAX;
	arena->carry_n--;
	return c;
}

/* the op about to append its one record may carry a SYNC_FREE */
__attribute__((always_inline)) static inline struct pma_carry
carry_put(struct pma_arena *arena)
{
	if (__builtin_expect(!arena->carry_n, 1))
		return carry_none;
	return carry_put_slow(arena);
}

/* on a fast path: only with room for both records before fast_end */
__attribute__((always_inline)) static inline struct pma_carry
carry_put_fast(struct pma_arena *arena)
{
	if (__builtin_expect(!arena->carry_n, 1) ||
	    arena->tail + 2 > arena->fast_end)
		return carry_none;
	return carry_put_slow(arena);
}

/* an owner's fast path, at the start of its op: nothing carried but
 * XFREEs of its blocks committed since its last sync? Into the ring
 * (only the owner's DRAM state changes: its lock is held). Looked for
 * every PMA_CARRY_POLL ops only: taking the xlist at every op makes each
 * free of the other part push the slab again, and the xlist line and
 * the slab's in_xlist move between the threads at every op */
#define PMA_CARRY_POLL 32
static void __attribute__((noinline)) carry_fill(struct pma_arena *arena)
{
	arena->carry_poll = PMA_CARRY_POLL;
	if (atomic_load_explicit(&arena->xlist, memory_order_relaxed))
		(void)xsync(arena, 0, 1);
}

__attribute__((always_inline)) static inline void
carry_fill_fast(struct pma_arena *arena)
{
	/* (0 at open: the first op looks) */
	if (__builtin_expect(!arena->carry_n && arena->carry_poll-- <= 1, 0))
		carry_fill(arena);
}

/* the carried SYNC_FREEs that are durable (the carry_dn ring slots
 * before carry_first): their rpend bits cleared, xowed and the counters
 * lowered, in one burst: per op, the rpend line (which the freeing
 * thread sets bits in) and xowed (which it adds to) would move between
 * the two threads' caches at every op. Later is never wrong: the
 * freeing part only waits longer to retire its XFREEs */
static void __attribute__((noinline)) carry_settle(struct pma_arena *arena)
{
	struct pma_heap *heap = arena->heap;
	unsigned n = arena->carry_dn, i;
	struct pma_carry *c;

	if (!n)
		return;
	for (i = 0; i < n; i++) {
		c = &arena->carry[(arena->carry_first + PMA_CARRY_MAX - n + i) %
				  PMA_CARRY_MAX];
		pma_slab_rpend_clear(c->slab, c->idx);
	}
	atomic_fetch_add_explicit(&heap->rfrees_synced, n,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&heap->syncs_carried, n,
				  memory_order_relaxed);
	atomic_fetch_sub(&arena->xowed, n);
	arena->carry_dn = 0;
}

/* after the fence that made c's SYNC_FREE durable: settled with the
 * next PMA_CARRY_SETTLE, or at the next sync (xsync) */
#define PMA_CARRY_SETTLE 32
__attribute__((always_inline)) static inline void
carry_done(struct pma_arena *arena, struct pma_carry c)
{
	if (__builtin_expect(!c.slab, 1))
		return;
	if (++arena->carry_dn >= PMA_CARRY_SETTLE)
		carry_settle(arena);
}

/* the blocks of bits (word w of slab's xdone bits, taken) into the carry
 * ring while it has room; returns the bits left */
static uint64_t carry_take(struct pma_arena *arena, struct pma_slab *slab,
			   unsigned w, uint64_t bits)
{
	unsigned i;

	for (; bits && arena->carry_dn + arena->carry_n < PMA_CARRY_MAX;
	     bits &= bits - 1) {
		i = (arena->carry_first + arena->carry_n++) % PMA_CARRY_MAX;
		arena->carry[i].slab = slab;
		arena->carry[i].idx = w * 64 + (uint32_t)__builtin_ctzll(bits);
	}
	return bits;
}

/* the carried frees back to their slabs' xdone bits, for sync_word */
static void carry_return(struct pma_arena *arena)
{
	struct pma_carry *c;

	carry_settle(arena);
	for (; arena->carry_n; arena->carry_n--) {
		c = &arena->carry[arena->carry_first];
		arena->carry_first = (arena->carry_first + 1) % PMA_CARRY_MAX;
		atomic_fetch_or(&c->slab->xdone[c->idx / 64],
				1ULL << (c->idx % 64));
		pma_xlist_push(arena, c->slab);
	}
}

uint64_t pma_arena_sync(struct pma_arena *arena, uint64_t room)
{
	struct pma_slab *slab, *next;
	uint64_t n = 0, bits, keep;
	unsigned w;
	int deferred;

	slab = atomic_exchange_explicit(&arena->rlist, NULL,
					memory_order_acquire);
	for (; slab; slab = next) {
		/* read before in_rlist clears: a freeing arena may push the
		 * slab again at once, which rewrites rnext */
		next = slab->rnext;
		atomic_store(&slab->in_rlist, 0);
		take_back(arena, slab);
		deferred = 0;
		for (w = 0; w < PMA_LIVE_WORDS; w++) {
			if (!atomic_load_explicit(&slab->rdone[w],
						  memory_order_relaxed))
				continue;
			if (n >= room) {
				deferred = 1;
				continue;
			}
			bits = atomic_exchange(&slab->rdone[w], 0);
			/* the lowest room - n of them now, the rest back */
			for (keep = bits;
			     n + (uint64_t)__builtin_popcountll(keep) > room;)
				keep &= ~(1ULL << (63 - __builtin_clzll(keep)));
			if (keep != bits) {
				atomic_fetch_or(&slab->rdone[w], bits & ~keep);
				deferred = 1;
			}
			sync_word(arena, slab, w, keep, 0);
			n += (uint64_t)__builtin_popcountll(keep);
		}
		if (deferred)
			pma_rlist_push(arena, slab);
	}
	return n + xsync(arena, room - n, 1);
}

uint64_t pma_arena_xsync(struct pma_arena *arena, uint64_t room)
{
	carry_return(arena);
	return xsync(arena, room, 0);
}

uint64_t pma_arena_xsync_carry(struct pma_arena *arena, uint64_t room)
{
	return xsync(arena, room, 1);
}

/* pma_arena_xsync; carry: the SYNC_FREEs into the carry ring first */
/* xsync_carry's results for word w of slab's xdone */
#define XSYNC_CARRIED 0 /* all of them carried (or none there) */
#define XSYNC_DEFER 1 /* the ring is full: the rest wait */
#define XSYNC_WRITE 2 /* the ring is full and half the owed room used */

/* carry what of word w of slab's xdone the ring can take */
static int xsync_carry(struct pma_arena *arena, struct pma_slab *slab,
		       unsigned w)
{
	uint64_t bits;

	if (arena->carry_dn + arena->carry_n >= PMA_CARRY_MAX)
		return XSYNC_WRITE;
	bits = atomic_exchange(&slab->xdone[w], 0);
	bits = carry_take(arena, slab, w, bits);
	if (!bits)
		return XSYNC_CARRIED;
	/* the ring is full: the rest wait, or are written once half the
	 * owed room is used */
	atomic_fetch_or(&slab->xdone[w], bits);
	if (atomic_load_explicit(&arena->xowed, memory_order_relaxed) <
	    pma_xowed_max(arena->heap->geom.log_cap) / 2)
		return XSYNC_DEFER;
	return XSYNC_WRITE;
}

static uint64_t xsync(struct pma_arena *arena, uint64_t room, int carry)
{
	struct pma_slab *slab, *next;
	uint64_t n = 0, bits, keep;
	unsigned w;
	int deferred, c;

	carry_settle(arena);
	if (!atomic_load_explicit(&arena->xlist, memory_order_relaxed))
		return 0;
	slab = atomic_exchange_explicit(&arena->xlist, NULL,
					memory_order_acquire);
	for (; slab; slab = next) {
		next = slab->xnext; /* as in pma_arena_sync */
		atomic_store(&slab->in_xlist, 0);
		take_back(arena, slab);
		deferred = 0;
		for (w = 0; w < PMA_LIVE_WORDS; w++) {
			if (!atomic_load_explicit(&slab->xdone[w],
						  memory_order_relaxed))
				continue;
			if (carry) {
				c = xsync_carry(arena, slab, w);
				if (c == XSYNC_DEFER)
					deferred = 1;
				if (c != XSYNC_WRITE)
					continue;
			}
			if (n >= room) {
				deferred = 1;
				continue;
			}
			bits = atomic_exchange(&slab->xdone[w], 0);
			for (keep = bits;
			     n + (uint64_t)__builtin_popcountll(keep) > room;)
				keep &= ~(1ULL << (63 - __builtin_clzll(keep)));
			if (keep != bits) {
				atomic_fetch_or(&slab->xdone[w], bits & ~keep);
				deferred = 1;
			}
			sync_word(arena, slab, w, keep, 1);
			n += (uint64_t)__builtin_popcountll(keep);
		}
		if (deferred)
			pma_xlist_push(arena, slab);
	}
	return n;
}

/* log_append_ext's two-record form: an extent too large (or too far) for
 * one record, or any extent of a version 3 heap */
static void __attribute__((noinline))
log_append_ext2(struct pma_arena *arena, unsigned type, uint64_t off,
		uint64_t npages, uint64_t dest_off)
{
	log_put(arena, type, off >> arena->heap->osh, dest_off);
	log_put(arena, PMA_REC_EXT_LEN, npages, 0);
}

/*
 * An EXT_LFREE of the extent at off, whose EXT_ALLOC is among the arena's
 * last PMA_CANCEL_SCAN checkpoint copies: in the checkpoint's order the
 * entry of off is 0 before that EXT_ALLOC (the extent was carved from free
 * pages: their entries are 0 in PM, or made 0 by an earlier free of the
 * window, which stays) and the EXT_LFREE makes it 0 again, so the
 * checkpoint applies neither.
 * The EXT_ALLOC copy becomes PMA_REC_NONE and the caller keeps no copy of
 * the free; 1 if so. Both records stay in the log: recovery replays them
 * in order, to the same end. No other op names that extent in between
 * (it was live, then in this arena's local runs), and the latest
 * EXT_ALLOC at off is this extent's (scanning backwards).
 */
#define PMA_CANCEL_SCAN 16
static inline int ext_cancel_alloc(struct pma_arena *arena, uint64_t off)
{
	uint64_t i = arena->struct_ops;
	uint64_t end = i > PMA_CANCEL_SCAN ? i - PMA_CANCEL_SCAN : 0;
	struct pma_dram_op *d;

	while (i-- > end) {
		d = &arena->ops[i];
		if (d->off == off && d->type == PMA_REC_EXT_ALLOC) {
			d->type = PMA_REC_NONE;
			return 1;
		}
	}
	return 0;
}

/*
 * Append an extent op (EXT_ALLOC, EXT_FREE, EXT_LFREE) of npages pages at
 * off: its copy for the checkpoint (arena->ops; none for an EXT_LFREE that
 * cancels its EXT_ALLOC) and its record(s), flushed, not fenced. The
 * caller made room for 2 records (arena_lock_ext) and synced nothing:
 * inlined always, as log_put.
 */
__attribute__((always_inline)) static inline void
log_append_ext(struct pma_arena *arena, unsigned type, uint64_t off,
	       uint64_t npages, uint64_t dest_off)
{
	struct pma_dram_op *d;

	pma_assert(arena->tail + 2 - arena->head <= arena->heap->geom.log_cap);
	log_cursor_sync(arena);
	if (type != PMA_REC_EXT_LFREE || !ext_cancel_alloc(arena, off)) {
		d = &arena->ops[arena->struct_ops++];
		d->k = arena->tail;
		d->off = off;
		d->npages = npages;
		d->type = (uint8_t)type;
		d->cls = 0;
		d->owner = 0;
	}
	if (__builtin_expect(npages <= arena->heap->ext1_pages &&
				     off < PMA_REC_EXT1_OFF_MAX,
			     1))
		log_put(arena, pma_rec_ext1(type),
			off >> PMA_PAGE_SHIFT |
				(npages - 1) << PMA_REC_EXT1_OFF_BITS,
			dest_off);
	else
		log_append_ext2(arena, type, off, npages, dest_off);
}

/*
 * Append op's record(s), flushed but not fenced. The caller checked room
 * (pma_log_room). The records are the commit point once fenced.
 */
static inline int pma_log_append_op(struct pma_arena *arena,
				    const struct pma_op *op)
{
	uint32_t cap = arena->heap->geom.log_cap;
	struct pma_dram_op *d;

	if (arena->tail + 2 - arena->head > cap)
		return -ENOSPC;
	log_cursor_sync(arena);
	if (pma_rec_is_block(op->type)) {
		log_append_block(arena, op->type, op->slab, op->off, op->dest);
		return 0;
	}
	pma_assert(op->type == PMA_REC_SLAB_NEW ||
		   op->type == PMA_REC_SLAB_FREE ||
		   op->type == PMA_REC_SLAB_MORPH);
	d = &arena->ops[arena->struct_ops++];
	d->k = arena->tail;
	d->off = op->off;
	d->npages = 0;
	d->type = (uint8_t)op->type;
	d->cls = (uint8_t)op->cls;
	d->owner = (uint16_t)op->owner;
	d->old_cls = (uint8_t)op->old_cls;
	log_put(arena, op->type, op->off >> arena->heap->osh,
		(uint64_t)op->cls << 8 | (uint64_t)op->owner << 16 |
			(op->type == PMA_REC_SLAB_MORPH ?
				 (uint64_t)op->old_cls << 32 :
				 0));
	return 0;
}

int pma_log_append_struct(struct pma_arena *arena, const struct pma_op *op)
{
	return pma_log_append_op(arena, op);
}

/*
 * Commit: flush the pending dest line unless this op's dest word is in it,
 * fence (the records appended since the last fence become durable: the op
 * is committed), then store value in *dest. The stores of consecutive ops
 * into one line (an array of pointers, or one word again and again) are
 * so flushed once, not once per op (no reflush). Until their line is
 * flushed recovery redoes them from the log; to bound how far back, a
 * pending line holds at most PMA_DEST_BATCH runs (ops in a row on one
 * word form a run: only the last op of a run matters for its word).
 * Recovery redoes each arena's last PMA_DEST_REDO runs: a pending batch
 * plus the last op, whose fence may not have made its flush durable.
 * A dest in a BYTE mapping (eADR) needs no flush: the store is durable
 * once the next fence (the next op's, or a checkpoint's) orders it, so
 * nothing is batched (recovery redoes the same runs all the same).
 */
static void log_commit_batched(struct pma_arena *arena, uint64_t *dest,
			       uint64_t dest_off, uint64_t value)
{
	struct pma_heap *heap = arena->heap;
	uintptr_t line = (uintptr_t)dest & ~(uintptr_t)(PMA_LINE - 1);
	int new_run = dest != arena->dest_last;

	if (arena->dest_line &&
	    (!dest_off || line != arena->dest_line ||
	     (new_run && arena->dest_runs >= PMA_DEST_BATCH)))
		pma_arena_flush_dest(arena);
	pm_drain_fast(heap->map);
	__atomic_store_n(dest, value, __ATOMIC_RELEASE);
	if (!dest_off)
		return;
	if (!arena->dest_line) {
		arena->dest_line = line;
		arena->dest_map =
			pool_off_part(dest_off) == heap->part ?
				heap->map :
				pool_part_map(heap->pool,
					      pool_off_part(dest_off));
		arena->dest_runs = 0;
		new_run = 1;
	}
	arena->dest_runs += new_run;
	arena->dest_last = dest;
}

/* pma_log_commit: a dest in a BYTE mapping inline, batching in a call */
__attribute__((always_inline)) static inline void
pma_log_commit(struct pma_arena *arena, uint64_t *dest, uint64_t dest_off,
	       uint64_t value)
{
	struct pma_heap *heap = arena->heap;

	if (__builtin_expect(!arena->dest_line && pm_flush_is_noop(heap->map) &&
				     pool_off_part(dest_off) == heap->part,
			     1)) {
		pm_drain_fast(heap->map);
		__atomic_store_n(dest, value, __ATOMIC_RELEASE);
		return;
	}
	log_commit_batched(arena, dest, dest_off, value);
}

/*
 * Lock the arena with room for one op in its log: PMA_OP_RECS records.
 * pma_log_append_op wants room for 2 (an extent op's) at each append, and
 * an allocation that makes a slab appends SLAB_NEW, then its ALLOC: 3.
 */
#define PMA_OP_RECS 3
static int arena_lock_room(struct pma_arena *arena)
{
	int rc;

	pma_arena_lock(arena);
	/* and the SYNC_FREE records it owes (version 10, xowed) */
	while (arena->tail + PMA_OP_RECS +
		       atomic_load_explicit(&arena->xowed,
					    memory_order_relaxed) -
		       arena->head >
	       arena->heap->geom.log_cap) {
		pma_arena_unlock(arena);
		rc = pma_checkpoint(arena->heap);
		if (rc < 0)
			return rc;
		pma_arena_lock(arena);
	}
	return 0;
}

int pma_arena_lock_room(struct pma_arena *arena)
{
	return arena_lock_room(arena);
}

/* the records pma_arena_sync may append in an op (lock held, with room
 * for the op itself) */
static inline uint64_t sync_room(const struct pma_arena *arena)
{
	uint64_t used = arena->tail - arena->head + PMA_OP_RECS;
	uint32_t cap = arena->heap->geom.log_cap;

	return used < cap ? cap - used : 0;
}

/* do the published pending pages (freed extents that only a checkpoint
 * gives to every arena) say a checkpoint is due? */
static inline int pending_over(const struct pma_heap *heap)
{
	return atomic_load_explicit(&heap->pending_pages,
				    memory_order_relaxed) >=
	       heap->geom.npages / PMA_PENDING_DIV;
}

/* arena's pending pages changed (lock held): publish them if they moved
 * pend_slack or more from what it published; 1 if that made a checkpoint
 * due. Most ops so touch no shared line (a free and a reuse cancel out) */
static inline int pending_publish(struct pma_arena *arena)
{
	struct pma_heap *heap = arena->heap;
	uint64_t d = arena->pend_pages - arena->pend_pub; /* mod 2^64 */

	if (__builtin_expect(d + heap->pend_slack <= 2 * heap->pend_slack, 1))
		return 0;
	atomic_fetch_add(&heap->pending_pages, d);
	arena->pend_pub = arena->pend_pages;
	return pending_over(heap);
}

/* is a checkpoint due (lock held)? When half the log is used, when the
 * logs together hold PMA_CKPT_RECORDS (a bound on recovery time), or when
 * freed extents only a checkpoint gives to every arena (pending frees,
 * arenas' local runs) hold 1 / PMA_PENDING_DIV of the heap: another
 * thread could otherwise fill the heap with them between a failed
 * allocation's checkpoint and its retry. The caller runs it after
 * unlocking. */
/* version 8: the tail at which arena checkpoints itself next: when its
 * log holds its share (the recovery bound is the shares' sum), or, after
 * a checkpoint that could not retire enough (other arenas have not
 * applied its remote frees yet), a quarter share later: not at every op
 * meanwhile */
static inline uint64_t local_next(const struct pma_arena *arena)
{
	uint32_t cap = arena->heap->geom.log_cap;
	uint64_t next = arena->head + arena->heap->ckpt_share;
	/* the fast paths append up to fast_end without a room check: it
	 * must stay well inside the log (a retry point past it let them
	 * overwrite records of the window, found by crash.bats) */
	uint64_t limit = arena->head + cap - cap / 8;

	if (next < arena->ckpt_retry)
		next = arena->ckpt_retry;
	return next < limit ? next : limit;
}

static inline int arena_checkpoint_due(struct pma_arena *arena)
{
	struct pma_heap *heap = arena->heap;
	uint64_t n = arena->tail - arena->est_mark;

	/* version 8: pending extents still need a global checkpoint */
	if (heap->local)
		return arena->tail >= local_next(arena) || pending_over(heap);

	if (__builtin_expect(n >= PMA_CKPT_STEP, 0)) {
		arena->est_mark = arena->tail;
		if (atomic_fetch_add_explicit(&heap->log_records, n,
					      memory_order_relaxed) +
			    n >=
		    heap->ckpt_records)
			return 1;
	}
	return arena->tail - arena->head >= heap->geom.log_cap / 2 ||
	       pending_over(heap);
}

/*
 * After an op of the general path (lock held): let the owner's fast paths
 * run until the next point where this path must look again (the log half
 * full, the next PMA_CKPT_STEP records for the estimate), with the cursor
 * in sync; not at all if a checkpoint is due. Between such points nothing
 * else moves tail, and head and est_mark only grow, so a fast_end left
 * from before a checkpoint is too small, never too large.
 */
#define PMA_XRING_EVERY 64
static void arena_fast_refresh(struct pma_arena *arena, int due)
{
	uint64_t half = arena->head + arena->heap->geom.log_cap / 2;
	uint64_t step = arena->est_mark + PMA_CKPT_STEP;

	log_cursor_sync(arena);
	/* version 8 keeps no global estimate: its own point only */
	if (arena->heap->local)
		half = step = local_next(arena);
	/* an open that shares the pool looks at its free rings every
	 * PMA_XRING_EVERY ops (arena_unlock_op) */
	if (arena->heap->top->ring_mask && arena->tail + PMA_XRING_EVERY < step)
		step = arena->tail + PMA_XRING_EVERY;
	arena->fast_end = due ? 0 : half < step ? half : step;
}

/* unlock after an op; run the checkpoint it made due (a failure is
 * retried at the next op) */
static void arena_unlock_op(struct pma_arena *arena, int rc)
{
	struct pma_heap *heap = arena->heap;
	int due = rc == 0 && arena_checkpoint_due(arena);

	/* version 8: this arena alone, under the lock it holds; a global
	 * checkpoint only for pending extents, or when the local one could
	 * not retire enough (other arenas have not applied this one's
	 * remote frees: the global one retires them with their owners) */
	if (due && heap->local && !pending_over(heap)) {
		(void)pma_checkpoint_local(arena);
		arena->ckpt_retry = arena->tail + heap->ckpt_share / 4;
		due = arena->tail - arena->head >=
		      heap->ckpt_share + heap->ckpt_share / 2;
	}

	arena_fast_refresh(arena, due);
	pma_arena_unlock(arena);
	if (due)
		(void)pma_checkpoint_due(arena->heap);
	/* version 12, an open that shares the pool: the frees other opens
	 * made of this region's blocks (free rings; a few loads if none) */
	if (heap->xring && heap->top->ring_mask)
		(void)pma_xring_drain(heap);
}

/* unlock after an op of the owner's fast path (pma_arena_trylock_owner,
 * tail < fast_end before it: no checkpoint is due yet) */
static inline void arena_unlock_fast(struct pma_arena *arena)
{
	atomic_store_explicit(&arena->busy, 0, memory_order_release);
}

/* lock arena for an op of up to 2 records (an extent op): 1 if the owner
 * got it on its fast path with the op's records before fast_end (unlock
 * with arena_unlock_fast: no checkpoint can be due from the log), 0 if
 * through arena_lock_room (unlock with arena_unlock_op), or < 0 */
static inline int arena_lock_ext(struct pma_arena *arena)
{
	int rc;

	if (pma_arena_trylock_owner(arena)) {
		if (arena->tail + 2 <= arena->fast_end)
			return 1;
		pma_arena_unlock(arena);
	}
	rc = arena_lock_room(arena);
	return rc < 0 ? rc : 0;
}

static inline void arena_unlock_ext(struct pma_arena *arena, int fast, int rc)
{
	if (fast)
		arena_unlock_fast(arena);
	else
		arena_unlock_op(arena, rc);
}

/* a new slab of class cls for arena, logged (SLAB_NEW), on its list */
static int arena_slab_new(struct pma_arena *arena, unsigned cls)
{
	struct pma_heap *heap = arena->heap;
	struct pma_op op = { .type = PMA_REC_SLAB_NEW, .cls = cls };
	struct pma_slab *slab;
	uint64_t page;
	int rc;

	pthread_mutex_lock(&heap->ext_lock);
	rc = pma_ext_take(&heap->ext, PMA_CHUNK_PAGES, PMA_CHUNK_PAGES, &page);
	slab = rc < 0 ? NULL : heap->spare_slabs;
	if (slab)
		heap->spare_slabs = slab->next;
	pthread_mutex_unlock(&heap->ext_lock);
	if (rc < 0)
		return rc;
	if (slab)
		pma_slab_init(slab, pma_page_off(heap, page), cls, arena->id);
	else
		slab = pma_slab_new(pma_page_off(heap, page), cls, arena->id);
	if (!slab)
		goto out_put;
	op.off = slab->off;
	op.owner = arena->id;
	slab->new_k = arena->tail + 1;
	pma_expect_ok(pma_log_append_op(arena, &op));
	/* slab first: a reader seeing the entry must not load it from PM */
	atomic_store(&heap->slabs[page / PMA_CHUNK_PAGES], slab);
	atomic_store(&heap->pmap[page], pma_pmap_make_slab(cls, arena->id));
	pma_partial_push(arena, slab);
	return 0;

out_put:
	pthread_mutex_lock(&heap->ext_lock);
	(void)pma_ext_put(&heap->ext, page, PMA_CHUNK_PAGES);
	pthread_mutex_unlock(&heap->ext_lock);
	return -ENOMEM;
}

static int alloc_large(struct pma_arena *arena, size_t size, uint64_t *dest,
		       uint64_t dest_off, unsigned flags);

/*
 * A block of class cls from arena's slabs, logged in arena's log (the
 * owner's: a block's allocations and owner frees stay in one log). grow:
 * the caller's own arena, which may make a new slab; else a neighbour it
 * only takes free blocks from (-ENOMEM if it has none).
 */
static int alloc_small(struct pma_arena *arena, unsigned cls, uint64_t *dest,
		       uint64_t dest_off, unsigned flags, int grow)
{
	struct pma_heap *heap = arena->heap;
	struct pma_op op = { .type = PMA_REC_ALLOC };
	struct pma_carry c = carry_none;
	struct pma_slab *slab;
	uint64_t t0;
	int rc, tries;

	rc = arena_lock_room(arena);
	if (rc < 0)
		return rc;
	/* phase 2 of remote frees of this arena's blocks (version 8) */
	if (heap->local &&
	    atomic_load_explicit(&arena->rlist, memory_order_relaxed))
		(void)pma_arena_sync(arena, sync_room(arena));
	/* version 10: frees of this arena's blocks by other parts' arenas
	 * (XFREE), in both checkpoint modes: carried by the next ops */
	if (atomic_load_explicit(&arena->xlist, memory_order_relaxed))
		(void)xsync(arena, sync_room(arena), 1);
	t0 = arena->tail;
	tries = 0;
again:
	if (!arena->partial[cls]) {
		rc = pma_lazy_refill(arena, cls); /* old slabs first */
		/* then a slab of another class morphed, then a new one */
		if (rc == 0 && !arena->partial[cls] && grow &&
		    arena->heap->morph_pct)
			(void)pma_morph_try(arena, cls);
		if (rc == 0 && !arena->partial[cls])
			rc = grow ? arena_slab_new(arena, cls) : -ENOMEM;
		if (rc < 0)
			goto out_unlock;
	}
	if (pma_partial_take(arena, cls, &slab, &op.off) < 0) {
		/* listed slabs without a free block (a bug): unlinked */
		if (++tries < 2)
			goto again;
		rc = util_errmsg_set(EIO,
				     "no free block in class %u's "
				     "partial slabs",
				     cls);
		goto out_unlock;
	}
	op.slab = slab;
	op.dest = dest_off;
	/* zeros must be durable before the record commits the block: a
	 * second fence, zalloc only */
	if (flags & PMA_ALLOC_ZERO)
		pm_memset(heap->map, pma_addr(heap, op.off), 0,
			  slab->block_size, 0);
	/* a carried SYNC_FREE unless a record (SLAB_NEW) went before */
	if (arena->tail == t0)
		c = carry_put(arena);
	pma_expect_ok(pma_log_append_op(arena, &op));
	pma_log_commit(arena, dest, dest_off, pma_pool_off(heap, op.off));
	carry_done(arena, c);
out_unlock:
	arena_unlock_op(arena, rc);
	return rc;
}

/* the thread's arena is out of blocks of cls and the heap out of slabs:
 * take a free block from another arena's slabs (their owners keep them) */
static int alloc_small_elsewhere(struct pma_arena *own, unsigned cls,
				 uint64_t *dest, uint64_t dest_off,
				 unsigned flags)
{
	struct pma_heap *heap = own->heap;
	unsigned i, n = heap->geom.narenas;
	int rc = -ENOMEM;

	for (i = 1; i < n && rc == -ENOMEM; i++)
		rc = alloc_small(&heap->arenas[(own->id + i) % n], cls, dest,
				 dest_off, flags, 0);
	return rc;
}

static int alloc_one(struct pma_arena *arena, size_t size, uint64_t *dest,
		     uint64_t dest_off, unsigned flags)
{
	unsigned cls;
	int rc;

	if (size > PMA_SMALL_MAX)
		return alloc_large(arena, size, dest, dest_off, flags);
	cls = pma_class_of(size, arena->heap->fine);
	rc = alloc_small(arena, cls, dest, dest_off, flags, 1);
	if (rc == -ENOMEM)
		rc = alloc_small_elsewhere(arena, cls, dest, dest_off, flags);
	return rc;
}

static int alloc_large(struct pma_arena *arena, size_t size, uint64_t *dest,
		       uint64_t dest_off, unsigned flags)
{
	struct pma_heap *heap = arena->heap;
	uint64_t page, off, npages = size / PMA_PAGE + (size % PMA_PAGE != 0);
	int fast, rc = 0;

	fast = arena_lock_ext(arena);
	if (fast < 0)
		return fast;
	/* the arena's own freed extents first: reusable before a
	 * checkpoint (their frees are in this log, before this record) */
	if (pma_runs_take(&arena->local, npages, &page) == 0) {
		arena->pend_pages -= npages;
		(void)pending_publish(arena); /* fewer: nothing becomes due */
	} else {
		pthread_mutex_lock(&heap->ext_lock);
		rc = pma_ext_take(&heap->ext, npages, 1, &page);
		pthread_mutex_unlock(&heap->ext_lock);
		if (rc < 0)
			goto out_unlock;
	}
	/* release: readers of the mirror load with acquire; nothing here
	 * needs the full barrier of a seq_cst store (an xchg on x86) */
	atomic_store_explicit(&heap->pmap[page],
			      pma_pmap_make_ext_owned(npages, arena->id),
			      memory_order_release);
	off = pma_page_off(heap, page);
	/* zeros durable before the record commits the extent */
	if (flags & PMA_ALLOC_ZERO)
		pm_memset(heap->map, pma_addr(heap, off), 0, npages * PMA_PAGE,
			  0);
	log_append_ext(arena, PMA_REC_EXT_ALLOC, off, npages, dest_off);
	pma_log_commit(arena, dest, dest_off, pma_pool_off(heap, off));
out_unlock:
	arena_unlock_ext(arena, fast, rc);
	return rc;
}

/* op_check's failures, with their messages, and every dest outside the
 * heap's data area */
static int op_check_slow(struct pma_heap *heap, const uint64_t *dest,
			 uint64_t *ret_off)
{
	uint64_t off;

	*ret_off = 0;
	if (!heap)
		return util_errmsg_set(EINVAL, "no heap");
	if (heap->rdonly)
		return pma_heap_writable(heap);
	if (!dest || (uintptr_t)dest % sizeof(*dest))
		return util_errmsg_set(EINVAL,
				       "dest %p is not an aligned "
				       "8-byte word",
				       (const void *)dest);
	off = pma_dest_off(heap, dest);
	*ret_off = off;
	if (off && pma_heap_dest_check(heap, off) < 0)
		return util_errmsg_set(EINVAL,
				       "dest 0x%llx is inside pool or "
				       "heap metadata",
				       (unsigned long long)off);
	return 0;
}

/* the checks every operation starts with: a heap open for writing and a
 * dest that is an aligned word outside the heap metadata (-EINVAL); its
 * pool offset (0 if outside the pool) in *ret_off. Inline for the op
 * fast paths: a dest in the heap's data area is one compare */
static inline int op_check(struct pma_heap *heap, const uint64_t *dest,
			   uint64_t *ret_off)
{
	uintptr_t a;

	if (__builtin_expect(heap != NULL, 1)) {
		a = (uintptr_t)dest - heap->fast_dest_lo;
		if (__builtin_expect(a < heap->fast_dest_len &&
					     a % sizeof(*dest) == 0,
				     1)) {
			*ret_off = heap->fast_dest_off + a;
			return 0;
		}
	}
	return op_check_slow(heap, dest, ret_off);
}

/* allocate in heap (one part); trim: a checkpoint that releases empty
 * slabs may make room for a second try; -ENOMEM without a message */
static int alloc_in(struct pma_heap *heap, size_t size, uint64_t *dest,
		    uint64_t dest_off, unsigned flags, int trim)
{
	struct pma_arena *arena;
	int rc, attempt;

	if (size > heap->data_len)
		return -ENOMEM;
	arena = pma_arena_get(heap);
	for (attempt = 0;; attempt++) {
		rc = alloc_one(arena, size, dest, dest_off, flags);
		/* frees waiting for a checkpoint may make room */
		if (rc != -ENOMEM || attempt || !trim)
			break;
		rc = pma_checkpoint_trim(heap);
		if (rc < 0)
			return rc;
	}
	return rc;
}

/*
 * A heap over several parts (or regions): the thread's local region
 * first, then its part's others, then the other parts nearest first
 * (numa.c, pma_place_heaps); each without a checkpoint first, then each
 * with one (releasing empty slabs), so that a full local region does not
 * cost a checkpoint per allocation while another has room.
 */
static int alloc_parts(struct pma_heap *top, size_t size, uint64_t *dest,
		       uint64_t dest_off, unsigned flags)
{
	struct pma_heap *order[PMA_MAX_SLOTS];
	struct pma_heap *local = pma_place_local(top), *h;
	uint64_t largest = 0;
	unsigned k, n;
	int trim, rc;

	n = pma_place_heaps(top, local, order);
	for (trim = 0; trim < 2; trim++) {
		for (k = 0; k < n; k++) {
			h = order[k];
			rc = alloc_in(h, size, dest, dest_off, flags, trim);
			if (rc == -ENOMEM)
				continue;
			if (rc == 0 && h != local)
				atomic_fetch_add_explicit(&top->fallbacks, 1,
							  memory_order_relaxed);
			return rc;
		}
	}
	for (k = 0; k < n; k++)
		if (order[k]->data_len > largest)
			largest = order[k]->data_len;
	if (size > largest)
		return util_errmsg_set(ENOMEM,
				       "%zu bytes exceed every %s of the "
				       "heap (the largest holds %llu)",
				       size, top->nreg > 1 ? "region" : "part",
				       (unsigned long long)largest);
	return util_errmsg_set(ENOMEM,
			       "heap full: no room for %zu bytes in any of "
			       "its %u %s",
			       size, n, top->nreg > 1 ? "regions" : "parts");
}

static int alloc_to_once(struct pma_heap *heap, size_t size, uint64_t *dest,
			 unsigned flags)
{
	uint64_t dest_off;
	int rc;

	if (!heap)
		return util_errmsg_set(EINVAL, "no heap");
	rc = op_check(heap, dest, &dest_off);
	if (rc < 0)
		return rc;
	if (size == 0)
		return util_errmsg_set(EINVAL, "size 0");
	if (heap->nsib > 1 && !(flags & PMA_ALLOC_HERE))
		return alloc_parts(heap, size, dest, dest_off, flags);
	if (size > heap->data_len)
		return util_errmsg_set(ENOMEM, "%zu bytes exceed the heap",
				       size);
	rc = alloc_in(heap, size, dest, dest_off, flags, 1);
	if (rc == -ENOMEM)
		return util_errmsg_set(ENOMEM,
				       "heap full: no room for %zu "
				       "bytes",
				       size);
	return rc;
}

/*
 * A masked open found no room for size bytes in its regions: the
 * config's room hook gives it more (pmad leases free regions), unless
 * another thread's call did since held_before. 0: try again; -ENOMEM
 * with the hook's reason when it has none. One call at a time.
 */
static int room_more(struct pma_heap *top, size_t size, uint64_t held_before)
{
	char why[256] = "";
	int rc = 0;

	pthread_mutex_lock(&top->room_lock);
	if (__atomic_load_n(&top->held, __ATOMIC_ACQUIRE) == held_before)
		rc = top->cfg.room_hook.fn(top, top->cfg.room_hook.arg, why,
					   sizeof(why));
	pthread_mutex_unlock(&top->room_lock);
	if (rc < 0)
		return util_errmsg_set(ENOMEM,
				       "heap full: no room for %zu bytes in "
				       "the regions this open holds, and no "
				       "more: %s",
				       size, why[0] ? why : strerror(-rc));
	return 0;
}

/*
 * Allocate size bytes into *dest (pma_malloc_to's slow path and the
 * library's own calls). A masked open with a room hook that runs out of
 * room asks it for more regions and tries again, while the hook finds
 * some (at most once per region slot); not for PMA_ALLOC_HERE (one heap
 * asked) nor a size no region can hold.
 */
int pma_alloc_to(struct pma_heap *heap, size_t size, uint64_t *dest,
		 unsigned flags)
{
	struct pma_heap *top;
	uint64_t held;
	unsigned tries;
	int rc;

	if (!heap)
		return util_errmsg_set(EINVAL, "no heap");
	top = heap->top;
	for (tries = 0;; tries++) {
		held = __atomic_load_n(&top->held, __ATOMIC_ACQUIRE);
		rc = alloc_to_once(heap, size, dest, flags);
		if (rc != -ENOMEM || !top->cfg.room_hook.fn ||
		    !top->cfg.region_mask || (flags & PMA_ALLOC_HERE) ||
		    size > top->data_len || tries >= PMA_MAX_SLOTS)
			return rc;
		if (room_more(top, size, held) < 0)
			return -ENOMEM;
	}
}

static int free_extent(struct pma_arena *arena, uint64_t off, uint64_t *dest,
		       uint64_t dest_off);

/* a block, or else an extent (at byte offset off, rel into the data
 * area); the slab is looked up under the arena lock: a checkpoint (every
 * arena lock) may have released it since */
static int free_block(struct pma_arena *arena, uint64_t rel, uint64_t off,
		      uint64_t *dest, uint64_t dest_off)
{
	struct pma_op op = { .off = off, .dest = dest_off };
	struct pma_slab *slab;
	uint32_t idx;
	int own, rc, held;

again:
	rc = arena_lock_room(arena);
	if (rc < 0)
		return rc;
	slab = pma_heap_slab_at_rel(arena->heap, rel);
	if (!slab) {
		arena_unlock_op(arena, -ENOENT);
		return free_extent(arena, off, dest, dest_off);
	}
	own = slab->owner == arena->id;
	if (own && slab->old_cls != PMA_CLS_NONE) {
		/* version 9, a mixed slab: its old blocks too */
		pma_morph_note(arena, slab);
		if (pma_morph_free_old(arena, slab, off)) {
			op.type = PMA_REC_FREE;
			op.slab = slab;
			pma_expect_ok(pma_log_append_op(arena, &op));
			pma_log_commit(arena, dest, dest_off, 0);
			/* listed only with a free block (pma_partial_take):
			 * an old block's free may unblock none */
			if (slab->navail)
				pma_partial_push(arena, slab);
			pma_slab_empty_check(arena, slab);
			goto out_unlock;
		}
	}
	held = own ? PMA_GEOM_FREE :
		     pma_slab_geom_enter(
			     atomic_load_explicit(&arena->heap->may_mix,
						  memory_order_relaxed),
			     slab);
	if (held < 0) {
		/* a mixed slab's blocks are freed under its owner's lock,
		 * in its owner's log (morph.c) */
		arena_unlock_op(arena, 0);
		arena = &arena->heap->arenas[slab->owner];
		goto again;
	}
	if (pma_slab_index(slab, off, &idx) < 0) {
		pma_slab_geom_leave(slab, held);
		rc = util_errmsg_set(EINVAL, "0x%llx is not a block",
				     (unsigned long long)off);
		goto out_unlock;
	}
	if (!own && pma_retq_push(&arena->rfreed, off, arena->tail, PMA_NO_DEP,
				  0) < 0) {
		pma_slab_geom_leave(slab, held);
		rc = util_errmsg_set(ENOMEM, "out of memory");
		goto out_unlock;
	}
	rc = own ? pma_slab_unlive(slab, idx) : remote_unlive(slab, idx);
	pma_slab_geom_leave(slab, held);
	if (rc < 0) {
		arena->rfreed.count -= !own;
		rc = util_errmsg_set(EINVAL, "double free of 0x%llx",
				     (unsigned long long)off);
		goto out_unlock;
	}
	op.type = own ? PMA_REC_FREE : PMA_REC_RFREE;
	op.slab = slab;
	pma_expect_ok(pma_log_append_op(arena, &op));
	pma_log_commit(arena, dest, dest_off, 0);
	if (own) {
		pma_slab_give(slab, idx);
		pma_partial_push(arena, slab);
		pma_slab_empty_check(arena, slab);
	} else {
		remote_committed(arena->heap, slab, idx);
	}
out_unlock:
	arena_unlock_op(arena, rc);
	return rc;
}

/* an extent freed through arena, not the one whose log allocated it
 * (mirror entry e): waits in ext_freed for arena's retirement, which
 * must also wait until the allocating arena retired the allocation (its
 * tail now is past it) */
static int ext_freed_push(struct pma_arena *arena, uint64_t page, uint64_t e)
{
	struct pma_heap *heap = arena->heap;
	uint32_t dep = PMA_NO_DEP;
	uint64_t dep_k = 0;

	if (pma_pmap_cls(e) == PMA_PMAP_EXT_OWNED &&
	    pma_pmap_owner(e) < heap->geom.narenas) {
		dep = pma_pmap_owner(e);
		/* the allocation was committed (its record fenced) before
		 * its offset reached this thread: its record is below the
		 * tail the allocating arena has now; reading tail without
		 * its lock gives an older or the current value, and an older
		 * value is still past the allocation's record */
		dep_k = __atomic_load_n(&heap->arenas[dep].tail,
					__ATOMIC_ACQUIRE);
	}
	return pma_retq_push(&arena->ext_freed, page, arena->tail, dep, dep_k);
}

/*
 * An extent allocated through this arena's log (since open) is freed with
 * EXT_LFREE, applied in log order, and the arena may reuse it at once: no
 * other log can name that space before a checkpoint (it was live, then
 * only this arena may take it). Any other extent is freed with EXT_FREE,
 * applied after every log's allocations, and reusable after a checkpoint.
 */
static int free_extent(struct pma_arena *arena, uint64_t off, uint64_t *dest,
		       uint64_t dest_off)
{
	struct pma_heap *heap = arena->heap;
	uint64_t page = pma_page_of(heap, off), npages;
	uint64_t e = atomic_load(&heap->pmap[page]);
	int local, fast, rc;

	if (off % PMA_PAGE || pma_pmap_kind(e) != PMA_PMAP_EXTENT ||
	    !atomic_compare_exchange_strong(&heap->pmap[page], &e,
					    pma_pmap_make(PMA_PMAP_FREEING,
							  pma_pmap_npages(e))))
		return util_errmsg_set(EINVAL,
				       "0x%llx is not a live block "
				       "(bad offset or double free)",
				       (unsigned long long)off);
	npages = pma_pmap_npages(e);
	fast = arena_lock_ext(arena);
	rc = fast;
	if (rc < 0)
		goto out_restore;
	/* the run count under the lock: another thread sharing the arena
	 * may have added a run (pma_runs_put refuses one past the limit) */
	local = pma_pmap_ext_owned_by(e, arena->id) &&
		arena->local.count < PMA_LOCAL_RUNS;
	rc = local ? pma_runs_put(&arena->local, page, npages) :
		     ext_freed_push(arena, page, e);
	if (rc < 0) {
		pma_arena_unlock(arena);
		goto out_restore;
	}
	log_append_ext(arena, local ? PMA_REC_EXT_LFREE : PMA_REC_EXT_FREE, off,
		       npages, dest_off);
	pma_log_commit(arena, dest, dest_off, 0);
	if (local)
		atomic_store_explicit(&heap->pmap[page], 0,
				      memory_order_release);
	/* the pending-pages trigger (arena_checkpoint_due) can only be met
	 * by a free: check it here on the fast path too */
	arena->pend_pages += npages;
	if (pending_publish(arena))
		fast = 0;
	arena_unlock_ext(arena, fast, 0);
	return 0;

out_restore:
	atomic_store(&heap->pmap[page], e);
	return util_errmsg_set(-rc, "cannot free 0x%llx",
			       (unsigned long long)off);
}

/*
 * pma_free_from's common case, inline: a block freed by a thread that
 * owns its arena (fast path), with room in the log (and, for another
 * arena's block, in the rfreed list) and its live bit set. 1 otherwise
 * (nothing changed: free_block runs and reports a double free or a bad
 * offset), else 0. Another arena's block is logged RFREE and waits in
 * rfreed for the checkpoint, as in free_block.
 */
static inline int free_fast(struct pma_arena *arena, struct pma_slab *slab,
			    uint64_t rel, uint64_t off, uint64_t *dest,
			    uint64_t dest_off)
{
	struct pma_carry c;
	uint32_t idx;
	int own, held;

	if (!pma_arena_trylock_owner(arena))
		return 1;
	carry_fill_fast(arena);
	/* still the chunk's slab under the lock (see free_block) */
	if (!pma_heap_slab_is(arena->heap, rel, slab) ||
	    arena->tail >= arena->fast_end)
		goto out_slow;
	own = slab->owner == arena->id;
	if (own) {
		/* a mixed slab (version 9): the slow path */
		if (slab->old_cls != PMA_CLS_NONE ||
		    pma_slab_index(slab, off, &idx) < 0 ||
		    pma_slab_unlive(slab, idx) < 0)
			goto out_slow;
		c = carry_put_fast(arena);
		log_append_block(arena, PMA_REC_FREE, slab, off, dest_off);
		pma_log_commit(arena, dest, dest_off, 0);
		carry_done(arena, c);
		pma_slab_give(slab, idx);
		pma_partial_push(arena, slab);
		pma_slab_empty_check(arena, slab);
	} else {
		if (arena->rfreed.count == arena->rfreed.alloc)
			goto out_slow;
		held = pma_slab_geom_enter(
			atomic_load_explicit(&arena->heap->may_mix,
					     memory_order_relaxed),
			slab);
		if (held < 0)
			goto out_slow;
		if (pma_slab_index(slab, off, &idx) < 0 ||
		    remote_unlive(slab, idx) < 0) {
			pma_slab_geom_leave(slab, held);
			goto out_slow;
		}
		pma_slab_geom_leave(slab, held);
		arena->rfreed.e[arena->rfreed.count++] = (struct pma_ret){
			.off = off, .k = arena->tail, .dep_arena = PMA_NO_DEP
		};
		c = carry_put_fast(arena);
		log_append_block(arena, PMA_REC_RFREE, slab, off, dest_off);
		pma_log_commit(arena, dest, dest_off, 0);
		carry_done(arena, c);
		remote_committed(arena->heap, slab, idx);
	}
	arena_unlock_fast(arena);
	return 0;

out_slow:
	pma_arena_unlock(arena);
	return 1;
}

/* room in arena's log for a ring entry's op (every lock held) */
static int xring_room(const struct pma_arena *arena)
{
	return arena->tail + PMA_OP_RECS + 2 +
		       atomic_load_explicit(&arena->xowed,
					    memory_order_relaxed) -
		       arena->head <=
	       arena->heap->geom.log_cap;
}

/* pma_xring_apply_locked for an extent's first page */
static int xring_apply_extent(struct pma_heap *o, uint64_t b)
{
	uint64_t page = pma_page_of(o, b), npages;
	uint64_t e = atomic_load(&o->pmap[page]);
	struct pma_arena *arena;
	int local, rc;

	if (b % PMA_PAGE || pma_pmap_kind(e) != PMA_PMAP_EXTENT)
		return -EINVAL;
	arena = pma_pmap_cls(e) == PMA_PMAP_EXT_OWNED &&
				pma_pmap_owner(e) < o->geom.narenas ?
			&o->arenas[pma_pmap_owner(e)] :
			&o->arenas[0];
	if (!xring_room(arena))
		return -ENOSPC;
	npages = pma_pmap_npages(e);
	if (!atomic_compare_exchange_strong(&o->pmap[page], &e,
					    pma_pmap_make(PMA_PMAP_FREEING,
							  npages)))
		return -EINVAL;
	local = pma_pmap_ext_owned_by(e, arena->id) &&
		arena->local.count < PMA_LOCAL_RUNS;
	rc = local ? pma_runs_put(&arena->local, page, npages) :
		     ext_freed_push(arena, page, e);
	if (rc < 0) {
		atomic_store(&o->pmap[page], e);
		return -ENOSPC; /* no memory now: the next drain */
	}
	pma_arena_flush_dest(arena);
	log_cursor_sync(arena);
	log_append_ext(arena, local ? PMA_REC_EXT_LFREE : PMA_REC_EXT_FREE, b,
		       npages, 0);
	if (local)
		atomic_store_explicit(&o->pmap[page], 0, memory_order_release);
	arena->pend_pages += npages;
	(void)pending_publish(arena);
	arena->fast_end = 0;
	return 0;
}

/* pma_xring_apply_locked's fence: before n more records if they would
 * leave more than two unfenced (recovery allows two at a log's end) */
static void xring_fence_due(struct pma_heap *o, unsigned *unfenced, unsigned n)
{
	if (*unfenced + n > 2) {
		pm_drain(o->map);
		*unfenced = 0;
	}
}

/* pma_xring_apply_locked for a slab's block */
static int xring_apply_slab(struct pma_heap *o, uint64_t b,
			    struct pma_slab *slab)
{
	struct pma_op op = { .type = PMA_REC_FREE, .off = b };
	struct pma_arena *arena;
	uint32_t idx;

	arena = &o->arenas[slab->owner];
	if (!xring_room(arena))
		return -ENOSPC;
	/* the owner's free (free_block's own path), its records' dest
	 * batch flushed first: the redo of its earlier ops must not fall
	 * out of recovery's window behind these records */
	pma_arena_flush_dest(arena);
	op.slab = slab;
	if (slab->old_cls != PMA_CLS_NONE) {
		pma_morph_note(arena, slab);
		if (pma_morph_free_old(arena, slab, b)) {
			pma_expect_ok(pma_log_append_op(arena, &op));
			if (slab->navail)
				pma_partial_push(arena, slab);
			pma_slab_empty_check(arena, slab);
			arena->fast_end = 0;
			return 0;
		}
	}
	if (pma_slab_index(slab, b, &idx) < 0 || pma_slab_unlive(slab, idx) < 0)
		return -EINVAL;
	pma_expect_ok(pma_log_append_op(arena, &op));
	/* not taken before the drain persisted its consumer word: every
	 * arena lock of o is held until then */
	pma_slab_give(slab, idx);
	pma_partial_push(arena, slab);
	pma_slab_empty_check(arena, slab);
	arena->fast_end = 0;
	return 0;
}

int pma_xring_apply_locked(struct pma_heap *o, uint64_t b, unsigned *unfenced)
{
	uint64_t rel = b - o->data_base;
	struct pma_slab *slab;
	unsigned n;
	int rc;

	if (b < o->data_base || rel >= o->data_len ||
	    rel & ((1ULL << o->osh) - 1))
		return -EINVAL;
	slab = pma_heap_slab_at_rel(o, rel);
	n = slab ? 1 : 2; /* an extent's op is two records, a block's one */
	xring_fence_due(o, unfenced, n);
	rc = slab ? xring_apply_slab(o, b, slab) : xring_apply_extent(o, b);
	if (rc == 0)
		*unfenced += n;
	xring_fence_due(o, unfenced, 1); /* two out: fenced now */
	return rc;
}

/* free the block at pool offset off, named by dest (checked) */
static int free_off(struct pma_heap *heap, uint64_t *dest, uint64_t off,
		    uint64_t dest_off)
{
	struct pma_arena *arena;
	struct pma_slab *slab;
	uint64_t rel, b;

	/* in this part's pages, aligned to the unit records name blocks in
	 * (one test; which of the two failed is only told apart on the
	 * error path) */
	rel = off - heap->fast_dest_off;
	if (__builtin_expect(rel >= heap->data_len ||
				     rel & ((1ULL << heap->osh) - 1),
			     0)) {
		if (rel < heap->data_len)
			return util_errmsg_set(EINVAL,
					       "0x%llx is not a block (not "
					       "%u-byte aligned)",
					       (unsigned long long)off,
					       1u << heap->osh);
		return util_errmsg_set(EINVAL, "0x%llx is not in the heap",
				       (unsigned long long)off);
	}
	/* the root object lives as long as the heap: its word (heap
	 * metadata) is no dest, and freeing a copy of its offset would leave
	 * the root naming a block that another allocation gets next */
	if (__builtin_expect(off == __atomic_load_n(&heap->hdr->root_off,
						    __ATOMIC_RELAXED),
			     0))
		return util_errmsg_set(EINVAL,
				       "0x%llx is the root object, which is "
				       "never freed",
				       (unsigned long long)off);
	b = heap->data_base + rel;
	arena = pma_arena_get(heap);
	/* which path (a slab or an extent), looked up again under the lock */
	slab = pma_heap_slab_at_rel(heap, rel);
	if (!slab)
		return free_extent(arena, b, dest, dest_off);
	if (free_fast(arena, slab, rel, b, dest, dest_off) == 0)
		return 0;
	return free_block(arena, rel, b, dest, dest_off);
}

/* xfree_off's first step, under arena's lock: off (slab's block, at
 * rel in o) queued for retirement and unlived. 0; 1: a mixed slab (its
 * geometry is read under its owner's lock only: through o's heap) or no
 * longer the chunk's slab; or -errno (a double free, nothing changed) */
static int xfree_unlive(struct pma_heap *o, struct pma_arena *arena,
			struct pma_slab *slab, uint64_t rel, uint64_t off,
			uint32_t *ret_idx)
{
	int held, rc = 0;

	held = pma_slab_geom_enter(
		atomic_load_explicit(&o->may_mix, memory_order_relaxed), slab);
	if (held < 0)
		return 1;
	if (!pma_heap_slab_is(o, rel, slab) ||
	    pma_slab_index(slab, o->data_base + rel, ret_idx) < 0)
		rc = 1;
	else if (pma_retq_push(&arena->xfreed, off, arena->tail, PMA_NO_DEP,
			       0) < 0)
		rc = util_errmsg_set(ENOMEM, "out of memory");
	else if (remote_unlive(slab, *ret_idx) < 0) {
		arena->xfreed.count--;
		rc = util_errmsg_set(EINVAL, "double free of 0x%llx",
				     (unsigned long long)off);
	} else
		atomic_fetch_add(&slab->xout, 1); /* until xfreed_release */
	pma_slab_geom_leave(slab, held);
	return rc;
}

/*
 * A free of a block of another part's heap (O) by a thread whose local
 * part is L (version 10 on both): phase 1 in the thread's arena of L, so
 * that nothing of O's PM is written on the free path. rpend set and live
 * cleared in O's DRAM slab (as a remote free), XFREE appended to the
 * arena's log in L, fence, dest cleared; then xdone set and the slab on
 * its owner's xlist: the owner applies it in its own log (SYNC_FREE,
 * pma_arena_xsync), after which L's checkpoint may retire the XFREE and
 * hand the block back (rret). See doc/shared-heaps.md, step 1.
 * 1 if this path does not apply (an extent, a block past what the record
 * can name, a failed check: the caller frees through O's heap and
 * reports errors as before), else 0 or -errno.
 */
static int xfree_off(struct pma_heap *l, struct pma_heap *o, uint64_t *dest,
		     uint64_t off, uint64_t dest_off)
{
	uint64_t rel = off - o->fast_dest_off, b;
	struct pma_arena *arena, *owner;
	struct pma_carry c;
	struct pma_slab *slab;
	uint32_t idx;
	int fast, rc = 0;

	/* the record names b >> l->osh: a block of o that l's records
	 * cannot name goes through o */
	if (rel >= o->data_len || rel & ((1ULL << l->osh) - 1) ||
	    off == __atomic_load_n(&o->hdr->root_off, __ATOMIC_RELAXED))
		return 1;
	b = o->data_base + rel;
	if (b >> l->osh >= 1ULL << PMA_REC_XFREE_OFF_BITS)
		return 1;
	slab = pma_heap_slab_at_rel(o, rel);
	if (!slab)
		return 1;
	/* a SYNC_FREE the owner's log keeps room for, else through o */
	owner = &o->arenas[slab->owner];
	if (atomic_fetch_add(&owner->xowed, 1) >=
	    pma_xowed_max(o->geom.log_cap)) {
		atomic_fetch_sub(&owner->xowed, 1);
		return 1;
	}
	arena = pma_arena_get(l);
	/* the owner's fast path as free_fast's (one record, no
	 * allocation), else the general path */
	fast = 0;
	if (pma_arena_trylock_owner(arena)) {
		fast = arena->tail < arena->fast_end &&
		       arena->xfreed.count < arena->xfreed.alloc;
		if (!fast)
			pma_arena_unlock(arena);
		else
			carry_fill_fast(arena);
	}
	if (!fast) {
		rc = arena_lock_room(arena);
		if (rc < 0) {
			atomic_fetch_sub(&owner->xowed, 1);
			return rc;
		}
	}
	rc = xfree_unlive(o, arena, slab, rel, off, &idx);
	if (rc)
		goto out_unlock;
	c = fast ? carry_put_fast(arena) : carry_put(arena);
	log_cursor_sync(arena);
	log_put(arena, PMA_REC_XFREE,
		b >> l->osh | (uint64_t)o->part << PMA_REC_XFREE_OFF_BITS,
		dest_off);
	pma_log_commit(arena, dest, dest_off, 0);
	carry_done(arena, c);
	atomic_fetch_or(&slab->xdone[idx / 64], 1ULL << (idx % 64));
	pma_xlist_push(owner, slab);
	atomic_fetch_add_explicit(&l->top->xfrees, 1, memory_order_relaxed);
out_unlock:
	if (rc)
		atomic_fetch_sub(&owner->xowed, 1); /* nothing owed */
	if (fast)
		arena_unlock_fast(arena);
	else
		arena_unlock_op(arena, rc < 0 ? rc : 0);
	return rc;
}

PMA_API int pma_free_from(struct pma_heap *heap, uint64_t *dest)
{
	struct pma_heap *local = heap, *h;
	uint64_t off, dest_off;
	unsigned part;
	int rc, s;

	if (!heap)
		return util_errmsg_set(EINVAL, "no heap");
	/* several parts: the dest check's one compare is against the local
	 * part's data area, where a thread's dest words usually are */
	if (__builtin_expect(heap->nsib > 1, 0))
		local = pma_place_local(heap);
	rc = op_check(local, dest, &dest_off);
	if (rc < 0)
		return rc;
	off = __atomic_load_n(dest, __ATOMIC_ACQUIRE);
	if (!off)
		return 0;
	part = pool_off_part(off);
	if (__builtin_expect(local->top->ring_mask != 0, 0) &&
	    (s = pma_heap_slot_of(local, off)) >= 0 &&
	    (unsigned)s != local->slot && local->top->ring_mask >> s & 1) {
		/* a region another open holds: through a free ring */
		rc = pma_xring_free(local, (unsigned)s, off, dest, dest_off);
		if (rc <= 0)
			return rc;
		rc = pma_heap_foreign_check(local, off);
		if (rc < 0)
			return rc;
	}
	if (__builtin_expect(local->top->nreg > 1, 0) && part == local->part &&
	    (h = pma_heap_route(local, off)))
		local = h; /* another region of the part: through its heap */
	else if (__builtin_expect(part != local->part, 0) &&
		 (h = pma_heap_route(local, off))) {
		/* another part's block: logged in the local part (XFREE),
		 * else that part's heap frees it */
		atomic_fetch_add_explicit(&h->top->remote_part_frees, 1,
					  memory_order_relaxed);
		if (local->xfree && h->xfree) {
			rc = xfree_off(local, h, dest, off, dest_off);
			if (rc <= 0)
				return rc;
		}
		local = h;
	}
	return free_off(local, dest, off, dest_off);
}

/*
 * pma_malloc_to's common case, the whole op inline: a small block for a
 * thread that owns its arena (the biased lock's fast path), which has a
 * partial slab of the class and room in its log. 1 if that is not the
 * case (nothing was changed: the general path runs), else 0.
 */
static inline int alloc_fast(struct pma_heap *heap, size_t size, uint64_t *dest,
			     uint64_t dest_off)
{
	struct pma_arena *arena = pma_arena_get(heap);
	unsigned cls = pma_class_of(size, heap->fine);
	struct pma_carry c;
	struct pma_slab *slab;
	uint64_t off;

	if (!pma_arena_trylock_owner(arena))
		return 1;
	carry_fill_fast(arena);
	if (!arena->partial[cls] || arena->tail >= arena->fast_end ||
	    pma_partial_take(arena, cls, &slab, &off) < 0) {
		pma_arena_unlock(arena);
		return 1;
	}
	c = carry_put_fast(arena);
	log_append_block(arena, PMA_REC_ALLOC, slab, off, dest_off);
	pma_log_commit(arena, dest, dest_off, pma_pool_off(heap, off));
	carry_done(arena, c);
	arena_unlock_fast(arena);
	return 0;
}

PMA_API int pma_malloc_to(struct pma_heap *heap, size_t size, uint64_t *dest)
{
	struct pma_heap *h = heap;
	uint64_t dest_off;

	if (!heap)
		return util_errmsg_set(EINVAL, "no heap");
	/* several parts: the thread's local part, whose data area also
	 * holds the dest words the check finds with one compare */
	if (__builtin_expect(heap->nsib > 1, 0))
		h = pma_place_local(heap);
	/* a failed check, a failed extent allocation (-ENOMEM: it
	 * checkpoints and retries) or any other error: pma_alloc_to runs
	 * and reports it */
	if (size && op_check(h, dest, &dest_off) == 0) {
		if (size <= PMA_SMALL_MAX) {
			if (alloc_fast(h, size, dest, dest_off) == 0)
				return 0;
		} else if (size <= h->data_len &&
			   alloc_large(pma_arena_get(h), size, dest, dest_off,
				       0) == 0) {
			return 0;
		}
	}
	return pma_alloc_to(heap, size, dest, 0);
}

PMA_API int pma_zalloc_to(struct pma_heap *heap, size_t size, uint64_t *dest)
{
	return pma_alloc_to(heap, size, dest, PMA_ALLOC_ZERO);
}
