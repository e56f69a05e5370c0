/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpmfs internals: the mounted state every FUSE request reaches through
 * fuse_req_userdata, and the operation tables of ops.c and dir.c.
 */
#ifndef PMAD_HDPMFS_H
#define PMAD_HDPMFS_H

#define FUSE_USE_VERSION 34

#include <fuse_lowlevel.h>
#include <pthread.h>

#define HDPMFS_TIMEOUT 1.0 /* seconds the kernel may cache entries */
#define HDPMFS_PATH_MAX 4096
#define HDPMFS_MAX_WRITE (1u << 20) /* hdpm_pwrite's atomic unit */

struct pma_heap;
struct hdpm_fs;

struct hdpmfs {
	struct pma_heap *heap;
	struct hdpm_fs *fs;
	pthread_mutex_t ns_lock; /* held from path lookup to the call */
	int debug; /* -d: log failed calls with the library's message */
};

/* ops.c: every operation hdpmfs implements */
extern const struct fuse_lowlevel_ops hdpmfs_ops;

static inline struct hdpmfs *hdpmfs_req(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* reply -rc (a negative errno); with -d log it */
void hdpmfs_reply_err(fuse_req_t req, int rc, const char *op);

/* dir.c: directories are read from a snapshot taken at opendir */
void hdpmfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void hdpmfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);
void hdpmfs_releasedir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi);

#endif
