/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-pmalloc-format-crash: crash sweep of the PM writes before a heap is
 * in steady use (--enable-crash-sim): pool creation, heap format (region
 * add + heap metadata), the root object and the first allocation. The test
 * re-runs itself with PM_CRASH_AT=N for every fence N of that sequence; each
 * crash image must be "not a pool yet", "a pool without a heap" (which
 * PMA_HEAP_FORMAT then formats), or a heap whose root slot is 0 or names a
 * live block, with no leaked block, that keeps working. A second sweep
 * places the root on a block that held non-zero bytes: the root must read
 * as zeros in every image (pma_root zeroes durably).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "pmalloc.h"
#include "pmem/crash.h"
#include "../lib/crash-fsck.h"

#define HEAP_SIZE (8ULL << 20)
#define ROOT_SIZE 256
#define BLOCK_SIZE 100

static char path[64];
static const char *self;

/*
 * Before a "reuse" sweep: a heap in which a block of the root's size was
 * filled with non-zero bytes and freed, so the root will likely be placed
 * on it and a zeroing that is not durable shows. Runs uncrashed.
 */
static uint64_t prepare_dirty_heap(void)
{
	struct pma_heap *heap;
	uint64_t junk = 0, off;

	assert_int_equal(
		pma_heap_create(path, HEAP_SIZE, PMA_HEAP_FORCE, &heap), 0);
	assert_int_equal(pma_malloc_to(heap, ROOT_SIZE, &junk), 0);
	memset(pma_direct(heap, junk), 0xa5, ROOT_SIZE);
	off = junk;
	assert_int_equal(pma_free_from(heap, &junk), 0);
	pma_heap_close(heap); /* checkpoints: the 0xa5 bytes are durable */
	return off;
}

/* the reuse sweep means something only if the root lands on the block */
static void test_root_reuses_dirty_block(void **state)
{
	struct pma_heap *heap;
	uint64_t junk, root;

	(void)state;
	junk = prepare_dirty_heap();
	assert_int_equal(pma_heap_open(path, 0, &heap), 0);
	assert_int_equal(pma_root(heap, ROOT_SIZE, &root), 0);
	assert_int_equal(root, junk);
	pma_heap_close(heap);
}

/*
 * The child: "fresh": create the pool and heap; "reuse": open the prepared
 * heap. Then the root and one allocation into it; exit 0 at the end.
 */
static int child(const char *mode, const char *p)
{
	struct pma_heap *heap;
	uint64_t root, *slots;
	int rc;

	if (!strcmp(mode, "fresh"))
		rc = pma_heap_create(p, HEAP_SIZE, PMA_HEAP_FORCE, &heap);
	else
		rc = pma_heap_open(p, 0, &heap);
	if (rc < 0 || pma_root(heap, ROOT_SIZE, &root) < 0)
		return 1;
	slots = pma_direct(heap, root);
	if (pma_malloc_to(heap, BLOCK_SIZE, &slots[0]) < 0)
		return 1;
	pma_heap_close(heap);
	return 0;
}

/* run the child with PM_CRASH_AT=n (and PM_CRASH_SEED=seed: torn dirty
 * lines, unless 0); its exit status */
static int run_child(const char *mode, unsigned n, unsigned seed)
{
	char at[16], sd[16];
	pid_t pid;
	int status;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		snprintf(at, sizeof(at), "%u", n);
		snprintf(sd, sizeof(sd), "%u", seed);
		setenv("PM_CRASH_AT", at, 1);
		setenv("PM_CRASH_SEED", sd, 1);
		execl(self, self, mode, path, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static uint64_t live_blocks(struct pma_heap *heap)
{
	struct pma_heap_stats st;
	uint64_t live;
	unsigned c;

	assert_int_equal(pma_heap_stats(heap, &st), 0);
	live = st.extents;
	for (c = 0; c < st.nclasses; c++)
		live += st.classes[c].used;
	return live;
}

/* open whatever the crash left, formatting a heap if there is none */
static struct pma_heap *open_image(unsigned n)
{
	struct pma_heap *heap = NULL;
	int rc;

	rc = pma_heap_open(path, 0, &heap);
	if (rc == 0)
		return heap;
	/* not a pool yet: nothing to check */
	if (rc == -EINVAL && strstr(pma_errormsg(), "not a pmad pool"))
		return NULL;
	/* a pool whose heap never got committed: format it now */
	rc = pma_heap_open(path, PMA_HEAP_FORMAT, &heap);
	if (rc < 0)
		fail_msg("fence %u: cannot open or format: %d %s", n, rc,
			 pma_errormsg());
	return heap;
}

/* the image's invariants, then use the heap */
static void check_image(unsigned n)
{
	struct pma_heap *heap = open_image(n);
	uint64_t root, *slots, live;
	char why[512];
	unsigned i;

	if (!heap)
		return;
	assert_int_equal(pma_root(heap, ROOT_SIZE, &root), 0);
	slots = pma_direct(heap, root);
	assert_non_null(slots);
	/* the root is zeroed durably before it exists; only slot 0 is used */
	for (i = 1; i < ROOT_SIZE / sizeof(*slots); i++)
		if (slots[i])
			fail_msg("fence %u: root word %u is not zero", n, i);
	live = live_blocks(heap);
	if (slots[0]) {
		if (pma_usable_size(heap, slots[0]) < BLOCK_SIZE)
			fail_msg("fence %u: slot names no live block", n);
		assert_int_equal(live, 2); /* root + block */
	} else {
		assert_int_equal(live, 1); /* root only: nothing leaked */
	}
	assert_int_equal(pma_free_from(heap, &slots[0]), 0);
	assert_int_equal(pma_malloc_to(heap, BLOCK_SIZE, &slots[0]), 0);
	pma_heap_close(heap);
	/* pmactl fsck: recovered (or formatted), used and closed, no
	 * finding at all (before recovery the image may not be a pool) */
	if (crash_fsck(path, POOL_FSCK_INFO, "after recovery", why,
		       sizeof(why)) < 0)
		fail_msg("fence %u: %s", n, why);
}

/* crash at every fence; seed 0: durable image, else plus torn lines */
static unsigned sweep(const char *mode, unsigned seed)
{
	unsigned n, crashes = 0;
	int status = -1;

	for (n = 1; n < 10000; n++) {
		if (!strcmp(mode, "reuse"))
			(void)prepare_dirty_heap();
		status = run_child(mode, n, seed ? seed + n : 0);
		if (status == 0)
			break;
		assert_int_equal(status, PM_CRASH_EXIT_CODE);
		crashes++;
		check_image(n);
	}
	assert_int_equal(status, 0);
	return crashes;
}

static void test_format_sweep(void **state)
{
	unsigned durable, torn, reuse, seed;

	(void)state;
	durable = sweep("fresh", 0);
	torn = sweep("fresh", 1000);
	reuse = sweep("reuse", 0);
	for (seed = 1; seed <= 16; seed++) /* torn images vary by seed */
		reuse += sweep("reuse", seed * 1000);
	print_message("# %u + %u crash images checked (every fence of "
		      "create, format, root, first allocation; durable, "
		      "torn); %u of root + allocation on a reused block\n",
		      durable, torn, reuse);
	assert_true(durable >= 5 && reuse >= 4);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_reuses_dirty_block),
		cmocka_unit_test(test_format_sweep),
	};
	unsigned long nchecked;
	double seconds;
	int rc;

	if (argc == 3 &&
	    (!strcmp(argv[1], "fresh") || !strcmp(argv[1], "reuse")))
		return child(argv[1], argv[2]);
	self = argv[0];
	snprintf(path, sizeof(path), "/dev/shm/test-pmaf.%d", (int)getpid());
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	crash_fsck_stats(&nchecked, &seconds);
	printf("# fsck: %lu images checked in %.1f s\n", nchecked, seconds);
	unlink(path);
	return rc;
}
