/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmad attachments: a pool's heap regions leased to clients
 * (doc/shared-heaps.md, "Leases").
 *
 * A pool with no client is pmad's: its heap is open (exclusive flock on
 * pmad's part descriptors), services run on it. The first pool_open
 * closes that heap (pma_heap_close checkpoints it) and turns pmad's
 * flock shared ("shared": no heap, clients hold regions). Each pool_open
 * then grants free region slots, one per part, lowest first
 * (grant_fill), and sends descriptors that pmad opened anew for that
 * client: the client's masked open (libpmad) takes the region locks, OFD
 * locks that belong to those open file descriptions, so they are the
 * client's alone and the kernel drops them when it dies. pmad keeps no
 * copy (a copy would keep the locks alive after the client).
 *
 * A client that closes the pool gives its slots back (its close applied
 * and checkpointed them). A client whose connection goes away without
 * closing is recovered: pmad opens its slots (a masked open: log replay,
 * ring recovery, drains) and closes them, timed; other clients go on.
 * When the last client is gone pmad opens the whole heap again.
 *
 * pmad's death stops no client. A restarted pmad cannot take a pool
 * whose regions clients still hold (the exclusive flock fails): it
 * shares it, grants the slots whose locks are free, and shows the others
 * as held by unknown processes (F_OFD_GETLK names no pid for OFD locks)
 * until they are released.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "pmad.h"
#include "pmalloc.h"
#include "pmalloc/fsck.h"
#include "pool/pool.h"
#include "proto/proto.h"
#include "util/errmsg.h"
#include "util/json.h"
#include "util/log.h"

/* how long a recovery waits for a dead client's region locks: the kernel
 * closes its descriptors one by one and the socket may go first */
#define LOCK_WAIT_MS 2000

static unsigned pool_slots(const struct pmad_pool *p)
{
	unsigned n = p->nparts * (p->regions ? p->regions : 1);

	return n > PROTO_GRANT_SLOTS ? PROTO_GRANT_SLOTS : n;
}

static uint64_t slots_all(const struct pmad_pool *p)
{
	unsigned n = pool_slots(p);

	return n >= 64 ? ~0ULL : (1ULL << n) - 1;
}

/* slots whose lock is held by an open pmad did not grant (pmad
 * restarted, or a recovery gave up) */
uint64_t pmad_pool_slots_orphaned(const struct pmad_pool *p)
{
	uint64_t all = slots_all(p), m = 0;
	unsigned s;

	if (!p->nfds)
		return 0;
	for (s = 0; s < 64; s++)
		if ((all >> s & 1) && !(p->granted >> s & 1) &&
		    pool_fd_slot_busy(p->part_fds[0], s) > 0)
			m |= 1ULL << s;
	return m;
}

/* slots nobody holds: not granted, and not locked by an open pmad does
 * not know */
static uint64_t slots_unheld(const struct pmad_pool *p)
{
	return slots_all(p) & ~p->granted & ~pmad_pool_slots_orphaned(p);
}

const char *pmad_pool_state(const struct pmad_pool *p)
{
	if (p->heap || p->reopen_pending) /* reopened before anything else */
		return "open";
	return p->shared ? "attached" : "error";
}

int pmad_pool_busy(const struct pmad_pool *p)
{
	if (!p->natts)
		return util_errmsg_set(EBUSY,
				       "pool '%s' has regions held by "
				       "processes pmad does not know (pmad "
				       "restarted while they held them)",
				       p->name);
	return util_errmsg_set(EBUSY,
			       "pool '%s' is attached by pid %d (uid %u)%s; "
			       "pmad leaves a pool to its clients while they "
			       "hold its regions",
			       p->name, (int)p->atts[0].cl->pid,
			       (unsigned)p->atts[0].cl->uid,
			       p->natts > 1 ? " and other clients" : "");
}

static int slots_json(uint64_t mask, struct json_object **ret)
{
	struct json_object *a = json_object_new_array();
	unsigned s;
	int err = !a;

	for (s = 0; !err && s < 64; s++)
		if (mask >> s & 1)
			err = json_object_array_add(
				      a, json_object_new_int((int)s)) < 0;
	if (err) {
		json_object_put(a);
		return -1;
	}
	*ret = a;
	return 0;
}

static int holders_json(const struct pmad_pool *p, struct json_object *o)
{
	struct json_object *arr = json_object_new_array(), *h, *slots;
	unsigned i;
	int err = !arr;

	for (i = 0; !err && i < p->natts; i++) {
		h = json_object_new_object();
		err = !h;
		err = err ||
		      util_json_add_u64(h, "pid",
					(uint64_t)p->atts[i].cl->pid) ||
		      util_json_add_u64(h, "uid", p->atts[i].cl->uid) ||
		      slots_json(p->atts[i].mask, &slots) ||
		      util_json_add_obj(h, "regions", slots);
		if (!err)
			err = json_object_array_add(arr, h) < 0;
		else
			json_object_put(h);
	}
	if (err) {
		json_object_put(arr);
		return -1;
	}
	return util_json_add_obj(o, "holders", arr);
}

int pmad_pool_attach_json(const struct pmad_pool *p, struct json_object *o)
{
	uint64_t orphans = p->shared ? pmad_pool_slots_orphaned(p) : 0;
	struct json_object *slots;
	int err = 0;

	if (p->natts) {
		err |= util_json_add_u64(o, "holder_pid",
					 (uint64_t)p->atts[0].cl->pid);
		err |= util_json_add_u64(o, "holder_uid", p->atts[0].cl->uid);
	}
	if (p->shared)
		err |= holders_json(p, o);
	if (orphans) {
		err |= slots_json(orphans, &slots);
		if (!err)
			err |= util_json_add_obj(o, "regions_held_unknown",
						 slots);
	}
	if (p->nparts) {
		err |= util_json_add_u64(o, "regions", pool_slots(p));
		err |= util_json_add_u64(
			o, "regions_free",
			(uint64_t)__builtin_popcountll(slots_all(p) &
						       ~p->granted & ~orphans));
	}
	err |= util_json_add_u64(o, "attaches", p->att.attaches);
	err |= util_json_add_u64(o, "client_recoveries", p->att.recoveries);
	if (p->att.recoveries)
		err |= util_json_add_u64(o, "last_recovery_us",
					 p->att.last_recovery_us);
	return err;
}

/* this client's connection hung up although the loop has not seen it
 * yet (a client killed just before another one asks for the pool) */
static int client_gone(const struct pmad_client *cl)
{
	struct pollfd pfd = { .fd = cl->fd, .events = POLLRDHUP };

	return poll(&pfd, 1, 0) == 1 &&
	       (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* clients whose connection closed: their regions recovered now */
void pmad_pool_detach_gone(struct pmad_pool *p)
{
	unsigned i;

	for (i = p->natts; i-- > 0;)
		if (client_gone(p->atts[i].cl))
			pmad_pool_detach(p, p->atts[i].cl, PMAD_DETACH_HANGUP);
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

static int att_find(const struct pmad_pool *p, const struct pmad_client *cl)
{
	unsigned i;

	for (i = 0; i < p->natts; i++)
		if (p->atts[i].cl == cl)
			return (int)i;
	return -1;
}

/* pmad stops using the heap and keeps a shared flock on its descriptors
 * (offline tools stay out, clients' masked opens come in) */
static int pool_share(struct pmad_pool *p)
{
	unsigned i;
	int rc;

	if (p->shared)
		return 0;
	pma_heap_close(p->heap); /* checkpointed; NULL is fine */
	p->heap = NULL;
	rc = pmad_pool_fds_open(p);
	for (i = 0; rc == 0 && i < p->nfds; i++)
		while (flock(p->part_fds[i], LOCK_SH | LOCK_NB) < 0) {
			if (errno == EINTR)
				continue;
			rc = util_errmsg_set(errno == EWOULDBLOCK ? EBUSY :
								    errno,
					     "pool '%s': part %u is locked by "
					     "another program: %s",
					     p->name, i, strerror(errno));
			break;
		}
	if (rc < 0) {
		pmad_pool_fds_close(p);
		return rc;
	}
	pmad_pool_read_size(p);
	p->shared = 1;
	return 0;
}

/* descriptors of every part opened anew: the client's own open file
 * descriptions (its region locks live on them) */
static int fds_fresh(const struct pmad_pool *p, int *fds)
{
	unsigned i;

	for (i = 0; i < p->nfds; i++) {
		fds[i] = open(p->part_paths[i], O_RDWR | O_CLOEXEC);
		if (fds[i] < 0) {
			int err = errno;

			while (i)
				close(fds[--i]);
			return util_errmsg_set(err,
					       "pool '%s': part %u (%s): %s",
					       p->name, i, p->part_paths[i],
					       strerror(err));
		}
	}
	return 0;
}

static void fds_close(int *fds, unsigned n)
{
	while (n)
		close(fds[--n]);
}

/*
 * The one place that decides what a client gets: one free slot of each
 * part (the lowest), so that it allocates on every node; slots that
 * another open holds are skipped. -EBUSY when none is free.
 */
static void grant_init(const struct pmad_pool *p, struct proto_grant *g)
{
	memset(g, 0, sizeof(*g));
	g->version = PROTO_GRANT_VERSION;
	g->scope = PROTO_GRANT_REGIONS;
	g->access = PROTO_GRANT_READ | PROTO_GRANT_WRITE;
	g->nparts = p->nfds;
}

static int grant_fill(const struct pmad_pool *p, struct proto_grant *g)
{
	uint64_t free_ = slots_unheld(p);
	unsigned part, r, k = p->regions ? p->regions : 1, s;

	grant_init(p, g);
	for (part = 0; part < p->nparts; part++)
		for (r = 0; r < k; r++) {
			s = part * k + r;
			if (s < 64 && (free_ >> s & 1)) {
				g->mask |= 1ULL << s;
				break;
			}
		}
	if (!g->mask && p->natts)
		return util_errmsg_set(EBUSY,
				       "pool '%s': all %u of its heap regions "
				       "are held, by pid %d%s; a pool created "
				       "with more regions (--regions) serves "
				       "more clients at a time",
				       p->name, pool_slots(p),
				       (int)p->atts[0].cl->pid,
				       p->natts > 1 ? " and others" : "");
	if (!g->mask)
		return util_errmsg_set(EBUSY,
				       "pool '%s': all %u of its heap regions "
				       "are held, by processes pmad does not "
				       "know (pmad restarted)",
				       p->name, pool_slots(p));
	return 0;
}

/* the pool can be shared: it is already, or pmad's heap is open, or
 * clients pmad does not know hold it (the full open failed EBUSY) */
static int pool_ready(struct pmad_pool *p)
{
	if (p->shared || p->heap)
		return 0;
	if (pmad_pool_open_heap(p, 0) == 0) {
		util_info("pool '%s' is free again and open", p->name);
		return 0;
	}
	if (p->err == EBUSY || p->err == EWOULDBLOCK)
		return pool_share(p);
	return util_errmsg_set(p->err ? p->err : EIO,
			       "pool '%s' is not open: %s", p->name,
			       p->errmsg ? p->errmsg : "");
}

int pmad_pool_attach(struct pmad_pool *p, struct pmad_client *cl,
		     struct proto_grant *ret_grant, int *ret_fds)
{
	int rc, was_shared;

	if (att_find(p, cl) >= 0)
		return util_errmsg_set(EALREADY,
				       "pool '%s' is already open on this "
				       "connection",
				       p->name);
	pmad_pool_detach_gone(p);
	rc = pool_ready(p);
	if (rc < 0)
		return rc;
	was_shared = p->shared;
	if (p->natts >= PMAD_ATTS_MAX)
		return util_errmsg_set(EBUSY, "pool '%s' has %u clients",
				       p->name, p->natts);
	rc = open_list_add(cl, p);
	if (rc < 0)
		return rc;
	/* from now on only clients write the heap */
	rc = pool_share(p);
	if (rc == 0)
		rc = grant_fill(p, ret_grant);
	if (rc == 0)
		rc = fds_fresh(p, ret_fds);
	if (rc < 0) {
		open_list_del(cl, p);
		if (!was_shared) /* back to pmad: it had the heap */
			pmad_pool_take_back(p);
		return rc;
	}
	p->atts[p->natts].cl = cl;
	p->atts[p->natts].mask = ret_grant->mask;
	p->natts++;
	p->granted |= ret_grant->mask;
	p->att.pid = cl->pid;
	p->att.uid = cl->uid;
	p->att.attaches++;
	p->clients++;
	util_info("pool '%s': regions 0x%llx granted to pid %d (uid %u)",
		  p->name, (unsigned long long)ret_grant->mask, (int)cl->pid,
		  (unsigned)cl->uid);
	return 0;
}

/* slot alone, if no one holds it (a client's pma_root takes slot 0,
 * where the root object is made): the one it lacks into *ret_grant */
static int grant_slot(const struct pmad_pool *p, const struct pmad_client *cl,
		      unsigned slot, struct proto_grant *g)
{
	unsigned k = p->regions ? p->regions : 1, i;

	if (slot >= pool_slots(p))
		return util_errmsg_set(EINVAL,
				       "pool '%s' has %u region slots, no slot "
				       "%u",
				       p->name, pool_slots(p), slot);
	for (i = 0; i < p->natts; i++) {
		if (!(p->atts[i].mask >> slot & 1))
			continue;
		if (p->atts[i].cl == cl)
			return util_errmsg_set(EEXIST,
					       "pool '%s': region slot %u is "
					       "this client's already",
					       p->name, slot);
		return util_errmsg_set(EBUSY,
				       "pool '%s': region slot %u (region %u "
				       "of part %u) is held by pid %d, which "
				       "can make the root object; or wait "
				       "until it closes the pool",
				       p->name, slot, slot % k, slot / k,
				       (int)p->atts[i].cl->pid);
	}
	if (pmad_pool_slots_orphaned(p) >> slot & 1)
		return util_errmsg_set(EBUSY,
				       "pool '%s': region slot %u (region %u "
				       "of part %u) is held by a process pmad "
				       "does not know (pmad restarted)",
				       p->name, slot, slot % k, slot / k);
	grant_init(p, g);
	g->mask = 1ULL << slot;
	return 0;
}

int pmad_pool_lease(struct pmad_pool *p, struct pmad_client *cl, int slot,
		    struct proto_grant *ret_grant)
{
	int i = att_find(p, cl), rc;

	if (i < 0)
		return util_errmsg_set(EBADF,
				       "pool '%s' is not open on this "
				       "connection: pool_open leases the "
				       "first regions",
				       p->name);
	rc = slot < 0 ? grant_fill(p, ret_grant) :
			grant_slot(p, cl, (unsigned)slot, ret_grant);
	if (rc < 0)
		return rc;
	p->atts[i].mask |= ret_grant->mask;
	p->granted |= ret_grant->mask;
	util_info("pool '%s': regions 0x%llx leased to pid %d (uid %u) too",
		  p->name, (unsigned long long)ret_grant->mask, (int)cl->pid,
		  (unsigned)cl->uid);
	return 0;
}

static uint64_t elapsed_us(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (uint64_t)(t1.tv_sec - t0->tv_sec) * 1000000 +
	       (uint64_t)((t1.tv_nsec - t0->tv_nsec) / 1000);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { 0, (long)ms * 1000000L };

	nanosleep(&ts, NULL);
}

/* a masked open of mask's regions on descriptors of its own into
 * *ret_heap; an open that finds a region locked (-EBUSY) tries again
 * every millisecond for up to wait_ms */
static int regions_open(struct pmad_pool *p, uint64_t mask, unsigned wait_ms,
			struct pma_heap **ret_heap)
{
	struct pma_config *cfg = NULL;
	int fds[PMAD_PARTS_MAX];
	unsigned waited = 0;
	int rc = fds_fresh(p, fds);

	if (rc < 0)
		return rc;
	rc = pma_config_new(&cfg);
	if (rc == 0)
		rc = pma_config_set_region_mask(cfg, mask);
	while (rc == 0) {
		rc = pma_heap_open_fds_cfg(fds, p->nfds, cfg, ret_heap);
		if (rc != -EBUSY || waited >= wait_ms)
			break;
		sleep_ms(1);
		waited++;
		rc = 0;
	}
	pma_config_delete(&cfg);
	fds_close(fds, p->nfds);
	return rc < 0 ? util_errmsg_set(-rc, "%s", pma_errormsg()) : 0;
}

/*
 * A masked open of mask's regions and its close: the open replays their
 * logs, recovers their rings and applies the frees other opens left in
 * rings for them, the close checkpoints them. For a dead client's
 * regions (its descriptors may still be closing: the open waits up to
 * wait_ms for their locks) and for the sync service (regions no client
 * holds). The ring entries applied into *ret_applied (NULL: not wanted).
 */
static int regions_cycle(struct pmad_pool *p, uint64_t mask, unsigned wait_ms,
			 uint64_t *ret_applied)
{
	struct pma_heap *heap = NULL;
	struct pma_heap_stats st;
	int rc = regions_open(p, mask, wait_ms, &heap);

	if (rc < 0)
		return rc;
	if (ret_applied)
		*ret_applied =
			pma_heap_stats(heap, &st) == 0 ?
				st.ring_frees_applied + st.ring_frees_ignored :
				0;
	pma_heap_close(heap);
	return 0;
}

/* the regions no client holds, opened masked into *ret_heap (NULL and 0
 * when every region is leased or held); the mask into *ret_mask. Clients
 * that went away are detached (recovered) first. */
int pmad_pool_open_unleased(struct pmad_pool *p, struct pma_heap **ret_heap,
			    uint64_t *ret_mask)
{
	*ret_heap = NULL;
	pmad_pool_detach_gone(p);
	*ret_mask = p->shared ? slots_unheld(p) : 0;
	return *ret_mask ? regions_open(p, *ret_mask, 0, ret_heap) : 0;
}

/* a dead client's regions */
static int regions_recover(struct pmad_pool *p, uint64_t mask)
{
	return regions_cycle(p, mask, LOCK_WAIT_MS, NULL);
}

/*
 * The sync service on one pool (services.sync_interval): while clients
 * share it, the regions none of them holds (given back, or never
 * granted) have no holder to apply the frees that clients make of their
 * blocks through free rings. pmad applies them: a masked open of those
 * regions and its close. A region another open holds for a moment (a
 * client adopting a full ring) makes this round skip (-EBUSY).
 */
int pmad_pool_sync(struct pmad_pool *p, uint64_t *ret_applied)
{
	struct timespec t0;
	struct pool *pool = NULL;
	uint64_t mask, applied = 0, pending = 0;
	int rc;

	*ret_applied = 0;
	if (!p->shared)
		return 0;
	mask = slots_unheld(p);
	if (!mask)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* the ring words first: an open and close when nothing waits
	 * would cost milliseconds a round */
	rc = pool_open(p->path, POOL_OPEN_RDONLY | POOL_OPEN_NOLOCK, &pool);
	if (rc == 0) {
		rc = pma_pool_ring_pending(pool, mask, &pending);
		pool_close(&pool);
		if (rc < 0)
			rc = util_errmsg_set(-rc, "%s", pma_errormsg());
	} else {
		rc = util_errmsg_set(-rc, "%s", pool_errormsg());
	}
	if (rc == 0 && !pending)
		return 0;
	if (rc == 0)
		rc = regions_cycle(p, mask, 0, &applied);
	if (rc < 0) {
		if (rc != -EBUSY)
			p->svc.sync_failures++;
		util_errmsg_prefix("pool '%s': sync of regions 0x%llx", p->name,
				   (unsigned long long)mask);
		return rc;
	}
	p->svc.syncs++;
	p->svc.sync_frees_applied += applied;
	p->svc.last_sync = time(NULL);
	p->svc.last_sync_us = elapsed_us(&t0);
	*ret_applied = applied;
	return 1;
}

/*
 * open the whole heap again (recovery runs). A dead client's descriptors
 * may still be closing: wait a little for the locks of its slots (gone)
 * and its flocks. If processes pmad does not know hold regions, pmad
 * shares the pool instead.
 */
static void take_back(struct pmad_pool *p, uint64_t gone)
{
	unsigned waited = 0;

	p->reopen_pending = 0;
	if (p->natts)
		return;
	while (p->shared && (pmad_pool_slots_orphaned(p) & gone) &&
	       waited < LOCK_WAIT_MS) {
		sleep_ms(1);
		waited++;
	}
	if (p->shared && pmad_pool_slots_orphaned(p)) {
		util_warn("pool '%s': regions 0x%llx are held by processes "
			  "pmad does not know; it goes on sharing the pool",
			  p->name,
			  (unsigned long long)pmad_pool_slots_orphaned(p));
		return;
	}
	p->shared = 0;
	while (pmad_pool_open_heap(p, 0) < 0 &&
	       (p->err == EBUSY || p->err == EWOULDBLOCK) &&
	       waited < LOCK_WAIT_MS) {
		sleep_ms(1);
		waited++;
	}
	if (!p->heap && (p->err == EBUSY || p->err == EWOULDBLOCK))
		(void)pool_share(p);
}

void pmad_pool_take_back(struct pmad_pool *p)
{
	take_back(p, 0);
}

/* every part's flock could be taken exclusively now (and is let go) */
static int fds_unlocked(const struct pmad_pool *p)
{
	unsigned i;

	for (i = 0; i < p->nfds; i++) {
		if (flock(p->part_fds[i], LOCK_EX | LOCK_NB) < 0)
			return 0;
		(void)flock(p->part_fds[i], LOCK_UN);
	}
	return 1;
}

/*
 * A pool that processes pmad does not know held (pmad restarted while
 * they held regions) is pmad's again once they have let go of every
 * region: the last known client may leave before they do, and their
 * deaths send pmad nothing. The watch timer looks every second: a
 * shared pool with no client and no held slot is taken back (take_back:
 * the whole heap opened, recovery runs); a pool that could not be
 * opened because it was held is opened once no lock is held. Nothing
 * is logged while they still hold it.
 */
void pmad_pool_watch(struct pmad_pool *p)
{
	int held;

	if (p->heap || p->natts || p->reopen_pending)
		return;
	if (p->shared) {
		if (!pmad_pool_slots_orphaned(p)) {
			util_info("pool '%s': the processes pmad did not know "
				  "have let go of its regions",
				  p->name);
			take_back(p, 0);
		}
		return;
	}
	if (p->err != EBUSY && p->err != EWOULDBLOCK)
		return;
	if (pmad_pool_fds_open(p) < 0)
		return;
	held = !fds_unlocked(p) || pmad_pool_slots_orphaned(p);
	pmad_pool_fds_close(p);
	if (!held && pmad_pool_open_heap(p, 0) == 0)
		util_info("pool '%s' is free again and open", p->name);
}

static const char *const detach_why[] = {
	[PMAD_DETACH_CLOSE] = "closed by its client",
	[PMAD_DETACH_HANGUP] = "its connection closed",
	[PMAD_DETACH_STOP] = "pmad stops",
};

/* a client went away without closing: its regions recovered, timed */
static void client_recover(struct pmad_pool *p, const struct pmad_client *cl,
			   uint64_t mask)
{
	struct timespec t0;
	uint64_t us;
	int rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (p->natts)
		rc = regions_recover(p, mask);
	else
		take_back(p, mask);
	if (rc < 0 || (!p->natts && !p->heap && !p->shared)) {
		util_err("pool '%s': the regions of pid %d (0x%llx) were not "
			 "recovered: %s",
			 p->name, (int)cl->pid, (unsigned long long)mask,
			 rc < 0	   ? util_errmsg() :
			 p->errmsg ? p->errmsg :
				     "");
		return;
	}
	us = elapsed_us(&t0);
	p->att.recoveries++;
	p->att.last_recovery_us = us;
	util_info("pool '%s': regions 0x%llx released by pid %d (%s); "
		  "recovered in %llu us",
		  p->name, (unsigned long long)mask, (int)cl->pid,
		  detach_why[PMAD_DETACH_HANGUP], (unsigned long long)us);
}

void pmad_pool_detach(struct pmad_pool *p, struct pmad_client *cl,
		      enum pmad_detach why)
{
	int i = att_find(p, cl);
	uint64_t mask;

	if (i < 0)
		return;
	mask = p->atts[i].mask;
	p->atts[i] = p->atts[--p->natts];
	p->granted &= ~mask;
	open_list_del(cl, p);
	p->clients--;
	/* pmad stops: the client keeps its regions and their locks */
	if (why == PMAD_DETACH_STOP)
		return;
	if (why == PMAD_DETACH_HANGUP) {
		client_recover(p, cl, mask);
		return;
	}
	util_info("pool '%s': regions 0x%llx released by pid %d (%s)", p->name,
		  (unsigned long long)mask, (int)cl->pid, detach_why[why]);
	/* the client closed its heap and waits for the reply: send it
	 * first, take the heap back right after (nothing runs between) */
	if (!p->natts)
		p->reopen_pending = 1;
}

void pmad_pools_reopen(struct pmad *d)
{
	unsigned i;

	for (i = 0; i < d->npools; i++)
		if (d->pools[i]->reopen_pending)
			pmad_pool_take_back(d->pools[i]);
}

void pmad_client_drop_opens(struct pmad_client *cl, enum pmad_detach why)
{
	while (cl->nopen)
		pmad_pool_detach(cl->open[cl->nopen - 1], cl, why);
	free(cl->open);
	cl->open = NULL;
}
