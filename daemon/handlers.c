/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmad request handlers: the table that maps each "op" to its handler and
 * the access it needs, and the handlers themselves. A handler returns 0
 * with a result object, or a negative errno with the util errmsg saying
 * what failed on which pool; pmad_handle() turns either into exactly one
 * reply packet and counts it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hdpm.h"
#include "hdpm/fsck.h"
#include "pmad.h"
#include "pmalloc.h"
#include "proto/proto.h"
#include "util/errmsg.h"
#include "util/json.h"
#include "util/log.h"
#include "util/size.h"
#include "view/view.h"

#define ACCESS_R 4
#define ACCESS_W 2

enum handler_flags {
	H_POOL = 1 << 0, /* args.name names an existing pool */
	H_READ = 1 << 1, /* ... that the client may read */
	H_WRITE = 1 << 2, /* ... and write */
	H_ADMIN = 1 << 3, /* root or pmad's own uid only */
	H_POOL_OPT = 1 << 4, /* like H_POOL when args.name is present */
};

struct request {
	struct pmad *d;
	struct pmad_client *cl;
	struct json_object *args;
	struct pmad_pool *pool; /* with H_POOL */
	struct json_object *result; /* set by the handler */
	unsigned view_flags; /* VIEW_HUMAN with args.human */
	/* descriptors the reply carries (pool_open), opened for this
	 * client: closed once sent (or not) */
	int fds[PMAD_PARTS_MAX];
	unsigned nfds;
};

struct handler {
	const char *op;
	int (*fn)(struct request *r);
	unsigned flags;
};

static int new_result(struct request *r)
{
	r->result = json_object_new_object();
	return r->result ? 0 : util_errmsg_set(ENOMEM, "out of memory");
}

/* args.human: o's size with units, as stat prints it (the key keeps its
 * place in o) */
static int list_size(const struct request *r, struct json_object *o)
{
	struct json_object *v;

	if (!(r->view_flags & VIEW_HUMAN) ||
	    !json_object_object_get_ex(o, "size", &v))
		return 0;
	return view_add_size(o, "size", (uint64_t)json_object_get_int64(v),
			     r->view_flags);
}

static int h_pool_list(struct request *r)
{
	struct json_object *arr = json_object_new_array(), *o;
	unsigned i;

	if (!arr || new_result(r) < 0) {
		json_object_put(arr);
		return util_errmsg_set(ENOMEM, "out of memory");
	}
	for (i = 0; i < r->d->npools; i++) {
		if (pmad_pool_json(r->d->pools[i], &o) < 0)
			o = NULL;
		if (!o || list_size(r, o) < 0 ||
		    json_object_array_add(arr, o) < 0) {
			json_object_put(o);
			json_object_put(arr);
			return util_errmsg_set(ENOMEM, "out of memory");
		}
	}
	return util_json_add_obj(r->result, "pools", arr) < 0 ?
		       util_errmsg_set(ENOMEM, "out of memory") :
		       0;
}

static int h_pool_stat(struct request *r)
{
	int rc = pmad_pool_json(r->pool, &r->result);

	return rc < 0 ? rc :
			pmad_pool_heap_json(r->pool, r->result, r->view_flags);
}

/* the pool as pmactl inspect shows it: pmad's fields, then lib/view's
 * header, parts and regions, and the heap; with args.slabs its slabs
 * (inspect --slabs) */
static int pool_inspect_json(struct request *r, struct pmad_pool *p)
{
	struct json_object *v;
	int rc = pmad_pool_json(p, &r->result);

	if (rc == 0)
		rc = pmad_pool_view_json(p, r->result, r->view_flags);
	if (rc == 0)
		rc = pmad_pool_heap_json(p, r->result, r->view_flags);
	if (rc == 0 && p && r->args &&
	    json_object_object_get_ex(r->args, "slabs", &v) &&
	    json_object_get_boolean(v))
		rc = view_slabs_json(p->heap, r->view_flags, r->result);
	return rc;
}

static int h_pool_inspect(struct request *r)
{
	return pool_inspect_json(r, r->pool);
}

/* args.size: an integer of bytes or a string such as "64M" */
static int arg_size(struct json_object *args, uint64_t *ret_size)
{
	struct json_object *v;
	int64_t n;

	if (!json_object_object_get_ex(args, "size", &v))
		return util_errmsg_set(EINVAL, "missing \"size\"");
	if (json_object_is_type(v, json_type_int)) {
		n = json_object_get_int64(v);
		if (n <= 0)
			return util_errmsg_set(EINVAL, "size must be positive");
		*ret_size = (uint64_t)n;
		return 0;
	}
	if (!json_object_is_type(v, json_type_string) ||
	    util_size_parse(json_object_get_string(v), ret_size) < 0)
		return util_errmsg_set(EINVAL,
				       "\"size\" must be bytes or a size "
				       "string such as \"64M\"");
	return 0;
}

/* args.mode: an octal string, default 0600 */
static int arg_mode(struct json_object *args, mode_t *ret_mode)
{
	struct json_object *v;
	unsigned long m;
	const char *s;
	char *end;

	*ret_mode = 0600;
	if (!json_object_object_get_ex(args, "mode", &v))
		return 0;
	s = json_object_get_string(v);
	if (!json_object_is_type(v, json_type_string) || !*s ||
	    strspn(s, "01234567") != strlen(s))
		return util_errmsg_set(EINVAL, "\"mode\" must be an octal "
					       "string such as \"0600\"");
	m = strtoul(s, &end, 8);
	if (m > 0777)
		return util_errmsg_set(EINVAL, "mode %s is above 0777", s);
	*ret_mode = (mode_t)m;
	return 0;
}

/* args.regions: heap regions per part, a power of two 1..16 (1) */
static int arg_regions(struct json_object *args, unsigned *ret)
{
	struct json_object *v;
	int64_t k;

	*ret = 1;
	if (!json_object_object_get_ex(args, "regions", &v))
		return 0;
	k = json_object_get_int64(v);
	if (!json_object_is_type(v, json_type_int) || k < 1 || k > 16 ||
	    (k & (k - 1)))
		return util_errmsg_set(EINVAL, "\"regions\" must be a power "
					       "of two 1..16");
	*ret = (unsigned)k;
	return 0;
}

/* args.human: true asks for sizes with units (lib/view's VIEW_HUMAN) */
static int arg_human(struct json_object *args)
{
	struct json_object *v;

	return json_object_object_get_ex(args, "human", &v) &&
	       json_object_is_type(v, json_type_boolean) &&
	       json_object_get_boolean(v);
}

static int arg_name(struct json_object *args, const char **ret_name)
{
	struct json_object *v;

	if (!json_object_object_get_ex(args, "name", &v) ||
	    !json_object_is_type(v, json_type_string))
		return util_errmsg_set(EINVAL, "missing string \"name\"");
	*ret_name = json_object_get_string(v);
	if (strlen(*ret_name) != (size_t)json_object_get_string_len(v) ||
	    !pmad_pool_name_valid(*ret_name))
		return util_errmsg_set(EINVAL,
				       "invalid pool name (1..%d of A-Z a-z "
				       "0-9 _ . -, not starting with '.')",
				       PMAD_POOL_NAME_MAX);
	return 0;
}

static int h_pool_create(struct request *r)
{
	struct pmad_pool *p = NULL;
	const char *name = NULL;
	uint64_t size = 0;
	unsigned regions = 1;
	mode_t mode = 0;
	int rc;

	rc = arg_name(r->args, &name);
	if (rc == 0)
		rc = arg_size(r->args, &size);
	if (rc == 0)
		rc = arg_mode(r->args, &mode);
	if (rc == 0)
		rc = arg_regions(r->args, &regions);
	if (rc == 0)
		rc = pmad_pool_create(r->d, name, size, regions, r->cl->uid,
				      r->cl->gid, mode, &p);
	if (rc < 0)
		return rc;
	util_info("pool '%s' created by uid %u (pid %d)", name,
		  (unsigned)r->cl->uid, (int)r->cl->pid);
	return pool_inspect_json(r, p);
}

/* grant the pool to this client (attach.c): the reply carries the pool,
 * the grant and the pool's part descriptors */
static int h_pool_open(struct request *r)
{
	struct json_object *go = NULL;
	struct proto_grant g;
	int rc;

	rc = pmad_pool_attach(r->pool, r->cl, &g, r->fds);
	if (rc < 0)
		return rc;
	r->nfds = g.nparts;
	rc = pmad_pool_json(r->pool, &r->result);
	if (rc == 0)
		rc = proto_grant_encode(&g, &go);
	if (rc == 0 && util_json_add_obj(r->result, "grant", go) < 0)
		rc = util_errmsg_set(ENOMEM, "out of memory");
	if (rc < 0)
		pmad_pool_detach(r->pool, r->cl, PMAD_DETACH_CLOSE);
	return rc;
}

/* the client closed its heap: pmad takes the pool back */
static int h_pool_close(struct request *r)
{
	unsigned i;

	for (i = 0; i < r->pool->natts && r->pool->atts[i].cl != r->cl; i++)
		;
	if (i == r->pool->natts)
		return util_errmsg_set(EBADF,
				       "pool '%s' is not open on this "
				       "connection",
				       r->pool->name);
	pmad_pool_detach(r->pool, r->cl, PMAD_DETACH_CLOSE);
	return pmad_pool_json(r->pool, &r->result);
}

/* checkpoint the heap: every log applied and truncated */
static int h_pool_compact(struct request *r)
{
	int rc;

	if (r->pool->shared)
		return pmad_pool_busy(r->pool);
	if (!r->pool->heap)
		return util_errmsg_set(r->pool->err,
				       "pool '%s' is not open: %s",
				       r->pool->name, r->pool->errmsg);
	rc = pmad_pool_checkpoint(r->pool);
	if (rc < 0)
		return rc;
	rc = pmad_pool_json(r->pool, &r->result);
	return rc < 0 ? rc :
			pmad_pool_heap_json(r->pool, r->result, r->view_flags);
}

/* fsck, online and read-only (fsck.c); a repair needs the pool offline */
static int h_pool_fsck(struct request *r)
{
	struct json_object *v;

	if (json_object_object_get_ex(r->args, "repair", &v) &&
	    json_object_get_boolean(v))
		return util_errmsg_set(EROFS,
				       "pool '%s': fsck through pmad only "
				       "checks; --repair needs the pool "
				       "offline (stop pmad)",
				       r->pool->name);
	return pmad_pool_fsck(r->pool, &r->result);
}

/* pmactl compact through pmad: pma_heap_compact (args.dry_run: its plan)
 * on the heap pmad holds; the report as lib/view builds it offline too */
static int h_compact(struct request *r)
{
	struct pma_compact_report rep;
	struct json_object *v;
	int dry, rc;

	dry = json_object_object_get_ex(r->args, "dry_run", &v) &&
	      json_object_is_type(v, json_type_boolean) &&
	      json_object_get_boolean(v);
	if (r->pool->shared)
		return pmad_pool_busy(r->pool);
	if (!r->pool->heap)
		return util_errmsg_set(r->pool->err,
				       "pool '%s' is not open: %s",
				       r->pool->name, r->pool->errmsg);
	if (dry) {
		rc = pma_heap_compact_plan(r->pool->heap, &rep);
		if (rc < 0)
			return util_errmsg_set(-rc,
					       "pool '%s': compaction failed: "
					       "%s",
					       r->pool->name, pma_errormsg());
	} else if ((rc = pmad_pool_compact(r->pool, &rep)) < 0) {
		return rc;
	}
	if (!dry)
		util_info("pool '%s' compacted for uid %u (pid %d): %llu "
			  "bytes reclaimed",
			  r->pool->name, (unsigned)r->cl->uid, (int)r->cl->pid,
			  (unsigned long long)rep.reclaimed_bytes);
	rc = new_result(r);
	return rc < 0 ? rc :
			view_compact_json(&rep, dry, r->view_flags, r->result);
}

/* the heap pmad holds for r->pool: EBUSY while a client has it */
static int pool_heap(struct request *r, struct pma_heap **ret_heap)
{
	if (r->pool->shared)
		return pmad_pool_busy(r->pool);
	if (!r->pool->heap)
		return util_errmsg_set(r->pool->err ? r->pool->err : EIO,
				       "pool '%s' is not open: %s",
				       r->pool->name,
				       r->pool->errmsg ? r->pool->errmsg : "");
	*ret_heap = r->pool->heap;
	return 0;
}

/* pmactl morph through pmad: a morph pass (pma_heap_morph) over the heap
 * pmad holds. pmad's loop is the only thread that uses that heap (its
 * services run from the loop; a pool a client holds is busy), which is
 * what the pass needs */
static int h_morph(struct request *r)
{
	struct proto_morph_args a;
	struct pma_morph_req req = { 0 };
	struct pma_morph_report rep;
	struct pma_heap *heap = NULL;
	int rc;

	rc = proto_morph_args_decode(r->args, &a);
	if (rc == 0)
		rc = pool_heap(r, &heap);
	if (rc < 0)
		return rc;
	req.class_size = a.class_size;
	req.used_pct = a.used_pct;
	req.dry_run = a.dry_run;
	rc = pma_heap_morph(heap, &req, &rep);
	if (rc < 0)
		return util_errmsg_set(-rc, "morph pass over '%s' failed: %s",
				       r->pool->name, pma_errormsg());
	if (!a.dry_run)
		util_info("pool '%s' morphed for uid %u (pid %d): %llu slabs",
			  r->pool->name, (unsigned)r->cl->uid, (int)r->cl->pid,
			  (unsigned long long)rep.slabs_morphed);
	rc = new_result(r);
	return rc < 0 ? rc :
			view_morph_json(&rep, a.dry_run, r->view_flags,
					r->result);
}

/* ... that holds an HDPM file system (its root word read, never made:
 * pmad's heap is writable and pma_root would create a root) */
static int pool_fs_heap(struct request *r, struct pma_heap **ret_heap)
{
	int rc = pool_heap(r, ret_heap);

	if (rc == 0 && !hdpm_fsck_present(*ret_heap))
		rc = util_errmsg_set(ENODATA,
				     "pool '%s' holds no HDPM file system",
				     r->pool->name);
	return rc;
}

/* pmactl inspect --files, log --files (args.pages): the file system as
 * lib/view shows it offline, mounted read-only (nothing written) */
static int h_pool_files(struct request *r)
{
	struct pma_heap *heap = NULL;
	struct hdpm_fs *fs = NULL;
	int rc, pages = 0;

	rc = proto_files_args_decode(r->args, &pages);
	if (rc == 0)
		rc = pool_fs_heap(r, &heap);
	if (rc == 0)
		rc = hdpm_mount(heap, HDPM_RDONLY, &fs);
	if (rc == 0)
		rc = new_result(r);
	if (rc == 0)
		rc = view_hdpm_json(fs, pages, r->view_flags, r->result);
	hdpm_unmount(fs);
	if (rc < 0 && fs)
		util_errmsg_prefix("pool '%s'", r->pool->name);
	return rc;
}

/* pmactl log: the records since pmad's last checkpoint of the heap
 * (args.arena, args.part: one arena's) */
static int h_pool_log(struct request *r)
{
	struct proto_log_args a = { 0 };
	struct pma_heap *heap = NULL;
	int rc;

	rc = proto_log_args_decode(r->args, &a);
	if (rc == 0)
		rc = pool_heap(r, &heap);
	if (rc == 0)
		rc = new_result(r);
	if (rc == 0)
		rc = view_log_json(heap, a.part, a.arena, r->view_flags,
				   r->result);
	if (rc < 0 && heap)
		util_errmsg_prefix("pool '%s'", r->pool->name);
	return rc;
}

/* pmactl gc through pmad: one pass on the heap pmad holds, the report
 * as lib/view builds it offline too */
static int h_gc(struct request *r)
{
	struct view_gc g = { 0 };
	struct pma_heap *heap = NULL;
	int rc;

	rc = pool_fs_heap(r, &heap);
	if (rc == 0)
		rc = pmad_pool_gc(r->pool, &g);
	if (rc < 0)
		return rc;
	util_info("pool '%s': gc for uid %u (pid %d): %u page logs merged, "
		  "%llu bytes reclaimed",
		  r->pool->name, (unsigned)r->cl->uid, (int)r->cl->pid,
		  g.merged, (unsigned long long)view_gc_reclaimed(&g));
	rc = new_result(r);
	return rc < 0 ? rc : view_gc_json(&g, r->view_flags, r->result);
}

/* args.slot: one region slot 0..63 (-1: none asked) */
static int arg_slot(struct json_object *args, int *ret)
{
	struct json_object *v;
	int64_t s;

	*ret = -1;
	if (!json_object_object_get_ex(args, "slot", &v))
		return 0;
	s = json_object_get_int64(v);
	if (!json_object_is_type(v, json_type_int) || s < 0 || s > 63)
		return util_errmsg_set(EINVAL, "\"slot\" must be a region "
					       "slot 0..63");
	*ret = (int)s;
	return 0;
}

/* more regions for a client that has the pool open (attach.c): the
 * grant, without descriptors (libpmad's pmad_pool_grow adds them to the
 * heap it has); args.slot asks for that slot alone (libpmad's pma_root
 * hook asks for slot 0) */
static int h_lease(struct request *r)
{
	struct json_object *go = NULL;
	struct proto_grant g;
	int rc, slot;

	rc = arg_slot(r->args, &slot);
	if (rc == 0)
		rc = pmad_pool_lease(r->pool, r->cl, slot, &g);
	if (rc < 0)
		return rc;
	rc = pmad_pool_json(r->pool, &r->result);
	if (rc == 0)
		rc = proto_grant_encode(&g, &go);
	if (rc == 0 && util_json_add_obj(r->result, "grant", go) < 0)
		rc = util_errmsg_set(ENOMEM, "out of memory");
	return rc;
}

/* regions go back with pool_close (or the client's death): an open heap
 * cannot give one back */
static int h_release(struct request *r)
{
	(void)r;
	return util_errmsg_set(ENOTSUP,
			       "'release' of single regions is not "
			       "supported: a client's regions (pool_open's "
			       "and lease's) are released by pool_close or "
			       "when its connection ends");
}

static int add_counters(const struct pmad *d, struct json_object *obj)
{
	const struct pmad_counters *c = &d->count;
	struct timespec now;
	int err;

	clock_gettime(CLOCK_MONOTONIC, &now);
	err = util_json_add_u64(obj, "uptime",
				(uint64_t)(now.tv_sec - d->started.tv_sec));
	err |= util_json_add_u64(obj, "requests", c->requests);
	err |= util_json_add_u64(obj, "errors", c->errors);
	err |= util_json_add_u64(obj, "denied", c->denied);
	err |= util_json_add_u64(obj, "connections", c->connections);
	err |= util_json_add_u64(obj, "reloads", c->reloads);
	err |= util_json_add_u64(obj, "reload_failures", c->reload_failures);
	err |= util_json_add_u64(obj, "checkpoint_interval",
				 d->conf->checkpoint_interval);
	err |= util_json_add_u64(obj, "service_runs", c->service_runs);
	err |= util_json_add_u64(obj, "service_checkpoints",
				 c->service_checkpoints);
	err |= util_json_add_u64(obj, "gc_free_pct", d->conf->gc_free_pct);
	err |= util_json_add_u64(obj, "gc_interval", d->conf->gc_interval);
	err |= util_json_add_u64(obj, "service_gc_runs", c->service_gc_runs);
	err |= util_json_add_u64(obj, "service_gcs", c->service_gcs);
	err |= util_json_add_u64(obj, "service_gc_pages_merged",
				 c->service_gc_pages_merged);
	err |= util_json_add_u64(obj, "compact_interval",
				 d->conf->compact_interval);
	err |= util_json_add_u64(obj, "service_compact_runs",
				 c->service_compact_runs);
	err |= util_json_add_u64(obj, "service_compactions",
				 c->service_compactions);
	err |= util_json_add_u64(obj, "service_compact_bytes_reclaimed",
				 c->service_compact_bytes_reclaimed);
	if (c->service_last_compact) /* unknown values are omitted */
		err |= util_json_add_u64(obj, "service_last_compact",
					 (uint64_t)c->service_last_compact);
	err |= util_json_add_u64(obj, "sync_interval", d->conf->sync_interval);
	err |= util_json_add_u64(obj, "service_sync_runs",
				 c->service_sync_runs);
	err |= util_json_add_u64(obj, "service_syncs", c->service_syncs);
	err |= util_json_add_u64(obj, "service_sync_frees_applied",
				 c->service_sync_frees_applied);
	return err;
}

/* pmad's own figures into obj (the stats reply, stat's "daemon") */
static int daemon_json(struct request *r, struct json_object *obj)
{
	struct pmad *d = r->d;
	unsigned i, open = 0, attached = 0;
	int err;

	for (i = 0; i < d->npools; i++) {
		open += d->pools[i]->heap != NULL;
		attached += d->pools[i]->shared;
	}
	err = util_json_add_u64(obj, "pid", (uint64_t)getpid());
	err |= util_json_add_str(obj, "version", PACKAGE_VERSION);
	err |= util_json_add_u64(obj, "protocol", PROTO_VERSION);
	err |= util_json_add_str(obj, "config",
				 d->conf->file ? d->conf->file : "(embedded)");
	err |= util_json_add_str(obj, "socket", d->socket_path);
	err |= util_json_add_str(obj, "state_dir", d->state_dir);
	err |= util_json_add_u64(obj, "clients", d->nclients);
	err |= util_json_add_u64(obj, "pools", d->npools);
	err |= util_json_add_u64(obj, "pools_open", open);
	err |= util_json_add_u64(obj, "pools_attached", attached);
	err |= pmad_ns_json(d, obj);
	err |= add_counters(d, obj);
	return err ? util_errmsg_set(ENOMEM, "out of memory") : 0;
}

static int h_stats(struct request *r)
{
	if (new_result(r) < 0)
		return -ENOMEM;
	return daemon_json(r, r->result);
}

/* one pool (args.name) or every pool the client may read; pools it may
 * not read are only counted ("pools_hidden"), as pool_stat would deny
 * them */
static int stat_pools(struct request *r, struct json_object *arr)
{
	struct json_object *o;
	unsigned i, hidden = 0;
	int rc;

	for (i = 0; i < r->d->npools; i++) {
		if (r->pool && r->d->pools[i] != r->pool)
			continue;
		/* a pool without a file (not placed) has nothing to hide */
		if (!r->pool && pmad_pool_access(r->d->pools[i], r->cl,
						 ACCESS_R) == -EACCES) {
			hidden++;
			continue;
		}
		rc = pmad_pool_stat_json(r->d->pools[i], r->view_flags, &o);
		if (rc < 0)
			return rc;
		if (json_object_array_add(arr, o) < 0) {
			json_object_put(o);
			return util_errmsg_set(ENOMEM, "out of memory");
		}
	}
	util_errmsg_clear();
	return util_json_add_u64(r->result, "pools_hidden", hidden) < 0 ?
		       util_errmsg_set(ENOMEM, "out of memory") :
		       0;
}

static int h_stat(struct request *r)
{
	struct json_object *daemon = json_object_new_object();
	struct json_object *pools = json_object_new_array();
	int rc;

	if (new_result(r) < 0 || !daemon || !pools) {
		json_object_put(daemon);
		json_object_put(pools);
		return util_errmsg_set(ENOMEM, "out of memory");
	}
	rc = daemon_json(r, daemon);
	if (util_json_add_obj(r->result, "daemon", daemon) < 0)
		rc = util_errmsg_set(ENOMEM, "out of memory");
	if (rc == 0)
		rc = stat_pools(r, pools);
	if (util_json_add_obj(r->result, "pools", pools) < 0 && rc == 0)
		rc = util_errmsg_set(ENOMEM, "out of memory");
	return rc;
}

static int h_shutdown(struct request *r)
{
	util_info("shutdown requested by uid %u (pid %d)", (unsigned)r->cl->uid,
		  (int)r->cl->pid);
	r->d->stopping = 1;
	return new_result(r);
}

static const struct handler handlers[] = {
	{ "pool_list", h_pool_list, 0 },
	{ "pool_create", h_pool_create, 0 },
	{ "pool_stat", h_pool_stat, H_POOL | H_READ },
	{ "pool_inspect", h_pool_inspect, H_POOL | H_READ },
	{ "pool_open", h_pool_open, H_POOL | H_READ | H_WRITE },
	{ "pool_close", h_pool_close, H_POOL },
	{ "pool_compact", h_pool_compact, H_POOL | H_READ | H_WRITE },
	{ "pool_fsck", h_pool_fsck, H_POOL | H_READ },
	{ "compact", h_compact, H_POOL | H_READ | H_WRITE },
	{ "morph", h_morph, H_POOL | H_READ | H_WRITE },
	{ "pool_files", h_pool_files, H_POOL | H_READ },
	{ "pool_log", h_pool_log, H_POOL | H_READ },
	{ "gc", h_gc, H_POOL | H_READ | H_WRITE },
	{ "lease", h_lease, H_POOL | H_READ | H_WRITE },
	{ "release", h_release, 0 },
	{ "stats", h_stats, 0 },
	{ "stat", h_stat, H_POOL_OPT | H_READ },
	{ "shutdown", h_shutdown, H_ADMIN },
};

#define NHANDLERS (sizeof(handlers) / sizeof(handlers[0]))

/* what the handler's flags demand of the client, before it runs */
static int check_access(struct request *r, const struct handler *h)
{
	const char *name = NULL;
	int want = 0, rc;

	if ((h->flags & H_ADMIN) && r->cl->uid != 0 && r->cl->uid != geteuid())
		return util_errmsg_set(EPERM,
				       "'%s' is for root or uid %u only (you "
				       "are uid %u)",
				       h->op, (unsigned)geteuid(),
				       (unsigned)r->cl->uid);
	if ((h->flags & H_POOL_OPT) &&
	    !json_object_object_get_ex(r->args, "name", NULL))
		return 0;
	if (!(h->flags & (H_POOL | H_POOL_OPT)))
		return 0;
	rc = arg_name(r->args, &name);
	if (rc < 0)
		return rc;
	r->pool = pmad_pool_find(r->d, name);
	if (!r->pool)
		return util_errmsg_set(ENOENT, "no pool '%s'", name);
	want |= (h->flags & H_READ) ? ACCESS_R : 0;
	want |= (h->flags & H_WRITE) ? ACCESS_W : 0;
	return want ? pmad_pool_access(r->pool, r->cl, want) : 0;
}

static int reply_send(struct pmad_client *cl, int rc, char *buf, size_t len)
{
	if (rc == 0) {
		rc = proto_send(cl->fd, buf, len);
		free(buf);
	}
	return rc;
}

static int reply_send_fds(struct pmad_client *cl, char *buf, size_t len,
			  const struct request *r)
{
	int rc = proto_send_fds(cl->fd, buf, len, r->fds, r->nfds);

	free(buf);
	return rc;
}

int pmad_reply_error(struct pmad *d, struct pmad_client *cl, int err,
		     const char *message)
{
	size_t len;
	char *buf;
	int rc;

	d->count.errors++;
	if (err == EACCES || err == EPERM)
		d->count.denied++;
	rc = proto_error_encode(err, message, &buf, &len);
	return reply_send(cl, rc, buf, len);
}

static const struct handler *handler_find(const char *op)
{
	size_t i;

	for (i = 0; i < NHANDLERS; i++)
		if (strcmp(handlers[i].op, op) == 0)
			return &handlers[i];
	return NULL;
}

static int run_request(struct request *r, const char *op)
{
	const struct handler *h = handler_find(op);
	int rc;

	if (!h)
		return util_errmsg_set(ENOSYS, "unknown request '%s'", op);
	rc = check_access(r, h);
	if (rc == -EACCES || rc == -EPERM)
		util_warn("uid %u (pid %d): %s denied: %s",
			  (unsigned)r->cl->uid, (int)r->cl->pid, op,
			  util_errmsg());
	if (rc == 0)
		rc = h->fn(r);
	return rc;
}

void pmad_handle(struct pmad *d, struct pmad_client *cl, const char *buf,
		 size_t len)
{
	struct request r = { .d = d, .cl = cl };
	struct proto_request req;
	size_t out_len;
	char *out;
	int rc;

	d->count.requests++;
	rc = proto_request_decode(buf, len, &req);
	if (rc < 0) {
		util_dbg("uid %u: bad request: %s", (unsigned)cl->uid,
			 util_errmsg());
		(void)pmad_reply_error(d, cl, -rc, util_errmsg());
		return;
	}
	r.args = req.args;
	r.view_flags = arg_human(req.args) ? VIEW_HUMAN : 0;
	util_errmsg_clear();
	rc = run_request(&r, req.op);
	proto_request_release(&req);
	if (rc < 0) {
		json_object_put(r.result);
		(void)pmad_reply_error(d, cl, -rc, util_errmsg());
	} else {
		rc = proto_reply_encode(r.result, &out, &out_len);
		if (rc < 0)
			(void)pmad_reply_error(d, cl, -rc, util_errmsg());
		else if (reply_send_fds(cl, out, out_len, &r) < 0)
			util_dbg("pid %d: reply not sent: %s", (int)cl->pid,
				 util_errmsg());
	}
	while (r.nfds) /* pmad keeps no copy: the client's locks are on them */
		close(r.fds[--r.nfds]);
	/* pools a pool_close gave back: the client has its reply */
	pmad_pools_reopen(d);
}
