/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libpmad: pmad's client (include/pmad.h). One connection per client,
 * one request at a time on it (a mutex), and the heaps opened through it.
 * pmad_pool_open sends pool_open, receives the reply with the pool's part
 * descriptors (SCM_RIGHTS, lib/proto) and opens the heap over them as the
 * grant says (grant_open: the one place that turns a grant into a heap).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pmad.h"
#include "pmalloc.h"
#include "proto/proto.h"
#include "util/errmsg.h"
#include "util/log.h"

#define SOCKET_PATH_MAX 108

/*
 * A thread per open heap applies, every SYNC_MS, the frees other clients
 * made of blocks of its regions (pma_heap_sync): a client that holds
 * regions but does not allocate would otherwise stop their frees after
 * a ring's worth (-EAGAIN). It sleeps on a condition, so a close stops
 * it at once.
 */
#define SYNC_MS 5

struct syncer {
	struct pma_heap *heap;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
	pthread_t thread;
	pid_t pid; /* a forked child has no such thread: it never joins */
};

struct client_heap {
	struct pma_heap *heap;
	char *pool;
	struct syncer *sync; /* NULL if the thread could not start */
};

struct pmad_client {
	int fd;
	pthread_mutex_t lock; /* one request at a time; the heap list */
	struct client_heap *heaps;
	unsigned nheaps;
	int replied; /* the last call got a reply (pmad's error or not) */
	int no_grow; /* pmad_client_set_grow(0): heaps do not lease more */
	char path[SOCKET_PATH_MAX];
};

PMAD_API const char *pmad_errormsg(void)
{
	return util_errmsg();
}

PMAD_API int pmad_connect(const char *socket_path,
			  struct pmad_client **ret_client)
{
	struct pmad_client *c;
	int rc;

	if (!ret_client)
		return util_errmsg_set(EINVAL, "no ret_client");
	c = calloc(1, sizeof(*c));
	if (!c)
		return util_errmsg_set(ENOMEM, "out of memory");
	if (socket_path) {
		if (strlen(socket_path) >= sizeof(c->path)) {
			free(c);
			return util_errmsg_set(ENAMETOOLONG,
					       "socket path '%s' is too long",
					       socket_path);
		}
		memcpy(c->path, socket_path, strlen(socket_path) + 1);
	} else if ((rc = proto_default_socket(c->path, sizeof(c->path))) < 0) {
		free(c);
		return rc;
	}
	c->fd = proto_connect(c->path);
	if (c->fd < 0) {
		rc = c->fd;
		if (rc == -ENOENT || rc == -ECONNREFUSED)
			util_errmsg_prefix("pmad is not running");
		free(c);
		return rc;
	}
	pthread_mutex_init(&c->lock, NULL);
	*ret_client = c;
	return 0;
}

/* args {"name": pool}, plus {"size": size} if size; NULL if out of memory */
static struct json_object *pool_args(const char *pool, uint64_t size)
{
	struct json_object *args = json_object_new_object();
	struct json_object *name = json_object_new_string(pool);
	struct json_object *bytes =
		size ? json_object_new_int64((int64_t)size) : NULL;

	if (!args || !name || (size && !bytes) ||
	    json_object_object_add(args, "name", name) < 0) {
		json_object_put(bytes);
		json_object_put(name);
		json_object_put(args);
		return NULL;
	}
	if (bytes && json_object_object_add(args, "size", bytes) < 0) {
		json_object_put(bytes);
		json_object_put(args);
		return NULL;
	}
	return args;
}

/* one request (args is consumed); pmad's error reply becomes the return
 * value and message */
static int call_args(struct pmad_client *c, const char *op,
		     struct json_object *args, struct proto_reply *rep,
		     int *fds, unsigned max, unsigned *ret_nfds)
{
	int rc;

	if (!args) { /* (-ENOMEM spelled out: rep stays unset) */
		(void)util_errmsg_set(ENOMEM, "out of memory");
		return -ENOMEM;
	}
	c->replied = 0;
	rc = proto_call_fds(c->fd, op, args, rep, fds, max, ret_nfds);
	c->replied = rc == 0;
	if (rc == -ECONNRESET || rc == -EPIPE)
		return util_errmsg_set(ECONNRESET,
				       "pmad at '%s' closed the connection "
				       "(did it stop?)",
				       c->path);
	if (rc < 0) {
		util_errmsg_prefix("pmad at '%s'", c->path);
		return rc;
	}
	if (rep->err) {
		rc = util_errmsg_set(rep->err, "pmad: %s", rep->message);
		proto_reply_release(rep);
	}
	return rc;
}

/* a request naming pool */
static int call(struct pmad_client *c, const char *op, const char *pool,
		struct proto_reply *rep, int *fds, unsigned max,
		unsigned *ret_nfds)
{
	return call_args(c, op, pool_args(pool, 0), rep, fds, max, ret_nfds);
}

PMAD_API int pmad_pool_create(struct pmad_client *client, const char *pool,
			      uint64_t size)
{
	struct proto_reply rep;
	int rc;

	if (!client || !pool || !pool[0])
		return util_errmsg_set(EINVAL, "no client or pool name");
	if (!size || size > INT64_MAX)
		return util_errmsg_set(EINVAL, "pool size %llu (1..2^63-1)",
				       (unsigned long long)size);
	pthread_mutex_lock(&client->lock); /* one request at a time */
	rc = call_args(client, "pool_create", pool_args(pool, size), &rep, NULL,
		       0, NULL);
	pthread_mutex_unlock(&client->lock);
	if (rc == 0)
		proto_reply_release(&rep);
	return rc;
}

/* tell pmad the pool is back (the heap is closed already) */
static int release(struct pmad_client *c, const char *pool)
{
	struct proto_reply rep;
	int rc = call(c, "pool_close", pool, &rep, NULL, 0, NULL);

	if (rc == 0)
		proto_reply_release(&rep);
	return rc;
}

/*
 * The one place that turns a grant into a heap. Scope "regions": the
 * heap opened with the granted regions only (a region mask); the open
 * takes the regions' locks on the descriptors pmad opened for this
 * client, so they are this client's until it closes the heap or dies.
 */
static int root_slot0(struct pma_heap *heap, void *arg, char *why,
		      size_t why_len);
static int room_grow(struct pma_heap *heap, void *arg, char *why,
		     size_t why_len);

static int grant_open(struct pmad_client *c, const struct proto_grant *g,
		      const int *fds, struct pma_heap **ret_heap)
{
	unsigned flags = (g->access & PROTO_GRANT_WRITE) ? 0 : PMA_HEAP_RDONLY;
	struct pma_config *cfg = NULL;
	int rc;

	if (g->scope != PROTO_GRANT_REGIONS)
		return util_errmsg_set(EPROTONOSUPPORT,
				       "grant scope %u is not supported",
				       g->scope);
	rc = pma_config_new(&cfg);
	if (rc == 0)
		rc = pma_config_set_flags(cfg, flags);
	if (rc == 0 && (g->access & PROTO_GRANT_WRITE)) /* r: every region */
		rc = pma_config_set_region_mask(cfg, g->mask);
	if (rc == 0) /* pma_root without slot 0 asks pmad for it */
		rc = pma_config_set_root_hook(cfg, root_slot0, c);
	if (rc == 0) /* full regions: more from pmad */
		rc = pma_config_set_room_hook(cfg, room_grow, c);
	if (rc == 0)
		rc = pma_heap_open_fds_cfg(fds, g->nparts, cfg, ret_heap);
	pma_config_delete(&cfg);
	if (rc < 0)
		return util_errmsg_set(-rc,
				       "cannot open the heap pmad sent: %s",
				       pma_errormsg());
	return 0;
}

static void *sync_run(void *arg)
{
	struct syncer *sy = arg;
	struct timespec ts;

	pthread_mutex_lock(&sy->lock);
	while (!sy->stop) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += SYNC_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		(void)pthread_cond_timedwait(&sy->cond, &sy->lock, &ts);
		if (!sy->stop)
			(void)pma_heap_sync(sy->heap);
	}
	pthread_mutex_unlock(&sy->lock);
	return NULL;
}

/* the heap's sync thread, or NULL (logged: the heap works without) */
static struct syncer *sync_start(struct pma_heap *heap)
{
	struct syncer *sy = calloc(1, sizeof(*sy));
	pthread_condattr_t ca;
	int rc;

	if (!sy)
		return NULL;
	sy->heap = heap;
	sy->pid = getpid();
	pthread_mutex_init(&sy->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sy->cond, &ca);
	pthread_condattr_destroy(&ca);
	rc = pthread_create(&sy->thread, NULL, sync_run, sy);
	if (rc == 0)
		return sy;
	util_warn("no thread applies other clients' frees of this heap's "
		  "blocks: %s",
		  strerror(rc));
	pthread_cond_destroy(&sy->cond);
	pthread_mutex_destroy(&sy->lock);
	free(sy);
	return NULL;
}

static void sync_stop(struct syncer *sy)
{
	if (!sy)
		return;
	if (sy->pid != getpid()) {
		free(sy);
		return;
	}
	pthread_mutex_lock(&sy->lock);
	sy->stop = 1;
	pthread_cond_signal(&sy->cond);
	pthread_mutex_unlock(&sy->lock);
	pthread_join(sy->thread, NULL);
	pthread_cond_destroy(&sy->cond);
	pthread_mutex_destroy(&sy->lock);
	free(sy);
}

static int heaps_add(struct pmad_client *c, struct pma_heap *heap,
		     const char *pool)
{
	struct client_heap *h;
	char *name = strdup(pool);

	h = name ? reallocarray(c->heaps, c->nheaps + 1, sizeof(*h)) : NULL;
	if (!h) {
		free(name);
		return util_errmsg_set(ENOMEM, "out of memory");
	}
	c->heaps = h;
	c->heaps[c->nheaps].heap = heap;
	c->heaps[c->nheaps].pool = name;
	c->heaps[c->nheaps].sync = sync_start(heap);
	c->nheaps++;
	return 0;
}

/* the grant and descriptors of a pool_open reply into an open heap */
static int open_granted(struct pmad_client *c, const char *pool,
			struct proto_reply *rep, const int *fds, unsigned nfds,
			struct pma_heap **ret_heap)
{
	struct pma_heap *heap = NULL;
	struct proto_grant g;
	int rc;

	rc = proto_grant_decode(rep->result, &g);
	if (rc < 0) {
		util_errmsg_prefix("pool '%s': pmad's reply", pool);
		return rc;
	}
	if (nfds != g.nparts)
		return util_errmsg_set(EPROTO,
				       "pool '%s': pmad granted %u parts but "
				       "sent %u descriptors",
				       pool, g.nparts, nfds);
	rc = grant_open(c, &g, fds, &heap);
	if (rc == 0 && !heap)
		rc = util_errmsg_set(EIO, "no heap");
	if (rc < 0) {
		util_errmsg_prefix("pool '%s'", pool);
		return rc;
	}
	rc = heaps_add(c, heap, pool);
	if (rc < 0) {
		pma_heap_close(heap);
		return rc;
	}
	*ret_heap = heap;
	return 0;
}

/* a counter of pool entry p, 0 if pmad did not send it */
static uint64_t pool_u64(struct json_object *p, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(p, key, &v))
		return 0;
	return (uint64_t)json_object_get_int64(v);
}

/* the entry of pool in a pool_list result, NULL if none */
static struct json_object *pool_entry(struct json_object *result,
				      const char *pool)
{
	struct json_object *pools, *p, *name;
	size_t i;

	if (!json_object_object_get_ex(result, "pools", &pools) ||
	    !json_object_is_type(pools, json_type_array))
		return NULL;
	for (i = 0; i < json_object_array_length(pools); i++) {
		p = json_object_array_get_idx(pools, i);
		if (json_object_object_get_ex(p, "name", &name) &&
		    json_object_is_type(name, json_type_string) &&
		    strcmp(json_object_get_string(name), pool) == 0)
			return p;
	}
	return NULL;
}

PMAD_API int pmad_pool_stats(struct pmad_client *client, const char *pool,
			     struct pmad_pool_stats *ret_stats)
{
	struct proto_reply rep;
	struct json_object *p;
	int rc;

	if (!client || !pool || !ret_stats)
		return util_errmsg_set(EINVAL, "no client, pool or ret_stats");
	pthread_mutex_lock(&client->lock); /* one request at a time */
	rc = call_args(client, "pool_list", json_object_new_object(), &rep,
		       NULL, 0, NULL);
	pthread_mutex_unlock(&client->lock);
	if (rc < 0)
		return rc;
	p = pool_entry(rep.result, pool);
	if (p)
		*ret_stats = (struct pmad_pool_stats){
			.attaches = pool_u64(p, "attaches"),
			.client_recoveries = pool_u64(p, "client_recoveries"),
			.last_recovery_us = pool_u64(p, "last_recovery_us"),
		};
	else
		rc = util_errmsg_set(ENOENT, "pmad serves no pool '%s'", pool);
	proto_reply_release(&rep);
	return rc;
}

PMAD_API int pmad_pool_open(struct pmad_client *client, const char *pool,
			    struct pma_heap **ret_heap)
{
	struct proto_reply rep;
	int fds[PROTO_FDS_MAX];
	unsigned nfds = 0, i;
	char msg[UTIL_ERRMSG_MAX];
	int rc;

	if (!client || !pool || !*pool || !ret_heap)
		return util_errmsg_set(EINVAL, "pmad_pool_open: %s",
				       !client	 ? "no client" :
				       !ret_heap ? "no ret_heap" :
						   "no pool name");
	pthread_mutex_lock(&client->lock);
	rc = call(client, "pool_open", pool, &rep, fds, PROTO_FDS_MAX, &nfds);
	if (rc < 0 && !client->replied && rc != -ECONNRESET) {
		/* the reply was lost here (descriptors dropped, malformed):
		 * pmad may have granted the pool, give it back */
		snprintf(msg, sizeof(msg), "%s", util_errmsg());
		(void)release(client, pool);
		util_errmsg_set(-rc, "%s", msg);
	}
	if (rc == 0) {
		rc = open_granted(client, pool, &rep, fds, nfds, ret_heap);
		proto_reply_release(&rep);
		if (rc < 0) { /* pmad granted it: give it back */
			snprintf(msg, sizeof(msg), "%s", util_errmsg());
			(void)release(client, pool);
			util_errmsg_set(-rc, "%s", msg);
		}
	}
	for (i = 0; i < nfds; i++) /* the heap holds its own copies */
		close(fds[i]);
	pthread_mutex_unlock(&client->lock);
	return rc;
}

/* the index of heap among c's (lock held) into *ret_i, or -EINVAL */
static int heap_find(const struct pmad_client *c, const struct pma_heap *heap,
		     const char *fn, unsigned *ret_i)
{
	unsigned i;

	for (i = 0; i < c->nheaps && c->heaps[i].heap != heap; i++)
		;
	if (i == c->nheaps)
		return util_errmsg_set(EINVAL,
				       "%s: the heap was not opened through "
				       "this client",
				       fn);
	*ret_i = i;
	return 0;
}

/* lease's grant into heap (its regions added: pma_heap_add_regions) */
static int grow_granted(struct pma_heap *heap, const char *pool,
			struct proto_reply *rep)
{
	struct proto_grant g;
	int rc = proto_grant_decode(rep->result, &g);

	if (rc < 0) {
		util_errmsg_prefix("pool '%s': pmad's reply", pool);
		return rc;
	}
	if (g.scope != PROTO_GRANT_REGIONS)
		return util_errmsg_set(EPROTONOSUPPORT,
				       "pool '%s': grant scope %u is not "
				       "supported",
				       pool, g.scope);
	rc = pma_heap_add_regions(heap, g.mask);
	if (rc < 0)
		return util_errmsg_set(-rc,
				       "pool '%s': pmad leased regions 0x%llx, "
				       "which the heap could not take (they "
				       "go back with pmad_pool_close): %s",
				       pool, (unsigned long long)g.mask,
				       pma_errormsg());
	return 0;
}

/* a lease request for heap's pool (client lock held): one more free
 * region per part, or slot alone if slot >= 0; the grant added to heap */
static int lease_into(struct pmad_client *c, struct pma_heap *heap,
		      const char *fn, int slot)
{
	struct proto_reply rep = { 0 };
	struct json_object *args, *v;
	unsigned i = 0;
	int rc = heap_find(c, heap, fn, &i);

	if (rc < 0)
		return rc;
	args = pool_args(c->heaps[i].pool, 0);
	if (slot >= 0) {
		v = json_object_new_int(slot);
		if (!args || !v ||
		    json_object_object_add(args, "slot", v) < 0) {
			json_object_put(v);
			json_object_put(args);
			args = NULL; /* call_args: -ENOMEM */
		}
	}
	rc = call_args(c, "lease", args, &rep, NULL, 0, NULL);
	if (rc == 0) {
		rc = grow_granted(heap, c->heaps[i].pool, &rep);
		proto_reply_release(&rep);
	}
	return rc;
}

PMAD_API int pmad_pool_grow(struct pmad_client *client, struct pma_heap *heap)
{
	int rc;

	if (!client || !heap)
		return util_errmsg_set(EINVAL, "pmad_pool_grow: no %s",
				       client ? "heap" : "client");
	pthread_mutex_lock(&client->lock);
	rc = lease_into(client, heap, "pmad_pool_grow", -1);
	pthread_mutex_unlock(&client->lock);
	return rc;
}

PMAD_API int pmad_client_set_grow(struct pmad_client *client, int on)
{
	if (!client || (on != 0 && on != 1))
		return util_errmsg_set(EINVAL,
				       "pmad_client_set_grow: no client, or "
				       "not 0 or 1");
	pthread_mutex_lock(&client->lock);
	client->no_grow = !on;
	pthread_mutex_unlock(&client->lock);
	return 0;
}

/*
 * The root hook of every heap pmad_pool_open returns: pma_root of a heap
 * without slot 0 when there is no root yet (it is made in region 0 of
 * part 0). pmad leases slot 0 to this client if no one holds it (EBUSY
 * naming the holder otherwise) and the heap takes it; the message goes
 * back in why (libpmalloc's pma_errormsg shows it). Called by pma_root
 * under a lock of its own, never with the client's lock held.
 */
static int root_slot0(struct pma_heap *heap, void *arg, char *why,
		      size_t why_len)
{
	struct pmad_client *c = arg;
	int rc;

	pthread_mutex_lock(&c->lock);
	rc = lease_into(c, heap, "pma_root", 0);
	if (rc < 0)
		snprintf(why, why_len, "%s", util_errmsg());
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/*
 * The room hook of every heap pmad_pool_open returns: an allocation that
 * finds its regions full leases one more free region per part, as
 * pmad_pool_grow (unless pmad_client_set_grow turned it off); the
 * allocation then tries again. Called from the allocating thread with
 * no allocator lock held, never with the client's lock held.
 */
static int room_grow(struct pma_heap *heap, void *arg, char *why,
		     size_t why_len)
{
	struct pmad_client *c = arg;
	int rc;

	pthread_mutex_lock(&c->lock);
	if (c->no_grow)
		rc = util_errmsg_set(ENOSPC, "this client does not lease more "
					     "regions by itself "
					     "(pmad_client_set_grow)");
	else
		rc = lease_into(c, heap, "pma_malloc_to", -1);
	if (rc < 0)
		snprintf(why, why_len, "%s", util_errmsg());
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* close heap i and give its pool back */
static int close_one(struct pmad_client *c, unsigned i)
{
	char *pool = c->heaps[i].pool;
	int rc;

	sync_stop(c->heaps[i].sync);
	pma_heap_close(c->heaps[i].heap);
	c->heaps[i] = c->heaps[--c->nheaps];
	rc = release(c, pool);
	/* pmad died since the open: closing the heap dropped the region
	 * locks, which is all a release is; a restarted pmad finds them
	 * free */
	if (rc == -ECONNRESET) {
		util_info("pool '%s' closed; pmad is gone, its regions are "
			  "free",
			  pool);
		rc = 0;
	}
	free(pool);
	return rc;
}

PMAD_API int pmad_pool_close(struct pmad_client *client, struct pma_heap *heap)
{
	unsigned i = 0;
	int rc;

	if (!client || !heap)
		return util_errmsg_set(EINVAL, "pmad_pool_close: no %s",
				       client ? "heap" : "client");
	pthread_mutex_lock(&client->lock);
	rc = heap_find(client, heap, "pmad_pool_close", &i);
	if (rc == 0)
		rc = close_one(client, i);
	pthread_mutex_unlock(&client->lock);
	return rc;
}

PMAD_API void pmad_disconnect(struct pmad_client *client)
{
	if (!client)
		return;
	pthread_mutex_lock(&client->lock);
	while (client->nheaps)
		(void)close_one(client, client->nheaps - 1);
	pthread_mutex_unlock(&client->lock);
	close(client->fd);
	pthread_mutex_destroy(&client->lock);
	free(client->heaps);
	free(client);
}
