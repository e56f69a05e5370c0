/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tests/lib/crash-fsck: pmactl fsck's offline check (pool_fsck, then
 * pma_fsck: the pool format and every part's heap) of a crash image, for
 * the crash-simulation sweeps (test-pmalloc-crash, -compact-crash,
 * -format-crash): a crash image before recovery must hold no error (what
 * recovery finishes is at most an info, like a torn append), and the
 * image after recovery and a close no finding at all.
 */
#ifndef PMAD_TESTS_CRASH_FSCK_H
#define PMAD_TESTS_CRASH_FSCK_H

#include <stddef.h>

#include "pool/fsck.h"

/*
 * Check file: 0 if fsck found nothing of severity min or more, else -1
 * with "fsck WHEN: " and the number of such findings and the first one
 * (or why the check could not run) in why. A sweep that checks only
 * every Nth image sets the environment variable CRASH_FSCK_EVERY=N
 * (default 1: every image; the calls of each min are counted apart, so
 * a check before and one after recovery keep their turns): the others
 * return 0 unchecked.
 */
int crash_fsck(const char *file, enum pool_fsck_severity min, const char *when,
	       char *why, size_t why_len);

/* images crash_fsck checked and what they took (seconds), this process */
void crash_fsck_stats(unsigned long *ret_checked, double *ret_seconds);
/* print them: "# fsck: N images checked in T s" (a main's last line) */
void crash_fsck_report(void);

#endif
