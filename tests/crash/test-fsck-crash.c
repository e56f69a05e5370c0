/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-fsck-crash: every crash image of a short PMAlloc workload checks
 * consistent with fsck (issue 20): before recovery (no error: a crash
 * leaves only states recovery accepts; a torn log tail is information)
 * and after a writable open has recovered it (no error and no warning).
 * The workload (one thread, both arenas, small blocks, extents in both
 * log forms, every free remote, checkpoints that release empty slabs) runs
 * under the crash-sweep driver (tests/lib/crash-sweep.c), which images
 * every fence: durable lines only, and with random dirty words too.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pmalloc.h"
#include "pmalloc/fsck.h"
#include "pmalloc/internal.h"
#include "pool/fsck.h"
#include "crash-sweep.h"

#define HEAP_SIZE (4ULL << 20)
#define NSLOTS 32
#define NOPS 160

static size_t slot_size(unsigned s)
{
	uint32_t h = s * 2654435761u;

	if (s % 5 == 2)
		return 16384 + (h >> 16) % (100 * 1024);
	return 1 + (h >> 8) % 3000;
}

static void workload(const char *path, uint64_t rnd)
{
	struct pma_heap *heap;
	uint64_t root, *slots;
	unsigned i, s;

	pma_format_opts.sum_shift = PMA_SUM_SHIFT_MIN;
	pma_slab_keep = 0;
	if (pma_heap_create(path, HEAP_SIZE, PMA_HEAP_FORCE, &heap) ||
	    pma_root(heap, NSLOTS * 8, &root))
		_exit(7);
	slots = pma_direct(heap, root);
	heap->ext1_pages = 8; /* both extent record forms */
	rnd = rnd * 0x9e3779b97f4a7c15ULL + 1; /* never 0: xorshift */
	crash_sweep_arm(heap->map);
	for (i = 0; i < NOPS; i++) {
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		s = (unsigned)(rnd % NSLOTS);
		/* a slot allocates in arena s % 2 and frees through the
		 * other: every free is remote (RFREE, EXT_FREE) */
		pma_arena_bind(heap, (s + (slots[s] != 0)) % 2);
		if (slots[s] ? pma_free_from(heap, &slots[s]) :
			       pma_malloc_to(heap, slot_size(s), &slots[s]))
			_exit(4);
		if (i % 50 == 49 && pma_heap_checkpoint(heap))
			_exit(5);
	}
	crash_sweep_finish(0);
}

struct tally {
	unsigned long count[3];
	char first[256]; /* the first error or warning */
};

static int on_finding(const struct pool_fsck_finding *f, void *arg)
{
	struct tally *t = arg;

	t->count[f->severity]++;
	if (f->severity != POOL_FSCK_INFO && !t->first[0])
		snprintf(t->first, sizeof(t->first), "%s: %s", f->code,
			 f->message);
	return 0;
}

/* fsck the file; -1 with why if it found an error (or, strict, a
 * warning) or could not run */
static int fsck_file(const char *file, int strict, const char *when, char *why,
		     size_t why_len)
{
	struct tally t = { { 0 }, "" };
	struct pool_fsck_sink sink = { .fn = on_finding, .arg = &t };
	int rc;

	rc = pool_fsck(file, &sink);
	if (rc == 0)
		rc = pma_fsck(file, &sink);
	if (rc < 0) {
		snprintf(why, why_len, "fsck %s: cannot run: %s", when,
			 pma_errormsg());
		return -1;
	}
	if (t.count[POOL_FSCK_ERROR] ||
	    (strict && t.count[POOL_FSCK_WARNING])) {
		snprintf(why, why_len, "fsck %s: %s", when, t.first);
		return -1;
	}
	return 0;
}

static int check(const char *file, unsigned *ret_stat, char *why,
		 size_t why_len)
{
	struct pma_heap *heap;

	*ret_stat = 0;
	if (fsck_file(file, 0, "before recovery", why, why_len) < 0)
		return -1;
	if (pma_heap_open(file, 0, &heap) < 0) {
		snprintf(why, why_len, "open: %s", pma_errormsg());
		return -1;
	}
	pma_heap_close(heap);
	return fsck_file(file, 1, "after recovery", why, why_len);
}

static int recover(const char *file)
{
	struct pma_heap *heap;

	if (pma_heap_open(file, 0, &heap))
		return 1;
	pma_heap_close(heap);
	return 0;
}

static const struct crash_sweep_ops fsck_ops = {
	.name = "fsck",
	.workload = workload,
	.check = check,
	.recover = recover,
	.stat_name = "-",
	.extra_name = "-",
};

static void test_sweep(void **state)
{
	struct crash_sweep sw = *(const struct crash_sweep *)*state;

	if (crash_sweep_run(&fsck_ops, &sw) < 0)
		fail_msg("%s failed", sw.name);
	/* the workload ran: at least a fence per op, each one imaged */
	assert_true(sw.fences >= (uint64_t)NOPS * sw.runs);
	assert_int_equal(sw.images, sw.fences);
}

static struct crash_sweep sweeps[] = {
	{ .name = "durable", .runs = 3 },
	{ .name = "torn", .seed_base = 0xf5c40000, .runs = 3 },
};

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		{ "test_fsck_sweep_durable", test_sweep, NULL, NULL,
		  &sweeps[0] },
		{ "test_fsck_sweep_torn", test_sweep, NULL, NULL, &sweeps[1] },
	};
	int rc;

	rc = crash_sweep_main(&fsck_ops, argc, argv);
	if (rc >= 0)
		return rc;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	crash_sweep_cleanup();
	return rc;
}
