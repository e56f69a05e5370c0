/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpm query: read-only views for programs that name entries by inode
 * number (hdpmfs) and for inspection (pmactl log/inspect --files): paths
 * from inode numbers, per-file and per-page log use with live and dead
 * bytes. A log byte is live when a read still returns it: no newer entry
 * covers it and it lies before the file size. Nothing here writes PM.
 */
#include <string.h>

#include "hdpm/internal.h"
#include "util/errmsg.h"

/* inode number (st_ino) to a used slot, or -ENOENT */
static int ino_slot(struct hdpm_fs *fs, uint64_t ino, uint64_t *ret_slot)
{
	if (ino == 0 || ino > fs->ninodes ||
	    !hdpm_mode(hdpm_inode(fs, ino - 1)))
		return util_errmsg_set(ENOENT, "inode %llu does not exist",
				       (unsigned long long)ino);
	*ret_slot = ino - 1;
	return 0;
}

int hdpm_stat_ino(struct hdpm_fs *fs, uint64_t ino, struct stat *st)
{
	uint64_t slot = 0;
	int rc;

	if (!fs || !st)
		return util_errmsg_set(EINVAL, "no file system or stat buffer");
	if (ino == 0 || ino > hdpm_ninodes(fs))
		return util_errmsg_set(ENOENT, "inode %llu does not exist",
				       (unsigned long long)ino);
	/* the mode changes only under the inode's write lock */
	hdpm_rdlock(fs, ino - 1);
	rc = ino_slot(fs, ino, &slot);
	if (rc == 0)
		hdpm_inode_stat(fs, slot, st);
	hdpm_unlock(fs, ino - 1);
	return rc;
}

/* the path of slot into buf, built from the end */
static int slot_path(struct hdpm_fs *fs, uint64_t slot, char *buf, size_t size)
{
	const struct hdpm_inode *in;
	const char *name;
	size_t pos = size - 1, len;
	uint64_t depth = 0;

	buf[pos] = '\0';
	while (slot != 0) {
		if (++depth > fs->ninodes || slot >= fs->ninodes)
			return util_errmsg_set(EIO, "bad parent links");
		in = hdpm_inode(fs, slot);
		name = in->name_off ? hdpm_direct(fs, in->name_off) : "";
		len = strnlen(name, HDPM_NAME_MAX + 1);
		if (len + 1 > pos)
			return util_errmsg_set(ENAMETOOLONG, "path too long");
		pos -= len;
		memcpy(buf + pos, name, len);
		buf[--pos] = '/';
		slot = in->parent;
	}
	if (pos == size - 1) /* "/" */
		buf[--pos] = '/';
	memmove(buf, buf + pos, size - pos);
	return 0;
}

int hdpm_ino_path(struct hdpm_fs *fs, uint64_t ino, char *buf, size_t size)
{
	uint64_t slot = 0;
	int rc;

	if (!fs || !buf || size < 2)
		return util_errmsg_set(EINVAL, "no file system or buffer");
	pthread_rwlock_rdlock(&fs->ns_lock);
	rc = ino_slot(fs, ino, &slot);
	if (rc == 0)
		rc = slot_path(fs, slot, buf, size);
	pthread_rwlock_unlock(&fs->ns_lock);
	return rc;
}

/* log use of one page: entries, bytes, live and dead data bytes */
static void page_info(struct hdpm_fs *fs, uint64_t page_off, uint64_t size,
		      uint64_t index, struct hdpm_page_info *pi)
{
	unsigned char seen[HDPM_PAGE_SIZE];
	struct hdpm_log_ent *ents[HDPM_LOG_TOTAL / HDPM_LOG_ALIGN];
	uint64_t end = size > index * HDPM_PAGE_SIZE ?
			       size - index * HDPM_PAGE_SIZE :
			       0;
	unsigned n, i, b;

	memset(pi, 0, sizeof(*pi));
	pi->index = index;
	pi->page_off = page_off;
	n = hdpm_page_log_entries(fs, page_off, ents, &pi->log_bytes);
	/* the log starts inside the page object */
	pi->log_off = n ? page_off + HDPM_PAGE_LOG_OFF : 0;
	pi->log_chunk_off = hdpm_page_hdr(fs, page_off)->log_off;
	pi->log_entries = n;
	memset(seen, 0, sizeof(seen));
	/* newest first: a byte an older entry also has is dead there */
	for (i = n; i-- > 0;) {
		for (b = ents[i]->off; b < ents[i]->off + ents[i]->len; b++) {
			if (!seen[b] && b < end)
				pi->log_live_bytes++;
			else
				pi->log_dead_bytes++;
			seen[b] = 1;
		}
	}
}

static void file_add_page(struct hdpm_file_info *fi,
			  const struct hdpm_page_info *pi)
{
	fi->pages++;
	fi->log_pages += pi->log_off != 0;
	fi->log_entries += pi->log_entries;
	fi->log_bytes += pi->log_bytes;
	fi->log_live_bytes += pi->log_live_bytes;
	fi->log_dead_bytes += pi->log_dead_bytes;
}

static void file_info(struct hdpm_fs *fs, uint64_t slot,
		      struct hdpm_file_info *fi)
{
	const struct hdpm_inode *in = hdpm_inode(fs, slot);
	uint64_t *index = hdpm_inode_index(fs, in), p;
	struct hdpm_page_info pi;

	memset(fi, 0, sizeof(*fi));
	fi->ino = slot + 1;
	fi->mode = hdpm_mode(in);
	fi->size = in->size;
	for (p = 0; index && p < in->index_cap; p++) {
		if (!index[p])
			continue;
		page_info(fs, index[p], in->size, p, &pi);
		file_add_page(fi, &pi);
	}
}

static int file_pages(struct hdpm_fs *fs, uint64_t slot,
		      const struct hdpm_file_info *fi, hdpm_page_fn fn,
		      void *arg)
{
	const struct hdpm_inode *in = hdpm_inode(fs, slot);
	uint64_t *index = hdpm_inode_index(fs, in), p;
	struct hdpm_page_info pi;
	int rc;

	for (p = 0; index && p < in->index_cap; p++) {
		if (!index[p])
			continue;
		page_info(fs, index[p], in->size, p, &pi);
		rc = fn(fi, &pi, arg);
		if (rc)
			return rc;
	}
	return 0;
}

static int walk_one(struct hdpm_fs *fs, uint64_t slot, hdpm_file_fn file_fn,
		    hdpm_page_fn page_fn, void *arg)
{
	char path[HDPM_PATH_MAX];
	struct hdpm_file_info fi;
	int rc;

	file_info(fs, slot, &fi);
	if (slot_path(fs, slot, path, sizeof(path)) < 0)
		strcpy(path, "?");
	fi.path = path;
	if (file_fn) {
		rc = file_fn(&fi, arg);
		if (rc)
			return rc;
	}
	return page_fn ? file_pages(fs, slot, &fi, page_fn, arg) : 0;
}

int hdpm_file_walk(struct hdpm_fs *fs, hdpm_file_fn file_fn,
		   hdpm_page_fn page_fn, void *arg)
{
	uint64_t i;
	int rc = 0;

	if (!fs)
		return util_errmsg_set(EINVAL, "no file system");
	pthread_rwlock_rdlock(&fs->ns_lock);
	for (i = 1; i < fs->ninodes && rc == 0; i++) {
		if (!S_ISREG(hdpm_mode(hdpm_inode(fs, i))))
			continue;
		hdpm_rdlock(fs, i);
		rc = walk_one(fs, i, file_fn, page_fn, arg);
		hdpm_unlock(fs, i);
	}
	pthread_rwlock_unlock(&fs->ns_lock);
	return rc;
}

static void info_add_inode(struct hdpm_fs *fs, uint64_t slot,
			   struct hdpm_fs_info *info)
{
	uint32_t mode = hdpm_mode(hdpm_inode(fs, slot));
	struct hdpm_file_info fi;

	if (!mode)
		return;
	info->inodes_used++;
	if (S_ISDIR(mode)) {
		info->dirs++;
		return;
	}
	hdpm_rdlock(fs, slot);
	file_info(fs, slot, &fi);
	hdpm_unlock(fs, slot);
	info->files++;
	info->file_bytes += fi.size;
	info->pages += fi.pages;
	info->log_chunks += fi.log_pages;
	info->log_entries += fi.log_entries;
	info->log_bytes += fi.log_bytes;
	info->log_live_bytes += fi.log_live_bytes;
	info->log_dead_bytes += fi.log_dead_bytes;
}

int hdpm_fs_info(struct hdpm_fs *fs, struct hdpm_fs_info *ret_info)
{
	struct hdpm_fs_info info;
	uint64_t i;

	if (!fs || !ret_info)
		return util_errmsg_set(EINVAL, "no file system or buffer");
	memset(&info, 0, sizeof(info));
	pthread_rwlock_rdlock(&fs->ns_lock);
	info.ninodes = fs->ninodes;
	for (i = 0; i < fs->ninodes; i++)
		info_add_inode(fs, i, &info);
	info.needs_recovery = (uint32_t)hdpm_tx_pending(fs);
	info.cow_only = (uint32_t)fs->cow_only;
	pthread_rwlock_unlock(&fs->ns_lock);
	*ret_info = info;
	return 0;
}
