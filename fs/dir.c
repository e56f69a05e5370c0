/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpmfs directories: opendir takes a snapshot of the entries (".", ".."
 * and the children, with their inode numbers and kinds) into fi->fh;
 * readdir serves it by index, so a directory changed while it is being
 * read neither repeats nor skips an entry of the snapshot.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hdpm.h"
#include "hdpmfs.h"

struct dir_ent {
	char *name;
	uint64_t ino;
	mode_t mode;
};

struct dir_snap {
	size_t n, cap;
	struct dir_ent *ents;
};

static void snap_free(struct dir_snap *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->n; i++)
		free(d->ents[i].name);
	free(d->ents);
	free(d);
}

static int snap_add(struct dir_snap *d, const char *name, uint64_t ino,
		    mode_t mode)
{
	struct dir_ent *ents;
	size_t cap;

	if (d->n == d->cap) {
		cap = d->cap ? d->cap * 2 : 16;
		ents = reallocarray(d->ents, cap, sizeof(*ents));
		if (!ents)
			return -ENOMEM;
		d->ents = ents;
		d->cap = cap;
	}
	d->ents[d->n].name = strdup(name);
	if (!d->ents[d->n].name)
		return -ENOMEM;
	d->ents[d->n].ino = ino;
	d->ents[d->n].mode = mode;
	d->n++;
	return 0;
}

static struct dir_snap *snap_of(const struct fuse_file_info *fi)
{
	/* FUSE keeps handles as uint64_t: this is the pointer opendir stored */
	/* NOLINTBEGIN(performance-no-int-to-ptr) */
	return (struct dir_snap *)(uintptr_t)fi->fh;
	/* NOLINTEND(performance-no-int-to-ptr) */
}

static int snap_entry(const char *name, const struct stat *st, void *arg)
{
	return snap_add(arg, name, st->st_ino, st->st_mode);
}

static int snap_take(struct hdpmfs *h, fuse_ino_t ino, struct dir_snap *d)
{
	char path[HDPMFS_PATH_MAX];
	struct stat st = { 0 };
	int rc;

	pthread_mutex_lock(&h->ns_lock);
	rc = hdpm_ino_path(h->fs, ino, path, sizeof(path));
	if (rc == 0)
		rc = hdpm_stat(h->fs, path, &st);
	if (rc == 0)
		rc = snap_add(d, ".", ino, S_IFDIR);
	/* ".." is not looked up by the kernel; any directory number does */
	if (rc == 0)
		rc = snap_add(d, "..", ino, S_IFDIR);
	if (rc == 0)
		rc = hdpm_readdir(h->fs, path, snap_entry, d);
	pthread_mutex_unlock(&h->ns_lock);
	return rc;
}

void hdpmfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dir_snap *d = calloc(1, sizeof(*d));
	int rc;

	rc = d ? snap_take(hdpmfs_req(req), ino, d) : -ENOMEM;
	if (rc < 0) {
		snap_free(d);
		hdpmfs_reply_err(req, rc, "opendir");
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	if (fuse_reply_open(req, fi) != 0)
		snap_free(d);
}

void hdpmfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct dir_snap *d = snap_of(fi);
	struct stat st = { 0 };
	size_t pos = 0, len, i;
	char *buf;

	(void)ino;
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (i = off < 0 ? d->n : (size_t)off; i < d->n; i++) {
		memset(&st, 0, sizeof(st));
		st.st_ino = d->ents[i].ino;
		st.st_mode = d->ents[i].mode;
		/* the offset given is that of the next entry */
		len = fuse_add_direntry(req, buf + pos, size - pos,
					d->ents[i].name, &st, (off_t)(i + 1));
		if (len > size - pos)
			break;
		pos += len;
	}
	fuse_reply_buf(req, buf, pos);
	free(buf);
}

void hdpmfs_releasedir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	(void)ino;
	snap_free(snap_of(fi));
	fuse_reply_err(req, 0);
}
