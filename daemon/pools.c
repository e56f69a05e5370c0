/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmad pool table: the pools of the configuration (created if missing)
 * plus every <name>.pool file in the state directory, each held open with
 * its PMAlloc heap (so recovery runs before READY=1 and pmad holds the
 * exclusive lock). A pool's owner, group and mode are those of its part 0
 * file: one source of truth, which the configuration sets and access
 * checks read back.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pmad.h"
#include "pmalloc.h"
#include "pool/pool.h"
#include "util/errmsg.h"
#include "util/json.h"
#include "util/log.h"
#include "view/view.h"

#define POOL_SUFFIX ".pool"

struct pmad_pool *pmad_pool_find(const struct pmad *d, const char *name)
{
	unsigned i;

	for (i = 0; i < d->npools; i++)
		if (strcmp(d->pools[i]->name, name) == 0)
			return d->pools[i];
	return NULL;
}

static void pool_free(struct pmad_pool *p)
{
	if (!p)
		return;
	pma_heap_close(p->heap);
	pmad_pool_fds_close(p);
	free(p->name);
	free(p->path);
	free(p->errmsg);
	free(p);
}

void pmad_pools_release(struct pmad *d)
{
	unsigned i;

	pmad_ns_release(d);
	for (i = 0; i < d->npools; i++)
		pool_free(d->pools[i]);
	free(d->pools);
	d->pools = NULL;
	d->npools = 0;
}

int pmad_pool_add(struct pmad *d, const char *name, const char *path,
		  struct pmad_pool **ret_pool)
{
	struct pmad_pool **pools, *p;

	if (d->npools >= PMAD_MAX_POOLS)
		return util_errmsg_set(ENFILE, "pmad serves at most %d pools",
				       PMAD_MAX_POOLS);
	/* an array of pointers: the element is a pointer */
	/* NOLINTNEXTLINE(bugprone-sizeof-expression) */
	pools = reallocarray(d->pools, d->npools + 1, sizeof(*pools));
	if (!pools)
		return util_errmsg_set(ENOMEM, "out of memory");
	d->pools = pools;
	p = calloc(1, sizeof(*p));
	if (p) {
		p->name = strdup(name);
		p->path = strdup(path);
	}
	if (!p || !p->name || !p->path) {
		pool_free(p);
		return util_errmsg_set(ENOMEM, "out of memory");
	}
	p->morph_pct = d->conf->morph_pct;
	p->morph_idle = d->conf->morph_idle;
	d->pools[d->npools++] = p;
	*ret_pool = p;
	return 0;
}

/* <state_dir>/<name>.pool into a malloc'ed string */
static char *pool_default_path(const struct pmad *d, const char *name)
{
	char *path;

	if (asprintf(&path, "%s/%s" POOL_SUFFIX, d->state_dir, name) < 0)
		return NULL;
	return path;
}

/* the pool's total size (all parts), part count and heap regions per
 * part, read at open */
void pmad_pool_read_size(struct pmad_pool *p)
{
	const struct pool_hdr *h;
	struct pool *pool;
	unsigned i, k = 0;

	if (pool_open(p->path, POOL_OPEN_RDONLY | POOL_OPEN_NOLOCK, &pool) < 0)
		return;
	h = pool_header(pool);
	p->size = 0;
	for (i = 0; i < h->nparts && i < POOL_MAX_PARTS; i++)
		p->size += h->parts[i].size;
	p->nparts = h->nparts;
	for (i = 0; i < h->nregions && i < POOL_MAX_REGIONS; i++)
		k += h->regions[i].type == POOL_REGION_PMALLOC &&
		     h->regions[i].part == 0;
	p->regions = k ? k : 1;
	pool_close(&pool);
}

void pmad_pool_fail(struct pmad_pool *p, int err)
{
	util_err("%s", util_errmsg());
	p->err = err;
	free(p->errmsg);
	p->errmsg = strdup(util_errmsg());
}

void pmad_pool_fds_close(struct pmad_pool *p)
{
	while (p->nfds) {
		p->nfds--;
		close(p->part_fds[p->nfds]);
		free(p->part_paths[p->nfds]);
		p->part_paths[p->nfds] = NULL;
	}
}

/* one read-write descriptor per part (the part table's paths), which
 * pmad keeps while it serves the pool, and the paths (clients get
 * descriptors of their own) */
int pmad_pool_fds_open(struct pmad_pool *p)
{
	struct pool *pool;
	unsigned i, n;
	int rc, fd;

	if (p->nfds)
		return 0;
	rc = pool_open(p->path,
		       POOL_OPEN_RDONLY | POOL_OPEN_NOLOCK |
			       POOL_OPEN_SHOW_OLDER,
		       &pool);
	if (rc < 0)
		return rc;
	n = pool_part_count(pool);
	for (i = 0; i < n && i < PMAD_PARTS_MAX; i++) {
		fd = open(pool_part_path(pool, i), O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			rc = util_errmsg_set(errno, "part %u ('%s'): %s", i,
					     pool_part_path(pool, i),
					     strerror(errno));
			break;
		}
		p->part_paths[p->nfds] = strdup(pool_part_path(pool, i));
		p->part_fds[p->nfds++] = fd;
		if (!p->part_paths[p->nfds - 1]) {
			rc = util_errmsg_set(ENOMEM, "out of memory");
			break;
		}
	}
	pool_close(&pool);
	if (rc < 0)
		pmad_pool_fds_close(p);
	return rc;
}

/* open the heap (recovery runs here) over the pool's descriptors, which
 * take its lock; a failure is kept, not fatal */
int pmad_pool_open_heap(struct pmad_pool *p, unsigned flags)
{
	struct pma_config *cfg = NULL;
	int rc = pmad_pool_fds_open(p);

	if (rc == 0)
		rc = pma_config_new(&cfg);
	if (rc == 0)
		rc = pma_config_set_flags(cfg, flags);
	if (rc == 0 && (flags & PMA_HEAP_FORMAT) && p->format_regions)
		rc = pma_config_set_regions(cfg, p->format_regions);
	if (rc == 0 && p->morph_pct >= 0)
		rc = pma_config_set_morph(cfg, (unsigned)p->morph_pct,
					  p->morph_idle);
	if (rc == 0)
		rc = pma_heap_open_fds_cfg(p->part_fds, p->nfds, cfg, &p->heap);
	pma_config_delete(&cfg);
	free(p->errmsg);
	p->errmsg = NULL;
	p->err = 0;
	if (rc == 0) {
		pmad_pool_read_size(p);
		return 0;
	}
	p->heap = NULL;
	p->err = -rc;
	p->errmsg = strdup(util_errmsg());
	pmad_pool_fds_close(p); /* and the lock with them */
	util_err("pool '%s' (%s) cannot be opened: %s", p->name, p->path,
		 p->errmsg ? p->errmsg : "");
	return rc;
}

/* make the file's owner, group and mode what the configuration says */
static void pool_apply_perms(const struct pmad_pool *p,
			     const struct pmad_pool_conf *pc)
{
	if (chown(p->path, pc->owner, pc->group) < 0)
		util_warn("pool '%s': cannot chown %s to %u:%u: %s", p->name,
			  p->path, (unsigned)pc->owner, (unsigned)pc->group,
			  strerror(errno));
	if (chmod(p->path, pc->mode) < 0)
		util_warn("pool '%s': cannot chmod %s to %04o: %s", p->name,
			  p->path, (unsigned)pc->mode, strerror(errno));
}

static int pool_make_file(const struct pmad_pool *p, uint64_t size,
			  unsigned regions)
{
	struct pma_config *cfg = NULL;
	struct pma_heap *heap = NULL;
	int rc;

	rc = pma_config_new(&cfg);
	if (rc == 0)
		rc = pma_config_set_regions(cfg, regions ? regions : 1);
	if (rc == 0)
		rc = pma_heap_create_cfg(p->path, size, cfg, &heap);
	pma_config_delete(&cfg);
	if (rc < 0)
		return util_errmsg_set(-rc, "cannot create pool '%s' at %s: %s",
				       p->name, p->path, pma_errormsg());
	pma_heap_close(heap);
	util_info("created pool '%s' at %s (%llu bytes, %u heap regions)",
		  p->name, p->path, (unsigned long long)size,
		  regions ? regions : 1);
	return 0;
}

/* a configured pool: create if missing, set perms, open */
static int pool_from_conf(struct pmad *d, const struct pmad_pool_conf *pc)
{
	struct pmad_pool *p = pmad_pool_find(d, pc->name);
	char *path;
	int rc = 0;

	if (pc->nparts || pc->parts_all_nodes)
		return pmad_pool_from_parts(d, pc);
	path = pc->path ? strdup(pc->path) : pool_default_path(d, pc->name);
	if (!path)
		return util_errmsg_set(ENOMEM, "out of memory");
	if (!p)
		rc = pmad_pool_add(d, pc->name, path, &p);
	free(path);
	if (rc < 0 || !p)
		return rc;
	p->from_config = 1;
	if (!p->heap && !p->shared && access(p->path, F_OK) < 0 &&
	    errno == ENOENT && pool_make_file(p, pc->size, pc->regions) < 0) {
		pmad_pool_fail(p, EIO);
		return 0;
	}
	pool_apply_perms(p, pc);
	if (!p->heap && !p->shared)
		(void)pmad_pool_open_heap(p, PMA_HEAP_FORMAT);
	return 0;
}

static int is_pool_file(const struct dirent *e)
{
	size_t n = strlen(e->d_name), s = strlen(POOL_SUFFIX);

	return n > s && strcmp(e->d_name + n - s, POOL_SUFFIX) == 0;
}

/* pools created earlier through the socket: <name>.pool files */
static int pools_scan(struct pmad *d)
{
	struct dirent **names = NULL;
	struct pmad_pool *p = NULL;
	char *path, *name;
	int i, n, rc = 0;

	n = scandir(d->state_dir, &names, is_pool_file, alphasort);
	if (n < 0)
		return util_errmsg_set(errno, "cannot read state dir %s: %s",
				       d->state_dir, strerror(errno));
	for (i = 0; i < n; i++) {
		name = names[i]->d_name;
		name[strlen(name) - strlen(POOL_SUFFIX)] = '\0';
		if (rc == 0 && pmad_pool_name_valid(name) &&
		    !pmad_pool_find(d, name)) {
			path = pool_default_path(d, name);
			rc = path ? pmad_pool_add(d, name, path, &p) :
				    util_errmsg_set(ENOMEM, "out of memory");
			free(path);
			if (rc == 0 && p)
				(void)pmad_pool_open_heap(p, 0);
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int pmad_pools_load(struct pmad *d)
{
	unsigned i;
	int rc;

	/* a reload's heap policy: for the next open of each pool */
	for (i = 0; i < d->npools; i++) {
		d->pools[i]->morph_pct = d->conf->morph_pct;
		d->pools[i]->morph_idle = d->conf->morph_idle;
	}
	rc = pmad_ns_load(d);
	if (rc < 0)
		return rc;
	for (i = 0; i < d->conf->npools; i++) {
		rc = pool_from_conf(d, &d->conf->pools[i]);
		if (rc < 0)
			return rc;
	}
	return pools_scan(d);
}

int pmad_pool_create(struct pmad *d, const char *name, uint64_t size,
		     unsigned regions, uid_t uid, gid_t gid, mode_t mode,
		     struct pmad_pool **ret_pool)
{
	struct pmad_pool_conf pc = { .owner = uid, .group = gid, .mode = mode };
	struct pmad_pool *p = NULL;
	char *path;
	int rc;

	if (pmad_pool_find(d, name))
		return util_errmsg_set(EEXIST, "pool '%s' already exists",
				       name);
	path = pool_default_path(d, name);
	if (!path)
		return util_errmsg_set(ENOMEM, "out of memory");
	if (access(path, F_OK) == 0) {
		free(path);
		return util_errmsg_set(EEXIST,
				       "%s/%s" POOL_SUFFIX
				       " exists but is not a pool pmad serves",
				       d->state_dir, name);
	}
	rc = pmad_pool_add(d, name, path, &p);
	free(path);
	if (rc < 0 || !p)
		return rc;
	rc = pool_make_file(p, size, regions);
	if (rc < 0) { /* p is the last entry: forget it */
		d->npools--;
		pool_free(p);
		return rc;
	}
	pool_apply_perms(p, &pc);
	if (pmad_pool_open_heap(p, 0) < 0)
		return util_errmsg_set(p->err,
				       "pool '%s' was created but "
				       "cannot be opened: %s",
				       name, p->errmsg ? p->errmsg : "");
	*ret_pool = p;
	return 0;
}

/* is gid the client's primary group or one of its supplementary ones? */
static int in_group(const struct pmad_client *cl, gid_t gid)
{
	unsigned i;

	if (cl->gid == gid)
		return 1;
	for (i = 0; i < cl->ngroups; i++)
		if (cl->groups[i] == gid)
			return 1;
	return 0;
}

/* the permission bits that apply to this client, as the kernel picks
 * them for a file: owner, else group (any of the client's), else other */
static unsigned perm_bits(const struct stat *st, const struct pmad_client *cl)
{
	if (cl->uid == st->st_uid)
		return (st->st_mode >> 6) & 7;
	if (in_group(cl, st->st_gid))
		return (st->st_mode >> 3) & 7;
	return st->st_mode & 7;
}

int pmad_pool_access(const struct pmad_pool *p, const struct pmad_client *cl,
		     int want)
{
	struct stat st;

	if (stat(p->path, &st) < 0)
		return util_errmsg_set(errno, "pool '%s': %s: %s", p->name,
				       p->path, strerror(errno));
	if (cl->uid == 0 ||
	    (perm_bits(&st, cl) & (unsigned)want) == (unsigned)want)
		return 0;
	return util_errmsg_set(EACCES,
			       "pool '%s': permission denied for uid %u gid %u "
			       "(owner %u, group %u, mode %04o)",
			       p->name, (unsigned)cl->uid, (unsigned)cl->gid,
			       (unsigned)st.st_uid, (unsigned)st.st_gid,
			       (unsigned)(st.st_mode & 07777));
}

static int pool_json_stat(const struct pmad_pool *p, struct json_object *o)
{
	char mode[8];
	struct stat st;
	int err = 0;

	if (stat(p->path, &st) < 0)
		return 0; /* unknown values are omitted */
	snprintf(mode, sizeof(mode), "%04o", (unsigned)(st.st_mode & 07777));
	err |= util_json_add_u64(o, "size",
				 p->size ? p->size : (uint64_t)st.st_size);
	err |= util_json_add_u64(o, "owner", st.st_uid);
	err |= util_json_add_u64(o, "group", st.st_gid);
	err |= util_json_add_str(o, "mode", mode);
	return err;
}

int pmad_pool_json(const struct pmad_pool *p, struct json_object **ret_obj)
{
	struct json_object *o = json_object_new_object();
	int err;

	if (!o)
		return util_errmsg_set(ENOMEM, "out of memory");
	err = util_json_add_str(o, "name", p->name);
	err |= util_json_add_str(o, "path", p->path);
	err |= pool_json_stat(p, o);
	err |= util_json_add_str(o, "state", pmad_pool_state(p));
	if (p->errmsg)
		err |= util_json_add_str(o, "error", p->errmsg);
	err |= util_json_add_u64(o, "clients", p->clients);
	err |= pmad_pool_attach_json(p, o);
	err |= util_json_add_str(o, "source",
				 p->from_config ? "config" : "state_dir");
	if (err) {
		json_object_put(o);
		return util_errmsg_set(ENOMEM, "out of memory");
	}
	*ret_obj = o;
	return 0;
}

int pmad_pool_heap_json(const struct pmad_pool *p, struct json_object *obj,
			unsigned flags)
{
	if (p->shared)
		return pmad_pool_busy(p);
	if (!p->heap)
		return util_errmsg_set(p->err ? p->err : EIO,
				       "pool '%s' is not open: %s", p->name,
				       p->errmsg ? p->errmsg : "");
	return view_heap_json(p->heap, flags, obj);
}

int pmad_pool_view_json(const struct pmad_pool *p, struct json_object *obj,
			unsigned flags)
{
	struct pool *pool;
	int rc;

	/* pmad holds the lock itself: read the header without taking one */
	rc = pool_open(p->path, POOL_OPEN_RDONLY | POOL_OPEN_NOLOCK, &pool);
	if (rc < 0)
		return util_errmsg_set(-rc, "pool '%s': %s", p->name,
				       pool_errormsg());
	rc = view_pool_json(pool, flags, obj);
	pool_close(&pool);
	return rc;
}

static int services_json(const struct pmad_pool *p, struct json_object *obj)
{
	struct json_object *svc = json_object_new_object();
	int err;

	if (!svc)
		return -1;
	err = util_json_add_u64(svc, "checkpoints", p->svc.checkpoints);
	err |= util_json_add_u64(svc, "checkpoint_failures",
				 p->svc.checkpoint_failures);
	if (p->svc.last_checkpoint) /* unknown values are omitted */
		err |= util_json_add_u64(svc, "last_checkpoint",
					 (uint64_t)p->svc.last_checkpoint);
	err |= util_json_add_u64(svc, "gc_runs", p->svc.gc_runs);
	err |= util_json_add_u64(svc, "gc_failures", p->svc.gc_failures);
	err |= util_json_add_u64(svc, "gc_pages_merged",
				 p->svc.gc_pages_merged);
	err |= util_json_add_u64(svc, "gc_bytes_reclaimed",
				 p->svc.gc_bytes_reclaimed);
	if (p->svc.last_gc)
		err |= util_json_add_u64(svc, "last_gc",
					 (uint64_t)p->svc.last_gc);
	err |= util_json_add_u64(svc, "compactions", p->svc.compactions);
	err |= util_json_add_u64(svc, "compact_failures",
				 p->svc.compact_failures);
	err |= util_json_add_u64(svc, "compact_bytes_reclaimed",
				 p->svc.compact_bytes_reclaimed);
	if (p->svc.last_compact)
		err |= util_json_add_u64(svc, "last_compact",
					 (uint64_t)p->svc.last_compact);
	err |= util_json_add_u64(svc, "syncs", p->svc.syncs);
	err |= util_json_add_u64(svc, "sync_failures", p->svc.sync_failures);
	err |= util_json_add_u64(svc, "sync_frees_applied",
				 p->svc.sync_frees_applied);
	if (p->svc.last_sync) {
		err |= util_json_add_u64(svc, "last_sync",
					 (uint64_t)p->svc.last_sync);
		err |= util_json_add_u64(svc, "last_sync_us",
					 p->svc.last_sync_us);
	}
	return err | util_json_add_obj(obj, "services", svc);
}

int pmad_pool_stat_json(const struct pmad_pool *p, unsigned flags,
			struct json_object **ret_obj)
{
	struct json_object *o = json_object_new_object();
	int err;

	if (!o)
		return util_errmsg_set(ENOMEM, "out of memory");
	err = util_json_add_str(o, "name", p->name);
	err |= util_json_add_str(o, "path", p->path);
	err |= util_json_add_str(o, "state", pmad_pool_state(p));
	if (p->errmsg)
		err |= util_json_add_str(o, "error", p->errmsg);
	err |= pmad_pool_attach_json(p, o);
	if (p->size)
		err |= view_add_size(o, "size", p->size, flags);
	if (p->nparts)
		err |= util_json_add_u64(o, "nparts", p->nparts);
	err |= util_json_add_u64(o, "clients", p->clients);
	err |= services_json(p, o);
	if (err) {
		json_object_put(o);
		return util_errmsg_set(ENOMEM, "out of memory");
	}
	if (p->heap && view_heap_stat_json(p->heap, flags, o) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	*ret_obj = o;
	return 0;
}
