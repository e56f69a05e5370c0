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
 * on one file system are serialized by one lock (thread-safe), except the
 * background GC step, which merges page logs without it.
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
 * also for hdpm_mount: for inspection of a heap opened PMA_HEAP_RDONLY.
 * Nothing is written: no format (-ENOENT for a root that is not a file
 * system yet), no recovery (hdpm_fs_info says whether an operation was
 * interrupted), no inline GC on reads. Calls that would change the file
 * system give -EROFS.
 */
enum { HDPM_RDONLY = 1 << 1 };

/*
 * also for hdpm_mount: do not start the background GC thread (pmad runs
 * the background step itself, see hdpm_gc; tests and tools that want no
 * thread of their own).
 */
enum { HDPM_NO_GC_THREAD = 1 << 2 };

/*
 * Background GC tuning (hdpm_mount_config). The background GC merges the
 * page logs with the most log bytes into new pages while the heap's free
 * space is below free_pct percent, without taking the fs lock for the
 * merge: a write to the same page either wins (the merge is discarded) or
 * finds the merged page.
 */
struct hdpm_gc_config {
	uint32_t free_pct; /* run while free space < free_pct % of the heap
			      (0..100; default 20) */
	uint32_t batch; /* pages merged per step, 1..32 (default 16) */
	uint32_t interval_ms; /* the thread's check period (default 1000:
				 the free-space check, pma_heap_stats,
				 costs milliseconds on a large heap) */
	uint32_t min_log_bytes; /* pages with smaller logs stay (default 256) */
};
/* the defaults above */
HDPM_API void hdpm_gc_config_init(struct hdpm_gc_config *cfg);

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
/*
 * hdpm_mount with a background GC configuration (NULL: the defaults).
 * Unless flags has HDPM_NO_GC_THREAD (or HDPM_RDONLY, or HDPM_COW_ONLY,
 * which keeps no logs), a GC thread is started that runs the background
 * step every interval_ms. -EINVAL for a bad config, -EAGAIN if the thread
 * cannot be started.
 */
HDPM_API HDPM_WUR int hdpm_mount_config(struct pma_heap *heap, unsigned flags,
					const struct hdpm_gc_config *cfg,
					struct hdpm_fs **ret_fs);
/*
 * Start the background GC thread of a mount made without it
 * (HDPM_NO_GC_THREAD), for a program that forks after mounting (a
 * daemon): threads do not survive fork. 0 if it runs (or already ran),
 * -EROFS (read-only mount), -EAGAIN. hdpm_gc_thread_stop stops it
 * (a no-op without one); hdpm_unmount does too.
 */
HDPM_API HDPM_WUR int hdpm_gc_thread_start(struct hdpm_fs *fs);
HDPM_API void hdpm_gc_thread_stop(struct hdpm_fs *fs);
/* stop the GC thread, free the DRAM state; accepts NULL. Every file must
 * be closed. */
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

/* flags for hdpm_gc */
enum {
	/*
	 * one step of the background GC (what the GC thread runs; pmad
	 * calls it as a service on a mount with HDPM_NO_GC_THREAD): if free
	 * space is below the configured threshold, merge up to batch pages
	 * with the most log bytes, each built without the fs lock and
	 * published by a compare-and-swap of its index word; a concurrent
	 * write to the page wins and the merge is dropped. The replaced
	 * pages are freed at the end under the fs lock (briefly: only the
	 * frees). Safe to call from any thread, concurrently with any call.
	 */
	HDPM_GC_BACKGROUND_STEP = 1 << 0,
	/* with HDPM_GC_BACKGROUND_STEP: ignore the free-space threshold */
	HDPM_GC_FORCE = 1 << 1,
};
/*
 * Run a garbage-collection pass now. flags 0: merge every page log into
 * a new page (copy-on-write) under the fs lock. Returns the number of
 * pages merged. -EINVAL for unknown flags, -EROFS.
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
	/* background GC (hdpm_gc with HDPM_GC_BACKGROUND_STEP) */
	uint64_t bg_steps; /* steps that found work (space low or forced) */
	uint64_t bg_merges; /* merges published */
	uint64_t bg_lost; /* merges dropped: a write to the page won */
	uint64_t bg_recovered; /* background merges finished or undone at
				  mount */
	/* page data bytes not written because they were the zero tail of a
	 * new page (the page header marks them; they read as zero) */
	uint64_t zero_tail_bytes;
	uint64_t upgrades; /* older (2, 3) file systems upgraded to 4 at mount */
};
HDPM_API void hdpm_stats(struct hdpm_fs *fs, struct hdpm_stats *ret_stats);

/*
 * Inode numbers: st_ino as hdpm_stat reports it (1 is "/"). An inode
 * number is reused after its entry is removed. For programs that name
 * entries by number (hdpmfs, the FUSE mount).
 */
/* stat of inode ino: -ENOENT if it is free (or out of range) */
HDPM_API HDPM_WUR int hdpm_stat_ino(struct hdpm_fs *fs, uint64_t ino,
				    struct stat *st);
/*
 * the path of inode ino into buf (size bytes, NUL-terminated): "/" for
 * 1. -ENOENT (free inode), -ENAMETOOLONG (buf too small), -EIO (a loop
 * in the parent links).
 */
HDPM_API HDPM_WUR int hdpm_ino_path(struct hdpm_fs *fs, uint64_t ino, char *buf,
				    size_t size);

/* the whole file system (hdpm_fs_info) */
struct hdpm_fs_info {
	uint64_t ninodes; /* inode slots */
	uint64_t inodes_used; /* "/" included */
	uint64_t files;
	uint64_t dirs; /* "/" included */
	uint64_t file_bytes; /* sum of the file sizes */
	uint64_t pages; /* page objects (4 KiB of data each) */
	uint64_t log_chunks; /* pages with a log (entries) */
	uint64_t log_entries; /* valid entries in them */
	uint64_t log_bytes; /* published log bytes, entry headers included */
	uint64_t log_live_bytes; /* log data bytes a read still returns */
	uint64_t log_dead_bytes; /* log data bytes hidden by newer entries
				    or past the file size */
	uint32_t needs_recovery; /* HDPM_RDONLY: an operation was
				    interrupted (a read-write mount
				    finishes it) */
	uint32_t cow_only; /* mounted HDPM_COW_ONLY */
};
/* a snapshot of the counts above; -EINVAL for NULL arguments */
HDPM_API HDPM_WUR int hdpm_fs_info(struct hdpm_fs *fs,
				   struct hdpm_fs_info *ret_info);

/* one regular file (hdpm_file_walk); path is valid during the call */
struct hdpm_file_info {
	const char *path;
	uint64_t ino;
	uint32_t mode;
	uint32_t rsvd;
	uint64_t size;
	uint64_t pages; /* page objects */
	uint64_t log_pages; /* pages with a log (entries) */
	uint64_t log_entries;
	uint64_t log_bytes;
	uint64_t log_live_bytes;
	uint64_t log_dead_bytes;
};
/* one page object of a file, in page order */
struct hdpm_page_info {
	uint64_t index; /* page number in the file (byte index * 4096) */
	uint64_t page_off; /* pool offset of the page object */
	uint64_t log_off; /* pool offset of its log (inside the page
			     object), 0: no entries */
	uint64_t log_entries;
	uint64_t log_bytes; /* the log tail (positions: entries, headers
			       and a pad before the chunk) */
	uint64_t log_live_bytes;
	uint64_t log_dead_bytes;
	uint64_t log_chunk_off; /* its overflow log chunk, 0: none */
};
/* non-zero stops hdpm_file_walk, which returns that value; called with
 * the fs lock held: must not call into the fs */
typedef int (*hdpm_file_fn)(const struct hdpm_file_info *file, void *arg);
typedef int (*hdpm_page_fn)(const struct hdpm_file_info *file,
			    const struct hdpm_page_info *page, void *arg);
/*
 * For every regular file, in inode order: file_fn (if not NULL) with the
 * file's totals, then page_fn (if not NULL) for each of its page objects.
 * Read-only. -EINVAL for NULL fs.
 */
HDPM_API HDPM_WUR int hdpm_file_walk(struct hdpm_fs *fs, hdpm_file_fn file_fn,
				     hdpm_page_fn page_fn, void *arg);

/* last error message of this thread ("" if none) */
HDPM_API const char *hdpm_errormsg(void);

#ifdef __cplusplus
}
#endif

#endif
