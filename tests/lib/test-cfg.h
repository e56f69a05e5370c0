/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The heap tuning of a test file: one struct pma_config per translation
 * unit (static), which the test changes where it needs another layout
 * version, summary group, slab keep or checkpoint mode, and the open and
 * create wrappers below pass to the library (flags added to the config's).
 * The library itself has no process-wide tuning.
 */
#ifndef TEST_CFG_H
#define TEST_CFG_H

#include "pmalloc/internal.h"

static struct pma_config test_cfg;

/* back to the library's defaults (also before main) */
__attribute__((constructor)) static void test_cfg_reset(void)
{
	pma_config_init(&test_cfg);
}

static inline struct pma_config test_cfg_with(unsigned flags)
{
	struct pma_config c;

	c = test_cfg;
	c.flags |= flags;
	return c;
}

static inline int test_heap_create(const char *path, uint64_t size,
				   unsigned flags, struct pma_heap **ret_heap)
{
	struct pma_config c = test_cfg_with(flags);

	return pma_heap_create_cfg(path, size, &c, ret_heap);
}

static inline int test_heap_open(const char *path, unsigned flags,
				 struct pma_heap **ret_heap)
{
	struct pma_config c = test_cfg_with(flags);

	return pma_heap_open_cfg(path, &c, ret_heap);
}

static inline int test_heap_open_parts(const char *const *paths,
				       unsigned npaths, unsigned flags,
				       struct pma_heap **ret_heap)
{
	struct pma_config c = test_cfg_with(flags);

	return pma_heap_open_parts_cfg(paths, npaths, &c, ret_heap);
}

#endif
