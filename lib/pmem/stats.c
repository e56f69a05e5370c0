/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pmem stats: per-thread persistence counters, O(1) per flush call.
 * Each thread owns a __thread block and is its only writer (relaxed atomic
 * stores, so readers in pm_stats_get_global() see whole values). A block is
 * registered on first use under stats_lock; at thread exit a key destructor
 * folds it into stats_exited. Lock order: stats_lock is a leaf.
 */
#include <pthread.h>
#include <string.h>

#include "pmem/internal.h"
#include "pmem/pm.h"

UTIL_TLS_FAST struct pm_tstats pm_tls_stats = {
	.mru = { PM_NO_LINE, PM_NO_LINE, PM_NO_LINE, PM_NO_LINE },
	.last_xpline = PM_NO_LINE,
	.node = -1,
};

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t stats_once = PTHREAD_ONCE_INIT;
static pthread_key_t stats_key;
static struct pm_tstats *stats_threads; /* live registered threads */
static struct pm_stats stats_exited; /* sum of exited threads */

static inline uint64_t ctr_get(const uint64_t *ctr)
{
	return __atomic_load_n(ctr, __ATOMIC_RELAXED);
}

static void stats_sum(struct pm_stats *acc, const struct pm_stats *s)
{
	acc->lines_flushed += ctr_get(&s->lines_flushed);
	acc->fences += ctr_get(&s->fences);
	acc->reflushes += ctr_get(&s->reflushes);
	acc->xplines += ctr_get(&s->xplines);
	acc->bytes_persisted += ctr_get(&s->bytes_persisted);
	acc->remote_lines += ctr_get(&s->remote_lines);
}

/* thread exit: keep the thread's counts in the global total */
static void stats_thread_exit(void *arg)
{
	struct pm_tstats *t = arg;

	pthread_mutex_lock(&stats_lock);
	stats_sum(&stats_exited, &t->s);
	*t->pprev = t->next;
	if (t->next)
		t->next->pprev = t->pprev;
	t->registered = 0;
	pthread_mutex_unlock(&stats_lock);
}

static void stats_key_create(void)
{
	/* XXX: without a key, exited threads' counts are lost; harmless */
	(void)pthread_key_create(&stats_key, stats_thread_exit);
}

void pm_stats_register(struct pm_tstats *t)
{
	pthread_once(&stats_once, stats_key_create);
	pthread_mutex_lock(&stats_lock);
	t->next = stats_threads;
	t->pprev = &stats_threads;
	if (stats_threads)
		stats_threads->pprev = &t->next;
	stats_threads = t;
	t->registered = 1;
	pthread_mutex_unlock(&stats_lock);
	(void)pthread_setspecific(stats_key, t);
}

/*
 * Reflushes caused by flushing the n contiguous lines from first: an old
 * MRU entry j found at position k of the range had, since its last flush,
 * the j newer MRU entries and the k earlier range lines flushed, minus those
 * counted twice (newer entries that are range lines before k).
 */
static uint64_t mru_reflushes(const uintptr_t *mru, uintptr_t first,
			      uintptr_t n)
{
	uint64_t count = 0;
	uintptr_t k, kk, others;
	int j, jj;

	for (j = 0; j < PM_MRU_LINES; j++) {
		if (mru[j] == PM_NO_LINE || mru[j] < first ||
		    (mru[j] - first) / PM_CACHELINE >= n)
			continue;
		k = (mru[j] - first) / PM_CACHELINE;
		others = (uintptr_t)j + k;
		for (jj = 0; jj < j; jj++) {
			kk = (mru[jj] - first) / PM_CACHELINE;
			if (mru[jj] >= first && kk < k)
				others--;
		}
		if (others < PM_MRU_LINES)
			count++;
	}
	return count;
}

/* new MRU: the last range lines, newest first, then surviving old ones */
static void mru_update(uintptr_t *mru, uintptr_t first, uintptr_t n)
{
	uintptr_t old[PM_MRU_LINES];
	uintptr_t last = first + (n - 1) * PM_CACHELINE;
	int i, j = 0;

	memcpy(old, mru, sizeof(old));
	for (i = 0; i < PM_MRU_LINES && (uintptr_t)i < n; i++)
		mru[j++] = last - (uintptr_t)i * PM_CACHELINE;
	for (i = 0; i < PM_MRU_LINES && j < PM_MRU_LINES; i++) {
		if (old[i] != PM_NO_LINE && (old[i] < first || old[i] > last))
			mru[j++] = old[i];
	}
	while (j < PM_MRU_LINES)
		mru[j++] = PM_NO_LINE;
}

/* the general case, n > 1 lines from first (kept out of line so the one
 * line case saves no registers) */
static __attribute__((noinline)) void
count_lines(struct pm_tstats *t, uintptr_t first, uintptr_t last, size_t len)
{
	uintptr_t n = (last - first) / PM_CACHELINE + 1;
	uintptr_t xp_first = first / PM_XPLINE, xp_last = last / PM_XPLINE;

	ctr_add(&t->s.lines_flushed, n);
	ctr_add(&t->s.bytes_persisted, len);
	ctr_add(&t->s.reflushes, mru_reflushes(t->mru, first, n));
	/* one per XPLine change along the flushed lines */
	ctr_add(&t->s.xplines,
		(xp_first != t->last_xpline) + (xp_last - xp_first));
	t->last_xpline = xp_last;
	mru_update(t->mru, first, n);
}

void pm_stats_count_remote(struct pm_tstats *t, int map_node, const void *addr,
			   size_t len)
{
	uintptr_t first = (uintptr_t)addr & ~(uintptr_t)(PM_CACHELINE - 1);
	uintptr_t last = ((uintptr_t)addr + len - 1) &
			 ~(uintptr_t)(PM_CACHELINE - 1);

	if (map_node < 0 || t->node < 0 || map_node == t->node || !len)
		return;
	ctr_add(&t->s.remote_lines, (last - first) / PM_CACHELINE + 1);
}

void pm_thread_set_node(int node)
{
	pm_tls_stats.node = node;
}

void pm_stats_count_range(const void *addr, size_t len)
{
	struct pm_tstats *t;
	uintptr_t first, last;

	if (len == 0)
		return;
	t = pm_stats_self();
	first = (uintptr_t)addr & ~(uintptr_t)(PM_CACHELINE - 1);
	last = ((uintptr_t)addr + len - 1) & ~(uintptr_t)(PM_CACHELINE - 1);
	if (first == last)
		pm_stats_count_line(t, first, len);
	else
		count_lines(t, first, last, len);
}

void pm_stats_count_fence(void)
{
	ctr_add(&pm_stats_self()->s.fences, 1);
}

void pm_stats_get(struct pm_stats *ret_stats)
{
	*ret_stats = pm_tls_stats.s;
}

void pm_stats_reset(void)
{
	struct pm_tstats *t = &pm_tls_stats;
	int i;

	__atomic_store_n(&t->s.lines_flushed, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->s.fences, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->s.reflushes, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->s.xplines, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->s.bytes_persisted, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->s.remote_lines, 0, __ATOMIC_RELAXED);
	for (i = 0; i < PM_MRU_LINES; i++)
		t->mru[i] = PM_NO_LINE;
	t->last_xpline = PM_NO_LINE;
}

void pm_stats_get_global(struct pm_stats *ret_stats)
{
	struct pm_tstats *t;

	memset(ret_stats, 0, sizeof(*ret_stats));
	pthread_mutex_lock(&stats_lock);
	*ret_stats = stats_exited;
	for (t = stats_threads; t; t = t->next)
		stats_sum(ret_stats, &t->s);
	pthread_mutex_unlock(&stats_lock);
}
