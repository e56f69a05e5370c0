/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-pmalloc-parts-crash: crash-simulation sweep of a PMAlloc heap over
 * the two parts of a pool (--enable-crash-sim), on a fake topology of two
 * nodes (CPU i on node i, part i on node i). Two threads, pinned one to
 * each CPU, allocate and free into two tables of dest words, one in part
 * 0 (the root) and one in part 1, so that blocks of each part are named
 * from both parts, blocks are freed from the other part's node, and both
 * global and per-arena checkpoints run in both parts. At EVERY fence the
 * images of both part files are written; the parent recovers a copy of
 * the pair and checks: every dest word is 0 or names a live block of its
 * slot's size, no block is named twice, nothing leaked in either part,
 * the read-only view equals the recovered heap, and the heap keeps
 * working; fsck's check of the pair's pool format (pool_fsck_parts) and
 * its walk of both parts' heaps (pma_fsck_heap on a read-only open) find
 * no error in the crash image and nothing at all after
 * recovery. The regions sweeps do the same on a pool of 2 heap regions
 * per part (pma_config_set_regions): 4 threads, 2 per CPU, in different
 * regions of their part, so that blocks are also freed from the other
 * region of their part. `test-pmalloc-parts-crash replay FILE` checks a
 * saved image (FILE and FILE.1) again.
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
#include <unistd.h>

#include <cmocka.h>

#include "ns/ns.h"
#include "pmalloc.h"
#include "pmalloc/fsck.h"
#include "pmalloc/internal.h"
#include "../lib/test-cfg.h"
#include "pmem/crash.h"
#include "pool/fsck.h"
#include "pool/pool.h"
#include "crash-sweep.h"
#include "pma-check.h"

#define PART_SIZE (4ULL << 20)
#define NSLOTS 32 /* per table */
#define OPS_PER_THREAD 100
#define NTHREADS 2
/* a sweep whose seed has this bit runs its workloads without per-arena
 * checkpoints (test_sweep tells the child through the environment) */
#define GLOBAL_ONLY (1ULL << 52)
/* ... and this bit on a pool of 2 regions per part */
#define REGIONS2 (1ULL << 51)
/* ... with forced slab morphing (every slab on a partial list is a
 * candidate, idle or not): XFREEs of blocks of slabs that morph */
#define MORPH_FORCED (1ULL << 50)
/* seed flag: frees of another region's blocks go through the free rings
 * (PMA_HEAP_TEST_XRING, layout 12: what a masked open does for a region
 * another process holds, here inside one open so that every fence of
 * both sides is imaged) */
#define RINGS (1ULL << 49)

/* sizes: small classes, a few large blocks and extents; with forced
 * morphing (PMA_PARTS_MORPH in the environment, set by test_sweep, also
 * for a replay) table 0 holds 1000-byte blocks of prefilled slabs
 * (morph_prefill) that the other classes morph */
static size_t slot_size(unsigned s)
{
	uint32_t h = s * 2654435761u;

	if (s < NSLOTS && getenv("PMA_PARTS_MORPH"))
		return 1000;

	if (s % 9 == 4)
		return 16384 + (h >> 16) % (96 * 1024);
	return 1 + (h >> 8) % 3000;
}

static void fake_topology(void)
{
	static const int cpu_node[2] = { 0, 1 };

	if (ns_topology_set_fake(2, cpu_node, 2) < 0)
		_exit(11);
}

static int open_image(const char *file, unsigned flags,
		      struct pma_heap **ret_heap)
{
	char part1[128];
	const char *paths[2] = { file, part1 };

	crash_sweep_part_path(file, 1, part1, sizeof(part1));
	return test_heap_open_parts(paths, 2, flags, ret_heap);
}

/* ------------------------------------------------------------ child */

struct work {
	struct pma_heap *heap;
	uint64_t *tab[2]; /* tab[0] in part 0 (the root), tab[1] in part 1 */
	pthread_mutex_t locks[2 * NSLOTS];
	uint64_t rnd;
	int two_cpus;
	unsigned nreg; /* regions per part: threads per CPU */
	atomic_uint started; /* threads that took their region turn */
	atomic_ulong xregion; /* frees of another region of the part's */
	int morph; /* forced morphing: morph_prefill first */
	struct pm_map *maps[2];
	atomic_int armed; /* the crash points are armed: the workers go */
};

static struct work work;

/*
 * Forced morphing: before the crash points, part 0 gets ten slabs' worth
 * of 1000-byte blocks (class 1024) of which one in ten stays live, in
 * table 0's slots, and a checkpoint: slabs at most 10% used that are no
 * longer new, which the workers' allocations of other classes in part 0
 * morph while the part 1 worker frees their old blocks (XFREE, or through
 * the owner once the slab is mixed). Run by worker 0 (its arena is the
 * one that morphs) before it arms the crash points. The scratch dests
 * live in a block named by slot NSLOTS, freed again before the sweep.
 */
static void morph_prefill(void)
{
	uint64_t *scratch, *w = &work.tab[1][0];
	unsigned j, n = 31 * 10;

	if (pma_zalloc_to(work.heap, n * 8, w) < 0)
		_exit(13);
	scratch = pma_direct(work.heap, *w);
	for (j = 0; j < n; j++)
		if (pma_malloc_to(work.heap, 1000,
				  j % 10 ? &scratch[j] :
					   &work.tab[0][1 + j / 10]) < 0)
			_exit(14);
	for (j = 0; j < n; j++)
		if (j % 10 && pma_free_from(work.heap, &scratch[j]) < 0)
			_exit(15);
	if (pma_free_from(work.heap, w) < 0 ||
	    pma_heap_checkpoint(work.heap) < 0)
		_exit(16);
}

static void *worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg, i, s;
	uint64_t rnd = id * 0x9e3779b97f4a7c15ULL + 1 + work.rnd, *w;
	cpu_set_t set;
	int rc;

	CPU_ZERO(&set);
	CPU_SET(work.two_cpus ? id / work.nreg : 0, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		_exit(12);
	/* threads take their part's regions in turn, in start order: the
	 * threads of a CPU get different regions */
	(void)pma_place_local(work.heap);
	atomic_fetch_add(&work.started, 1);
	if (id == 0 && work.morph) {
		morph_prefill();
		crash_sweep_arm_parts(work.maps, 2);
		atomic_store(&work.armed, 1);
	}
	while (!atomic_load(&work.armed))
		sched_yield();
	for (i = 0; i < OPS_PER_THREAD / work.nreg; i++) {
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		s = (unsigned)(rnd % (2 * NSLOTS));
		if (s == 0)
			continue; /* names table 1 */
		w = &work.tab[s / NSLOTS][s % NSLOTS];
		pthread_mutex_lock(&work.locks[s]);
		if (*w && work.nreg > 1 &&
		    pma_heap_route(work.heap, *w) !=
			    pma_place_local(work.heap) &&
		    *w >> 56 == pma_place_local(work.heap)->part)
			atomic_fetch_add(&work.xregion, 1);
		if (*w)
			rc = pma_free_from(work.heap, w);
		else
			rc = pma_malloc_to(work.heap, slot_size(s), w);
		pthread_mutex_unlock(&work.locks[s]);
		if (rc && rc != -ENOMEM)
			_exit(4);
		if (id == 0 && i % 45 == 44 && pma_heap_checkpoint(work.heap))
			_exit(5);
		if (i % (id ? 17 : 23) == (id ? 16 : 11) &&
		    pma_heap_checkpoint_arena(work.heap))
			_exit(6);
	}
	return NULL;
}

static void child_run(const char *path, uint64_t rnd)
{
	struct pool_create_params params = { 0 };
	static const int nodes[2] = { 0, 1 };
	pthread_t tid[2 * NTHREADS];
	struct pma_heap *h1;
	char part1[128];
	const char *paths[2] = { path, part1 };
	struct pool *pool;
	uint64_t root;
	cpu_set_t set;
	unsigned i;

	fake_topology();
	crash_sweep_part_path(path, 1, part1, sizeof(part1));
	params.nparts = 2;
	params.paths = paths;
	params.nodes = nodes;
	params.part_size = PART_SIZE;
	params.mode = 0600;
	params.flags = POOL_CREATE_FORCE;
	if (pool_create(&params, &pool) < 0)
		_exit(7);
	pool_close(&pool);
	work.nreg = getenv("PMA_PARTS_REGIONS") ? 2 : 1;
	test_cfg.regions = work.nreg;
	test_cfg.sum_shift = PMA_SUM_SHIFT_MIN;
	test_cfg.slab_keep = 0;
	if (!getenv("PMA_PARTS_GLOBAL_ONLY"))
		test_cfg.flags |= PMA_HEAP_LOCAL_CHECKPOINTS;
	if (getenv("PMA_PARTS_RINGS"))
		test_cfg.flags |= PMA_HEAP_TEST_XRING;
	if (getenv("PMA_PARTS_MORPH") &&
	    pma_config_set_morph(&test_cfg, 100, 0) < 0)
		_exit(10);
	work.two_cpus = sched_getaffinity(0, sizeof(set), &set) == 0 &&
			CPU_ISSET(0, &set) && CPU_ISSET(1, &set);
	if (test_heap_open(path, PMA_HEAP_FORMAT, &work.heap) ||
	    pma_root(work.heap, NSLOTS * 8, &root))
		_exit(8);
	work.tab[0] = pma_direct(work.heap, root);
	/* the table of part 1: allocated there directly */
	h1 = pma_part_heap(work.heap, 1);
	if (!h1 || work.heap->nsib != 2 * work.nreg ||
	    pma_alloc_to(h1, NSLOTS * 8, &work.tab[0][0],
			 PMA_ALLOC_ZERO | PMA_ALLOC_HERE))
		_exit(9);
	work.tab[1] = pma_direct(work.heap, work.tab[0][0]);
	for (i = 0; i < PMA_MAX_SLOTS; i++)
		if (work.heap->sib[i])
			work.heap->sib[i]->ext1_pages = 8;
	for (i = 0; i < 2 * NSLOTS; i++)
		pthread_mutex_init(&work.locks[i], NULL);
	work.rnd = rnd;
	work.maps[0] = work.heap->map;
	work.maps[1] = h1->map;
	work.morph = getenv("PMA_PARTS_MORPH") != NULL;
	/* forced morphing: worker 0 prefills in its own arena, then arms */
	if (!work.morph) {
		crash_sweep_arm_parts(work.maps, 2);
		atomic_store(&work.armed, 1);
	}
	for (i = 0; i < NTHREADS * work.nreg; i++) {
		pthread_create(&tid[i], NULL, worker, (void *)(uintptr_t)i);
		while (atomic_load(&work.started) <= i)
			sched_yield();
	}
	for (i = 0; i < NTHREADS * work.nreg; i++)
		pthread_join(tid[i], NULL);
	fprintf(stderr,
		"# run: %lu fallbacks, %lu frees of the other part's blocks "
		"(%lu XFREE), %lu of another region of the part, "
		"SYNC_FREEs %lu + %lu (carried %lu + %lu), "
		"local checkpoints %lu + %lu, morphs %lu + %lu, "
		"ring frees %lu (applied %lu)\n",
		atomic_load(&work.heap->fallbacks),
		atomic_load(&work.heap->remote_part_frees),
		atomic_load(&work.heap->xfrees), atomic_load(&work.xregion),
		atomic_load(&work.heap->rfrees_synced),
		atomic_load(&h1->rfrees_synced),
		atomic_load(&work.heap->syncs_carried),
		atomic_load(&h1->syncs_carried),
		atomic_load(&work.heap->local_checkpoints),
		atomic_load(&h1->local_checkpoints),
		atomic_load(&work.heap->slabs_morphed),
		atomic_load(&h1->slabs_morphed),
		atomic_load(&work.heap->xring_frees),
		atomic_load(&work.heap->xring_applied));
	/* (the run line shows the SYNC_FREEs carried on an op's fence,
	 * which a torn image may cut between the two records: how many
	 * depends on the threads' timing, from 1 to 20 a run) */
	crash_sweep_finish(atomic_load(&work.heap->xfrees) +
			   atomic_load(&work.heap->xring_frees));
}

/* ------------------------------------------------------------ checks */

/* live blocks (a mixed slab's old ones too) and extents over the regions
 * of part */
static uint64_t part_live_all(struct pma_heap *top, unsigned part)
{
	uint64_t live = 0;
	unsigned i;

	for (i = 0; i < top->nreg; i++)
		if (top->sib[part * top->nreg + i])
			live += pma_check_live(top->sib[part * top->nreg + i],
					       NULL, 0, 0);
	return live;
}

struct fsck_first {
	enum pool_fsck_severity min;
	char text[200];
};

static int fsck_note(const struct pool_fsck_finding *f, void *arg)
{
	struct fsck_first *first = arg;

	if (f->severity >= first->min && !first->text[0])
		snprintf(first->text, sizeof(first->text), "%s: %s", f->code,
			 f->message);
	return 0;
}

/* fsck's check of the pool format of the pair (pool_fsck_parts: part
 * 1's image, not the pool's part at its path hint), then its walk of both
 * parts' heaps (a read-only open of the pair): no finding of severity min
 * or more (the first one in why) */
static int fsck_image(const char *file, enum pool_fsck_severity min,
		      const char *when, char *why, size_t why_len)
{
	struct fsck_first first = { .min = min };
	struct pool_fsck_sink sink = { .fn = fsck_note, .arg = &first };
	char part1[128];
	const char *paths[2] = { file, part1 };
	struct pma_heap *heap;
	unsigned long n = 0;
	unsigned sev;
	int rc;

	crash_sweep_part_path(file, 1, part1, sizeof(part1));
	if (pool_fsck_parts(paths, 2, &sink, 0) < 0) {
		snprintf(why, why_len, "fsck %s: pool check: %s", when,
			 pool_errormsg());
		return -1;
	}
	if (open_image(file, PMA_HEAP_RDONLY, &heap) < 0) {
		snprintf(why, why_len, "fsck %s: rdonly open: %s", when,
			 pma_errormsg());
		return -1;
	}
	rc = pma_fsck_heap(heap, &sink);
	pma_heap_close(heap);
	for (sev = min; sev <= POOL_FSCK_ERROR; sev++)
		n += sink.counts[sev];
	if (rc < 0)
		snprintf(why, why_len, "fsck %s: %s", when, pma_errormsg());
	else if (n)
		snprintf(why, why_len, "fsck %s: %lu findings (%s)", when, n,
			 first.text);
	return rc < 0 || n ? -1 : 0;
}

/* regions per part the sweep's pools have */
static unsigned regions_env(void)
{
	return getenv("PMA_PARTS_REGIONS") ? 2 : 1;
}

static int check_heap(const char *file, unsigned *ret_live, char *why,
		      size_t why_len)
{
	struct pma_heap_stats ro, rw;
	struct pma_heap *heap;
	uint64_t root = 0, offs[2 * NSLOTS], *tab[2], live;
	unsigned s, n = 0, named_in[2] = { 0, 0 };

	if (fsck_image(file, POOL_FSCK_ERROR, "before recovery", why, why_len) <
	    0)
		return -1;
	if (open_image(file, PMA_HEAP_RDONLY, &heap) < 0) {
		snprintf(why, why_len, "rdonly open: %s", pma_errormsg());
		return -1;
	}
	if (pma_heap_stats(heap, &ro) < 0) {
		snprintf(why, why_len, "rdonly stats: %s", pma_errormsg());
		pma_heap_close(heap);
		return -1;
	}
	pma_heap_close(heap);
	if (open_image(file, 0, &heap) < 0) {
		snprintf(why, why_len, "open: %s", pma_errormsg());
		return -1;
	}
	CHECK(heap->nsib == 2 * heap->nreg && heap->nreg == regions_env(),
	      "%u heaps of %u regions per part", heap->nsib, heap->nreg);
	/* (a read-only open does not apply the free rings: their blocks
	 * still count as used there) */
	CHECK(pma_heap_stats(heap, &rw) == 0 &&
		      (getenv("PMA_PARTS_RINGS") ?
			       ro.used_bytes >= rw.used_bytes :
			       ro.used_bytes == rw.used_bytes &&
				       ro.free_bytes == rw.free_bytes &&
				       ro.extents == rw.extents),
	      "read-only view differs (used %llu/%llu free %llu/%llu)",
	      (unsigned long long)ro.used_bytes,
	      (unsigned long long)rw.used_bytes,
	      (unsigned long long)ro.free_bytes,
	      (unsigned long long)rw.free_bytes);
	CHECK(pma_root(heap, NSLOTS * 8, &root) == 0, "root: %s",
	      pma_errormsg());
	tab[0] = pma_direct(heap, root);
	CHECK(tab[0][0] >> 56 == 1 &&
		      pma_usable_size(heap, tab[0][0]) >= NSLOTS * 8,
	      "table 1 word 0x%llx", (unsigned long long)tab[0][0]);
	tab[1] = pma_direct(heap, tab[0][0]);
	for (s = 1; s < 2 * NSLOTS; s++) {
		uint64_t v = tab[s / NSLOTS][s % NSLOTS];

		if (!v)
			continue;
		if (pma_check_usable(heap, s, v, slot_size(s), why, why_len) <
		    0)
			goto out_close;
		named_in[(v >> 56) & 1]++;
		offs[n++] = v;
	}
	if (pma_check_unique(offs, n, why, why_len) < 0)
		goto out_close;
	/* part 0: the named blocks there and the root; part 1: the named
	 * ones and table 1 */
	live = part_live_all(heap, 0);
	CHECK(live == named_in[0] + 1ULL, "part 0: %llu live, %u named + root",
	      (unsigned long long)live, named_in[0]);
	live = part_live_all(heap, 1);
	CHECK(live == named_in[1] + 1ULL, "part 1: %llu live, %u named + table",
	      (unsigned long long)live, named_in[1]);
	*ret_live = n;
	for (s = 1; s < 2 * NSLOTS; s++)
		CHECK(pma_free_from(heap, &tab[s / NSLOTS][s % NSLOTS]) == 0,
		      "free slot %u: %s", s, pma_errormsg());
	CHECK(part_live_all(heap, 0) == 1 && part_live_all(heap, 1) == 1,
	      "blocks live after freeing all");
	for (s = 1; s < 2 * NSLOTS; s += 3)
		CHECK(pma_malloc_to(heap, slot_size(s),
				    &tab[s / NSLOTS][s % NSLOTS]) == 0,
		      "malloc slot %u: %s", s, pma_errormsg());
	pma_heap_close(heap);
	/* recovered, used and closed: nothing at all */
	return fsck_image(file, POOL_FSCK_INFO, "after recovery", why, why_len);

out_close:
	pma_heap_close(heap);
	return -1;
}

static int recover_only(const char *file)
{
	struct pma_heap *heap;

	if (open_image(file, 0, &heap))
		return 1;
	pma_heap_close(heap);
	return 0;
}

static const struct crash_sweep_ops parts_ops = {
	.name = "pmalloc-parts",
	.workload = child_run,
	.check = check_heap,
	.recover = recover_only,
	.dump = NULL,
	.stat_name = "live slots",
	.extra_name = "XFREEs and ring frees (frees across parts or regions)",
};

static struct crash_sweep sweeps[] = {
	{ .name = "parts durable", .runs = 2, .nparts = 2 },
	{ .name = "parts torn",
	  .seed_base = 0x9a470000,
	  .runs = 2,
	  .nparts = 2 },
	{ .name = "parts recrash",
	  .seed_base = 0x9a47abcd0000,
	  .recrash_every = 2,
	  .recrash_fences = 3,
	  .runs = 1,
	  .nparts = 2 },
	{ .name = "parts byte torn",
	  .seed_base = 0x9a47b1700000,
	  .runs = 1,
	  .byte = 1,
	  .nparts = 2 },
	{ .name = "parts global torn",
	  .seed_base = GLOBAL_ONLY | 0x9a4760000,
	  .runs = 2,
	  .nparts = 2 },
	{ .name = "parts global recrash",
	  .seed_base = GLOBAL_ONLY | 0x9a47ab600000,
	  .recrash_every = 2,
	  .recrash_fences = 3,
	  .runs = 1,
	  .nparts = 2 },
	{ .name = "parts morph torn",
	  .seed_base = MORPH_FORCED | 0x9a47e0000,
	  .runs = 2,
	  .nparts = 2 },
	{ .name = "parts morph global torn",
	  .seed_base = MORPH_FORCED | GLOBAL_ONLY | 0x9a47e7000,
	  .runs = 1,
	  .nparts = 2 },
	{ .name = "regions torn",
	  .seed_base = REGIONS2 | 0x9a4720000,
	  .runs = 1,
	  .nparts = 2 },
	{ .name = "regions recrash",
	  .seed_base = REGIONS2 | 0x9a47ab200000,
	  .recrash_every = 2,
	  .recrash_fences = 3,
	  .runs = 1,
	  .nparts = 2 },
	{ .name = "rings durable", .seed_base = 0, .runs = 1, .nparts = 2 },
	{ .name = "rings torn",
	  .seed_base = RINGS | REGIONS2 | 0x9a4740000,
	  .runs = 2,
	  .nparts = 2 },
	{ .name = "rings recrash",
	  .seed_base = RINGS | REGIONS2 | 0x9a47ab400000,
	  .recrash_every = 2,
	  .recrash_fences = 3,
	  .runs = 1,
	  .nparts = 2 },
	{ .name = "rings byte torn",
	  .seed_base = RINGS | 0x9a47b1400000,
	  .runs = 1,
	  .byte = 1,
	  .nparts = 2 },
};

static void test_sweep(void **state)
{
	struct crash_sweep sw = *(const struct crash_sweep *)*state;
	cpu_set_t set;

	/* the threads run on the two nodes' CPUs */
	if (sched_getaffinity(0, sizeof(set), &set) < 0 ||
	    !CPU_ISSET(0, &set) || !CPU_ISSET(1, &set))
		skip();
	if (sw.seed_base & GLOBAL_ONLY)
		setenv("PMA_PARTS_GLOBAL_ONLY", "1", 1);
	else
		unsetenv("PMA_PARTS_GLOBAL_ONLY");
	if (sw.seed_base & MORPH_FORCED)
		setenv("PMA_PARTS_MORPH", "1", 1);
	else
		unsetenv("PMA_PARTS_MORPH");
	if (sw.seed_base & REGIONS2)
		setenv("PMA_PARTS_REGIONS", "2", 1);
	else
		unsetenv("PMA_PARTS_REGIONS");
	if ((sw.seed_base & RINGS) || !strcmp(sw.name, "rings durable"))
		setenv("PMA_PARTS_RINGS", "1", 1);
	else
		unsetenv("PMA_PARTS_RINGS");
	pma_check_sweep(&parts_ops, &sw);
	assert_true(sw.fences > 2ULL * OPS_PER_THREAD * sw.runs / 2);
	assert_int_equal(sw.images, sw.fences);
	/* blocks were freed from the other part's node, logged XFREE */
	assert_true(sw.extra > 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		{ "test_sweep_durable", test_sweep, NULL, NULL, &sweeps[0] },
		{ "test_sweep_torn", test_sweep, NULL, NULL, &sweeps[1] },
		{ "test_sweep_recrash", test_sweep, NULL, NULL, &sweeps[2] },
		{ "test_sweep_byte_torn", test_sweep, NULL, NULL, &sweeps[3] },
		{ "test_sweep_global_torn", test_sweep, NULL, NULL,
		  &sweeps[4] },
		{ "test_sweep_global_recrash", test_sweep, NULL, NULL,
		  &sweeps[5] },
		{ "test_sweep_morph_torn", test_sweep, NULL, NULL, &sweeps[6] },
		{ "test_sweep_morph_global_torn", test_sweep, NULL, NULL,
		  &sweeps[7] },
		{ "test_sweep_regions_torn", test_sweep, NULL, NULL,
		  &sweeps[8] },
		{ "test_sweep_regions_recrash", test_sweep, NULL, NULL,
		  &sweeps[9] },
		{ "test_sweep_rings_durable", test_sweep, NULL, NULL,
		  &sweeps[10] },
		{ "test_sweep_rings_torn", test_sweep, NULL, NULL,
		  &sweeps[11] },
		{ "test_sweep_rings_recrash", test_sweep, NULL, NULL,
		  &sweeps[12] },
		{ "test_sweep_rings_byte_torn", test_sweep, NULL, NULL,
		  &sweeps[13] },
	};

	/* e.g. "*rings*": one kind of sweep */
	if (getenv("CRASH_SWEEP_FILTER"))
		cmocka_set_test_filter(getenv("CRASH_SWEEP_FILTER"));
	return pma_check_main(&parts_ops, argc, argv, tests,
			      sizeof(tests) / sizeof(tests[0]), NULL);
}
