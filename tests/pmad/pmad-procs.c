/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmad-procs: several processes share one pool through pmad (libpmad,
 * installed API only), issue 17's multi-process test.
 *   pmad-procs SOCKET run POOL [--procs N] [--ops M] [--kills K]
 *              [--seed S]
 *       the parent opens the pool through pmad, makes the root (a table
 *       of WORDS words) and closes it; N child processes connect, open
 *       the pool (pmad grants each one region) and allocate into random
 *       words and free random words' blocks, their own or another
 *       process's (those go through the free rings). The parent kills a
 *       child with SIGKILL at a random point K times and starts a new one
 *       (pmad recovers the dead one's region, then grants it to the new
 *       one; while pmad is down the new one waits for it). Then the
 *       children go on until M operations are done in all and close.
 *       Prints "root OFF" and a summary line; exit 0 when all went well.
 *   pmad-procs PATH check - --root OFF
 *       offline (pmad stopped): the whole pool at PATH, every word a live
 *       block or 0, none named twice, nothing else live (no leak)
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pmad.h"
#include "pmalloc.h"

#define WORDS 512
#define PROCS_MAX 16

/* shared anonymous memory: per word a claim (the pid working on it) and
 * the process that allocated its block; per process slot its state */
struct shared {
	_Atomic int claim[WORDS];
	_Atomic unsigned owner[WORDS]; /* proc slot + 1 of the allocator */
	_Atomic unsigned ready[PROCS_MAX];
	_Atomic unsigned long foreign_frees;
	_Atomic unsigned long again; /* frees a full ring refused */
	_Atomic unsigned long enomem;
	_Atomic unsigned long total;
	_Atomic int stop;
};

static struct shared *sh;

static void die(const char *what, int rc)
{
	fprintf(stderr, "pmad-procs: %s: %s (%s)\n", what, pmad_errormsg(),
		strerror(-rc));
	exit(1);
}

static uint64_t arg_u64(int argc, char **argv, const char *name, uint64_t dflt)
{
	int i;

	for (i = 4; i + 1 < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return strtoull(argv[i + 1], NULL, 0);
	return dflt;
}

static uint64_t xorshift(uint64_t *r)
{
	*r ^= *r << 13;
	*r ^= *r >> 7;
	*r ^= *r << 17;
	return *r;
}

/* connect and open, waiting for pmad (restarted) and for a free region
 * (pmad recovers the dead one's first): up to 20 s */
static int open_wait(const char *sock, const char *pool,
		     struct pmad_client **ret_c, struct pma_heap **ret_h)
{
	int rc = -EAGAIN, i;

	for (i = 0; i < 2000; i++) {
		rc = pmad_connect(sock, ret_c);
		if (rc == 0) {
			rc = pmad_pool_open(*ret_c, pool, ret_h);
			if (rc == 0)
				return 0;
			pmad_disconnect(*ret_c);
		}
		if (rc != -ENOENT && rc != -ECONNREFUSED && rc != -EBUSY &&
		    rc != -ECONNRESET)
			return rc;
		usleep(10000);
	}
	return rc;
}

/* a child on process slot me: ops on random words until stop */
static void child(const char *sock, const char *pool, unsigned me,
		  uint64_t root, uint64_t rnd)
{
	struct pmad_client *c = NULL;
	struct pma_heap *h = NULL;
	uint64_t *w, off;
	unsigned k, owner;
	int rc, zero;
	pid_t pid = getpid();

	rc = open_wait(sock, pool, &c, &h);
	if (rc < 0)
		die("child open", rc);
	w = pma_direct(h, root);
	atomic_store(&sh->ready[me], 1);
	while (!atomic_load(&sh->stop)) {
		k = (unsigned)(xorshift(&rnd) % WORDS);
		zero = 0;
		if (!atomic_compare_exchange_strong(&sh->claim[k], &zero,
						    (int)pid))
			continue;
		off = __atomic_load_n(&w[k], __ATOMIC_ACQUIRE);
		if (!off) {
			rc = pma_malloc_to(h, 64 + rnd % 700, &w[k]);
			if (rc == 0)
				atomic_store(&sh->owner[k], me + 1);
		} else {
			owner = atomic_load(&sh->owner[k]);
			rc = pma_free_from(h, &w[k]);
			if (rc == 0 && owner != me + 1)
				atomic_fetch_add(&sh->foreign_frees, 1);
			if (rc == -EAGAIN) { /* the holder's ring is full */
				atomic_fetch_add(&sh->again, 1);
				rc = 0;
			}
		}
		atomic_store(&sh->claim[k], 0);
		if (rc == -ENOMEM) {
			atomic_fetch_add(&sh->enomem, 1);
			continue;
		}
		if (rc < 0) {
			fprintf(stderr, "pmad-procs: child %u: word %u: %s\n",
				me, k, pma_errormsg());
			_exit(3);
		}
		atomic_fetch_add(&sh->total, 1);
	}
	rc = pmad_pool_close(c, h);
	pmad_disconnect(c);
	if (rc < 0)
		die("child close", rc);
	_exit(0);
}

static pid_t spawn(const char *sock, const char *pool, unsigned me,
		   uint64_t root, uint64_t rnd)
{
	pid_t pid;

	atomic_store(&sh->ready[me], 0);
	(void)fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork", -errno);
	if (pid == 0)
		child(sock, pool, me, root, rnd);
	return pid;
}

/* the claims a dead process held go once its region is recovered (its
 * successor's open has come back): until then its last op may be redone */
static void claims_release(pid_t dead)
{
	unsigned k;

	for (k = 0; k < WORDS; k++)
		if (atomic_load(&sh->claim[k]) == (int)dead)
			atomic_store(&sh->claim[k], 0);
}

static uint64_t make_root(const char *sock, const char *pool)
{
	struct pmad_client *c = NULL;
	struct pma_heap *h = NULL;
	uint64_t root;
	int rc = open_wait(sock, pool, &c, &h);

	if (rc < 0)
		die("open", rc);
	rc = pma_root(h, WORDS * sizeof(uint64_t), &root);
	if (rc < 0)
		die("pma_root", rc);
	rc = pmad_pool_close(c, h);
	pmad_disconnect(c);
	if (rc < 0)
		die("close", rc);
	return root;
}

static int run(const char *sock, const char *pool, unsigned nprocs,
	       uint64_t ops, unsigned kills, uint64_t rnd)
{
	pid_t pids[PROCS_MAX], dead;
	unsigned i, killed = 0, bad = 0;
	struct timespec ts, t0, t1;
	uint64_t root;
	int status;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap", -errno);
	memset(sh, 0, sizeof(*sh));
	root = make_root(sock, pool);
	printf("root 0x%" PRIx64 "\n", root);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < nprocs; i++)
		pids[i] = spawn(sock, pool, i, root,
				rnd + (i + 1) * 0x9e3779b97f4a7c15ULL);
	while (killed < kills) {
		i = (unsigned)(xorshift(&rnd) % nprocs);
		ts.tv_sec = 0;
		ts.tv_nsec = (long)(rnd >> 40) % 20000000L;
		nanosleep(&ts, NULL);
		if (!atomic_load(&sh->ready[i]))
			continue; /* still opening */
		kill(pids[i], SIGKILL);
		if (waitpid(pids[i], &status, 0) != pids[i] ||
		    !WIFSIGNALED(status)) {
			fprintf(stderr, "pmad-procs: child %u: status 0x%x\n",
				i, status);
			return 1;
		}
		killed++;
		dead = pids[i];
		pids[i] = spawn(sock, pool, i, root, xorshift(&rnd));
		while (!atomic_load(&sh->ready[i])) {
			if (waitpid(pids[i], &status, WNOHANG) == pids[i]) {
				fprintf(stderr,
					"pmad-procs: child %u exited 0x%x "
					"before its open\n",
					i, status);
				return 1;
			}
			sched_yield();
		}
		claims_release(dead);
	}
	while (atomic_load(&sh->total) < ops)
		usleep(1000);
	atomic_store(&sh->stop, 1);
	for (i = 0; i < nprocs; i++)
		if (waitpid(pids[i], &status, 0) != pids[i] ||
		    !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "pmad-procs: child %u: status 0x%x\n",
				i, status);
			bad++;
		}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%u processes, %u kills, %lu ops, %lu frees of another "
	       "process's blocks, %lu refused by a full ring, %lu ENOMEM, "
	       "%.2f s\n",
	       nprocs, killed, atomic_load(&sh->total),
	       atomic_load(&sh->foreign_frees), atomic_load(&sh->again),
	       atomic_load(&sh->enomem),
	       (double)(t1.tv_sec - t0.tv_sec) +
		       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	if (nprocs > 1 && !atomic_load(&sh->foreign_frees)) {
		fprintf(stderr, "pmad-procs: no free of another process's "
				"block happened\n");
		bad++;
	}
	return bad ? 1 : 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* offline: the whole pool after the run */
static int check(const char *path, uint64_t root)
{
	struct pma_heap_stats st;
	struct pma_heap *h;
	uint64_t *w, used, named[WORDS];
	unsigned i, live = 0, bad = 0;
	int rc = pma_heap_open(path, 0, &h);

	if (rc < 0) {
		fprintf(stderr, "pmad-procs: open %s: %s\n", path,
			pma_errormsg());
		return 1;
	}
	if (!pma_usable_size(h, root)) {
		fprintf(stderr,
			"pmad-procs: root 0x%" PRIx64 " is not a live block\n",
			root);
		pma_heap_close(h);
		return 1;
	}
	w = pma_direct(h, root);
	used = pma_usable_size(h, root);
	for (i = 0; i < WORDS; i++) {
		if (!w[i])
			continue;
		if (!pma_usable_size(h, w[i])) {
			fprintf(stderr,
				"not ok - word %u names 0x%" PRIx64
				", not a live block\n",
				i, w[i]);
			bad++;
			continue;
		}
		used += pma_usable_size(h, w[i]);
		named[live++] = w[i];
	}
	qsort(named, live, sizeof(named[0]), cmp_u64);
	for (i = 1; i < live; i++)
		if (named[i] == named[i - 1]) {
			fprintf(stderr, "not ok - 0x%" PRIx64 " named twice\n",
				named[i]);
			bad++;
		}
	rc = pma_heap_stats(h, &st);
	if (rc < 0 || st.used_bytes != used) {
		fprintf(stderr,
			"not ok - %" PRIu64 " bytes live, %" PRIu64
			" named (a leak)\n",
			st.used_bytes, used);
		bad++;
	}
	pma_heap_close(h);
	printf("%s - %u words name live blocks, none twice, %" PRIu64
	       " bytes live = named\n",
	       bad ? "not ok" : "ok", live, used);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	unsigned nprocs;

	if (argc < 4) {
		fprintf(stderr, "usage: pmad-procs SOCKET run POOL [--procs N] "
				"[--ops M] [--kills K] [--seed S]\n"
				"       pmad-procs PATH check - --root OFF\n");
		return 2;
	}
	/* the parent and children write words of a table others read */
	(void)setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(argv[2], "check") == 0)
		return check(argv[1], arg_u64(argc, argv, "--root", 0));
	if (strcmp(argv[2], "run") != 0) {
		fprintf(stderr, "pmad-procs: unknown command '%s'\n", argv[2]);
		return 2;
	}
	nprocs = (unsigned)arg_u64(argc, argv, "--procs", 8);
	if (!nprocs || nprocs > PROCS_MAX) {
		fprintf(stderr, "pmad-procs: --procs 1..%d\n", PROCS_MAX);
		return 2;
	}
	return run(argv[1], argv[3], nprocs,
		   arg_u64(argc, argv, "--ops", 40000),
		   (unsigned)arg_u64(argc, argv, "--kills", 12),
		   arg_u64(argc, argv, "--seed", (uint64_t)time(NULL)) | 1);
}
