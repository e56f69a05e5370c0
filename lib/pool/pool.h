/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pool: the pool format (layout.h): create, open, check, lock, regions.
 *
 * A struct pool is an open pool: every part opened, verified and mapped
 * through lib/pmem. Functions return 0 or a negative errno and record a
 * one-line message read with pool_errormsg(); each way open can fail has
 * its own errno/message pair:
 *   -EINVAL           not a pool (bad magic)
 *   -EPROTONOSUPPORT  wrong format version / unknown incompatible feature
 *   -EBADMSG          checksum mismatch (both header copies, or a part
 *                     header), or the newest header copy is damaged and
 *                     the other may hold an older state (no rollback)
 *   -ENOENT           missing part (file gone) / no such file
 *   -EXDEV            part belongs to another pool, or is the wrong index
 *   -EIO              file smaller than its header claims
 *   -EROFS            read-only file opened for writing
 *   -ENOSPC           device or file system too small (create)
 *   -EBUSY            locked by another process ("pool is held by pmad
 *                     (pid N); use --socket" when that process is pmad)
 *   -EEXIST           create: target exists (use POOL_CREATE_FORCE)
 * Not thread-safe for concurrent open/close of the same struct pool; the
 * accessors are read-only and safe from any thread.
 */
#ifndef PMAD_POOL_POOL_H
#define PMAD_POOL_POOL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pool/layout.h"
#include "pmem/pm.h"

struct pool;

enum pool_create_flags {
	POOL_CREATE_FORCE = 1 << 0, /* overwrite an existing file or pool */
};

/* progress callback for long operations: done/total bytes */
typedef void (*pool_progress_fn)(uint64_t done, uint64_t total, void *arg);

struct pool_create_params {
	unsigned nparts; /* 1..POOL_MAX_PARTS */
	const char *const *paths; /* nparts paths; files or devdax devices */
	const int *nodes; /* nparts NUMA nodes, -1 = detect; or NULL */
	uint64_t part_size; /* bytes per file part (devdax: 0 = device
				      size, else must fit the device) */
	mode_t mode; /* file mode for new files, e.g. 0660 */
	unsigned flags; /* enum pool_create_flags */
	pool_progress_fn progress; /* may be NULL */
	void *progress_arg;
};

/* create and open (exclusively locked) a new pool */
int pool_create(const struct pool_create_params *params,
		struct pool **ret_pool);

enum pool_open_flags {
	POOL_OPEN_RDONLY = 1 << 0, /* map read-only, shared lock */
	POOL_OPEN_NOLOCK = 1 << 1, /* take no lock (pmad clients) */
	/* with RDONLY: if the newest header copy is damaged and the other one
	 * may be older, open on the other one and report it through
	 * pool_header_damage() instead of failing (for inspection only) */
	POOL_OPEN_SHOW_OLDER = 1 << 2,
	/*
	 * a writable view that never reaches the files (pmactl fsck
	 * --recovery): parts are opened read-only with a shared lock and
	 * mapped copy-on-write; every write (a header rewrite, recovery)
	 * lands in private memory and is gone at close. Regular files only.
	 */
	POOL_OPEN_PRIVATE = 1 << 3,
	/*
	 * a writable open that shares the pool with other such opens: a
	 * shared flock on every part (exclusive openers still exclude it
	 * and are excluded), each then locking the heap regions it writes
	 * with pool_slot_lock (doc/shared-heaps.md, step 3a)
	 */
	POOL_OPEN_SHARED = 1 << 4,
};
/* open part 0 at path and every part its table names; verify everything */
int pool_open(const char *path, unsigned flags, struct pool **ret_pool);
/*
 * The same with the path of every part given (paths[0] is part 0's;
 * npaths 1: the others at their path hints): a copy of a pool's files
 * elsewhere (crash images, backups). Each part is verified as at open.
 */
int pool_open_parts(const char *const *paths, unsigned npaths, unsigned flags,
		    struct pool **ret_pool);
/*
 * The same from open descriptors, one per part (fds[0] part 0), as pmad
 * passes them to its clients: each is duplicated (the caller keeps its
 * own) and verified as at open; the caller needs no right to open the
 * files by name. A writable open needs descriptors open for writing
 * (-EROFS). nfds must be the pool's part count (-EINVAL).
 */
int pool_open_fds(const int *fds, unsigned nfds, unsigned flags,
		  struct pool **ret_pool);
/* pool_open_parts, or with fds (npaths of them) from those descriptors */
int pool_open_parts_fds(const char *const *paths, unsigned npaths,
			const int *fds, unsigned flags, struct pool **ret_pool);
/*
 * Lock heap region slot (0..63) of a POOL_OPEN_SHARED pool for this open:
 * an OFD write lock on one byte of part 0 beyond any file's end
 * (POOL_SLOT_LOCK_BASE + slot), so it belongs to the open file description
 * and goes with its last close or the holder's death. -EBUSY if another
 * open file description holds it (naming the slot as label says).
 */
#define POOL_SLOT_LOCK_BASE (1LL << 60)
int pool_slot_lock(struct pool *pool, unsigned slot, const char *label);
/* give back a slot pool_slot_lock took (an add that failed) */
void pool_slot_unlock(struct pool *pool, unsigned slot);
/* is slot locked by another open file description? 1, 0, or -errno */
int pool_slot_busy(const struct pool *pool, unsigned slot);
/* the same test on fd, a descriptor of part 0 (pmad's, which holds no
 * region lock itself) */
int pool_fd_slot_busy(int fd, unsigned slot);
/* unmap, unlock, close; *pool becomes NULL; accepts NULL */
void pool_close(struct pool **pool);

/* the current header (a DRAM copy; valid until the next update or close) */
const struct pool_hdr *pool_header(const struct pool *pool);
/* which copy is current (0 = A, 1 = B) and whether the other one was valid
 * at open (a writable open rewrites a damaged copy of the same state) */
unsigned pool_header_copy(const struct pool *pool);
int pool_header_other_valid(const struct pool *pool);
/* NULL, or (POOL_OPEN_SHOW_OLDER) why the header shown may be older */
const char *pool_header_damage(const struct pool *pool);
/* NULL, or which header copy failed its check at open although the other
 * one holds the same state, so the open went on with it (a writable open
 * rewrites the bad copy); callers should report it */
const char *pool_header_note(const struct pool *pool);

unsigned pool_part_count(const struct pool *pool);
struct pm_map *pool_part_map(const struct pool *pool, unsigned part);
const char *pool_part_path(const struct pool *pool, unsigned part);
/* the open descriptor of part (-1 if none) */
int pool_part_fd(const struct pool *pool, unsigned part);
/* the NUMA node part is on: once mapped, where its file or device is
 * (ns_path_node) if known, else the node the part table records */
int pool_part_node(const struct pool *pool, unsigned part);
/* space.c (compaction): 1 if part is a devdax device (no hole punching) */
int pool_part_is_devdax(const struct pool *pool, unsigned part);
/* bytes the file system has allocated for part (st_blocks * 512) */
int pool_part_alloc_bytes(struct pool *pool, unsigned part,
			  uint64_t *ret_bytes);
/*
 * Deallocate [off, off + len) of part (fallocate PUNCH_HOLE | KEEP_SIZE):
 * it reads as zeros from now on. The caller guarantees nothing in the
 * range is in use and none of it is used again before pool_part_sync
 * returned (which makes the punch durable). -EOPNOTSUPP on a devdax part
 * or a file system without hole punching, -EROFS, -EINVAL out of range.
 */
int pool_part_punch(struct pool *pool, unsigned part, uint64_t off,
		    uint64_t len);
/* fdatasync the part's file (nothing for devdax); 0 or -errno */
int pool_part_sync(struct pool *pool, unsigned part);
/* granularity of the pool (the coarsest over its parts) */
enum pm_granularity pool_granularity(const struct pool *pool);

/* PM offset <-> address; NULL / 0 when out of range */
void *pool_direct(const struct pool *pool, uint64_t off);
uint64_t pool_offset(const struct pool *pool, const void *addr);

/*
 * Add a region of size bytes (rounded up to POOL_ALIGN) of type in part,
 * first fit in the data area; crash-safe (double header). Returns 0 and
 * the region's index, -ENOSPC, -ENFILE (table full), -EROFS.
 */
int pool_region_add(struct pool *pool, uint32_t type, unsigned part,
		    uint64_t size, const char *name, unsigned *ret_index);
/*
 * The same for n regions (sizes[i] bytes in parts[i]) in one header
 * update: after a crash the pool has all of them or none.
 */
int pool_regions_add(struct pool *pool, uint32_t type, unsigned n,
		     const unsigned *parts, const uint64_t *sizes,
		     const char *name);
/* first region of type in part, or NULL */
const struct pool_region *pool_region_find(const struct pool *pool,
					   uint32_t type, unsigned part);

/*
 * Validate a raw pool header buffer (len bytes from part 0 at
 * POOL_HDR_A_OFF or _B_OFF) without trusting any field: magic, size,
 * version, features, checksum, table bounds. Returns 0 or the open errnos.
 * Used by open and by the fuzz target.
 */
int pool_hdr_check(const void *buf, size_t len);
/* same for a part header (POOL_PART_HDR_OFF of any part) */
int pool_part_hdr_check(const void *buf, size_t len);

/*
 * Who holds the flock of the open file fd (a part): its pid from
 * /proc/locks. 0, -ESRCH (no holder listed) or -errno. pool_pid_is_pmad()
 * is 1 when pid is a pmad (its /proc/PID/comm is "pmad").
 */
int pool_lock_holder(int fd, pid_t *ret_pid);
int pool_pid_is_pmad(pid_t pid);

/* format a UUID as 36 chars + NUL */
void pool_uuid_format(const uint8_t uuid[16], char out[37]);

/* last error message of this thread */
const char *pool_errormsg(void);

#endif
