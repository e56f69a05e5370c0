/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util size: parse and format byte sizes.
 * "4096", "4K" = "4KiB" = 4096, "512MiB", "4G" = 4 GiB, "1GB" = 10^9,
 * "1kB" = 1000. Suffixes are case-insensitive; a plain "B" is allowed.
 */
#ifndef PMAD_UTIL_SIZE_H
#define PMAD_UTIL_SIZE_H

#include <stddef.h>
#include <stdint.h>

/* 0, -EINVAL (not a size: empty, junk, negative) or -ERANGE (overflow) */
int util_size_parse(const char *s, uint64_t *ret_size);
/* "1.5 GiB", "512 B": binary units, at most 3 significant decimals */
const char *util_size_format(uint64_t size, char *buf, size_t buf_size);
#define UTIL_SIZE_BUF 32

#endif
