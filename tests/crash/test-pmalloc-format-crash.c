/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-pmalloc-format-crash: crash sweep of the PM writes before a heap is
 * in steady use (--enable-crash-sim): pool creation, heap format (region
 * add + heap metadata), the root object and the first allocation. The test
 * re-runs itself with PM_CRASH_AT=N for every fence N of that sequence; each
 * crash image must be "not a pool yet", "a pool without a heap" (which
 * PMA_HEAP_FORMAT then formats), or a heap whose root slot is 0 or names a
 * live block, with no leaked block, that keeps working.
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

#define HEAP_SIZE (8ULL << 20)
#define ROOT_SIZE 256
#define BLOCK_SIZE 100

static char path[64];
static const char *self;

/* the child: create, format, root, one allocation; exit 0 at the end */
static int child(const char *p)
{
	struct pma_heap *heap;
	uint64_t root, *slots;

	if (pma_heap_create(p, HEAP_SIZE, PMA_HEAP_FORCE, &heap) < 0 ||
	    pma_root(heap, ROOT_SIZE, &root) < 0)
		return 1;
	slots = pma_direct(heap, root);
	if (pma_malloc_to(heap, BLOCK_SIZE, &slots[0]) < 0)
		return 1;
	pma_heap_close(heap);
	return 0;
}

/* run the child with PM_CRASH_AT=n (and PM_CRASH_SEED=seed: torn dirty
 * lines, unless 0); its exit status */
static int run_child(unsigned n, unsigned seed)
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
		execl(self, self, "child", path, (char *)NULL);
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

	if (!heap)
		return;
	assert_int_equal(pma_root(heap, ROOT_SIZE, &root), 0);
	slots = pma_direct(heap, root);
	assert_non_null(slots);
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
}

/* crash at every fence; seed 0: durable image, else plus torn lines */
static unsigned sweep(unsigned seed)
{
	unsigned n, crashes = 0;
	int status = -1;

	for (n = 1; n < 10000; n++) {
		status = run_child(n, seed ? seed + n : 0);
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
	unsigned durable, torn;

	(void)state;
	durable = sweep(0);
	torn = sweep(1000);
	print_message("# %u + %u crash images checked (every fence of "
		      "create, format, root, first allocation; durable, "
		      "torn)\n",
		      durable, torn);
	assert_true(durable >= 5);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_sweep),
	};
	int rc;

	if (argc == 3 && !strcmp(argv[1], "child"))
		return child(argv[2]);
	self = argv[0];
	snprintf(path, sizeof(path), "/dev/shm/test-pmaf.%d", (int)getpid());
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(path);
	return rc;
}
