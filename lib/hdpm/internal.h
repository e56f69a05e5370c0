/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libhdpm internals. A struct hdpm_fs is one mounted file system: the
 * heap, the superblock and inode table mapped through pma_direct.
 *
 * Locks, in the order they are taken (doc/hdpm.md "Locking"):
 *   ns_lock    rwlock: the namespace and the name index. Written by
 *              create/unlink/rename/mkdir/rmdir (and inode table growth),
 *              read by lookups, readdir and the whole-fs walks.
 *   ilock[i]   rwlock per inode: its size, index, pages and logs. Read
 *              by pread/stat, written by pwrite/ftruncate/O_TRUNC and by
 *              an unlink or rename that frees the inode's blocks. At most
 *              one is held at a time.
 *   tx[s].lock mutex per journal slot (HDPM_JSLOTS of them in version 4,
 *              one in older ones): that slot's PM journal, alloc_slot and
 *              free_slot. Held from hdpm_tx_begin (which takes a free
 *              slot, or waits for the thread's hashed one) to
 *              commit/abort. A thread holds at most one. Nothing keeps
 *              other slots from allocating a block one slot just freed:
 *              the re-runs at mount check that no other word names a
 *              block before they free it (tx.c).
 *   then PMAlloc's own locks inside pma_* calls.
 * The background GC's step_lock comes first of all (it takes an ilock
 * only as a barrier, for its retire list); its merges take none of these
 * and publish through the claims below.
 *
 *   tx.c     journal: begin, record, allocate, commit, undo, recovery
 *   page.c   page objects: log append, reverse-scan read, CoW, merge
 *   file.c   open/close/pwrite/pread/ftruncate, index growth
 *   namei.c  paths, mkdir/rmdir/unlink/rename/stat/readdir
 *   fs.c     mount (format, recovery, log check), gc, stats, errors
 *   gc.c     background GC: lock-free merges, CAS publish, its journal
 *   query.c  inode-number calls, per-file and per-page log use
 *   names.c  the DRAM name index: (parent, name) -> inode, by hash
 */
#ifndef PMAD_HDPM_INTERNAL_H
#define PMAD_HDPM_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "hdpm.h"
#include "hdpm/layout.h"
#include "pmalloc.h"

/*
 * The handshake between the writers and the background GC, which merges
 * without their locks (gc.c). All seq_cst: each side stores its claim,
 * then loads the other's, so at least one of them sees the other.
 *   - a one-append writer claims the page it appends to in its inode's
 *     lock slot (ilock.claim = page, under that inode's write lock); a
 *     journaled operation claims everything (all_claim counts the ones
 *     running; gen moves at each one's start and end); either then
 *     waits while the GC
 *     publishes that page (gc_claim[0..1] = old and new page; ALL waits
 *     for any);
 *   - the GC publishes only if neither the page's inode claims the page
 *     nor a journaled operation runs (all_claim 0), gen is the value it
 *     saw (with all_claim 0) before it read the page, and the page's log
 *     tail is the one it merged: otherwise the write won.
 */
#define HDPM_CLAIM_ALL UINT64_MAX

struct hdpm_gc_state {
	pthread_mutex_t step_lock; /* one background step at a time */
	pthread_mutex_t mu; /* the thread's sleep and stop */
	pthread_cond_t cond;
	pthread_t thread;
	int inited; /* the locks exist */
	int running; /* the thread was started */
	int stop;
	struct hdpm_gc_config cfg;
	uint64_t all_claim; /* journaled operations running */
	uint64_t gc_claim[2]; /* GC side: page being replaced, new page */
	uint64_t gen; /* +1 at each journaled operation's start and end */
	uint64_t steps, merges, lost, recovered; /* atomic counters */
	/* the inode of each page on the retire list (this step's) */
	uint64_t retire_ino[HDPM_GC_BATCH_MAX];
	/* tests: called between a merge's build and its publish, without
	 * any lock held (a write made there races the merge) */
	void (*race_hook)(struct hdpm_fs *fs, void *arg);
	void *race_arg;
};

/* the DRAM name index (names.c): changed under ns_lock held for writing,
 * read under it held for reading */
struct hdpm_names {
	uint64_t *slots; /* cap slots: ino + 1 | hash >> 32 << 32; 0 empty */
	size_t cap; /* a power of two, >= 2 * ninodes */
	/* hash = (hash & hash_mask) | hash_set: UINT64_MAX and 0; tests
	 * narrow them to force collisions and runs that wrap */
	uint64_t hash_mask, hash_set;
	struct hdpm_name_ref {
		uint64_t hash; /* of (parent, name) when it went in */
		uint64_t parent;
		/* siblings in parent's child list: inode + 1, 0 none */
		uint64_t next, prev;
		int in; /* the inode is in the index */
	} * ref; /* per inode */
	uint32_t *nchild; /* per directory: inodes in the index under it */
	uint64_t *first; /* per directory: its first child + 1, 0 none */
	uint64_t probes; /* atomic: slots looked at by finds (tests, bench) */
};

/* one inode's lock and its writer's claim for the background GC */
struct hdpm_ilock {
	pthread_rwlock_t rw;
	uint64_t claim; /* page a one-append write is appending to, or 0 */
} __attribute__((aligned(64)));

/* one journal slot in DRAM: where its words are in PM (slot 0's are in
 * the superblock, the others in struct hdpm_jslots) and its running tx */
struct hdpm_tx {
	struct hdpm_fs *fs;
	pthread_mutex_t lock;
	uint64_t *jstate;
	uint64_t *alloc_slot;
	uint64_t *free_slot;
	struct hdpm_intent *intent;
	struct hdpm_rec *recs; /* HDPM_TX_MAX */
	unsigned nrecs; /* records of the running tx (lock) */
	int tx_frees; /* the running tx has commit actions (lock) */
	/* mount: the undone operation had an allocation in flight */
	int orphans;
} __attribute__((aligned(64)));

struct hdpm_fs {
	struct pma_heap *heap;
	struct hdpm_super *sb;
	/* the inode table's chunks and their locks (never move; set before
	 * ninodes grows past them) */
	struct hdpm_inode *ichunk[HDPM_ICHUNKS];
	struct hdpm_ilock *lchunk[HDPM_ICHUNKS];
	unsigned ilog2; /* log2 of the first chunk's inode count */
	uint64_t ninodes; /* written with a release store (growth) */
	int cow_only;
	int rdonly; /* HDPM_RDONLY: nothing may be written */
	pthread_rwlock_t ns_lock;
	struct hdpm_tx tx[HDPM_JSLOTS]; /* the journal slots */
	unsigned ntx; /* slots in use: HDPM_JSLOTS, or 1 (read-only old) */
	uint64_t tx_overlap; /* atomic: most operations seen running at once */
	/* the journals are being recovered (mount): a block a re-run would
	 * free is freed only if no other word names it */
	int recovering;
	/* mount: the GC journal's undo had an allocation in flight */
	int gc_orphans;
	struct hdpm_stats stats; /* atomic counters (hdpm_stat_add) */
	struct hdpm_gc_state gc;
	uint64_t nonce_base; /* sb->mounts << 32 */
	uint64_t nonce_next; /* atomic: pages made in this mount */
	uint64_t zero_tail_bytes; /* atomic: hdpm_stats' zero_tail_bytes */
	struct hdpm_names names;
};

/* bytes of a new page object that are written: header, data and the
 * first (zero) log entry slot */
#define HDPM_PAGE_NEW_SIZE (HDPM_PAGE_LOG_OFF + sizeof(struct hdpm_log_ent))

struct hdpm_file {
	struct hdpm_fs *fs;
	uint64_t ino;
	uint32_t gen; /* the inode's generation at open */
	int oflags;
};

/* ------------------------------------------------------------ locks */

/* tests: the first chunk of a new file system holds 1 << this inodes
 * (0: HDPM_NINODES) */
extern unsigned hdpm_test_itable_log2;
/* may a format reuse the inode table of sb, which has no magic? 0, or
 * -EIO with a message (fs.c) */
int hdpm_format_leftover(struct pma_heap *heap, const struct hdpm_super *sb);

/* the chunk of inode ino and its index in it: chunk k starts at
 * n0 * (2^k - 1) */
static inline unsigned hdpm_ichunk_of(const struct hdpm_fs *fs, uint64_t ino,
				      uint64_t *ret_idx)
{
	uint64_t q = (ino >> fs->ilog2) + 1;
	unsigned k = 63u - (unsigned)__builtin_clzll(q);

	*ret_idx = ino - ((((uint64_t)1 << k) - 1) << fs->ilog2);
	return k;
}

/* inodes of chunks 0..k-1 */
static inline uint64_t hdpm_ichunk_base(const struct hdpm_fs *fs, unsigned k)
{
	return (((uint64_t)1 << k) - 1) << fs->ilog2;
}

/* ninodes for threads that hold no namespace lock */
static inline uint64_t hdpm_ninodes(struct hdpm_fs *fs)
{
	return __atomic_load_n(&fs->ninodes, __ATOMIC_ACQUIRE);
}

static inline struct hdpm_inode *hdpm_inode(struct hdpm_fs *fs, uint64_t ino)
{
	uint64_t idx;
	unsigned k = hdpm_ichunk_of(fs, ino, &idx);

	return &fs->ichunk[k][idx];
}

static inline struct hdpm_ilock *hdpm_ilock(struct hdpm_fs *fs, uint64_t ino)
{
	uint64_t idx;
	unsigned k = hdpm_ichunk_of(fs, ino, &idx);

	return &fs->lchunk[k][idx];
}

static inline void hdpm_rdlock(struct hdpm_fs *fs, uint64_t ino)
{
	pthread_rwlock_rdlock(&hdpm_ilock(fs, ino)->rw);
}

static inline void hdpm_wrlock(struct hdpm_fs *fs, uint64_t ino)
{
	pthread_rwlock_wrlock(&hdpm_ilock(fs, ino)->rw);
}

static inline void hdpm_unlock(struct hdpm_fs *fs, uint64_t ino)
{
	pthread_rwlock_unlock(&hdpm_ilock(fs, ino)->rw);
}

/* the counters of struct hdpm_stats are bumped by threads in parallel */
#define hdpm_stat_add(fs, field, n)                                  \
	((void)__atomic_add_fetch(&(fs)->stats.field, (uint64_t)(n), \
				  __ATOMIC_RELAXED))

/* ------------------------------------------------------------ tx.c */

uint64_t hdpm_jseq(const struct hdpm_tx *tx);
/* the slots' locks (mount, first); destroy them */
void hdpm_tx_locks_init(struct hdpm_fs *fs);
void hdpm_tx_fini(struct hdpm_fs *fs);
/* find the journal slots from the superblock (mount, after the upgrade):
 * a version 4 fs has HDPM_JSLOTS, an older (read-only) one 1; -EIO */
int hdpm_tx_init(struct hdpm_fs *fs);
/* start an operation in a free journal slot (or wait for this thread's
 * hashed one), which commit or abort gives back (the caller holds the
 * locks of what the operation changes, no tx running in this thread) */
struct hdpm_tx *hdpm_tx_begin(struct hdpm_fs *fs);
/* journal word's current value (durable before the word changes) */
int hdpm_tx_log(struct hdpm_tx *tx, enum hdpm_rec_kind kind, uint64_t *word);
/* journal a commit action on inode ino (FREE_TAIL from page first) */
int hdpm_tx_log_free(struct hdpm_tx *tx, enum hdpm_rec_kind kind, uint64_t ino,
		     uint64_t first);
/* allocate size bytes (through the slot's alloc_slot) and store the
 * offset in *word (journaled before) and flush it; -ENOSPC */
int hdpm_tx_alloc(struct hdpm_tx *tx, size_t size, uint64_t *word);
/* *word = value, flushed (journaled before) */
void hdpm_tx_set(struct hdpm_fs *fs, uint64_t *word, uint64_t value);
/* make everything durable and commit; run the commit actions */
int hdpm_tx_commit(struct hdpm_tx *tx);
/* undo the running tx (after an error inside it) */
void hdpm_tx_abort(struct hdpm_tx *tx);
/* mount: finish or undo what every journal slot holds */
int hdpm_tx_recover(struct hdpm_fs *fs);
/* is any journal slot not idle? */
int hdpm_tx_pending(struct hdpm_fs *fs);
/* free the block at off through the free word fw (a slot's free_slot,
 * or gc_free_slot), and its log first for a page; a block not live is
 * skipped. At mount (fs->recovering) a block is freed only if no word
 * but the ones given names it: before the crash it may have been freed
 * and handed out again (hdpm_block_named_other) */
int hdpm_block_free(struct hdpm_fs *fs, uint64_t *fw, uint64_t off,
		    int is_page);
/* mount, every journal recovered: if a slot's undo (orphans) or the GC's
 * (gc_orphans) had an allocation in flight, free every live block no
 * word names (a sweep of the heap), then let those journals go */
int hdpm_recover_orphans(struct hdpm_fs *fs);
/* void the GC journal's record (the orphan sweep is done) */
void hdpm_gc_rec_clear(struct hdpm_fs *fs);
/* the words a re-run frees from, which do not count as naming: except
 * (one word), inode skip_ino's index entries from skip_from on (with
 * their logs), and with skip_from 0 its index and name blocks too */
struct hdpm_skip {
	const uint64_t *except;
	uint64_t skip_ino; /* UINT64_MAX: none */
	uint64_t skip_from;
};
int hdpm_block_free_skip(struct hdpm_fs *fs, uint64_t *fw, uint64_t off,
			 int is_page, const struct hdpm_skip *skip);
int hdpm_block_live(struct hdpm_fs *fs, uint64_t off);

/* does any word of the file system name block off? (a full scan) */
int hdpm_block_named(struct hdpm_fs *fs, uint64_t off);
/* ... any word but the ones skip says (skip may be NULL) */
int hdpm_block_named_other(struct hdpm_fs *fs, uint64_t off,
			   const struct hdpm_skip *skip);

/* ------------------------------------------------------------ gc.c */

/* writer side of the handshake: claim every page (a journaled operation,
 * its slot held) / release; claim one page of inode ino (its write lock
 * held) / release */
void hdpm_gc_claim_all(struct hdpm_fs *fs);
void hdpm_gc_release_all(struct hdpm_fs *fs);
void hdpm_gc_claim_page(struct hdpm_fs *fs, uint64_t ino, uint64_t page_off);
void hdpm_gc_release_page(struct hdpm_fs *fs, uint64_t ino);
/* the background step (hdpm_gc with HDPM_GC_BACKGROUND_STEP) */
int hdpm_gc_background(struct hdpm_fs *fs, unsigned flags);
/* mount: finish or undo what the GC journal holds (after the tx journal) */
int hdpm_gc_recover(struct hdpm_fs *fs);
/* mount: check and take cfg (NULL: defaults); start the thread; stop
 * it and free the state (accepts a state never set up) */
int hdpm_gc_init(struct hdpm_fs *fs, const struct hdpm_gc_config *cfg);
int hdpm_gc_start(struct hdpm_fs *fs);
void hdpm_gc_stop(struct hdpm_fs *fs);

/* ------------------------------------------------------------ page.c */

struct hdpm_page_hdr *hdpm_page_hdr(struct hdpm_fs *fs, uint64_t page_off);
/* read [a, b) of page (page_off may be 0: zeros) into dst: reverse scan */
void hdpm_page_read(struct hdpm_fs *fs, uint64_t page_off, unsigned a,
		    unsigned b, char *dst);
/* the same with the log read up to tail (the background GC's snapshot) */
void hdpm_page_read_at(struct hdpm_fs *fs, uint64_t page_off, uint64_t log_off,
		       uint64_t tail, unsigned a, unsigned b, char *dst);
/* can [a, a+len) go to page's log (no merge due, room left)? */
int hdpm_page_log_fits(struct hdpm_fs *fs, uint64_t page_off, unsigned len);
/* ... and without a journal: no overflow chunk to allocate */
int hdpm_page_log_fast(struct hdpm_fs *fs, uint64_t page_off, unsigned len);
/* void the log entry at pos (undo of a journaled append), flushed */
void hdpm_page_void_entry(struct hdpm_fs *fs, uint64_t page_off, uint64_t pos);
/* a new page object in obj (HDPM_PAGE_NEW_SIZE bytes): header with a new
 * nonce, empty log; the caller fills the data; returns the bytes to copy */
size_t hdpm_page_prepare(struct hdpm_fs *fs, char *obj);
/* write the new page object prepared in obj (data filled) to dst and
 * flush it, except for the data's zero tail: obj's header says where it
 * starts. Returns the data bytes not written */
uint64_t hdpm_page_write_new(struct hdpm_fs *fs, void *dst, char *obj);
/* append (tx: inside that tx, which journals the tail; NULL: the
 * one-append path, which needs hdpm_page_log_fast) */
int hdpm_page_log_append(struct hdpm_fs *fs, struct hdpm_tx *tx,
			 uint64_t page_off, unsigned a, const char *data,
			 unsigned len);
/* copy-on-write of the page named by *entry: the new page holds the old
 * content (base + log), with [a, a+len) from data (data NULL: zeros);
 * inside a tx */
int hdpm_page_cow(struct hdpm_tx *tx, uint64_t *entry, unsigned a,
		  const char *data, unsigned len);
/* validate a page's log at mount; cuts a torn tail (returns 1 if cut) */
int hdpm_page_log_check(struct hdpm_fs *fs, uint64_t page_off);
/* the valid entries of a page's log, oldest first, into ret_ents
 * (HDPM_LOG_TOTAL / HDPM_LOG_ALIGN slots); returns the count, and where
 * the last one ends in *ret_end */
unsigned hdpm_page_log_entries(struct hdpm_fs *fs, uint64_t page_off,
			       struct hdpm_log_ent **ret_ents,
			       uint64_t *ret_end);
/* merge a page's log in its own tx (inline GC) */
int hdpm_page_merge(struct hdpm_fs *fs, uint64_t *entry);

/* ------------------------------------------------------------ fs.c */

/* add the next chunk to the inode table (ns_lock held for writing):
 * journaled; -ENOSPC when all HDPM_ICHUNKS are in use */
int hdpm_itable_grow(struct hdpm_fs *fs);

/* ------------------------------------------------------------ file.c */

uint64_t hdpm_inode_pages(struct hdpm_fs *fs, const struct hdpm_inode *inode);
uint64_t *hdpm_inode_index(struct hdpm_fs *fs, const struct hdpm_inode *inode);
/* set the size inside a tx (shrink: zero the tail, drop pages) */
int hdpm_inode_truncate(struct hdpm_tx *tx, uint64_t ino, uint64_t size);

/* ------------------------------------------------------------ names.c */

/* allocate and build from the inode table (mount); free (accepts none) */
int hdpm_names_init(struct hdpm_fs *fs);
void hdpm_names_fini(struct hdpm_fs *fs);
/* forget everything and build again from the inode table */
int hdpm_names_rebuild(struct hdpm_fs *fs);
/* the index for ninodes inodes (growth): new arrays, or -ENOMEM and the
 * old ones kept; hdpm_names_swap installs them and rebuilds (after
 * fs->ninodes grew) or frees them (n 0) */
struct hdpm_names_new {
	uint64_t *slots;
	size_t cap;
	struct hdpm_name_ref *ref;
	uint32_t *nchild;
	uint64_t *first;
};
int hdpm_names_alloc(uint64_t ninodes, struct hdpm_names_new *nn);
void hdpm_names_swap(struct hdpm_fs *fs, struct hdpm_names_new *nn,
		     int install);
uint64_t hdpm_names_hash(const struct hdpm_names *nx, uint64_t dir,
			 const char *name, size_t len);
/* the child of dir called name[0..len); -ENOENT */
int hdpm_names_find(struct hdpm_fs *fs, uint64_t dir, const char *name,
		    size_t len, uint64_t *ret_ino);
/* put ino in as the table has it now (if used and not in); take it out */
void hdpm_names_add(struct hdpm_fs *fs, uint64_t ino);
void hdpm_names_del(struct hdpm_fs *fs, uint64_t ino);
/* entries in directory dir */
uint64_t hdpm_names_children(struct hdpm_fs *fs, uint64_t dir);
/* dir's first entry / the entry after ino in its directory (inode + 1,
 * 0 at the end): readdir walks these instead of the inode table */
uint64_t hdpm_names_first(struct hdpm_fs *fs, uint64_t dir);
uint64_t hdpm_names_next(struct hdpm_fs *fs, uint64_t ino);

/* ------------------------------------------------------------ namei.c */

int hdpm_lookup(struct hdpm_fs *fs, const char *path, uint64_t *ret_ino);
int hdpm_create(struct hdpm_fs *fs, const char *path, mode_t mode,
		uint64_t *ret_ino);
void hdpm_inode_stat(struct hdpm_fs *fs, uint64_t ino, struct stat *st);

static inline uint32_t hdpm_mode(const struct hdpm_inode *inode)
{
	return (uint32_t)inode->mode_gen;
}

static inline uint32_t hdpm_gen(const struct hdpm_inode *inode)
{
	return (uint32_t)(inode->mode_gen >> 32);
}

static inline void *hdpm_direct(struct hdpm_fs *fs, uint64_t off)
{
	return pma_direct(fs->heap, off);
}

static inline uint64_t hdpm_off(struct hdpm_fs *fs, const void *addr)
{
	return pma_offset(fs->heap, addr);
}

#endif
