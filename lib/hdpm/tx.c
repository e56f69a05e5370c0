/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpm tx: the undo journal that makes every multi-word operation atomic.
 *
 * An operation: begin (jstate = ACTIVE with a new seq), then for every
 * word it changes a record {word, old value} made durable BEFORE the word
 * changes; new blocks go through the superblock's alloc_slot (intent
 * first) into a journaled word. Commit: one fence makes every change
 * durable, then jstate = COMMITTED (if there are frees to do) and the
 * commit actions free what the operation replaced, then jstate = IDLE.
 * A crash while ACTIVE is undone from the records; a crash while
 * COMMITTED re-runs the commit actions, which skip blocks no longer live
 * (nothing is allocated in between, so a dead block stays dead).
 */
#include <string.h>

#include "hdpm/internal.h"
#include "util/crc.h"
#include "util/errmsg.h"
#include "util/log.h"

uint64_t hdpm_jseq(const struct hdpm_fs *fs)
{
	return fs->sb->jstate >> 8;
}

static void jstate_set(struct hdpm_fs *fs, enum hdpm_jstate st, uint64_t seq)
{
	/* one 8-byte store: the state and its seq change together */
	__atomic_store_n(&fs->sb->jstate, seq << 8 | st, __ATOMIC_RELEASE);
	pma_persist(fs->heap, &fs->sb->jstate, sizeof(fs->sb->jstate));
}

int hdpm_block_live(struct hdpm_fs *fs, uint64_t off)
{
	return off && pma_usable_size(fs->heap, off) != 0;
}

/* free one live block through free_slot */
static int block_free_one(struct hdpm_fs *fs, uint64_t off)
{
	if (!hdpm_block_live(fs, off))
		return 0;
	/* free_slot names only live blocks when stored: the allocator's redo
	 * of an older free on it keeps such a value */
	fs->sb->free_slot = off;
	pma_persist(fs->heap, &fs->sb->free_slot, sizeof(uint64_t));
	return pma_free_from(fs->heap, &fs->sb->free_slot);
}

int hdpm_block_free(struct hdpm_fs *fs, uint64_t off, int is_page)
{
	int rc;

	if (!hdpm_block_live(fs, off))
		return 0;
	if (is_page) {
		/* the log first: the page names it */
		rc = block_free_one(fs, hdpm_page_hdr(fs, off)->log_off);
		if (rc < 0)
			return rc;
	}
	return block_free_one(fs, off);
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

void hdpm_tx_begin(struct hdpm_fs *fs)
{
	pthread_mutex_lock(&fs->tx_lock);
	fs->nrecs = 0;
	fs->tx_frees = 0;
	hdpm_stat_add(fs, txs, 1);
	/* the background GC publishes nothing while this runs */
	hdpm_gc_claim_all(fs);
	jstate_set(fs, HDPM_J_ACTIVE, hdpm_jseq(fs) + 1);
}

static int rec_add(struct hdpm_fs *fs, enum hdpm_rec_kind kind, uint64_t word,
		   uint64_t old)
{
	struct hdpm_rec *rec;

	if (fs->nrecs >= HDPM_TX_MAX)
		return util_errmsg_set(E2BIG,
				       "operation needs more than %u "
				       "journal records",
				       HDPM_TX_MAX);
	rec = &fs->sb->recs[fs->nrecs];
	rec->kind = kind;
	rec->seq = hdpm_jseq(fs);
	rec->word = word;
	rec->old = old;
	rec->crc = 0;
	rec->crc = rec_crc(rec);
	/* the record must be durable before its word changes */
	pma_persist(fs->heap, rec, sizeof(*rec));
	fs->nrecs++;
	/* commit actions: free what a block word held (a word that held
	 * no block has nothing to free: no COMMITTED state for it), and
	 * the pages of a truncated or removed file */
	if (kind == HDPM_REC_FREE_TAIL || kind == HDPM_REC_FREE_INODE ||
	    (kind != HDPM_REC_WORD && kind != HDPM_REC_TAIL && old != 0))
		fs->tx_frees = 1;
	return 0;
}

int hdpm_tx_log(struct hdpm_fs *fs, enum hdpm_rec_kind kind, uint64_t *word)
{
	return rec_add(fs, kind, hdpm_off(fs, word), *word);
}

int hdpm_tx_log_free(struct hdpm_fs *fs, enum hdpm_rec_kind kind, uint64_t ino,
		     uint64_t first)
{
	return rec_add(fs, kind, hdpm_off(fs, hdpm_inode(fs, ino)), first);
}

static uint32_t intent_crc(const struct hdpm_intent *in)
{
	struct hdpm_intent i = *in;

	i.crc = 0;
	return util_crc32c(0, &i, sizeof(i));
}

int hdpm_tx_alloc(struct hdpm_fs *fs, size_t size, uint64_t *word)
{
	struct hdpm_intent *in = &fs->sb->intent;
	int rc;

	in->before = fs->sb->alloc_slot;
	in->before_live = hdpm_block_live(fs, in->before);
	in->tag = hdpm_jseq(fs) << 16 | (fs->nrecs - 1);
	in->crc = intent_crc(in);
	/* the intent is durable before the allocation can be */
	pma_persist(fs->heap, in, sizeof(*in));
	rc = pma_malloc_to(fs->heap, size, &fs->sb->alloc_slot);
	if (rc < 0)
		return util_errmsg_set(ENOSPC, "no space for %zu bytes: %s",
				       size, pma_errormsg());
	hdpm_tx_set(fs, word, fs->sb->alloc_slot);
	return 0;
}

void hdpm_tx_set(struct hdpm_fs *fs, uint64_t *word, uint64_t value)
{
	__atomic_store_n(word, value, __ATOMIC_RELEASE);
	pma_flush(fs->heap, word, sizeof(*word));
}

/* free the inode's pages from page first on (FREE_TAIL, FREE_INODE) */
static int free_pages(struct hdpm_fs *fs, struct hdpm_inode *inode,
		      uint64_t first)
{
	uint64_t *index, p;
	int rc;

	if (!hdpm_block_live(fs, inode->index_off))
		return 0;
	index = hdpm_inode_index(fs, inode);
	for (p = first; index && p < inode->index_cap; p++) {
		if (!index[p])
			continue;
		rc = hdpm_block_free(fs, index[p], 1);
		if (rc < 0)
			return rc;
		hdpm_tx_set(fs, &index[p], 0);
	}
	return 0;
}

static int free_inode(struct hdpm_fs *fs, struct hdpm_inode *inode)
{
	int rc;

	rc = free_pages(fs, inode, 0);
	if (rc == 0)
		rc = hdpm_block_free(fs, inode->index_off, 0);
	if (rc == 0)
		rc = hdpm_block_free(fs, inode->name_off, 0);
	if (rc < 0)
		return rc;
	hdpm_tx_set(fs, &inode->index_off, 0);
	hdpm_tx_set(fs, &inode->index_cap, 0);
	hdpm_tx_set(fs, &inode->name_off, 0);
	hdpm_tx_set(fs, &inode->size, 0);
	return 0;
}

/* free what a committed record replaced */
static int rec_commit(struct hdpm_fs *fs, const struct hdpm_rec *rec)
{
	struct hdpm_inode *inode = hdpm_direct(fs, rec->word);

	switch (rec->kind) {
	case HDPM_REC_PAGE:
	case HDPM_REC_BLOCK:
		return hdpm_block_free(fs, rec->old,
				       rec->kind == HDPM_REC_PAGE);
	case HDPM_REC_FREE_TAIL:
		return inode ? free_pages(fs, inode, rec->old) : -EIO;
	case HDPM_REC_FREE_INODE:
		return inode ? free_inode(fs, inode) : -EIO;
	default:
		return 0;
	}
}

/* put a record's word back; a new block in it is freed first */
static int rec_undo(struct hdpm_fs *fs, const struct hdpm_rec *rec)
{
	uint64_t *word = hdpm_direct(fs, rec->word), cur;
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
		 * header may be torn: free the block alone */
		rc = hdpm_block_free(fs, cur, 0);
		if (rc < 0)
			return rc;
	}
	hdpm_tx_set(fs, word, rec->old);
	return 0;
}

int hdpm_block_named(struct hdpm_fs *fs, uint64_t off)
{
	struct hdpm_inode *in;
	uint64_t i, p, *index;

	if (off == fs->sb->itable_off)
		return 1;
	for (i = 0; i < HDPM_ICHUNKS - 1; i++)
		if (off == fs->sb->itable_more[i])
			return 1;
	for (i = 0; i < fs->ninodes; i++) {
		in = hdpm_inode(fs, i);
		if (in->name_off == off || in->index_off == off)
			return 1;
		index = hdpm_block_live(fs, in->index_off) ?
				hdpm_inode_index(fs, in) :
				NULL;
		for (p = 0; index && p < in->index_cap; p++)
			if (index[p] &&
			    (index[p] == off ||
			     hdpm_page_hdr(fs, index[p])->log_off == off))
				return 1;
	}
	return 0;
}

/*
 * An allocation that happened but never reached its word: free it. The
 * allocator's recovery may have put an OLDER allocation back into
 * alloc_slot (it redoes the dest of the last live allocation it logged
 * there), and that block is named by a committed word: so a live block in
 * alloc_slot is freed only if no word names it. That scan runs only here,
 * after a crash inside an operation that had an allocation in flight.
 */
static int undo_intent(struct hdpm_fs *fs, uint64_t seq, unsigned nrecs)
{
	const struct hdpm_intent *in = &fs->sb->intent;
	uint64_t cur = fs->sb->alloc_slot;
	unsigned r = (unsigned)(in->tag & 0xffff);

	if (in->crc != intent_crc(in) || in->tag >> 16 != seq || r >= nrecs)
		return 0;
	if (!hdpm_block_live(fs, cur))
		return 0;
	if (cur == in->before && in->before_live)
		return 0; /* no allocation since the intent */
	if (hdpm_block_named(fs, cur))
		return 0; /* in its word (rec_undo frees it) or older */
	return hdpm_block_free(fs, cur, 0);
}

static unsigned valid_recs(struct hdpm_fs *fs, uint64_t seq)
{
	unsigned n = 0;

	while (n < HDPM_TX_MAX && rec_valid(&fs->sb->recs[n], seq))
		n++;
	return n;
}

static int undo_all(struct hdpm_fs *fs)
{
	uint64_t seq = hdpm_jseq(fs);
	unsigned n = valid_recs(fs, seq), i;
	int rc;

	rc = undo_intent(fs, seq, n);
	for (i = n; rc == 0 && i-- > 0;)
		rc = rec_undo(fs, &fs->sb->recs[i]);
	if (rc < 0)
		return rc;
	/* the restored words are durable before the journal lets go */
	pma_drain(fs->heap);
	jstate_set(fs, HDPM_J_IDLE, seq);
	return 0;
}

static int commit_all(struct hdpm_fs *fs)
{
	uint64_t seq = hdpm_jseq(fs);
	unsigned n = valid_recs(fs, seq), i;
	int rc = 0;

	for (i = 0; rc == 0 && i < n; i++)
		rc = rec_commit(fs, &fs->sb->recs[i]);
	if (rc < 0)
		return rc;
	pma_drain(fs->heap);
	jstate_set(fs, HDPM_J_IDLE, seq);
	return 0;
}

int hdpm_tx_commit(struct hdpm_fs *fs)
{
	uint64_t seq = hdpm_jseq(fs);
	int rc;

	/* every change of the operation is durable before it commits */
	pma_drain(fs->heap);
	if (!fs->tx_frees) {
		jstate_set(fs, HDPM_J_IDLE, seq);
		hdpm_gc_release_all(fs);
		pthread_mutex_unlock(&fs->tx_lock);
		return 0;
	}
	jstate_set(fs, HDPM_J_COMMITTED, seq);
	rc = commit_all(fs);
	if (rc < 0)
		util_err("hdpm: commit actions of tx %llu failed: %s",
			 (unsigned long long)seq, util_errmsg());
	hdpm_gc_release_all(fs);
	pthread_mutex_unlock(&fs->tx_lock);
	return rc;
}

void hdpm_tx_abort(struct hdpm_fs *fs)
{
	if (undo_all(fs) < 0)
		util_err("hdpm: undo of tx %llu failed: %s",
			 (unsigned long long)hdpm_jseq(fs), util_errmsg());
	hdpm_gc_release_all(fs);
	pthread_mutex_unlock(&fs->tx_lock);
}

int hdpm_tx_recover(struct hdpm_fs *fs)
{
	switch (fs->sb->jstate & 0xff) {
	case HDPM_J_IDLE:
		return 0;
	case HDPM_J_ACTIVE:
		hdpm_stat_add(fs, rollbacks, 1);
		return undo_all(fs);
	case HDPM_J_COMMITTED:
		hdpm_stat_add(fs, rollforwards, 1);
		return commit_all(fs);
	default:
		return util_errmsg_set(EIO, "bad journal state 0x%llx",
				       (unsigned long long)fs->sb->jstate);
	}
}
