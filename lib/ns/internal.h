/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ns internals shared by list.c, path.c and topology.c: small sysfs
 * readers, the /proc/self/mountinfo lookup and the PMAD_FAKE_NUMA parser.
 * Exposed here (not in ns.h) so that tests/unit/test-ns.c can drive them
 * with synthetic input.
 */
#ifndef PMAD_NS_INTERNAL_H
#define PMAD_NS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ns/ns.h"

/* largest fake topology accepted (nodes, and CPUs in an explicit map) */
#define NS_FAKE_MAX_NODES 1024
#define NS_FAKE_MAX_CPUS 65536

/* read one line of a sysfs attribute (trailing newline dropped): 0 or -errno */
int ns_sysfs_read(const char *path, char *buf, size_t len);
/* read a decimal integer attribute ("-1" allowed): 0 or -errno */
int ns_sysfs_read_int(const char *path, long long *ret_val);

/*
 * Find the mount of block device major:minor in a mountinfo stream (the
 * format of /proc/self/mountinfo). Prefers a mount of the file system root
 * ("/") over bind mounts of subdirectories. On a match, copies the mount
 * point (octal escapes decoded) and the options (per-mount options followed
 * by the super-block options not already listed, e.g. "rw,relatime,dax")
 * and returns 1; returns 0 if not mounted, -errno on a read error.
 */
int ns_mountinfo_find(FILE *mountinfo, unsigned major, unsigned minor,
		      char *mount, size_t mount_len, char *opts,
		      size_t opts_len);

/*
 * Parse a PMAD_FAKE_NUMA value: "N" or "@n,n,..." (the online node ids,
 * which may have gaps), optionally followed by ":c=n,c=n,...". On success
 * *ret_nodes is N (or the largest id + 1), ret_online (if not NULL,
 * NS_FAKE_MAX_NODES bytes) says which ids are online, and *ret_map (free
 * with free()) maps *ret_ncpus CPUs to online nodes (unlisted CPUs below
 * the largest listed one get the (c % online)th online node; *ret_map is
 * NULL and *ret_ncpus 0 without a map). -EINVAL names the bad token.
 */
int ns_fake_parse(const char *spec, unsigned *ret_nodes, int **ret_map,
		  unsigned *ret_ncpus, unsigned char *ret_online);

/*
 * Parse a PMAD_FAKE_NS value, "NODE=DIR[,NODE=DIR...]", into one mounted
 * fsdax namespace per entry (mount = DIR, node = NODE). 0 with *ret_list
 * (free it; NULL for an empty spec), or -EINVAL naming the bad entry.
 */
int ns_fake_list(const char *spec, struct ns_namespace **ret_list,
		 size_t *ret_count);

#endif
