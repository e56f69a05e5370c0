/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pool commit: how a new pool replaces what was at its paths in one
 * atomic step (doc/DESIGN.md, "Creating a pool"). Create builds every file
 * part under its aside name (".NAME.pmad-new" in the part's directory),
 * makes all of them durable, then renames part 0's aside file over part
 * 0's path: that rename is the commit. The other parts follow, each by a
 * rename of its aside file; an open of the new pool that finds a part
 * still aside finishes its rename (roll-forward). Before the commit the
 * old files are untouched, so a crash leaves the old pool (or nothing)
 * plus aside files, which the next create reuses.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pool/internal.h"
#include "util/errmsg.h"

#define POOL_ASIDE_SUFFIX ".pmad-new"

int pool_aside_path(const char *path, char **ret_aside)
{
	const char *slash = strrchr(path, '/');
	int dir_len = slash ? (int)(slash - path + 1) : 0;
	char *aside;

	if (asprintf(&aside, "%.*s.%s" POOL_ASIDE_SUFFIX, dir_len, path,
		     path + dir_len) < 0)
		return util_errmsg_set(ENOMEM, "out of memory");
	*ret_aside = aside;
	return 0;
}

int pool_dir_sync(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int fd, rc = 0;

	dir = slash ? strndup(path, (size_t)(slash - path + 1)) : strdup(".");
	if (!dir)
		return util_errmsg_set(ENOMEM, "out of memory");
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		rc = util_errmsg_set(errno, "'%s': cannot sync directory: %s",
				     dir, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(dir);
	return rc;
}

/* rename that fails with EEXIST instead of replacing path */
static int rename_noreplace(const char *from, const char *to)
{
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	/* the file system has no RENAME_NOREPLACE: link fails on EEXIST */
	if (link(from, to) < 0)
		return -1;
	return unlink(from);
}

int pool_aside_commit(const char *aside, const char *path, int is_new)
{
	int rc;

	rc = is_new ? rename_noreplace(aside, path) : rename(aside, path);
	if (rc < 0)
		return util_errmsg_set(errno, "cannot rename '%s' to '%s': %s",
				       aside, path, strerror(errno));
	/* the new name must be durable before anything relies on it */
	return pool_dir_sync(path);
}
