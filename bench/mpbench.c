/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpbench: one pool shared by N processes (each a masked open of its own
 * heap region, pma_config_set_region_mask) against the same N workers as
 * threads of one process (a whole open of the same kind of pool), side by
 * side in one run: what sharing a pool across processes costs at library
 * speed (no daemon in the way: pmad hands out the same opens).
 *   threadtest  each worker allocates its 1024 slots' worth of 64 B
 *               blocks, frees them in order, again (Hoard's threadtest)
 *   larson      each worker picks random words of one table shared by
 *               all: allocates (64-400 B) into an empty one, frees the
 *               block of a full one, whoever made it (in processes, a
 *               block of another region goes through the free rings)
 * Prints the persistence mode and, per row, ops/s of both, their ratio,
 * and flushes and fences per op (lib/pmem counters, summed over the
 * processes). Median of --repeat runs.
 *
 * --pmad PMAD: the processes get their regions from pmad (libpmad, a
 * pmad started per run on a socket in a temporary state dir that holds
 * the pool) instead of opening the pool themselves: issue 17's figure.
 * Each row also reports pmad_pool_open's round trip (median over the
 * processes) and a dead client's recovery as the next client sees it
 * (kill -9 of a client holding a region that it allocated in, then the
 * time until another client's pmad_pool_open of the pool returns).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pmad.h"
#include "pmalloc.h"

#define SLOTS 1024U /* per worker */
#define MAX_WORKERS 16U
#define REGION_SIZE (64ULL << 20)

struct shared {
	_Atomic unsigned ready;
	_Atomic int go;
	_Atomic unsigned done; /* workers finished; the last sets t_end */
	uint64_t t_end;
	_Atomic int claim[MAX_WORKERS * SLOTS];
	struct pma_pm_counters pm[MAX_WORKERS];
	uint64_t ops[MAX_WORKERS];
	uint64_t open_ns[MAX_WORKERS]; /* pmad_pool_open's round trip */
	int failed;
};

struct opts {
	const char *path;
	const char *bench;
	unsigned procs[8], nprocs;
	uint64_t ops;
	unsigned repeat;
	const char *pmad; /* --pmad: the daemon's binary */
	char dir[64]; /* its state dir (the pool is dir/mp.pool) */
	char sock[96];
};

static struct shared *sh;
static uint64_t root;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int threadtest(struct pma_heap *h, uint64_t *w, unsigned id,
		      uint64_t ops)
{
	uint64_t done = 0, *mine = w + (uint64_t)id * SLOTS;
	unsigned i;

	while (done < ops) {
		for (i = 0; i < SLOTS; i++)
			if (pma_malloc_to(h, 64, &mine[i]) < 0)
				return -1;
		for (i = 0; i < SLOTS; i++)
			if (pma_free_from(h, &mine[i]) < 0)
				return -1;
		done += 2ULL * SLOTS;
	}
	return 0;
}

static int larson(struct pma_heap *h, uint64_t *w, unsigned id, unsigned n,
		  uint64_t ops)
{
	uint64_t done = 0, rnd = 0x9e3779b97f4a7c15ULL * (id + 1);
	unsigned k;
	int zero, rc;

	while (done < ops) {
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		k = (unsigned)(rnd % ((uint64_t)n * SLOTS));
		zero = 0;
		if (!atomic_compare_exchange_strong(&sh->claim[k], &zero, 1))
			continue;
		rc = __atomic_load_n(&w[k], __ATOMIC_ACQUIRE) ?
			     pma_free_from(h, &w[k]) :
			     pma_malloc_to(h, 64 + rnd % 337, &w[k]);
		atomic_store_explicit(&sh->claim[k], 0, memory_order_release);
		if (rc < 0)
			return -1;
		done++;
	}
	return 0;
}

struct worker {
	struct pma_heap *heap;
	unsigned id, n;
	const struct opts *o;
};

static void *work(void *arg)
{
	struct worker *wk = arg;
	uint64_t *w = pma_direct(wk->heap, root);
	int rc;

	atomic_fetch_add(&sh->ready, 1);
	while (!atomic_load(&sh->go))
		sched_yield();
	pma_pm_counters(&sh->pm[wk->id], 1);
	rc = !strcmp(wk->o->bench, "threadtest") ?
		     threadtest(wk->heap, w, wk->id, wk->o->ops) :
		     larson(wk->heap, w, wk->id, wk->n, wk->o->ops);
	if (rc < 0) {
		fprintf(stderr, "mpbench: worker %u: %s\n", wk->id,
			pma_errormsg());
		sh->failed = 1;
	}
	{
		struct pma_pm_counters end;

		pma_pm_counters(&end, 1);
		sh->pm[wk->id].lines_flushed =
			end.lines_flushed - sh->pm[wk->id].lines_flushed;
		sh->pm[wk->id].fences = end.fences - sh->pm[wk->id].fences;
	}
	sh->ops[wk->id] = wk->o->ops;
	if (atomic_fetch_add(&sh->done, 1) + 1 == wk->n)
		sh->t_end = now_ns();
	/* a process that is done still applies what the others free of
	 * its blocks (free rings) until they are done too */
	while (atomic_load(&sh->done) < wk->n)
		if (pma_heap_sync(wk->heap) == 0)
			sched_yield();
	return NULL;
}

static int make_pool(const struct opts *o, unsigned regions)
{
	struct pma_config *cfg = NULL;
	struct pma_heap *h = NULL;
	int rc;

	unlink(o->path);
	if (pma_config_new(&cfg) < 0)
		return -1;
	rc = pma_config_set_regions(cfg, regions);
	if (rc == 0)
		rc = pma_heap_create_cfg(o->path, regions * REGION_SIZE, cfg,
					 &h);
	pma_config_delete(&cfg);
	if (rc == 0)
		rc = pma_root(h, (size_t)MAX_WORKERS * SLOTS * 8, &root);
	if (rc < 0) {
		fprintf(stderr, "mpbench: %s: %s\n", o->path, pma_errormsg());
		return -1;
	}
	pma_heap_close(h);
	return 0;
}

/* a child's heap from pmad: its round trip into sh->open_ns[id] */
static int open_pmad(const struct opts *o, unsigned id,
		     struct pmad_client **ret_c, struct pma_heap **ret)
{
	uint64_t t0 = now_ns();
	int rc = pmad_connect(o->sock, ret_c);

	if (rc == 0) {
		rc = pmad_pool_open(*ret_c, "mp", ret);
		if (rc < 0)
			pmad_disconnect(*ret_c);
	}
	sh->open_ns[id] = now_ns() - t0;
	if (rc < 0)
		fprintf(stderr, "mpbench: pmad open: %s\n", pmad_errormsg());
	return rc;
}

static int open_heap(const char *path, uint64_t mask, struct pma_heap **ret)
{
	struct pma_config *cfg = NULL;
	int rc;

	if (pma_config_new(&cfg) < 0)
		return -1;
	rc = pma_config_set_region_mask(cfg, mask);
	if (rc == 0)
		rc = pma_heap_open_cfg(path, cfg, ret);
	pma_config_delete(&cfg);
	if (rc < 0)
		fprintf(stderr, "mpbench: open: %s\n", pma_errormsg());
	return rc;
}

/* pmad on o->sock serving o->dir (the pool is there): its pid, or -1 */
static pid_t pmad_start(const struct opts *o)
{
	struct pmad_client *c = NULL;
	pid_t pid = fork();
	int fd, i;

	if (pid == 0) {
		fd = open("/dev/null", O_WRONLY);
		if (fd >= 0)
			(void)dup2(fd, 2);
		execl(o->pmad, "pmad", "--foreground", "--socket", o->sock,
		      "--state-dir", o->dir, (char *)NULL);
		_exit(127);
	}
	for (i = 0; pid > 0 && i < 1000; i++) {
		if (pmad_connect(o->sock, &c) == 0) {
			pmad_disconnect(c);
			return pid;
		}
		usleep(10000);
	}
	fprintf(stderr, "mpbench: %s does not serve %s\n", o->pmad, o->sock);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return -1;
}

static void pmad_stop(pid_t pid)
{
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

/*
 * a dead client's recovery as the next client sees it: a child opens the
 * pool, allocates and frees (log records), says so and is killed; the
 * time from its death until this process's pmad_pool_open returns (pmad
 * recovers the dead one's region first). Microseconds, or -1.
 */
static double recovery_us(const struct opts *o)
{
	struct pmad_client *c = NULL;
	struct pma_heap *h = NULL;
	uint64_t t0, *w;
	int p[2], i, rc;
	char x = 0;
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		if (open_pmad(o, 0, &c, &h) < 0)
			_exit(2);
		w = pma_direct(h, root);
		for (i = 0; i < 1000; i++)
			(void)(w[i % SLOTS] ?
				       pma_free_from(h, &w[i % SLOTS]) :
				       pma_malloc_to(h, 64 + (unsigned)i % 300,
						     &w[i % SLOTS]));
		if (write(p[1], &x, 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	close(p[1]);
	rc = read(p[0], &x, 1) == 1 ? 0 : -1;
	close(p[0]);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	t0 = now_ns();
	for (i = 0; rc == 0 && i < 1000; i++) {
		rc = pmad_connect(o->sock, &c);
		if (rc == 0 && (rc = pmad_pool_open(c, "mp", &h)) < 0)
			pmad_disconnect(c);
		if (rc != -EBUSY)
			break;
		rc = 0;
		usleep(100);
	}
	if (rc < 0) {
		fprintf(stderr, "mpbench: open after a kill: %s\n",
			pmad_errormsg());
		return -1;
	}
	t0 = now_ns() - t0;
	(void)pmad_pool_close(c, h);
	pmad_disconnect(c);
	return (double)t0 / 1e3;
}

/* n worker processes: their own masked opens, or through pmad */
static void spawn(const struct opts *o, struct worker *wk, unsigned n,
		  pid_t *pid)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		pid[i] = fork();
		if (pid[i] == 0 && o->pmad) {
			struct pmad_client *c = NULL;

			if (open_pmad(o, i, &c, &wk[i].heap) < 0)
				_exit(2);
			(void)work(&wk[i]);
			if (pmad_pool_close(c, wk[i].heap) < 0)
				sh->failed = 1;
			pmad_disconnect(c);
			_exit(sh->failed ? 3 : 0);
		}
		if (pid[i] == 0) {
			if (open_heap(o->path, 1ULL << i, &wk[i].heap) < 0)
				_exit(2);
			(void)work(&wk[i]);
			pma_heap_close(wk[i].heap);
			_exit(sh->failed ? 3 : 0);
		}
	}
}

/* one run: ops/s; flushes and fences per op into *fl, *fe */
static double run(const struct opts *o, unsigned n, int procs,
		  const char **mode, double *fl, double *fe, double *rec_us)
{
	struct worker wk[MAX_WORKERS] = { 0 };
	pthread_t tid[MAX_WORKERS];
	struct pma_heap *h = NULL;
	unsigned regions = 1, i;
	uint64_t t0, t1, ops = 0, lines = 0, fences = 0;
	pid_t pid[MAX_WORKERS], pmad_pid = -1;
	int st;

	while (regions < n)
		regions *= 2;
	if (make_pool(o, regions) < 0)
		return -1;
	if (procs && o->pmad && (pmad_pid = pmad_start(o)) < 0)
		return -1;
	memset(sh, 0, sizeof(*sh));
	for (i = 0; i < n; i++) {
		wk[i].id = i;
		wk[i].n = n;
		wk[i].o = o;
	}
	if (!procs) {
		if (open_heap(o->path, 0, &h) < 0)
			return -1;
		*mode = pma_heap_persistence(h);
		for (i = 0; i < n; i++) {
			wk[i].heap = h;
			pthread_create(&tid[i], NULL, work, &wk[i]);
		}
	} else {
		spawn(o, wk, n, pid);
	}
	while (atomic_load(&sh->ready) < n)
		sched_yield();
	t0 = now_ns();
	atomic_store(&sh->go, 1);
	if (!procs) {
		for (i = 0; i < n; i++)
			pthread_join(tid[i], NULL);
		pma_heap_close(h);
	} else {
		for (i = 0; i < n; i++)
			if (waitpid(pid[i], &st, 0) != pid[i] ||
			    !WIFEXITED(st) || WEXITSTATUS(st))
				sh->failed = 1;
	}
	t1 = sh->t_end; /* the last worker's end (not the closes) */
	if (pmad_pid > 0 && !sh->failed && rec_us)
		*rec_us = recovery_us(o);
	if (pmad_pid > 0)
		pmad_stop(pmad_pid);
	if (sh->failed)
		return -1;
	for (i = 0; i < n; i++) {
		ops += sh->ops[i];
		lines += sh->pm[i].lines_flushed;
		fences += sh->pm[i].fences;
	}
	*fl = (double)lines / (double)ops;
	*fe = (double)fences / (double)ops;
	return (double)ops / ((double)(t1 - t0) / 1e9);
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: mpbench [-b threadtest|larson] [-n 1,2,...] "
		   "[--ops N] [--repeat R] [--pool PATH] [--pmad PMAD]\n"
		   "  N workers as threads of one process (a whole open) vs N "
		   "processes (one region each;\n"
		   "  with --pmad, granted by a pmad started per run through "
		   "libpmad)\n");
}

/* -n 1,2,...: 0 or -1 (said) */
static int parse_procs(char *arg, struct opts *o)
{
	char *s, *save = NULL;
	unsigned n;

	o->nprocs = 0;
	for (s = strtok_r(arg, ",", &save); s && o->nprocs < 8;
	     s = strtok_r(NULL, ",", &save)) {
		n = (unsigned)atoi(s);
		if (n < 1 || n > MAX_WORKERS) {
			fprintf(stderr, "mpbench: -n %s: 1..%u\n", s,
				MAX_WORKERS);
			return -1;
		}
		o->procs[o->nprocs++] = n;
	}
	return o->nprocs ? 0 : -1;
}

/* 0, 1 (--help: done), or 2 (usage error, said) */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "bench", required_argument, NULL, 'b' },
		{ "procs", required_argument, NULL, 'n' },
		{ "ops", required_argument, NULL, 'o' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "pool", required_argument, NULL, 'p' },
		{ "pmad", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "b:n:o:r:p:P:h", lo, NULL)) != -1) {
		switch (c) {
		case 'b':
			o->bench = optarg;
			if (strcmp(o->bench, "threadtest") != 0 &&
			    strcmp(o->bench, "larson") != 0) {
				fprintf(stderr, "mpbench: unknown bench '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'n':
			if (parse_procs(optarg, o) < 0)
				return 2;
			break;
		case 'o':
			o->ops = strtoull(optarg, NULL, 0);
			if (!o->ops) {
				fprintf(stderr, "mpbench: --ops %s\n", optarg);
				return 2;
			}
			break;
		case 'r':
			o->repeat = (unsigned)atoi(optarg);
			if (o->repeat < 1 || o->repeat > 16) {
				fprintf(stderr, "mpbench: --repeat 1..16\n");
				return 2;
			}
			break;
		case 'p':
			o->path = optarg;
			break;
		case 'P':
			o->pmad = optarg;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return 2;
		}
	}
	return 0;
}

/* the row of n workers: 0 or -1 */
static int row(const struct opts *o, unsigned n)
{
	double tr[16] = { 0 }, pr[16] = { 0 }, tfl = 0, tfe = 0, pfl = 0,
	       pfe = 0, opn[16 * MAX_WORKERS], rec[16] = { 0 };
	const char *mode = "?";
	unsigned i, k, nopn = 0;

	for (i = 0; i < o->repeat; i++) {
		/* alternate: neither side always runs first */
		if (i % 2) {
			pr[i] = run(o, n, 1, &mode, &pfl, &pfe, &rec[i]);
			for (k = 0; k < n; k++)
				opn[nopn++] = (double)sh->open_ns[k] / 1e3;
			tr[i] = getenv("MP_PROCS_ONLY") ?
					1 :
					run(o, n, 0, &mode, &tfl, &tfe, NULL);
		} else {
			tr[i] = getenv("MP_PROCS_ONLY") ?
					1 :
					run(o, n, 0, &mode, &tfl, &tfe, NULL);
			pr[i] = run(o, n, 1, &mode, &pfl, &pfe, &rec[i]);
			for (k = 0; k < n; k++)
				opn[nopn++] = (double)sh->open_ns[k] / 1e3;
		}
		if (tr[i] < 0 || pr[i] < 0)
			return -1;
	}
	qsort(tr, o->repeat, sizeof(tr[0]), dbl_cmp);
	qsort(pr, o->repeat, sizeof(pr[0]), dbl_cmp);
	qsort(opn, nopn, sizeof(opn[0]), dbl_cmp);
	qsort(rec, o->repeat, sizeof(rec[0]), dbl_cmp);
	printf("%-10s %2u %12.0f %12.0f %6.2f %9.3f %9.3f %9.3f %9.3f %s",
	       o->bench, n, tr[o->repeat / 2], pr[o->repeat / 2],
	       pr[o->repeat / 2] / tr[o->repeat / 2], tfl, tfe, pfl, pfe, mode);
	if (o->pmad)
		printf(" %8.0f %8.0f", opn[nopn / 2], rec[o->repeat / 2]);
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {
		"/dev/shm/mpbench.pool", "threadtest", { 1, 2 }, 2, 1000000, 5
	};
	char pool[96];
	unsigned k;
	int rc = parse_opts(argc, argv, &o);

	if (rc)
		return rc == 1 ? 0 : 2;
	if (o.pmad) { /* the pool in pmad's state dir, as mp.pool */
		snprintf(o.dir, sizeof(o.dir), "/dev/shm/mpbench.XXXXXX");
		if (!mkdtemp(o.dir))
			return 1;
		snprintf(o.sock, sizeof(o.sock), "%s/pmad.sock", o.dir);
		snprintf(pool, sizeof(pool), "%s/mp.pool", o.dir);
		o.path = pool;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	printf("# mpbench %s, %llu ops per worker, median of %u (flushes "
	       "and fences per op: the last run)\n",
	       o.bench, (unsigned long long)o.ops, o.repeat);
	printf("%-10s %2s %12s %12s %6s %9s %9s %9s %9s %s%s\n", "bench", "n",
	       "threads/s", "procs/s", "p/t", "t fl/op", "t fe/op", "p fl/op",
	       "p fe/op", "mode", o.pmad ? " open us  recov us" : "");
	if (o.pmad)
		printf("# processes through pmad (%s): open us = pmad_pool_open "
		       "round trip, recov us = kill -9 of a client to the next "
		       "open (medians)\n",
		       o.pmad);
	for (k = 0; k < o.nprocs; k++)
		if (row(&o, o.procs[k]) < 0) {
			rc = 1;
			break;
		}
	if (o.path)
		unlink(o.path);
	if (o.pmad) {
		unlink(o.sock);
		rmdir(o.dir);
	}
	return rc;
}
