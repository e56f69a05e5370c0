/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tests/lib/pma-check: the checks of a recovered PMAlloc heap that the
 * crash-simulation sweeps share (test-pmalloc-crash, -compact-crash,
 * -morph-crash, -parts-crash, -root-crash, -add-crash), and their sweep
 * scaffolding (the runs from the environment, main). Each test keeps its
 * workload and what only it checks. A check returns 0, or -1 with why
 * (why_len bytes) set, as crash_sweep_ops.check does.
 *
 * The heaps are opened with the test's struct pma_config (test-cfg.h
 * keeps one per translation unit: pass &test_cfg).
 */
#ifndef PMAD_TESTS_PMA_CHECK_H
#define PMAD_TESTS_PMA_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "crash-sweep.h"

struct pma_heap;
struct pma_config;
struct CMUnitTest;

/* in a check with char *why, size_t why_len and a label out_close that
 * closes what is open: on !cond, why is set and the check goes there */
#define CHECK(cond, ...)                                     \
	do {                                                 \
		if (!(cond)) {                               \
			snprintf(why, why_len, __VA_ARGS__); \
			goto out_close;                      \
		}                                            \
	} while (0)

/* the byte j of slot s's block when its generation word is gen */
unsigned char pma_check_pattern(unsigned s, uint64_t gen, size_t j);

/* the slots of a root that has a generation word per slot: gen[s] 0,
 * the block's bytes are not known durable; else it holds pattern gen */
struct pma_check_slots {
	unsigned n; /* slots */
	uint64_t *slot; /* n block offsets (0: none) */
	uint64_t *gen; /* n generation words */
	size_t (*size)(unsigned s); /* the size slot s asks for */
};

/* the workload's side: allocate slot s (pma_malloc_to's rc) and write
 * its pattern gen; gen[s] is set (persisted) only once the pattern is
 * durable */
int pma_check_slot_alloc(struct pma_heap *heap,
			 const struct pma_check_slots *sl, unsigned s,
			 uint64_t gen);

/* the workload's side: gen[s] cleared (persisted), then slot s freed
 * (pma_free_from's rc) */
int pma_check_slot_free(struct pma_heap *heap, const struct pma_check_slots *sl,
			unsigned s);

/* slot s's block (not 0) is a live block of its size holding its
 * pattern if its gen is set */
int pma_check_slot(struct pma_heap *heap, const struct pma_check_slots *sl,
		   unsigned s, char *why, size_t why_len);

/* every slot whose gen is set names a block, every named block passes
 * pma_check_slot, none is named twice or overlaps another; the number
 * named in *ret_n */
int pma_check_slots(struct pma_heap *heap, const struct pma_check_slots *sl,
		    unsigned *ret_n, char *why, size_t why_len);

/* off (slot s's block) is a live block of at least want bytes */
int pma_check_usable(struct pma_heap *heap, unsigned s, uint64_t off,
		     size_t want, char *why, size_t why_len);

/* sort the n offsets; -1 if one of them stands twice */
int pma_check_unique(uint64_t *offs, unsigned n, char *why, size_t why_len);

/*
 * The live blocks of heap (one heap: a part's or a region's), counted
 * from its own state: the slabs' bitmaps, a mixed slab's old blocks'
 * bits and the extents of the page map. With offs (n sorted offsets),
 * each live block or extent that is neither named there nor root is
 * printed as a leak.
 */
uint64_t pma_check_live(struct pma_heap *heap, const uint64_t *offs, unsigned n,
			uint64_t root);

/* open path with cfg but for its region mask */
int pma_check_open_mask(const struct pma_config *cfg, const char *path,
			uint64_t mask, struct pma_heap **ret_heap);

/* crash_sweep_ops.recover: recover file (an open with cfg, closed);
 * 0 or 1 */
int pma_check_recover(const char *file, const struct pma_config *cfg);

/* the runs of a sweep: PMA_CRASH_RUNS if set, else dflt */
unsigned pma_check_runs(unsigned dflt);

/* a test's sweep: sw->runs from pma_check_runs, then crash_sweep_run;
 * the test fails if an image failed its check */
void pma_check_sweep(const struct crash_sweep_ops *ops, struct crash_sweep *sw);

/*
 * main() of a crash test: crash_sweep_main's helper modes, else the n
 * tests as one cmocka group, then report (may be NULL: e.g.
 * crash_fsck_report) and crash_sweep_cleanup. The exit status.
 */
int pma_check_main(const struct crash_sweep_ops *ops, int argc, char **argv,
		   const struct CMUnitTest *tests, size_t n,
		   void (*report)(void));

#endif
