/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-pmalloc-parts: a PMAlloc heap over the parts of a pool (one per
 * NUMA node), on a fake topology of 2 nodes (CPU 0 on node 0, CPU 1 on
 * node 1; pool part i on node i): local-first placement, fallback to the
 * other part when the local one is full, -ENOMEM only when both are,
 * frees of the other part's blocks, dest words in the other part,
 * recovery after a kill, the read-only open, and a part without room for
 * a heap. Pools live in a fresh /dev/shm directory.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ns/ns.h"
#include "pmalloc.h"
#include "pmem/pm.h"
#include "pool/pool.h"
#include "../lib/test-dir.h"

#define PART_SIZE (48ULL << 20)
#define NSLOTS 4096

struct fixture {
	char dir[64];
	char path[2][96];
	cpu_set_t affinity; /* the test's at setup, restored at teardown */
};

static int setup(void **state)
{
	static const int cpu_node[2] = { 0, 1 };
	struct fixture *f = calloc(1, sizeof(*f));
	struct pool_create_params params = { 0 };
	const char *paths[2];
	static const int nodes[2] = { 0, 1 };
	struct pool *pool;
	unsigned i;

	assert_non_null(f);
	assert_int_equal(
		sched_getaffinity(0, sizeof(f->affinity), &f->affinity), 0);
	test_dir_make(f->dir, sizeof(f->dir), NULL, 0, "test-pmalloc-parts",
		      NULL);
	for (i = 0; i < 2; i++) {
		snprintf(f->path[i], sizeof(f->path[i]), "%s/p%u", f->dir, i);
		paths[i] = f->path[i];
	}
	assert_int_equal(ns_topology_set_fake(2, cpu_node, 2), 0);
	params.nparts = 2;
	params.paths = paths;
	params.nodes = nodes;
	params.part_size = PART_SIZE;
	params.mode = 0600;
	assert_int_equal(pool_create(&params, &pool), 0);
	pool_close(&pool);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	test_dir_remove(f->dir);
	ns_topology_clear_fake();
	(void)sched_setaffinity(0, sizeof(f->affinity), &f->affinity);
	free(f);
	return 0;
}

static struct pma_heap *open_heap(struct fixture *f, unsigned flags)
{
	struct pma_heap *heap = NULL;
	int rc = pma_heap_open(f->path[0], flags, &heap);

	if (rc < 0)
		fail_msg("pma_heap_open: %s", pma_errormsg());
	return heap;
}

static void pin(unsigned cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	assert_int_equal(sched_setaffinity(0, sizeof(set), &set), 0);
}

static unsigned part_of(uint64_t off)
{
	return (unsigned)(off >> 56);
}

/* a thread pinned to cpu that allocates n blocks of size into slots */
struct worker {
	struct pma_heap *heap;
	unsigned cpu;
	size_t size;
	uint64_t *slots;
	unsigned n;
	int rc;
	unsigned in_part[2];
};

static void *worker_alloc(void *arg)
{
	struct worker *w = arg;
	cpu_set_t set;
	unsigned i;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0) {
		w->rc = -errno;
		return NULL;
	}
	for (i = 0; i < w->n; i++) {
		w->rc = pma_malloc_to(w->heap, w->size, &w->slots[i]);
		if (w->rc < 0)
			return NULL;
		w->in_part[part_of(w->slots[i]) & 1]++;
	}
	return NULL;
}

static void run_worker(struct worker *w)
{
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, worker_alloc, w), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
}

static int skip_without_two_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 &&
	    CPU_ISSET(0, &set) && CPU_ISSET(1, &set))
		return 0;
	skip();
	return 1;
}

/* a heap in every part, each on its node; threads get their node's part */
static void test_local_first(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *heap = open_heap(f, PMA_HEAP_FORMAT);
	struct pma_heap_stats st, p0, p1;
	uint64_t *slots = calloc(2 * 256, sizeof(*slots));
	struct worker w[2];
	unsigned i;

	if (skip_without_two_cpus())
		return;
	assert_non_null(slots);
	assert_int_equal(pma_heap_stats(heap, &st), 0);
	assert_int_equal(st.parts, 2);
	assert_int_equal(st.node, -1);
	assert_int_equal(pma_heap_part_stats(heap, 0, &p0), 0);
	assert_int_equal(pma_heap_part_stats(heap, 1, &p1), 0);
	assert_int_equal(p0.node, 0);
	assert_int_equal(p1.node, 1);
	assert_int_equal(st.heap_size, p0.heap_size + p1.heap_size);
	assert_int_equal(st.narenas, p0.narenas + p1.narenas);
	assert_int_equal(pma_heap_part_stats(heap, 2, &p0), -ENOENT);
	for (i = 0; i < 2; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].heap = heap;
		w[i].cpu = i;
		w[i].size = i ? 200 : 72;
		w[i].slots = slots + 256 * i;
		w[i].n = 256;
		run_worker(&w[i]);
		assert_int_equal(w[i].rc, 0);
	}
	/* every block on its thread's node */
	assert_int_equal(w[0].in_part[0], 256);
	assert_int_equal(w[1].in_part[1], 256);
	assert_int_equal(pma_heap_stats(heap, &st), 0);
	assert_int_equal(st.fallbacks, 0);
	assert_int_equal(st.used_bytes,
			 256 * (pma_usable_size(heap, slots[0]) +
				pma_usable_size(heap, slots[256])));
	/* a free from the other node goes to the block's part */
	pin(0);
	for (i = 0; i < 256; i++)
		assert_int_equal(pma_free_from(heap, &slots[256 + i]), 0);
	assert_int_equal(pma_heap_stats(heap, &st), 0);
	assert_int_equal(st.remote_part_frees, 256);
	for (i = 0; i < 256; i++)
		assert_int_equal(pma_free_from(heap, &slots[i]), 0);
	assert_int_equal(pma_heap_stats(heap, &st), 0);
	assert_int_equal(st.used_bytes, 0);
	pma_heap_close(heap);
	free(slots);
}

/*
 * A thread that migrates follows: placement reads the CPU every 64
 * allocations (numa.c), so after a move to the other node's CPU at most
 * 64 more blocks come from the old part, and then every block from the
 * new one; back again, the same. Frees of the blocks left behind go to
 * their own part from either node.
 */
static void test_migrating_thread(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *heap = open_heap(f, PMA_HEAP_FORMAT);
	enum { N = 512, PLACE_EVERY = 64 };
	uint64_t *slots = calloc(3 * N, sizeof(*slots));
	unsigned i, round, cpu, old, stale[3] = { 0 }, fresh[3] = { 0 };
	struct pma_heap_stats st;

	if (skip_without_two_cpus())
		return;
	assert_non_null(slots);
	for (round = 0; round < 3; round++) {
		cpu = round & 1; /* CPU 0, then 1, then 0 again */
		pin(cpu);
		for (i = 0; i < N; i++) {
			uint64_t *slot = &slots[round * N + i];

			assert_int_equal(pma_malloc_to(heap, 96, slot), 0);
			if (part_of(*slot) == cpu)
				fresh[round]++;
			else if (!fresh[round])
				stale[round]++; /* before placement noticed */
			else
				fail_msg("round %u: block %u in part %u after "
					 "the thread moved to node %u",
					 round, i, part_of(*slot), cpu);
		}
		assert_true(stale[round] <= PLACE_EVERY);
		assert_int_equal(fresh[round] + stale[round], N);
	}
	/* every block of a round after the first few is local to it */
	assert_true(fresh[1] >= N - PLACE_EVERY);
	assert_true(fresh[2] >= N - PLACE_EVERY);
	assert_int_equal(pma_heap_stats(heap, &st), 0);
	assert_int_equal(st.fallbacks, 0);
	/* free round 1's blocks (node 1) from node 0 and the others from 1 */
	for (round = 0; round < 3; round++) {
		old = round == 1 ? 0 : 1;
		pin(old);
		for (i = 0; i < N; i++)
			assert_int_equal(
				pma_free_from(heap, &slots[round * N + i]), 0);
	}
	assert_int_equal(pma_heap_stats(heap, &st), 0);
	assert_int_equal(st.used_bytes, 0);
	pma_heap_close(heap);
	free(slots);
}

/* a full local part sends allocations to the other part; -ENOMEM only
 * when both are full, with a message that says so */
static void test_fallback(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *heap = open_heap(f, PMA_HEAP_FORMAT);
	struct pma_heap_stats st, p1;
	size_t n = 2 * PART_SIZE / 4096, i, got = 0;
	uint64_t *slots = calloc(n, sizeof(*slots));
	unsigned in_part[2] = { 0, 0 };
	int rc = 0;

	if (skip_without_two_cpus())
		return;
	assert_non_null(slots);
	assert_int_equal(pma_heap_part_stats(heap, 1, &p1), 0);
	pin(1);
	for (i = 0; i < n; i++) {
		rc = pma_malloc_to(heap, 4000, &slots[i]);
		if (rc < 0)
			break;
		in_part[part_of(slots[i]) & 1]++;
		/* the local part first: no block of part 0 while part 1
		 * has room for one (its free bytes, less slab slack) */
		got++;
	}
	assert_int_equal(rc, -ENOMEM);
	assert_non_null(strstr(pma_errormsg(), "2 parts"));
	assert_true(in_part[1] > 0);
	assert_true(in_part[0] > 0);
	/* the blocks of part 1 came first */
	for (i = 0; i < in_part[1]; i++)
		assert_int_equal(part_of(slots[i]), 1);
	assert_int_equal(pma_heap_stats(heap, &st), 0);
	assert_int_equal(st.fallbacks, in_part[0]);
	/* both parts nearly full */
	assert_true(st.free_bytes < st.heap_size / 10);
	/* free one block of part 1: the next allocation goes there */
	assert_int_equal(pma_free_from(heap, &slots[0]), 0);
	assert_int_equal(pma_heap_checkpoint(heap), 0);
	assert_int_equal(pma_malloc_to(heap, 4000, &slots[0]), 0);
	assert_int_equal(part_of(slots[0]), 1);
	/* too big for any part */
	assert_int_equal(pma_malloc_to(heap, PART_SIZE + 4096, &slots[1]),
			 -ENOMEM);
	assert_non_null(strstr(pma_errormsg(), "every part"));
	for (i = 0; i < got; i++)
		assert_int_equal(pma_free_from(heap, &slots[i]), 0);
	pma_heap_close(heap);
	free(slots);
}

/* root object with NSLOTS words, in part 0 */
static uint64_t *root_slots(struct pma_heap *heap)
{
	uint64_t off = 0;

	assert_int_equal(pma_root(heap, NSLOTS * sizeof(uint64_t), &off), 0);
	assert_int_equal(part_of(off), 0);
	return pma_direct(heap, off);
}

/*
 * A child allocates and frees from both CPUs, with dest words in blocks
 * of both parts (a table of part 1 names blocks of part 0 and back), and
 * is killed; the reopened heap has every named block live, none twice,
 * and the counts add up.
 */
static void test_kill_recover(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *heap = open_heap(f, PMA_HEAP_FORMAT);
	struct pma_heap_stats st;
	uint64_t *root, *tab, seen_bytes = 0;
	unsigned round;
	pid_t pid;
	int status;

	if (skip_without_two_cpus())
		return;
	root = root_slots(heap);
	pin(1);
	/* slot 0: a table of NSLOTS - 1 words in part 1 */
	assert_int_equal(pma_zalloc_to(heap, (NSLOTS - 1) * 8, &root[0]), 0);
	assert_int_equal(part_of(root[0]), 1);
	pma_heap_close(heap);
	for (round = 0; round < 6; round++) {
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			unsigned k, i, seed = round * 7919 + 1;

			heap = open_heap(f, 0);
			root = root_slots(heap);
			tab = pma_direct(heap, root[0]);
			for (k = 0;; k++) {
				uint64_t *w;

				pin(rand_r(&seed) % 2);
				i = 1 + rand_r(&seed) % (NSLOTS - 2);
				w = (rand_r(&seed) & 1) ? &tab[i] : &root[i];
				if (*w) {
					if (pma_free_from(heap, w) < 0)
						_exit(2);
				} else if (pma_malloc_to(heap,
							 16 + rand_r(&seed) %
									 9000,
							 w) < 0) {
					_exit(3);
				}
				if (k == 2000 + round * 700)
					_exit(0); /* no close: a kill */
			}
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
		heap = open_heap(f, 0);
		root = root_slots(heap);
		tab = pma_direct(heap, root[0]);
		seen_bytes = 0;
		{
			uint64_t *all = calloc(2 * NSLOTS, sizeof(*all));
			unsigned n = 0, i, j, parts[2] = { 0, 0 };

			assert_non_null(all);
			for (i = 1; i < NSLOTS - 1; i++) {
				if (root[i])
					all[n++] = root[i];
				if (tab[i])
					all[n++] = tab[i];
			}
			for (i = 0; i < n; i++) {
				size_t us = pma_usable_size(heap, all[i]);

				if (!us)
					fail_msg("round %u: 0x%llx named but "
						 "not live",
						 round,
						 (unsigned long long)all[i]);
				seen_bytes += us;
				parts[part_of(all[i]) & 1]++;
				for (j = 0; j < i; j++)
					assert_int_not_equal(all[i], all[j]);
			}
			/* both parts were used */
			assert_true(parts[0] > 0 && parts[1] > 0);
			free(all);
		}
		assert_int_equal(pma_heap_stats(heap, &st), 0);
		/* used bytes: the named blocks, the root and the table */
		assert_int_equal(st.used_bytes,
				 seen_bytes + pma_usable_size(heap, root[0]) +
					 NSLOTS * 8);
		pma_heap_close(heap);
	}
}

/* the read-only open sees both parts as the writer left them */
static void test_rdonly(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *heap = open_heap(f, PMA_HEAP_FORMAT), *ro;
	struct pma_heap_stats st, rst;
	uint64_t *root;
	unsigned i;

	if (skip_without_two_cpus())
		return;
	root = root_slots(heap);
	for (i = 1; i < 200; i++) {
		pin(i % 2);
		assert_int_equal(pma_malloc_to(heap, 100 * i, &root[i]), 0);
	}
	assert_int_equal(pma_heap_stats(heap, &st), 0);
	pma_heap_close(heap);
	ro = open_heap(f, PMA_HEAP_RDONLY);
	assert_int_equal(pma_heap_stats(ro, &rst), 0);
	assert_int_equal(rst.parts, 2);
	assert_int_equal(rst.used_bytes, st.used_bytes);
	for (i = 1; i < 200; i++)
		assert_true(pma_usable_size(ro, root[i]) >= 100 * i);
	assert_int_equal(pma_malloc_to(ro, 64, &root[0]), -EROFS);
	pma_heap_close(ro);
}

/* a part whose room another region took holds no heap: the heap is the
 * other part's alone */
static void test_part_without_room(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *heap;
	struct pma_heap_stats st;
	struct pool *pool;
	uint64_t *root;

	assert_int_equal(pool_open(f->path[0], 0, &pool), 0);
	assert_int_equal(pool_region_add(pool, 0x7e57, 1,
					 PART_SIZE - (192ULL << 10), "other",
					 NULL),
			 0);
	pool_close(&pool);
	heap = open_heap(f, PMA_HEAP_FORMAT);
	assert_int_equal(pma_heap_stats(heap, &st), 0);
	assert_int_equal(st.parts, 1);
	assert_int_equal(pma_heap_part_stats(heap, 1, &st), -ENOENT);
	root = root_slots(heap);
	assert_int_equal(pma_malloc_to(heap, 64, &root[1]), 0);
	assert_int_equal(part_of(root[1]), 0);
	pma_heap_close(heap);
}

/* lib/pmem counts the lines a thread flushes into the other node's
 * part: none while it allocates and frees in its own part with dest
 * words there, some when its dest words are in the other part */
static void test_remote_lines(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *heap = open_heap(f, PMA_HEAP_FORMAT);
	uint64_t *root, *tab;
	struct pm_stats st;
	unsigned i;

	if (skip_without_two_cpus())
		return;
	root = root_slots(heap);
	pin(1);
	/* a thread that moved follows within 64 allocations */
	for (i = 0; i < 64; i++) {
		assert_int_equal(pma_malloc_to(heap, 64, &root[NSLOTS - 1]), 0);
		assert_int_equal(pma_free_from(heap, &root[NSLOTS - 1]), 0);
	}
	assert_int_equal(pma_zalloc_to(heap, 4096, &root[0]), 0);
	assert_int_equal(part_of(root[0]), 1);
	tab = pma_direct(heap, root[0]);
	/* the dest line of root[0] (part 0) is flushed by the next op */
	assert_int_equal(pma_malloc_to(heap, 64, &tab[511]), 0);
	assert_int_equal(pma_free_from(heap, &tab[511]), 0);
	pm_stats_reset();
	for (i = 0; i < 500; i++) {
		assert_int_equal(pma_malloc_to(heap, 64 + i, &tab[i % 512]), 0);
		assert_int_equal(pma_free_from(heap, &tab[i % 512]), 0);
	}
	pm_stats_get(&st);
	assert_true(st.lines_flushed > 0);
	assert_int_equal(st.remote_lines, 0);
	/* dest words in part 0 (node 0): their lines are remote */
	for (i = 1; i < 200; i++)
		assert_int_equal(pma_malloc_to(heap, 64, &root[i]), 0);
	assert_int_equal(part_of(root[1]), 1);
	pma_heap_close(heap); /* flushes the last dest line too */
	pm_stats_get(&st);
	assert_true(st.remote_lines > 0);
	assert_true(st.remote_lines < st.lines_flushed);
}

/* PMA_HEAP_INTERLEAVE: threads take the parts in turn, whatever node */
static void test_interleave(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *heap = open_heap(f, PMA_HEAP_FORMAT);
	uint64_t *slots = calloc(4 * 64, sizeof(*slots));
	struct worker w[4];
	unsigned i;

	pma_heap_close(heap);
	heap = open_heap(f, PMA_HEAP_INTERLEAVE);
	assert_non_null(slots);
	for (i = 0; i < 4; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].heap = heap;
		w[i].cpu = 0; /* all on node 0 */
		w[i].size = 100;
		w[i].slots = slots + 64 * i;
		w[i].n = 64;
		run_worker(&w[i]);
		assert_int_equal(w[i].rc, 0);
	}
	/* two threads got part 0, two part 1 */
	assert_int_equal(w[0].in_part[0] + w[1].in_part[0] + w[2].in_part[0] +
				 w[3].in_part[0],
			 128);
	assert_int_equal(w[0].in_part[1] + w[1].in_part[1] + w[2].in_part[1] +
				 w[3].in_part[1],
			 128);
	for (i = 0; i < 4; i++)
		assert_true(w[i].in_part[0] == 64 || w[i].in_part[1] == 64);
	pma_heap_close(heap);
	free(slots);
}

/*
 * pma_heap_open_fds: the parts from descriptors (pmad passes them), with
 * part 1 renamed away from its path hint (a by-path open fails); the
 * heap works; a descriptor per part is required, a read-only descriptor
 * opens only read-only, and the caller's descriptors stay its own.
 */
static void test_open_fds(void **state)
{
	struct fixture *f = *state;
	struct pma_heap *heap = open_heap(f, PMA_HEAP_FORMAT);
	char moved[128];
	uint64_t *root;
	int fds[2], ro[2];
	unsigned i;

	root = root_slots(heap);
	for (i = 1; i < 100; i++)
		assert_int_equal(pma_malloc_to(heap, 8 * i, &root[i]), 0);
	pma_heap_close(heap);
	snprintf(moved, sizeof(moved), "%s/moved", f->dir);
	assert_int_equal(rename(f->path[1], moved), 0);
	assert_true(pma_heap_open(f->path[0], 0, &heap) < 0); /* hint gone */
	fds[0] = open(f->path[0], O_RDWR | O_CLOEXEC);
	fds[1] = open(moved, O_RDWR | O_CLOEXEC);
	assert_true(fds[0] >= 0 && fds[1] >= 0);
	assert_int_equal(pma_heap_open_fds(fds, 1, 0, &heap), -EINVAL);
	assert_non_null(strstr(pma_errormsg(), "descriptors given"));
	assert_int_equal(pma_heap_open_fds(fds, 2, 0, &heap), 0);
	/* the caller's descriptors are its own */
	assert_int_equal(close(fds[0]), 0);
	assert_int_equal(close(fds[1]), 0);
	root = root_slots(heap);
	for (i = 1; i < 100; i++)
		assert_true(pma_usable_size(heap, root[i]) >= 8 * i);
	assert_int_equal(pma_free_from(heap, &root[1]), 0);
	pma_heap_close(heap);
	ro[0] = open(f->path[0], O_RDONLY | O_CLOEXEC);
	ro[1] = open(moved, O_RDONLY | O_CLOEXEC);
	assert_int_equal(pma_heap_open_fds(ro, 2, 0, &heap), -EROFS);
	assert_int_equal(pma_heap_open_fds(ro, 2, PMA_HEAP_RDONLY, &heap), 0);
	root = root_slots(heap);
	assert_int_equal(root[1], 0);
	assert_true(pma_usable_size(heap, root[99]) >= 8 * 99);
	pma_heap_close(heap);
	close(ro[0]);
	close(ro[1]);
	assert_int_equal(rename(moved, f->path[1]), 0);
}

/* pma_numa_nodes lists the fake topology's nodes, as placement uses it */
static void test_numa_nodes(void **state)
{
	int nodes[4] = { -1, -1, -1, -1 };

	(void)state;
	assert_int_equal(pma_numa_nodes(nodes, 4), 2);
	assert_int_equal(nodes[0], 0);
	assert_int_equal(nodes[1], 1);
	assert_int_equal(nodes[2], -1);
	nodes[0] = nodes[1] = -1;
	assert_int_equal(pma_numa_nodes(nodes, 1), 2);
	assert_int_equal(nodes[0], 0);
	assert_int_equal(nodes[1], -1);
	assert_int_equal(pma_numa_nodes(NULL, 0), 2);
	assert_int_equal(pma_numa_nodes(NULL, 1), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_numa_nodes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_local_first, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_migrating_thread, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fallback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kill_recover, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_rdonly, setup, teardown),
		cmocka_unit_test_setup_teardown(test_part_without_room, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_remote_lines, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_interleave, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_open_fds, setup, teardown),
	};

	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
