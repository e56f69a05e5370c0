/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pool open: open part 0, lock it, read and verify its part header and
 * both pool header copies (with pread, so any file is safe to probe), then
 * open and verify every other part from its path hint, and map them all.
 * Also close and the read-only accessors of an open pool.
 *
 * Every part carries the advisory lock (flock) while the pool is open:
 * exclusive for writers, shared for read-only opens, none with
 * POOL_OPEN_NOLOCK. Parts are told apart by device and inode.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ns/ns.h"
#include "pool/internal.h"
#include "util/errmsg.h"
#include "util/io.h"
#include "util/log.h"

/* "'path'" for part 0, "part i ('path')" for the others */
static void part_label(unsigned i, const char *path, char *buf, size_t len)
{
	if (i == 0)
		snprintf(buf, len, "'%s'", path);
	else
		snprintf(buf, len, "part %u ('%s')", i, path);
}

struct pool *pool_alloc(unsigned flags)
{
	struct pool *pool;
	unsigned i;

	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return NULL;
	pool->flags = flags;
	for (i = 0; i < POOL_MAX_PARTS; i++)
		pool->parts[i].fd = -1;
	return pool;
}

void pool_close(struct pool **pool)
{
	struct pool_part *part;
	unsigned i;

	if (!pool || !*pool)
		return;
	for (i = 0; i < POOL_MAX_PARTS; i++) {
		part = &(*pool)->parts[i];
		pm_map_delete(&part->map);
		/* closing the last fd of part 0 drops the flock */
		if (part->fd >= 0)
			close(part->fd);
		free(part->path);
	}
	free(*pool);
	*pool = NULL;
}

/* map an open(2) failure of part i to the pool errnos */
static int part_open_error(struct pool *pool, unsigned i, const char *path,
			   int err)
{
	char label[POOL_PATH_HINT_LEN + 32];

	part_label(i, path, label, sizeof(label));
	if (err == ENOENT)
		return i ? util_errmsg_set(ENOENT, "%s is missing", label) :
			   util_errmsg_set(ENOENT, "%s: no such file", label);
	if (!(pool->flags & (POOL_OPEN_RDONLY | POOL_OPEN_PRIVATE)) &&
	    (err == EACCES || err == EROFS || err == EPERM))
		return util_errmsg_set(EROFS,
				       "%s is read-only (%s); open the pool "
				       "read-only",
				       label, strerror(err));
	return util_errmsg_set(err, "cannot open %s: %s", label, strerror(err));
}

/* size of a regular file or devdax device open as part i */
static int part_stat(struct pool *pool, unsigned i, struct pool_part *part)
{
	char label[POOL_PATH_HINT_LEN + 32];
	struct stat st;
	int rc;

	part_label(i, part->path, label, sizeof(label));
	if (fstat(part->fd, &st) < 0)
		return util_errmsg_set(errno, "cannot stat %s: %s", label,
				       strerror(errno));
	/* root bypasses DAC: honour the mode bits explicitly */
	if (S_ISREG(st.st_mode) &&
	    !(pool->flags & (POOL_OPEN_RDONLY | POOL_OPEN_PRIVATE)) &&
	    !(st.st_mode & 0222))
		return util_errmsg_set(EROFS,
				       "%s is read-only (mode %04o); open the "
				       "pool read-only",
				       label, (unsigned)(st.st_mode & 07777));
	if (S_ISREG(st.st_mode)) {
		part->dev_size = (uint64_t)st.st_size;
		return 0;
	}
	if (!S_ISCHR(st.st_mode) || ns_path_is_devdax(part->path) != 1)
		return util_errmsg_set(EINVAL,
				       "%s: not a pmad pool (neither a regular "
				       "file nor a devdax device)",
				       label);
	part->is_devdax = 1;
	rc = ns_devdax_size(part->path, &part->dev_size);
	if (rc < 0)
		util_errmsg_prefix("%s", label);
	return rc;
}

/* open part i at path into pool->parts[i] (devdax: mapped already) */
static int part_open(struct pool *pool, unsigned i, const char *path)
{
	struct pool_part *part = &pool->parts[i];
	int rdonly = !!(pool->flags & POOL_OPEN_RDONLY);
	int files_ro = !!(pool->flags & (POOL_OPEN_RDONLY | POOL_OPEN_PRIVATE));
	int rc;

	part->path = strdup(path);
	if (!part->path)
		return util_errmsg_set(ENOMEM, "out of memory");
	/* pool_open_fds: the caller's descriptor (it may have no right to
	 * open the file by name: pmad passes descriptors), duplicated */
	part->fd =
		pool->open_fds ?
			fcntl(pool->open_fds[i], F_DUPFD_CLOEXEC, 0) :
			open(path, (files_ro ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (part->fd < 0)
		return part_open_error(pool, i, path, errno);
	if (pool->open_fds && !rdonly &&
	    (fcntl(part->fd, F_GETFL) & O_ACCMODE) != O_RDWR)
		return part_open_error(pool, i, path, EROFS);
	rc = part_stat(pool, i, part);
	if (rc < 0 || !part->is_devdax)
		return rc;
	if (pool->flags & POOL_OPEN_PRIVATE)
		return util_errmsg_set(EOPNOTSUPP,
				       "'%s': a devdax part has no private "
				       "(copy-on-write) view",
				       path);
	/* devdax supports no read(2): read its headers through the map */
	return pm_map_new(part->fd, rdonly ? PM_MAP_RDONLY : 0, &part->map);
}

/* len bytes at off of an open part; the caller checked the bounds */
static int part_read(const struct pool_part *part, void *buf, size_t len,
		     uint64_t off)
{
	int rc;

	if (part->map) {
		memcpy(buf, (const char *)pm_map_addr(part->map) + off, len);
		return 0;
	}
	rc = util_pread_all(part->fd, buf, len, (off_t)off);
	if (rc < 0)
		return util_errmsg_set(-rc, "'%s': read failed: %s", part->path,
				       strerror(-rc));
	return 0;
}

/* read and check part i's header; the file must hold what it claims */
static int part_hdr_read(struct pool *pool, unsigned i,
			 struct pool_part_hdr *ret_phdr)
{
	struct pool_part *part = &pool->parts[i];
	char label[POOL_PATH_HINT_LEN + 32];
	int rc;

	memset(ret_phdr, 0, sizeof(*ret_phdr));
	part_label(i, part->path, label, sizeof(label));
	if (part->dev_size < sizeof(*ret_phdr))
		return util_errmsg_set(EINVAL,
				       "%s: not a pmad pool (%s is %llu bytes)",
				       label,
				       part->is_devdax ? "device" : "file",
				       (unsigned long long)part->dev_size);
	rc = part_read(part, ret_phdr, sizeof(*ret_phdr), POOL_PART_HDR_OFF);
	if (rc < 0)
		return rc;
	rc = pool_part_hdr_check(ret_phdr, sizeof(*ret_phdr));
	if (rc < 0) {
		util_errmsg_prefix("%s", label);
		return rc;
	}
	if (ret_phdr->size > part->dev_size)
		return util_errmsg_set(EIO,
				       "%s: %s is %llu bytes, smaller than the "
				       "%llu its header claims",
				       label,
				       part->is_devdax ? "device" : "file",
				       (unsigned long long)part->dev_size,
				       (unsigned long long)ret_phdr->size);
	part->size = ret_phdr->size;
	return 0;
}

/* does any open hold a heap region lock of the pool (fd: part 0)? */
static int regions_held(int fd)
{
	struct flock fl = {
		.l_type = F_WRLCK,
		.l_whence = SEEK_SET,
		.l_start = POOL_SLOT_LOCK_BASE,
		.l_len = 64,
	};

	return fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
}

int pool_part_lock(struct pool *pool, unsigned i)
{
	int op = (pool->flags &
		  (POOL_OPEN_RDONLY | POOL_OPEN_PRIVATE | POOL_OPEN_SHARED)) ?
			 LOCK_SH :
			 LOCK_EX;
	char label[POOL_PATH_HINT_LEN + 32];

	if (pool->flags & POOL_OPEN_NOLOCK)
		return 0;
	part_label(i, pool->parts[i].path, label, sizeof(label));
	while (flock(pool->parts[i].fd, op | LOCK_NB) < 0) {
		if (errno == EINTR)
			continue;
		if (errno == EWOULDBLOCK)
			return pool_lock_busy(pool->parts[i].fd, label);
		return util_errmsg_set(errno, "%s: cannot lock: %s", label,
				       strerror(errno));
	}
	/* a read-only open shares the flock with masked opens that write
	 * their regions: it must not read a pool they are changing */
	if (i == 0 && op == LOCK_SH && !(pool->flags & POOL_OPEN_SHARED) &&
	    regions_held(pool->parts[0].fd)) {
		(void)flock(pool->parts[0].fd, LOCK_UN);
		return pool_lock_busy(pool->parts[0].fd, label);
	}
	return 0;
}

static void slot_flock(struct flock *fl, unsigned slot, short type)
{
	memset(fl, 0, sizeof(*fl));
	fl->l_type = type;
	fl->l_whence = SEEK_SET;
	fl->l_start = POOL_SLOT_LOCK_BASE + (off_t)slot;
	fl->l_len = 1;
}

int pool_slot_lock(struct pool *pool, unsigned slot, const char *label)
{
	struct flock fl;

	if (slot >= 64)
		return util_errmsg_set(EINVAL, "region slot %u (0..63)", slot);
	if (!(pool->flags & POOL_OPEN_SHARED))
		return util_errmsg_set(EINVAL, "the pool is not open shared");
	slot_flock(&fl, slot, F_WRLCK);
	while (fcntl(pool->parts[0].fd, F_OFD_SETLK, &fl) < 0) {
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EACCES)
			return util_errmsg_set(EBUSY,
					       "%s is held by another "
					       "attachment of the pool",
					       label);
		return util_errmsg_set(errno, "%s: cannot lock: %s", label,
				       strerror(errno));
	}
	return 0;
}

void pool_slot_unlock(struct pool *pool, unsigned slot)
{
	struct flock fl;

	if (slot >= 64 || !(pool->flags & POOL_OPEN_SHARED))
		return;
	slot_flock(&fl, slot, F_UNLCK);
	while (fcntl(pool->parts[0].fd, F_OFD_SETLK, &fl) < 0 && errno == EINTR)
		;
}

int pool_fd_slot_busy(int fd, unsigned slot)
{
	struct flock fl;

	if (slot >= 64)
		return util_errmsg_set(EINVAL, "region slot %u (0..63)", slot);
	slot_flock(&fl, slot, F_WRLCK);
	if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
		return util_errmsg_set(errno, "cannot test a region lock: %s",
				       strerror(errno));
	return fl.l_type != F_UNLCK;
}

int pool_slot_busy(const struct pool *pool, unsigned slot)
{
	return pool_fd_slot_busy(pool->parts[0].fd, slot);
}

int pool_lock(struct pool *pool)
{
	return pool_part_lock(pool, 0);
}

int pool_part_same_file(const struct pool *pool, unsigned i)
{
	struct stat st, other;
	unsigned j;

	if (fstat(pool->parts[i].fd, &st) < 0)
		return util_errmsg_set(errno, "cannot stat '%s': %s",
				       pool->parts[i].path, strerror(errno));
	for (j = 0; j < i; j++) {
		if (pool->parts[j].fd < 0 || fstat(pool->parts[j].fd, &other))
			continue;
		if (st.st_dev == other.st_dev && st.st_ino == other.st_ino)
			return util_errmsg_set(EINVAL,
					       "'%s' is the same file as part "
					       "%u ('%s')",
					       pool->parts[i].path, j,
					       pool->parts[j].path);
	}
	return 0;
}

/*
 * Neither copy is valid: one errno, and a message naming the cause. A copy
 * without magic was never written (create was interrupted before it wrote
 * that copy), so the other copy's error is the one that matters.
 */
static int hdr_both_invalid(const char *path, int rc_a, int rc_b,
			    const char *msg_a, const char *msg_b)
{
	if (rc_a == -EINVAL && rc_b == -EINVAL)
		return util_errmsg_set(
			EINVAL, "'%s': not a pmad pool (no pool header)", path);
	if (rc_b == -EINVAL)
		return util_errmsg_set(-rc_a, "'%s': pool header copy A: %s",
				       path, msg_a);
	if (rc_a == -EINVAL)
		return util_errmsg_set(-rc_b, "'%s': pool header copy B: %s",
				       path, msg_b);
	if (rc_a == rc_b && !strcmp(msg_a, msg_b))
		return util_errmsg_set(-rc_a, "'%s': %s (both copies)", path,
				       msg_a);
	return util_errmsg_set(rc_a == rc_b ? -rc_a : EBADMSG,
			       "'%s': no valid pool header (copy A: %s; "
			       "copy B: %s)",
			       path, msg_a, msg_b);
}

/* the seal word of h is zero: the copy was never sealed */
static int hdr_unsealed(const struct pool_hdr *h)
{
	uint64_t seal;

	memcpy(&seal, (const char *)h + POOL_HDR_SEAL_OFF, sizeof(seal));
	return seal == 0;
}

/*
 * Copy bad failed its check (rc, msg) and copy cur is valid. Fall back to
 * cur only if bad held the same state; a read-only open with
 * POOL_OPEN_SHOW_OLDER may show cur anyway, flagged as damaged.
 */
static int hdr_damage_check(struct pool *pool, const struct pool_hdr *copies,
			    unsigned cur, int rc, const char *msg)
{
	const struct pool_hdr *d = &copies[!cur], *v = &copies[cur];
	const char *path = pool->parts[0].path;
	char dname = cur ? 'A' : 'B', vname = cur ? 'B' : 'A';

	/* sealed by us (checksum ok) in a format we do not know */
	if (rc == -EPROTONOSUPPORT && d->checksum == pool_hdr_checksum(d))
		return util_errmsg_set(EPROTONOSUPPORT,
				       "'%s': pool header copy %c: %s", path,
				       dname, msg);
	if (pool_hdr_same_state(d, v)) {
		/* usable, but never silently: every open reports it */
		snprintf(pool->note_msg, sizeof(pool->note_msg),
			 "pool header copy %c is invalid (%.400s: damaged, or "
			 "an update was interrupted); copy %c holds the same "
			 "state and is used%s",
			 dname, msg, vname,
			 (pool->flags & POOL_OPEN_RDONLY) ?
				 "; a writable open rewrites it" :
				 ", and rewrites it");
		return 0;
	}
	if ((pool->flags & POOL_OPEN_RDONLY) &&
	    (pool->flags & POOL_OPEN_SHOW_OLDER)) {
		snprintf(
			pool->damage_msg, sizeof(pool->damage_msg),
			"pool header copy %c is damaged (%.400s); shown is copy "
			"%c (generation %llu), which may be older",
			dname, msg, vname, (unsigned long long)v->generation);
		pool->hdr_damaged = 1;
		return 0;
	}
	return util_errmsg_set(EBADMSG,
			       "'%s': pool header copy %c is damaged (%s) and "
			       "copy %c (generation %llu) may hold an older "
			       "state; refusing to roll the pool back: restore "
			       "part 0 from a backup ('pmactl inspect' shows "
			       "copy %c)",
			       path, dname, msg, vname,
			       (unsigned long long)v->generation, vname);
}

/* read both header copies, make the valid one with the highest
 * generation current (see layout.h for when a damaged copy is allowed) */
static int hdr_choose(struct pool *pool)
{
	char msg[2][UTIL_ERRMSG_MAX];
	struct pool_hdr *copies;
	int rc[2], ret, i, cur;

	copies = malloc(2 * sizeof(*copies));
	if (!copies)
		return util_errmsg_set(ENOMEM, "out of memory");
	for (i = 0; i < 2; i++) {
		ret = part_read(&pool->parts[0], &copies[i], sizeof(copies[i]),
				pool_hdr_copy_off((unsigned)i));
		if (ret < 0)
			goto out_free;
		rc[i] = pool_hdr_check(&copies[i], sizeof(copies[i]));
		/* no seal yet: create stopped before this copy was complete */
		if (rc[i] < 0 && hdr_unsealed(&copies[i]))
			rc[i] = util_errmsg_set(EINVAL, "never completed");
		snprintf(msg[i], sizeof(msg[i]), "%s", util_errmsg());
	}
	if (rc[0] < 0 && rc[1] < 0) {
		ret = hdr_both_invalid(pool->parts[0].path, rc[0], rc[1],
				       msg[0], msg[1]);
		goto out_free;
	}
	cur = rc[0] < 0 ||
	      (!rc[1] && copies[1].generation > copies[0].generation);
	ret = rc[!cur] < 0 ? hdr_damage_check(pool, copies, (unsigned)cur,
					      rc[!cur], msg[!cur]) :
			     0;
	if (ret < 0)
		goto out_free;
	pool->hdr = copies[cur];
	pool->hdr_copy = (unsigned)cur;
	pool->other_valid = !rc[!cur];
	pool->other_differs = !!memcmp(&copies[0], &copies[1], sizeof(*copies));
out_free:
	free(copies);
	return ret;
}

/* part 0's own header and the pool header must describe the same part */
static int part0_check(struct pool *pool, const struct pool_part_hdr *phdr)
{
	const struct pool_hdr *h = &pool->hdr;
	const char *path = pool->parts[0].path;
	uint64_t ro = h->feat_ro_compat & ~POOL_FEAT_RO_COMPAT_KNOWN;

	if (pool_uuid_cmp(phdr->pool_uuid, h->uuid) ||
	    pool_uuid_cmp(phdr->part_uuid, h->parts[0].uuid) ||
	    phdr->nparts != h->nparts || phdr->size != h->parts[0].size)
		return util_errmsg_set(EBADMSG,
				       "'%s': part header and pool header "
				       "disagree (UUID, part count or size)",
				       path);
	if (ro && !(pool->flags & POOL_OPEN_RDONLY))
		return util_errmsg_set(EPROTONOSUPPORT,
				       "'%s': pool uses unknown read-only "
				       "compatible features 0x%llx; open it "
				       "read-only",
				       path, (unsigned long long)ro);
	return 0;
}

/* open part i at path (its hint or aside path) and check it is this
 * pool's part i */
static int part_verify_at(struct pool *pool, unsigned i, const char *path)
{
	const struct pool_part_entry *e = &pool->hdr.parts[i];
	char label[POOL_PATH_HINT_LEN + 32];
	struct pool_part_hdr phdr;
	int rc;

	rc = part_open(pool, i, path);
	if (rc < 0)
		return rc;
	rc = pool_part_same_file(pool, i);
	if (rc < 0)
		return rc;
	/* every part is locked as long as the pool is open, not only 0 */
	rc = pool_part_lock(pool, i);
	if (rc < 0)
		return rc;
	rc = part_hdr_read(pool, i, &phdr);
	if (rc < 0)
		return rc;
	part_label(i, path, label, sizeof(label));
	if (pool_uuid_cmp(phdr.pool_uuid, pool->hdr.uuid))
		return util_errmsg_set(EXDEV, "%s belongs to another pool",
				       label);
	if (phdr.part_index != i)
		return util_errmsg_set(EXDEV, "%s is part %u, expected %u",
				       label, phdr.part_index, i);
	if (pool_uuid_cmp(phdr.part_uuid, e->uuid))
		return util_errmsg_set(EXDEV,
				       "%s belongs to another pool (its part "
				       "UUID is not in the part table)",
				       label);
	if (phdr.size != e->size)
		return util_errmsg_set(EBADMSG,
				       "%s: size %llu differs from the %llu in "
				       "the part table",
				       label, (unsigned long long)phdr.size,
				       (unsigned long long)e->size);
	return 0;
}

/* forget what part_verify_at() opened of part i */
static void part_reset(struct pool *pool, unsigned i)
{
	struct pool_part *part = &pool->parts[i];

	pm_map_delete(&part->map);
	if (part->fd >= 0)
		close(part->fd);
	free(part->path);
	memset(part, 0, sizeof(*part));
	part->fd = -1;
}

/*
 * Part i, verified at aside, goes to its hint: the rename a crash kept
 * create from doing (commit.c). What is at the hint now (a part of the
 * pool this one replaced) must not be in use.
 */
static int part_put_in_place(struct pool *pool, unsigned i, const char *aside,
			     int is_new)
{
	const char *hint = pool->hdr.parts[i].path_hint;
	char *path;
	int fd = -1, rc;

	if (!is_new) {
		fd = open(hint, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
			close(fd);
			return util_errmsg_set(EBUSY,
					       "part %u ('%s') is still aside "
					       "as '%s', and the file in its "
					       "place is in use",
					       i, hint, aside);
		}
	}
	path = strdup(hint);
	rc = path ? pool_aside_commit(aside, hint, is_new) :
		    util_errmsg_set(ENOMEM, "out of memory");
	if (fd >= 0)
		close(fd);
	if (rc < 0) {
		free(path);
		return rc;
	}
	util_warn("'%s': part %u was left aside by an interrupted create; "
		  "moved it in place",
		  hint, i);
	free(pool->parts[i].path);
	pool->parts[i].path = path;
	return 0;
}

/*
 * Part i is missing or another pool's: if create was killed after its
 * commit, the part is still at its aside path. A writable open moves it in
 * place; a read-only one uses it where it is. Otherwise the error stands.
 */
static int part_roll_forward(struct pool *pool, unsigned i, int rc)
{
	const char *hint = pool->hdr.parts[i].path_hint;
	char msg[UTIL_ERRMSG_MAX];
	char *aside = NULL;
	int rc2;

	if ((rc != -ENOENT && rc != -EXDEV) ||
	    pool_aside_path(hint, &aside) < 0 || access(aside, F_OK) < 0) {
		free(aside);
		return rc;
	}
	snprintf(msg, sizeof(msg), "%s", util_errmsg());
	part_reset(pool, i);
	rc2 = part_verify_at(pool, i, aside);
	if (rc2 < 0) {
		/* not this pool's part either: report the part at its hint */
		free(aside);
		return util_errmsg_set(-rc, "%s", msg);
	}
	if (!(pool->flags &
	      (POOL_OPEN_RDONLY | POOL_OPEN_NOLOCK | POOL_OPEN_PRIVATE)))
		rc = part_put_in_place(pool, i, aside, rc == -ENOENT);
	else
		rc = 0;
	free(aside);
	return rc;
}

/* open part i from its path hint, or where an interrupted create left it */
static int part_verify(struct pool *pool, unsigned i)
{
	int rc;

	if (!pool->hdr.parts[i].path_hint[0])
		return util_errmsg_set(ENOENT, "part %u has no path", i);
	rc = part_verify_at(pool, i, pool->hdr.parts[i].path_hint);
	return rc < 0 ? part_roll_forward(pool, i, rc) : 0;
}

/*
 * The node part i is on: where its file or device is now (a part opened
 * by path; descriptors name no path), else what the part table records.
 * A part moved to another node's namespace since it was made places its
 * heap by where it is: said once, as a warning (fsck: part-node).
 */
static void part_node_check(struct pool *pool, unsigned i)
{
	struct pool_part *part = &pool->parts[i];
	int rec = pool->hdr.parts[i].node;
	int now = pool->open_fds ? -1 : ns_path_node(part->path);

	part->node = now >= 0 ? now : rec;
	if (now >= 0 && rec >= 0 && now != rec)
		util_warn("part %u ('%s') is on NUMA node %d, the pool header "
			  "records node %d (moved to another node's "
			  "namespace?): its heap is placed by node %d",
			  i, part->path, now, rec, now);
}

/* map every part not mapped yet (devdax parts were mapped at open) */
int pool_parts_map(struct pool *pool)
{
	unsigned flags = (pool->flags & POOL_OPEN_RDONLY)  ? PM_MAP_RDONLY :
			 (pool->flags & POOL_OPEN_PRIVATE) ? PM_MAP_PRIVATE :
							     0;
	struct pool_part *part;
	unsigned i;
	int rc;

	for (i = 0; i < pool->nparts; i++) {
		part = &pool->parts[i];
		if (part->map)
			continue;
		rc = pm_map_new(part->fd, flags, &part->map);
		if (rc < 0) {
			util_errmsg_prefix("'%s': cannot map", part->path);
			return rc;
		}
	}
	/* flushes into another node's part count as remote (pm_stats) */
	for (i = 0; i < pool->nparts; i++) {
		part_node_check(pool, i);
		pm_map_set_node(pool->parts[i].map, pool->parts[i].node);
	}
	return 0;
}

/* part 0: lock, part header, pool header, their agreement */
static int part0_load(struct pool *pool, const char *path)
{
	struct pool_part_hdr phdr;
	int rc;

	rc = part_open(pool, 0, path);
	if (rc < 0)
		return rc;
	rc = pool_lock(pool);
	if (rc < 0)
		return rc;
	rc = part_hdr_read(pool, 0, &phdr);
	if (rc < 0)
		return rc;
	if (phdr.part_index != 0)
		return util_errmsg_set(EXDEV,
				       "'%s' is part %u of a pool, not its "
				       "part 0",
				       path, phdr.part_index);
	rc = hdr_choose(pool);
	if (rc < 0)
		return rc;
	return part0_check(pool, &phdr);
}

int pool_open(const char *path, unsigned flags, struct pool **ret_pool)
{
	return pool_open_parts(&path, 1, flags, ret_pool);
}

int pool_open_fds(const int *fds, unsigned nfds, unsigned flags,
		  struct pool **ret_pool)
{
	char names[POOL_MAX_PARTS][32];
	const char *paths[POOL_MAX_PARTS];
	unsigned i;

	if (!fds || !nfds || nfds > POOL_MAX_PARTS || !ret_pool)
		return util_errmsg_set(EINVAL, "pool_open_fds: %u descriptors",
				       nfds);
	for (i = 0; i < nfds; i++) {
		if (fds[i] < 0)
			return util_errmsg_set(EBADF, "part %u: descriptor %d",
					       i, fds[i]);
		/* the names stand for the descriptors in messages and in
		 * the devdax test (stat follows the link) */
		snprintf(names[i], sizeof(names[i]), "/proc/self/fd/%d",
			 fds[i]);
		paths[i] = names[i];
	}
	return pool_open_parts_fds(paths, nfds, fds, flags, ret_pool);
}

int pool_open_parts(const char *const *paths, unsigned npaths, unsigned flags,
		    struct pool **ret_pool)
{
	return pool_open_parts_fds(paths, npaths, NULL, flags, ret_pool);
}

/* pool_open_parts; with fds (npaths of them), from those descriptors */
int pool_open_parts_fds(const char *const *paths, unsigned npaths,
			const int *fds, unsigned flags, struct pool **ret_pool)
{
	const char *path = npaths ? paths[0] : NULL;
	struct pool *pool;
	unsigned i;
	int rc;

	if (!path || !ret_pool)
		return util_errmsg_set(EINVAL, "pool_open: no path");
	pool = pool_alloc(flags);
	if (!pool)
		return util_errmsg_set(ENOMEM, "out of memory");
	pool->open_fds = fds;
	rc = part0_load(pool, path);
	if (rc < 0)
		goto out_close;
	pool->nparts = pool->hdr.nparts;
	if ((npaths > 1 || fds) && npaths != pool->nparts) {
		rc = util_errmsg_set(EINVAL,
				     "'%s': %u part %s given, the pool has "
				     "%u parts",
				     path, npaths,
				     fds ? "descriptors" : "paths",
				     pool->nparts);
		goto out_close;
	}
	for (i = 1; i < pool->nparts; i++) {
		/* a path given instead of the hint: verified the same way
		 * (uuid, index), never moved */
		rc = npaths > 1 ? part_verify_at(pool, i, paths[i]) :
				  part_verify(pool, i);
		if (rc < 0)
			goto out_close;
	}
	rc = pool_parts_map(pool);
	if (rc < 0)
		goto out_close;
	/* the sole writer makes both header copies equal again */
	if (pool->other_differs && !(flags & POOL_OPEN_RDONLY) &&
	    !(flags & (POOL_OPEN_NOLOCK | POOL_OPEN_SHARED))) {
		if (!(flags & POOL_OPEN_PRIVATE))
			util_warn("'%s': pool header copy %c differs from "
				  "copy %c (damaged, or an update was "
				  "interrupted); rewriting it",
				  path, pool->hdr_copy ? 'A' : 'B',
				  pool->hdr_copy ? 'B' : 'A');
		rc = pool_hdr_sync(pool);
		if (rc < 0)
			goto out_close;
	}
	pool->open_fds = NULL; /* the caller's array */
	*ret_pool = pool;
	return 0;

out_close:
	pool_close(&pool);
	return rc;
}

const struct pool_hdr *pool_header(const struct pool *pool)
{
	return &pool->hdr;
}

unsigned pool_header_copy(const struct pool *pool)
{
	return pool->hdr_copy;
}

int pool_header_other_valid(const struct pool *pool)
{
	return pool->other_valid;
}

const char *pool_header_damage(const struct pool *pool)
{
	return pool->hdr_damaged ? pool->damage_msg : NULL;
}

const char *pool_header_note(const struct pool *pool)
{
	return pool->note_msg[0] ? pool->note_msg : NULL;
}

unsigned pool_part_count(const struct pool *pool)
{
	return pool->nparts;
}

struct pm_map *pool_part_map(const struct pool *pool, unsigned part)
{
	return part < pool->nparts ? pool->parts[part].map : NULL;
}

const char *pool_part_path(const struct pool *pool, unsigned part)
{
	return part < pool->nparts ? pool->parts[part].path : NULL;
}

int pool_part_fd(const struct pool *pool, unsigned part)
{
	return part < pool->nparts ? pool->parts[part].fd : -1;
}

int pool_part_node(const struct pool *pool, unsigned part)
{
	if (part >= pool->nparts)
		return -1;
	return pool->parts[part].map ? pool->parts[part].node :
				       pool->hdr.parts[part].node;
}

enum pm_granularity pool_granularity(const struct pool *pool)
{
	enum pm_granularity g = PM_GRAN_BYTE, pg;
	unsigned i;

	for (i = 0; i < pool->nparts; i++) {
		pg = pm_map_granularity(pool->parts[i].map);
		if (pg > g)
			g = pg;
	}
	return g;
}

void *pool_direct(const struct pool *pool, uint64_t off)
{
	unsigned part = pool_off_part(off);
	uint64_t byte = pool_off_byte(off);

	if (!off || part >= pool->nparts || byte >= pool->parts[part].size)
		return NULL;
	return (char *)pm_map_addr(pool->parts[part].map) + byte;
}

uint64_t pool_offset(const struct pool *pool, const void *addr)
{
	uintptr_t a = (uintptr_t)addr, base;
	unsigned i;

	for (i = 0; i < pool->nparts; i++) {
		base = (uintptr_t)pm_map_addr(pool->parts[i].map);
		if (a >= base && a - base < pool->parts[i].size)
			return pool_off_make(i, a - base);
	}
	return 0;
}
