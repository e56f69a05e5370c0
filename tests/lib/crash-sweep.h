/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tests/lib/crash-sweep: the driver shared by the crash-simulation sweeps
 * (test-pmalloc-crash, test-hdpm-crash). A child process runs a workload;
 * at EVERY fence after crash_sweep_arm() its hook writes the crash image
 * (durable lines only, or plus a random subset of dirty lines in 8-byte
 * words) to a file and waits while the parent recovers a copy and checks
 * it through the test's callbacks. Optionally recovery itself is crashed
 * first (a re-exec of the test with PM_CRASH_AT). A failing image is saved
 * under /tmp/<name>-fail-N/ and can be replayed: `<test> replay FILE`.
 */
#ifndef PMAD_TESTS_CRASH_SWEEP_H
#define PMAD_TESTS_CRASH_SWEEP_H

#include <stddef.h>
#include <stdint.h>

struct pm_map;

#define CRASH_SWEEP_MAX_PARTS 16

/* what a test supplies */
struct crash_sweep_ops {
	const char *name; /* "pmalloc": /tmp/pmalloc-fail-N, work dir name */
	/*
	 * child: create the pool at path, call crash_sweep_arm() with its
	 * map, run the workload (rnd: per-run variation) and end with
	 * crash_sweep_finish(). Any failure: _exit(non-zero).
	 */
	void (*workload)(const char *path, uint64_t rnd);
	/* recover and check a copy of an image; 0, or -1 with why set;
	 * *ret_stat: a number the sweep reports the maximum of */
	int (*check)(const char *file, unsigned *ret_stat, char *why,
		     size_t why_len);
	/* recover only (the re-crashed run); 0 or non-zero */
	int (*recover)(const char *file);
	/* print a decoded image before recovery (may be NULL) */
	void (*dump)(const char *file);
	const char *stat_name; /* "live slots" */
	const char *extra_name; /* "slabs released" */
};

struct crash_sweep {
	const char *name;
	uint64_t seed_base; /* 0: durable images only */
	unsigned recrash_every; /* re-crash recovery of every Nth image */
	unsigned recrash_fences; /* crash recovery at one of its first N */
	unsigned runs; /* workload runs (interleavings) */
	int byte; /* BYTE mappings (eADR), else CACHE_LINE */
	unsigned nparts; /* files per image (0 or 1: one) */
	unsigned images; /* crash images recovered and checked */
	unsigned recrashes; /* of those, re-crashed inside recovery first */
	unsigned stat_max; /* most of ops->check's stat seen in an image */
	uint64_t fences; /* workload fences, all runs */
	uint64_t extra; /* sum of crash_sweep_finish's extra, all runs */
};

/* child: image every later fence of map (the workload starts now) */
void crash_sweep_arm(struct pm_map *map);
/* the same for a pool of n parts: an image is n files, FILE for part 0
 * and FILE.i for part i (crash_sweep_part_path); set sw->nparts = n */
void crash_sweep_arm_parts(struct pm_map *const *maps, unsigned n);
/* the file of part of an image (or pool) file */
void crash_sweep_part_path(const char *file, unsigned part, char *buf,
			   size_t len);
/* child: the workload ended; extra is summed into sweep->extra; exits */
void crash_sweep_finish(uint64_t extra) __attribute__((noreturn));

/* run sw->runs workloads, checking every image; 0 or -1 (after saving
 * the failing image) */
int crash_sweep_run(const struct crash_sweep_ops *ops, struct crash_sweep *sw);

/*
 * main()'s first call: makes the work directory and handles the helper
 * modes `recover FILE` (re-crash child) and `replay FILE`. Returns -1 if
 * main should go on running the tests, else the exit status. Sets
 * PMEM2_FORCE_GRANULARITY=CACHE_LINE unless set.
 */
int crash_sweep_main(const struct crash_sweep_ops *ops, int argc, char **argv);
/* remove the work directory (main's last call) */
void crash_sweep_cleanup(void);

/* copy a file; 0 or -errno */
int crash_sweep_copy_file(const char *from, const char *to);

#endif
