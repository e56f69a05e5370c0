/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers every benchmark shares, built on the public headers only: byte
 * sizes on the command line and in reports, and the persistence mode a
 * pool in a directory gets.
 */
#ifndef PMAD_BENCH_COMMON_H
#define PMAD_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>

/*
 * "4096", "4K" = "4k" = "4KiB" = 4096, "256M", "1G"; "1kB" = 1000, "1GB"
 * = 10^9 (suffixes case-insensitive, a plain "B" allowed). 0, -EINVAL
 * (empty, junk, negative) or -ERANGE (over 64 bits).
 */
int bench_size_parse(const char *s, uint64_t *ret_size);
/* "1.5 GiB", "512 B": binary units, at most 3 decimals */
const char *bench_size_format(uint64_t size, char *buf, size_t buf_size);
#define BENCH_SIZE_BUF 32

/* how a pool made in dir persists ("BYTE", "CACHE_LINE" or "PAGE", as
 * pma_heap_persistence): a small heap is made and removed to see. 0 or
 * a negative errno (pma_errormsg() says why) */
int bench_pm_mode(const char *dir, const char **ret_mode);

#endif
