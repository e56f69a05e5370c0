/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmabench run driver: one row is a fresh pool, N worker threads running a
 * workload's warm-up ops, then exactly the timed ops. The last thread to
 * reach each phase barrier stamps the clock and the lib/pmem counters while
 * the others wait, so the deltas cover the timed phase and nothing else.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* what the threads of one run share with the driver */
struct bench_run {
	const struct bench_workload *wl;
	const struct bench_alloc *alloc;
	void *ctx;
	uint64_t warm_quota, quota; /* ops per thread */
	struct wl_barrier phase; /* warm-up -> timed -> done */
	_Atomic int abort;
	int pin; /* cfg->pin */
	uint64_t t0, t1;
	struct pma_pm_counters s0, s1;
	int64_t ckpt0, ckpt1;
};

struct bench_worker {
	struct wl_thread t;
	struct bench_run *run;
	pthread_t tid;
	uint64_t wait_ns; /* waited in the timed ops (wl_wait_ns) */
};

static int64_t run_checkpoints(const struct bench_run *run)
{
	return run->alloc->checkpoints ? run->alloc->checkpoints(run->ctx) : -1;
}

static void run_snap_start(void *arg)
{
	struct bench_run *run = arg;

	run->ckpt0 = run_checkpoints(run);
	pma_pm_counters(&run->s0, 0);
	run->t0 = bench_now_ns();
}

static void run_snap_end(void *arg)
{
	struct bench_run *run = arg;

	run->t1 = bench_now_ns();
	pma_pm_counters(&run->s1, 0);
	run->ckpt1 = run_checkpoints(run);
}

/* run the calling thread on the i-th (mod count) CPU the process may
 * use, so a row's threads do not migrate (every allocator alike); best
 * effort: a failure leaves the thread where it is */
static void pin_self(unsigned i)
{
	cpu_set_t allowed, one;
	int c, n, k = 0;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return;
	n = CPU_COUNT(&allowed);
	if (n <= 0)
		return;
	i %= (unsigned)n;
	for (c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &allowed) || (unsigned)k++ != i)
			continue;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		(void)pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
		return;
	}
}

static void *run_worker(void *arg)
{
	struct bench_worker *w = arg;
	struct bench_run *run = w->run;
	int rc;

	if (run->pin)
		pin_self(w->t.id);

	rc = run->wl->run(&w->t, run->warm_quota);
	/* the last thread in stamps the clock while the others wait */
	(void)wl_barrier_wait(&run->phase, run_snap_start, run);
	wl_wait_reset();
	if (rc == 0)
		rc = run->wl->run(&w->t, run->quota);
	w->wait_ns = wl_wait_ns(); /* not the phase barrier's wait */
	(void)wl_barrier_wait(&run->phase, run_snap_end, run);
	if (rc < 0 && !w->t.err) {
		w->t.err = rc;
		snprintf(w->t.errmsg, sizeof(w->t.errmsg), "%s", strerror(-rc));
	}
	return NULL;
}

/* ops per thread: total / threads, a multiple of the workload's quantum */
size_t bench_slots_per_thread = BENCH_SLOTS_PER_THREAD;

static uint64_t run_quota(const struct bench_workload *wl, uint64_t total,
			  unsigned os_threads)
{
	uint64_t q = total / wl->op_divisor / os_threads;

	q -= q % wl->quantum;
	return q ? q : wl->quantum;
}

static int run_threads(struct bench_run *run, struct bench_worker *w,
		       unsigned n)
{
	unsigned i, started;
	int rc = 0;

	for (started = 0; started < n; started++) {
		rc = -pthread_create(&w[started].tid, NULL, run_worker,
				     &w[started]);
		if (rc < 0)
			break;
	}
	if (rc < 0) /* the started ones leave their barrier on abort */
		atomic_store(&run->abort, 1);
	for (i = 0; i < started; i++)
		pthread_join(w[i].tid, NULL);
	return rc;
}

static void run_collect(const struct bench_run *run,
			const struct bench_worker *w, unsigned n,
			struct bench_result *res)
{
	uint64_t waited = 0;
	unsigned i;

	for (i = 0; i < n; i++) {
		waited += w[i].wait_ns;
		if (w[i].t.err && w[i].t.err != -ECANCELED) {
			res->err = w[i].t.err;
			memcpy(res->errmsg, w[i].t.errmsg, sizeof(res->errmsg));
			return;
		}
	}
	res->ops = run->quota * n;
	res->secs = (double)(run->t1 - run->t0) / 1e9;
	res->ops_per_sec = res->secs > 0 ? (double)res->ops / res->secs : 0;
	res->pm.lines_flushed = run->s1.lines_flushed - run->s0.lines_flushed;
	res->pm.fences = run->s1.fences - run->s0.fences;
	res->pm.reflushes = run->s1.reflushes - run->s0.reflushes;
	res->pm.xplines = run->s1.xplines - run->s0.xplines;
	res->pm.remote_lines = run->s1.remote_lines - run->s0.remote_lines;
	res->checkpoints =
		run->ckpt0 < 0 || run->ckpt1 < 0 ? -1 : run->ckpt1 - run->ckpt0;
	if (run->t1 > run->t0)
		res->wait_frac = (double)waited / (double)n /
				 (double)(run->t1 - run->t0);
}

static int run_once_in(const struct bench_cfg *cfg, struct bench_run *run,
		       struct bench_worker *w, unsigned n, void *ctx,
		       struct bench_result *res)
{
	struct wl_shared *shared;
	unsigned i;
	int rc;

	rc = wl_shared_new(n, &run->abort, &shared);
	if (rc < 0)
		return rc;
	run->alloc = res->alloc;
	run->ctx = ctx;
	for (i = 0; i < n; i++) {
		w[i].run = run;
		w[i].t.id = i;
		w[i].t.alloc = res->alloc;
		w[i].t.ctx = ctx;
		w[i].t.shared = shared;
		w[i].t.abort = &run->abort;
		/* the same streams for every allocator */
		w[i].t.rng = (cfg->seed + 1) * 0x9e3779b97f4a7c15ULL + i + 1;
	}
	rc = run_threads(run, w, n);
	if (rc == 0)
		run_collect(run, w, n, res);
	wl_shared_delete(shared);
	return rc;
}

/* one measurement on a fresh pool; failures land in res->err */
static void run_once(const struct bench_cfg *cfg,
		     const struct bench_workload *wl, unsigned threads,
		     struct bench_result *res)
{
	unsigned n = threads * wl->threads_mult;
	struct bench_worker *w;
	struct bench_run run;
	void *ctx;
	int rc;

	memset(&run, 0, sizeof(run));
	run.wl = wl;
	run.pin = cfg->pin;
	run.quota = run_quota(wl, cfg->ops, n);
	run.warm_quota = run_quota(wl, cfg->warmup, n);
	wl_barrier_init(&run.phase, n, &run.abort);
	w = calloc(n, sizeof(*w));
	if (!w) {
		res->err = -ENOMEM;
		return;
	}
	bench_slots_per_thread = wl->slots_total ? wl->slots_total / n :
						   BENCH_SLOTS_PER_THREAD;
	rc = res->alloc->open(
		cfg->dir, cfg->pool_size,
		(size_t)(n + wl->extra_bins) * bench_slots_per_thread, &ctx);
	if (rc < 0) {
		snprintf(res->errmsg, sizeof(res->errmsg),
			 "cannot create pool: %s", res->alloc->errormsg());
		res->err = rc;
		free(w);
		return;
	}
	rc = run_once_in(cfg, &run, w, n, ctx, res);
	if (rc < 0 && !res->err)
		res->err = rc;
	res->alloc->close(ctx);
	free(w);
}

static int res_cmp(const void *a, const void *b)
{
	const struct bench_result *x = a, *y = b;

	return (x->ops_per_sec > y->ops_per_sec) -
	       (x->ops_per_sec < y->ops_per_sec);
}

/*
 * cfg->repeat rounds, each running every allocator once, in turn (so a
 * slow phase of the machine hits all of them, not one allocator's runs);
 * each allocator's result is its run with the median throughput. A
 * failed run ends the allocator's row with that error.
 */
void bench_run_group(const struct bench_cfg *cfg,
		     const struct bench_workload *wl, unsigned threads,
		     const struct bench_alloc *const *allocs, unsigned nallocs,
		     struct bench_result *ret)
{
	struct bench_result runs[BENCH_NALLOCS][16]; /* repeat <= 15 */
	unsigned r, i, n = cfg->repeat;
	int failed[BENCH_NALLOCS] = { 0 };

	memset(runs, 0, sizeof(runs));
	for (r = 0; r < n; r++)
		for (i = 0; i < nallocs; i++) {
			if (failed[i])
				continue;
			runs[i][r].alloc = allocs[i];
			run_once(cfg, wl, threads, &runs[i][r]);
			if (runs[i][r].err) {
				failed[i] = 1;
				ret[i] = runs[i][r];
			}
		}
	for (i = 0; i < nallocs; i++) {
		if (failed[i])
			continue;
		qsort(runs[i], n, sizeof(runs[i][0]), res_cmp);
		ret[i] = runs[i][n / 2];
	}
}
