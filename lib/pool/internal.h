/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pool private interface: the in-DRAM struct pool shared by create.c,
 * open.c, header.c and region.c.
 *
 * Invariant: pool->hdr is a copy of the current on-media header copy
 * (pool->hdr_copy); it changes only through pool_hdr_write(), which makes
 * the new copy durable before pool->hdr and pool->hdr_copy move.
 */
#ifndef PMAD_POOL_INTERNAL_H
#define PMAD_POOL_INTERNAL_H

#include <stdint.h>

#include "pool/layout.h"
#include "pool/pool.h"
#include "pmem/pm.h"
#include "util/errmsg.h"

/* one open part */
struct pool_part {
	int fd; /* open file or devdax device, -1 if none */
	struct pm_map *map; /* the whole file / device, NULL until mapped */
	char *path; /* path it was opened by (malloc'd) */
	uint64_t size; /* bytes used by the pool (part header size) */
	uint64_t dev_size; /* bytes of the file or device */
	int is_devdax; /* a devdax character device */
	/* the NUMA node the part is on (ns_path_node), else the node its
	 * part table entry records; -1 until mapped (pool_parts_map) */
	int node;
};

struct pool {
	unsigned flags; /* enum pool_open_flags */
	unsigned nparts; /* == hdr.nparts */
	struct pool_part parts[POOL_MAX_PARTS];
	struct pool_hdr hdr; /* DRAM copy of the current header copy */
	unsigned hdr_copy; /* 0 = A, 1 = B */
	int other_valid; /* the non-current copy passed pool_hdr_check */
	int other_differs; /* the other copy is not a byte copy of hdr */
	int hdr_damaged; /* read-only: shown on a copy that may be older */
	char damage_msg[2 * UTIL_ERRMSG_MAX]; /* what hdr_damaged means */
	/* a copy failed its check, the other holds the same state: used */
	char note_msg[2 * UTIL_ERRMSG_MAX]; /* "" if none */
	/* pool_open_fds while it runs: part i is opened from open_fds[i] */
	const int *open_fds;
};

/* order of the two parts of a header copy write (layout.h) */
enum pool_hdr_seal {
	POOL_HDR_SEAL_LAST, /* body, then seal: the commit of an update */
	POOL_HDR_SEAL_FIRST, /* seal, then body: the second copy */
};

/* write h (sealed: checksum set) over header copy of part 0's map */
void pool_hdr_copy_write(struct pm_map *map, unsigned copy,
			 const struct pool_hdr *h, enum pool_hdr_seal order);
/* rewrite the non-current copy from pool->hdr (after damage or a crash
 * between the two writes of an update); -EROFS on a read-only pool */
int pool_hdr_sync(struct pool *pool);

/* media offset of header copy 0 (A) or 1 (B) in part 0 */
static inline uint64_t pool_hdr_copy_off(unsigned copy)
{
	return copy ? POOL_HDR_B_OFF : POOL_HDR_A_OFF;
}

/* checksums: crc32c of every byte before the checksum field */
uint32_t pool_hdr_checksum(const struct pool_hdr *hdr);
uint32_t pool_part_hdr_checksum(const struct pool_part_hdr *phdr);

/* invalid copy d held the state of valid copy v (layout.h): open falls
 * back to v, and a writable open rewrites d */
int pool_hdr_same_state(const struct pool_hdr *d, const struct pool_hdr *v);

/*
 * Make new (a full header, e.g. pool->hdr with a change) the current
 * header: it is written with generation + 1 over the non-current copy,
 * persisted, and only then becomes current. -EROFS on a read-only pool.
 */
int pool_hdr_write(struct pool *pool, const struct pool_hdr *new_hdr);

/* allocate an empty struct pool (every fd -1); NULL on ENOMEM */
struct pool *pool_alloc(unsigned flags);

/* take part i's (part 0's) advisory lock per pool->flags; -EBUSY if held */
int pool_part_lock(struct pool *pool, unsigned i);
int pool_lock(struct pool *pool);
/* fd's lock is taken: set the EBUSY message "LABEL: pool is in use by
 * another process", or "... is held by pmad (pid N); use --socket" */
int pool_lock_busy(int fd, const char *label);
/* -EINVAL if open part i is the same file (device, inode) as a part < i */
int pool_part_same_file(const struct pool *pool, unsigned i);
/* pm_map_new every part not mapped yet */
int pool_parts_map(struct pool *pool);

/*
 * Crash-safe create (commit.c): a file part is built at its aside path
 * (".NAME.pmad-new" next to path, malloc'd into *ret_aside) and put in
 * place by pool_aside_commit(): rename over path (is_new: fail with
 * -EEXIST if path appeared meanwhile), then fsync of the directory.
 * pool_dir_sync() makes path's directory entry durable.
 */
int pool_aside_path(const char *path, char **ret_aside);
int pool_aside_commit(const char *aside, const char *path, int is_new);
int pool_dir_sync(const char *path);

/* 0 if the two UUIDs are equal */
int pool_uuid_cmp(const uint8_t a[16], const uint8_t b[16]);

#endif
