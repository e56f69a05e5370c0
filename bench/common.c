/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers every benchmark shares (common.h): size parsing and formatting
 * for the benchmarks' own options and reports, and the persistence mode
 * probe, through libpmalloc's public calls only.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common.h"
#include "pmalloc.h"

#define BENCH_PROBE_SIZE (2ULL << 20) /* over a heap's minimum */

/* the multiplier of unit ("", "B", "K", "KiB", "kB", ...); 0: not a unit */
static uint64_t unit_mult(const char *unit)
{
	static const char prefixes[] = "kmgtpe";
	const char *p;
	uint64_t mult = 1;
	unsigned k, i;

	if (!unit[0] || !strcmp(unit, "b") || !strcmp(unit, "B"))
		return 1;
	p = strchr(prefixes, unit[0] | 0x20);
	if (!p)
		return 0;
	k = (unsigned)(p - prefixes) + 1;
	unit++;
	if (!unit[0] || !strcasecmp(unit, "ib")) /* binary */
		return 1ULL << (10 * k);
	if (strcasecmp(unit, "b") != 0)
		return 0;
	for (i = 0; i < k; i++) /* "kB", "GB": decimal */
		mult *= 1000;
	return mult;
}

int bench_size_parse(const char *s, uint64_t *ret_size)
{
	uint64_t v = 0, mult;
	const char *p = s;

	if (!s || *p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	mult = unit_mult(p);
	if (!mult)
		return -EINVAL;
	if (v && mult > UINT64_MAX / v)
		return -ERANGE;
	*ret_size = v * mult;
	return 0;
}

const char *bench_size_format(uint64_t size, char *buf, size_t buf_size)
{
	static const char *const units[] = { "B",   "KiB", "MiB", "GiB",
					     "TiB", "PiB", "EiB" };
	unsigned k = 0;
	char *dot;
	int n;

	while (k < 6 && size >= 1ULL << (10 * (k + 1)))
		k++;
	if (!k) {
		snprintf(buf, buf_size, "%" PRIu64 " B", size);
		return buf;
	}
	n = snprintf(buf, buf_size, "%.3f",
		     (double)size / (double)(1ULL << (10 * k)));
	if (n < 0 || (size_t)n >= buf_size)
		return buf;
	dot = strchr(buf, '.'); /* "1.500" -> "1.5", "2.000" -> "2" */
	while (n > 0 && buf[n - 1] == '0')
		buf[--n] = '\0';
	if (dot && buf[n - 1] == '.')
		buf[--n] = '\0';
	snprintf(buf + n, buf_size - (size_t)n, " %s", units[k]);
	return buf;
}

int bench_pm_mode(const char *dir, const char **ret_mode)
{
	char path[PATH_MAX];
	struct pma_heap *heap;
	int rc;

	rc = snprintf(path, sizeof(path), "%s/bench-%d-probe.pool", dir,
		      (int)getpid());
	if (rc < 0 || (size_t)rc >= sizeof(path))
		return -ENAMETOOLONG;
	rc = pma_heap_create(path, BENCH_PROBE_SIZE, PMA_HEAP_FORCE, &heap);
	if (rc == 0) {
		/* a name of the library's: it outlives the heap */
		*ret_mode = pma_heap_persistence(heap);
		pma_heap_close(heap);
	}
	(void)unlink(path);
	return rc;
}
