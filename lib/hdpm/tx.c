/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpm tx: the undo journals that make every multi-word operation atomic.
 *
 * An operation runs in one journal slot (HDPM_JSLOTS in version 4: slot 0
 * in the superblock, the others in the jslots block; operations in
 * different slots run at the same time, on words their locks give them
 * alone). It begins (the slot's jstate = ACTIVE with a new seq), then for
 * every word it changes a record {word, old value} made durable BEFORE
 * the word changes; new blocks go through the slot's alloc_slot (intent
 * first) into a journaled word. Commit: one fence makes every change
 * durable, then jstate = COMMITTED (if there are frees to do) and the
 * commit actions free what the operation replaced, then jstate = IDLE.
 * A crash while ACTIVE is undone from the records; a crash while
 * COMMITTED re-runs the commit actions. Both free blocks that may have
 * been freed before the crash already (by the commit, or by a run-time
 * abort's undo), and other slots run on meanwhile: such a block may have
 * been handed out again. So at mount a live block is freed only if no
 * word but the one the re-run frees it from names it (a full scan, only
 * after a crash inside an operation): a block another slot allocated is
 * either named by that slot's word, or only in its alloc_slot, and then
 * that slot's operation never committed and its undo would free it too.
 */
#include <stdlib.h>
#include <string.h>

#include "hdpm/internal.h"
#include "util/crc.h"
#include "util/errmsg.h"
#include "util/log.h"

uint64_t hdpm_jseq(const struct hdpm_tx *tx)
{
	return *tx->jstate >> 8;
}

static void jstate_set(struct hdpm_tx *tx, enum hdpm_jstate st, uint64_t seq)
{
	/* one 8-byte store: the state and its seq change together */
	__atomic_store_n(tx->jstate, seq << 8 | st, __ATOMIC_RELEASE);
	pma_persist(tx->fs->heap, tx->jstate, sizeof(*tx->jstate));
}

void hdpm_tx_locks_init(struct hdpm_fs *fs)
{
	unsigned i;

	for (i = 0; i < HDPM_JSLOTS; i++) {
		fs->tx[i].fs = fs;
		pthread_mutex_init(&fs->tx[i].lock, NULL);
	}
}

void hdpm_tx_fini(struct hdpm_fs *fs)
{
	unsigned i;

	for (i = 0; i < HDPM_JSLOTS; i++)
		pthread_mutex_destroy(&fs->tx[i].lock);
}

int hdpm_tx_init(struct hdpm_fs *fs)
{
	struct hdpm_super *sb = fs->sb;
	struct hdpm_jslots *js;
	unsigned i;

	fs->tx[0].jstate = &sb->jstate;
	fs->tx[0].alloc_slot = &sb->alloc_slot;
	fs->tx[0].free_slot = &sb->free_slot;
	fs->tx[0].intent = &sb->intent;
	fs->tx[0].recs = sb->recs;
	fs->ntx = 1;
	/* an older version (read-only: not upgraded) has slot 0 only */
	if (sb->version < 4)
		return 0;
	if (pma_usable_size(fs->heap, sb->jslots_off) < sizeof(*js))
		return util_errmsg_set(EIO, "bad journal slots 0x%llx",
				       (unsigned long long)sb->jslots_off);
	js = hdpm_direct(fs, sb->jslots_off);
	for (i = 1; i < HDPM_JSLOTS; i++) {
		fs->tx[i].jstate = &js->slot[i - 1].jstate;
		fs->tx[i].alloc_slot = &js->slot[i - 1].alloc_slot;
		fs->tx[i].free_slot = &js->slot[i - 1].free_slot;
		fs->tx[i].intent = &js->slot[i - 1].intent;
		fs->tx[i].recs = js->slot[i - 1].recs;
	}
	fs->ntx = HDPM_JSLOTS;
	return 0;
}

int hdpm_block_live(struct hdpm_fs *fs, uint64_t off)
{
	return off && pma_usable_size(fs->heap, off) != 0;
}

/* free one live block through the free word fw */
static int block_free_one(struct hdpm_fs *fs, uint64_t *fw, uint64_t off)
{
	if (!hdpm_block_live(fs, off))
		return 0;
	/* fw names only live blocks when stored: the allocator's redo of
	 * an older free on it keeps such a value */
	*fw = off;
	pma_persist(fs->heap, fw, sizeof(*fw));
	return pma_free_from(fs->heap, fw);
}

/* at mount: not live, or named by another word (handed out again) */
static int block_gone(struct hdpm_fs *fs, uint64_t off,
		      const struct hdpm_skip *skip)
{
	if (!hdpm_block_live(fs, off))
		return 1;
	return fs->recovering && hdpm_block_named_other(fs, off, skip);
}

int hdpm_block_free_skip(struct hdpm_fs *fs, uint64_t *fw, uint64_t off,
			 int is_page, const struct hdpm_skip *skip)
{
	uint64_t log;
	int rc;

	if (block_gone(fs, off, skip))
		return 0;
	if (is_page) {
		/* the log first: the page names it */
		log = hdpm_page_hdr(fs, off)->log_off;
		if (!block_gone(fs, log, skip)) {
			rc = block_free_one(fs, fw, log);
			if (rc < 0)
				return rc;
		}
	}
	return block_free_one(fs, fw, off);
}

int hdpm_block_free(struct hdpm_fs *fs, uint64_t *fw, uint64_t off, int is_page)
{
	return hdpm_block_free_skip(fs, fw, off, is_page, NULL);
}

static uint32_t rec_crc(const struct hdpm_rec *rec)
{
	struct hdpm_rec r = *rec;

	r.crc = 0;
	return util_crc32c(0, &r, sizeof(r));
}

static int rec_valid(const struct hdpm_rec *rec, uint64_t seq)
{
	return rec->seq == seq && rec->crc == rec_crc(rec);
}

/* a free slot, or this thread's hashed one when all are busy */
static struct hdpm_tx *slot_take(struct hdpm_fs *fs)
{
	uint64_t self = (uint64_t)pthread_self();
	unsigned h = (unsigned)((self >> 12) * 0x9e3779b97f4a7c15ULL >> 40);
	unsigned i, s;

	h %= fs->ntx;
	for (i = 0; i < fs->ntx; i++) {
		s = (h + i) % fs->ntx;
		if (pthread_mutex_trylock(&fs->tx[s].lock) == 0)
			return &fs->tx[s];
	}
	pthread_mutex_lock(&fs->tx[h].lock);
	return &fs->tx[h];
}

/* tests: the most journaled operations running at once */
static void overlap_note(struct hdpm_fs *fs)
{
	uint64_t n = __atomic_load_n(&fs->gc.all_claim, __ATOMIC_RELAXED);
	uint64_t max = __atomic_load_n(&fs->tx_overlap, __ATOMIC_RELAXED);

	while (n > max &&
	       !__atomic_compare_exchange_n(&fs->tx_overlap, &max, n, 1,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

struct hdpm_tx *hdpm_tx_begin(struct hdpm_fs *fs)
{
	struct hdpm_tx *tx = slot_take(fs);

	tx->nrecs = 0;
	tx->tx_frees = 0;
	hdpm_stat_add(fs, txs, 1);
	/* the background GC publishes nothing while this runs */
	hdpm_gc_claim_all(fs);
	overlap_note(fs);
	jstate_set(tx, HDPM_J_ACTIVE, hdpm_jseq(tx) + 1);
	return tx;
}

static int rec_add(struct hdpm_tx *tx, enum hdpm_rec_kind kind, uint64_t word,
		   uint64_t old)
{
	struct hdpm_rec *rec;

	if (tx->nrecs >= HDPM_TX_MAX)
		return util_errmsg_set(E2BIG,
				       "operation needs more than %u "
				       "journal records",
				       HDPM_TX_MAX);
	rec = &tx->recs[tx->nrecs];
	rec->kind = kind;
	rec->seq = hdpm_jseq(tx);
	rec->word = word;
	rec->old = old;
	rec->crc = 0;
	rec->crc = rec_crc(rec);
	/* the record must be durable before its word changes */
	pma_persist(tx->fs->heap, rec, sizeof(*rec));
	tx->nrecs++;
	/* commit actions: free what a block word held (a word that held
	 * no block has nothing to free: no COMMITTED state for it), and
	 * the pages of a truncated or removed file */
	if (kind == HDPM_REC_FREE_TAIL || kind == HDPM_REC_FREE_INODE ||
	    (kind != HDPM_REC_WORD && kind != HDPM_REC_TAIL && old != 0))
		tx->tx_frees = 1;
	return 0;
}

int hdpm_tx_log(struct hdpm_tx *tx, enum hdpm_rec_kind kind, uint64_t *word)
{
	return rec_add(tx, kind, hdpm_off(tx->fs, word), *word);
}

int hdpm_tx_log_free(struct hdpm_tx *tx, enum hdpm_rec_kind kind, uint64_t ino,
		     uint64_t first)
{
	return rec_add(tx, kind, hdpm_off(tx->fs, hdpm_inode(tx->fs, ino)),
		       first);
}

static uint32_t intent_crc(const struct hdpm_intent *in)
{
	struct hdpm_intent i = *in;

	i.crc = 0;
	return util_crc32c(0, &i, sizeof(i));
}

int hdpm_tx_alloc(struct hdpm_tx *tx, size_t size, uint64_t *word)
{
	struct hdpm_fs *fs = tx->fs;
	struct hdpm_intent *in = tx->intent;
	int rc;

	in->before = *tx->alloc_slot;
	in->before_live = hdpm_block_live(fs, in->before);
	in->tag = hdpm_jseq(tx) << 16 | (tx->nrecs - 1);
	in->crc = intent_crc(in);
	/* the intent is durable before the allocation can be */
	pma_persist(fs->heap, in, sizeof(*in));
	rc = pma_malloc_to(fs->heap, size, tx->alloc_slot);
	if (rc < 0)
		return util_errmsg_set(ENOSPC, "no space for %zu bytes: %s",
				       size, pma_errormsg());
	hdpm_tx_set(fs, word, *tx->alloc_slot);
	return 0;
}

void hdpm_tx_set(struct hdpm_fs *fs, uint64_t *word, uint64_t value)
{
	__atomic_store_n(word, value, __ATOMIC_RELEASE);
	pma_flush(fs->heap, word, sizeof(*word));
}

/* free the inode's pages from page first on (FREE_TAIL, FREE_INODE) */
static int free_pages(struct hdpm_tx *tx, uint64_t ino, uint64_t first)
{
	struct hdpm_fs *fs = tx->fs;
	struct hdpm_inode *inode = hdpm_inode(fs, ino);
	struct hdpm_skip skip = { .skip_ino = ino, .skip_from = first };
	uint64_t *index, p;
	int rc;

	if (!hdpm_block_live(fs, inode->index_off))
		return 0;
	index = hdpm_inode_index(fs, inode);
	for (p = first; index && p < inode->index_cap; p++) {
		if (!index[p])
			continue;
		rc = hdpm_block_free_skip(fs, tx->free_slot, index[p], 1,
					  &skip);
		if (rc < 0)
			return rc;
		hdpm_tx_set(fs, &index[p], 0);
	}
	return 0;
}

static int free_inode(struct hdpm_tx *tx, uint64_t ino)
{
	struct hdpm_fs *fs = tx->fs;
	struct hdpm_inode *inode = hdpm_inode(fs, ino);
	struct hdpm_skip skip = { .skip_ino = ino, .skip_from = 0 };
	int rc;

	rc = free_pages(tx, ino, 0);
	if (rc == 0)
		rc = hdpm_block_free_skip(fs, tx->free_slot, inode->index_off,
					  0, &skip);
	if (rc == 0)
		rc = hdpm_block_free_skip(fs, tx->free_slot, inode->name_off, 0,
					  &skip);
	if (rc < 0)
		return rc;
	hdpm_tx_set(fs, &inode->index_off, 0);
	hdpm_tx_set(fs, &inode->index_cap, 0);
	hdpm_tx_set(fs, &inode->name_off, 0);
	hdpm_tx_set(fs, &inode->size, 0);
	return 0;
}

/* the inode a FREE_* record names, or UINT64_MAX */
static uint64_t rec_ino(struct hdpm_fs *fs, const struct hdpm_rec *rec)
{
	uint64_t k, idx, off, n;

	for (k = 0; k < HDPM_ICHUNKS && fs->ichunk[k]; k++) {
		off = hdpm_off(fs, fs->ichunk[k]);
		n = (uint64_t)1 << (fs->ilog2 + k);
		if (rec->word < off ||
		    rec->word >= off + n * sizeof(struct hdpm_inode) ||
		    (rec->word - off) % sizeof(struct hdpm_inode))
			continue;
		idx = (rec->word - off) / sizeof(struct hdpm_inode);
		return hdpm_ichunk_base(fs, (unsigned)k) + idx;
	}
	return UINT64_MAX;
}

/* free what a committed record replaced */
static int rec_commit(struct hdpm_tx *tx, const struct hdpm_rec *rec)
{
	struct hdpm_fs *fs = tx->fs;
	uint64_t ino;

	switch (rec->kind) {
	case HDPM_REC_PAGE:
	case HDPM_REC_BLOCK:
		/* the word names the new block now: old has no word left */
		return hdpm_block_free(fs, tx->free_slot, rec->old,
				       rec->kind == HDPM_REC_PAGE);
	case HDPM_REC_FREE_TAIL:
	case HDPM_REC_FREE_INODE:
		ino = rec_ino(fs, rec);
		if (ino == UINT64_MAX)
			return util_errmsg_set(EIO,
					       "journal names no inode 0x%llx",
					       (unsigned long long)rec->word);
		return rec->kind == HDPM_REC_FREE_TAIL ?
			       free_pages(tx, ino, rec->old) :
			       free_inode(tx, ino);
	default:
		return 0;
	}
}

/* put a record's word back; a new block in it is freed first */
static int rec_undo(struct hdpm_tx *tx, const struct hdpm_rec *rec)
{
	struct hdpm_fs *fs = tx->fs;
	uint64_t *word = hdpm_direct(fs, rec->word), cur;
	struct hdpm_skip skip = { .skip_ino = UINT64_MAX };
	int rc;

	if (rec->kind == HDPM_REC_FREE_TAIL || rec->kind == HDPM_REC_FREE_INODE)
		return 0;
	if (!word || rec->word % 8)
		return util_errmsg_set(EIO, "journal names bad word 0x%llx",
				       (unsigned long long)rec->word);
	if (rec->kind == HDPM_REC_TAIL) {
		/* the entry at the old tail may be durable even if the tail
		 * is not: void it, or the mount's log check would find it */
		hdpm_tx_set(fs, word, rec->old);
		hdpm_page_void_entry(fs,
				     rec->word - offsetof(struct hdpm_page_hdr,
							  log_tail),
				     rec->old);
		return 0;
	}
	cur = *word;
	if (cur == rec->old)
		return 0;
	if (rec->kind != HDPM_REC_WORD) {
		/* a page made by this operation has no log yet, and its
		 * header may be torn: free the block alone (at mount, unless
		 * a word other than this one names it: freed by a run-time
		 * undo and handed out again) */
		skip.except = word;
		rc = hdpm_block_free_skip(fs, tx->free_slot, cur, 0, &skip);
		if (rc < 0)
			return rc;
	}
	hdpm_tx_set(fs, word, rec->old);
	return 0;
}

int hdpm_block_named(struct hdpm_fs *fs, uint64_t off)
{
	return hdpm_block_named_other(fs, off, NULL);
}

/* does word w (not skipped) name off? */
static int names(const uint64_t *w, uint64_t off, const struct hdpm_skip *skip)
{
	return *w == off && (!skip || w != skip->except);
}

/* does an index entry of inode i from page p on name off (or its log)? */
static int index_names(struct hdpm_fs *fs, uint64_t i, uint64_t off,
		       const struct hdpm_skip *skip)
{
	struct hdpm_inode *in = hdpm_inode(fs, i);
	uint64_t p, *index;

	index = hdpm_block_live(fs, in->index_off) ? hdpm_inode_index(fs, in) :
						     NULL;
	for (p = 0; index && p < in->index_cap; p++) {
		if (!index[p] ||
		    (skip && i == skip->skip_ino && p >= skip->skip_from))
			continue;
		if (names(&index[p], off, skip) ||
		    names(&hdpm_page_hdr(fs, index[p])->log_off, off, skip))
			return 1;
	}
	return 0;
}

int hdpm_block_named_other(struct hdpm_fs *fs, uint64_t off,
			   const struct hdpm_skip *skip)
{
	struct hdpm_inode *in;
	uint64_t i;
	int whole;

	if (names(&fs->sb->itable_off, off, skip) ||
	    names(&fs->sb->jslots_off, off, skip))
		return 1;
	for (i = 0; i < HDPM_ICHUNKS - 1; i++)
		if (names(&fs->sb->itable_more[i], off, skip))
			return 1;
	for (i = 0; i < fs->ninodes; i++) {
		in = hdpm_inode(fs, i);
		/* FREE_INODE frees the inode's own name and index */
		whole = skip && i == skip->skip_ino && skip->skip_from == 0;
		if (!whole && (names(&in->name_off, off, skip) ||
			       names(&in->index_off, off, skip)))
			return 1;
		if (index_names(fs, i, off, skip))
			return 1;
	}
	return 0;
}

/* ------------------------------------------------------------ orphans */

/* the blocks the file system names, sorted (the orphan sweep) */
struct named_set {
	uint64_t *off;
	size_t n, cap;
	int enomem;
};

static void named_add(struct named_set *ns, uint64_t off)
{
	uint64_t *p;

	if (!off || ns->enomem)
		return;
	if (ns->n == ns->cap) {
		ns->cap = ns->cap ? 2 * ns->cap : 1024;
		p = realloc(ns->off, ns->cap * sizeof(*p));
		if (!p) {
			ns->enomem = 1;
			return;
		}
		ns->off = p;
	}
	ns->off[ns->n++] = off;
}

static int off_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* every word hdpm_block_named_other looks at, and the superblock (the
 * heap's root object) */
static int named_build(struct hdpm_fs *fs, struct named_set *ns)
{
	struct hdpm_inode *in;
	uint64_t i, p, *index;

	named_add(ns, hdpm_off(fs, fs->sb));
	named_add(ns, fs->sb->itable_off);
	named_add(ns, fs->sb->jslots_off);
	for (i = 0; i < HDPM_ICHUNKS - 1; i++)
		named_add(ns, fs->sb->itable_more[i]);
	for (i = 0; i < fs->ninodes; i++) {
		in = hdpm_inode(fs, i);
		named_add(ns, in->name_off);
		named_add(ns, in->index_off);
		index = hdpm_block_live(fs, in->index_off) ?
				hdpm_inode_index(fs, in) :
				NULL;
		for (p = 0; index && p < in->index_cap; p++) {
			if (!index[p])
				continue;
			named_add(ns, index[p]);
			named_add(ns, hdpm_page_hdr(fs, index[p])->log_off);
		}
	}
	if (ns->enomem)
		return util_errmsg_set(ENOMEM, "out of memory");
	qsort(ns->off, ns->n, sizeof(*ns->off), off_cmp);
	return 0;
}

struct orphans {
	const struct named_set *named;
	struct named_set found; /* live blocks no word names */
};

static int orphan_note(uint64_t off, uint64_t size, void *arg)
{
	struct orphans *o = arg;

	(void)size;
	if (!bsearch(&off, o->named->off, o->named->n, sizeof(off), off_cmp))
		named_add(&o->found, off);
	return o->found.enomem ? -ENOMEM : 0;
}

/*
 * Free every live block of the heap that no word of the file system names
 * (through the never-freed word fw). Only after every journal is undone or
 * committed: until then the old block of a journaled word is named by no
 * word either. The heap is the file system's alone (its root object is
 * the superblock), so such a block is one an interrupted allocation left.
 */
static int orphans_sweep(struct hdpm_fs *fs, uint64_t *fw)
{
	struct named_set named = { 0 };
	struct orphans o = { .named = &named };
	size_t i;
	int rc;

	rc = named_build(fs, &named);
	if (rc == 0) {
		rc = pma_block_foreach(fs->heap, orphan_note, &o);
		if (rc < 0)
			rc = util_errmsg_set(-rc, "orphan sweep: %s",
					     pma_errormsg());
	}
	/* one by one: a page's log is a block of its own, named by no word
	 * either (a new page has none yet, and its header may be torn) */
	for (i = 0; rc == 0 && i < o.found.n; i++)
		rc = block_free_one(fs, fw, o.found.off[i]);
	free(named.off);
	free(o.found.off);
	return rc;
}

/*
 * An allocation that happened but never reached its word must be freed
 * at mount, and alloc_slot does not always name it. The allocator's
 * recovery stores each arena's last allocations into their dest words
 * again, arena by arena, not in time order: an OLDER allocation into
 * alloc_slot is put back if its arena comes later (a thread of another
 * arena used the slot before, or an allocation borrowed another arena's
 * block), and that block is named by a committed word; the new one is then
 * named by nothing at all, and the allocator's logs that knew it are gone
 * once the heap is open. So a slot whose intent says an allocation may
 * have been in flight stays ACTIVE after its records are undone (a
 * re-crash undoes them again: the undo is idempotent), and once every
 * journal is recovered, hdpm_recover_orphans sweeps the heap for live
 * blocks no word names, frees them, and only then lets the slot go. The
 * sweep runs only after a crash inside an operation that had an
 * allocation in flight.
 */
static int intent_valid(struct hdpm_tx *tx, uint64_t seq, unsigned nrecs)
{
	const struct hdpm_intent *in = tx->intent;
	unsigned r = (unsigned)(in->tag & 0xffff);

	return in->crc == intent_crc(in) && in->tag >> 16 == seq && r < nrecs;
}

int hdpm_recover_orphans(struct hdpm_fs *fs)
{
	uint64_t *fw = &fs->sb->gc_free_slot;
	unsigned i;
	int rc, any = fs->gc_orphans;

	for (i = 0; i < fs->ntx; i++)
		if (fs->tx[i].orphans) {
			any = 1;
			fw = fs->tx[i].free_slot;
		}
	if (!any)
		return 0;
	rc = orphans_sweep(fs, fw);
	if (rc < 0)
		return rc;
	/* the frees are durable before the journals let go */
	pma_drain(fs->heap);
	for (i = 0; i < fs->ntx; i++) {
		if (!fs->tx[i].orphans)
			continue;
		fs->tx[i].orphans = 0;
		jstate_set(&fs->tx[i], HDPM_J_IDLE, hdpm_jseq(&fs->tx[i]));
	}
	if (fs->gc_orphans) {
		fs->gc_orphans = 0;
		hdpm_gc_rec_clear(fs);
	}
	return 0;
}

static unsigned valid_recs(struct hdpm_tx *tx, uint64_t seq)
{
	unsigned n = 0;

	while (n < HDPM_TX_MAX && rec_valid(&tx->recs[n], seq))
		n++;
	return n;
}

/* undo the slot's operation */
static int undo_all(struct hdpm_tx *tx, int at_mount)
{
	uint64_t seq = hdpm_jseq(tx);
	unsigned n = valid_recs(tx, seq), i;
	int rc = 0;

	for (i = n; rc == 0 && i-- > 0;)
		rc = rec_undo(tx, &tx->recs[i]);
	if (rc < 0)
		return rc;
	/* the restored words are durable before the journal lets go */
	pma_drain(tx->fs->heap);
	/* an allocation in flight: ACTIVE until the orphan sweep */
	if (at_mount && intent_valid(tx, seq, n))
		tx->orphans = 1;
	else
		jstate_set(tx, HDPM_J_IDLE, seq);
	return 0;
}

/* run the commit actions */
static int commit_all(struct hdpm_tx *tx)
{
	uint64_t seq = hdpm_jseq(tx);
	unsigned n = valid_recs(tx, seq), i;
	int rc = 0;

	for (i = 0; rc == 0 && i < n; i++)
		rc = rec_commit(tx, &tx->recs[i]);
	if (rc < 0)
		return rc;
	pma_drain(tx->fs->heap);
	jstate_set(tx, HDPM_J_IDLE, seq);
	return 0;
}

static void slot_give(struct hdpm_tx *tx)
{
	hdpm_gc_release_all(tx->fs);
	pthread_mutex_unlock(&tx->lock);
}

int hdpm_tx_commit(struct hdpm_tx *tx)
{
	struct hdpm_fs *fs = tx->fs;
	uint64_t seq = hdpm_jseq(tx);
	int rc;

	/* every change of the operation is durable before it commits */
	pma_drain(fs->heap);
	if (!tx->tx_frees) {
		jstate_set(tx, HDPM_J_IDLE, seq);
		slot_give(tx);
		return 0;
	}
	jstate_set(tx, HDPM_J_COMMITTED, seq);
	rc = commit_all(tx);
	if (rc < 0)
		util_err("hdpm: commit actions of tx %llu failed: %s",
			 (unsigned long long)seq, util_errmsg());
	slot_give(tx);
	return rc;
}

void hdpm_tx_abort(struct hdpm_tx *tx)
{
	if (undo_all(tx, 0) < 0)
		util_err("hdpm: undo of tx %llu failed: %s",
			 (unsigned long long)hdpm_jseq(tx), util_errmsg());
	slot_give(tx);
}

static int slot_recover(struct hdpm_tx *tx)
{
	switch (*tx->jstate & 0xff) {
	case HDPM_J_IDLE:
		return 0;
	case HDPM_J_ACTIVE:
		hdpm_stat_add(tx->fs, rollbacks, 1);
		return undo_all(tx, 1);
	case HDPM_J_COMMITTED:
		hdpm_stat_add(tx->fs, rollforwards, 1);
		return commit_all(tx);
	default:
		return util_errmsg_set(EIO, "bad journal state 0x%llx",
				       (unsigned long long)*tx->jstate);
	}
}

/*
 * Each slot's operation changed words no other one did (their locks), so
 * the slots are recovered one by one, in any order: an undo frees only
 * blocks its slot allocated, a commit only blocks its words named, each
 * unless another word names it now (fs->recovering).
 */
int hdpm_tx_recover(struct hdpm_fs *fs)
{
	unsigned i;
	int rc;

	for (i = 0; i < fs->ntx; i++) {
		rc = slot_recover(&fs->tx[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int hdpm_tx_pending(struct hdpm_fs *fs)
{
	unsigned i;
	int busy = 0;

	/* between operations: each slot's lock in turn */
	for (i = 0; i < fs->ntx; i++) {
		pthread_mutex_lock(&fs->tx[i].lock);
		busy |= (*fs->tx[i].jstate & 0xff) != HDPM_J_IDLE;
		pthread_mutex_unlock(&fs->tx[i].lock);
	}
	return busy;
}
