/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmad background services, run from the event loop on timerfds:
 * - periodic checkpoints (services.checkpoint_interval seconds, 0 = off)
 *   of every open pool whose logs hold records, so log space is
 *   reclaimed without a client asking;
 * - HDPM gc (services.gc_free_pct, 0 = off; every services.gc_interval
 *   seconds): an open pool whose heap has less than gc_free_pct % free
 *   and whose HDPM file system has page logs gets a gc pass (every page
 *   log merged, as pmactl gc does), so a file system that fills its
 *   heap with logs gets the space of the dead bytes back;
 * - compaction (services.compact_interval seconds, 0 = off): every open
 *   pool gets pma_heap_compact, as a compact request runs it (logs
 *   truncated, empty slabs released, free runs punched), so the file
 *   system gets the space of freed pages back without a client asking.
 * - sync (services.sync_interval seconds, 0 = off, default 1): a pool
 *   clients share has regions none of them holds (given back by a
 *   client that closed or died, or never granted); the frees clients
 *   make of those regions' blocks wait in free rings for a holder.
 *   pmad applies them (pmad_pool_sync: a masked open of those regions
 *   and its close), so their space is free again without a client.
 *   Idle clients' own regions are their libpmad's (a sync thread).
 * - watch (every second, not configurable): a pool that processes pmad
 *   does not know held (pmad restarted under them) is taken back once
 *   they have let go (pmad_pool_watch).
 * Pools a client holds are skipped by the others (pmad has no heap of
 * theirs).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "hdpm.h"
#include "hdpm/fsck.h"
#include "pmad.h"
#include "pmalloc.h"
#include "util/errmsg.h"
#include "util/log.h"
#include "view/view.h"

/* seconds between two looks at pools that processes pmad does not know
 * held (pmad_pool_watch): a few system calls a pool in that state */
#define WATCH_INTERVAL 1

/* a timerfd in the loop into *ret_fd */
static int timer_add(struct pmad *d, int *ret_fd)
{
	struct epoll_event ev = { .events = EPOLLIN };

	*ret_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (*ret_fd < 0)
		return util_errmsg_set(errno, "timerfd_create: %s",
				       strerror(errno));
	ev.data.fd = *ret_fd;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, *ret_fd, &ev) < 0)
		return util_errmsg_set(errno, "epoll_ctl: %s", strerror(errno));
	return 0;
}

/* read a timerfd the loop reported: 1 if it expired */
static int timer_fired(int fd)
{
	uint64_t expirations;

	return read(fd, &expirations, sizeof(expirations)) ==
	       sizeof(expirations);
}

int pmad_services_setup(struct pmad *d)
{
	int rc = timer_add(d, &d->timer_fd);

	if (rc == 0)
		rc = timer_add(d, &d->gc_timer_fd);
	if (rc == 0)
		rc = timer_add(d, &d->compact_timer_fd);
	if (rc == 0)
		rc = timer_add(d, &d->sync_timer_fd);
	if (rc == 0)
		rc = timer_add(d, &d->watch_timer_fd);
	return rc < 0 ? rc : pmad_services_arm(d);
}

/* every seconds (0: stopped) */
static int timer_arm(int fd, unsigned seconds)
{
	struct itimerspec its = { 0 };

	its.it_value.tv_sec = seconds;
	its.it_interval.tv_sec = seconds;
	if (fd >= 0 && timerfd_settime(fd, 0, &its, NULL) < 0)
		return util_errmsg_set(errno, "timerfd_settime: %s",
				       strerror(errno));
	return 0;
}

int pmad_services_arm(struct pmad *d)
{
	int rc = timer_arm(d->timer_fd, d->conf->checkpoint_interval);

	if (rc == 0)
		rc = timer_arm(d->gc_timer_fd,
			       d->conf->gc_free_pct ? d->conf->gc_interval : 0);
	if (rc == 0)
		rc = timer_arm(d->compact_timer_fd, d->conf->compact_interval);
	if (rc == 0)
		rc = timer_arm(d->sync_timer_fd, d->conf->sync_interval);
	if (rc == 0)
		rc = timer_arm(d->watch_timer_fd, WATCH_INTERVAL);
	return rc;
}

int pmad_pool_checkpoint(struct pmad_pool *p)
{
	int rc = pma_heap_checkpoint(p->heap);

	if (rc < 0) {
		p->svc.checkpoint_failures++;
		return util_errmsg_set(-rc, "pool '%s': checkpoint: %s",
				       p->name, pma_errormsg());
	}
	p->svc.checkpoints++;
	p->svc.last_checkpoint = time(NULL);
	return 0;
}

int pmad_pool_gc(struct pmad_pool *p, struct view_gc *ret)
{
	int rc = view_hdpm_gc(p->heap, ret);

	if (rc < 0) {
		p->svc.gc_failures++;
		util_errmsg_prefix("pool '%s': gc", p->name);
		return rc;
	}
	p->svc.gc_runs++;
	p->svc.gc_pages_merged += ret->merged;
	p->svc.gc_bytes_reclaimed += view_gc_reclaimed(ret);
	p->svc.last_gc = time(NULL);
	return 0;
}

int pmad_pool_compact(struct pmad_pool *p, struct pma_compact_report *ret)
{
	int rc = pma_heap_compact(p->heap, ret);

	if (rc < 0) {
		p->svc.compact_failures++;
		return util_errmsg_set(-rc, "pool '%s': compaction failed: %s",
				       p->name, pma_errormsg());
	}
	p->svc.compactions++;
	p->svc.compact_bytes_reclaimed += ret->reclaimed_bytes;
	p->svc.last_compact = time(NULL);
	return 0;
}

static void checkpoint_pool(struct pmad *d, struct pmad_pool *p)
{
	struct pma_heap_stats st;

	if (!p->heap || pma_heap_stats(p->heap, &st) < 0 || !st.log_records)
		return;
	if (pmad_pool_checkpoint(p) < 0) {
		util_err("background checkpoint failed: %s", util_errmsg());
		return;
	}
	d->count.service_checkpoints++;
	util_dbg("pool '%s': checkpointed %llu log records", p->name,
		 (unsigned long long)st.log_records);
}

void pmad_services_run(struct pmad *d)
{
	unsigned i;

	if (!timer_fired(d->timer_fd))
		return;
	d->count.service_runs++;
	for (i = 0; i < d->npools; i++)
		checkpoint_pool(d, d->pools[i]);
}

/* does p's file system have page logs to merge? (read-only mount: the
 * root word is checked first, nothing is written) */
static int has_page_logs(struct pmad_pool *p)
{
	struct hdpm_fs_info in = { 0 };
	struct hdpm_fs *fs = NULL;
	int rc;

	if (!hdpm_fsck_present(p->heap) ||
	    hdpm_mount(p->heap, HDPM_RDONLY, &fs) < 0)
		return 0;
	rc = hdpm_fs_info(fs, &in);
	hdpm_unmount(fs);
	return rc == 0 && in.log_chunks > 0;
}

static void gc_pool(struct pmad *d, struct pmad_pool *p)
{
	struct pma_heap_stats st = { 0 };
	struct view_gc g = { 0 };

	if (!p->heap || pma_heap_stats(p->heap, &st) < 0 || !st.heap_size)
		return;
	/* free below the threshold: free / heap < pct / 100 */
	if (st.free_bytes * 100 >=
		    (uint64_t)d->conf->gc_free_pct * st.heap_size ||
	    !has_page_logs(p))
		return;
	if (pmad_pool_gc(p, &g) < 0) {
		util_err("background gc failed: %s", util_errmsg());
		return;
	}
	d->count.service_gcs++;
	d->count.service_gc_pages_merged += g.merged;
	util_info("pool '%s': background gc (%llu of %llu bytes free): %u "
		  "page logs merged, %llu bytes reclaimed",
		  p->name, (unsigned long long)st.free_bytes,
		  (unsigned long long)st.heap_size, g.merged,
		  (unsigned long long)view_gc_reclaimed(&g));
}

void pmad_services_gc(struct pmad *d)
{
	unsigned i;

	if (!timer_fired(d->gc_timer_fd))
		return;
	if (!d->conf->gc_free_pct)
		return;
	d->count.service_gc_runs++;
	for (i = 0; i < d->npools; i++)
		gc_pool(d, d->pools[i]);
}

static void compact_pool(struct pmad *d, struct pmad_pool *p)
{
	struct pma_compact_report rep;

	if (!p->heap || p->shared)
		return;
	if (pmad_pool_compact(p, &rep) < 0) {
		util_err("background compaction failed: %s", util_errmsg());
		return;
	}
	d->count.service_compactions++;
	d->count.service_compact_bytes_reclaimed += rep.reclaimed_bytes;
	util_dbg("pool '%s': compacted: %llu log records, %llu slabs "
		 "released, %llu bytes reclaimed",
		 p->name, (unsigned long long)rep.log_records_before,
		 (unsigned long long)rep.slabs_released,
		 (unsigned long long)rep.reclaimed_bytes);
}

void pmad_services_compact(struct pmad *d)
{
	unsigned i;

	if (!timer_fired(d->compact_timer_fd))
		return;
	if (!d->conf->compact_interval)
		return;
	d->count.service_compact_runs++;
	d->count.service_last_compact = time(NULL);
	for (i = 0; i < d->npools; i++)
		compact_pool(d, d->pools[i]);
}

void pmad_services_sync(struct pmad *d)
{
	uint64_t applied;
	unsigned i;
	int rc;

	if (!timer_fired(d->sync_timer_fd))
		return;
	if (!d->conf->sync_interval)
		return;
	d->count.service_sync_runs++;
	for (i = 0; i < d->npools; i++) {
		rc = pmad_pool_sync(d->pools[i], &applied);
		if (rc == -EBUSY)
			util_dbg("%s; the next round tries again",
				 util_errmsg());
		else if (rc < 0)
			util_err("sync service: %s", util_errmsg());
		if (rc <= 0)
			continue;
		d->count.service_syncs++;
		d->count.service_sync_frees_applied += applied;
		if (applied)
			util_dbg("pool '%s': %llu frees applied to regions no "
				 "client holds",
				 d->pools[i]->name,
				 (unsigned long long)applied);
	}
}

void pmad_services_watch(struct pmad *d)
{
	unsigned i;

	if (!timer_fired(d->watch_timer_fd))
		return;
	for (i = 0; i < d->npools; i++)
		pmad_pool_watch(d->pools[i]);
}
