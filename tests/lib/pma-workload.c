/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pma-workload: a small PMAlloc client for CLI tests.
 *   pma-workload PATH COUNT SIZE [crash]
 * opens (formatting if needed) the heap of the pool at PATH, allocates
 * COUNT blocks of SIZE bytes into slots of the root object, frees every
 * third one, and closes the heap, or with "crash" _exit()s without closing
 * so the log keeps its records for `pmactl log` and recovery to see.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pmalloc.h"

static int fail(const char *what)
{
	fprintf(stderr, "pma-workload: %s: %s\n", what, pma_errormsg());
	return 1;
}

int main(int argc, char **argv)
{
	struct pma_heap *heap;
	uint64_t root, *slots;
	unsigned long i, count, size;

	if (argc < 4 || argc > 5 || (argc == 5 && strcmp(argv[4], "crash"))) {
		fprintf(stderr,
			"usage: pma-workload PATH COUNT SIZE [crash]\n");
		return 2;
	}
	count = strtoul(argv[2], NULL, 0);
	size = strtoul(argv[3], NULL, 0);
	if (pma_heap_open(argv[1], PMA_HEAP_FORMAT, &heap) < 0)
		return fail("open");
	if (pma_root(heap, (count + 1) * sizeof(uint64_t), &root) < 0)
		return fail("root");
	slots = pma_direct(heap, root);
	for (i = 0; i < count; i++)
		if (pma_malloc_to(heap, size, &slots[i]) < 0)
			return fail("malloc_to");
	for (i = 0; i < count; i += 3)
		if (pma_free_from(heap, &slots[i]) < 0)
			return fail("free_from");
	if (argc == 5)
		_exit(0); /* a crash: no checkpoint, no close */
	pma_heap_close(heap);
	return 0;
}
