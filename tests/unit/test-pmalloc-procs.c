/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-pmalloc-procs: several processes share one pool, each holding one
 * heap region (pma_config_set_region_mask), allocating into a shared
 * table of words and freeing any word's block: their own, or another
 * process's through the free rings (doc/shared-heaps.md, step 3). The
 * parent kills processes with SIGKILL at random points and starts a new
 * one on the dead one's region (its recovery runs while the others go
 * on). At the end the whole pool: every word names a live block or is 0,
 * no block is named twice, and nothing else is live (no leak).
 *
 * Size: PMA_PROCS_KILLS kills (default 12), then the processes go on
 * until PMA_PROCS_OPS operations are done in all (default 40000); the
 * issue's full size is PMA_PROCS_KILLS=100 PMA_PROCS_OPS=1000000.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "pmalloc.h"
#include "pmalloc/internal.h"

#define NPROCS 8
#define WORDS 512
#define REGION_SIZE (4ULL << 20)

/* shared anonymous memory: a claim per word (the pid working on it) and
 * per process its state */
struct shared {
	_Atomic int claim[WORDS];
	_Atomic unsigned ready[NPROCS]; /* its open is done */
	_Atomic unsigned long ring_frees; /* frees of others' blocks */
	_Atomic unsigned long again; /* frees a full ring refused */
	_Atomic unsigned long total; /* ops done by all */
	_Atomic int stop;
};

static struct shared *sh;
static char dir[64], path[96];

static unsigned env_u(const char *name, unsigned dflt)
{
	const char *s = getenv(name);

	return s && atoi(s) >= 0 && *s ? (unsigned)atoi(s) : dflt;
}

static int open_slot(unsigned slot, struct pma_heap **ret)
{
	struct pma_config *cfg = NULL;
	int rc;

	if (pma_config_new(&cfg) < 0)
		return -ENOMEM;
	rc = pma_config_set_region_mask(cfg, 1ULL << slot);
	if (rc == 0)
		rc = pma_heap_open_cfg(path, cfg, ret);
	pma_config_delete(&cfg);
	return rc;
}

/* a process on region slot: operations on random words until stop */
static void proc_run(unsigned slot, uint64_t root, uint64_t rnd)
{
	struct pma_heap *h = NULL;
	uint64_t *w, off;
	unsigned k;
	int rc, zero, foreign;
	pid_t me = getpid();

	/* the region's lock goes with its dead holder, but the parent may
	 * start us before the kernel dropped it: retry */
	for (k = 0; (rc = open_slot(slot, &h)) == -EBUSY && k < 2000; k++)
		usleep(1000);
	if (rc < 0) {
		fprintf(stderr, "slot %u: open: %s\n", slot, pma_errormsg());
		_exit(2);
	}
	w = pma_direct(h, root);
	atomic_store(&sh->ready[slot], 1);
	while (!atomic_load(&sh->stop)) {
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		k = (unsigned)(rnd % WORDS);
		zero = 0;
		if (!atomic_compare_exchange_strong(&sh->claim[k], &zero,
						    (int)me))
			continue;
		off = __atomic_load_n(&w[k], __ATOMIC_ACQUIRE);
		foreign = off && (unsigned)pma_heap_slot_of(h, off) != slot;
		if (!off) {
			rc = pma_malloc_to(h, 64 + rnd % 700, &w[k]);
		} else {
			rc = pma_free_from(h, &w[k]);
			if (rc == 0 && foreign)
				atomic_fetch_add(&sh->ring_frees, 1);
			if (rc == -EAGAIN) { /* a dead holder's ring is full */
				atomic_fetch_add(&sh->again, 1);
				rc = 0;
			}
		}
		atomic_store(&sh->claim[k], 0);
		if (rc == -ENOMEM)
			continue;
		if (rc < 0) {
			fprintf(stderr, "slot %u: word %u: %s\n", slot, k,
				pma_errormsg());
			_exit(3);
		}
		atomic_fetch_add(&sh->total, 1);
	}
	pma_heap_close(h);
	_exit(0);
}

static pid_t spawn(unsigned slot, uint64_t root, uint64_t rnd)
{
	pid_t pid;

	atomic_store(&sh->ready[slot], 0);
	pid = fork();
	if (pid == 0)
		proc_run(slot, root, rnd);
	assert_true(pid > 0);
	return pid;
}

/* the claims a dead process held go once its region is recovered (by
 * its successor's open): until then its last op's word may be redone */
static void claims_release(pid_t dead)
{
	unsigned k;

	for (k = 0; k < WORDS; k++)
		if (atomic_load(&sh->claim[k]) == (int)dead)
			atomic_store(&sh->claim[k], 0);
}

static void test_procs(void **state)
{
	struct pma_config *cfg = NULL;
	struct pma_heap *heap = NULL;
	struct pma_heap_stats st;
	unsigned ops = env_u("PMA_PROCS_OPS", 40000);
	unsigned kills = env_u("PMA_PROCS_KILLS", 12), killed = 0, i, j, live;
	uint64_t root, *w, used, sorted[WORDS], rnd = 0x2545f4914f6cdd1dULL;
	struct timespec ts;
	pid_t pids[NPROCS], pid;
	int status;

	(void)state;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	assert_int_equal(pma_config_new(&cfg), 0);
	assert_int_equal(pma_config_set_regions(cfg, NPROCS), 0);
	if (pma_heap_create_cfg(path, NPROCS * REGION_SIZE, cfg, &heap) < 0)
		fail_msg("create: %s", pma_errormsg());
	pma_config_delete(&cfg);
	assert_int_equal(pma_heap_regions(heap), NPROCS);
	assert_int_equal(pma_root(heap, WORDS * 8, &root), 0);
	pma_heap_close(heap);

	for (i = 0; i < NPROCS; i++)
		pids[i] = spawn(i, root, rnd + i * 0x9e3779b97f4a7c15ULL);
	/* kill at random points: a process at work, then its successor */
	while (killed < kills) {
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		i = (unsigned)(rnd % NPROCS);
		ts.tv_sec = 0;
		ts.tv_nsec = (long)(rnd >> 40) % 20000000L;
		nanosleep(&ts, NULL);
		if (!atomic_load(&sh->ready[i]))
			continue; /* still opening */
		assert_int_equal(kill(pids[i], SIGKILL), 0);
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		if (!WIFSIGNALED(status))
			fail_msg("process of slot %u: status 0x%x", i, status);
		killed++;
		pid = pids[i];
		pids[i] = spawn(i, root, rnd);
		while (!atomic_load(&sh->ready[i]))
			sched_yield();
		claims_release(pid);
	}
	while (atomic_load(&sh->total) < ops)
		usleep(1000);
	atomic_store(&sh->stop, 1);
	for (i = 0; i < NPROCS; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fail_msg("process of slot %u: status 0x%x", i, status);
	}
	print_message("# %u processes, %u kills, %lu ops, %lu frees of other "
		      "regions' blocks, %lu refused by a full ring\n",
		      NPROCS, killed, atomic_load(&sh->total),
		      atomic_load(&sh->ring_frees), atomic_load(&sh->again));
	assert_true(atomic_load(&sh->ring_frees) > 0);

	/* the whole pool: every word a live block or 0, none twice, and
	 * nothing else live but the table */
	assert_int_equal(pma_heap_open(path, 0, &heap), 0);
	w = pma_direct(heap, root);
	used = pma_usable_size(heap, root);
	for (i = 0, live = 0; i < WORDS; i++) {
		if (!w[i])
			continue;
		if (!pma_usable_size(heap, w[i]))
			fail_msg("word %u names 0x%llx, not a live block", i,
				 (unsigned long long)w[i]);
		used += pma_usable_size(heap, w[i]);
		sorted[live++] = w[i];
	}
	for (i = 0; i < live; i++)
		for (j = i + 1; j < live; j++)
			if (sorted[i] == sorted[j])
				fail_msg("0x%llx named twice",
					 (unsigned long long)sorted[i]);
	assert_int_equal(pma_heap_stats(heap, &st), 0);
	if (st.used_bytes != used)
		fail_msg("%llu bytes live, %llu named (a leak)",
			 (unsigned long long)st.used_bytes,
			 (unsigned long long)used);
	pma_heap_close(heap);
	munmap(sh, sizeof(*sh));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_procs),
	};
	int rc;

	/* real flushes on tmpfs (clwb + sfence), not msync */
	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
	snprintf(dir, sizeof(dir), "/dev/shm/test-pmalloc-procs.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/pool", dir);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(path);
	rmdir(dir);
	return rc;
}
