/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz-heap: libFuzzer target for the PMAlloc open / recovery path. Each
 * input is a patch script (heap-script.h) applied to a copy of the
 * crashed heap image of heap-image.c; the
 * patched pool is opened read-only (pmactl inspect --heap / log), then
 * writable, and if it opens it serves a bounded set of frees and
 * allocations, a checkpoint, a close and a second open. Every failure
 * must be a negative errno with a message; a rejected open and every
 * read-only open must leave the file untouched. Anything else aborts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heap-image.h"
#include "pmalloc.h"
#include "pmalloc/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ------------------------------------------------------------ checks */

static int log_count(const struct pma_log_entry *e, void *arg)
{
	unsigned long *n = arg;

	if (!e->type)
		abort();
	(*n)++;
	return 0;
}

/* what pmactl inspect --heap and pmactl log read */
static void inspect(struct pma_heap *heap)
{
	struct pma_heap_stats st;
	unsigned long n = 0;
	uint64_t root;
	unsigned i;

	check_rc(pma_heap_stats(heap, &st), "pma_heap_stats");
	check_rc(pma_log_foreach(heap, log_count, &n), "pma_log_foreach");
	root = ((struct pma_heap_hdr *)(void *)(fx.map + fx.region))->root_off;
	(void)pma_usable_size(heap, root);
	for (i = 0; i < NSLOTS; i++)
		(void)pma_usable_size(heap,
				      pool_off_make(0, fx.root + i * 8ULL));
}

/* a bounded set of operations on an opened heap */
static void exercise(struct pma_heap *heap, unsigned salt)
{
	uint64_t local[4] = { 0 }, *slots, root;
	unsigned i;
	int rc;

	rc = pma_root(heap, NSLOTS * sizeof(uint64_t), &root);
	check_rc(rc, "pma_root");
	slots = rc == 0 ? pma_direct(heap, root) : NULL;
	for (i = 0; slots && i < NSLOTS; i++)
		if (slots[i] && (i + salt) % 3 == 0)
			check_rc(pma_free_from(heap, &slots[i]),
				 "pma_free_from");
	for (i = 0; slots && i < NSLOTS; i++)
		if (!slots[i])
			check_rc(pma_malloc_to(heap, sizes[(i + salt) % NSIZES],
					       &slots[i]),
				 "pma_malloc_to");
	for (i = 0; i < 4; i++)
		check_rc(pma_malloc_to(heap, sizes[(i * 3 + salt) % NSIZES],
				       &local[i]),
			 "pma_malloc_to");
	check_rc(pma_heap_checkpoint(heap), "pma_heap_checkpoint");
	for (i = 0; i < 4; i++)
		check_rc(pma_free_from(heap, &local[i]), "pma_free_from");
	inspect(heap);
}

static void must_be_unchanged(const char *what)
{
	if (memcmp(fx.map, fx.patched, POOL_SIZE)) {
		fprintf(stderr, "fuzz-heap: %s wrote the pool\n", what);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pma_heap *heap;
	struct heap_cmd c;
	unsigned i;
	int rc;

	if (!fx.map)
		setup_file(POOL_DATA_OFF + 4 * 1024 * 1024);
	memcpy(fx.patched, fx.pristine, POOL_SIZE);
	for (i = 0; heap_script_cmd(data, size, i, &c) == 0; i++)
		cmd_apply(&c);
	memcpy(fx.map, fx.patched, POOL_SIZE);

	rc = pma_heap_open(fx.path, PMA_HEAP_RDONLY, &heap);
	check_rc(rc, "read-only pma_heap_open");
	if (rc == 0) {
		inspect(heap);
		pma_heap_close(heap);
	}
	must_be_unchanged("a read-only open");

	rc = pma_heap_open(fx.path, 0, &heap);
	check_rc(rc, "pma_heap_open");
	if (rc < 0) {
		must_be_unchanged("a rejected open");
		return 0;
	}
	exercise(heap, (unsigned)size);
	pma_heap_close(heap);
	/* what the library wrote itself must open again */
	rc = pma_heap_open(fx.path, 0, &heap);
	check_rc(rc, "second pma_heap_open");
	if (rc < 0)
		die("a heap that opened, after close, does not open again");
	pma_heap_close(heap);
	return 0;
}
