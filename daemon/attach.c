/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmad attachments: a pool's heap granted to one client at a time.
 *
 * libpmalloc does not yet let two processes write one heap (region
 * leases come next), so pool_open grants the whole heap to one client:
 * pmad closes its own heap handle (pma_heap_close checkpoints it), sends
 * the pool's part descriptors, and stays away from the heap (services
 * skip it, stat/inspect answer EBUSY) until the client closes the pool or
 * its connection goes away; then pmad opens the heap again, which runs
 * recovery: what the client committed stays, what it had not committed
 * vanishes. Another client's pool_open gets EBUSY naming the holder.
 *
 * The flock does not enforce this: the descriptors a client receives
 * share pmad's open file descriptions, so its flock is the one pmad
 * holds. pmad's state (holder) does; the lock still keeps offline tools
 * out, and after pmad dies it stays with a client that keeps the pool,
 * so a restarted pmad cannot open the pool under it (EBUSY, retried at
 * the next pool_open).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pmad.h"
#include "pmalloc.h"
#include "proto/proto.h"
#include "util/errmsg.h"
#include "util/json.h"
#include "util/log.h"

const char *pmad_pool_state(const struct pmad_pool *p)
{
	if (p->heap || p->reopen_pending) /* reopened before anything else */
		return "open";
	return p->holder ? "attached" : "error";
}

int pmad_pool_busy(const struct pmad_pool *p)
{
	return util_errmsg_set(EBUSY,
			       "pool '%s' is attached by pid %d (uid %u); "
			       "pmad grants a pool to one process at a time "
			       "until shared attachment with region leases "
			       "exists",
			       p->name, (int)p->att.pid, (unsigned)p->att.uid);
}

int pmad_pool_attach_json(const struct pmad_pool *p, struct json_object *o)
{
	int err = 0;

	if (p->holder) {
		err |= util_json_add_u64(o, "holder_pid", (uint64_t)p->att.pid);
		err |= util_json_add_u64(o, "holder_uid", p->att.uid);
	}
	err |= util_json_add_u64(o, "attaches", p->att.attaches);
	err |= util_json_add_u64(o, "client_recoveries", p->att.recoveries);
	if (p->att.recoveries)
		err |= util_json_add_u64(o, "last_recovery_us",
					 p->att.last_recovery_us);
	return err;
}

/* the holder's connection hung up although the loop has not seen it yet
 * (a client killed just before another one asks for the pool) */
static int holder_gone(const struct pmad_pool *p)
{
	struct pollfd pfd = { .fd = p->holder->fd, .events = POLLRDHUP };

	return poll(&pfd, 1, 0) == 1 &&
	       (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* the lock was held by someone else when pmad opened the pool (a client
 * of a pmad that died): try again now */
static void retry_open(struct pmad_pool *p)
{
	if (p->heap || (p->err != EBUSY && p->err != EWOULDBLOCK))
		return;
	if (pmad_pool_open_heap(p, 0) == 0)
		util_info("pool '%s' is free again and open", p->name);
}

static int open_list_add(struct pmad_client *cl, struct pmad_pool *p)
{
	struct pmad_pool **open;

	/* an array of pointers: the element is a pointer */
	/* NOLINTNEXTLINE(bugprone-sizeof-expression) */
	open = reallocarray(cl->open, cl->nopen + 1, sizeof(*open));
	if (!open)
		return util_errmsg_set(ENOMEM, "out of memory");
	cl->open = open;
	cl->open[cl->nopen++] = p;
	return 0;
}

static void open_list_del(struct pmad_client *cl, const struct pmad_pool *p)
{
	unsigned i;

	for (i = 0; i < cl->nopen; i++)
		if (cl->open[i] == p) {
			cl->open[i] = cl->open[--cl->nopen];
			return;
		}
}

/*
 * The one place that decides what a client gets. Today: the whole heap,
 * read-write (pool_open needs both rights). With region leases this
 * picks the regions and stores them in the grant.
 */
static void grant_fill(const struct pmad_pool *p, struct proto_grant *g)
{
	memset(g, 0, sizeof(*g));
	g->version = PROTO_GRANT_VERSION;
	g->scope = PROTO_GRANT_HEAP;
	g->access = PROTO_GRANT_READ | PROTO_GRANT_WRITE;
	g->nparts = p->nfds;
}

int pmad_pool_attach(struct pmad_pool *p, struct pmad_client *cl,
		     struct proto_grant *ret_grant)
{
	int rc;

	if (p->holder == cl)
		return util_errmsg_set(EALREADY,
				       "pool '%s' is already open on this "
				       "connection",
				       p->name);
	if (p->holder && holder_gone(p))
		pmad_pool_detach(p, PMAD_DETACH_HANGUP);
	if (p->holder)
		return pmad_pool_busy(p);
	retry_open(p);
	if (!p->heap)
		return util_errmsg_set(p->err ? p->err : EIO,
				       "pool '%s' is not open: %s", p->name,
				       p->errmsg ? p->errmsg : "");
	rc = open_list_add(cl, p);
	if (rc < 0)
		return rc;
	/* checkpointed and unmapped: from now on only the client writes */
	pma_heap_close(p->heap);
	p->heap = NULL;
	p->holder = cl;
	p->att.pid = cl->pid;
	p->att.uid = cl->uid;
	p->att.attaches++;
	p->clients++;
	grant_fill(p, ret_grant);
	util_info("pool '%s' attached by pid %d (uid %u)", p->name,
		  (int)cl->pid, (unsigned)cl->uid);
	return 0;
}

static uint64_t elapsed_us(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (uint64_t)(t1.tv_sec - t0->tv_sec) * 1000000 +
	       (uint64_t)((t1.tv_nsec - t0->tv_nsec) / 1000);
}

/* the client shared pmad's open file descriptions: file status flags it
 * set on them (fcntl F_SETFL: O_APPEND, O_NONBLOCK, O_DIRECT, ...) are
 * pmad's too now; clear them before pmad uses the descriptors again */
static void fds_reset_flags(const struct pmad_pool *p)
{
	unsigned i;

	for (i = 0; i < p->nfds; i++)
		if (fcntl(p->part_fds[i], F_SETFL, 0) < 0)
			util_warn("pool '%s': part %u: F_SETFL: %s", p->name, i,
				  strerror(errno));
}

static const char *const detach_why[] = {
	[PMAD_DETACH_CLOSE] = "closed by its client",
	[PMAD_DETACH_HANGUP] = "its connection closed",
	[PMAD_DETACH_STOP] = "pmad stops",
};

/* open the heap again over the kept descriptors: recovery runs */
static void pool_reopen(struct pmad_pool *p, enum pmad_detach why)
{
	struct timespec t0;
	uint64_t us;

	p->reopen_pending = 0;
	fds_reset_flags(p);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (pmad_pool_open_heap(p, 0) < 0)
		return; /* logged, and kept as the pool's error */
	us = elapsed_us(&t0);
	if (why == PMAD_DETACH_HANGUP) {
		p->att.recoveries++;
		p->att.last_recovery_us = us;
	}
	util_info("pool '%s' released by pid %d (%s); reopened and "
		  "recovered in %llu us",
		  p->name, (int)p->att.pid, detach_why[why],
		  (unsigned long long)us);
}

void pmad_pool_detach(struct pmad_pool *p, enum pmad_detach why)
{
	if (!p->holder)
		return;
	open_list_del(p->holder, p);
	p->holder = NULL;
	p->clients--;
	/* pmad stops: the client keeps the pool, and the lock with it */
	if (why == PMAD_DETACH_STOP)
		return;
	/* the client closed its heap and waits for the reply: send it
	 * first, reopen right after (nothing else runs in between) */
	if (why == PMAD_DETACH_CLOSE) {
		p->reopen_pending = 1;
		return;
	}
	pool_reopen(p, why);
}

void pmad_pools_reopen(struct pmad *d)
{
	unsigned i;

	for (i = 0; i < d->npools; i++)
		if (d->pools[i]->reopen_pending)
			pool_reopen(d->pools[i], PMAD_DETACH_CLOSE);
}

void pmad_client_drop_opens(struct pmad_client *cl, enum pmad_detach why)
{
	while (cl->nopen)
		pmad_pool_detach(cl->open[cl->nopen - 1], why);
	free(cl->open);
	cl->open = NULL;
}
