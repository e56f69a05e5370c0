/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmabench workloads: threadtest, prod-con, shbench, larson and large, each
 * a resumable stream of ops over numbered destination slots (an op is one
 * allocation or one free), plus the futex-based events and barriers they
 * share. Thread i owns slots [i * BENCH_SLOTS_PER_THREAD, (i + 1) * ...);
 * larson's slot sets ("bins") move between threads every epoch: at a
 * barrier (larson) or by swapping with the one spare bin (larson-q, no
 * thread ever waits for another).
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define WL_SPINS 256
#define WL_SMALL_MIN 64
#define WL_SMALL_MAX 400
#define WL_LARGE_MIN (256ULL << 10)
#define WL_LARGE_MAX (4ULL << 20)
#define WL_LARGE_SLOTS 8 /* live large blocks per thread at most */
#define WL_PC_BATCH 256 /* prod-con: blocks handed over at once */
#define WL_PC_RING 4 /* prod-con: batches in flight per pair */
#define WL_LARSON_EPOCH 2048 /* larson: ops between bin hand-overs */

_Static_assert(WL_PC_BATCH *WL_PC_RING <= BENCH_SLOTS_PER_THREAD,
	       "prod-con ring must fit the producer's slots");

/* prod-con: batch states of one producer/consumer pair */
struct wl_ring {
	struct wl_event full[WL_PC_RING]; /* 1: produced, 0: consumed */
} __attribute__((aligned(64)));

/* the barrier in its own line (padding wanted) */
/* NOLINTNEXTLINE(clang-analyzer-optin.performance.Padding) */
struct wl_shared {
	unsigned nthreads;
	struct wl_ring *rings; /* one per pair */
	struct wl_barrier epoch __attribute__((aligned(64))); /* own line */
	/* larson-q: the one bin (of nthreads + 1) no thread holds */
	_Atomic unsigned spare_bin __attribute__((aligned(64)));
};

/* ------------------------------------------------------------ sync */

static long wl_futex(_Atomic uint32_t *word, int op, uint32_t val,
		     const struct timespec *ts)
{
	return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

/* the calling thread's time spent waiting in wl_event_wait (ns) */
static __thread uint64_t wl_waited_ns;

uint64_t wl_wait_ns(void)
{
	return wl_waited_ns;
}

void wl_wait_reset(void)
{
	wl_waited_ns = 0;
}

static int wl_event_wait_slow(struct wl_event *ev, uint32_t old,
			      _Atomic int *abort)
{
	/* time-bounded sleeps so that an abort is noticed */
	const struct timespec ts = { .tv_sec = 0, .tv_nsec = 1000000 };
	int i;

	for (i = 0; i < WL_SPINS; i++) {
		if (atomic_load_explicit(&ev->val, memory_order_acquire) != old)
			return 0;
		__builtin_ia32_pause();
	}
	atomic_fetch_add(&ev->waiters, 1);
	while (atomic_load(&ev->val) == old && !atomic_load(abort))
		(void)wl_futex(&ev->val, FUTEX_WAIT_PRIVATE, old, &ts);
	atomic_fetch_sub(&ev->waiters, 1);
	return atomic_load(&ev->val) != old ? 0 : -ECANCELED;
}

int wl_event_wait(struct wl_event *ev, uint32_t old, _Atomic int *abort)
{
	uint64_t t0;
	int rc;

	/* no clock read when there is nothing to wait for */
	if (atomic_load_explicit(&ev->val, memory_order_acquire) != old)
		return 0;
	t0 = bench_now_ns();
	rc = wl_event_wait_slow(ev, old, abort);
	wl_waited_ns += bench_now_ns() - t0;
	return rc;
}

void wl_event_set(struct wl_event *ev, uint32_t val)
{
	atomic_store(&ev->val, val);
	/* a waiter registers before it re-checks val, so none is missed */
	if (atomic_load(&ev->waiters))
		(void)wl_futex(&ev->val, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}

void wl_barrier_init(struct wl_barrier *b, unsigned nthreads,
		     _Atomic int *abort)
{
	atomic_init(&b->count, 0);
	atomic_init(&b->gen.val, 0);
	atomic_init(&b->gen.waiters, 0);
	b->nthreads = nthreads;
	b->abort = abort;
}

int wl_barrier_wait(struct wl_barrier *b, wl_serial_fn fn, void *arg)
{
	uint32_t gen = atomic_load(&b->gen.val);

	if (atomic_fetch_add(&b->count, 1) + 1 == b->nthreads) {
		/* everyone else is waiting: fn sees a quiescent run */
		if (fn)
			fn(arg);
		atomic_store(&b->count, 0);
		wl_event_set(&b->gen, gen + 1);
		return 0;
	}
	return wl_event_wait(&b->gen, gen, b->abort);
}

int wl_shared_new(unsigned os_threads, _Atomic int *abort,
		  struct wl_shared **ret_shared)
{
	struct wl_shared *sh;
	unsigned npairs = (os_threads + 1) / 2;

	sh = aligned_alloc(64, sizeof(*sh));
	if (!sh)
		return -ENOMEM;
	memset(sh, 0, sizeof(*sh));
	sh->rings = aligned_alloc(64, npairs * sizeof(*sh->rings));
	if (!sh->rings) {
		free(sh);
		return -ENOMEM;
	}
	memset(sh->rings, 0, npairs * sizeof(*sh->rings));
	sh->nthreads = os_threads;
	wl_barrier_init(&sh->epoch, os_threads, abort);
	/* thread i starts with bin i; bin os_threads is spare */
	atomic_init(&sh->spare_bin, os_threads);
	*ret_shared = sh;
	return 0;
}

void wl_shared_delete(struct wl_shared *shared)
{
	if (!shared)
		return;
	free(shared->rings);
	free(shared);
}

/* ------------------------------------------------------------ helpers */

static inline uint64_t wl_rand(struct wl_thread *t)
{
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return t->rng * 0x2545f4914f6cdd1dULL;
}

static inline size_t wl_rand_range(struct wl_thread *t, size_t lo, size_t hi)
{
	return lo + (size_t)(wl_rand(t) % (hi - lo + 1));
}

static inline size_t wl_base(unsigned id)
{
	return (size_t)id * bench_slots_per_thread;
}

static int wl_fail(struct wl_thread *t, int rc, const char *what)
{
	if (!t->err) {
		t->err = rc;
		snprintf(t->errmsg, sizeof(t->errmsg), "%s: %s (%s)", what,
			 t->alloc->errormsg(), strerror(-rc));
	}
	atomic_store(t->abort, 1);
	return rc;
}

static inline int wl_alloc(struct wl_thread *t, size_t slot, size_t size)
{
	int rc = t->alloc->alloc(t->ctx, slot, size);

	return rc < 0 ? wl_fail(t, rc, "alloc") : 0;
}

static inline int wl_free(struct wl_thread *t, size_t slot)
{
	int rc = t->alloc->free(t->ctx, slot);

	return rc < 0 ? wl_fail(t, rc, "free") : 0;
}

static inline int wl_aborted(struct wl_thread *t)
{
	return atomic_load_explicit(t->abort, memory_order_relaxed);
}

/* ------------------------------------------------------------ workloads */

/*
 * threadtest: allocate the worker's slots' worth of 64 B blocks, free them
 * in the same order, repeat (Hoard's threadtest, one batch per round):
 * 1024 per worker, or (threadtest-h, the shape of Hoard's own defaults
 * as the Ralloc suite runs it) 30000 objects divided among the workers.
 */
static int wl_threadtest(struct wl_thread *t, uint64_t nops)
{
	const uint64_t n = bench_slots_per_thread;
	size_t base = wl_base(t->id);
	uint64_t i;
	int rc;

	for (i = 0; i < nops && !wl_aborted(t); i++) {
		if (t->pos < n)
			rc = wl_alloc(t, base + t->pos, 64);
		else
			rc = wl_free(t, base + t->pos - n);
		if (rc < 0)
			return rc;
		t->pos = (t->pos + 1) % (2 * n);
	}
	return 0;
}

/*
 * shbench-like: a random slot of the thread's own; free it if live,
 * otherwise allocate a random 64-400 B block into it. Frees come in random
 * order against a working set of about half the slots.
 */
static int wl_shbench(struct wl_thread *t, uint64_t nops)
{
	size_t base = wl_base(t->id);
	size_t slot;
	uint64_t i;
	int rc;

	for (i = 0; i < nops && !wl_aborted(t); i++) {
		slot = base + wl_rand(t) % BENCH_SLOTS_PER_THREAD;
		if (t->alloc->is_live(t->ctx, slot))
			rc = wl_free(t, slot);
		else
			rc = wl_alloc(t, slot,
				      wl_rand_range(t, WL_SMALL_MIN,
						    WL_SMALL_MAX));
		if (rc < 0)
			return rc;
	}
	return 0;
}

/*
 * sh6bench (MicroQuill's SmartHeap benchmark, as in the Ralloc suite):
 * sizes from size_base down by halves, size_base growing by 3/2 + 1 up to
 * WL_SH6_MAX (small sizes 250 times, below 1000 B 50 times each, so most
 * requests are small); the worker's slots fill in order, skipping the
 * fifth kept from the last round; when full, the slots below the new
 * kept fifth are freed in allocation order and those above it in
 * reverse. Sizes below 64 B get the smallest class of every allocator
 * here alike. State: st[0] next slot, st[1..2] the kept fifth [start,
 * end), st[3] size_base, st[4] size, st[5] repeats left of this size;
 * pos: 0 allocating, 1 freeing the bottom, 2 freeing the top.
 */
#define WL_SH6_MAX 400

static uint64_t sh6_repeats(uint64_t size)
{
	uint64_t n = 1;

	if (size < 10000)
		n = 10;
	if (size < 1000)
		n *= 5;
	if (size < 100)
		n *= 5;
	return n;
}

/* the next size of the sequence (st[3..5]) */
static void sh6_next_size(struct wl_thread *t)
{
	uint64_t *st = t->st;

	if (--st[5])
		return;
	st[4] /= 2;
	if (!st[4]) {
		st[3] = st[3] * 3 / 2 + 1;
		if (st[3] >= WL_SH6_MAX)
			st[3] = 1;
		st[4] = st[3];
	}
	st[5] = sh6_repeats(st[4]);
}

static int wl_sh6bench(struct wl_thread *t, uint64_t nops)
{
	const uint64_t n = bench_slots_per_thread;
	size_t base = wl_base(t->id);
	uint64_t *st = t->st, i;
	int rc;

	if (!st[3]) { /* first call: nothing kept yet */
		st[1] = st[2] = n;
		st[3] = st[4] = 1;
		st[5] = sh6_repeats(1);
	}
	for (i = 0; i < nops && !wl_aborted(t); i++) {
		if (t->pos == 1 && st[0] >= st[1]) { /* bottom done */
			t->pos = 2;
			st[0] = n;
		}
		if (t->pos == 2 && st[0] <= st[2]) { /* top done */
			t->pos = 0;
			st[0] = 0;
		}
		if (t->pos == 1) {
			rc = wl_free(t, base + st[0]++);
		} else if (t->pos == 2) {
			rc = wl_free(t, base + --st[0]);
		} else {
			if (st[0] == st[1]) /* never over a kept slot */
				st[0] = st[2];
			rc = wl_alloc(t, base + st[0]++, st[4]);
			sh6_next_size(t);
			if (st[0] == st[1])
				st[0] = st[2];
			if (st[0] >= n) { /* full: keep the next fifth */
				st[1] = st[2] >= n ? 0 : st[2];
				st[2] = st[1] + n / 5 > n ? n : st[1] + n / 5;
				st[0] = 0;
				t->pos = 1;
			}
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* larson: one step on a random slot of the current bin; returns ops done */
static int wl_larson_step(struct wl_thread *t, size_t base, uint64_t budget)
{
	size_t slot = base + wl_rand(t) % BENCH_SLOTS_PER_THREAD;
	size_t size = wl_rand_range(t, WL_SMALL_MIN, WL_SMALL_MAX);
	int ops = 0;

	if (t->alloc->is_live(t->ctx, slot)) {
		if (wl_free(t, slot) < 0)
			return t->err;
		ops++;
		if (budget < 2)
			return ops;
	}
	if (wl_alloc(t, slot, size) < 0)
		return t->err;
	return ops + 1;
}

/*
 * larson: replace random blocks (free + allocate 64-400 B) in a bin of
 * slots (bin b: slots [b * BENCH_SLOTS_PER_THREAD, ...)); every
 * WL_LARSON_EPOCH ops each thread moves to another bin, so blocks are freed
 * by threads that did not allocate them. t->pos is the ops done in the
 * epoch. With a barrier (larson), all threads meet and each takes the next
 * thread's bin; t->aux is the epoch. Without (larson-q), there is one bin
 * more than threads, and a thread swaps its bin with the spare one, the one
 * released last by another thread (or by itself), so no thread waits for
 * another, as in the classic larson where a thread hands its bins to the
 * thread it starts; t->aux is the bin held + 1 (0: not started, bin t->id).
 */
static inline int wl_larson_run(struct wl_thread *t, uint64_t nops, int barrier)
{
	struct wl_shared *sh = t->shared;
	unsigned bin;
	int rc;

	if (!barrier && !t->aux)
		t->aux = t->id + 1;
	while (nops && !wl_aborted(t)) {
		bin = barrier ? (unsigned)((t->id + t->aux) % sh->nthreads) :
				(unsigned)t->aux - 1;
		rc = wl_larson_step(t, wl_base(bin), WL_LARSON_EPOCH - t->pos);
		if (rc < 0)
			return rc;
		t->pos += (uint64_t)rc;
		nops -= (uint64_t)rc;
		if (t->pos < WL_LARSON_EPOCH)
			continue;
		t->pos = 0;
		if (!barrier) {
			t->aux = atomic_exchange(&sh->spare_bin, bin) + 1;
			continue;
		}
		t->aux++;
		rc = wl_barrier_wait(&sh->epoch, NULL, NULL);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int wl_larson(struct wl_thread *t, uint64_t nops)
{
	return wl_larson_run(t, nops, 1);
}

static int wl_larson_q(struct wl_thread *t, uint64_t nops)
{
	return wl_larson_run(t, nops, 0);
}

/*
 * prod-con: thread 2p produces 64 B blocks into batches of its pair's ring,
 * thread 2p+1 frees them (every free is a cross-thread free). Both sides
 * run the same op count, so the ring is empty between phases.
 */
static int wl_prodcon(struct wl_thread *t, uint64_t nops)
{
	struct wl_ring *ring = &t->shared->rings[t->id / 2];
	int producer = !(t->id & 1);
	size_t base = wl_base(t->id & ~1u);
	uint64_t batch, idx, i;
	int rc = 0;

	for (i = 0; i < nops && !wl_aborted(t); i++, t->pos++) {
		batch = (t->pos / WL_PC_BATCH) % WL_PC_RING;
		idx = t->pos % WL_PC_BATCH;
		/* a producer waits for an empty batch, a consumer a full one */
		if (idx == 0)
			rc = wl_event_wait(&ring->full[batch], producer,
					   t->abort);
		if (rc < 0)
			return rc;
		if (producer)
			rc = wl_alloc(t, base + batch * WL_PC_BATCH + idx, 64);
		else
			rc = wl_free(t, base + batch * WL_PC_BATCH + idx);
		if (rc < 0)
			return rc;
		if (idx == WL_PC_BATCH - 1)
			wl_event_set(&ring->full[batch], producer);
	}
	return 0;
}

/*
 * large: a random one of WL_LARGE_SLOTS slots; free it if live, otherwise
 * allocate a random 256 KiB - 4 MiB block into it.
 */
static int wl_large(struct wl_thread *t, uint64_t nops)
{
	size_t base = wl_base(t->id);
	size_t slot;
	uint64_t i;
	int rc;

	for (i = 0; i < nops && !wl_aborted(t); i++) {
		slot = base + wl_rand(t) % WL_LARGE_SLOTS;
		if (t->alloc->is_live(t->ctx, slot))
			rc = wl_free(t, slot);
		else
			rc = wl_alloc(t, slot,
				      wl_rand_range(t, WL_LARGE_MIN,
						    WL_LARGE_MAX));
		if (rc < 0)
			return rc;
	}
	return 0;
}

static const struct bench_workload wl_threadtest_def = {
	.name = "threadtest",
	.sizes = "64",
	.threads_mult = 1,
	.op_divisor = 1,
	.quantum = 1,
	.run = wl_threadtest,
};
static const struct bench_workload wl_threadtest_h_def = {
	.name = "threadtest-h",
	.sizes = "64",
	.threads_mult = 1,
	.op_divisor = 1,
	.quantum = 1,
	.slots_total = 30000,
	.run = wl_threadtest,
};
static const struct bench_workload wl_sh6bench_def = {
	.name = "sh6bench",
	.sizes = "1-400",
	.threads_mult = 1,
	.op_divisor = 1,
	.quantum = 1,
	.slots_total = 100000,
	.run = wl_sh6bench,
};
static const struct bench_workload wl_prodcon_def = {
	.name = "prod-con",
	.sizes = "64",
	.threads_mult = 2,
	.op_divisor = 1,
	.quantum = WL_PC_BATCH,
	.run = wl_prodcon,
};
static const struct bench_workload wl_shbench_def = {
	.name = "shbench",
	.sizes = "64-400",
	.threads_mult = 1,
	.op_divisor = 1,
	.quantum = 1,
	.run = wl_shbench,
};
static const struct bench_workload wl_larson_def = {
	.name = "larson",
	.sizes = "64-400",
	.threads_mult = 1,
	.op_divisor = 1,
	.quantum = WL_LARSON_EPOCH,
	.run = wl_larson,
};
static const struct bench_workload wl_larson_q_def = {
	.name = "larson-q",
	.sizes = "64-400",
	.threads_mult = 1,
	.op_divisor = 1,
	.quantum = WL_LARSON_EPOCH,
	.extra_bins = 1,
	.run = wl_larson_q,
};
static const struct bench_workload wl_large_def = {
	.name = "large",
	.sizes = "256K-4M",
	.threads_mult = 1,
	.op_divisor = 8,
	.quantum = 1,
	.run = wl_large,
};

const struct bench_workload *const bench_workloads[] = {
	&wl_threadtest_def, &wl_threadtest_h_def, &wl_sh6bench_def,
	&wl_prodcon_def,    &wl_shbench_def,	  &wl_larson_def,
	&wl_larson_q_def,   &wl_large_def,	  NULL,
};

const struct bench_workload *bench_workload_find(const char *name)
{
	unsigned i;

	for (i = 0; bench_workloads[i]; i++)
		if (!strcmp(bench_workloads[i]->name, name))
			return bench_workloads[i];
	return NULL;
}
