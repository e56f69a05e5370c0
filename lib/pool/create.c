/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pool create: build every file part aside (".NAME.pmad-new" next to
 * it, see commit.c), preallocated, with its headers written through
 * lib/pmem (part headers, then pool header copy B, then copy A), make the
 * aside files and their directories durable, then commit by renaming part
 * 0's aside file over part 0's path; the other parts follow. Until the
 * commit nothing at the pool's paths has changed; after it, an open of the
 * pool finishes the renames a crash left undone. devdax parts cannot be
 * built aside: they are written in place (an old pool there is lost).
 * Every existing file is locked (exclusive) before anything is written.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <uuid/uuid.h>

#include "ns/ns.h"
#include "pool/internal.h"
#include "util/errmsg.h"
#include "util/io.h"

#define CREATE_CHUNK (64ULL << 20) /* posix_fallocate step, for progress */

struct create_ctx {
	const struct pool_create_params *params;
	struct pool *pool;
	char *hint[POOL_MAX_PARTS]; /* absolute path: the part table's hint */
	/* a file part is built at aside[i] and renamed to its path at the
	 * commit; owned: we created or locked it (remove it on failure) */
	char *aside[POOL_MAX_PARTS];
	int aside_owned[POOL_MAX_PARTS];
	int is_new[POOL_MAX_PARTS]; /* nothing at the path: never replace */
	/* force over an existing file: it stays locked until the commit */
	int old_fd[POOL_MAX_PARTS];
	int committed; /* part 0 is in place: never undo */
	uint64_t done, total; /* progress over all file parts */
};

static int size_param_check(uint64_t size)
{
	if (size % POOL_ALIGN || size < POOL_PART_MIN_SIZE ||
	    size > POOL_OFF_MASK + 1)
		return util_errmsg_set(EINVAL,
				       "part size %llu is invalid: it must be "
				       "a multiple of %llu KiB, at least %llu "
				       "KiB",
				       (unsigned long long)size,
				       POOL_ALIGN >> 10,
				       POOL_PART_MIN_SIZE >> 10);
	return 0;
}

/* two existing paths that name one file (another spelling, a link) */
static int paths_same_file_check(const struct pool_create_params *p)
{
	struct stat st[POOL_MAX_PARTS];
	int exists[POOL_MAX_PARTS];
	unsigned i, j;

	for (i = 0; i < p->nparts; i++) {
		exists[i] = stat(p->paths[i], &st[i]) == 0;
		for (j = 0; exists[i] && j < i; j++)
			if (exists[j] && st[i].st_dev == st[j].st_dev &&
			    st[i].st_ino == st[j].st_ino)
				return util_errmsg_set(EINVAL,
						       "'%s' is the same file "
						       "as part %u ('%s')",
						       p->paths[i], j,
						       p->paths[j]);
	}
	return 0;
}

static int params_check(const struct pool_create_params *p)
{
	unsigned i, j;
	int rc;

	if (!p || p->nparts < 1 || p->nparts > POOL_MAX_PARTS || !p->paths)
		return util_errmsg_set(EINVAL, "a pool has 1..%u parts, not %u",
				       POOL_MAX_PARTS, p ? p->nparts : 0);
	for (i = 0; i < p->nparts; i++) {
		if (!p->paths[i] || !p->paths[i][0])
			return util_errmsg_set(EINVAL, "part %u has no path",
					       i);
		for (j = 0; j < i; j++)
			if (!strcmp(p->paths[i], p->paths[j]))
				return util_errmsg_set(EINVAL,
						       "'%s' is listed twice "
						       "(parts %u and %u)",
						       p->paths[i], j, i);
		if (!p->part_size && ns_path_is_devdax(p->paths[i]) != 1)
			return util_errmsg_set(EINVAL,
					       "part size is required for "
					       "'%s' (not a devdax device)",
					       p->paths[i]);
	}
	rc = paths_same_file_check(p);
	if (rc < 0)
		return rc;
	return p->part_size ? size_param_check(p->part_size) : 0;
}

/* preallocate a file part in chunks, reporting progress */
static int file_prealloc(struct create_ctx *ctx, unsigned i)
{
	struct pool_part *part = &ctx->pool->parts[i];
	const struct pool_create_params *p = ctx->params;
	uint64_t off, len, avail;
	struct statvfs vfs;
	int err;

	/* refuse early instead of filling the file system, then failing */
	if (fstatvfs(part->fd, &vfs) == 0) {
		avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
		if (avail < part->size)
			return util_errmsg_set(
				ENOSPC,
				"'%s': not enough space on file system for "
				"%llu bytes (%llu available)",
				part->path, (unsigned long long)part->size,
				(unsigned long long)avail);
	}
	for (off = 0; off < part->size; off += len) {
		len = part->size - off < CREATE_CHUNK ? part->size - off :
							CREATE_CHUNK;
		err = posix_fallocate(part->fd, (off_t)off, (off_t)len);
		if (err == ENOSPC)
			return util_errmsg_set(ENOSPC,
					       "'%s': not enough space on file "
					       "system for %llu bytes",
					       part->path,
					       (unsigned long long)part->size);
		if (err)
			return util_errmsg_set(err, "'%s': cannot allocate: %s",
					       part->path, strerror(err));
		ctx->done += len;
		if (p->progress)
			p->progress(ctx->done, ctx->total, p->progress_arg);
	}
	part->dev_size = part->size;
	return 0;
}

/* [from, to) of fd is all zero */
static int range_zero(int fd, off_t from, off_t to)
{
	static const char zero[4096];
	char buf[4096];
	size_t len;
	off_t off;

	for (off = from; off < to; off += (off_t)len) {
		len = to - off < (off_t)sizeof(buf) ? (size_t)(to - off) :
						      sizeof(buf);
		if (pread(fd, buf, len, off) != (ssize_t)len ||
		    memcmp(buf, zero, len) != 0)
			return 0;
	}
	return 1;
}

/*
 * What an interrupted create leaves: the header area was zeroed first, so
 * everything in it but the (maybe torn) part header and pool header
 * copies is zero.
 */
static int hdr_area_left_by_create(int fd)
{
	return range_zero(fd, sizeof(struct pool_part_hdr),
			  (off_t)POOL_HDR_A_OFF) &&
	       range_zero(fd, (off_t)(POOL_HDR_B_OFF + POOL_HDR_SIZE),
			  (off_t)POOL_DATA_OFF);
}

/* an existing file create may overwrite: empty, a pmad part, or what an
 * interrupted create left */
static int reuse_check(int fd, const char *path)
{
	char magic[POOL_MAGIC_LEN];
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) < 0)
		return util_errmsg_set(errno, "cannot stat '%s': %s", path,
				       strerror(errno));
	if (!S_ISREG(st.st_mode))
		return util_errmsg_set(EINVAL,
				       "'%s' is not a regular file; refusing "
				       "to overwrite it",
				       path);
	if (st.st_size == 0)
		return 0;
	n = pread(fd, magic, sizeof(magic), POOL_PART_HDR_OFF);
	if ((n != (ssize_t)sizeof(magic) ||
	     memcmp(magic, POOL_PART_MAGIC, POOL_MAGIC_LEN) != 0) &&
	    !hdr_area_left_by_create(fd))
		return util_errmsg_set(EEXIST,
				       "'%s' exists and is not a pmad pool "
				       "part; refusing to overwrite it (remove "
				       "it first)",
				       path);
	return 0;
}

/*
 * The aside file exists: left by a create that was killed (or one still
 * running, which holds its lock). Reuse it, emptied. -EAGAIN if it went
 * away meanwhile (try creating it again).
 */
static int aside_reuse(struct create_ctx *ctx, unsigned i)
{
	struct pool_part *part = &ctx->pool->parts[i];
	const char *aside = ctx->aside[i];
	struct stat fst, st;
	int rc;

	part->fd = open(aside, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (part->fd < 0 && errno == ENOENT)
		return -EAGAIN;
	if (part->fd < 0)
		return util_errmsg_set(errno, "cannot open '%s': %s", aside,
				       strerror(errno));
	if (flock(part->fd, LOCK_EX | LOCK_NB) < 0)
		return util_errmsg_set(errno == EWOULDBLOCK ? EBUSY : errno,
				       "'%s' is in use: another create is "
				       "building part %u there, or its pool "
				       "is open",
				       aside, i);
	/* locked the file that is still there, not one renamed away */
	if (fstat(part->fd, &fst) < 0 || stat(aside, &st) < 0 ||
	    fst.st_dev != st.st_dev || fst.st_ino != st.st_ino) {
		close(part->fd);
		part->fd = -1;
		return -EAGAIN;
	}
	ctx->aside_owned[i] = 1;
	rc = reuse_check(part->fd, aside);
	if (rc < 0)
		return rc;
	if (ftruncate(part->fd, 0) < 0)
		return util_errmsg_set(errno, "'%s': cannot truncate: %s",
				       aside, strerror(errno));
	return 0;
}

/* open part i's aside file (new or left by a killed create), locked */
static int aside_open(struct create_ctx *ctx, unsigned i)
{
	struct pool_part *part = &ctx->pool->parts[i];
	const struct pool_create_params *p = ctx->params;
	unsigned tries;
	int rc;

	rc = pool_aside_path(part->path, &ctx->aside[i]);
	for (tries = 0; rc == 0 && tries < 3; tries++) {
		part->fd =
			open(ctx->aside[i],
			     O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
			     p->mode);
		if (part->fd >= 0) {
			ctx->aside_owned[i] = 1;
			rc = pool_part_lock(ctx->pool, i);
			break;
		}
		if (errno != EEXIST)
			return util_errmsg_set(errno, "cannot create '%s': %s",
					       ctx->aside[i], strerror(errno));
		rc = aside_reuse(ctx, i);
		if (rc != -EAGAIN)
			break;
		rc = 0;
	}
	if (rc < 0)
		return rc;
	if (part->fd < 0)
		return util_errmsg_set(EAGAIN, "'%s' keeps changing",
				       ctx->aside[i]);
	/* the requested mode exactly, not filtered by the umask */
	if (fchmod(part->fd, p->mode) < 0)
		return util_errmsg_set(errno, "'%s': chmod: %s", ctx->aside[i],
				       strerror(errno));
	return 0;
}

/*
 * An existing file with POOL_CREATE_FORCE: never through a symlink, only
 * a file that is empty or a pool part, and only when no open pool holds
 * its lock. It stays as it is, locked, until the commit replaces it.
 */
static int old_file_lock(struct create_ctx *ctx, unsigned i)
{
	struct pool_part *part = &ctx->pool->parts[i];
	int rc;

	part->fd = open(part->path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (part->fd < 0 && errno == ELOOP)
		return util_errmsg_set(ELOOP,
				       "'%s' is a symbolic link; refusing to "
				       "overwrite what it points to",
				       part->path);
	if (part->fd < 0)
		return util_errmsg_set(errno, "cannot open '%s': %s",
				       part->path, strerror(errno));
	rc = pool_part_lock(ctx->pool, i);
	if (rc < 0)
		return rc;
	rc = reuse_check(part->fd, part->path);
	if (rc < 0)
		return rc;
	ctx->old_fd[i] = part->fd;
	part->fd = -1;
	return 0;
}

/* what is at part i's path: nothing (is_new), or a file force replaces */
static int file_target_check(struct create_ctx *ctx, unsigned i)
{
	const char *path = ctx->pool->parts[i].path;
	struct stat st;

	if (lstat(path, &st) < 0) {
		if (errno != ENOENT)
			return util_errmsg_set(errno, "cannot create '%s': %s",
					       path, strerror(errno));
		ctx->is_new[i] = 1;
		return 0;
	}
	if (!(ctx->params->flags & POOL_CREATE_FORCE))
		return util_errmsg_set(EEXIST,
				       "'%s' already exists (force overwrites "
				       "it)",
				       path);
	return old_file_lock(ctx, i);
}

static int file_part_create(struct create_ctx *ctx, unsigned i)
{
	int rc;

	ctx->pool->parts[i].size = ctx->params->part_size;
	rc = file_target_check(ctx, i);
	if (rc < 0)
		return rc;
	rc = aside_open(ctx, i);
	if (rc < 0)
		return rc;
	return file_prealloc(ctx, i);
}

/*
 * A device always exists: refuse one that holds a pmad part unless forced.
 * devdax takes no read(2), so look through the mapping (kept for later).
 */
static int devdax_in_use_check(struct create_ctx *ctx, unsigned i)
{
	struct pool_part *part = &ctx->pool->parts[i];
	int rc;

	rc = pm_map_new(part->fd, 0, &part->map);
	if (rc < 0) {
		util_errmsg_prefix("'%s': cannot map", part->path);
		return rc;
	}
	if (!(ctx->params->flags & POOL_CREATE_FORCE) &&
	    !memcmp(pm_map_addr(part->map), POOL_PART_MAGIC, POOL_MAGIC_LEN))
		return util_errmsg_set(EEXIST,
				       "'%s' holds a pmad pool part (force "
				       "overwrites it)",
				       part->path);
	return 0;
}

static int devdax_part_create(struct create_ctx *ctx, unsigned i)
{
	struct pool_part *part = &ctx->pool->parts[i];
	uint64_t want = ctx->params->part_size;
	int rc;

	part->is_devdax = 1;
	part->fd = open(part->path, O_RDWR | O_CLOEXEC);
	if (part->fd < 0)
		return util_errmsg_set(errno, "cannot open '%s': %s",
				       part->path, strerror(errno));
	rc = ns_devdax_size(part->path, &part->dev_size);
	if (rc < 0) {
		util_errmsg_prefix("'%s'", part->path);
		return rc;
	}
	part->size = want ? want : part->dev_size & ~(POOL_ALIGN - 1);
	if (part->size > part->dev_size || part->size < POOL_PART_MIN_SIZE)
		return util_errmsg_set(
			ENOSPC,
			"'%s': device too small (%llu bytes, "
			"need %llu)",
			part->path, (unsigned long long)part->dev_size,
			(unsigned long long)(want ? want : POOL_PART_MIN_SIZE));
	rc = pool_part_same_file(ctx->pool, i);
	if (rc < 0)
		return rc;
	rc = pool_part_lock(ctx->pool, i);
	if (rc < 0)
		return rc;
	return devdax_in_use_check(ctx, i);
}

/*
 * The absolute path of part i as the part table names it: the directory
 * resolved, the name as given (the file itself may not exist yet). A
 * devdax device is resolved whole.
 */
static int part_hint(const char *path, char **ret_hint)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	char *dir, *real, *hint;
	int rc;

	if (ns_path_is_devdax(path) == 1) {
		dir = strdup(path);
		base = NULL;
	} else {
		dir = slash ? strndup(path, (size_t)(slash - path + 1)) :
			      strdup(".");
	}
	if (!dir)
		return util_errmsg_set(ENOMEM, "out of memory");
	if (base && (!*base || !strcmp(base, ".") || !strcmp(base, ".."))) {
		free(dir);
		return util_errmsg_set(EISDIR, "'%s' is a directory", path);
	}
	real = realpath(dir, NULL);
	free(dir);
	if (!real)
		return util_errmsg_set(errno, "'%s': cannot resolve path: %s",
				       path, strerror(errno));
	if (!base)
		hint = real;
	else if (asprintf(&hint, "%s%s%s", real,
			  real[strlen(real) - 1] == '/' ? "" : "/", base) < 0)
		hint = NULL;
	if (base)
		free(real);
	if (!hint)
		return util_errmsg_set(ENOMEM, "out of memory");
	rc = strlen(hint) < POOL_PATH_HINT_LEN ?
		     0 :
		     util_errmsg_set(
			     ENAMETOOLONG,
			     "'%s': absolute path is %zu bytes, at most "
			     "%d fit in the part table",
			     hint, strlen(hint), POOL_PATH_HINT_LEN - 1);
	if (rc < 0)
		free(hint);
	else
		*ret_hint = hint;
	return rc;
}

/* every part's hint; two spellings of one path are one file */
static int hints_fill(struct create_ctx *ctx)
{
	const struct pool_create_params *p = ctx->params;
	unsigned i, j;
	int rc;

	for (i = 0; i < p->nparts; i++) {
		rc = part_hint(p->paths[i], &ctx->hint[i]);
		if (rc < 0)
			return rc;
		for (j = 0; j < i; j++)
			if (!strcmp(ctx->hint[i], ctx->hint[j]))
				return util_errmsg_set(EINVAL,
						       "'%s' is the same file "
						       "as part %u ('%s')",
						       p->paths[i], j,
						       p->paths[j]);
	}
	return 0;
}

/* the part table entry of part i */
static void part_entry_fill(struct create_ctx *ctx, unsigned i)
{
	const struct pool_create_params *p = ctx->params;
	struct pool_part *part = &ctx->pool->parts[i];
	struct pool_part_entry *e = &ctx->pool->hdr.parts[i];
	int node;

	/* fits: checked by part_hint() */
	memcpy(e->path_hint, ctx->hint[i], strlen(ctx->hint[i]) + 1);
	node = p->nodes && p->nodes[i] >= 0 ? p->nodes[i] : -1;
	/* the aside file is in the same file system as the part will be */
	if (node < 0)
		node = ns_path_node(ctx->aside[i] ? ctx->aside[i] : part->path);
	/* node ids may have gaps: the ith online node */
	if (node < 0)
		node = ns_node_nth_online(i);
	e->node = node;
	e->size = part->size;
	e->flags = part->is_devdax ? POOL_PART_DEVDAX : 0;
	uuid_generate(e->uuid);
}

static int parts_create(struct create_ctx *ctx)
{
	const struct pool_create_params *p = ctx->params;
	struct pool *pool = ctx->pool;
	unsigned i;
	int rc;

	for (i = 0; i < p->nparts; i++) {
		pool->parts[i].path = strdup(p->paths[i]);
		if (!pool->parts[i].path)
			return util_errmsg_set(ENOMEM, "out of memory");
		if (ns_path_is_devdax(p->paths[i]) == 1)
			rc = devdax_part_create(ctx, i);
		else
			rc = file_part_create(ctx, i);
		if (rc < 0)
			return rc;
		part_entry_fill(ctx, i);
		/* test hook: a kill -9 after each part is built aside */
		util_crash_point("create");
	}
	return 0;
}

/* part header of part i, sealed with its checksum */
static void part_hdr_build(const struct pool *pool, unsigned i,
			   struct pool_part_hdr *phdr)
{
	memset(phdr, 0, sizeof(*phdr));
	memcpy(phdr->magic, POOL_PART_MAGIC, POOL_MAGIC_LEN);
	phdr->major = POOL_FORMAT_MAJOR;
	phdr->minor = POOL_FORMAT_MINOR;
	phdr->part_index = i;
	memcpy(phdr->pool_uuid, pool->hdr.uuid, sizeof(phdr->pool_uuid));
	memcpy(phdr->part_uuid, pool->hdr.parts[i].uuid,
	       sizeof(phdr->part_uuid));
	phdr->size = pool->parts[i].size;
	phdr->nparts = pool->nparts;
	phdr->create_time = pool->hdr.create_time;
	phdr->checksum = pool_part_hdr_checksum(phdr);
}

/* everything of the pool header but the part table (filled per part) */
static void hdr_init(struct pool_hdr *h, unsigned nparts)
{
	memcpy(h->magic, POOL_HDR_MAGIC, POOL_MAGIC_LEN);
	h->major = POOL_FORMAT_MAJOR;
	h->minor = POOL_FORMAT_MINOR;
	h->hdr_size = POOL_HDR_SIZE;
	h->generation = 1;
	uuid_generate(h->uuid);
	h->create_time = (uint64_t)time(NULL);
	h->nparts = nparts;
	h->nregions = 0;
}

/*
 * Write and persist the headers: part headers, then pool header copy B, then
 * copy A (both generation 1). Copy B is the commit point: before it the
 * target is "not a pool"; after it every part is complete. Copy A makes a
 * new pool survive the loss of either copy.
 */
static void headers_write(struct pool *pool)
{
	struct pm_map *map0 = pool->parts[0].map;
	char *base0 = pm_map_addr(map0);
	struct pool_part_hdr phdr;
	unsigned i;
	void *dst;

	/* an old pool (force, devdax) must be invalid before we write */
	pm_memset(map0, base0, 0, POOL_DATA_OFF, 0);
	for (i = pool->nparts; i-- > 0;) {
		part_hdr_build(pool, i, &phdr);
		dst = pm_map_addr(pool->parts[i].map);
		memcpy(dst, &phdr, sizeof(phdr));
		pm_persist(pool->parts[i].map, dst, sizeof(phdr));
	}
	pool->hdr.checksum = pool_hdr_checksum(&pool->hdr);
	/* part headers are durable: from copy B's seal on the pool is valid */
	pool_hdr_copy_write(map0, 1, &pool->hdr, POOL_HDR_SEAL_LAST);
	pool_hdr_copy_write(map0, 0, &pool->hdr, POOL_HDR_SEAL_FIRST);
	/* equal generations: open prefers copy A */
	pool->hdr_copy = 0;
	pool->other_valid = 1;
}

static void create_release(struct create_ctx *ctx)
{
	unsigned i;

	for (i = 0; i < POOL_MAX_PARTS; i++) {
		free(ctx->hint[i]);
		ctx->hint[i] = NULL;
		free(ctx->aside[i]);
		ctx->aside[i] = NULL;
		if (ctx->old_fd[i] >= 0)
			close(ctx->old_fd[i]);
		ctx->old_fd[i] = -1;
	}
}

/*
 * Before the commit, everything the new pool needs must be durable: each
 * aside file's data (persisted through lib/pmem) and size, and its name.
 */
static int asides_sync(struct create_ctx *ctx)
{
	struct pool_part *part;
	unsigned i;
	int rc;

	for (i = 0; i < ctx->params->nparts; i++) {
		part = &ctx->pool->parts[i];
		if (!ctx->aside[i])
			continue;
		if (fsync(part->fd) < 0)
			return util_errmsg_set(errno, "'%s': cannot sync: %s",
					       ctx->aside[i], strerror(errno));
		rc = pool_dir_sync(ctx->aside[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* put part i, complete and durable aside, in place */
static int aside_commit(struct create_ctx *ctx, unsigned i)
{
	int rc;

	rc = pool_aside_commit(ctx->aside[i], ctx->pool->parts[i].path,
			       ctx->is_new[i]);
	if (rc < 0)
		return rc;
	free(ctx->aside[i]);
	ctx->aside[i] = NULL;
	util_crash_point("create");
	return 0;
}

/*
 * The commit: part 0's rename (for a devdax part 0, its header copy B was
 * the commit). From here on the new pool is the one at these paths; a
 * rename of another part that fails or is cut short by a crash is
 * finished by the next open of the pool (open.c).
 */
static int asides_commit(struct create_ctx *ctx)
{
	unsigned i;
	int rc;

	if (ctx->aside[0]) {
		rc = aside_commit(ctx, 0);
		if (rc < 0)
			return rc;
	}
	ctx->committed = 1;
	for (i = 1; i < ctx->params->nparts; i++) {
		if (!ctx->aside[i])
			continue;
		rc = aside_commit(ctx, i);
		if (rc < 0) {
			util_errmsg_prefix("pool is created, but part %u is "
					   "still aside (an open of the pool "
					   "puts it in place)",
					   i);
			return rc;
		}
	}
	return 0;
}

static void create_undo(struct create_ctx *ctx)
{
	unsigned i;

	for (i = 0; i < ctx->params->nparts && !ctx->committed; i++)
		if (ctx->aside[i] && ctx->aside_owned[i])
			unlink(ctx->aside[i]);
	create_release(ctx);
	pool_close(&ctx->pool);
}

static int create_steps(struct create_ctx *ctx)
{
	int rc;

	rc = hints_fill(ctx);
	if (rc < 0)
		return rc;
	rc = parts_create(ctx);
	if (rc < 0)
		return rc;
	rc = pool_parts_map(ctx->pool);
	if (rc < 0)
		return rc;
	headers_write(ctx->pool);
	util_crash_point("create");
	rc = asides_sync(ctx);
	if (rc < 0)
		return rc;
	util_crash_point("create");
	return asides_commit(ctx);
}

int pool_create(const struct pool_create_params *params, struct pool **ret_pool)
{
	struct create_ctx ctx = { .params = params };
	unsigned i;
	int rc;

	for (i = 0; i < POOL_MAX_PARTS; i++)
		ctx.old_fd[i] = -1;
	rc = params_check(params);
	if (rc < 0)
		return rc;
	ctx.pool = pool_alloc(0);
	if (!ctx.pool)
		return util_errmsg_set(ENOMEM, "out of memory");
	ctx.pool->nparts = params->nparts;
	hdr_init(&ctx.pool->hdr, params->nparts);
	for (i = 0; i < params->nparts; i++)
		if (ns_path_is_devdax(params->paths[i]) != 1)
			ctx.total += params->part_size;
	rc = create_steps(&ctx);
	if (rc < 0) {
		create_undo(&ctx);
		return rc;
	}
	create_release(&ctx);
	*ret_pool = ctx.pool;
	return 0;
}
