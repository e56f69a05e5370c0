/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pool space: giving a part's free space back to the file system
 * (compaction). A punched range is deallocated and reads as zeros; the
 * caller decides which ranges are free and keeps them unused until
 * pool_part_sync made the punch durable.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pmem/pm.h"
#include "pool/internal.h"
#include "pool/pool.h"
#include "util/errmsg.h"

/* the part, or NULL (message set) if part is out of range */
static struct pool_part *part_get(struct pool *pool, unsigned part)
{
	if (part >= pool->nparts || pool->parts[part].fd < 0) {
		(void)util_errmsg_set(EINVAL, "no part %u", part);
		return NULL;
	}
	return &pool->parts[part];
}

int pool_part_is_devdax(const struct pool *pool, unsigned part)
{
	return part < pool->nparts && pool->parts[part].is_devdax;
}

int pool_part_alloc_bytes(struct pool *pool, unsigned part, uint64_t *ret_bytes)
{
	struct pool_part *p = part_get(pool, part);
	struct stat st;

	if (!p)
		return -EINVAL;
	if (fstat(p->fd, &st) < 0)
		return util_errmsg_set(errno, "cannot stat %s: %s", p->path,
				       strerror(errno));
	*ret_bytes = (uint64_t)st.st_blocks * 512;
	return 0;
}

int pool_part_punch(struct pool *pool, unsigned part, uint64_t off,
		    uint64_t len)
{
	struct pool_part *p = part_get(pool, part);

	if (!p)
		return -EINVAL;
	if (pool->flags & POOL_OPEN_RDONLY)
		return util_errmsg_set(EROFS, "%s is open read-only", p->path);
	if (p->is_devdax)
		return util_errmsg_set(EOPNOTSUPP,
				       "%s is a devdax device: its space "
				       "cannot be given back",
				       p->path);
	if (off < POOL_DATA_OFF || off > p->size || len > p->size - off)
		return util_errmsg_set(EINVAL,
				       "punch of [0x%llx, +0x%llx) outside "
				       "the data of part %u",
				       (unsigned long long)off,
				       (unsigned long long)len, part);
	if (fallocate(p->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)off, (off_t)len) < 0)
		return util_errmsg_set(errno, "cannot punch a hole in %s: %s",
				       p->path, strerror(errno));
	pm_map_discarded(p->map, off, len);
	return 0;
}

int pool_part_sync(struct pool *pool, unsigned part)
{
	struct pool_part *p = part_get(pool, part);

	if (!p)
		return -EINVAL;
	if (p->is_devdax)
		return 0;
	if (fdatasync(p->fd) < 0)
		return util_errmsg_set(errno, "cannot sync %s: %s", p->path,
				       strerror(errno));
	return 0;
}
