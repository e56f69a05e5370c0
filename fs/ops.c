/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpmfs operations: FUSE low-level requests mapped to hdpm calls. FUSE
 * inode numbers are HDPM's (st_ino; 1 is "/"). Entries named by
 * (directory, name) become paths with hdpm_ino_path; ns_lock keeps that
 * path valid until the hdpm call that uses it (every namespace change
 * takes it). Reads and writes go through the open hdpm_file in fi->fh
 * and need no path; files are opened direct_io (see op_init). Every
 * hdpm call is durable on return, so fsync has
 * nothing left to do. Only the size of an inode can be set: HDPM keeps no
 * owner and no settable mode or times.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "hdpm.h"
#include "hdpmfs.h"
#include "pmalloc.h"

void hdpmfs_reply_err(fuse_req_t req, int rc, const char *op)
{
	if (hdpmfs_req(req)->debug)
		fprintf(stderr, "hdpmfs: %s: %s (%s)\n", op, strerror(-rc),
			hdpm_errormsg());
	fuse_reply_err(req, -rc);
}

static struct hdpm_file *req_file(const struct fuse_file_info *fi)
{
	/* FUSE keeps handles as uint64_t: this is the pointer op_open stored */
	/* NOLINTBEGIN(performance-no-int-to-ptr) */
	return (struct hdpm_file *)(uintptr_t)fi->fh;
	/* NOLINTEND(performance-no-int-to-ptr) */
}

/* the path of name in directory parent (ns_lock held) */
static int child_path(struct hdpmfs *h, fuse_ino_t parent, const char *name,
		      char *buf)
{
	size_t len, name_len = strlen(name);
	int rc;

	rc = hdpm_ino_path(h->fs, parent, buf, HDPMFS_PATH_MAX);
	if (rc < 0)
		return rc;
	len = strlen(buf);
	if (len > 1)
		buf[len++] = '/';
	if (len + name_len + 1 > HDPMFS_PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(buf + len, name, name_len + 1);
	return 0;
}

static void stat_fix(struct stat *st)
{
	st->st_uid = getuid();
	st->st_gid = getgid();
}

static void reply_entry(fuse_req_t req, const struct stat *st)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.ino = st->st_ino;
	e.attr = *st;
	stat_fix(&e.attr);
	e.attr_timeout = HDPMFS_TIMEOUT;
	e.entry_timeout = HDPMFS_TIMEOUT;
	fuse_reply_entry(req, &e);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct hdpmfs *h = hdpmfs_req(req);
	char path[HDPMFS_PATH_MAX];
	struct stat st = { 0 };
	int rc;

	pthread_mutex_lock(&h->ns_lock);
	rc = child_path(h, parent, name, path);
	if (rc == 0)
		rc = hdpm_stat(h->fs, path, &st);
	pthread_mutex_unlock(&h->ns_lock);
	if (rc < 0) {
		fuse_reply_err(req, -rc); /* ENOENT is common: not logged */
		return;
	}
	reply_entry(req, &st);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct stat st = { 0 };
	int rc;

	(void)fi;
	rc = hdpm_stat_ino(hdpmfs_req(req)->fs, ino, &st);
	if (rc < 0) {
		hdpmfs_reply_err(req, rc, "getattr");
		return;
	}
	stat_fix(&st);
	fuse_reply_attr(req, &st, HDPMFS_TIMEOUT);
}

/* truncate by inode: through the open file, or a file opened for it */
static int truncate_ino(struct hdpmfs *h, fuse_ino_t ino, uint64_t size,
			struct fuse_file_info *fi)
{
	char path[HDPMFS_PATH_MAX];
	struct hdpm_file *file = NULL;
	int rc;

	if (fi && fi->fh)
		return hdpm_ftruncate(req_file(fi), size);
	pthread_mutex_lock(&h->ns_lock);
	rc = hdpm_ino_path(h->fs, ino, path, sizeof(path));
	if (rc == 0)
		rc = hdpm_open(h->fs, path, O_WRONLY, 0, &file);
	pthread_mutex_unlock(&h->ns_lock);
	if (rc < 0)
		return rc;
	rc = hdpm_ftruncate(file, size);
	hdpm_close(file);
	return rc;
}

/* only the size can change: HDPM keeps no owner, mode or times to set */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct hdpmfs *h = hdpmfs_req(req);
	int rc = 0;

	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (attr->st_size < 0)
			rc = -EINVAL;
		else
			rc = truncate_ino(h, ino, (uint64_t)attr->st_size, fi);
	}
	if (rc < 0) {
		hdpmfs_reply_err(req, rc, "setattr");
		return;
	}
	op_getattr(req, ino, fi);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	struct hdpmfs *h = hdpmfs_req(req);
	char path[HDPMFS_PATH_MAX];
	struct stat st = { 0 };
	int rc;

	pthread_mutex_lock(&h->ns_lock);
	rc = child_path(h, parent, name, path);
	if (rc == 0)
		rc = hdpm_mkdir(h->fs, path, mode);
	if (rc == 0)
		rc = hdpm_stat(h->fs, path, &st);
	pthread_mutex_unlock(&h->ns_lock);
	if (rc < 0) {
		hdpmfs_reply_err(req, rc, "mkdir");
		return;
	}
	reply_entry(req, &st);
}

static void remove_entry(fuse_req_t req, fuse_ino_t parent, const char *name,
			 int is_dir)
{
	struct hdpmfs *h = hdpmfs_req(req);
	char path[HDPMFS_PATH_MAX];
	int rc;

	pthread_mutex_lock(&h->ns_lock);
	rc = child_path(h, parent, name, path);
	if (rc == 0)
		rc = is_dir ? hdpm_rmdir(h->fs, path) :
			      hdpm_unlink(h->fs, path);
	pthread_mutex_unlock(&h->ns_lock);
	if (rc < 0)
		hdpmfs_reply_err(req, rc, is_dir ? "rmdir" : "unlink");
	else
		fuse_reply_err(req, 0);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, 0);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, 1);
}

static int do_rename(struct hdpmfs *h, fuse_ino_t parent, const char *name,
		     fuse_ino_t newparent, const char *newname,
		     unsigned int flags)
{
	char from[HDPMFS_PATH_MAX], to[HDPMFS_PATH_MAX];
	struct stat st = { 0 };
	int rc;

	rc = child_path(h, parent, name, from);
	if (rc == 0)
		rc = child_path(h, newparent, newname, to);
	if (rc == 0 && (flags & RENAME_NOREPLACE) &&
	    hdpm_stat(h->fs, to, &st) == 0)
		rc = -EEXIST;
	if (rc == 0)
		rc = hdpm_rename(h->fs, from, to);
	return rc;
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	struct hdpmfs *h = hdpmfs_req(req);
	int rc;

	if (flags & ~(unsigned int)RENAME_NOREPLACE) {
		fuse_reply_err(req, EINVAL); /* RENAME_EXCHANGE, WHITEOUT */
		return;
	}
	pthread_mutex_lock(&h->ns_lock);
	rc = do_rename(h, parent, name, newparent, newname, flags);
	pthread_mutex_unlock(&h->ns_lock);
	if (rc < 0)
		hdpmfs_reply_err(req, rc, "rename");
	else
		fuse_reply_err(req, 0);
}

/* the open flags hdpm_open understands */
static int open_flags(int flags)
{
	return flags & (O_ACCMODE | O_APPEND | O_TRUNC | O_CREAT | O_EXCL);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct hdpmfs *h = hdpmfs_req(req);
	char path[HDPMFS_PATH_MAX];
	struct hdpm_file *file = NULL;
	struct fuse_entry_param e;
	int rc;

	memset(&e, 0, sizeof(e));
	pthread_mutex_lock(&h->ns_lock);
	rc = child_path(h, parent, name, path);
	if (rc == 0)
		rc = hdpm_open(h->fs, path, open_flags(fi->flags) | O_CREAT,
			       mode, &file);
	if (rc == 0)
		rc = hdpm_stat(h->fs, path, &e.attr);
	pthread_mutex_unlock(&h->ns_lock);
	if (rc < 0) {
		hdpm_close(file);
		hdpmfs_reply_err(req, rc, "create");
		return;
	}
	e.ino = e.attr.st_ino;
	stat_fix(&e.attr);
	e.attr_timeout = HDPMFS_TIMEOUT;
	e.entry_timeout = HDPMFS_TIMEOUT;
	fi->fh = (uint64_t)(uintptr_t)file;
	fi->direct_io = 1;
	if (fuse_reply_create(req, &e, fi) != 0)
		hdpm_close(file); /* the request was interrupted */
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct hdpmfs *h = hdpmfs_req(req);
	char path[HDPMFS_PATH_MAX];
	struct hdpm_file *file = NULL;
	int rc;

	pthread_mutex_lock(&h->ns_lock);
	rc = hdpm_ino_path(h->fs, ino, path, sizeof(path));
	if (rc == 0)
		rc = hdpm_open(h->fs, path,
			       open_flags(fi->flags) & ~(O_CREAT | O_EXCL), 0,
			       &file);
	pthread_mutex_unlock(&h->ns_lock);
	if (rc < 0) {
		hdpmfs_reply_err(req, rc, "open");
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)file;
	fi->direct_io = 1;
	if (fuse_reply_open(req, fi) != 0)
		hdpm_close(file);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	ssize_t n;
	char *buf;

	(void)ino;
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = hdpm_pread(req_file(fi), buf, size, (uint64_t)off);
	if (n < 0)
		hdpmfs_reply_err(req, (int)n, "read");
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	size_t done = 0;
	ssize_t n;

	(void)ino;
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* hdpm_pwrite may return a short count past 1 MiB */
	while (done < size) {
		n = hdpm_pwrite(req_file(fi), buf + done, size - done,
				(uint64_t)off + done);
		if (n <= 0) {
			if (done)
				break;
			hdpmfs_reply_err(req, n < 0 ? (int)n : -EIO, "write");
			return;
		}
		done += (size_t)n;
	}
	fuse_reply_write(req, done);
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	(void)ino;
	hdpm_close(req_file(fi));
	fuse_reply_err(req, 0);
}

/* every hdpm call was durable when it returned */
static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct hdpmfs *h = hdpmfs_req(req);
	struct pma_heap_stats hs;
	struct hdpm_fs_info info;
	struct statvfs sv;

	(void)ino;
	if (pma_heap_stats(h->heap, &hs) < 0 ||
	    hdpm_fs_info(h->fs, &info) < 0) {
		hdpmfs_reply_err(req, -EIO, "statfs");
		return;
	}
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = 4096;
	sv.f_frsize = 4096;
	sv.f_blocks = hs.heap_size / 4096;
	sv.f_bfree = hs.free_bytes / 4096;
	sv.f_bavail = sv.f_bfree;
	sv.f_files = info.ninodes;
	sv.f_ffree = info.ninodes - info.inodes_used;
	sv.f_favail = sv.f_ffree;
	sv.f_namemax = 255;
	fuse_reply_statfs(req, &sv);
}

/*
 * Writes reach HDPM as the program wrote them, one request per write(2)
 * up to 1 MiB (hdpm_pwrite's atomic unit): files are opened direct_io.
 * Through the page cache the kernel ends a write request at a partial
 * page it does not have cached, so one write(2) became several requests
 * and a crash between them tore it (the kill -9 test caught that).
 */
static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_write = HDPMFS_MAX_WRITE;
}

const struct fuse_lowlevel_ops hdpmfs_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.rename = op_rename,
	.create = op_create,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = hdpmfs_opendir,
	.readdir = hdpmfs_readdir,
	.releasedir = hdpmfs_releasedir,
	.fsyncdir = op_fsync,
	.statfs = op_statfs,
};
