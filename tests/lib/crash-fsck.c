/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tests/lib/crash-fsck (crash-fsck.h): pmactl fsck's offline check of a
 * crash image, as `pmactl fsck FILE` runs it (lib/pool's check of the
 * format, then lib/pmalloc's of every part's heap).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "crash-fsck.h"
#include "pmalloc.h"
#include "pmalloc/fsck.h"

/* calls per severity (CRASH_FSCK_EVERY: before and after recovery
 * count apart), checks made */
static unsigned long calls[POOL_FSCK_ERROR + 1], checked;
static double seconds;

/* the first finding of severity min or more */
struct first {
	enum pool_fsck_severity min;
	char text[256];
};

static int note(const struct pool_fsck_finding *f, void *arg)
{
	struct first *first = arg;

	if (f->severity >= first->min && !first->text[0])
		snprintf(first->text, sizeof(first->text), "%s %s: %s",
			 pool_fsck_severity_name(f->severity), f->code,
			 f->message);
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int crash_fsck(const char *file, enum pool_fsck_severity min, const char *when,
	       char *why, size_t why_len)
{
	const char *every = getenv("CRASH_FSCK_EVERY");
	struct first first = { .min = min };
	struct pool_fsck_sink sink = { .fn = note, .arg = &first };
	unsigned long n = 0, nth = every ? strtoul(every, NULL, 10) : 1;
	unsigned s;
	double t0;
	int rc;

	if (nth > 1 && calls[min]++ % nth)
		return 0;
	t0 = now();
	rc = pool_fsck(file, &sink);
	if (rc == 0)
		rc = pma_fsck(file, &sink);
	seconds += now() - t0;
	checked++;
	if (rc < 0) {
		snprintf(why, why_len, "fsck %s could not run: %s", when,
			 pma_errormsg());
		return -1;
	}
	for (s = min; s <= POOL_FSCK_ERROR; s++)
		n += sink.counts[s];
	if (!n)
		return 0;
	snprintf(why, why_len, "fsck %s: %lu findings, the first: %s", when, n,
		 first.text);
	return -1;
}

void crash_fsck_stats(unsigned long *ret_checked, double *ret_seconds)
{
	*ret_checked = checked;
	*ret_seconds = seconds;
}

void crash_fsck_report(void)
{
	unsigned long n;
	double t;

	crash_fsck_stats(&n, &t);
	printf("# fsck: %lu images checked in %.1f s\n", n, t);
}
