/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmad background services, run from the event loop on a timerfd. Today:
 * periodic checkpoints (services.checkpoint_interval seconds, 0 = off) of
 * every open pool whose logs hold records, so log space is reclaimed
 * without a client asking. Remote-free sync and HDPM GC join here.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "pmad.h"
#include "pmalloc.h"
#include "util/errmsg.h"
#include "util/log.h"
#include "view/view.h"

int pmad_services_setup(struct pmad *d)
{
	struct epoll_event ev = { .events = EPOLLIN };

	d->timer_fd =
		timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (d->timer_fd < 0)
		return util_errmsg_set(errno, "timerfd_create: %s",
				       strerror(errno));
	ev.data.fd = d->timer_fd;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->timer_fd, &ev) < 0)
		return util_errmsg_set(errno, "epoll_ctl: %s", strerror(errno));
	return pmad_services_arm(d);
}

int pmad_services_arm(struct pmad *d)
{
	struct itimerspec its = { 0 };

	its.it_value.tv_sec = d->conf->checkpoint_interval;
	its.it_interval.tv_sec = d->conf->checkpoint_interval;
	if (d->timer_fd >= 0 && timerfd_settime(d->timer_fd, 0, &its, NULL) < 0)
		return util_errmsg_set(errno, "timerfd_settime: %s",
				       strerror(errno));
	return 0;
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
	uint64_t expirations;
	unsigned i;

	if (read(d->timer_fd, &expirations, sizeof(expirations)) !=
	    sizeof(expirations))
		return;
	d->count.service_runs++;
	for (i = 0; i < d->npools; i++)
		checkpoint_pool(d, d->pools[i]);
}
