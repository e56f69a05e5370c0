/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpm file: open files, and the write path that chooses per page:
 * a page-aligned full page (or a page with no base yet, or any page in
 * HDPM_COW_ONLY mode, or one whose log is due for a merge) is written
 * copy-on-write; any other partial page gets a log entry. A write that
 * touches one page, keeps the size and finds room in an existing log is
 * one append (its tail store commits it); everything else is one
 * journaled operation, so a write of many pages is atomic too.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hdpm/internal.h"
#include "util/errmsg.h"

uint64_t *hdpm_inode_index(struct hdpm_fs *fs, const struct hdpm_inode *inode)
{
	return inode->index_off ? hdpm_direct(fs, inode->index_off) : NULL;
}

/* pages of the file that have a base page */
uint64_t hdpm_inode_pages(struct hdpm_fs *fs, const struct hdpm_inode *inode)
{
	uint64_t *index = hdpm_inode_index(fs, inode), p, n = 0;

	for (p = 0; index && p < inode->index_cap; p++)
		n += index[p] != 0;
	return n;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* room for npages entries: a bigger index, in its own operation (a
 * larger index with zero entries changes no file's content) */
static int index_grow(struct hdpm_fs *fs, struct hdpm_inode *inode,
		      uint64_t npages)
{
	uint64_t cap = inode->index_cap, *old = hdpm_inode_index(fs, inode);
	uint64_t *index;
	struct hdpm_tx *tx;
	int rc;

	if (npages <= cap)
		return 0;
	cap = cap * 2 > npages ? cap * 2 : npages;
	if (cap < 16)
		cap = 16;
	tx = hdpm_tx_begin(fs);
	rc = hdpm_tx_log(tx, HDPM_REC_BLOCK, &inode->index_off);
	if (rc == 0)
		rc = hdpm_tx_log(tx, HDPM_REC_WORD, &inode->index_cap);
	if (rc == 0)
		rc = hdpm_tx_alloc(tx, cap * 8, &inode->index_off);
	if (rc < 0)
		goto out_abort;
	index = hdpm_direct(fs, inode->index_off);
	if (old)
		pma_memcpy_flush(fs->heap, index, old, inode->index_cap * 8);
	pma_memset_flush(fs->heap, index + inode->index_cap, 0,
			 (cap - inode->index_cap) * 8);
	hdpm_tx_set(fs, &inode->index_cap, cap);
	return hdpm_tx_commit(tx);

out_abort:
	hdpm_tx_abort(tx);
	return rc;
}

static int file_check(struct hdpm_file *file, int need)
{
	struct hdpm_inode *inode;
	int acc;

	inode = hdpm_inode(file->fs, file->ino);
	if (!S_ISREG(hdpm_mode(inode)) || hdpm_gen(inode) != file->gen)
		return util_errmsg_set(ESTALE, "file was removed");
	acc = file->oflags & O_ACCMODE;
	if ((need == O_WRONLY && acc == O_RDONLY) ||
	    (need == O_RDONLY && acc == O_WRONLY))
		return util_errmsg_set(EBADF, "file not open for %s",
				       need == O_RDONLY ? "reading" :
							  "writing");
	return 0;
}

/* one page's part of a write, inside the tx */
static int write_page(struct hdpm_tx *tx, uint64_t *entry, unsigned a,
		      const char *data, unsigned len)
{
	struct hdpm_fs *fs = tx->fs;

	if (len == HDPM_PAGE_SIZE || fs->cow_only || !*entry)
		return hdpm_page_cow(tx, entry, a, data, len);
	if (!hdpm_page_log_fits(fs, *entry, len)) {
		/* inline GC: the log is merged with this write's data */
		if (hdpm_page_hdr(fs, *entry)->log_tail)
			hdpm_stat_add(fs, gc_merges, 1);
		return hdpm_page_cow(tx, entry, a, data, len);
	}
	return hdpm_page_log_append(fs, tx, *entry, a, data, len);
}

static int write_tx(struct hdpm_fs *fs, struct hdpm_inode *inode,
		    const char *buf, size_t len, uint64_t off)
{
	uint64_t *index = hdpm_inode_index(fs, inode), p, end = off + len;
	struct hdpm_tx *tx = hdpm_tx_begin(fs);
	size_t done = 0;
	unsigned a, n;
	int rc = 0;

	for (p = off / HDPM_PAGE_SIZE; rc == 0 && done < len; p++) {
		a = (unsigned)((off + done) % HDPM_PAGE_SIZE);
		n = HDPM_PAGE_SIZE - a;
		if (n > len - done)
			n = (unsigned)(len - done);
		rc = write_page(tx, &index[p], a, buf + done, n);
		done += n;
	}
	if (rc == 0 && end > inode->size) {
		rc = hdpm_tx_log(tx, HDPM_REC_WORD, &inode->size);
		if (rc == 0)
			hdpm_tx_set(fs, &inode->size, end);
	}
	if (rc < 0) {
		hdpm_tx_abort(tx);
		return rc;
	}
	return hdpm_tx_commit(tx);
}

/* the one-append write (no journal): its tail store commits it */
static int write_fast(struct hdpm_fs *fs, uint64_t ino,
		      struct hdpm_inode *inode, const char *buf, size_t len,
		      uint64_t off)
{
	uint64_t p = off / HDPM_PAGE_SIZE, *index = hdpm_inode_index(fs, inode);
	unsigned a = (unsigned)(off % HDPM_PAGE_SIZE);
	uint64_t page;
	int rc = 1;

	if (fs->cow_only || off + len > inode->size || !index ||
	    p >= inode->index_cap || !index[p] || a + len > HDPM_PAGE_SIZE ||
	    len == HDPM_PAGE_SIZE)
		return 1;
	/* the background GC may replace the page until it is claimed: the
	 * entry read after the claim is the one to append to */
	page = __atomic_load_n(&index[p], __ATOMIC_ACQUIRE);
	/* the log's first lines: their miss overlaps the header's (the
	 * entry's place depends on the tail read from the header) */
	__builtin_prefetch((char *)hdpm_page_hdr(fs, page) + HDPM_PAGE_LOG_OFF,
			   1);
	hdpm_gc_claim_page(fs, ino, page);
	if (__atomic_load_n(&index[p], __ATOMIC_ACQUIRE) == page &&
	    hdpm_page_log_fast(fs, page, (unsigned)len))
		rc = hdpm_page_log_append(fs, NULL, page, a, buf,
					  (unsigned)len);
	hdpm_gc_release_page(fs, ino);
	return rc;
}

/* the write (the inode's write lock held) */
static ssize_t do_pwrite(struct hdpm_file *file, const void *buf, size_t len,
			 uint64_t off)
{
	struct hdpm_fs *fs = file->fs;
	struct hdpm_inode *inode = hdpm_inode(fs, file->ino);
	uint64_t max = (uint64_t)HDPM_WRITE_MAX_PAGES * HDPM_PAGE_SIZE;
	int rc;

	if (file->oflags & O_APPEND)
		off = inode->size;
	if (off >= HDPM_MAX_PAGES * HDPM_PAGE_SIZE ||
	    len > HDPM_MAX_PAGES * HDPM_PAGE_SIZE - off)
		return util_errmsg_set(EFBIG, "write past the largest file");
	if (len > max - off % HDPM_PAGE_SIZE)
		len = max - off % HDPM_PAGE_SIZE;
	rc = index_grow(fs, inode, (off + len - 1) / HDPM_PAGE_SIZE + 1);
	if (rc < 0)
		return rc;
	rc = write_fast(fs, file->ino, inode, buf, len, off);
	if (rc > 0)
		rc = write_tx(fs, inode, buf, len, off);
	if (rc < 0)
		return rc;
	inode->mtime_ns = now_ns();
	return (ssize_t)len;
}

ssize_t hdpm_pwrite(struct hdpm_file *file, const void *buf, size_t len,
		    uint64_t off)
{
	ssize_t rc;

	if (!file || (!buf && len))
		return util_errmsg_set(EINVAL, "no file or buffer");
	hdpm_wrlock(file->fs, file->ino);
	rc = file_check(file, O_WRONLY);
	if (rc == 0 && len)
		rc = do_pwrite(file, buf, len, off);
	hdpm_unlock(file->fs, file->ino);
	return rc;
}

/* inline GC on the read path: merge the logs read that are past due
 * (merge 0: only say whether there is one) */
static int read_gc(struct hdpm_fs *fs, struct hdpm_inode *inode, uint64_t first,
		   uint64_t last, int merge)
{
	uint64_t *index = hdpm_inode_index(fs, inode), p, page;
	int due = 0;

	for (p = first; index && p <= last && p < inode->index_cap; p++) {
		page = __atomic_load_n(&index[p], __ATOMIC_ACQUIRE);
		if (!page || __atomic_load_n(&hdpm_page_hdr(fs, page)->log_tail,
					     __ATOMIC_RELAXED) <= HDPM_LOG_GC)
			continue;
		due = 1;
		if (!merge)
			break;
		(void)hdpm_page_merge(fs, &index[p]);
	}
	return due;
}

/* the read (the inode's read lock held); *ret_gc: a log read is due for
 * a merge */
static ssize_t do_pread(struct hdpm_file *file, char *buf, size_t len,
			uint64_t off, int *ret_gc)
{
	struct hdpm_fs *fs = file->fs;
	struct hdpm_inode *inode = hdpm_inode(fs, file->ino);
	uint64_t *index = hdpm_inode_index(fs, inode), p, pos;
	unsigned a, n;
	size_t done = 0;

	if (off >= inode->size)
		return 0;
	if (len > inode->size - off)
		len = inode->size - off;
	while (done < len) {
		pos = off + done;
		p = pos / HDPM_PAGE_SIZE;
		a = (unsigned)(pos % HDPM_PAGE_SIZE);
		n = HDPM_PAGE_SIZE - a;
		if (n > len - done)
			n = (unsigned)(len - done);
		/* acquire: the background GC publishes a page it wrote */
		hdpm_page_read(fs,
			       index && p < inode->index_cap ?
				       __atomic_load_n(&index[p],
						       __ATOMIC_ACQUIRE) :
				       0,
			       a, a + n, buf + done);
		done += n;
	}
	if (len && !fs->rdonly)
		*ret_gc = read_gc(fs, inode, off / HDPM_PAGE_SIZE,
				  (off + len - 1) / HDPM_PAGE_SIZE, 0);
	return (ssize_t)len;
}

ssize_t hdpm_pread(struct hdpm_file *file, void *buf, size_t len, uint64_t off)
{
	ssize_t rc;
	int gc = 0;

	if (!file || (!buf && len))
		return util_errmsg_set(EINVAL, "no file or buffer");
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	hdpm_rdlock(file->fs, file->ino);
	rc = file_check(file, O_RDONLY);
	if (rc == 0)
		rc = do_pread(file, buf, len, off, &gc);
	hdpm_unlock(file->fs, file->ino);
	/* the merge changes the index: under the write lock, checked again
	 * (a write may have merged meanwhile, or the file gone) */
	if (rc > 0 && gc) {
		hdpm_wrlock(file->fs, file->ino);
		if (file_check(file, O_RDONLY) == 0)
			(void)read_gc(file->fs, hdpm_inode(file->fs, file->ino),
				      off / HDPM_PAGE_SIZE,
				      (off + (uint64_t)rc - 1) / HDPM_PAGE_SIZE,
				      1);
		hdpm_unlock(file->fs, file->ino);
	}
	return rc;
}

int hdpm_inode_truncate(struct hdpm_tx *tx, uint64_t ino, uint64_t size)
{
	struct hdpm_fs *fs = tx->fs;
	struct hdpm_inode *inode = hdpm_inode(fs, ino);
	uint64_t *index = hdpm_inode_index(fs, inode);
	uint64_t keep = (size + HDPM_PAGE_SIZE - 1) / HDPM_PAGE_SIZE;
	unsigned a = (unsigned)(size % HDPM_PAGE_SIZE);
	int rc;

	if (size < inode->size && index && keep < inode->index_cap) {
		rc = hdpm_tx_log_free(tx, HDPM_REC_FREE_TAIL, ino, keep);
		if (rc < 0)
			return rc;
	}
	/* bytes past the size read as zeros: clear the kept page's tail */
	if (size < inode->size && a && index &&
	    size / HDPM_PAGE_SIZE < inode->index_cap &&
	    index[size / HDPM_PAGE_SIZE]) {
		rc = hdpm_page_cow(tx, &index[size / HDPM_PAGE_SIZE], a, NULL,
				   HDPM_PAGE_SIZE - a);
		if (rc < 0)
			return rc;
	}
	rc = hdpm_tx_log(tx, HDPM_REC_WORD, &inode->size);
	if (rc < 0)
		return rc;
	hdpm_tx_set(fs, &inode->size, size);
	return 0;
}

int hdpm_ftruncate(struct hdpm_file *file, uint64_t size)
{
	struct hdpm_fs *fs;
	struct hdpm_tx *tx;
	int rc;

	if (!file)
		return util_errmsg_set(EINVAL, "no file");
	if (size > HDPM_MAX_PAGES * HDPM_PAGE_SIZE)
		return util_errmsg_set(EFBIG, "size past the largest file");
	fs = file->fs;
	hdpm_wrlock(fs, file->ino);
	rc = file_check(file, O_WRONLY);
	if (rc < 0)
		goto out_unlock;
	tx = hdpm_tx_begin(fs);
	rc = hdpm_inode_truncate(tx, file->ino, size);
	if (rc < 0)
		hdpm_tx_abort(tx);
	else
		rc = hdpm_tx_commit(tx);
	if (rc == 0)
		hdpm_inode(fs, file->ino)->mtime_ns = now_ns();
out_unlock:
	hdpm_unlock(fs, file->ino);
	return rc;
}

int hdpm_open(struct hdpm_fs *fs, const char *path, int oflags, mode_t mode,
	      struct hdpm_file **ret_file)
{
	struct hdpm_file *file;
	struct hdpm_inode *inode;
	uint64_t ino;
	int rc, acc = oflags & O_ACCMODE;

	if (!fs || !ret_file || acc == O_ACCMODE)
		return util_errmsg_set(EINVAL, "bad arguments");
	if (fs->rdonly && (acc != O_RDONLY || (oflags & (O_CREAT | O_TRUNC))))
		return util_errmsg_set(EROFS, "read-only mount");
	file = calloc(1, sizeof(*file));
	if (!file)
		return util_errmsg_set(ENOMEM, "out of memory");
	/* a create changes the namespace: the lock for writing */
	if (oflags & O_CREAT)
		pthread_rwlock_wrlock(&fs->ns_lock);
	else
		pthread_rwlock_rdlock(&fs->ns_lock);
	rc = hdpm_lookup(fs, path, &ino);
	if (rc == -ENOENT && (oflags & O_CREAT))
		rc = hdpm_create(fs, path, S_IFREG | (mode & 07777), &ino);
	else if (rc == 0 && (oflags & O_CREAT) && (oflags & O_EXCL))
		rc = util_errmsg_set(EEXIST, "'%s' exists", path);
	if (rc < 0)
		goto out_free;
	inode = hdpm_inode(fs, ino);
	if (S_ISDIR(hdpm_mode(inode))) {
		rc = util_errmsg_set(EISDIR, "'%s' is a directory", path);
		goto out_free;
	}
	file->fs = fs;
	file->ino = ino;
	file->gen = hdpm_gen(inode);
	file->oflags = oflags;
	if ((oflags & O_TRUNC) && acc != O_RDONLY) {
		hdpm_wrlock(fs, ino);
		if (inode->size) {
			struct hdpm_tx *tx = hdpm_tx_begin(fs);

			rc = hdpm_inode_truncate(tx, ino, 0);
			if (rc < 0)
				hdpm_tx_abort(tx);
			else
				rc = hdpm_tx_commit(tx);
		}
		hdpm_unlock(fs, ino);
		if (rc < 0)
			goto out_free;
	}
	pthread_rwlock_unlock(&fs->ns_lock);
	*ret_file = file;
	return 0;

out_free:
	pthread_rwlock_unlock(&fs->ns_lock);
	free(file);
	return rc;
}

int hdpm_close(struct hdpm_file *file)
{
	free(file);
	return 0;
}
