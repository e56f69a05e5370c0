/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc fsck (internal): the heap checker behind `pmactl fsck`. It
 * reads the heap region of a read-only mapped pool, never writes it, and
 * reports each finding through a pool_fsck_sink (pool/fsck.h) with a
 * stable code. The walk has its own model of the state a recovery would
 * make (the page map with the logs' windows applied, and per slab its
 * bitmap banks before and after the window), so it can say which
 * structure is damaged where an open only refuses. Kept apart from the
 * allocator (fsck.c: header, arenas, logs, window; fsck-map.c: page map,
 * summary, slabs, root, the library's own read-only open) so that a
 * layout change updates these two files.
 */
#ifndef PMAD_PMALLOC_FSCK_H
#define PMAD_PMALLOC_FSCK_H

#include <stdint.h>

#include "pmalloc/internal.h"
#include "pool/fsck.h"

/*
 * Check the PMAlloc heap of the pool at path: heap header (magic,
 * version, checksum, geometry), head generation, every arena's head and
 * log (record checksums, sequence, the end of the log), the records'
 * targets against the slabs they name, the page map (entry checks, kinds,
 * overlaps after the window is applied) and its summary, every slab
 * (header, class, owner, bitmap banks against the replayed log), the
 * root word, and last the library's read-only open and its free-extent
 * index against the page map. Findings go to sink. Returns 0 when the
 * check ran (a pool that cannot be opened, or has no heap, is a finding),
 * -ENOMEM, or the callback's error.
 */
int pma_fsck(const char *path, struct pool_fsck_sink *sink);
/*
 * The same walk over the heap of an open heap (its pool's mapping, as it
 * is now: e.g. a private view after recovery), compared with the heap
 * itself instead of a read-only open. A masked open
 * (pma_config_set_region_mask) checks the regions it holds: the others
 * are written by their holders meanwhile, each is an info finding
 * ("region-not-held") and stays unwalked; rings between a held and an
 * unheld region are not checked either.
 */
int pma_fsck_heap(struct pma_heap *heap, struct pool_fsck_sink *sink);
/*
 * Frees committed in free rings (layout 12) for the region slots in
 * dest_mask and not applied yet, read from a pool mapped as it is (no
 * heap open, no lock: the ring words are read as the opens that hold
 * them write them, which they allow). pmad's sync service asks before
 * it opens regions no client holds. 0 or -EINVAL.
 */
int pma_pool_ring_pending(struct pool *pool, uint64_t dest_mask,
			  uint64_t *ret_entries);

/*
 * Repair: first what fsck provably repairs itself (fsck-repair.c: a bank
 * one bit off its check, a damaged log slot ahead of the tail, page map
 * entries in unmarked groups; with PMA_FSCK_ADVANCED also the records
 * after a damaged log end, dropped, and the log of an arena whose head
 * is unknown, dropped where it ends), then what the library's own writable
 * open repairs with its crash-safe protocols (a damaged or older pool
 * header copy that holds the same state as the other, rewritten; the
 * logs replayed and a torn tail dropped; invalid page map summary words
 * rewritten; the root word's check completed). pma_fsck_repairable says
 * whether a finding's code is of the library's kind (a finding of fsck's
 * kind carries POOL_FSCK_REPAIRABLE, or POOL_FSCK_ADVANCED). notes (may
 * be NULL) is told what each of fsck's repairs does, and what a
 * destructive one loses, as info findings ("repair-..."). With
 * PMA_FSCK_DRY_RUN the pool is only read and notes says what would be
 * done. An open that refuses writes nothing. 0, or -errno with a message.
 */
enum pma_fsck_repair_flag {
	PMA_FSCK_ADVANCED = 1 << 0, /* also destructive repairs */
	PMA_FSCK_DRY_RUN = 1 << 1, /* write nothing, tell notes */
	PMA_FSCK_NO_OPEN = 1 << 2, /* fsck's own stores only, no open */
};
int pma_fsck_repair_flags(const char *path, unsigned flags,
			  struct pool_fsck_sink *notes);
/*
 * The same, asking for each of fsck's own repairs: ask(finding, arg) is
 * called for each finding whose repair has stores (after the notes that
 * say what it does): 1 keeps them, 0 drops them (that finding is left
 * as it is: every repair is independent of the others), <0 stops with
 * that error and writes nothing. ret_declined (may be NULL) gets the
 * number of repairs dropped.
 */
typedef int (*pma_fsck_ask_fn)(const struct pool_fsck_finding *f, void *arg);
int pma_fsck_repair_ask(const char *path, unsigned flags,
			struct pool_fsck_sink *notes, pma_fsck_ask_fn ask,
			void *arg, unsigned *ret_declined);
/* the same, flags 0 and no notes */
int pma_fsck_repairable(const char *code);
/* a finding that makes pma_fsck_repair impossible: an error it does not
 * repair (advanced: also with PMA_FSCK_ADVANCED), or a pool only a
 * read-only open accepts */
int pma_fsck_blocks_repair(const struct pool_fsck_finding *f, int advanced);
int pma_fsck_repair(const char *path);

/* ------------------------------------------------------------ recovery */

/* what recovery still has to do in one arena's log */
struct pma_fsck_pending_arena {
	unsigned part, arena; /* the arena: its part and index there */
	uint64_t head, tail; /* its window: records [head, tail) */
	uint64_t ops; /* operations recovery replays */
	uint64_t by_type[PMA_REC_NTYPES]; /* of them, per record type */
	/* its remote frees (RFREE) whose block's owner has not applied them
	 * yet (no SYNC_FREE of the block in a window) */
	uint64_t rfree_pending;
	int torn; /* a torn append at the tail, which recovery drops */
};

struct pma_fsck_pending {
	unsigned nparts; /* parts with a heap */
	unsigned narenas; /* entries of arenas: every part's arenas */
	unsigned arenas_pending; /* arenas with ops or a torn tail */
	uint64_t ops, torn, rfree_pending; /* sums over the arenas */
	int root_unsealed; /* the root word's check is still to be stored */
	struct pma_fsck_pending_arena *arenas; /* part by part */
};

/*
 * What recovery still has to do in the heap of the pool at path (every
 * part's), from a read-only open (nothing is written): 0, or -errno with
 * a message if the heap cannot be opened read-only. Release ret with
 * pma_fsck_pending_free (also after an error).
 */
int pma_fsck_pending(const char *path, struct pma_fsck_pending *ret);
/*
 * Every dest word an operation of the logs' windows names (recovery's
 * redo stores into the last ones: an allocation's block, 0 for a free),
 * in heap (an open, read-only or not, of every part): fn(part, arena,
 * index of its record, dest pool offset, arg) for each; a nonzero return
 * of fn stops the walk and is returned.
 */
typedef int (*pma_fsck_dest_fn)(unsigned part, unsigned arena, uint64_t index,
				uint64_t dest, void *arg);
int pma_fsck_window_dests(struct pma_heap *heap, pma_fsck_dest_fn fn,
			  void *arg);
void pma_fsck_pending_free(struct pma_fsck_pending *p);

/*
 * Run recovery on a private copy-on-write view of the pool at path (the
 * files are opened read-only and never written), checkpoint, and walk
 * the recovered heap as pma_fsck does; findings go to sink (a recovery
 * that refuses the heap is "recovery-refused"). Then then(heap, sink)
 * if not NULL, on the private heap (the recovery and check of what the
 * heap holds: HDPM's). 0 when it ran, -ENOMEM, or the callback's error.
 */
typedef int (*pma_fsck_then_fn)(struct pma_heap *heap,
				struct pool_fsck_sink *sink);
int pma_fsck_recover_private(const char *path, struct pool_fsck_sink *sink,
			     pma_fsck_then_fn then);

/* exactly one word of slot k of a log of cap slots is of record k's
 * lap: a torn append */
int pma_fsck_slot_torn(const struct pma_rec *log, uint32_t cap, uint64_t k);

/* heap.c: the header's magic, checksum, version and geometry against a
 * region of region_size bytes; 0 with the geometry, or -errno + message */
int pma_heap_hdr_check(const struct pma_heap_hdr *hdr, uint64_t region_size,
		       struct pma_geom *ret_geom);

/* ------------------------------------------------------------ walk state */

/* a slab as the walk sees it: its header (from PM, or from the SLAB_NEW
 * that made it in the window), its banks on media, and the state the
 * window's block ops leave */
struct pma_fsck_slab {
	struct pma_slab_hdr hdr;
	uint64_t pm[PMA_NBANKS][PMA_SLAB_BANK_WORDS]; /* on media */
	uint64_t pm_check[PMA_NBANKS]; /* each bank's check word */
	uint64_t cur[PMA_NBANKS][PMA_SLAB_BANK_WORDS]; /* after the ops */
	/* bits the window's ops touched, and which of those were set before
	 * the window (a free found it set, an allocation clear) */
	uint64_t touched[PMA_NBANKS][PMA_SLAB_BANK_WORDS];
	uint64_t pre[PMA_NBANKS][PMA_SLAB_BANK_WORDS];
	/* version 9: blocks whose first op in the window was a free at a
	 * mixed slab's old block that was free already: set or clear before
	 * the window (pma_fsck_old_op) */
	uint64_t unsure[PMA_NBANKS][PMA_SLAB_BANK_WORDS];
	/* the window's ops per bank in replay order (pma_check_prefix) */
	uint16_t ops[PMA_NBANKS][PMA_CHECK_OPS];
	unsigned nops[PMA_NBANKS];
	/* version 8: blocks whose owner applied a remote free (SYNC_FREE):
	 * the RFREE in the freeing arena's window finds them free */
	uint64_t synced[PMA_NBANKS][PMA_SLAB_BANK_WORDS];
	/* version 8: the bank's check matched it after one of its ops (a
	 * local checkpoint sealed it as of a point inside the window) */
	int mid[PMA_NBANKS];
	int fresh; /* made by a SLAB_NEW in the window */
	int hdr_bad; /* its PM header failed (reported once) */
	/* version 9 (fsck-morph.c): the old bitmap on media, its checks,
	 * and as the window leaves it; a SLAB_MORPH in the window */
	uint64_t old_pm[PMA_NBANKS][PMA_SLAB_BANK_WORDS];
	uint64_t old_check[PMA_NBANKS];
	uint64_t old_cur[PMA_NBANKS][PMA_SLAB_BANK_WORDS];
	/* old blocks the window frees (set before it), and old blocks whose
	 * frees found them free (either way before it: fsck-morph.c) */
	uint64_t old_freed[PMA_NBANKS][PMA_SLAB_BANK_WORDS];
	uint64_t old_unsure[PMA_NBANKS][PMA_SLAB_BANK_WORDS];
	int morphed;
	/* version 9: an op at no block of the header's class, taken for an
	 * old class's op before a SLAB_MORPH later in the window over a
	 * header torn between its class and morph_from (the library's
	 * replay: apply.c, torn_note): that op's record offset + 1 and
	 * block until the SLAB_MORPH comes, reported if it never does */
	uint64_t torn_rec, torn_off;
	unsigned torn_arena;
};

/* one 8-byte store of a repair: its part, its byte offset there, its
 * value */
struct pma_fsck_store {
	uint64_t off, value;
	unsigned part;
};

/* a repair's stores, in order, and what it tells */
struct pma_fsck_plan {
	unsigned flags; /* PMA_FSCK_ADVANCED, PMA_FSCK_DRY_RUN */
	struct pma_fsck_store *stores;
	size_t n, cap;
	struct pool_fsck_sink *notes; /* may be NULL */
	/* per change (pma_fsck_repair_ask): each repairable finding owns
	 * the stores planned since the previous one (its notes came
	 * before it); ask says whether to keep them */
	pma_fsck_ask_fn ask;
	void *ask_arg;
	size_t change_start; /* the first store of the current change */
	unsigned declined; /* changes ask dropped */
};

struct pma_fsck_arena {
	uint64_t head, tail;
	int usable; /* its head passed: the window holds its records */
	/* its head failed (PMA_FSCK_HEAD_*): the drop (fsck.c, drop_fsck)
	 * decides; gen is its generation (arena-gen-check: the one a drop
	 * would seal, from the damaged lgen word's low bits) */
	unsigned bad;
	uint64_t gen;
	int dropped; /* usable from the end of its log (a drop's model) */
};
enum { PMA_FSCK_HEAD_GEN = 1, PMA_FSCK_HEAD_CHECK, PMA_FSCK_HEAD_ORPHAN };

struct pma_fsck_set;

/* the walk of one part's heap */
struct pma_fsck {
	struct pool_fsck_sink *sink;
	struct pma_fsck_set *set; /* every part's walk */
	unsigned part; /* the part (findings name it) */
	unsigned slot; /* region slot: part * set->nreg + region in part */
	int present; /* the part has a heap region */
	int walked; /* the walk reached its end (the state is complete) */
	int unformatted; /* no magic: a writable open formats it */
	struct pool *pool; /* open read-only during the walk */
	const char *base; /* the part's mapping */
	uint64_t region_off; /* byte offset of the heap region in the part */
	uint64_t region_size;
	const struct pma_heap_hdr *hdr;
	struct pma_geom g;
	uint64_t data_base; /* byte offset of the data area in part 0 */
	int checked; /* version 7: checked words */
	unsigned osh; /* offsets in records >> osh (pma_rec_osh) */
	unsigned nclasses; /* pma_nclasses(version) */
	uint64_t gen; /* the head generation (if gen_ok) */
	int gen_ok;
	const struct pma_rec *logs; /* narenas logs of log_cap slots */
	const uint64_t *pmap_pm; /* on media */
	/* the page map after the windows (entries with their checks), as
	 * the read-only open makes it: marked groups' entries, then every
	 * op of the windows applied */
	uint64_t *pmap;
	uint64_t *written; /* bit per page: a window op wrote its entry */
	uint64_t *sum; /* the summary's bits (invalid words: all set) */
	struct pma_fsck_arena *arenas;
	struct pma_fsck_slab **slabs; /* per chunk, made when needed */
	uint64_t used_pages; /* pages of slabs and extents after the window */
	int root_logged; /* a window op allocates to the root word */
	unsigned phase; /* progress: passes over the page map done */
	struct pma_fsck_plan *plan; /* repair: record the stores (or NULL) */
	int heap_errors; /* errors this walk reported */
	/* from the header alone (before the walk): the words recovery
	 * refuses as dest words, [meta_lo, meta_hi) but the root word, and
	 * the data pages (progress); all 0 if the header fails */
	uint64_t meta_lo, meta_hi, npages_hint;
};

/*
 * The walks of every part of a pool with a heap region (a heap over
 * several parts: doc/pmalloc.md), made one after the other; a dest word
 * may name a word of any part, and the root word (part 0's) a block of
 * any part, which the set answers after every walk.
 */
struct pma_fsck_set {
	struct pool_fsck_sink *sink;
	struct pma_fsck_plan *plan; /* repair: record the stores (or NULL) */
	struct pool *pool;
	unsigned nheaps; /* heap regions */
	unsigned nreg; /* heap regions per part (part 0's count) */
	uint64_t total_pages; /* of every part's heap (progress) */
	int heap_errors; /* errors every walk reported */
	/* region slots not walked: held by other opens while this one
	 * checks (pma_fsck_heap of a masked open; "region-not-held") */
	uint64_t skip;
	struct pma_fsck part[PMA_MAX_SLOTS]; /* by region slot */
};
/* the walk of the heap region holding pool offset off: its part's, then
 * the region by offset (with one region per part, or none holding off,
 * the part's first); NULL past the parts */
struct pma_fsck *pma_fsck_route(const struct pma_fsck_set *set, uint64_t off);

static inline uint64_t pma_fsck_page_off(const struct pma_fsck *f,
					 uint64_t page)
{
	return f->data_base + (page << PMA_PAGE_SHIFT);
}

/* fsck-morph.c (version 9, slab morphing) */
/* a block op of a mixed slab s (hdr.morph_from set) at rel from its
 * start: 1 if it was an old block's (applied or, replayed over a later
 * state, nothing to do), 0 for an op of the slab's own class, 2 for one
 * whose block's state before the window is unsure (a free at an old block
 * that was free already) */
int pma_fsck_old_op(struct pma_fsck_slab *s, uint64_t rel, int on);
/* is rel (from the slab's start) a live old block of mixed slab s after
 * the ops so far? (a block, the root, that stayed live through a morph) */
int pma_fsck_old_live(const struct pma_fsck_slab *s, uint64_t rel);
/* a mixed slab after the window: its old class, its old bitmap's checks
 * and no live block over a live old one */
int pma_fsck_morph_slab(struct pma_fsck *f, uint64_t off,
			struct pma_fsck_slab *s);

/* report through f->sink (part f->part; over several parts the message
 * starts "part N: "); errors count in f->heap_errors */
int pma_fsck_report(struct pma_fsck *f, const char *code,
		    enum pool_fsck_severity severity, uint64_t off,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* the same with pool_fsck_finding.flags (POOL_FSCK_REPAIRABLE, ...) */
int pma_fsck_report_flags(struct pma_fsck *f, const char *code,
			  enum pool_fsck_severity severity, unsigned flags,
			  uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* the walk's slab of chunk, read from PM when first needed (NULL: out
 * of memory) */
struct pma_fsck_slab *pma_fsck_slab_get(struct pma_fsck *f, uint64_t chunk);
/* the index of the block at byte offset off of slab s of chunk, -1 if
 * its header does not match its class or off is not one of its blocks */
int pma_fsck_block_of(const struct pma_fsck *f, const struct pma_fsck_slab *s,
		      uint64_t chunk, uint64_t off);
/* progress: page of the current pass over the page map (the walk makes
 * PMA_FSCK_PASSES of them, the library's open one more) */
#define PMA_FSCK_PASSES 4
void pma_fsck_progress(const struct pma_fsck *f, uint64_t page);
/* is page's summary group marked (or is there no summary)? */
int pma_fsck_sum_has(const struct pma_fsck *f, uint64_t page);

/* fsck.c: the walk of the heap of an open pool (every part's, through
 * its mapping; then part 0's root word); set->sink and set->plan set by
 * the caller; walk_free releases what it made */
int pma_fsck_walk_pool(struct pma_fsck_set *set, struct pool *pool);
void pma_fsck_walk_free(struct pma_fsck_set *set);

/* fsck-repair.c: add a store to f->plan (none: nothing); a note (info
 * finding) to f->plan->notes; the stores that zero a log slot */
int pma_fsck_plan_store(struct pma_fsck *f, uint64_t off, uint64_t value);
int pma_fsck_note(struct pma_fsck *f, const char *code, uint64_t off,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int pma_fsck_plan_zero_slot(struct pma_fsck *f, const struct pma_rec *slot);
/* a bank's rebuild (fsck-repair.c): what bank l of slab s at slab_off
 * must hold, from the evidence (no bit past the last block, the bits the
 * window names, before or after it) and its check (one more bit at
 * most); 1 and *ret if exactly one bank fits and differs from media,
 * else 0 (ret->unknown still says how many of its bits no record names);
 * then the stores that write it (words first, the check last) */
struct pma_fsck_bank {
	uint64_t words[PMA_SLAB_BANK_WORDS], check;
	unsigned known; /* bits changed by the evidence */
	unsigned guessed; /* bits changed by the check (0 or 1) */
	unsigned unknown; /* in-range bits no record of the window names */
};
int pma_fsck_bank_rebuild(const struct pma_fsck *f, uint64_t slab_off,
			  const struct pma_fsck_slab *s, unsigned l,
			  struct pma_fsck_bank *ret);
int pma_fsck_plan_bank(struct pma_fsck *f, uint64_t slab_off,
		       const struct pma_fsck_slab *s, unsigned l,
		       const struct pma_fsck_bank *fix);

/* fsck-map.c: the passes after the window */
/* summary words, then every page map entry on media (before the window) */
int pma_fsck_pmap(struct pma_fsck *f);
/* the marked groups' entries copied into f->pmap (the window's start) */
void pma_fsck_pmap_load(struct pma_fsck *f);
/* no slab or extent inside another, after the window */
int pma_fsck_spans(struct pma_fsck *f);
/* every slab after the window: header, banks the window did not touch,
 * stray bits; the banks it touched: before or after their window */
int pma_fsck_slabs(struct pma_fsck *f);
/* does pool offset off name a live block or extent after the window (of
 * its part's heap; a part whose walk did not end: unknown, 1)? <0: -errno */
int pma_fsck_live_after(struct pma_fsck *f, uint64_t off);
/* the root word and its check, and that it names a live block (of the
 * part it names, after every part's walk) */
int pma_fsck_root(struct pma_fsck *f);
/* the same of another region's root word (unused: what recovery checks) */
int pma_fsck_root_other(struct pma_fsck *f);
struct pma_fsck_set;
/* version 12 free rings: consumer words' checks, committed entries not
 * applied yet name live blocks of their region, how many wait (info) */
int pma_fsck_rings(struct pma_fsck_set *set);
/* the library's read-only open of the heap, every part's free-extent
 * index and page map against the walk's */
int pma_fsck_library(struct pma_fsck_set *set, const char *path);
/* the same against a heap open already (its top) */
int pma_fsck_library_heap(struct pma_fsck_set *set, struct pma_heap *heap);

#endif
