/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * HDPM fsck (fsck.h): the walk of a file system in a heap, from the
 * superblock down (journals, inodes, names, indexes, pages, logs), with
 * every block it finds named recorded with its owner, so that a block
 * named twice is found after the walk, and every named block asked of
 * the allocator (pma_usable_size): named but free is damage; live but
 * named by nothing is a leak (reported, never reclaimed: leaks_fsck).
 *
 * A crash leaves the words an operation journaled in flux: while the
 * journal is ACTIVE or COMMITTED, an inode or page header holding a
 * journaled word, and an inode named by a FREE_TAIL / FREE_INODE record,
 * may be half-way (the mount undoes or finishes them): their liveness
 * findings are not made (the walk of a private view after recovery,
 * --recovery, checks them). The log entry checks repeat page.c's (the
 * layout, layout.h, defines them): an entry is valid iff its seq is 1 +
 * its position / 16, its data lies inside the page and inside its log
 * segment, and its crc (seeded with the page offset, over the nonce, the
 * header with crc 0 and the data) matches.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hdpm/fsck.h"
#include "hdpm/internal.h"
#include "pmalloc/fsck.h"
#include "pmalloc/internal.h"
#include "pool/pool.h"
#include "util/crc.h"
#include "util/errmsg.h"

/* a block some word names, and which word */
struct owner {
	uint64_t off; /* the block (pool offset) */
	uint64_t ino; /* the inode it belongs to (~0: none) */
	uint64_t page; /* its page index (pages, log chunks) */
	const char *what; /* "page", "page log chunk", "name", ... */
};

struct hfsck {
	struct pma_heap *heap;
	struct pool_fsck_sink *sink;
	const struct hdpm_super *sb;
	uint64_t sb_off;
	/* the inode table's chunks: chunk k holds n0 << k inodes */
	const struct hdpm_inode *ichunk[HDPM_ICHUNKS];
	uint64_t chunk_off[HDPM_ICHUNKS];
	unsigned ilog2, nchunks;
	uint64_t ninodes;
	int busy; /* the journal is ACTIVE or COMMITTED */
	uint64_t *journaled; /* busy: the words its records name, sorted */
	size_t njournaled;
	uint64_t *freeing; /* busy: inodes named by FREE_TAIL / FREE_INODE */
	size_t nfreeing;
	struct owner *owners;
	size_t nowners, cap;
	int errors;
	/* repair: the stores (pool offset, value), or NULL */
	uint64_t (*stores)[2];
	size_t nstores, cstores;
	int planning; /* a repair: record the stores */
	unsigned flags; /* HDPM_FSCK_* */
	struct pool_fsck_sink *notes;
	/* a repair that frees the leaks (or a dry run that lists them):
	 * leak_notes set, the leaked blocks found (pool offsets), the
	 * first ones noted ("repair-hdpm-block-leaked") */
	uint64_t *leaked;
	size_t nleaked, cleaked;
	int leak_notes;
};

static int report(struct hfsck *h, const char *code,
		  enum pool_fsck_severity sev, unsigned flags, uint64_t off,
		  const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int report(struct hfsck *h, const char *code,
		  enum pool_fsck_severity sev, unsigned flags, uint64_t off,
		  const char *fmt, ...)
{
	char msg[2 * UTIL_ERRMSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	/* va_start is right above (an analyzer false positive) */
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (sev == POOL_FSCK_ERROR)
		h->errors++;
	return pool_fsck_report_flags(h->sink, code, sev, flags,
				      pool_off_part(off), pool_off_byte(off),
				      "%s", msg);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* a live block of at least min bytes at off? */
static int live(struct hfsck *h, uint64_t off, size_t min)
{
	size_t n = off ? pma_usable_size(h->heap, off) : 0;

	return n && n >= min;
}

/* the mapped bytes [off, off + len) of the pool, or NULL */
static const void *at(struct hfsck *h, uint64_t off, size_t len)
{
	const char *p = off ? pma_direct(h->heap, off) : NULL;

	if (!p || !pma_direct(h->heap, off + len - 1))
		return NULL;
	return p;
}

/* is one of the words [off, off + len) journaled by a busy journal? */
static int in_flux(const struct hfsck *h, uint64_t off, uint64_t len)
{
	size_t lo = 0, hi = h->njournaled, mid;

	while (lo < hi) { /* the first journaled word >= off */
		mid = (lo + hi) / 2;
		if (h->journaled[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < h->njournaled && h->journaled[lo] < off + len;
}

static int inode_freeing(const struct hfsck *h, uint64_t ino)
{
	return h->nfreeing && bsearch(&ino, h->freeing, h->nfreeing,
				      sizeof(*h->freeing), cmp_u64) != NULL;
}

/* inode ino's chunk and index in it */
static unsigned ichunk_of(const struct hfsck *h, uint64_t ino, uint64_t *idx)
{
	uint64_t q = (ino >> h->ilog2) + 1;
	unsigned k = 63u - (unsigned)__builtin_clzll(q);

	*idx = ino - ((((uint64_t)1 << k) - 1) << h->ilog2);
	return k;
}

static const struct hdpm_inode *h_inode(const struct hfsck *h, uint64_t ino)
{
	uint64_t idx;
	unsigned k = ichunk_of(h, ino, &idx);

	return &h->ichunk[k][idx];
}

static uint64_t inode_off(const struct hfsck *h, uint64_t ino)
{
	uint64_t idx;
	unsigned k = ichunk_of(h, ino, &idx);

	return h->chunk_off[k] + idx * sizeof(struct hdpm_inode);
}

/* the inode whose slot starts at pool offset off, or UINT64_MAX */
static uint64_t inode_at(const struct hfsck *h, uint64_t off)
{
	uint64_t n, base = 0;
	unsigned k;

	for (k = 0; k < h->nchunks; k++) {
		n = (uint64_t)1 << (h->ilog2 + k);
		if (off >= h->chunk_off[k] &&
		    off < h->chunk_off[k] + n * sizeof(struct hdpm_inode) &&
		    (off - h->chunk_off[k]) % sizeof(struct hdpm_inode) == 0)
			return base + (off - h->chunk_off[k]) /
					      sizeof(struct hdpm_inode);
		base += n;
	}
	return UINT64_MAX;
}

/* an inode whose fields a busy journal may hold half-way (not one past
 * the table: a damaged parent number) */
static int inode_flux(const struct hfsck *h, uint64_t ino)
{
	return h->busy && ino < h->ninodes &&
	       (inode_freeing(h, ino) ||
		in_flux(h, inode_off(h, ino), sizeof(struct hdpm_inode)));
}

static int push_u64(uint64_t **a, size_t *n, size_t *cap, uint64_t v)
{
	uint64_t *more;
	size_t c;

	if (*n == *cap) {
		c = *cap ? 2 * *cap : 64;
		more = realloc(*a, c * sizeof(*more));
		if (!more)
			return util_errmsg_set(ENOMEM, "out of memory");
		*a = more;
		*cap = c;
	}
	(*a)[(*n)++] = v;
	return 0;
}

static int own(struct hfsck *h, uint64_t off, uint64_t ino, uint64_t page,
	       const char *what)
{
	struct owner *more;
	size_t c;

	if (h->nowners == h->cap) {
		c = h->cap ? 2 * h->cap : 256;
		more = realloc(h->owners, c * sizeof(*more));
		if (!more)
			return util_errmsg_set(ENOMEM, "out of memory");
		h->owners = more;
		h->cap = c;
	}
	h->owners[h->nowners++] = (struct owner){ off, ino, page, what };
	return 0;
}

/* a store of the repair (none without a plan); 0 or -ENOMEM */
static int plan_store(struct hfsck *h, uint64_t off, uint64_t value)
{
	uint64_t(*more)[2];
	size_t c;

	if (!h->planning)
		return 0;
	if (h->nstores == h->cstores) {
		c = h->cstores ? 2 * h->cstores : 16;
		more = realloc(h->stores, c * sizeof(*more));
		if (!more)
			return util_errmsg_set(ENOMEM, "out of memory");
		h->stores = more;
		h->cstores = c;
	}
	h->stores[h->nstores][0] = off;
	h->stores[h->nstores++][1] = value;
	return 0;
}

static int note(struct hfsck *h, const char *code, uint64_t off,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int note(struct hfsck *h, const char *code, uint64_t off,
		const char *fmt, ...)
{
	char msg[2 * UTIL_ERRMSG_MAX];
	va_list ap;

	if (!h->notes)
		return 0;
	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return pool_fsck_report(h->notes, code, POOL_FSCK_INFO,
				pool_off_part(off), pool_off_byte(off), "%s",
				msg);
}

/* ------------------------------------------------------------ journals */

static uint32_t rec_crc(const struct hdpm_rec *rec)
{
	struct hdpm_rec r = *rec;

	r.crc = 0;
	return util_crc32c(0, &r, sizeof(r));
}

#define GC_REC_SIZE offsetof(struct hdpm_gc_journal, nretire)

static uint32_t gc_crc(const struct hdpm_gc_journal *j)
{
	struct hdpm_gc_journal r;

	memcpy(&r, j, GC_REC_SIZE);
	r.crc = 0;
	return util_crc32c(0, &r, GC_REC_SIZE);
}

static const char *const state_names[] = { "idle", "active", "committed" };

/* journal slot i (0: the superblock's words; 1..: the jslots block) */
struct jslot_view {
	const uint64_t *jstate;
	const uint64_t *alloc_slot;
	const struct hdpm_rec *recs;
	uint64_t jstate_off, recs_off; /* pool offsets, for the findings */
};

/* slot i of the file system, 0 if it has no such slot */
static int jslot_get(struct hfsck *h, unsigned i, struct jslot_view *v)
{
	const struct hdpm_super *sb = h->sb;
	const struct hdpm_jslots *js;
	uint64_t off;

	if (i == 0) {
		v->jstate = &sb->jstate;
		v->alloc_slot = &sb->alloc_slot;
		v->recs = sb->recs;
		v->jstate_off = h->sb_off + offsetof(struct hdpm_super, jstate);
		v->recs_off = h->sb_off + offsetof(struct hdpm_super, recs);
		return 1;
	}
	if (sb->version < 4 || i >= HDPM_JSLOTS)
		return 0;
	js = at(h, sb->jslots_off, sizeof(*js));
	if (!js)
		return 0;
	off = sb->jslots_off + (i - 1) * sizeof(struct hdpm_jslot);
	v->jstate = &js->slot[i - 1].jstate;
	v->alloc_slot = &js->slot[i - 1].alloc_slot;
	v->recs = js->slot[i - 1].recs;
	v->jstate_off = off + offsetof(struct hdpm_jslot, jstate);
	v->recs_off = off + offsetof(struct hdpm_jslot, recs);
	return 1;
}

/* one journal slot: its state, and its records' kinds and words */
static int jslot_fsck(struct hfsck *h, unsigned slot,
		      const struct jslot_view *v, size_t *cj, size_t *cf)
{
	uint64_t st = *v->jstate & 0xff, seq = *v->jstate >> 8;
	unsigned n;
	int rc = 0;

	if (st > HDPM_J_COMMITTED)
		return report(h, "hdpm-journal-state", POOL_FSCK_ERROR, 0,
			      v->jstate_off,
			      "HDPM journal slot %u state word 0x%llx names "
			      "no state: the mount refuses the file system",
			      slot, (unsigned long long)*v->jstate);
	if (st == HDPM_J_IDLE)
		return 0;
	h->busy = 1;
	for (n = 0; rc == 0 && n < HDPM_TX_MAX; n++) {
		const struct hdpm_rec *r = &v->recs[n];

		if (r->seq != seq || r->crc != rec_crc(r))
			break;
		if (r->kind < HDPM_REC_WORD || r->kind > HDPM_REC_TAIL ||
		    !at(h, r->word, 8) || r->word % 8) {
			rc = report(h, "hdpm-journal-record", POOL_FSCK_ERROR,
				    0, v->recs_off + n * sizeof(*r),
				    "HDPM journal slot %u record %u (kind %u) "
				    "names word 0x%llx: not a record the mount "
				    "can %s",
				    slot, n, r->kind,
				    (unsigned long long)r->word,
				    st == HDPM_J_ACTIVE ? "undo" : "commit");
			continue;
		}
		/* an undo leaves the inode a free record names alone
		 * (tx.c rec_undo): only a commit frees its blocks */
		if (st == HDPM_J_ACTIVE && (r->kind == HDPM_REC_FREE_TAIL ||
					    r->kind == HDPM_REC_FREE_INODE))
			continue;
		rc = push_u64(&h->journaled, &h->njournaled, cj, r->word);
		if (rc == 0 &&
		    (r->kind == HDPM_REC_FREE_TAIL ||
		     r->kind == HDPM_REC_FREE_INODE) &&
		    inode_at(h, r->word) != UINT64_MAX)
			rc = push_u64(&h->freeing, &h->nfreeing, cf,
				      inode_at(h, r->word));
	}
	if (rc < 0)
		return rc;
	return report(h, "hdpm-journal-pending", POOL_FSCK_INFO, 0,
		      v->jstate_off,
		      "HDPM journal slot %u: operation %llu is %s with %u "
		      "records (a crash inside it): the mount %s it",
		      slot, (unsigned long long)seq, state_names[st], n,
		      st == HDPM_J_ACTIVE ? "undoes" : "finishes");
}

/* the operation journals (every slot) */
static int journal_fsck(struct hfsck *h)
{
	struct jslot_view v;
	size_t cj = 0, cf = 0;
	unsigned i;
	int rc = 0;

	for (i = 0; rc == 0 && jslot_get(h, i, &v); i++)
		rc = jslot_fsck(h, i, &v, &cj, &cf);
	if (rc < 0)
		return rc;
	if (h->njournaled)
		qsort(h->journaled, h->njournaled, sizeof(uint64_t), cmp_u64);
	if (h->nfreeing)
		qsort(h->freeing, h->nfreeing, sizeof(uint64_t), cmp_u64);
	return 0;
}

/* a journal slot's valid records: those of its operation's seq, up to
 * the first that is not */
static unsigned jslot_records(const struct jslot_view *v, uint64_t seq)
{
	unsigned n;

	for (n = 0; n < HDPM_TX_MAX; n++)
		if (v->recs[n].seq != seq ||
		    v->recs[n].crc != rec_crc(&v->recs[n]))
			break;
	return n;
}

/* the background GC's journal: its record, its retire list */
static int gc_journal_fsck(struct hfsck *h)
{
	const struct hdpm_gc_journal *j = &h->sb->gc;
	uint64_t off = h->sb_off + offsetof(struct hdpm_super, gc), i;
	int rc = 0;

	if (j->nretire > HDPM_GC_BATCH_MAX)
		return report(h, "hdpm-gc-journal", POOL_FSCK_ERROR, 0,
			      off + offsetof(struct hdpm_gc_journal, nretire),
			      "HDPM GC journal lists %llu pages to retire (at "
			      "most %u): the mount refuses the file system",
			      (unsigned long long)j->nretire,
			      HDPM_GC_BATCH_MAX);
	for (i = 0; rc == 0 && i < j->nretire; i++)
		/* freed at the mount if still live; a dead one stays dead */
		if (live(h, j->retire[i], 1))
			rc = own(h, j->retire[i], ~0ULL, 0,
				 "GC retire list entry");
	if (rc == 0 && (j->nretire || ((j->state & 0xff) == HDPM_GC_BUILD &&
				       j->crc == gc_crc(j))))
		rc = report(h, "hdpm-gc-pending", POOL_FSCK_INFO, 0, off,
			    "HDPM GC journal: %s%llu retired pages to free "
			    "(a crash inside a background merge): the mount "
			    "finishes it",
			    (j->state & 0xff) == HDPM_GC_BUILD ?
				    "a merge being built, " :
				    "",
			    (unsigned long long)j->nretire);
	return rc;
}

/* ------------------------------------------------------------ logs */

struct log_view {
	uint64_t page_off, nonce;
	const char *inl, *chunk;
};

static unsigned ent_size(unsigned len)
{
	return (unsigned)sizeof(struct hdpm_log_ent) +
	       ((len + HDPM_LOG_ALIGN - 1) & ~(HDPM_LOG_ALIGN - 1));
}

static const struct hdpm_log_ent *ent_at(const struct log_view *v, uint64_t pos)
{
	if (pos < HDPM_LOG_INLINE)
		return (const void *)(v->inl + pos);
	if (!v->chunk || pos >= HDPM_LOG_TOTAL)
		return NULL;
	return (const void *)(v->chunk + (pos - HDPM_LOG_INLINE));
}

static uint32_t ent_crc(const struct log_view *v,
			const struct hdpm_log_ent *ent)
{
	struct hdpm_log_ent e = *ent;
	uint32_t crc = (uint32_t)(v->page_off ^ v->page_off >> 32);

	e.crc = 0;
	crc = util_crc32c(crc, &v->nonce, sizeof(v->nonce));
	crc = util_crc32c(crc, &e, sizeof(e));
	return util_crc32c(crc, ent + 1, e.len);
}

/* what is wrong with the entry at pos (NULL: a valid entry); *code its
 * finding's code */
static const char *ent_bad(const struct log_view *v, uint64_t pos,
			   const struct hdpm_log_ent *e, const char **code)
{
	uint64_t seg_end = pos < HDPM_LOG_INLINE ? HDPM_LOG_INLINE :
						   HDPM_LOG_TOTAL;

	*code = "hdpm-log-sequence";
	if (e->seq != pos / HDPM_LOG_ALIGN + 1)
		return "has the sequence number of another position";
	*code = "hdpm-log-bounds";
	if (!e->len || e->len > HDPM_LOG_DATA_MAX ||
	    e->off + e->len > HDPM_PAGE_SIZE)
		return "writes bytes outside its page (or none, or too many)";
	if (pos + ent_size(e->len) > seg_end)
		return "runs past the end of its log segment";
	*code = "hdpm-log-checksum";
	if (e->crc != ent_crc(v, e))
		return "fails its checksum";
	return NULL;
}

static int is_pad(const struct hdpm_log_ent *e, uint64_t pos)
{
	return pos < HDPM_LOG_INLINE && e->seq == HDPM_LOG_PAD && !e->len &&
	       !e->off;
}

/*
 * The log of page page_off (page index p of inode ino): the entries from
 * 0 to where the valid ones end, against the stored tail. A bad entry
 * before the stored tail is damage (the tail is never ahead of durable
 * entries): a torn tail if its header says it ends at the stored tail
 * (the tail is set back to it, repairable), else the entries after it
 * are lost too (--advanced).
 */
static int log_fsck(struct hfsck *h, uint64_t page_off, uint64_t ino,
		    uint64_t p, int flux)
{
	const struct hdpm_page_hdr *ph = at(h, page_off, HDPM_PAGE_OBJ_SIZE);
	uint64_t tail = ph->log_tail, pos = 0, end = 0, bad_end;
	uint64_t tail_off = page_off + offsetof(struct hdpm_page_hdr, log_tail);
	const struct hdpm_log_ent *e = NULL;
	const char *why = NULL, *code = "hdpm-log-bounds";
	struct log_view v;
	int rc, torn;

	if (tail > HDPM_LOG_TOTAL || tail % HDPM_LOG_ALIGN)
		return report(h, "hdpm-log-tail-range", POOL_FSCK_ERROR, 0,
			      tail_off,
			      "inode %llu page %llu (0x%llx): log tail %llu "
			      "is not a log position (0..%u, 16-byte aligned)",
			      (unsigned long long)ino, (unsigned long long)p,
			      (unsigned long long)page_off,
			      (unsigned long long)tail, HDPM_LOG_TOTAL);
	v.page_off = page_off;
	v.nonce = ph->nonce;
	v.inl = (const char *)ph + HDPM_PAGE_LOG_OFF;
	v.chunk = live(h, ph->log_off, HDPM_LOG_SIZE) ?
			  at(h, ph->log_off, HDPM_LOG_SIZE) :
			  NULL;
	while (pos + sizeof(*e) <= HDPM_LOG_TOTAL) {
		e = ent_at(&v, pos);
		if (!e) {
			why = "lies in a log chunk the page does not have";
			break;
		}
		if (is_pad(e, pos)) {
			if (e->crc != ent_crc(&v, e)) {
				why = "is a pad entry that fails its checksum";
				code = "hdpm-log-checksum";
				break;
			}
			pos = HDPM_LOG_INLINE;
			continue;
		}
		if ((why = ent_bad(&v, pos, e, &code)) != NULL)
			break;
		pos += ent_size(e->len);
		end = pos;
	}
	if (end >= tail || flux)
		/* past the stored tail: appends do not flush it, or a torn
		 * append; the mount publishes or ignores them */
		return 0;
	/* where the bad entry ends if its length is right */
	bad_end = e && e->len <= HDPM_LOG_DATA_MAX ? pos + ent_size(e->len) :
						     ~0ULL;
	torn = bad_end == tail;
	rc = plan_store(h, tail_off, end);
	if (rc == 0 && (torn || (h->flags & HDPM_FSCK_ADVANCED)))
		rc = note(h,
			  torn ? "repair-hdpm-log-tail" : "repair-hdpm-log-cut",
			  tail_off,
			  "inode %llu page %llu (0x%llx): log tail set back "
			  "from %llu to %llu%s",
			  (unsigned long long)ino, (unsigned long long)p,
			  (unsigned long long)page_off,
			  (unsigned long long)tail, (unsigned long long)end,
			  torn ? " (the torn entry dropped)" :
				 ": the entries after it are lost");
	if (rc < 0)
		return rc;
	return report(h, code, POOL_FSCK_ERROR,
		      torn ? POOL_FSCK_REPAIRABLE : POOL_FSCK_ADVANCED,
		      page_off + HDPM_PAGE_LOG_OFF,
		      "inode %llu page %llu (0x%llx): the log entry at "
		      "position %llu %s, before the stored tail %llu: %s",
		      (unsigned long long)ino, (unsigned long long)p,
		      (unsigned long long)page_off, (unsigned long long)pos,
		      why ? why : "is missing", (unsigned long long)tail,
		      torn ? "a torn tail, --repair drops it" :
			     "the log ends there and the entries after it "
			     "are lost (--repair --advanced cuts it)");
}

/* ------------------------------------------------------------ files */

/* page p of inode ino at page_off */
static int page_fsck(struct hfsck *h, uint64_t ino, uint64_t p,
		     uint64_t page_off, uint64_t word, int flux)
{
	const struct hdpm_page_hdr *ph;
	uint64_t lo;
	int rc;

	flux = flux || (h->busy && in_flux(h, word, 8));
	if (!live(h, page_off, HDPM_PAGE_OBJ_SIZE) ||
	    !at(h, page_off, HDPM_PAGE_OBJ_SIZE)) {
		if (flux)
			return 0;
		return report(h,
			      live(h, page_off, 1) ? "hdpm-page-invalid" :
						     "hdpm-page-free",
			      POOL_FSCK_ERROR, 0, word,
			      "inode %llu page %llu: its index entry names "
			      "0x%llx, %s",
			      (unsigned long long)ino, (unsigned long long)p,
			      (unsigned long long)page_off,
			      live(h, page_off, 1) ?
				      "a block too small for a page object" :
				      "not a live block (free in the "
				      "allocator)");
	}
	rc = own(h, page_off, ino, p, "page");
	if (rc < 0)
		return rc;
	ph = at(h, page_off, sizeof(*ph));
	flux = flux || (h->busy && in_flux(h, page_off, sizeof(*ph)));
	if ((ph->zero_tail > HDPM_PAGE_SIZE || ph->zero_tail % 64) && !flux)
		return report(
			h, "hdpm-page-zero-tail", POOL_FSCK_ERROR, 0,
			page_off + offsetof(struct hdpm_page_hdr, zero_tail),
			"inode %llu page %llu (0x%llx): zero tail %llu "
			"is not a multiple of 64 up to %u",
			(unsigned long long)ino, (unsigned long long)p,
			(unsigned long long)page_off,
			(unsigned long long)ph->zero_tail, HDPM_PAGE_SIZE);
	lo = ph->log_off;
	if (lo && !live(h, lo, HDPM_LOG_SIZE) && !flux)
		return report(h, "hdpm-log-chunk", POOL_FSCK_ERROR, 0, page_off,
			      "inode %llu page %llu (0x%llx): its log chunk "
			      "0x%llx is not a live block of %u bytes",
			      (unsigned long long)ino, (unsigned long long)p,
			      (unsigned long long)page_off,
			      (unsigned long long)lo, HDPM_LOG_SIZE);
	if (lo && live(h, lo, 1))
		rc = own(h, lo, ino, p, "page log chunk");
	if (rc == 0)
		rc = log_fsck(h, page_off, ino, p, flux);
	return rc;
}

/*
 * May the mount's recovery still change a field of inode ino (len bytes
 * at field: its index words, its name, its parent)? Only if the busy
 * journal frees the inode (or its pages), or names its mode (an undo
 * that frees the inode) or that field. Another field of the inode in
 * flux (its size, for an extending write) changes nothing of it: the
 * mount still requires every index entry to name a page object (fs.c
 * inode_check), and the undone state has the same name and parent, so
 * those are checked.
 */
static int field_flux(const struct hfsck *h, uint64_t ino, size_t field,
		      size_t len)
{
	uint64_t ioff = inode_off(h, ino);

	return h->busy &&
	       (inode_freeing(h, ino) ||
		in_flux(h, ioff + offsetof(struct hdpm_inode, mode_gen), 8) ||
		in_flux(h, ioff + field, len));
}

static int index_flux(const struct hfsck *h, uint64_t ino)
{
	return field_flux(h, ino, offsetof(struct hdpm_inode, index_off), 16);
}

/* a file's index: its array, then every page it names (flux: the
 * inode's fields are in flux) */
static int index_fsck(struct hfsck *h, uint64_t ino,
		      const struct hdpm_inode *in, int flux)
{
	uint64_t ioff = inode_off(h, ino), p, keep;
	int iflux = index_flux(h, ino);
	const uint64_t *index;
	int rc = 0;

	if (!in->index_off && !in->index_cap)
		return 0;
	if (!in->index_off || in->index_cap > HDPM_MAX_PAGES ||
	    !live(h, in->index_off, in->index_cap * 8) ||
	    !(index = at(h, in->index_off, in->index_cap * 8))) {
		if (iflux)
			return 0;
		return report(h, "hdpm-index-invalid", POOL_FSCK_ERROR, 0,
			      ioff + offsetof(struct hdpm_inode, index_off),
			      "inode %llu: page index 0x%llx of %llu entries "
			      "is not a live block that holds them",
			      (unsigned long long)ino,
			      (unsigned long long)in->index_off,
			      (unsigned long long)in->index_cap);
	}
	rc = own(h, in->index_off, ino, 0, "page index");
	keep = (in->size + HDPM_PAGE_SIZE - 1) / HDPM_PAGE_SIZE;
	for (p = 0; rc == 0 && p < in->index_cap; p++) {
		if (!index[p])
			continue;
		/* an operation that extends the file stores the page before
		 * the size */
		if (p >= keep && !flux &&
		    !(h->busy && in_flux(h, in->index_off + p * 8, 8))) {
			rc = report(h, "hdpm-index-past-size", POOL_FSCK_ERROR,
				    0, in->index_off + p * 8,
				    "inode %llu: page %llu (0x%llx) lies past "
				    "the file's size %llu (truncate frees "
				    "such pages)",
				    (unsigned long long)ino,
				    (unsigned long long)p,
				    (unsigned long long)index[p],
				    (unsigned long long)in->size);
			continue;
		}
		rc = page_fsck(h, ino, p, index[p], in->index_off + p * 8,
			       iflux);
	}
	return rc;
}

/* the name of inode ino (not "/"); NULL if bad (reported unless flux) */
static const char *name_of(struct hfsck *h, uint64_t ino,
			   const struct hdpm_inode *in, int flux, int *rc)
{
	uint64_t off =
		inode_off(h, ino) + offsetof(struct hdpm_inode, name_off);
	size_t n = in->name_off ? pma_usable_size(h->heap, in->name_off) : 0;
	const char *name = n ? at(h, in->name_off, n) : NULL;
	size_t len = name ? strnlen(name, n) : 0;
	const char *why = NULL;

	*rc = 0;
	if (!name)
		why = "is not a live block";
	else if (len == n || len == 0 || len > HDPM_NAME_MAX)
		why = "is not a name of 1..255 bytes ended by a NUL";
	else if (memchr(name, '/', len) ||
		 (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.'))))
		why = "is not a valid entry name ('/', '.' or '..')";
	if (!why) {
		*rc = own(h, in->name_off, ino, 0, "name");
		return *rc < 0 ? NULL : name;
	}
	if (!flux)
		*rc = report(h, "hdpm-dirent-name", POOL_FSCK_ERROR, 0, off,
			     "inode %llu: its name block 0x%llx %s",
			     (unsigned long long)ino,
			     (unsigned long long)in->name_off, why);
	return NULL;
}

/* a directory entry: (parent, name) for the duplicate check */
struct dirent_key {
	uint64_t parent, ino;
	const char *name;
};

static int cmp_dirent(const void *a, const void *b)
{
	const struct dirent_key *x = a, *y = b;

	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int inode_fsck(struct hfsck *h, uint64_t ino, struct dirent_key *keys,
		      size_t *nkeys)
{
	const struct hdpm_inode *in = h_inode(h, ino);
	const struct hdpm_inode *par;
	uint64_t off = inode_off(h, ino);
	uint32_t mode = hdpm_mode(in);
	int flux = inode_flux(h, ino), rc = 0;
	const char *name;

	if (!mode) {
		if ((!in->index_off && !in->name_off) ||
		    field_flux(h, ino, offsetof(struct hdpm_inode, index_off),
			       16) ||
		    field_flux(h, ino, offsetof(struct hdpm_inode, name_off),
			       8))
			return 0;
		return report(h, "hdpm-inode-free-blocks", POOL_FSCK_ERROR, 0,
			      off,
			      "inode %llu is free but names blocks (index "
			      "0x%llx, name 0x%llx)",
			      (unsigned long long)ino,
			      (unsigned long long)in->index_off,
			      (unsigned long long)in->name_off);
	}
	if ((!S_ISREG(mode) && !S_ISDIR(mode)) || (ino == 0 && !S_ISDIR(mode)))
		return field_flux(h, ino, offsetof(struct hdpm_inode, mode_gen),
				  8) ?
			       0 :
			       report(h, "hdpm-inode-mode", POOL_FSCK_ERROR, 0,
				      off, "inode %llu: mode 0%o is %s",
				      (unsigned long long)ino, mode,
				      ino == 0 ? "not a directory (it is "
						 "\"/\")" :
						 "neither a file nor a "
						 "directory");
	if (ino != 0) {
		par = in->parent < h->ninodes ? h_inode(h, in->parent) : NULL;
		/* (the parent excused only if the undo may change its mode:
		 * another field of it in flux, a size, leaves it a file) */
		if ((!par || !S_ISDIR(hdpm_mode(par)) || in->parent == ino) &&
		    !field_flux(h, ino, offsetof(struct hdpm_inode, parent),
				8) &&
		    !(par &&
		      field_flux(h, in->parent,
				 offsetof(struct hdpm_inode, mode_gen), 8))) {
			rc = report(h, "hdpm-dirent-parent", POOL_FSCK_ERROR, 0,
				    off + offsetof(struct hdpm_inode, parent),
				    "inode %llu: its parent %llu is not a "
				    "directory",
				    (unsigned long long)ino,
				    (unsigned long long)in->parent);
			if (rc < 0)
				return rc;
		}
		name = name_of(h, ino, in,
			       field_flux(h, ino,
					  offsetof(struct hdpm_inode, name_off),
					  8),
			       &rc);
		if (rc < 0)
			return rc;
		/* (its entry stays unless the undo changes its name or
		 * parent) */
		if (name &&
		    !field_flux(h, ino, offsetof(struct hdpm_inode, parent),
				8) &&
		    !field_flux(h, ino, offsetof(struct hdpm_inode, name_off),
				8))
			keys[(*nkeys)++] =
				(struct dirent_key){ in->parent, ino, name };
	}
	/* a directory has no index, but the mount checks every inode's
	 * (fs.c inode_check): one named is checked as a file's */
	return index_fsck(h, ino, in, flux);
}

/* every used inode reaches "/" through its parents */
static int loops_fsck(struct hfsck *h)
{
	uint64_t ino, cur, steps;
	int rc = 0;

	for (ino = 1; rc == 0 && ino < h->ninodes; ino++) {
		if (!hdpm_mode(h_inode(h, ino)) || inode_flux(h, ino))
			continue;
		cur = ino;
		for (steps = 0; cur != 0 && steps < h->ninodes; steps++) {
			if (cur >= h->ninodes || !hdpm_mode(h_inode(h, cur)))
				break; /* reported as hdpm-dirent-parent */
			cur = h_inode(h, cur)->parent;
		}
		if (cur != 0 && steps == h->ninodes)
			rc = report(h, "hdpm-dirent-loop", POOL_FSCK_ERROR, 0,
				    inode_off(h, ino),
				    "inode %llu: its parents never reach "
				    "\"/\" (a directory loop)",
				    (unsigned long long)ino);
	}
	return rc;
}

static int dup_names_fsck(struct hfsck *h, struct dirent_key *keys, size_t n)
{
	size_t i;
	int rc = 0;

	if (n > 1)
		qsort(keys, n, sizeof(*keys), cmp_dirent);
	for (i = 1; rc == 0 && i < n; i++)
		if (!cmp_dirent(&keys[i - 1], &keys[i]))
			rc = report(h, "hdpm-dirent-duplicate", POOL_FSCK_ERROR,
				    0, inode_off(h, keys[i].ino),
				    "inodes %llu and %llu have the same name "
				    "\"%s\" in directory %llu",
				    (unsigned long long)keys[i - 1].ino,
				    (unsigned long long)keys[i].ino,
				    keys[i].name,
				    (unsigned long long)keys[i].parent);
	return rc;
}

static int cmp_owner(const void *a, const void *b)
{
	const struct owner *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static const char *owner_str(const struct owner *o, char *buf, size_t len)
{
	if (o->ino == ~0ULL)
		snprintf(buf, len, "the %s", o->what);
	else if (!strcmp(o->what, "page") || !strcmp(o->what, "page log chunk"))
		snprintf(buf, len, "the %s of inode %llu page %llu", o->what,
			 (unsigned long long)o->ino,
			 (unsigned long long)o->page);
	else
		snprintf(buf, len, "the %s of inode %llu", o->what,
			 (unsigned long long)o->ino);
	return buf;
}

/* no block named by two words */
static int shared_fsck(struct hfsck *h)
{
	char a[96], b[96];
	size_t i;
	int rc = 0;

	if (h->nowners > 1)
		qsort(h->owners, h->nowners, sizeof(*h->owners), cmp_owner);
	for (i = 1; rc == 0 && i < h->nowners; i++)
		if (h->owners[i].off == h->owners[i - 1].off)
			rc = report(h, "hdpm-block-shared", POOL_FSCK_ERROR, 0,
				    h->owners[i].off,
				    "block 0x%llx is %s and %s: a block "
				    "must have one owner",
				    (unsigned long long)h->owners[i].off,
				    owner_str(&h->owners[i - 1], a, sizeof(a)),
				    owner_str(&h->owners[i], b, sizeof(b)));
	return rc;
}

/* ------------------------------------------------------------ leaks */

/* report at most this many leaked blocks one by one, then a sum */
#define HDPM_LEAKS_LISTED 32

struct leaks {
	uint64_t n, bytes; /* leaked blocks and their bytes */
	uint64_t first; /* the first one not listed (pool offset) */
};

/* is off named (the owners are sorted)? */
static int owned(const struct hfsck *h, uint64_t off)
{
	size_t lo = 0, hi = h->nowners, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (h->owners[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < h->nowners && h->owners[lo].off == off;
}

/* a repair: off is a leak to free (and to say so, the first ones) */
static int leak_plan(struct hfsck *h, uint64_t off, uint64_t size, uint64_t nth)
{
	uint64_t *p;

	if (h->nleaked == h->cleaked) {
		h->cleaked = h->cleaked ? 2 * h->cleaked : 64;
		p = realloc(h->leaked, h->cleaked * sizeof(*p));
		if (!p)
			return util_errmsg_set(ENOMEM, "out of memory");
		h->leaked = p;
	}
	h->leaked[h->nleaked++] = off;
	if (nth >= HDPM_LEAKS_LISTED)
		return 0;
	return note(h, "repair-hdpm-block-leaked", off,
		    "block 0x%llx (%llu bytes), named by nothing of the file "
		    "system, freed",
		    (unsigned long long)off, (unsigned long long)size);
}

/* the live block at pool offset off of size bytes: named, or a leak */
static int leak_one(struct hfsck *h, struct leaks *l, uint64_t off,
		    uint64_t size)
{
	int rc;

	if (owned(h, off))
		return 0;
	if (h->leak_notes) { /* a repair that frees or lists them */
		rc = leak_plan(h, off, size, l->n);
		if (rc < 0)
			return rc;
	}
	if (l->n++ >= HDPM_LEAKS_LISTED) {
		l->bytes += size;
		if (!l->first)
			l->first = off;
		return 0;
	}
	return report(h, "hdpm-block-leaked", POOL_FSCK_WARNING,
		      POOL_FSCK_REPAIRABLE, off,
		      "block 0x%llx (%llu bytes) is live but nothing of the "
		      "file system names it (a leak: its space is lost); "
		      "--repair frees it: the heap is the file system's "
		      "alone (hdpm_mount), so a block none of its words "
		      "names is unreachable",
		      (unsigned long long)off, (unsigned long long)size);
}

/* every live block of part heap p (slab blocks, extents) */
static int leaks_part(struct hfsck *h, struct pma_heap *p, struct leaks *l)
{
	uint64_t c, page, n, off;
	struct pma_slab *slab;
	uint32_t i;
	int rc = 0;

	for (c = 0; rc == 0 && c < p->nchunks; c++) {
		slab = pma_heap_slab_at(p,
					pma_page_off(p, c * PMA_CHUNK_PAGES));
		for (i = 0; rc == 0 && slab && i < slab->nblocks; i++) {
			if (!pma_slab_is_live(slab, i))
				continue;
			off = pool_off_make(p->part,
					    pma_slab_block_off(slab, i));
			rc = leak_one(h, l, off, slab->block_size);
		}
	}
	for (page = 0; rc == 0 && page < p->geom.npages; page++) {
		if (pma_pmap_kind(p->pmap[page]) != PMA_PMAP_EXTENT)
			continue;
		n = pma_pmap_npages(p->pmap[page]);
		rc = leak_one(h, l,
			      pool_off_make(p->part, pma_page_off(p, page)),
			      n << PMA_PAGE_SHIFT);
	}
	return rc;
}

/*
 * Blocks live in the allocator that nothing of the file system names
 * (leaks): only when the walk found no error and no operation is in
 * flight (a busy journal or GC journal names blocks half-way, and a
 * damaged structure names blocks fsck did not see). The superblock (the
 * root) and the blocks the allocation slots name are not leaks: a crash
 * between an allocation and its link leaves the block in a slot, and
 * the mount's recovery decides about it. A repair frees them after its
 * mount (leaks_reclaim): the heap is the file system's alone, which the
 * mount's own orphan sweep relies on too.
 */
static int leaks_fsck(struct hfsck *h)
{
	const struct hdpm_gc_journal *j = &h->sb->gc;
	struct leaks l = { 0 };
	struct jslot_view v;
	unsigned p;
	int rc = 0;

	if (h->errors || h->busy || j->nretire ||
	    ((j->state & 0xff) == HDPM_GC_BUILD && j->crc == gc_crc(j)))
		return 0;
	rc = own(h, h->sb_off, ~0ULL, 0, "superblock");
	for (p = 0; rc == 0 && jslot_get(h, p, &v); p++)
		if (*v.alloc_slot)
			rc = own(h, *v.alloc_slot, ~0ULL, 0, "allocation slot");
	if (rc == 0 && h->sb->gc_slot)
		rc = own(h, h->sb->gc_slot, ~0ULL, 0, "GC allocation slot");
	if (rc < 0)
		return rc;
	qsort(h->owners, h->nowners, sizeof(*h->owners), cmp_owner);
	for (p = 0; rc == 0 && p < POOL_MAX_PARTS; p++)
		if (h->heap->sib[p])
			rc = leaks_part(h, h->heap->sib[p], &l);
	if (rc == 0 && l.n > HDPM_LEAKS_LISTED)
		rc = report(h, "hdpm-block-leaked", POOL_FSCK_WARNING,
			    POOL_FSCK_REPAIRABLE, l.first,
			    "%llu more leaked blocks (%llu bytes), from "
			    "0x%llx on; --repair frees them too",
			    (unsigned long long)(l.n - HDPM_LEAKS_LISTED),
			    (unsigned long long)l.bytes,
			    (unsigned long long)l.first);
	return rc;
}

/* ------------------------------------------------------------ driver */

/* the inode table's chunks: live blocks, and ninodes exactly what the
 * chunks in use hold; 1 if not */
static int super_itable(struct hfsck *h)
{
	const struct hdpm_super *sb = h->sb;
	unsigned log2 = sb->itable_log2 ? sb->itable_log2 : 12, k;
	uint64_t n, off, have = 0;
	size_t len;

	if (log2 > 20 || !sb->ninodes || sb->ninodes > (1ULL << 24))
		return 1;
	h->ilog2 = log2;
	for (k = 0; k < HDPM_ICHUNKS && have < sb->ninodes; k++) {
		n = (uint64_t)1 << (log2 + k);
		off = k ? sb->itable_more[k - 1] : sb->itable_off;
		len = n * sizeof(struct hdpm_inode);
		if (!live(h, off, len) || !at(h, off, len))
			return 1;
		h->ichunk[k] = at(h, off, len);
		h->chunk_off[k] = off;
		have += n;
	}
	h->nchunks = k;
	if (have != sb->ninodes)
		return 1;
	h->ninodes = have;
	return 0;
}

/* the superblock (version, inode table); 1 if the walk cannot go on */
static int super_fsck(struct hfsck *h)
{
	const struct hdpm_super *sb = h->sb;

	if (sb->version < HDPM_VERSION_OLDEST || sb->version > HDPM_VERSION) {
		report(h, "hdpm-super-version", POOL_FSCK_ERROR, 0,
		       h->sb_off + offsetof(struct hdpm_super, version),
		       "HDPM superblock at 0x%llx: version %u (this build "
		       "reads %u..%u); the file system is not checked",
		       (unsigned long long)h->sb_off, sb->version,
		       HDPM_VERSION_OLDEST, HDPM_VERSION);
		return 1;
	}
	if (sb->version >= 4 &&
	    !live(h, sb->jslots_off, sizeof(struct hdpm_jslots))) {
		report(h, "hdpm-journal-slots", POOL_FSCK_ERROR, 0,
		       h->sb_off + offsetof(struct hdpm_super, jslots_off),
		       "HDPM superblock at 0x%llx: journal slots 0x%llx are "
		       "not a live block that holds them; the mount refuses "
		       "the file system",
		       (unsigned long long)h->sb_off,
		       (unsigned long long)sb->jslots_off);
		return 1;
	}
	if (super_itable(h)) {
		report(h, "hdpm-itable", POOL_FSCK_ERROR, 0,
		       h->sb_off + offsetof(struct hdpm_super, itable_off),
		       "HDPM superblock at 0x%llx: inode table 0x%llx of %llu "
		       "inodes is not a set of live blocks that holds them; "
		       "the file system is not checked",
		       (unsigned long long)h->sb_off,
		       (unsigned long long)sb->itable_off,
		       (unsigned long long)sb->ninodes);
		return 1;
	}
	return 0;
}

/*
 * The dest words of the heap's log windows: HDPM hands only never-freed
 * words to the allocator (layout.h: the superblock's alloc_slot,
 * free_slot, gc_slot, gc_free_slot, itable_off and jslots_off, each
 * journal slot's alloc_slot and free_slot; the heap's root word), so a
 * record naming another word is damaged, and recovery's redo would
 * store an offset or 0 into it (the file system's metadata or a file's
 * data) unseen by a check of the words as they are on media.
 */
struct dests {
	struct hfsck *h;
	uint64_t ok[8 + 2 * (HDPM_JSLOTS - 1)];
	unsigned nok;
	int rc;
};

static int dest_word(unsigned part, unsigned arena, uint64_t index,
		     uint64_t dest, void *arg)
{
	struct dests *d = arg;
	struct hfsck *h = d->h;
	unsigned i;

	for (i = 0; i < d->nok; i++)
		if (d->ok[i] == dest)
			return 0;
	d->rc = report(h, "hdpm-log-dest", POOL_FSCK_ERROR, 0, dest,
		       "part %u arena %u log record %llu names dest word 0x%llx"
		       "%s, which HDPM never allocates or frees through: a "
		       "damaged record, whose redo at the heap's recovery "
		       "would store into it",
		       part, arena, (unsigned long long)index,
		       (unsigned long long)dest,
		       dest >= h->sb_off && dest - h->sb_off <
						    sizeof(struct hdpm_super) ?
			       " (in the superblock)" :
			       "");
	return d->rc < 0 ? d->rc : 0;
}

static int dests_fsck(struct hfsck *h)
{
	static const size_t sbw[] = {
		offsetof(struct hdpm_super, alloc_slot),
		offsetof(struct hdpm_super, free_slot),
		offsetof(struct hdpm_super, gc_slot),
		offsetof(struct hdpm_super, gc_free_slot),
		offsetof(struct hdpm_super, itable_off),
		offsetof(struct hdpm_super, jslots_off),
	};
	const struct pma_heap *top = h->heap->top;
	struct dests d = { .h = h };
	uint64_t js = h->sb->jslots_off, w;
	unsigned i;
	int rc;

	for (i = 0; i < sizeof(sbw) / sizeof(sbw[0]); i++)
		d.ok[d.nok++] = h->sb_off + sbw[i];
	d.ok[d.nok++] =
		pool_off_make(top->part, top->region_off + PMA_ROOT_WORD_OFF);
	for (i = 0; js && live(h, js, sizeof(struct hdpm_jslots)) &&
		    i < HDPM_JSLOTS - 1;
	     i++) {
		w = js + i * sizeof(struct hdpm_jslot);
		d.ok[d.nok++] = w + offsetof(struct hdpm_jslot, alloc_slot);
		d.ok[d.nok++] = w + offsetof(struct hdpm_jslot, free_slot);
	}
	rc = pma_fsck_window_dests(h->heap, dest_word, &d);
	return rc < 0 ? rc : d.rc;
}

static int walk(struct hfsck *h)
{
	struct dirent_key *keys;
	size_t nkeys = 0;
	uint64_t ino;
	unsigned k;
	int rc;

	if (super_fsck(h))
		return h->sink->rc;
	rc = own(h, h->sb->itable_off, ~0ULL, 0, "inode table");
	/* the chunks it grew by; a word past them names a chunk an
	 * interrupted growth allocated (the journal's undo frees it) */
	for (k = 0; rc == 0 && k < HDPM_ICHUNKS - 1; k++)
		if (h->sb->itable_more[k] &&
		    (k + 1 < h->nchunks || live(h, h->sb->itable_more[k], 1)))
			rc = own(h, h->sb->itable_more[k], ~0ULL, 0,
				 "inode table chunk");
	/* the journal slots (version 4; an older version holds one only
	 * after an upgrade that crashed, which the next mount reuses) */
	if (rc == 0 && h->sb->jslots_off &&
	    (h->sb->version >= 4 || live(h, h->sb->jslots_off, 1)))
		rc = own(h, h->sb->jslots_off, ~0ULL, 0, "journal slots");
	if (rc == 0)
		rc = dests_fsck(h);
	if (rc == 0)
		rc = journal_fsck(h);
	if (rc == 0)
		rc = gc_journal_fsck(h);
	if (rc < 0)
		return rc;
	keys = calloc(h->ninodes, sizeof(*keys));
	if (!keys)
		return util_errmsg_set(ENOMEM, "out of memory");
	for (ino = 0; rc == 0 && ino < h->ninodes; ino++)
		rc = inode_fsck(h, ino, keys, &nkeys);
	if (rc == 0)
		rc = dup_names_fsck(h, keys, nkeys);
	free(keys);
	if (rc == 0)
		rc = loops_fsck(h);
	if (rc == 0)
		rc = shared_fsck(h);
	if (rc == 0)
		rc = leaks_fsck(h);
	return rc;
}

/* the superblock's offset if heap holds a file system, else 0 (the
 * root word is read, never created: the heap may be writable) */
static uint64_t super_of(struct pma_heap *heap)
{
	const struct hdpm_super *sb;
	uint64_t root;

	root = __atomic_load_n(&heap->top->hdr->root_off, __ATOMIC_ACQUIRE);
	if (!root || pma_usable_size(heap, root) < sizeof(*sb))
		return 0;
	sb = pma_direct(heap, root);
	return sb && !memcmp(sb->magic, HDPM_MAGIC, HDPM_MAGIC_LEN) ? root : 0;
}

int hdpm_fsck_present(struct pma_heap *heap)
{
	return super_of(heap) != 0;
}

static void hfsck_free(struct hfsck *h)
{
	free(h->journaled);
	free(h->freeing);
	free(h->owners);
	free(h->stores);
	free(h->leaked);
}

/*
 * A root block whose magic is zero is a format that crashed, which the
 * next mount finishes, reusing its inode table: unless that table is
 * not the format's (fs.c hdpm_format_leftover), and the mount refuses.
 * Reported only for a root block with a file system's structure in it.
 */
static int unformatted_fsck(struct hfsck *h)
{
	static const char zero[HDPM_MAGIC_LEN];
	const struct hdpm_super *sb;
	uint64_t root;

	root = __atomic_load_n(&h->heap->top->hdr->root_off, __ATOMIC_ACQUIRE);
	if (!root || pma_usable_size(h->heap, root) < sizeof(*sb) ||
	    !(sb = pma_direct(h->heap, root)) ||
	    memcmp(sb->magic, zero, sizeof(zero)) != 0)
		return 0;
	/* only a root block that holds a file system's structure (its
	 * journal slots and a whole inode table, live): another heap's
	 * root object may start with zeros too */
	if (!live(h, sb->jslots_off, sizeof(struct hdpm_jslots)) ||
	    !live(h, sb->itable_off,
		  (size_t)HDPM_NINODES * sizeof(struct hdpm_inode)) ||
	    hdpm_format_leftover(h->heap, sb) == 0)
		return 0;
	report(h, "hdpm-super-magic", POOL_FSCK_ERROR, 0, root,
	       "HDPM superblock at 0x%llx (the root block): %s; a mount "
	       "refuses it",
	       (unsigned long long)root, util_errmsg());
	util_errmsg_clear();
	return h->sink->rc;
}

static int run(struct pma_heap *heap, struct pool_fsck_sink *sink,
	       struct hfsck *h)
{
	h->heap = heap;
	h->sink = sink;
	h->sb_off = super_of(heap);
	if (!h->sb_off)
		return unformatted_fsck(h);
	h->sb = pma_direct(heap, h->sb_off);
	return walk(h);
}

int hdpm_fsck_heap(struct pma_heap *heap, struct pool_fsck_sink *sink)
{
	struct hfsck h = { 0 };
	int rc = run(heap, sink, &h);

	hfsck_free(&h);
	return rc;
}

/*
 * After the repair's mount (every journal recovered, nothing in flight):
 * the leaks found now, each freed through a DRAM word (no word of the
 * pool names it, so the free's record names no dest to redo). Each free
 * is one allocator operation: a crash between two leaves the rest
 * leaked, and the next repair frees them.
 */
static int leaks_reclaim(struct pma_heap *heap, struct pool_fsck_sink *notes)
{
	struct pool_fsck_sink quiet = { 0 };
	struct hfsck h = { .notes = notes, .planning = 1, .leak_notes = 1 };
	uint64_t w;
	size_t i;
	int rc = run(heap, &quiet, &h);

	for (i = 0; rc == 0 && i < h.nleaked; i++) {
		w = h.leaked[i];
		rc = pma_free_from(heap, &w);
		if (rc < 0)
			rc = util_errmsg_set(-rc,
					     "freeing leaked block 0x%llx: %s",
					     (unsigned long long)h.leaked[i],
					     pma_errormsg());
	}
	hfsck_free(&h);
	return rc;
}

int hdpm_fsck_repair(struct pma_heap *heap, unsigned flags,
		     struct pool_fsck_sink *notes)
{
	struct pool_fsck_sink quiet = { 0 };
	struct hfsck h = { .flags = flags,
			   .notes = notes,
			   .planning = 1,
			   .leak_notes = !!(flags & HDPM_FSCK_DRY_RUN) };
	struct hdpm_fs *fs;
	uint64_t *word;
	size_t i;
	int rc;

	rc = run(heap, &quiet, &h);
	if (rc < 0 || !h.sb_off || (flags & HDPM_FSCK_DRY_RUN)) {
		hfsck_free(&h);
		return rc;
	}
	for (i = 0; i < h.nstores; i++) {
		word = pma_direct(heap, h.stores[i][0]);
		if (!word || h.stores[i][0] % 8) {
			rc = util_errmsg_set(
				EINVAL,
				"repair store at 0x%llx is "
				"outside the pool",
				(unsigned long long)h.stores[i][0]);
			hfsck_free(&h);
			return rc;
		}
		__atomic_store_n(word, h.stores[i][1], __ATOMIC_RELAXED);
		pma_persist(heap, word, sizeof(*word));
	}
	hfsck_free(&h);
	/* the journals, every log's end: the mount's own recovery */
	rc = hdpm_mount(heap, HDPM_NO_GC_THREAD, &fs);
	if (rc < 0)
		return rc;
	hdpm_unmount(fs);
	return leaks_reclaim(heap, notes);
}

static_assert(HDPM_JSLOTS <= HDPM_FSCK_SLOTS, "hdpm_fsck_pending.ops");

/* the journals as the mount's recovery reads them (tx.c slot_recover,
 * gc.c hdpm_gc_recover) */
int hdpm_fsck_pending(struct pma_heap *heap, struct hdpm_fsck_pending *ret)
{
	struct hfsck h = { .heap = heap };
	const struct hdpm_gc_journal *j;
	struct hdpm_fsck_pending_op *op;
	struct jslot_view v;
	uint64_t st;
	unsigned i;

	memset(ret, 0, sizeof(*ret));
	h.sb_off = super_of(heap);
	if (!h.sb_off)
		return 0;
	h.sb = pma_direct(heap, h.sb_off);
	ret->present = 1;
	for (i = 0; jslot_get(&h, i, &v); i++) {
		st = *v.jstate & 0xff;
		if (st == HDPM_J_IDLE)
			continue;
		if (st > HDPM_J_COMMITTED) {
			ret->refused = 1;
			continue;
		}
		op = &ret->ops[ret->nops++];
		op->slot = i;
		op->committed = st == HDPM_J_COMMITTED;
		op->seq = *v.jstate >> 8;
		op->records = jslot_records(&v, op->seq);
		op->part = pool_off_part(v.jstate_off);
		op->off = pool_off_byte(v.jstate_off);
		if (op->committed)
			ret->finish++;
		else
			ret->undo++;
	}
	j = &h.sb->gc;
	if (j->nretire > HDPM_GC_BATCH_MAX) {
		ret->refused = 1;
		return 0;
	}
	ret->retire = j->nretire;
	ret->merge_building = (j->state & 0xff) == HDPM_GC_BUILD &&
			      j->crc == gc_crc(j);
	ret->merges = (ret->retire != 0) + (ret->merge_building != 0);
	return 0;
}

int hdpm_fsck_recover(struct pma_heap *heap, struct pool_fsck_sink *sink)
{
	uint64_t sb_off = super_of(heap);
	struct hdpm_stats st;
	struct hdpm_fs *fs;
	int rc = 0;

	/* (a root block the heap's recovery left without magic: a format
	 * the mount finishes, unless its table is not the format's) */
	if (!sb_off)
		return hdpm_fsck_heap(heap, sink);
	if (hdpm_mount(heap, HDPM_NO_GC_THREAD, &fs) < 0)
		return pool_fsck_report(sink, "hdpm-recovery-refused",
					POOL_FSCK_ERROR, pool_off_part(sb_off),
					pool_off_byte(sb_off),
					"the HDPM mount (on a private view of "
					"the pool) refuses the file system: %s",
					hdpm_errormsg());
	hdpm_stats(fs, &st);
	hdpm_unmount(fs);
	if (st.rollbacks || st.rollforwards || st.log_tails_cut ||
	    st.bg_recovered)
		rc = pool_fsck_report(sink, "hdpm-recovery", POOL_FSCK_INFO,
				      pool_off_part(sb_off),
				      pool_off_byte(sb_off),
				      "the HDPM mount (on a private view) "
				      "undid %llu operation(s), finished %llu, "
				      "finished or undid %llu background "
				      "merge(s), cut %llu log tail(s)",
				      (unsigned long long)st.rollbacks,
				      (unsigned long long)st.rollforwards,
				      (unsigned long long)st.bg_recovered,
				      (unsigned long long)st.log_tails_cut);
	return rc < 0 ? rc : hdpm_fsck_heap(heap, sink);
}
