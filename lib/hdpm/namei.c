/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpm namei: the directory namespace. An inode names its directory
 * (parent) and holds its own name (name block), so a directory is the set
 * of inodes whose parent it is and a rename changes two words of one
 * inode. Lookups go through the DRAM name index (names.c): each change
 * takes the inodes it touches out of it first and puts them back from the
 * table afterwards, whether the operation committed or was undone. Every
 * change is one journaled operation, under ns_lock held for writing; an
 * operation that frees an inode's blocks (unlink, rmdir, rename over an
 * entry) also holds that inode's write lock, so no read or write of an
 * open file is inside them. Lookups hold ns_lock for reading.
 */
#include <stdlib.h>
#include <string.h>

#include "hdpm/internal.h"
#include "util/errmsg.h"

static const char *inode_name(struct hdpm_fs *fs, const struct hdpm_inode *in)
{
	const char *name = in->name_off ? hdpm_direct(fs, in->name_off) : NULL;

	return name ? name : "";
}

/* the child of dir called name[0..len): by the name index */
static int child_find(struct hdpm_fs *fs, uint64_t dir, const char *name,
		      size_t len, uint64_t *ret_ino)
{
	return hdpm_names_find(fs, dir, name, len, ret_ino);
}

/* the next component of *path: its start and length; 0 at the end */
static size_t next_name(const char **path, const char **ret_name)
{
	const char *p = *path, *s;

	while (*p == '/')
		p++;
	s = p;
	while (*p && *p != '/')
		p++;
	*ret_name = s;
	*path = p;
	return (size_t)(p - s);
}

static int path_check(const char *path)
{
	const char *p, *name;
	size_t len;

	if (!path || path[0] != '/')
		return util_errmsg_set(EINVAL, "path must be absolute");
	if (strnlen(path, HDPM_PATH_MAX) >= HDPM_PATH_MAX)
		return util_errmsg_set(ENAMETOOLONG, "path too long");
	p = path;
	while ((len = next_name(&p, &name)) > 0) {
		if (len > HDPM_NAME_MAX)
			return util_errmsg_set(ENAMETOOLONG, "name too long");
		if ((len == 1 && name[0] == '.') ||
		    (len == 2 && name[0] == '.' && name[1] == '.'))
			return util_errmsg_set(EINVAL, "'.' and '..' are not "
						       "supported");
	}
	return 0;
}

/*
 * Resolve path up to its last component: *ret_dir is the directory that
 * holds it, *ret_name / *ret_len the last name (length 0 for "/").
 */
static int lookup_parent(struct hdpm_fs *fs, const char *path,
			 uint64_t *ret_dir, const char **ret_name,
			 size_t *ret_len)
{
	const char *p = path, *name, *next_p, *next;
	uint64_t dir = 0;
	size_t len, next_len;
	int rc;

	rc = path_check(path);
	if (rc < 0)
		return rc;
	len = next_name(&p, &name);
	while (len > 0) {
		next_p = p;
		next_len = next_name(&next_p, &next);
		if (next_len == 0)
			break; /* name is the last component */
		rc = child_find(fs, dir, name, len, &dir);
		if (rc < 0)
			return util_errmsg_set(ENOENT,
					       "'%s': no such directory", path);
		if (!S_ISDIR(hdpm_mode(hdpm_inode(fs, dir))))
			return util_errmsg_set(ENOTDIR, "'%s': not a directory",
					       path);
		name = next;
		len = next_len;
		p = next_p;
	}
	*ret_dir = dir;
	*ret_name = name;
	*ret_len = len;
	return 0;
}

int hdpm_lookup(struct hdpm_fs *fs, const char *path, uint64_t *ret_ino)
{
	const char *name = NULL;
	uint64_t dir = 0;
	size_t len = 0;
	int rc;

	rc = lookup_parent(fs, path, &dir, &name, &len);
	if (rc < 0)
		return rc;
	if (len == 0) {
		*ret_ino = 0;
		return 0;
	}
	rc = child_find(fs, dir, name, len, ret_ino);
	if (rc < 0)
		return util_errmsg_set(ENOENT, "'%s' does not exist", path);
	return 0;
}

/* a free inode slot; the table grows by a chunk when it has none (a
 * full table's scan runs once per growth: the chunks double) */
static int inode_alloc(struct hdpm_fs *fs, uint64_t *ret_ino)
{
	uint64_t i, from = 1;
	int rc;

	for (;;) {
		for (i = from; i < fs->ninodes; i++)
			if (!hdpm_mode(hdpm_inode(fs, i))) {
				*ret_ino = i;
				return 0;
			}
		from = fs->ninodes;
		rc = hdpm_itable_grow(fs);
		if (rc < 0)
			return rc;
	}
}

/* journal and store a new name block for inode */
static int name_set(struct hdpm_tx *tx, struct hdpm_inode *in, const char *name,
		    size_t len)
{
	struct hdpm_fs *fs = tx->fs;
	char *dst;
	int rc;

	rc = hdpm_tx_log(tx, HDPM_REC_BLOCK, &in->name_off);
	if (rc == 0)
		rc = hdpm_tx_alloc(tx, len + 1, &in->name_off);
	if (rc < 0)
		return rc;
	dst = hdpm_direct(fs, in->name_off);
	memcpy(dst, name, len);
	dst[len] = '\0';
	pma_flush(fs->heap, dst, len + 1);
	return 0;
}

static int create_tx(struct hdpm_tx *tx, uint64_t dir, const char *name,
		     size_t len, mode_t mode, uint64_t ino)
{
	struct hdpm_fs *fs = tx->fs;
	struct hdpm_inode *in = hdpm_inode(fs, ino);
	uint64_t gen = hdpm_gen(in) + 1ULL;
	int rc;

	rc = hdpm_tx_log(tx, HDPM_REC_WORD, &in->parent);
	if (rc == 0)
		rc = name_set(tx, in, name, len);
	if (rc == 0)
		rc = hdpm_tx_log(tx, HDPM_REC_WORD, &in->mode_gen);
	if (rc < 0)
		return rc;
	hdpm_tx_set(fs, &in->parent, dir);
	/* the mode makes the slot used: journaled like the rest */
	hdpm_tx_set(fs, &in->mode_gen, (gen & 0xffffffffu) << 32 | mode);
	return 0;
}

int hdpm_create(struct hdpm_fs *fs, const char *path, mode_t mode,
		uint64_t *ret_ino)
{
	const char *name = NULL;
	uint64_t dir = 0, ino = 0;
	struct hdpm_tx *tx;
	size_t len = 0;
	int rc;

	rc = lookup_parent(fs, path, &dir, &name, &len);
	if (rc < 0)
		return rc;
	if (len == 0)
		return util_errmsg_set(EEXIST, "'/' exists");
	if (child_find(fs, dir, name, len, &ino) == 0)
		return util_errmsg_set(EEXIST, "'%s' exists", path);
	rc = inode_alloc(fs, &ino);
	if (rc < 0)
		return rc;
	tx = hdpm_tx_begin(fs);
	rc = create_tx(tx, dir, name, len, mode, ino);
	if (rc < 0)
		hdpm_tx_abort(tx);
	else
		rc = hdpm_tx_commit(tx);
	hdpm_names_add(fs, ino);
	if (rc == 0)
		*ret_ino = ino;
	return rc;
}

int hdpm_mkdir(struct hdpm_fs *fs, const char *path, mode_t mode)
{
	uint64_t ino;
	int rc;

	if (!fs)
		return util_errmsg_set(EINVAL, "no file system");
	if (fs->rdonly)
		return util_errmsg_set(EROFS, "read-only mount");
	pthread_rwlock_wrlock(&fs->ns_lock);
	rc = hdpm_create(fs, path, S_IFDIR | (mode & 07777), &ino);
	pthread_rwlock_unlock(&fs->ns_lock);
	return rc;
}

static int dir_empty(struct hdpm_fs *fs, uint64_t dir)
{
	return hdpm_names_children(fs, dir) == 0;
}

/* inside a tx: the slot becomes free, its blocks go at commit */
static int remove_tx(struct hdpm_tx *tx, uint64_t ino)
{
	struct hdpm_inode *in = hdpm_inode(tx->fs, ino);
	int rc;

	rc = hdpm_tx_log(tx, HDPM_REC_WORD, &in->mode_gen);
	if (rc == 0)
		rc = hdpm_tx_log_free(tx, HDPM_REC_FREE_INODE, ino, 0);
	if (rc < 0)
		return rc;
	hdpm_tx_set(tx->fs, &in->mode_gen, (uint64_t)hdpm_gen(in) << 32);
	return 0;
}

static int remove_one(struct hdpm_fs *fs, uint64_t ino)
{
	struct hdpm_tx *tx;
	int rc;

	hdpm_names_del(fs, ino);
	hdpm_wrlock(fs, ino);
	tx = hdpm_tx_begin(fs);
	rc = remove_tx(tx, ino);
	if (rc < 0)
		hdpm_tx_abort(tx);
	else
		rc = hdpm_tx_commit(tx);
	hdpm_unlock(fs, ino);
	hdpm_names_add(fs, ino); /* back in if the removal was undone */
	return rc;
}

static int do_remove(struct hdpm_fs *fs, const char *path, int is_dir)
{
	uint64_t ino = 0;
	uint32_t mode;
	int rc;

	rc = hdpm_lookup(fs, path, &ino);
	if (rc < 0)
		return rc;
	mode = hdpm_mode(hdpm_inode(fs, ino));
	if (is_dir && ino == 0)
		return util_errmsg_set(EBUSY, "cannot remove '/'");
	if (is_dir && !S_ISDIR(mode))
		return util_errmsg_set(ENOTDIR, "'%s' is not a directory",
				       path);
	if (!is_dir && S_ISDIR(mode))
		return util_errmsg_set(EISDIR, "'%s' is a directory", path);
	if (is_dir && !dir_empty(fs, ino))
		return util_errmsg_set(ENOTEMPTY, "'%s' is not empty", path);
	return remove_one(fs, ino);
}

int hdpm_unlink(struct hdpm_fs *fs, const char *path)
{
	int rc;

	if (!fs)
		return util_errmsg_set(EINVAL, "no file system");
	if (fs->rdonly)
		return util_errmsg_set(EROFS, "read-only mount");
	pthread_rwlock_wrlock(&fs->ns_lock);
	rc = do_remove(fs, path, 0);
	pthread_rwlock_unlock(&fs->ns_lock);
	return rc;
}

int hdpm_rmdir(struct hdpm_fs *fs, const char *path)
{
	int rc;

	if (!fs)
		return util_errmsg_set(EINVAL, "no file system");
	if (fs->rdonly)
		return util_errmsg_set(EROFS, "read-only mount");
	pthread_rwlock_wrlock(&fs->ns_lock);
	rc = do_remove(fs, path, 1);
	pthread_rwlock_unlock(&fs->ns_lock);
	return rc;
}

/* is ino dir itself or below it? */
static int is_below(struct hdpm_fs *fs, uint64_t ino, uint64_t dir)
{
	unsigned depth = 0;

	while (depth++ < fs->ninodes) {
		if (ino == dir)
			return 1;
		if (ino == 0)
			return 0;
		ino = hdpm_inode(fs, ino)->parent;
	}
	return 0;
}

/* may src replace the existing dst? */
static int replace_check(struct hdpm_fs *fs, uint64_t src, uint64_t dst,
			 const char *to)
{
	int src_dir = S_ISDIR(hdpm_mode(hdpm_inode(fs, src)));
	int dst_dir = S_ISDIR(hdpm_mode(hdpm_inode(fs, dst)));

	if (src_dir && !dst_dir)
		return util_errmsg_set(ENOTDIR, "'%s' is not a directory", to);
	if (!src_dir && dst_dir)
		return util_errmsg_set(EISDIR, "'%s' is a directory", to);
	if (dst_dir && !dir_empty(fs, dst))
		return util_errmsg_set(ENOTEMPTY, "'%s' is not empty", to);
	return 0;
}

static int rename_tx(struct hdpm_tx *tx, uint64_t src, uint64_t dir,
		     const char *name, size_t len, int64_t dst)
{
	struct hdpm_inode *in = hdpm_inode(tx->fs, src);
	int rc = 0;

	if (dst >= 0)
		rc = remove_tx(tx, (uint64_t)dst);
	if (rc == 0)
		rc = hdpm_tx_log(tx, HDPM_REC_WORD, &in->parent);
	if (rc == 0)
		rc = name_set(tx, in, name, len);
	if (rc < 0)
		return rc;
	hdpm_tx_set(tx->fs, &in->parent, dir);
	return 0;
}

static int do_rename(struct hdpm_fs *fs, const char *from, const char *to)
{
	uint64_t src = 0, dir = 0, dst = 0;
	const char *name = NULL;
	struct hdpm_tx *tx;
	int64_t replace = -1;
	size_t len = 0;
	int rc;

	rc = hdpm_lookup(fs, from, &src);
	if (rc < 0)
		return rc;
	rc = lookup_parent(fs, to, &dir, &name, &len);
	if (rc < 0)
		return rc;
	if (src == 0 || len == 0)
		return util_errmsg_set(EBUSY, "cannot rename '/'");
	if (is_below(fs, dir, src))
		return util_errmsg_set(EINVAL, "'%s' is inside '%s'", to, from);
	if (child_find(fs, dir, name, len, &dst) == 0) {
		if (dst == src)
			return 0;
		rc = replace_check(fs, src, dst, to);
		if (rc < 0)
			return rc;
		replace = (int64_t)dst;
	}
	hdpm_names_del(fs, src);
	if (replace >= 0) {
		hdpm_names_del(fs, (uint64_t)replace);
		hdpm_wrlock(fs, (uint64_t)replace);
	}
	tx = hdpm_tx_begin(fs);
	rc = rename_tx(tx, src, dir, name, len, replace);
	if (rc < 0)
		hdpm_tx_abort(tx);
	else
		rc = hdpm_tx_commit(tx);
	if (replace >= 0)
		hdpm_unlock(fs, (uint64_t)replace);
	/* both as the table has them now: renamed, or undone */
	hdpm_names_add(fs, src);
	if (replace >= 0)
		hdpm_names_add(fs, (uint64_t)replace);
	return rc;
}

int hdpm_rename(struct hdpm_fs *fs, const char *from, const char *to)
{
	int rc;

	if (!fs)
		return util_errmsg_set(EINVAL, "no file system");
	if (fs->rdonly)
		return util_errmsg_set(EROFS, "read-only mount");
	pthread_rwlock_wrlock(&fs->ns_lock);
	rc = do_rename(fs, from, to);
	pthread_rwlock_unlock(&fs->ns_lock);
	return rc;
}

void hdpm_inode_stat(struct hdpm_fs *fs, uint64_t ino, struct stat *st)
{
	struct hdpm_inode *in = hdpm_inode(fs, ino);

	memset(st, 0, sizeof(*st));
	st->st_ino = ino + 1;
	st->st_mode = hdpm_mode(in);
	st->st_nlink = S_ISDIR(st->st_mode) ? 2 : 1;
	st->st_size = S_ISDIR(st->st_mode) ? 0 : (off_t)in->size;
	st->st_blksize = HDPM_PAGE_SIZE;
	st->st_blocks =
		(blkcnt_t)(hdpm_inode_pages(fs, in) * (HDPM_PAGE_SIZE / 512));
	st->st_mtim.tv_sec = (time_t)(in->mtime_ns / 1000000000ULL);
	st->st_mtim.tv_nsec = (long)(in->mtime_ns % 1000000000ULL);
}

int hdpm_stat(struct hdpm_fs *fs, const char *path, struct stat *st)
{
	uint64_t ino;
	int rc;

	if (!fs || !st)
		return util_errmsg_set(EINVAL, "no file system or stat buffer");
	pthread_rwlock_rdlock(&fs->ns_lock);
	rc = hdpm_lookup(fs, path, &ino);
	if (rc == 0) {
		hdpm_rdlock(fs, ino);
		hdpm_inode_stat(fs, ino, st);
		hdpm_unlock(fs, ino);
	}
	pthread_rwlock_unlock(&fs->ns_lock);
	return rc;
}

static int do_readdir(struct hdpm_fs *fs, const char *path, hdpm_readdir_fn fn,
		      void *arg)
{
	struct stat st;
	uint64_t dir = 0, i, e;
	int rc;

	rc = hdpm_lookup(fs, path, &dir);
	if (rc < 0)
		return rc;
	if (!S_ISDIR(hdpm_mode(hdpm_inode(fs, dir))))
		return util_errmsg_set(ENOTDIR, "'%s' is not a directory",
				       path);
	/* the directory's list in the name index (ns_lock keeps it) */
	for (e = hdpm_names_first(fs, dir); e; e = hdpm_names_next(fs, i)) {
		i = e - 1;
		hdpm_rdlock(fs, i);
		hdpm_inode_stat(fs, i, &st);
		hdpm_unlock(fs, i);
		rc = fn(inode_name(fs, hdpm_inode(fs, i)), &st, arg);
		if (rc)
			return rc;
	}
	return 0;
}

int hdpm_readdir(struct hdpm_fs *fs, const char *path, hdpm_readdir_fn fn,
		 void *arg)
{
	int rc;

	if (!fs || !fn)
		return util_errmsg_set(EINVAL, "no file system or callback");
	pthread_rwlock_rdlock(&fs->ns_lock);
	rc = do_readdir(fs, path, fn, arg);
	pthread_rwlock_unlock(&fs->ns_lock);
	return rc;
}
