/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc internals. Map of the DRAM objects:
 *   pma_heap  -> one open heap: pool, geometry, page map mirror, extents
 *   pma_arena -> one bookkeeping log + the slabs it allocates from
 *   pma_slab  -> DRAM state of one 64 KiB slab (live/avail bitmaps)
 * Lock order: arena locks in index order (only the checkpoint takes more
 * than one), then heap->ext_lock, then heap->stat_lock. The DRAM state is
 * always the current (logged) state; PM holds the last checkpoint + logs.
 */
#ifndef PMAD_PMALLOC_INTERNAL_H
#define PMAD_PMALLOC_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pmalloc.h"
#include "pmalloc/layout.h"
#include "pmem/pm.h"
#include "pool/pool.h"
#include "util/crc.h"
#include "util/tls.h"

#if PMAD_DEBUG
#include <assert.h>
#define pma_assert(x) assert(x)
#else
#define pma_assert(x) ((void)0)
#endif
/* evaluate x, a call that cannot fail here; asserted to return 0 */
#define pma_expect_ok(x)                  \
	do {                              \
		int pma_rc_ = (x);        \
		pma_assert(pma_rc_ == 0); \
		(void)pma_rc_;            \
	} while (0)

#define PMA_NCLASSES 52
#define PMA_NCLASSES_V10 43 /* the classes of a heap before version 11 */
#define PMA_SMALL_MAX 14336 /* largest size class */
#define PMA_MAX_ARENAS 64
/* version 10: the SYNC_FREEs an arena carries at most (struct pma_arena,
 * carry); the rest are written with fences of their own */
#define PMA_CARRY_MAX 256
_Static_assert(PMA_NCLASSES <= PMA_PMAP_FIELD_MASK + 1,
	       "a page map entry holds every class");
_Static_assert(PMA_MAX_ARENAS <= PMA_PMAP_FIELD_MASK + 1,
	       "a page map entry holds every arena");
#define PMA_PENDING_DIV 4 /* see pma_heap.pending_pages */
/* a checkpoint is due when the records of all logs since the last one
 * reach this many (recovery replays at most about this many, plus what
 * the estimate lags: PMA_CKPT_STEP per arena), or when one log is half
 * full; arenas add to the estimate every PMA_CKPT_STEP records */
#define PMA_CKPT_RECORDS 65536
#define PMA_CKPT_STEP 256
/* pause loops an owner spins for a revoker to finish before it sleeps on
 * the arena mutex (about 100 us) */
#define PMA_OWNER_SPINS 8192
/* at most this many runs of an arena's ops leave their dest words
 * unflushed in one line; recovery redoes each arena's last
 * PMA_DEST_REDO runs of ops with a dest (see pma_log_commit) */
#define PMA_DEST_BATCH 8
#define PMA_DEST_REDO (PMA_DEST_BATCH + 1)
#define PMA_LIVE_WORDS 16 /* avail: 1024 bits >= PMA_SLAB_MAX_BLOCKS */
_Static_assert(PMA_LIVE_WORDS <= 32, "avail_words has a bit per avail word");
/* words of each PM bitmap line that can hold block bits */
#define PMA_SLAB_LINE_WORDS PMA_SLAB_BANK_WORDS
_Static_assert(PMA_SLAB_MAX_BLOCKS <= PMA_NBANKS * 64 * PMA_SLAB_LINE_WORDS,
	       "PMA_SLAB_LINE_WORDS words per line cover every block");
/* linear scratch bitmap of pma_slab_load: every PM bit + the spill word */
#define PMA_SLAB_LIN_WORDS (PMA_NBANKS * PMA_SLAB_LINE_WORDS + 1)

/* ------------------------------------------------------------ slab.c */

/*
 * Three groups of cache lines, so that a thread freeing another arena's
 * block (reading the first group, clearing a live bit) does not keep
 * missing on lines the owner writes at every op (the second group):
 * read-mostly fields; the owner's (under its lock); the live bitmap.
 * Allocated 64-byte aligned (pma_slab_alloc).
 */
struct pma_slab {
	_Alignas(PMA_LINE) uint64_t off; /* byte offset of the slab */
	uint16_t cls; /* size class */
	uint16_t owner; /* owning arena */
	uint32_t block_size; /* bytes */
	uint32_t block_inv; /* pma_class_inv(cls): offset -> index */
	uint32_t nblocks; /* blocks */
	/* a block op since the last checkpoint changed live: the slab is on
	 * the dirty list of the arena that set this first (dirty_next);
	 * set once per checkpoint window */
	atomic_int dirty;
	struct pma_slab *dirty_next;

	/* avail: blocks the owner may hand out (linear: bit i is block i) */
	/* the owner's partial list of the class (doubly linked: a
	 * checkpoint unlinks an empty slab in O(1)) */
	_Alignas(PMA_LINE) struct pma_slab *next;
	struct pma_slab *prev;
	uint32_t navail; /* bits set in avail */
	uint32_t avail_words; /* bit w: avail[w] != 0 */
	int in_partial; /* on the owner's partial list */
	/* every block available since it went on the owner's candidate
	 * list (cand_next): the next checkpoint may release the slab
	 * (owner lock, or every arena lock) */
	int empty_cand;
	struct pma_slab *cand_next;
	uint64_t avail[PMA_LIVE_WORDS];
	/* morphing (version 9, morph.c; owner lock): 1 + the arena's tail
	 * when the slab last served an allocation (0: never since open), 1
	 * + the index of the last record of a mixed op on it (SLAB_MORPH,
	 * or a block op while mixed; 0: none since open) */
	uint64_t alloc_k;
	uint64_t morph_k;
	uint64_t new_k; /* 1 + the tail at its SLAB_NEW (0: before open) */
	/* a mixed slab: its old class (PMA_CLS_NONE if plain), that class's
	 * geometry, its live blocks (old_live, interleaved like live; its
	 * count), and per block of the current class the live old blocks
	 * it overlaps (blocked, malloc'd while mixed; a block is available
	 * only at 0) */
	uint16_t old_cls;
	uint32_t old_block_size;
	uint32_t old_nblocks;
	uint32_t old_count;
	uint16_t *blocked;
	uint64_t old_live[PMA_NBANKS][PMA_SLAB_LINE_WORDS];

	/* live: the user's view, set by alloc, cleared (atomically, by any
	 * thread) by free, in the PM bitmap's interleaved layout (see
	 * pma_slab_live_word): a checkpoint copies it to PM as it is */
	_Alignas(PMA_LINE) _Atomic uint64_t
		live[PMA_NBANKS][PMA_SLAB_LINE_WORDS];

	/*
	 * Two-phase frees of this slab's blocks by other arenas (version
	 * 8, written by those arenas; see doc/pmalloc.md, "Per-arena
	 * checkpoints"). rpend (interleaved, as live): set before the
	 * remote free clears the live bit, cleared once the owner's
	 * SYNC_FREE of the block is durable; a checkpoint of the owner
	 * writes live | rpend to PM, so a remote free in flight or not yet
	 * applied by the owner never reaches the owner's PM bitmap. rdone
	 * (linear): the remote free is committed (its RFREE durable), for
	 * the owner to apply. rret (linear): the remote free is retired
	 * (its RFREE's log moved past it), the block is the owner's to
	 * hand out again. A slab with rdone or rret bits is on its owner's
	 * rlist (rnext; in_rlist says so).
	 */
	_Alignas(PMA_LINE) _Atomic uint64_t
		rpend[PMA_NBANKS][PMA_SLAB_LINE_WORDS];
	_Atomic uint64_t rdone[PMA_LIVE_WORDS];
	_Atomic uint64_t rret[PMA_LIVE_WORDS];
	atomic_int in_rlist;
	struct pma_slab *rnext;
	/* morphing (version 9): mixed is set (owner lock) while the slab
	 * holds live blocks of an old class, and from just before a morph
	 * (which may still give up). A thread that reads the geometry
	 * without the owner's lock (a remote free, usable_size) first adds
	 * to rbusy, then reads mixed: if set it takes the owner's lock
	 * instead, else the morph waits for rbusy to drain (both seq_cst)
	 * before it changes the geometry. A line of their own: the owner
	 * writes the words around them (in_rlist, rret) */
	_Alignas(PMA_LINE) atomic_int mixed;
	atomic_int rbusy;
	/* version 10: frees of this slab's blocks by arenas of another
	 * part (XFREE in the freeing thread's own part, alloc.c): xdone
	 * (linear) as rdone, for the owner to apply in both checkpoint
	 * modes; the block comes back through rret. A slab with xdone or
	 * rret bits set by such a free is on its owner's xlist (xnext;
	 * in_xlist says so) */
	_Alignas(PMA_LINE) _Atomic uint64_t xdone[PMA_LIVE_WORDS];
	atomic_int in_xlist;
	struct pma_slab *xnext;
	/* such frees not yet retired by their freeing arena: counted from
	 * phase 1 (under rbusy, with rpend set) until the block's rret bit
	 * is set (xfreed_release). Between the owner's retiring its
	 * SYNC_FREE (a global checkpoint of its part) and that rret, the
	 * block has no other trace in this slab's DRAM state; a morph
	 * (remote_quiet) must not run while one is out, or the XFREE,
	 * still in the freeing part's window, would name a block of the
	 * old geometry */
	atomic_uint xout;
};
#define PMA_CLS_NONE 0xffffu

/* pma_slab_geom_enter's results: nothing held (a heap where no slab can
 * be mixed), rbusy held */
#define PMA_GEOM_FREE 0
#define PMA_GEOM_HELD 1

/* enter / leave a lock-free read of slab's geometry: PMA_GEOM_HELD with
 * rbusy held, or -EAGAIN (mixed: take the owner's lock). may_mix is the
 * heap's (pma_heap_may_mix): 0, no slab of the heap is or becomes mixed
 * and nothing is held (PMA_GEOM_FREE); a heap that never morphs pays one
 * load of a read-mostly word */
static inline int pma_slab_geom_enter(int may_mix, struct pma_slab *slab)
{
	if (__builtin_expect(!may_mix, 1))
		return PMA_GEOM_FREE;
	atomic_fetch_add(&slab->rbusy, 1);
	if (__builtin_expect(!atomic_load(&slab->mixed), 1))
		return PMA_GEOM_HELD;
	atomic_fetch_sub(&slab->rbusy, 1);
	return -EAGAIN;
}
static inline void pma_slab_geom_leave(struct pma_slab *slab, int held)
{
	if (held == PMA_GEOM_HELD)
		atomic_fetch_sub_explicit(&slab->rbusy, 1,
					  memory_order_release);
}

/* a line-aligned struct pma_slab for pma_slab_init (free() releases it) */
static inline struct pma_slab *pma_slab_alloc(void)
{
	struct pma_slab *slab = aligned_alloc(PMA_LINE, sizeof(*slab));

	/* zeroed: a caller whose load fails before pma_slab_init still
	 * releases it with pma_morph_release (slab->blocked) */
	if (slab)
		memset(slab, 0, sizeof(*slab));
	return slab;
}

/* the DRAM live word and mask of block idx: bit (idx / NBANKS) of bank
 * idx % NBANKS, as in the PM bitmap (pma_slab_bit) */
static inline _Atomic uint64_t *
pma_slab_live_word(struct pma_slab *slab, uint32_t idx, uint64_t *ret_mask)
{
	uint32_t bit = idx / PMA_NBANKS;

	*ret_mask = 1ULL << (bit % 64);
	return &slab->live[idx % PMA_NBANKS][bit / 64];
}

static inline int pma_slab_is_live(struct pma_slab *slab, uint32_t idx)
{
	uint64_t mask;

	return (atomic_load_explicit(pma_slab_live_word(slab, idx, &mask),
				     memory_order_relaxed) &
		mask) != 0;
}

unsigned pma_class_count(void);
/* the classes of a heap of this layout version (indices below it) */
unsigned pma_nclasses(uint32_t version);
uint32_t pma_class_size(unsigned cls);
/* pma_class_of for 1024 < size <= PMA_SMALL_MAX */
unsigned pma_class_of_large(size_t size);
extern const uint8_t pma_class_fine[16];
/* size class for size (1..PMA_SMALL_MAX); fine: a version 11 heap, with
 * 16-byte steps from 64 to 256 B */
static inline unsigned pma_class_of(size_t size, int fine)
{
	if (fine && size <= 256)
		return size ? pma_class_fine[(size - 1) / 16] : 0;
	/* 64-byte steps up to 1 KiB: classes 0..15 */
	if (size <= 1024)
		return size ? (unsigned)((size - 1) / 64) : 0;
	return pma_class_of_large(size);
}
uint32_t pma_class_nblocks(unsigned cls);
/* ceil(2^32 / size of cls): (rel * inv) >> 32 == rel / size for every
 * rel < PMA_CHUNK (checked for all classes by test_class_table) */
uint32_t pma_class_inv(unsigned cls);

/* PM bitmap address and mask of block i (interleaved) */
uint64_t *pma_slab_bit(void *slab_pm, uint32_t i, uint64_t *ret_mask);

/* an empty slab (every block available) */
void pma_slab_init(struct pma_slab *slab, uint64_t off, unsigned cls,
		   unsigned owner);
struct pma_slab *pma_slab_new(uint64_t off, unsigned cls, unsigned owner);
/* set live, avail and navail of a new slab from its PM header + bitmap
 * (word operations, no per-block loop) */
void pma_slab_load(struct pma_slab *slab, const void *slab_pm);
/* take a free block (caller holds the owner lock); -ENOMEM if none */
static inline int pma_slab_take(struct pma_slab *slab, uint32_t *ret_idx)
{
	_Atomic uint64_t *live;
	uint64_t mask;
	unsigned w;
	uint32_t idx;

	if (!slab->avail_words)
		return -ENOMEM;
	/* the lowest free block: its word is the lowest non-zero one */
	w = (unsigned)__builtin_ctz(slab->avail_words);
	idx = w * 64 + (uint32_t)__builtin_ctzll(slab->avail[w]);
	slab->avail[w] &= slab->avail[w] - 1;
	if (!slab->avail[w])
		slab->avail_words &= ~(1U << w);
	slab->navail--;
	live = pma_slab_live_word(slab, idx, &mask);
	atomic_fetch_or_explicit(live, mask, memory_order_relaxed);
	*ret_idx = idx;
	return 0;
}

/* atomically clear the live bit; -EINVAL if it was clear */
static inline int pma_slab_unlive(struct pma_slab *slab, uint32_t idx)
{
	uint64_t mask, old;
	_Atomic uint64_t *w = pma_slab_live_word(slab, idx, &mask);

	old = atomic_fetch_and_explicit(w, ~mask, memory_order_acq_rel);
	return (old & mask) ? 0 : -EINVAL;
}

/* word and mask of block idx in an interleaved bitmap of slab (live,
 * rpend) */
static inline _Atomic uint64_t *
pma_slab_iword(_Atomic uint64_t (*map)[PMA_SLAB_LINE_WORDS], uint32_t idx,
	       uint64_t *ret_mask)
{
	uint32_t bit = idx / PMA_NBANKS;

	*ret_mask = 1ULL << (bit % 64);
	return &map[idx % PMA_NBANKS][bit / 64];
}

/* a remote free's first step (version 8): the block is pending in
 * rpend before its live bit is cleared; -EINVAL if it was pending (a
 * remote free of it running, or not yet applied by the owner: a double
 * free) */
static inline int pma_slab_rpend_set(struct pma_slab *slab, uint32_t idx)
{
	uint64_t mask;
	_Atomic uint64_t *w = pma_slab_iword(slab->rpend, idx, &mask);

	return (atomic_fetch_or(w, mask) & mask) ? -EINVAL : 0;
}

static inline void pma_slab_rpend_clear(struct pma_slab *slab, uint32_t idx)
{
	uint64_t mask;
	_Atomic uint64_t *w = pma_slab_iword(slab->rpend, idx, &mask);

	atomic_fetch_and(w, ~mask);
}

/* return idx to avail (owner lock held) */
static inline void pma_slab_give(struct pma_slab *slab, uint32_t idx)
{
	pma_assert(!(slab->avail[idx / 64] & (1ULL << (idx % 64))));
	slab->avail[idx / 64] |= 1ULL << (idx % 64);
	slab->avail_words |= 1U << (idx / 64);
	slab->navail++;
}

/* block index of byte offset off in slab, or -EINVAL */
static inline int pma_slab_index(const struct pma_slab *slab, uint64_t off,
				 uint32_t *ret_idx)
{
	uint64_t rel;
	uint32_t idx;

	rel = off - slab->off - PMA_SLAB_HDR_SIZE; /* huge if below */
	if (rel >= PMA_CHUNK - PMA_SLAB_HDR_SIZE)
		return -EINVAL;
	/* a multiply instead of two divides (free path) */
	idx = (uint32_t)((rel * slab->block_inv) >> 32);
	if ((uint64_t)idx * slab->block_size != rel || idx >= slab->nblocks)
		return -EINVAL;
	*ret_idx = idx;
	return 0;
}

static inline uint64_t pma_slab_block_off(const struct pma_slab *slab,
					  uint32_t idx)
{
	return slab->off + PMA_SLAB_HDR_SIZE + (uint64_t)idx * slab->block_size;
}

/* ------------------------------------------------------------ booklog.c */

/* a decoded record (an extent op is two records merged into one) */
struct pma_op {
	enum pma_rec_type type;
	uint64_t index; /* global index of its (first) record */
	uint64_t off; /* byte offset in the part (block/slab/extent) */
	uint64_t dest; /* dest pool offset, 0 if none */
	uint64_t npages; /* extents */
	unsigned cls; /* SLAB_NEW */
	unsigned owner; /* SLAB_NEW; XFREE: the part of the block */
	unsigned old_cls; /* SLAB_MORPH: the class the slab had */
	unsigned nrecs; /* 1 or 2 */
	/* block ops made by this process: the DRAM slab (checkpoints copy
	 * its live bitmap); NULL in ops decoded from the log */
	struct pma_slab *slab;
};

/* slot j (< cap) of a log: consecutive j go to different lines */
static inline struct pma_rec *pma_booklog_slot_at(struct pma_rec *log,
						  uint32_t j)
{
	uint32_t group = j / PMA_LOG_GROUP, r = j % PMA_LOG_GROUP;
	uint32_t line = group * PMA_NBANKS + r % PMA_NBANKS;

	return &log[line * (PMA_LINE / sizeof(struct pma_rec)) + r / PMA_NBANKS];
}
/* pma_booklog_slot_at(log, j) - pma_booklog_slot_at(log, j - r) for
 * r = j % PMA_LOG_GROUP: the slot of the r-th record of a group */
extern const uint8_t pma_log_group_off[PMA_LOG_GROUP];
struct pma_rec *pma_booklog_slot(struct pma_rec *log, uint32_t cap, uint64_t k);
/* object.c: the root word's check (version 7) */
void pma_root_seal(struct pma_heap *heap);
int pma_root_verify(struct pma_heap *heap, int recovered);
/* in the dry run (pmap_pm: the real page map) */
int pma_root_dry_check(struct pma_heap *heap, const uint64_t *pmap_pm);
/* check.c: the version 7 checks (layout.h) */
uint64_t pma_check_gen(uint64_t gen); /* the head_gen word of gen */
int pma_check_gen_decode(uint64_t word, uint64_t *ret_gen); /* 0 or -1 */
/* version 8: an arena descriptor's lgen word of gen */
uint64_t pma_check_lgen(uint64_t gen, unsigned arena);
int pma_check_lgen_decode(uint64_t word, unsigned arena, uint64_t *ret_gen);
/* version 12: an xcons word (entries applied, of source slot's ring) */
uint64_t pma_check_cons(uint64_t n, unsigned slot);
int pma_check_cons_decode(uint64_t word, unsigned slot, uint64_t *ret_n);
uint64_t pma_check_head(uint64_t head, unsigned arena, uint64_t gen);
uint64_t pma_check_root(uint64_t root_off);
/* the PM form of page map entry e of page: e with its check (0 stays 0) */
uint64_t pma_check_pmap(uint64_t e, uint64_t page);
/* the check word of a bitmap bank (line) of the slab at region offset */
uint64_t pma_check_bank(const uint64_t *line, uint64_t slab_off, unsigned bank);
/* version 9: the check word of the old bitmap words (3 of them) of a
 * bank */
uint64_t pma_check_old(const uint64_t *words, uint64_t slab_off, unsigned bank);
/* the first bank whose old bitmap check does not match, -1 if none */
int pma_check_olds(const void *slab_meta, uint64_t slab_off);
/* does check (of bank of the slab at slab_off: its old bitmap's if old)
 * match the words pre, or pre with bits of unsure set (each of them
 * either way, every combination up to PMA_CHECK_UNSURE_TRY of them, else
 * all set)? A replay's bits whose state before its window is not known
 * (banks.c, fsck) */
#define PMA_CHECK_UNSURE_TRY 6
/* does check (as above) match the words start after one of the first
 * nops of ops (bit | PMA_CHECK_OP_SET to set it, else clear), applied in
 * order? 0 if nops is over PMA_CHECK_OPS (not kept). A replay's ops of a
 * bank from its state before the window: a checkpoint sealed the bank
 * after one of them, and a crashed recovery may have changed the words
 * of later ones on media since (banks.c, fsck) */
#define PMA_CHECK_OPS 24
#define PMA_CHECK_OP_SET 0x8000u
int pma_check_prefix(uint64_t check, const uint64_t *start, const uint16_t *ops,
		     unsigned nops, uint64_t slab_off, unsigned bank, int old);
int pma_check_unsure(uint64_t check, const uint64_t *pre,
		     const uint64_t *unsure, uint64_t slab_off, unsigned bank,
		     int old);
/* store the check of bank of the slab header + bitmap at slab_meta (PM or
 * a read-only copy), or of the bank that holds word */
void pma_check_bank_seal(void *slab_meta, uint64_t slab_off, unsigned bank);
void pma_check_bank_seal_word(void *slab_meta, uint64_t slab_off,
			      const uint64_t *word);
/* the first bank whose check does not match, -1 if none */
int pma_check_banks(const void *slab_meta, uint64_t slab_off);
/* banks.c: during a replay (version 7), the banks it changes are
 * checked against the state before or after its window, then resealed:
 * begin, then fresh (SLAB_NEW) and touch (a block op's bit), then end
 * (ok 0: only release). -EIO naming the slab, -ENOMEM */
struct pma_banks;
int pma_banks_begin(struct pma_heap *heap);
int pma_banks_fresh(struct pma_heap *heap, void *slab_meta, uint64_t slab_off);
/* pre: the bit's value before the window if this is its first op (the
 * caller knows: see banks.c), or PMA_BANKS_UNSURE (either) */
#define PMA_BANKS_UNSURE 2
int pma_banks_touch(struct pma_heap *heap, void *slab_meta, uint64_t slab_off,
		    const uint64_t *word, uint64_t mask, int pre);
int pma_banks_end(struct pma_heap *heap, int ok);
/* the lap-dependent fields of records of lap lap (see layout.h): the
 * epoch, in place in word0, and the tag */
static inline uint64_t pma_booklog_lap_epoch(uint64_t lap)
{
	return ((lap + 1) & PMA_REC_EPOCH_MASK) << PMA_REC_EPOCH_SHIFT;
}
static inline uint64_t pma_booklog_lap_tag(uint64_t lap)
{
	return lap % 7 + 1;
}
/* the checksum field of record k with words w0 (its checksum bits are
 * ignored) and w1 */
static inline uint64_t pma_booklog_csum(uint64_t w0, uint64_t w1, uint64_t k)
{
	return util_crc32c_3w(w0 & ~(PMA_REC_CSUM_MASK << PMA_REC_CSUM_SHIFT),
			      w1, k) &
	       PMA_REC_CSUM_MASK;
}
/* encode record k of the lap whose epoch and tag are given (the appender
 * keeps them: no divide per record) */
static inline void pma_booklog_encode_bits(uint64_t k, uint64_t epoch,
					   uint64_t tag, unsigned type,
					   uint64_t payload, uint64_t value,
					   struct pma_rec *ret_rec)
{
	uint64_t w0 = (uint64_t)type | epoch | payload << PMA_REC_PAYLOAD_SHIFT;
	uint64_t w1 = value | tag;

	pma_assert(payload <= PMA_REC_PAYLOAD_MAX);
	pma_assert((value & PMA_REC_TAG_MASK) == 0);
	w0 |= pma_booklog_csum(w0, w1, k) << PMA_REC_CSUM_SHIFT;
	ret_rec->word0 = w0;
	ret_rec->word1 = w1;
}
void pma_booklog_encode(uint64_t k, uint32_t cap, unsigned type,
			uint64_t payload, uint64_t value,
			struct pma_rec *ret_rec);
/* decode record k of log; -EBADMSG if invalid for index k */
int pma_booklog_decode(const struct pma_rec *log, uint32_t cap, uint64_t k,
		       unsigned *ret_type, uint64_t *ret_payload,
		       uint64_t *ret_value);
/* decode the op starting at k of the log of a heap whose records hold
 * offsets >> osh (pma_rec_osh); -EBADMSG at the end of the log */
int pma_booklog_read_op(const struct pma_rec *log, uint32_t cap, uint64_t k,
			unsigned osh, struct pma_op *ret_op);
/* index of the first invalid op at or after head */
/* 1 if slot k holds what neither a completed nor a torn write of record
 * k can leave (each of its words is 0, of the previous lap or of record
 * k's lap, and both of k's lap only if the record is valid): damage */
int pma_booklog_slot_damaged(const struct pma_rec *log, uint32_t cap,
			     uint64_t k);
uint64_t pma_booklog_find_tail(const struct pma_rec *log, uint32_t cap,
			       uint64_t head);
/* the first k in [from, end) whose record is valid, else end (end - from
 * <= cap); reads the slots in memory order, each once */
uint64_t pma_booklog_first_valid(const struct pma_rec *log, uint32_t cap,
				 uint64_t from, uint64_t end);
/* 1 if head h can be a head of the log: 0, or after record h - 1 (its
 * slot holds it, or record h - 1 + cap, the last of a full log, whole or
 * torn); a checkpoint stages only such heads */
int pma_booklog_head_ok(const struct pma_rec *log, uint32_t cap, uint64_t h);
/* 1 if record k is sealed for its lap (epoch, tag and checksum valid)
 * but its type is one no build writes (none, or past the last): a record
 * written whole that no reader of this build can apply; its type in
 * *ret_type. Such a slot is also pma_booklog_slot_damaged */
int pma_booklog_type_unknown(const struct pma_rec *log, uint32_t cap,
			     uint64_t k, unsigned *ret_type);
const char *pma_booklog_type_name(unsigned type);

/* ------------------------------------------------------------ arena.c */

/* DRAM copy of a logged op that is not a block op (SLAB_NEW, extent ops),
 * kept in log order in arena->ops: checkpoints apply these instead of
 * decoding the log again. Block ops (ALLOC, FREE, RFREE) have no copy:
 * their slabs are on the arenas' dirty lists */
struct pma_dram_op {
	uint64_t k; /* index of the op's first record */
	uint64_t off;
	uint64_t npages; /* extent ops */
	uint8_t type;
	uint8_t cls;
	uint16_t owner;
	uint8_t old_cls; /* SLAB_MORPH */
};

/* extents an arena freed after allocating them itself (EXT_LFREE): it
 * may reuse them at once; a checkpoint gives the rest to the heap. At most
 * PMA_LOCAL_RUNS runs (then frees take the EXT_FREE path): the list is
 * scanned per op */
#define PMA_LOCAL_RUNS 64
struct pma_runs { /* sorted by page, no two adjacent */
	struct pma_run {
		uint64_t page, npages;
	} * runs;
	size_t count;
	size_t alloc;
	uint64_t pages; /* sum of npages */
};

/* what a checkpoint releases after the heads are durable */
struct pma_pending {
	uint64_t *offs; /* remote-freed blocks, or extents (page offsets) */
	size_t count;
	size_t alloc;
};

/* a record whose effect waits for its log to be retired (a remote free,
 * a freed extent, a released slab's chunk): its byte or page offset, its
 * record index k, and (an extent allocated through another arena's log
 * since open) that arena and its tail when it was freed: the log may
 * retire the record only once that arena's head passed dep_k (its
 * allocation is retired); dep_arena PMA_NO_DEP if none */
#define PMA_NO_DEP UINT32_MAX
struct pma_ret {
	uint64_t off;
	uint64_t k;
	uint64_t dep_k;
	uint32_t dep_arena;
};

struct pma_retq {
	struct pma_ret *e; /* in log order */
	size_t count;
	size_t alloc;
	/* local checkpoints: the first ok entries no longer wait for
	 * another arena (once clear, they stay clear) */
	size_t ok;
};

/* append to q; 0 or -ENOMEM */
int pma_retq_push(struct pma_retq *q, uint64_t off, uint64_t k,
		  uint32_t dep_arena, uint64_t dep_k);
/* drop q's entries with k < cut (retired), keeping the order */
void pma_retq_trim(struct pma_retq *q, uint64_t cut);

struct pma_arena { /* line-aligned: one thread's, mostly */
	/* locking (owner.c): the owner thread's biased fast path, or the
	 * mutex plus revoking the owner's fast path */
	_Alignas(PMA_LINE) pthread_mutex_t lock;
	_Atomic uintptr_t owner; /* owning thread's token, 0 if none */
	atomic_int busy; /* the owner is in an op on its fast path */
	atomic_int revoked; /* a mutex holder keeps the owner out */
	int membarrier; /* heap->membarrier: the revoker's membarrier
			   orders the owner's busy store, else it fences */
	int owner_fast; /* owner only: its current op took the fast path */
	int revoking; /* mutex holder only: it set revoked */
	struct pma_heap *heap;
	unsigned id;
	struct pma_arena_desc *desc; /* PM */
	struct pma_rec *log; /* PM, heap->geom.log_cap slots */
	uint64_t head; /* == desc->head[heap->head_gen & 1] */
	uint64_t tail; /* next record index */
	uint64_t est_mark; /* tail when last added to heap->log_records */
	/* version 8: no local checkpoint before this tail (alloc.c,
	 * local_next) */
	uint64_t ckpt_retry;
	unsigned xtick; /* general-path ops: every 64th drains the rings */
	/* the owner's fast paths run while tail < fast_end: room in the log,
	 * the append cursor in sync, no checkpoint due before; 0: the
	 * general path must run (it recomputes this, arena_fast_refresh) */
	uint64_t fast_end;
	/* log_put's cursor: slot, lap, and the lap's epoch and tag of
	 * record cur_k (== tail when valid; recomputed when something else
	 * moved tail) */
	uint64_t cur_k, cur_lap, cur_epoch, cur_tag;
	/* record cur_k's slot is cur_group + pma_log_group_off[cur_r]
	 * (pma_booklog_slot_at): its group's first slot, and its place in
	 * the group */
	struct pma_rec *cur_group;
	uint32_t cur_r;
	/* the line holding the last ops' dest words, not flushed yet (0 if
	 * none), see pma_log_commit; flushed by a checkpoint too */
	uintptr_t dest_line;
	struct pm_map *dest_map; /* the part dest_line is in */
	uint64_t *dest_last; /* the last op's dest word (in dest_line) */
	unsigned dest_runs; /* runs of ops on one word since the flush */
	/* version 10: carried SYNC_FREEs (carry below): the first, and how
	 * many; read by every fast-path op, so in this line */
	unsigned carry_first, carry_n, carry_dn, carry_poll;
	struct pma_slab *partial[PMA_NCLASSES];
	/* copies of the struct_ops ops in [head, tail) that are not block
	 * ops, in log order (room for log_cap: each op is >= 1 record) */
	struct pma_dram_op *ops;
	struct pma_retq rfreed; /* blocks owned by other arenas */
	struct pma_retq ext_freed; /* extents (page offsets) */
	struct pma_runs local; /* EXT_LFREE'd extents, reusable here */
	/* pages in ext_freed and local, and the part of them published in
	 * heap->pending_pages (arena lock held; reset by a checkpoint) */
	uint64_t pend_pages, pend_pub;
	/* since the last checkpoint: the slabs this arena's block ops
	 * marked dirty (their live bitmaps go to PM at the checkpoint), and
	 * the number of ops that are not block ops (in ops) */
	struct pma_slab *dirty_slabs;
	uint64_t struct_ops;
	/* slabs that became empty (pma_slab_empty_check) */
	struct pma_slab *cands;
	/* chunks (first pages) of the slabs a running or failed checkpoint
	 * released: it gives them to the heap once the heads moved */
	struct pma_retq slab_freed;
	/* version 8: blocks of this arena whose remote frees it applied
	 * (SYNC_FREE at k): the record stays in the window until the block
	 * came back (its RFREE is retired), so that a replay never meets an
	 * RFREE of a block whose free the owner's media already show */
	struct pma_retq synced;
	/* version 10: blocks of other parts this arena freed (XFREE at k;
	 * off is the block's pool offset): retired only once the block's
	 * owner applied the free (its rpend bit is clear) */
	struct pma_retq xfreed;
	/* DRAM copies of this arena's generation (G = head_gen + lgen,
	 * layout.h) and of its lgen (version 8; 0 before) */
	uint64_t gen, lgen;
	/* released slabs that may still be on this arena's dirty list
	 * (recovery.c, released_to_spare) */
	struct pma_slab *released;
	/* version 9: 1 + the index of the first record of a mixed op
	 * (morph.c) in the window, 0 if none: a local checkpoint cuts
	 * before it (recovery.c) */
	uint64_t mix_first;
	/* version 10: XFREEs of this arena's blocks taken off their slabs'
	 * xdone bits whose SYNC_FREE records ride on this arena's next ops
	 * of one record, one per op, before its record: that op's fence
	 * makes both durable (two records per fence, as an extent op's),
	 * then the block's rpend bit goes (alloc.c, carry_put; in bursts,
	 * carry_settle). Still owed (xowed) and rpend set while here; a
	 * ring: carry_dn durable ones before carry_first (their rpend bits
	 * not cleared yet), carry_n to carry from carry_first */
	struct pma_carry {
		struct pma_slab *slab;
		uint32_t idx;
	} carry[PMA_CARRY_MAX];

	/* written by other arenas (version 8, two-phase frees) */
	/* slabs of this arena with rdone or rret bits (pma_rlist_push;
	 * taken whole by the owner) */
	_Alignas(PMA_LINE) _Atomic(struct pma_slab *) rlist;
	/* version 10: slabs of this arena with xdone bits, or rret bits of
	 * a retired XFREE (pma_xlist_push; taken whole by the owner) */
	_Atomic(struct pma_slab *) xlist;
	/* version 10: XFREEs of this arena's blocks that other parts'
	 * arenas committed (or are committing) and this arena has not
	 * applied yet: the SYNC_FREE records it owes. Its log keeps room
	 * for them (arena_lock_room); a freer takes one before its XFREE
	 * and frees through this part instead when PMA_XOWED_MAX are owed,
	 * so that a checkpoint of the freeing part always finds room for
	 * the owner's SYNC_FREE records (recovery.c) */
	atomic_ulong xowed;
	/* head, for other arenas (a freed extent's dep_k) */
	_Atomic uint64_t head_pub;
};

/* slab has rdone or rret bits for its owner to see: put it on the
 * owner's rlist unless it is there. The bits are set first (seq_cst);
 * the owner clears in_rlist before it reads them, so either this sees
 * in_rlist clear and pushes, or the owner sees the bits. */
static inline void pma_rlist_push(struct pma_arena *owner,
				  struct pma_slab *slab)
{
	struct pma_slab *head;

	if (atomic_load(&slab->in_rlist) || atomic_exchange(&slab->in_rlist, 1))
		return;
	head = atomic_load_explicit(&owner->rlist, memory_order_relaxed);
	do
		slab->rnext = head;
	while (!atomic_compare_exchange_weak_explicit(
		&owner->rlist, &head, slab, memory_order_release,
		memory_order_relaxed));
}

/* the SYNC_FREE records an arena may owe (xowed): a sixteenth of its
 * log, less than the room its fast paths always leave (an eighth) */
static inline uint64_t pma_xowed_max(uint32_t log_cap)
{
	return log_cap / 16;
}

/* pma_rlist_push for the xlist (frees from another part) */
static inline void pma_xlist_push(struct pma_arena *owner,
				  struct pma_slab *slab)
{
	struct pma_slab *head;

	if (atomic_load(&slab->in_xlist) || atomic_exchange(&slab->in_xlist, 1))
		return;
	head = atomic_load_explicit(&owner->xlist, memory_order_relaxed);
	do
		slab->xnext = head;
	while (!atomic_compare_exchange_weak_explicit(
		&owner->xlist, &head, slab, memory_order_release,
		memory_order_relaxed));
}

/* put slab on the partial list of its class of arena, its owner, unless
 * it is there (owner lock held, or every arena lock) */
static inline void pma_partial_push(struct pma_arena *arena,
				    struct pma_slab *slab)
{
	struct pma_slab *head = arena->partial[slab->cls];

	if (slab->in_partial)
		return;
	slab->next = head;
	slab->prev = NULL;
	if (head)
		head->prev = slab;
	arena->partial[slab->cls] = slab;
	slab->in_partial = 1;
}

/* take slab off arena's partial list (it is on it) */
static inline void pma_partial_unlink(struct pma_arena *arena,
				      struct pma_slab *slab)
{
	if (slab->prev)
		slab->prev->next = slab->next;
	else
		arena->partial[slab->cls] = slab->next;
	if (slab->next)
		slab->next->prev = slab->prev;
	slab->next = slab->prev = NULL;
	slab->in_partial = 0;
}

/* morph.c: a block op of the mixed slab (arena, its owner, locked) is
 * about to be logged at the tail */
static inline void pma_morph_note(struct pma_arena *arena,
				  struct pma_slab *slab)
{
	slab->morph_k = arena->tail + 1;
	if (!arena->mix_first)
		arena->mix_first = arena->tail + 1;
}
/* the loaded slab's mixed state from its PM header and old bitmap
 * (after pma_slab_load; 0, -EIO, -ENOMEM) */
int pma_morph_load(struct pma_slab *slab, const void *slab_pm);
/* free what a slab holds for morphing (it goes away) */
void pma_morph_release(struct pma_slab *slab);
/* owner lock: if off starts a live old block of mixed slab, free it
 * (blocks it no longer blocks become available; the slab may become
 * plain) and return 1, else 0 */
int pma_morph_free_old(struct pma_arena *arena, struct pma_slab *slab,
		       uint64_t off);
/* does off start a live old block of slab (owner lock)? */
int pma_morph_old_live(struct pma_slab *slab, uint64_t off);
/* owner lock, arena has no slab of cls: morph one of its other slabs
 * into a slab of cls (on its partial list); 0 or -ENOENT */
int pma_morph_try(struct pma_arena *arena, unsigned cls);
/* compact.c: load every slab of heap (one part) still on its arenas'
 * unloaded stacks and list those with a free block; 0, -ENOMEM, -EIO */
int pma_heap_load_all(struct pma_heap *heap);
/* alloc.c: lock arena with room in its log for one op (checkpoints
 * until there is); 0 (locked) or -errno (not locked) */
int pma_arena_lock_room(struct pma_arena *arena);
/* would a morph of a plain slab of class old whose live bitmap is live
 * (interleaved) into class cls go ahead? 1 (its free blocks of cls in
 * *ret_free), 0 (not worth it: no live block, or fewer than half of the
 * new blocks free), -ENOMEM. Reads nothing else: for plans */
int pma_morph_fits(const uint64_t live[PMA_NBANKS][PMA_SLAB_LINE_WORDS],
		   unsigned old, unsigned cls, uint32_t *ret_free);
/* owner lock held (with log room for one record): morph slab (owned by
 * arena, on its partial list, plain, at most pct percent of its blocks
 * live, no op in the window, idle if the heap asks) into class cls, the
 * step pma_morph_try takes; 0, or -ENOENT (not a candidate, or not
 * worth it: the slab stays as it was). The SLAB_MORPH record is
 * appended, not fenced: the caller fences before its next record */
int pma_morph_slab(struct pma_arena *arena, struct pma_slab *slab, unsigned cls,
		   unsigned pct);

/* take a block from arena's first partial slab of cls: its byte offset
 * in *ret_off, the slab in *ret_slab; a slab left full goes off the
 * list. A listed slab has a free block (pma_partial_push's callers see
 * to it); one that has none is unlinked and the next one tried, so that
 * no block is handed out that avail does not hold. -ENOMEM if the list
 * runs out */
static inline int pma_partial_take(struct pma_arena *arena, unsigned cls,
				   struct pma_slab **ret_slab,
				   uint64_t *ret_off)
{
	struct pma_slab *slab;
	uint32_t idx;

	while ((slab = arena->partial[cls])) {
		if (__builtin_expect(pma_slab_take(slab, &idx) == 0, 1))
			break;
		pma_assert(0);
		pma_partial_unlink(arena, slab);
	}
	if (!slab)
		return -ENOMEM;
	if (!slab->navail)
		pma_partial_unlink(arena, slab);
	slab->alloc_k = arena->tail + 1;
	if (__builtin_expect(slab->old_cls != PMA_CLS_NONE, 0))
		pma_morph_note(arena, slab);
	*ret_slab = slab;
	*ret_off = pma_slab_block_off(slab, idx);
	return 0;
}

/* after a block of slab went back to avail (the lock of arena, the
 * slab's owner, held, or every arena lock): an empty slab becomes a
 * candidate for release by the next checkpoint (recovery.c) */
static inline void pma_slab_empty_check(struct pma_arena *arena,
					struct pma_slab *slab)
{
	if (__builtin_expect(slab->navail != slab->nblocks, 1) ||
	    slab->old_cls != PMA_CLS_NONE || slab->empty_cand)
		return;
	slab->empty_cand = 1;
	slab->cand_next = arena->cands;
	arena->cands = slab;
}

/* is a record type a block op (ALLOC, FREE, RFREE)? */
static inline int pma_rec_is_block(unsigned type)
{
	return type == PMA_REC_ALLOC || type == PMA_REC_FREE ||
	       type == PMA_REC_RFREE || type == PMA_REC_SYNC_FREE ||
	       type == PMA_REC_XFREE;
}

/* is a record type an extent op (two records: the op, then EXT_LEN)? */
static inline int pma_rec_is_ext(unsigned type)
{
	return type == PMA_REC_EXT_ALLOC || type == PMA_REC_EXT_FREE ||
	       type == PMA_REC_EXT_LFREE;
}

/* the one-record type of an extent op type (EXT_ALLOC -> EXT_ALLOC1 ...) */
static inline unsigned pma_rec_ext1(unsigned type)
{
	return type == PMA_REC_EXT_ALLOC ? PMA_REC_EXT_ALLOC1 :
	       type == PMA_REC_EXT_FREE	 ? PMA_REC_EXT_FREE1 :
					   PMA_REC_EXT_LFREE1;
}

/* a block op of arena changed slab's live bitmap (arena lock held) */
static inline void pma_slab_mark_dirty(struct pma_arena *arena,
				       struct pma_slab *slab)
{
	if (atomic_load_explicit(&slab->dirty, memory_order_relaxed) ||
	    atomic_exchange_explicit(&slab->dirty, 1, memory_order_relaxed))
		return;
	slab->dirty_next = arena->dirty_slabs;
	arena->dirty_slabs = slab;
}

/* room for one more element in a growing array v of *alloc elements of
 * size bytes (doubling, first at least): the array, moved or not, with
 * *alloc updated; NULL (v and *alloc unchanged) if out of memory */
void *pma_grow(void *v, size_t *alloc, size_t size, size_t first);
int pma_arena_init(struct pma_heap *heap, unsigned id, struct pma_arena *arena);
void pma_arena_release(struct pma_arena *arena);
/* region slots of a pool (sib[], pma_tls_binding): the region table's
 * size; regions per part a pool may be carved into (--regions) */
/* tests only: frees of another region's blocks go through the free
 * rings even when this open holds it (one process sweeps the rings) */
#define PMA_HEAP_TEST_XRING (1u << 29)
#define PMA_MAX_SLOTS POOL_MAX_REGIONS
_Static_assert(PMA_MAX_SLOTS == PMA_XRING_SLOTS, "a free ring per slot");
#define PMA_REGIONS_MAX 16u
/* heap.c: the heap regions of part of pool, by offset, into regs (room
 * for PMA_REGIONS_MAX + 1); their count, over PMA_REGIONS_MAX if the part
 * holds too many (the caller refuses or reports) */
struct pool_region;
unsigned pma_part_regions(const struct pool *pool, unsigned part,
			  const struct pool_region **regs);
/* owner.c: the thread's binding (the heap it used last and its arena
 * there) and identity, read inline by every op */
struct pma_tls_binding {
	uint64_t heap_id;
	struct pma_heap *heap;
	struct pma_arena *arena_p; /* &heap->arenas[arena] */
	unsigned arena;
	int owns; /* this thread owns that arena */
};
/* one binding per region slot: a thread keeps its arena in every heap
 * of a pool it uses (the heaps of its parts' regions) */
extern UTIL_TLS_FAST struct pma_tls_binding pma_tls_binding[PMA_MAX_SLOTS];
extern UTIL_TLS_FAST char pma_tls_token;

static inline uintptr_t pma_self_token(void)
{
	return (uintptr_t)&pma_tls_token;
}

/* first use of heap by the thread: bind (and own an arena if possible) */
struct pma_arena *pma_arena_bind_first(struct pma_heap *heap);
/* bind the calling thread to arena idx of heap (owned if nobody owns it,
 * else shared); for tests and placement */
struct pma_arena *pma_arena_bind(struct pma_heap *heap, unsigned idx);
/* the mutex paths of pma_arena_lock / unlock (owner: the caller owns the
 * arena and saw it revoked) */
void pma_arena_lock_slow(struct pma_arena *arena, int owner);
void pma_arena_unlock_slow(struct pma_arena *arena);

/* the owner's half of the handshake: announce busy, then look at
 * revoked (the revoker's membarrier orders the two, else a full fence
 * here). 1 with the arena held (owner_fast set), else 0 with busy clear */
static inline int pma_owner_enter(struct pma_arena *arena)
{
	atomic_store_explicit(&arena->busy, 1, memory_order_relaxed);
	if (arena->membarrier)
		atomic_signal_fence(memory_order_seq_cst);
	else
		atomic_thread_fence(memory_order_seq_cst);
	if (__builtin_expect(!atomic_load_explicit(&arena->revoked,
						   memory_order_acquire),
			     1)) {
		arena->owner_fast = 1;
		return 1;
	}
	atomic_store_explicit(&arena->busy, 0, memory_order_release);
	return 0;
}

/*
 * Exclusive use of one arena for an op: the owner's fast path (store busy,
 * load revoked; the revoker's membarrier orders them, else a full fence
 * here), else the mutex, keeping the owner out (owner.c).
 */
static inline void pma_arena_lock(struct pma_arena *arena)
{
	int owner = atomic_load_explicit(&arena->owner, memory_order_relaxed) ==
		    pma_self_token();

	if (owner && pma_owner_enter(arena))
		return;
	pma_arena_lock_slow(arena, owner);
}

/* the owner's fast path alone: 1 if the calling thread owns arena and
 * got it that way, else 0 (nothing held) */
static inline int pma_arena_trylock_owner(struct pma_arena *arena)
{
	if (atomic_load_explicit(&arena->owner, memory_order_relaxed) !=
	    pma_self_token())
		return 0;
	return pma_owner_enter(arena);
}

static inline void pma_arena_unlock(struct pma_arena *arena)
{
	/* owner_fast is only read by the owner, which alone writes it */
	if (atomic_load_explicit(&arena->owner, memory_order_relaxed) ==
		    pma_self_token() &&
	    arena->owner_fast) {
		atomic_store_explicit(&arena->busy, 0, memory_order_release);
		return;
	}
	pma_arena_unlock_slow(arena);
}
/* every arena, in index order (checkpoint, stats) */
void pma_arenas_lock(struct pma_heap *heap);
void pma_arenas_unlock(struct pma_heap *heap);
/* open heaps, so an exiting thread can release its arena safely */
void pma_heap_register(struct pma_heap *heap);
void pma_heap_unregister(struct pma_heap *heap);
/* 1 if revokers use membarrier (owners need no fence), for tests */
int pma_owner_membarrier(void);
int pma_pending_push(struct pma_pending *p, uint64_t off);

/* alloc.c (the malloc_to / free_from paths) */
enum pma_alloc_flags {
	PMA_ALLOC_ZERO = 1 << 0,
	/* in this heap's part only (the root object: part 0) */
	PMA_ALLOC_HERE = 1 << 1,
};
int pma_alloc_to(struct pma_heap *heap, size_t size, uint64_t *dest,
		 unsigned flags);
/* append op (SLAB_FREE: a checkpoint's, recovery.c) to arena's log
 * (arena lock held); -ENOSPC if the log has no room for 2 records */
int pma_log_append_struct(struct pma_arena *arena, const struct pma_op *op);
/* flush (no fence) the pending dest line, if any */
void pma_arena_flush_dest(struct pma_arena *arena);

/* ------------------------------------------------------------ extent.c */

/* tree nodes are allocated this many at a time */
#define PMA_EXT_BLOCK_NODES 64
struct pma_ext_node; /* private to extent.c */
struct pma_ext_block;

/* free extents, coalesced: a tree keyed by start; zeroed = empty */
struct pma_ext_index {
	struct pma_ext_node *root;
	struct pma_ext_node *spare; /* free list of unused nodes */
	size_t nspare;
	struct pma_ext_block *blocks; /* all node memory, newest first */
	size_t nfresh; /* never used nodes at the end of the newest block */
	size_t count; /* free runs */
	uint64_t free_pages; /* their total length */
	/* the least free_pages after a take since open (low_set: there was
	 * one): the peak of the pages in use (pma_heap_stats) */
	uint64_t free_low;
	int low_set;
};

void pma_ext_index_release(struct pma_ext_index *idx);
/* take npages pages whose start is a multiple of align, from the free run
 * with the lowest start that can hold them; -ENOMEM if none, or if a node
 * cannot be allocated (the index is then unchanged) */
int pma_ext_take(struct pma_ext_index *idx, uint64_t npages, uint64_t align,
		 uint64_t *ret_start);
/* give back a range that overlaps no free one (coalesces); -ENOMEM if a
 * node cannot be allocated (the index is then unchanged) */
int pma_ext_put(struct pma_ext_index *idx, uint64_t start, uint64_t npages);
/* make sure the next n pma_ext_put calls need no memory (each takes at
 * most one node); 0 or -ENOMEM */
int pma_ext_reserve(struct pma_ext_index *idx, size_t n);

uint64_t pma_ext_largest(const struct pma_ext_index *idx);
uint64_t pma_ext_free_pages(const struct pma_ext_index *idx);
/* the fewest free pages there were since open (after any take) */
uint64_t pma_ext_free_low(const struct pma_ext_index *idx);
/* call fn(start, npages, arg) for every free run, in page order, until it
 * returns non-zero (returned); the index must not change meanwhile */
typedef int (*pma_ext_fn)(uint64_t start, uint64_t npages, void *arg);
int pma_ext_foreach(const struct pma_ext_index *idx, pma_ext_fn fn, void *arg);
/* tests: 0 if the tree is sorted, coalesced, balanced and its counters and
 * subtree maxima are right, else -EINVAL with a message */
int pma_ext_check(const struct pma_ext_index *idx);

/* ------------------------------------------------------------ heap.c */

struct pma_geom {
	uint32_t narenas;
	uint32_t log_cap;
	uint64_t arena_off, log_off, pmap_off, data_off; /* region offsets */
	uint64_t npages;
	uint64_t region_size;
	uint32_t version; /* the layout version the geometry is for */
	uint32_t sum_shift; /* version 5: pages per summary group (log2) */
	uint64_t sum_off; /* version 5: region offset of the summary, or 0 */
	uint64_t sum_words; /* its 8-byte words (0 without a summary) */
	/* version 12: the free rings (entries each, region offset), 0
	 * before */
	uint32_t xring_cap;
	uint64_t xring_off;
};

/*
 * A heap configuration (config.c; public as struct pma_config): the
 * tuning of one create or open, copied into every heap of the pool at
 * open. No process-wide switch: two heaps may be tuned apart.
 */
/* a caller's function the library calls back (pma_config_set_*_hook):
 * 0, or -errno with a reason in why */
struct pma_hook {
	int (*fn)(struct pma_heap *heap, void *arg, char *why, size_t why_len);
	void *arg;
};

struct pma_config {
	unsigned flags; /* enum pma_heap_flags */
	/* the empty slabs a normal checkpoint keeps (recovery.c,
	 * release_one): 0 none, 1 (the default) the one its arena
	 * allocates from next, more all (only the -ENOMEM retry releases
	 * then) */
	unsigned slab_keep;
	int membarrier; /* 1: revoke owners with membarrier if the kernel
			   has it (the default), 0: owners fence */
	/* version 9 morphing (morph.c): a slab is a candidate with at most
	 * this percentage of its blocks live (0: no morphing), and only if
	 * idle (no allocation since its arena's last checkpoint) if
	 * morph_idle */
	unsigned morph_pct;
	int morph_idle;
	/* a heap formatted by this create or open: its layout version and
	 * summary group (tests make older heaps and smaller groups;
	 * pma_config_set_format) */
	uint32_t format_version;
	uint32_t sum_shift;
	/* pma_heap_create_cfg: parts, their nodes, the files' mode */
	unsigned nparts;
	int nodes[POOL_MAX_PARTS];
	unsigned mode;
	/* a heap formatted by this config: PMAlloc regions per part (a
	 * power of two, 1..PMA_REGIONS_MAX; pma_config_set_regions) */
	unsigned regions;
	/* an open attaches the region slots of this mask only (bit s: slot
	 * s), 0 for all; pma_config_set_region_mask, doc/shared-heaps.md */
	uint64_t region_mask;
	/* pma_root of a masked open without slot 0 and no root: gives the
	 * open slot 0 (pma_config_set_root_hook; NULL: add_regions) */
	struct pma_hook root_hook;
	/* an allocation of a masked open that finds no room: gives the
	 * open more regions (pma_config_set_room_hook; NULL: -ENOMEM) */
	struct pma_hook room_hook;
};
/* slab morphing is on by default: a slab at most this percentage used
 * (and idle, morph_idle) serves a class that needs a slab (the issue's
 * "mostly free": doc/morphing.md, "Policy") */
#define PMA_MORPH_PCT_DEFAULT 20
/* the defaults, as pma_config_new gives them */
void pma_config_init(struct pma_config *cfg);
/* a heap formatted with this config gets this layout version and summary
 * group (version 3..PMA_HEAP_VERSION; sum_shift as PMA_SUM_SHIFT_*):
 * tests only, not public */
int pma_config_set_format(struct pma_config *cfg, uint32_t version,
			  uint32_t sum_shift);
/* open path with config (NULL: the defaults) */
int pma_heap_open_parts_cfg(const char *const *paths, unsigned npaths,
			    const struct pma_config *cfg,
			    struct pma_heap **ret_heap);

struct pma_heap {
	struct pool *pool;
	struct pm_map *map; /* the heap's part */
	unsigned part; /* part index */
	unsigned slot; /* region slot: part * top->nreg + region in part */
	/*
	 * A heap over several parts (or several regions per part) is one
	 * struct pma_heap per heap region (its own arenas, logs, page map
	 * and extents): the first of part 0, top, is the user's handle, the
	 * others are its siblings. Every heap points at top; top alone
	 * holds sib[] and the placement tables (numa.c). A block's part and
	 * byte offset are in its offset, so a free goes to the heap that
	 * owns it (pma_heap_route); only dest words cross heaps (recovery
	 * redoes them over all of them, pma_recover_parts).
	 */
	struct pma_heap *top;
	/* top: by region slot (part-major: part p's regions are slots
	 * p * nreg .. p * nreg + nreg - 1, by offset), NULL if none */
	struct pma_heap *sib[PMA_MAX_SLOTS];
	unsigned nsib; /* top: heaps (1 for one part of one region) */
	/* top: the slots this open holds (pma_config_set_region_mask; every
	 * bit set if unmasked; the slots' regions: slot_off below) */
	uint64_t held;
	/* top: the slots whose blocks are freed through free rings (not
	 * held; every other region's with PMA_HEAP_TEST_XRING), 0 if none */
	uint64_t ring_mask;
	int xring; /* version 12 free rings (xring.c), and writable */
	unsigned nreg; /* top: regions per part (every part with a heap) */
	int node; /* NUMA node of this part (pool_part_node) */
	struct pma_place *place; /* top, nsib > 1: numa.c */
	char *part_base; /* address of byte 0 of the part */
	uint64_t part_size; /* bytes mapped from part_base */
	uint64_t region_off; /* byte offset of the region in the part */
	struct pma_heap_hdr *hdr; /* PM */
	struct pma_geom geom;
	uint64_t data_base; /* byte offset of the data area in the part */
	/* a dest word in the data area is always allowed (op_check): its
	 * address, the area's length (0 if read-only) and its pool offset */
	uintptr_t fast_dest_lo;
	uint64_t fast_dest_len;
	uint64_t fast_dest_off;
	uint64_t data_len; /* bytes of the pages (geom.npages) */
	/* version 11: 16-byte size classes (fine); offsets in records >>
	 * osh (layout.h, pma_rec_osh), the unit blocks are aligned to */
	int fine;
	unsigned osh;
	unsigned nclasses; /* pma_nclasses(version) */
	/* pending pages (see pending_pages): an arena publishes its count
	 * once it is pend_slack away from what it published; a checkpoint
	 * is due when the published sum reaches 1 / PMA_PENDING_DIV of the
	 * heap, so the true sum passes that fraction by at most every
	 * arena's slack (an eighth of it) and one op */
	uint64_t pend_slack;
	/* the largest extent op logged in one record (EXT_ALLOC1 ...), 0
	 * for none (a version 3 heap); tests lower it to see both forms */
	uint64_t ext1_pages;
	uint64_t *pmap_pm; /* PM page map (rdonly: a DRAM copy) */
	/* the page map summary (sum.c), NULL without one (version < 5):
	 * sum_pm on media (NULL if read-only), sum its bits in DRAM (48
	 * groups a word, invalid words' groups all set) */
	uint64_t *sum_pm;
	uint64_t *sum;
	uint64_t sum_bad; /* words found invalid at open */
	_Atomic uint64_t *pmap; /* DRAM mirror, current state */
	_Atomic(struct pma_slab *) *slabs; /* per 64 KiB chunk, or NULL */
	uint64_t nchunks;
	pthread_mutex_t ext_lock;
	struct pma_ext_index ext;
	/* held by a checkpoint from before it locks the arenas until after
	 * it unlocked them (pma_checkpoint_due) */
	pthread_mutex_t ckpt_lock;
	/* top of a heap over several parts: taken by every global
	 * checkpoint of any part after its ckpt_lock, before its arena
	 * locks; with it held a checkpoint may take single arena locks of
	 * other parts (to have the owners of blocks its XFREEs name apply
	 * them). No op holds an arena lock while it waits for another */
	pthread_mutex_t xckpt_lock;
	pthread_mutex_t root_lock;
	struct pma_arena *arenas;
	unsigned arenas_ready; /* initialised arenas (for cleanup) */
	uint64_t id; /* unique per open, for thread binding */
	struct pma_heap *next_open; /* owner.c registry of open heaps */
	uint64_t head_gen; /* == hdr->head_gen (arena locks held) */
	struct pma_config cfg; /* as opened (every heap of the pool) */
	int membarrier; /* cfg.membarrier and the kernel has it */
	int rdonly; /* PMA_HEAP_RDONLY: PM is never written */
	int checked; /* version >= PMA_HEAP_VERSION_CHECKED: words checked */
	void **ro_slab_meta; /* rdonly (or recovery's dry run): per chunk,
				DRAM copy of the slab header + bitmap once
				touched, or NULL; NULL when writing PM */
	struct pma_pending ro_meta_made; /* chunks with such a copy */
	struct pma_shadow *shadow; /* recovery's dry run in progress */
	struct pma_banks *banks; /* a replay's changed banks (banks.c) */
	/* lazy.c: per arena and class (index owner * PMA_NCLASSES + cls),
	 * the chunks of the slabs found at open that the owner has not
	 * taken yet (owner lock); NULL if none */
	struct pma_pending *unloaded;
	atomic_ulong nunloaded; /* slabs whose heap->slabs entry is NULL */
	/* released slabs (recovery.c): the DRAM slabs a checkpoint released
	 * wait on their owner arena's released list until its dirty list
	 * that may name them is reset, then go to spare: reused by new slabs
	 * (ext_lock). Never freed while the heap is open, so that a
	 * lock-free reader holding a stale pointer (pma_usable_size) reads
	 * memory still allocated */
	struct pma_slab *spare_slabs;
	/* version 8: an arena checkpoints alone (pma_checkpoint_local);
	 * before, every checkpoint is global */
	int local;
	/* version 9 (this part and, per free, the block's): a free of
	 * another part's block is logged XFREE in this part (alloc.c) */
	int xfree;
	/* version 8: a log checkpoints itself when it holds this many
	 * records (half the log, or its share of ckpt_records) */
	uint64_t ckpt_share;
	/* the heap's logs together checkpoint at this many records: its
	 * share of PMA_CKPT_RECORDS (a bound on the recovery of all the
	 * parts of the pool together) */
	uint64_t ckpt_records;
	/* the page map summary's marking (pma_sum_mark_call): local
	 * checkpoints of several arenas run at once */
	pthread_mutex_t sum_lock;
	/* which empty slabs a normal checkpoint keeps (the -ENOMEM retry
	 * keeps none): the config's slab_keep at open */
	unsigned slab_keep;
	atomic_ulong slabs_released; /* since open */
	/* version 9: cfg.morph_pct if the heap can morph (writable), else
	 * 0; slabs morphed since open */
	unsigned morph_pct;
	atomic_ulong slabs_morphed;
	/* version 9: a slab of the heap may be mixed (morph_pct, or a mixed
	 * slab was loaded: set before the slab is published, so a thread
	 * that found the slab sees it); pma_slab_geom_enter */
	atomic_int may_mix;

	/* top: every slot's region (part byte offset and size, 0 if the
	 * pool has no such slot) and header (NULL if none; slot 0's holds
	 * the root word). Read by masked opens and the free rings only */
	uint64_t slot_off[PMA_MAX_SLOTS];
	uint64_t slot_size[PMA_MAX_SLOTS];
	struct pma_heap_hdr *slot_hdr[PMA_MAX_SLOTS];
	/* version 12 free rings of this region: as a freer (xring_lock;
	 * entries written per destination slot, xprod) and as an owner
	 * (xdrain_lock; entries applied per source slot, xcons as
	 * persisted) */
	pthread_mutex_t xring_lock;
	pthread_mutex_t xdrain_lock;
	/* top: one pma_heap_add_regions at a time */
	pthread_mutex_t add_lock;
	/* top: one room hook call at a time (alloc.c, room_more) */
	pthread_mutex_t room_lock;
	uint64_t xprod[PMA_MAX_SLOTS];
	uint64_t xcons[PMA_MAX_SLOTS];

	/* counters every thread writes, in their own line: the fields above
	 * are read at every op (the struct is allocated line-aligned) */
	_Alignas(PMA_LINE) atomic_uint next_arena;
	atomic_ulong checkpoints;
	atomic_ulong local_checkpoints; /* version 8: one arena's */
	atomic_ulong rfrees_synced; /* version 8: SYNC_FREE records */
	atomic_ulong syncs_carried; /* version 10: of them, carried by ops */
	atomic_ulong local_partial; /* local checkpoints cut in the window */
	/* top: allocations served by another part than the thread's
	 * local one (it was full), and frees of another part's blocks */
	atomic_ulong fallbacks;
	atomic_ulong remote_part_frees;
	/* version 10: of them, logged XFREE in the freeing part */
	atomic_ulong xfrees;
	/* version 12 (top): frees through a free ring; ring entries this
	 * open applied to its regions, and of them ignored (no live block:
	 * a double free or a bad offset, logged) */
	atomic_ulong xring_frees;
	atomic_ulong xring_applied;
	atomic_ulong xring_ignored;
	/* pages of freed extents other arenas cannot take before a
	 * checkpoint (arenas' ext_freed and local runs), as the arenas
	 * published them (pma_arena.pend_pub, within pend_slack of each
	 * arena's pend_pages) */
	atomic_ulong pending_pages;
	/* records in all logs since the last checkpoint, an estimate that
	 * lags each arena by less than PMA_CKPT_STEP */
	atomic_ulong log_records;
};

/* ------------------------------------------------------------ numa.c */

/* placement tables of a heap over several parts (top->place) */
struct pma_place {
	unsigned ncpus;
	uint8_t *cpu_part; /* by CPU: the part of its node, or the nearest */
	int *cpu_node; /* by CPU: its node (pm_thread_set_node) */
	int interleave; /* PMA_HEAP_INTERLEAVE: parts in turn by thread */
	atomic_uint next_thread; /* interleave: the next thread's turn */
	uint8_t parts[POOL_MAX_PARTS]; /* the parts with a heap */
	/* by part: the parts with a heap, that part first, then by
	 * distance between the parts' nodes (then by index) */
	uint8_t order[POOL_MAX_PARTS][POOL_MAX_PARTS];
	unsigned norder;
	/* the tables this one replaced (pma_heap_add_regions): threads may
	 * still read them; freed at close */
	struct pma_place *retired;
};
/* build top->place (nothing for a heap of one part; a built one is
 * replaced, and kept until close); 0 or -ENOMEM */
int pma_place_init(struct pma_heap *top, unsigned flags);
void pma_place_free(struct pma_heap *top);
/* the heap of the part of the calling thread's node (top if one heap):
 * among the part's regions, the thread's own (threads in turn); the CPU
 * is looked up again every PMA_PLACE_RECHECK calls */
struct pma_heap *pma_place_local(struct pma_heap *top);
/* the heaps to try for an allocation of a thread whose local heap is
 * local, into order: local, its part's other regions, then the other
 * parts' (nearest first, pma_place_order); their count */
unsigned pma_place_heaps(struct pma_heap *top, struct pma_heap *local,
			 struct pma_heap **order);
/* the parts to try for an allocation from part (its own first) */
const uint8_t *pma_place_order(struct pma_heap *top, unsigned part,
			       unsigned *ret_n);

/* owner.c: the calling thread's arena (bound, and owned if possible) */
static inline struct pma_arena *pma_arena_get(struct pma_heap *heap)
{
	struct pma_tls_binding *b = &pma_tls_binding[heap->slot];

	if (__builtin_expect(b->heap_id == heap->id, 1))
		return b->arena_p;
	return pma_arena_bind_first(heap);
}

/* the DRAM page map mirror's entry of an extent arena allocated: the
 * owner field names the arena, PMA_PMAP_EXT_OWNED in the class field says
 * so (PM entries of extents have both 0; an extent found at open has no
 * known allocator) */
#define PMA_PMAP_EXT_OWNED 1ULL
static inline uint64_t pma_pmap_make_ext_owned(uint64_t npages, unsigned arena)
{
	return pma_pmap_make(PMA_PMAP_EXTENT, npages) |
	       PMA_PMAP_EXT_OWNED << PMA_PMAP_CLS_SHIFT |
	       ((uint64_t)arena & PMA_PMAP_FIELD_MASK) << PMA_PMAP_OWNER_SHIFT;
}
static inline int pma_pmap_ext_owned_by(uint64_t e, unsigned arena)
{
	return pma_pmap_cls(e) == PMA_PMAP_EXT_OWNED &&
	       pma_pmap_owner(e) == arena;
}

/* arena.c: an arena's locally freed extents (arena lock held); put merges
 * with neighbours, -ENOSPC for a new run past PMA_LOCAL_RUNS, -ENOMEM */
int pma_runs_put(struct pma_runs *r, uint64_t page, uint64_t npages);
/* best fit; the rest of the run stays; -ENOMEM if none is big enough */
int pma_runs_take(struct pma_runs *r, uint64_t npages, uint64_t *ret_page);

/* zeroed anonymous memory for the big DRAM arrays (page map mirror, slab
 * table, arena op copies): pages are faulted in where written only */
void *pma_zmap(size_t size);
void pma_zunmap(void *p, size_t size);

/*
 * The heap of the region holding pool offset off, or NULL: its part, then
 * the region within the part (one of nreg, by offset). With one region
 * per part, the part's heap whatever the byte offset (callers check it).
 */
/* the slot of the region that holds pool offset off, or -1 (any slot of
 * the pool, held or not) */
static inline int pma_heap_slot_of(const struct pma_heap *heap, uint64_t off)
{
	const struct pma_heap *top = heap->top;
	unsigned part = pool_off_part(off), k = top->nreg, i, s;
	uint64_t b = pool_off_byte(off);

	for (i = 0; i < k; i++) {
		s = part * k + i;
		if (part >= POOL_MAX_PARTS || s >= PMA_MAX_SLOTS)
			return -1;
		if (top->slot_size[s] &&
		    b - top->slot_off[s] < top->slot_size[s])
			return (int)s;
	}
	return -1;
}

/* -EXDEV naming the region if off is in a slot the open does not hold,
 * else 0 */
int pma_heap_foreign_check(const struct pma_heap *heap, uint64_t off);

/*
 * xring.c, version 12 free rings (doc/shared-heaps.md, step 3b).
 * pma_xring_free: free the block at off of slot d (not held) from held
 * region l: an entry in l's ring for d, fence, *dest = 0, fence,
 * published; 1 if the path does not apply (a region older than version
 * 12), else 0 or -errno (-EAGAIN: the ring stayed full, its holder
 * idle; a full ring of a region nobody holds is applied here first).
 * pma_xring_drain: apply the entries of every other slot's ring for
 * held region o (under every arena lock of o); the count applied or
 * -errno. pma_xring_open: after the open of every held region (its
 * recovery done): each one's rings recovered (dest words redone,
 * producers published) and consumer words read; then every ring for
 * them drained.
 */
int pma_xring_free(struct pma_heap *l, unsigned d, uint64_t off, uint64_t *dest,
		   uint64_t dest_off);
int pma_xring_drain(struct pma_heap *o);
int pma_xring_open(struct pma_heap *top);
/* pma_xring_open's recovery for one region added to an open
 * (pma_heap_add_regions), before it is held */
int pma_xring_add(struct pma_heap *sib);
/* the ring for slot d in the region whose header is hdr (a region of
 * size bytes), or NULL if the header names no valid rings */
struct pma_xent *pma_xring_of(const struct pma_heap_hdr *hdr, uint64_t size,
			      unsigned d);
/* entry j of ring, if valid (both lap tags match): 1, the block's and the
 * dest word's pool offsets into *block and *dest_off; else 0 */
int pma_xent_read(const struct pma_xent *ring, uint64_t j, uint64_t *block,
		  uint64_t *dest_off);
/* where reading ring starts for the consumer word cons on media (past
 * the next lap's entries that a lost store of the word left below it) */
uint64_t pma_xring_start(const struct pma_xent *ring, uint64_t cons);
/* is the block at pool offset off of o freed by a ring entry o has not
 * applied? (recovery's dest redo) */
int pma_xring_pending(const struct pma_heap *o, uint64_t off);
/* alloc.c: o's owner frees block b (byte offset in o's part) for a ring
 * entry, every arena lock of o held: 0; -EINVAL (no live block there:
 * nothing changed); -ENOSPC (no log room). *unfenced counts the records
 * the caller's entries appended since its last fence: this fences first
 * if the records would make more than two (recovery allows two unfenced
 * records at a log's end), and after its records if they make two; the
 * caller fences what is left before its consumer word */
int pma_xring_apply_locked(struct pma_heap *o, uint64_t b, unsigned *unfenced);

static inline struct pma_heap *pma_heap_route(const struct pma_heap *heap,
					      uint64_t off)
{
	const struct pma_heap *top = heap->top;
	unsigned part = pool_off_part(off), k = top->nreg, i;
	uint64_t b = pool_off_byte(off);
	struct pma_heap *h;

	if (part >= POOL_MAX_PARTS || part * k >= PMA_MAX_SLOTS)
		return NULL;
	if (k == 1)
		return top->sib[part];
	for (i = 0; i < k && part * k + i < PMA_MAX_SLOTS; i++) {
		h = top->sib[part * k + i];
		if (h && b - h->region_off < h->geom.region_size)
			return h;
	}
	return NULL;
}
/* the first heap of part (NULL if it has none) */
/*
 * top->sib[s] if this open holds slot s, else NULL. A region being added
 * (pma_heap_add_regions) is in sib[] before its bit is in held, so that
 * its recovery routes offsets to it; every reader but routing goes
 * through here and sees it only once it is set up, recovered and held
 * (held is stored with release after it).
 */
static inline struct pma_heap *pma_sib(const struct pma_heap *top, unsigned s)
{
	return __atomic_load_n(&top->held, __ATOMIC_ACQUIRE) >> s & 1 ?
		       top->sib[s] :
		       NULL;
}

static inline struct pma_heap *pma_part_heap(const struct pma_heap *top,
					     unsigned part)
{
	unsigned k = top->nreg, i;
	struct pma_heap *h;

	/* the first region of the part this open holds */
	for (i = 0;
	     part < POOL_MAX_PARTS && i < k && part * k + i < PMA_MAX_SLOTS;
	     i++)
		if ((h = pma_sib(top, part * k + i)))
			return h;
	return NULL;
}
/* byte offset <-> pool offset of the heap's part */
static inline uint64_t pma_pool_off(const struct pma_heap *heap, uint64_t b)
{
	return pool_off_make(heap->part, b);
}
static inline void *pma_addr(const struct pma_heap *heap, uint64_t byte_off)
{
	return heap->part_base + byte_off;
}
static inline uint64_t pma_page_of(const struct pma_heap *heap,
				   uint64_t byte_off)
{
	return (byte_off - heap->data_base) >> PMA_PAGE_SHIFT;
}
static inline uint64_t pma_page_off(const struct pma_heap *heap, uint64_t page)
{
	return heap->data_base + (page << PMA_PAGE_SHIFT);
}
/* pool offset of addr (0 if outside the pool): the heap's part inline */
static inline uint64_t pma_dest_off(struct pma_heap *heap, const void *addr)
{
	uintptr_t a = (uintptr_t)addr, base = (uintptr_t)heap->part_base;

	if (a >= base && a - base < heap->part_size)
		return pool_off_make(heap->part, a - base);
	return pool_offset(heap->pool, addr);
}
/* object.c: the slab of chunk, loaded now (NULL if none or on error) */
struct pma_slab *pma_heap_slab_load(struct pma_heap *heap, uint64_t chunk);
/* pma_heap_slab_at(heap, data_base + rel) for rel < data_len */
static inline struct pma_slab *pma_heap_slab_at_rel(struct pma_heap *heap,
						    uint64_t rel)
{
	uint64_t chunk = (rel >> PMA_PAGE_SHIFT) / PMA_CHUNK_PAGES;
	struct pma_slab *slab;

	pma_assert(rel < heap->data_len && chunk < heap->nchunks);
	slab = atomic_load_explicit(&heap->slabs[chunk], memory_order_acquire);
	if (slab)
		return slab;
	/* not a slab chunk (an extent's, say): pma_lazy_get's first test */
	if (pma_pmap_kind(atomic_load_explicit(
		    &heap->pmap[chunk * PMA_CHUNK_PAGES],
		    memory_order_acquire)) != PMA_PMAP_SLAB)
		return NULL;
	return pma_heap_slab_load(heap, chunk);
}
/* is slab still the one of the chunk at rel (a checkpoint, holding
 * every arena lock, may have released it since it was looked up)? */
static inline int pma_heap_slab_is(struct pma_heap *heap, uint64_t rel,
				   const struct pma_slab *slab)
{
	uint64_t chunk = (rel >> PMA_PAGE_SHIFT) / PMA_CHUNK_PAGES;

	/* acquire: a slab reused for the same chunk (arena_slab_new) is
	 * seen initialised */
	return atomic_load_explicit(&heap->slabs[chunk],
				    memory_order_acquire) == slab;
}
/* the DRAM slab covering byte offset off, or NULL; loads a slab not
 * loaded since open (lazy.c) */
static inline struct pma_slab *pma_heap_slab_at(struct pma_heap *heap,
						uint64_t off)
{
	if (off < heap->data_base || off - heap->data_base >= heap->data_len)
		return NULL;
	return pma_heap_slab_at_rel(heap, off - heap->data_base);
}
/* 0 if a dest at pool offset off is allowed (not in pool headers or heap
 * metadata other than the root word), else -EINVAL */
static inline int pma_heap_dest_check(struct pma_heap *heap, uint64_t off)
{
	uint64_t b = pool_off_byte(off);

	if (b < POOL_DATA_OFF || off % sizeof(uint64_t))
		return -EINVAL;
	if (pool_off_part(off) != heap->part || heap->top->nreg > 1) {
		/* another heap's metadata, if the offset is in a heap */
		heap = pma_heap_route(heap, off);
		if (!heap)
			return 0;
	}
	if (b >= heap->region_off && b < heap->data_base &&
	    b != heap->region_off + PMA_ROOT_WORD_OFF)
		return -EINVAL;
	return 0;
}
/* pma_heap_open, internal (fsck --recovery): open the pool
 * POOL_OPEN_PRIVATE, a copy-on-write view recovery writes into and that
 * never reaches the files */
#define PMA_HEAP_PRIVATE (1u << 29)
/* address of the dest word at pool offset off (checked), or NULL */
uint64_t *pma_heap_dest_addr(struct pma_heap *heap, uint64_t off);

/* ------------------------------------------------------------ recovery.c */

/* global checkpoint (takes every arena lock; call with none held) */
int pma_checkpoint(struct pma_heap *heap);
/* the same, releasing every empty slab (an allocation that found the
 * heap full retries after it) */
int pma_checkpoint_trim(struct pma_heap *heap);
/* a checkpoint an op found due: none if one is running (it retires the
 * caller's records too; if it ends before, the op's successor finds the
 * checkpoint due again). Does not wait for a running one: the caller
 * goes back to its ops instead of sleeping on the first arena mutex
 * while the other checkpoint waits for it, then revoking every owner
 * again for nothing */
int pma_checkpoint_due(struct pma_heap *heap);
/*
 * Version 8: retire arena's records under its own lock alone (held by the
 * caller), as far as they can be retired without another arena (a remote
 * free whose block's owner has not applied it yet, an extent whose
 * allocation another arena has not retired, stop it). First applies the
 * remote frees of arena's blocks that other arenas committed (SYNC_FREE
 * records) and takes back the blocks whose remote frees are retired.
 * 0, or -errno with nothing retired (the records stay for the next one)
 */
int pma_checkpoint_local(struct pma_arena *arena);
/* arena's owner side of two-phase frees (its lock held): append a
 * SYNC_FREE for each remote free of its blocks that is committed, one
 * fence, and take back the blocks whose remote frees are retired; at most
 * room records. Returns the records appended */
uint64_t pma_arena_sync(struct pma_arena *arena, uint64_t room);
/* the same for the frees of arena's blocks by arenas of other parts
 * (XFREE; both checkpoint modes): their SYNC_FREE records, at most room,
 * and the blocks whose XFREEs are retired back to avail */
uint64_t pma_arena_xsync(struct pma_arena *arena, uint64_t room);
/* the same, but the SYNC_FREEs into arena's carry ring while it has
 * room, the rest written only once half of pma_xowed_max is owed */
uint64_t pma_arena_xsync_carry(struct pma_arena *arena, uint64_t room);
/* (pma_arena_sync carries its XFREEs' SYNC_FREEs rather than writing
 * them, up to PMA_CARRY_MAX; pma_arena_xsync writes every owed one it
 * has room for, the carried ones too: a checkpoint that must retire
 * another part's XFREEs waits for them) */
/* run at open: replay logs, redo dests, persist heads, rebuild DRAM */
int pma_recover(struct pma_heap *heap);
/* pma_heap_open with every part's path given (pool_open_parts) */
int pma_heap_open_parts(const char *const *paths, unsigned npaths,
			unsigned flags, struct pma_heap **ret_heap);
/* recover top and its siblings (read-only: each into DRAM copies) */
int pma_recover_parts(struct pma_heap *top);

/* apply.c: one op to the PM page map / bitmaps */
struct pma_dirty;

/*
 * sum.c: the page map summary (layout.h). Every non-zero page map entry
 * written outside a dry run marks its group first (pma_sum_mark), and
 * scans of the page map skip the groups not marked (pma_sum_next).
 */
/* format: every word valid with no group set (not yet durable) */
void pma_sum_format(struct pma_heap *heap);
/* open: the DRAM bits from the words on media; 0 or -ENOMEM */
int pma_sum_load(struct pma_heap *heap);
void pma_sum_release(struct pma_heap *heap);
/* the summary word w holding bits (check added) */
uint64_t pma_sum_encode(uint64_t bits, uint64_t w);
/* groups of 2^shift pages covering npages */
static inline uint64_t pma_sum_groups(uint64_t npages, unsigned shift)
{
	return (npages + (1ULL << shift) - 1) >> shift;
}
/* the summary word of page's group, and the group's bit in it */
static inline uint64_t pma_sum_word(const struct pma_heap *heap, uint64_t page,
				    uint64_t *ret_mask)
{
	uint64_t g = page >> heap->geom.sum_shift;

	*ret_mask = 1ULL << (g % PMA_SUM_BITS);
	return g / PMA_SUM_BITS;
}
/* is page's group marked (or is there no summary)? */
static inline int pma_sum_has(const struct pma_heap *heap, uint64_t page)
{
	uint64_t mask, w;

	if (!heap->sum)
		return 1;
	w = pma_sum_word(heap, page, &mask);
	/* bits are only set (under sum_lock): a stale 0 takes the lock */
	return (__atomic_load_n(&heap->sum[w], __ATOMIC_RELAXED) & mask) != 0;
}
/* the end of page's group (the page map's end without a summary) */
static inline uint64_t pma_sum_group_end(const struct pma_heap *heap,
					 uint64_t page)
{
	uint64_t end;

	if (!heap->sum)
		return heap->geom.npages;
	end = ((page >> heap->geom.sum_shift) + 1) << heap->geom.sum_shift;
	return end < heap->geom.npages ? end : heap->geom.npages;
}
/* mark page's group: the DRAM bit, and unless read-only the word on
 * media (its line added to dirty) after clearing any entry the group
 * holds (the caller writes its entry next); 0 or -ENOMEM */
int pma_sum_mark_call(struct pma_heap *heap, uint64_t page,
		      struct pma_dirty *dirty);
static inline int pma_sum_mark(struct pma_heap *heap, uint64_t page,
			       struct pma_dirty *dirty)
{
	return pma_sum_has(heap, page) ? 0 :
					 pma_sum_mark_call(heap, page, dirty);
}
/* writable open, after recovery (no record pending) and the page map
 * scan: unmark the groups not in seen (they hold no entry), and rewrite
 * every word that differs from its DRAM bits (also the words found
 * invalid at open), durably */
void pma_sum_trim(struct pma_heap *heap, const uint64_t *seen);
/* the summary's groups and how many are marked (0, 0 without one) */
void pma_sum_stats(const struct pma_heap *heap, uint64_t *ret_groups,
		   uint64_t *ret_marked);
/* tests: the words on media match the DRAM bits, and every non-zero
 * entry of the whole page map is in a marked group; else -EIO with a
 * message (0 without a summary) */
int pma_sum_check(struct pma_heap *heap);
/* the first page >= page in a marked group (npages if none) */
uint64_t pma_sum_next(const struct pma_heap *heap, uint64_t page);

#define PMA_TORN_MAX 8 /* torn slab headers one replay tolerates */
struct pma_dirty {
	uintptr_t *lines; /* distinct lines, in insertion order */
	size_t count;
	size_t alloc;
	uintptr_t *set; /* open-addressing set of lines (0 = empty) */
	size_t set_mask; /* set size - 1 (a power of two), 0 if none */
	/* lines known to be in the set, direct-mapped by line number:
	 * checked before hashing (a slab's bitmap is NBANKS lines) */
	uintptr_t recent[16];
	/* the heap's map needs no flush (pm_flush_is_noop): record nothing */
	int off;
	/* version 9, a replay: slabs whose header it met torn by a morph's
	 * checkpoint (ops of them skipped); each must be whole again by the
	 * replay's end (its SLAB_MORPH rewrote it), pma_apply_torn_check */
	uint64_t torn[PMA_TORN_MAX];
	unsigned ntorn;
	unsigned torn_ok; /* bit i: a SLAB_MORPH rewrote torn[i] since */
};
int pma_apply_op(struct pma_heap *heap, const struct pma_op *op,
		 struct pma_dirty *dirty);
/* after a replay: -EIO if a slab header it skipped ops of as torn is
 * still not whole (damage, not a morph's tear), else 0 */
int pma_apply_torn_check(struct pma_heap *heap, const struct pma_dirty *dirty);
int pma_dirty_add(struct pma_dirty *dirty, const void *addr, size_t len);
/* a checkpoint's extent op from its DRAM copy (made by this process after
 * its own checks, so not checked again; no shadow: that is recovery's):
 * 0 or -ENOMEM (dirty set). Inline where nothing is flushed (dirty->off):
 * one store of the head page's entry, thousands of times per checkpoint
 * in an extent-heavy window */
int pma_apply_extent_trusted_call(struct pma_heap *heap, uint64_t off,
				  uint64_t npages, int on,
				  struct pma_dirty *dirty);
static inline int pma_apply_extent_trusted(struct pma_heap *heap, uint64_t off,
					   uint64_t npages, int on,
					   struct pma_dirty *dirty)
{
	pma_assert(!heap->shadow);
	if (dirty->off && (!on || pma_sum_has(heap, pma_page_of(heap, off)))) {
		uint64_t page = pma_page_of(heap, off);
		uint64_t e = on ? pma_pmap_make(PMA_PMAP_EXTENT, npages) : 0;

		if (heap->checked)
			e = pma_check_pmap(e, page);
		__atomic_store_n(&heap->pmap_pm[page], e, __ATOMIC_RELAXED);
		return 0;
	}
	return pma_apply_extent_trusted_call(heap, off, npages, on, dirty);
}
void pma_dirty_flush(struct pma_heap *heap, struct pma_dirty *dirty);
void pma_dirty_release(struct pma_dirty *dirty);
/* is op applied in the second phase (frees that may follow another log's
 * allocation of the same space)? */
int pma_op_is_phase2(const struct pma_op *op);
/* is the block / extent allocated by op live in the PM state (during a
 * dry run: the replayed state, see pma_pmap_now)? */
int pma_pm_is_live(struct pma_heap *heap, const struct pma_op *op);
/* does byte offset b start a live block or extent in the PM state? */
int pma_pm_live_at(struct pma_heap *heap, uint64_t b);
/* page map entry of page: heap->pmap_pm's, or during a dry run (after
 * pma_pmap_check_spans sorted the shadow's written pages) the replayed
 * one: the sink's where the replay wrote one, PM's elsewhere */
uint64_t pma_pmap_now(const struct pma_heap *heap, uint64_t page);
/*
 * Allocator metadata in the data area: if byte rel (from the data base)
 * of a data area of npages pages lies in the header or bitmap banks (the
 * first PMA_SLAB_HDR_SIZE bytes) of a chunk whose page map entry (by
 * entry(ctx, page)) is a slab, that chunk's first page, else UINT64_MAX.
 * The one predicate of recovery's redo check (redo_meta_check) and of
 * fsck's log-op-dest on the redo ring.
 */
static inline uint64_t pma_slab_hdr_page(uint64_t rel, uint64_t npages,
					 uint64_t (*entry)(const void *ctx,
							   uint64_t page),
					 const void *ctx)
{
	uint64_t page = rel >> PMA_PAGE_SHIFT;

	if (page >= npages || rel % PMA_CHUNK >= PMA_SLAB_HDR_SIZE)
		return UINT64_MAX;
	page -= page % PMA_CHUNK_PAGES;
	return pma_pmap_kind(entry(ctx, page)) == PMA_PMAP_SLAB ? page :
								  UINT64_MAX;
}
/* rebuild the DRAM state from the PM page map: mirror, free extents, the
 * slabs to load later (lazy.c) */
int pma_rebuild(struct pma_heap *heap);
/* -EIO (with a message) if an entry of the PM page map is not one
 * pma_rebuild accepts (checked before recovery writes anything, so that
 * a heap refused by the rebuild was not changed by its recovery) */
int pma_pmap_check(struct pma_heap *heap);

/*
 * lazy.c: slabs are loaded at first use, not at open. pma_rebuild records
 * each slab of the page map with pma_lazy_add; heap->slabs[chunk] stays
 * NULL until pma_lazy_get loads it (any thread, compare-exchange) or its
 * owner takes it with pma_lazy_refill.
 */
int pma_lazy_add(struct pma_heap *heap, uint64_t page, uint64_t entry);
/* the slab of chunk (loaded now if needed) in *ret_slab, NULL if the
 * chunk is not a slab; -ENOMEM, -EIO (corrupt slab) */
int pma_lazy_get(struct pma_heap *heap, uint64_t chunk,
		 struct pma_slab **ret_slab);
/* owner lock held, partial[cls] empty: take the arena's unloaded slabs of
 * class cls until one has a free block (put on partial[cls]) or none is
 * left; 0 or -ENOMEM / -EIO */
int pma_lazy_refill(struct pma_arena *arena, unsigned cls);
/* the state of the unloaded slab at page (entry e) in *ret_slab, read
 * from PM without installing it (stats; every arena lock held) */
int pma_lazy_peek(struct pma_heap *heap, uint64_t page, uint64_t e,
		  struct pma_slab *ret_slab);
/* slabs not loaded since open (tests) */
uint64_t pma_lazy_unloaded(struct pma_heap *heap);
void pma_lazy_release(struct pma_heap *heap);

/* recovery.c, PMA_HEAP_RDONLY open: the same replay as pma_recover, into
 * the DRAM copies of the page map and slab metadata (no dest redo, heads
 * and logs stay as they are on media) */
int pma_recover_rdonly(struct pma_heap *heap);

/* rdonly.c: -EROFS (with a message) if the heap is read-only, else 0 */
int pma_heap_writable(struct pma_heap *heap);
/* the slab header + bitmap (PMA_SLAB_HDR_SIZE bytes) of the slab at byte
 * offset off, as recovery reads and writes them: PM, or a DRAM copy when
 * read-only or in a dry run (NULL if out of memory) */
struct pma_slab_hdr *pma_slab_meta(struct pma_heap *heap, uint64_t off);
void pma_slab_meta_release(struct pma_heap *heap);
/*
 * Recovery's dry run: between begin and end, pma_apply_op writes slab
 * metadata into DRAM copies and page map entries into a zeroed sink
 * (apply never reads the page map), so the replay checks every record
 * without writing PM. Not for read-only heaps. begin: 0 or -ENOMEM.
 */
struct pma_shadow {
	uint64_t *pmap_pm; /* the real one, restored by end */
	uint64_t *pmap_sink;
	struct pma_pending written; /* pages the replay wrote in the sink */
	int sorted; /* written sorted, no duplicates (pma_pmap_check_spans) */
};
int pma_shadow_begin(struct pma_heap *heap, struct pma_shadow *ret_shadow);
void pma_shadow_end(struct pma_heap *heap, struct pma_shadow *shadow);
/*
 * apply.c: no slab or extent of the page map lies inside another (the
 * pages a slab or extent covers have free entries, layout.h). shadow:
 * check the state after a dry run (the sink's entry where the replay wrote
 * one, PM's elsewhere) before recovery writes anything; NULL: check
 * heap->pmap_pm as it is. -EIO with a message, -ENOMEM.
 */
int pma_pmap_check_spans(struct pma_heap *heap, struct pma_shadow *shadow);

#endif
