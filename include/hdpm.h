/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libhdpm: files whose data live in persistent-memory pages allocated from
 * a PMAlloc heap (HDPM: hybrid copy-on-write / per-page log).
 *
 * Page-aligned full-page writes copy the page (copy-on-write); small or
 * unaligned writes append to the page's log; reads scan the log newest
 * first. Every call that changes the file system is durable and atomic on
 * return: after a crash it happened entirely or not at all (a write of
 * several pages included). Paths are absolute, '/'-separated; "." and ".."
 * are not supported (-EINVAL). Functions return 0 (or a byte count) or a
 * negative errno and set a per-thread message (hdpm_errormsg()). All calls
 * on one file system are serialized by one lock (thread-safe).
 */
#ifndef HDPM_H
#define HDPM_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HDPM_API __attribute__((visibility("default")))
#define HDPM_WUR __attribute__((warn_unused_result))

struct pma_heap;
struct hdpm_fs;
struct hdpm_file;

/* flags for hdpm_mount */
enum {
	HDPM_HYBRID = 0, /* CoW for full pages, the page log for the rest */
	HDPM_COW_ONLY = 1, /* every write copies its pages (NOVA's way) */
};

/*
 * Mount the file system kept in heap's root object, formatting it if the
 * root is new (all zeros), and recover: an operation interrupted by a
 * crash is rolled back or completed, torn log tails are cut. The heap
 * stays owned by the caller and must outlive the fs. -EINVAL for unknown
 * flags or a root that holds something else, -ENOMEM, -EIO for a
 * corrupt file system, plus pma_root errors.
 */
HDPM_API HDPM_WUR int hdpm_mount(struct pma_heap *heap, unsigned flags,
				 struct hdpm_fs **ret_fs);
/* free the DRAM state; accepts NULL. Every file must be closed. */
HDPM_API void hdpm_unmount(struct hdpm_fs *fs);

/*
 * Open the regular file at path. oflags: O_RDONLY, O_WRONLY or O_RDWR,
 * plus O_CREAT (mode: permission bits), O_EXCL, O_TRUNC, O_APPEND.
 * -ENOENT, -EEXIST, -EISDIR (a directory), -ENOTDIR, -ENAMETOOLONG,
 * -ENOSPC (no free inode), -EINVAL.
 */
HDPM_API HDPM_WUR int hdpm_open(struct hdpm_fs *fs, const char *path,
				int oflags, mode_t mode,
				struct hdpm_file **ret_file);
/* close; accepts NULL (returns 0) */
HDPM_API int hdpm_close(struct hdpm_file *file);

/*
 * Write len bytes at off (at the end of the file with O_APPEND). Returns
 * the bytes written: all of len, or (for len above 1 MiB) a shorter count;
 * what it returns is durable and atomic. -EBADF (opened O_RDONLY),
 * -EFBIG (past the largest file), -ENOSPC, -ESTALE (file was unlinked).
 */
HDPM_API HDPM_WUR ssize_t hdpm_pwrite(struct hdpm_file *file, const void *buf,
				      size_t len, uint64_t off);
/* read up to len bytes at off; 0 at or past the end; holes read zeros.
 * -EBADF (opened O_WRONLY), -ESTALE */
HDPM_API HDPM_WUR ssize_t hdpm_pread(struct hdpm_file *file, void *buf,
				     size_t len, uint64_t off);
/* set the size; bytes past the old size read as zeros. -EBADF, -EFBIG */
HDPM_API HDPM_WUR int hdpm_ftruncate(struct hdpm_file *file, uint64_t size);

/* remove a file (-EISDIR for a directory); open handles of it then give
 * -ESTALE */
HDPM_API HDPM_WUR int hdpm_unlink(struct hdpm_fs *fs, const char *path);
/* -EEXIST, -ENOENT (no parent), -ENOTDIR, -ENOSPC */
HDPM_API HDPM_WUR int hdpm_mkdir(struct hdpm_fs *fs, const char *path,
				 mode_t mode);
/* remove an empty directory: -ENOTEMPTY, -ENOTDIR, -EBUSY for "/" */
HDPM_API HDPM_WUR int hdpm_rmdir(struct hdpm_fs *fs, const char *path);
/*
 * Move from to to, replacing an existing to (a file by a file, an empty
 * directory by a directory) atomically. -EINVAL when to is inside from,
 * -EISDIR / -ENOTDIR on a kind mismatch, -ENOTEMPTY, -EBUSY for "/".
 */
HDPM_API HDPM_WUR int hdpm_rename(struct hdpm_fs *fs, const char *from,
				  const char *to);
/* st_mode, st_size, st_ino, st_nlink, st_blocks, st_blksize, st_mtim */
HDPM_API HDPM_WUR int hdpm_stat(struct hdpm_fs *fs, const char *path,
				struct stat *st);

/* called once per entry of a directory ("." and ".." are not listed);
 * non-zero stops hdpm_readdir, which returns that value. It runs with
 * the fs lock held: it must not call into the fs. */
typedef int (*hdpm_readdir_fn)(const char *name, const struct stat *st,
			       void *arg);
HDPM_API HDPM_WUR int hdpm_readdir(struct hdpm_fs *fs, const char *path,
				   hdpm_readdir_fn fn, void *arg);

/*
 * Run a garbage-collection pass now: merge every page log into a new
 * page (copy-on-write). flags must be 0. Returns the number of pages
 * merged.
 */
HDPM_API HDPM_WUR int hdpm_gc(struct hdpm_fs *fs, unsigned flags);

/* counters since mount (benchmarks and tests) */
struct hdpm_stats {
	uint64_t cow_pages; /* pages written copy-on-write */
	uint64_t log_appends; /* log entries appended */
	uint64_t gc_merges; /* page logs merged (inline and hdpm_gc) */
	uint64_t txs; /* journaled operations */
	uint64_t log_tails_cut; /* torn log tails cut at mount */
	uint64_t rollbacks; /* interrupted operations undone at mount */
	uint64_t rollforwards; /* committed ones completed at mount */
};
HDPM_API void hdpm_stats(struct hdpm_fs *fs, struct hdpm_stats *ret_stats);

/* last error message of this thread ("" if none) */
HDPM_API const char *hdpm_errormsg(void);

#ifdef __cplusplus
}
#endif

#endif
