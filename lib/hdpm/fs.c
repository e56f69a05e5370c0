/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpm fs: mount (format a new root, recover the journal, cut torn log
 * tails), unmount, the GC pass, counters and the error message.
 * Recovery costs the journal (at most HDPM_TX_MAX records) plus one log
 * check per page that has a log.
 */
#include <stdlib.h>
#include <string.h>

#include "hdpm/internal.h"
#include "util/errmsg.h"
#include "util/log.h"

const char *hdpm_errormsg(void)
{
	return util_errmsg();
}

/* a new file system in the zeroed root: inode table, "/", magic last */
unsigned hdpm_test_itable_log2;

/* journal slots 1.. (zeroed: every slot idle) in sb->jslots_off, a word
 * never freed, so it may be the allocator's dest; one left by a format
 * or an upgrade that crashed is zeroed again */
static int jslots_make(struct hdpm_fs *fs)
{
	struct hdpm_super *sb = fs->sb;
	size_t size = sizeof(struct hdpm_jslots);
	int rc;

	if (hdpm_block_live(fs, sb->jslots_off)) {
		if (pma_usable_size(fs->heap, sb->jslots_off) < size)
			return util_errmsg_set(
				EIO, "bad journal slots 0x%llx",
				(unsigned long long)sb->jslots_off);
		pma_memset_flush(fs->heap, hdpm_direct(fs, sb->jslots_off), 0,
				 size);
		return 0;
	}
	rc = pma_zalloc_to(fs->heap, size, &sb->jslots_off);
	if (rc < 0)
		return util_errmsg_set(ENOSPC,
				       "no space for the journal slots: %s",
				       pma_errormsg());
	/* the allocator's log makes the word recoverable; the version
	 * that names the block as the slots must find it stored */
	pma_persist(fs->heap, &sb->jslots_off, sizeof(sb->jslots_off));
	return 0;
}

/*
 * A superblock without magic is a new root object (zeroed) or a format
 * that crashed (the magic is written last), whose inode table, if it got
 * one, is reused: no word but those a format writes may be set, and the
 * table must be a live block of the table's size that holds nothing but
 * what the format writes (inode 0). Else it is a damaged file system,
 * whose files a format would wipe (or another object): -EIO, nothing
 * written.
 */
static size_t format_table_size(void)
{
	return (hdpm_test_itable_log2 ? (size_t)1 << hdpm_test_itable_log2 :
					HDPM_NINODES) *
	       sizeof(struct hdpm_inode);
}

int hdpm_format_leftover(struct pma_heap *heap, const struct hdpm_super *sb)
{
	size_t i, size = format_table_size();
	const struct hdpm_inode *in;
	const unsigned char *p;
	struct hdpm_super rest;

	memcpy(&rest, sb, sizeof(rest));
	/* a format writes these words before the magic; the root object
	 * was zeroed when made, so every other word is still 0 */
	rest.version = 0;
	rest.itable_log2 = 0;
	rest.itable_off = 0;
	rest.ninodes = 0;
	rest.jslots_off = 0;
	p = (const unsigned char *)&rest;
	for (i = 0; i < sizeof(rest); i++)
		if (p[i])
			return util_errmsg_set(
				EIO,
				"the superblock has no magic (a format that "
				"crashed?) but its byte %zu is not 0 (no "
				"format writes it): a damaged file system",
				i);
	if (!sb->itable_off)
		return 0;
	if (pma_usable_size(heap, sb->itable_off) < size ||
	    !(in = pma_direct(heap, sb->itable_off)))
		return util_errmsg_set(EIO,
				       "the superblock has no magic (a "
				       "format that crashed?) but its inode "
				       "table 0x%llx is not a live block of "
				       "%zu bytes: a damaged file system",
				       (unsigned long long)sb->itable_off,
				       size);
	p = (const unsigned char *)(in + 1);
	for (i = 0; i < size - sizeof(*in); i++)
		if (p[i])
			return util_errmsg_set(
				EIO,
				"the superblock has no magic (a format that "
				"crashed?) but its inode table 0x%llx holds "
				"inode %zu: a damaged file system, which a "
				"format would wipe",
				(unsigned long long)sb->itable_off,
				i / sizeof(*in) + 1);
	return 0;
}

static int fs_format(struct hdpm_fs *fs)
{
	struct hdpm_super *sb = fs->sb;
	struct hdpm_inode *root;
	size_t size = format_table_size();
	uint64_t n0 = size / sizeof(struct hdpm_inode);
	int rc;

	/* (a crashed format's superblock, or a zeroed root object) */
	rc = hdpm_format_leftover(fs->heap, sb);
	if (rc < 0)
		return rc;
	if (!sb->itable_off) {
		rc = pma_zalloc_to(fs->heap, size, &sb->itable_off);
		if (rc < 0)
			return util_errmsg_set(ENOSPC,
					       "no space for the inode "
					       "table: %s",
					       pma_errormsg());
	} else {
		/* a format that crashed: its table is reused */
		pma_memset_flush(fs->heap, hdpm_direct(fs, sb->itable_off), 0,
				 size);
	}
	rc = jslots_make(fs);
	if (rc < 0)
		return rc;
	root = hdpm_direct(fs, sb->itable_off);
	root->mode_gen = 1ULL << 32 | S_IFDIR | 0755;
	pma_flush(fs->heap, root, sizeof(*root));
	sb->version = HDPM_VERSION;
	sb->itable_log2 = hdpm_test_itable_log2;
	sb->ninodes = n0;
	pma_persist(fs->heap, sb, 64);
	/* everything above is durable before the magic makes it a fs */
	memcpy(sb->magic, HDPM_MAGIC, HDPM_MAGIC_LEN);
	pma_persist(fs->heap, sb->magic, HDPM_MAGIC_LEN);
	return 0;
}

/* map the inode table's chunks: ninodes must be exactly what the
 * chunks in use hold (at mount, and again after the journal's undo) */
static int itable_load(struct hdpm_fs *fs)
{
	struct hdpm_super *sb = fs->sb;
	unsigned k, log2 = sb->itable_log2 ? sb->itable_log2 : 12;
	uint64_t n, have = 0, off;

	if (log2 > 20)
		return util_errmsg_set(EIO,
				       "bad inode table: first chunk of "
				       "2^%u inodes",
				       log2);
	fs->ilog2 = log2;
	for (k = 0; k < HDPM_ICHUNKS && have < sb->ninodes; k++) {
		n = (uint64_t)1 << (log2 + k);
		off = k ? sb->itable_more[k - 1] : sb->itable_off;
		if (!off || pma_usable_size(fs->heap, off) <
				    n * sizeof(struct hdpm_inode))
			return util_errmsg_set(EIO,
					       "bad inode table chunk %u "
					       "0x%llx (%llu inodes)",
					       k, (unsigned long long)off,
					       (unsigned long long)n);
		fs->ichunk[k] = hdpm_direct(fs, off);
		have += n;
	}
	if (!sb->ninodes || sb->ninodes != have)
		return util_errmsg_set(EIO,
				       "bad inode table 0x%llx (%llu "
				       "inodes)",
				       (unsigned long long)sb->itable_off,
				       (unsigned long long)sb->ninodes);
	for (; k < HDPM_ICHUNKS; k++)
		fs->ichunk[k] = NULL;
	fs->ninodes = have;
	return 0;
}

static int fs_attach(struct hdpm_fs *fs)
{
	struct hdpm_super *sb = fs->sb;
	static const char zero[HDPM_MAGIC_LEN];
	int rc;

	if (memcmp(sb->magic, zero, sizeof(zero)) == 0) {
		if (fs->rdonly)
			return util_errmsg_set(ENOENT, "the heap holds no "
						       "HDPM file system yet");
		rc = fs_format(fs);
		if (rc < 0)
			return rc;
	} else if (memcmp(sb->magic, HDPM_MAGIC, HDPM_MAGIC_LEN) != 0) {
		return util_errmsg_set(EINVAL, "the heap's root object is not "
					       "an HDPM file system");
	}
	if (sb->version < HDPM_VERSION_OLDEST || sb->version > HDPM_VERSION)
		return util_errmsg_set(EINVAL, "HDPM version %u, want %u..%u",
				       sb->version, HDPM_VERSION_OLDEST,
				       HDPM_VERSION);
	/* version 2 pages are version 3 pages with no zero tail, and their
	 * one journal is slot 0: the upgrade makes the other slots (idle),
	 * then one persisted store, before anything writes a page. A crash
	 * in between leaves the old version and a block it reuses */
	if (sb->version != HDPM_VERSION && !fs->rdonly) {
		if (jslots_make(fs) < 0)
			return -ENOSPC;
		/* the slots are zero on media before the version says so */
		pma_drain(fs->heap);
		sb->version = HDPM_VERSION;
		pma_persist(fs->heap, &sb->version, sizeof(sb->version));
		hdpm_stat_add(fs, upgrades, 1);
	}
	if (hdpm_tx_init(fs) < 0)
		return -EIO;
	return itable_load(fs);
}

/* an inode's index and pages must be live blocks of the heap */
static int inode_check(struct hdpm_fs *fs, uint64_t ino)
{
	struct hdpm_inode *in = hdpm_inode(fs, ino);
	uint64_t *index, p;

	if (!in->index_off)
		return 0;
	/* (a damaged cap: cap * 8 must not wrap past the block's size) */
	if (in->index_cap > HDPM_MAX_PAGES ||
	    pma_usable_size(fs->heap, in->index_off) < in->index_cap * 8 ||
	    !(index = hdpm_inode_index(fs, in)))
		return util_errmsg_set(EIO, "inode %llu: bad index",
				       (unsigned long long)ino);
	for (p = 0; p < in->index_cap; p++) {
		if (!index[p])
			continue;
		if (pma_usable_size(fs->heap, index[p]) < HDPM_PAGE_OBJ_SIZE)
			return util_errmsg_set(EIO,
					       "inode %llu page %llu: "
					       "bad page 0x%llx",
					       (unsigned long long)ino,
					       (unsigned long long)p,
					       (unsigned long long)index[p]);
		if (!fs->rdonly)
			hdpm_stat_add(fs, log_tails_cut,
				      hdpm_page_log_check(fs, index[p]));
	}
	return 0;
}

static int fs_recover(struct hdpm_fs *fs)
{
	uint64_t i;
	int rc;

	if (!fs->rdonly) {
		/* new pages of this mount get nonces no earlier page had */
		fs->sb->mounts++;
		pma_persist(fs->heap, &fs->sb->mounts, sizeof(fs->sb->mounts));
	}
	fs->nonce_base = fs->sb->mounts << 32;
	fs->recovering = 1;
	rc = fs->rdonly ? 0 : hdpm_tx_recover(fs);
	/* an interrupted growth of the inode table was undone */
	if (rc == 0)
		rc = itable_load(fs);
	/* after the tx journal: its undo may put back a word the GC's
	 * recovery looks at */
	if (rc == 0 && !fs->rdonly)
		rc = hdpm_gc_recover(fs);
	/* the words are final: what an allocation left unnamed goes */
	if (rc == 0 && !fs->rdonly)
		rc = hdpm_recover_orphans(fs);
	fs->recovering = 0;
	if (rc < 0)
		return rc;
	for (i = 0; i < fs->ninodes; i++) {
		if (!hdpm_mode(hdpm_inode(fs, i)))
			continue;
		rc = inode_check(fs, i);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static_assert(sizeof(struct hdpm_stats) % sizeof(uint64_t) == 0,
	      "hdpm_stats holds only uint64_t counters");

/* the locks of chunk k (DRAM); writers first, so that a stream of
 * readers of one file does not starve its writer (or the GC's barrier) */
static int lchunk_alloc(struct hdpm_fs *fs, unsigned k)
{
	uint64_t i, n = (uint64_t)1 << (fs->ilog2 + k);
	pthread_rwlockattr_t attr;
	struct hdpm_ilock *l;

	l = aligned_alloc(64, n * sizeof(*l));
	if (!l)
		return util_errmsg_set(ENOMEM, "no memory for inode locks");
	memset(l, 0, n * sizeof(*l));
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(
		&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	for (i = 0; i < n; i++)
		pthread_rwlock_init(&l[i].rw, &attr);
	pthread_rwlockattr_destroy(&attr);
	fs->lchunk[k] = l;
	return 0;
}

static int ilocks_init(struct hdpm_fs *fs)
{
	unsigned k;
	int rc;

	for (k = 0; k < HDPM_ICHUNKS && fs->ichunk[k]; k++) {
		rc = lchunk_alloc(fs, k);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static void ilocks_fini(struct hdpm_fs *fs)
{
	uint64_t i;
	unsigned k;

	for (k = 0; k < HDPM_ICHUNKS; k++) {
		for (i = 0; fs->lchunk[k] && i < (uint64_t)1 << (fs->ilog2 + k);
		     i++)
			pthread_rwlock_destroy(&fs->lchunk[k][i].rw);
		free(fs->lchunk[k]);
		fs->lchunk[k] = NULL;
	}
}

int hdpm_itable_grow(struct hdpm_fs *fs)
{
	struct hdpm_super *sb = fs->sb;
	struct hdpm_names_new nn;
	uint64_t n, want, *word;
	struct hdpm_tx *tx;
	unsigned k = 1;
	int rc;

	while (k < HDPM_ICHUNKS && fs->ichunk[k])
		k++;
	if (k >= HDPM_ICHUNKS)
		return util_errmsg_set(ENOSPC, "no free inode (of %llu)",
				       (unsigned long long)fs->ninodes);
	n = (uint64_t)1 << (fs->ilog2 + k);
	want = fs->ninodes + n;
	/* DRAM first: a failure leaves the file system as it was */
	if (!fs->lchunk[k]) {
		rc = lchunk_alloc(fs, k);
		if (rc < 0)
			return rc;
	}
	rc = hdpm_names_alloc(want, &nn);
	if (rc < 0)
		return rc;
	word = &sb->itable_more[k - 1];
	tx = hdpm_tx_begin(fs);
	rc = hdpm_tx_log(tx, HDPM_REC_BLOCK, word);
	if (rc == 0)
		rc = hdpm_tx_log(tx, HDPM_REC_WORD, &sb->ninodes);
	if (rc == 0)
		rc = hdpm_tx_alloc(tx, n * sizeof(struct hdpm_inode), word);
	if (rc < 0) {
		hdpm_tx_abort(tx);
		hdpm_names_swap(fs, &nn, 0);
		return rc;
	}
	pma_memset_flush(fs->heap, hdpm_direct(fs, *word), 0,
			 n * sizeof(struct hdpm_inode));
	/* the chunk is zero on media before ninodes can cover it */
	pma_drain(fs->heap);
	hdpm_tx_set(fs, &sb->ninodes, want);
	rc = hdpm_tx_commit(tx);
	if (rc < 0) {
		hdpm_names_swap(fs, &nn, 0);
		return rc;
	}
	fs->ichunk[k] = hdpm_direct(fs, *word);
	/* lock-free readers (the GC's scan) see the chunk before the count */
	__atomic_store_n(&fs->ninodes, want, __ATOMIC_RELEASE);
	hdpm_names_swap(fs, &nn, 1);
	return 0;
}

int hdpm_mount(struct pma_heap *heap, unsigned flags, struct hdpm_fs **ret_fs)
{
	return hdpm_mount_config(heap, flags, NULL, ret_fs);
}

int hdpm_mount_config(struct pma_heap *heap, unsigned flags,
		      const struct hdpm_gc_config *cfg, struct hdpm_fs **ret_fs)
{
	struct hdpm_fs *fs;
	uint64_t root;
	int rc;

	if (!heap || !ret_fs ||
	    (flags &
	     ~(unsigned)(HDPM_COW_ONLY | HDPM_RDONLY | HDPM_NO_GC_THREAD)))
		return util_errmsg_set(EINVAL, "bad arguments");
	rc = pma_root(heap, sizeof(struct hdpm_super), &root);
	if (rc < 0)
		return rc;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return util_errmsg_set(ENOMEM, "out of memory");
	fs->heap = heap;
	fs->sb = pma_direct(heap, root);
	fs->cow_only = (flags & HDPM_COW_ONLY) != 0;
	fs->rdonly = (flags & HDPM_RDONLY) != 0;
	pthread_rwlock_init(&fs->ns_lock, NULL);
	hdpm_tx_locks_init(fs);
	rc = hdpm_gc_init(fs, cfg);
	if (rc == 0)
		rc = fs_attach(fs);
	if (rc == 0)
		rc = fs_recover(fs);
	if (rc == 0)
		rc = ilocks_init(fs);
	if (rc == 0)
		rc = hdpm_names_init(fs);
	/* CoW-only keeps no logs: nothing for a thread to merge */
	if (rc == 0 && !(flags & (HDPM_NO_GC_THREAD | HDPM_RDONLY)) &&
	    !fs->cow_only)
		rc = hdpm_gc_start(fs);
	if (rc < 0) {
		hdpm_unmount(fs);
		return rc;
	}
	*ret_fs = fs;
	return 0;
}

void hdpm_unmount(struct hdpm_fs *fs)
{
	if (!fs)
		return;
	hdpm_gc_stop(fs);
	hdpm_names_fini(fs);
	ilocks_fini(fs);
	hdpm_tx_fini(fs);
	pthread_rwlock_destroy(&fs->ns_lock);
	free(fs);
}

/* merge every page log of inode ino; the count merged */
static int gc_inode(struct hdpm_fs *fs, uint64_t ino)
{
	struct hdpm_inode *in = hdpm_inode(fs, ino);
	uint64_t *index = hdpm_inode_index(fs, in), p;
	int rc, n = 0;

	for (p = 0; index && p < in->index_cap; p++) {
		if (!index[p] || !hdpm_page_hdr(fs, index[p])->log_tail)
			continue;
		rc = hdpm_page_merge(fs, &index[p]);
		if (rc < 0)
			return rc;
		n++;
	}
	return n;
}

int hdpm_gc(struct hdpm_fs *fs, unsigned flags)
{
	uint64_t i;
	int rc = 0, n = 0;

	if (!fs ||
	    (flags & ~(unsigned)(HDPM_GC_BACKGROUND_STEP | HDPM_GC_FORCE)) ||
	    flags == HDPM_GC_FORCE)
		return util_errmsg_set(EINVAL, "bad arguments");
	if (fs->rdonly)
		return util_errmsg_set(EROFS, "read-only mount");
	if (flags & HDPM_GC_BACKGROUND_STEP)
		return hdpm_gc_background(fs, flags);
	pthread_rwlock_rdlock(&fs->ns_lock);
	for (i = 1; i < fs->ninodes && rc >= 0; i++) {
		if (!S_ISREG(hdpm_mode(hdpm_inode(fs, i))))
			continue;
		hdpm_wrlock(fs, i);
		rc = gc_inode(fs, i);
		hdpm_unlock(fs, i);
		if (rc > 0)
			n += rc;
	}
	pthread_rwlock_unlock(&fs->ns_lock);
	return rc < 0 ? rc : n;
}

void hdpm_stats(struct hdpm_fs *fs, struct hdpm_stats *ret_stats)
{
	const uint64_t *src;
	uint64_t *dst = (uint64_t *)ret_stats;
	size_t i;

	if (!fs || !ret_stats)
		return;
	src = (const uint64_t *)&fs->stats;
	/* every field is a uint64_t counter, bumped atomically */
	for (i = 0; i < sizeof(*ret_stats) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	ret_stats->bg_steps = __atomic_load_n(&fs->gc.steps, __ATOMIC_RELAXED);
	ret_stats->bg_merges =
		__atomic_load_n(&fs->gc.merges, __ATOMIC_RELAXED);
	ret_stats->bg_lost = __atomic_load_n(&fs->gc.lost, __ATOMIC_RELAXED);
	ret_stats->bg_recovered =
		__atomic_load_n(&fs->gc.recovered, __ATOMIC_RELAXED);
	ret_stats->zero_tail_bytes =
		__atomic_load_n(&fs->zero_tail_bytes, __ATOMIC_RELAXED);
}
