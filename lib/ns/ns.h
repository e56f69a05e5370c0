/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ns: persistent-memory namespaces and NUMA topology.
 *
 * ns_list() enumerates PM namespaces through libndctl/libdaxctl. A machine
 * without PM (or without the nd bus) yields an empty list, not an error.
 * For tests, PMAD_FAKE_NS="NODE=DIR[,NODE=DIR...]" replaces the list with
 * one mounted fsdax namespace per entry, DIR being its mount point.
 *
 * Topology: the real one comes from libnuma. A fake topology lets tests run
 * multi-node logic on one node: PMAD_FAKE_NUMA="N" (N nodes, cpu c on node
 * c % N) or "N:c=n,c=n,..." (explicit CPU->node map, unlisted CPUs c % N);
 * "@0,2" instead of "N" names the online nodes when their ids have gaps,
 * read by ns_topology_init(), or set with ns_topology_set_fake() (pmad's
 * config). With a fake topology, ns_path_node() of a plain file is -1.
 */
#ifndef PMAD_NS_NS_H
#define PMAD_NS_NS_H

#include <stddef.h>
#include <stdint.h>

#define NS_NAME_LEN 64
#define NS_PATH_LEN 256

struct ns_namespace {
	char bus[NS_NAME_LEN]; /* e.g. "ndbus0" */
	char region[NS_NAME_LEN]; /* e.g. "region1" */
	char name[NS_NAME_LEN]; /* e.g. "namespace1.0" */
	char mode[16]; /* "fsdax", "devdax", "sector", "raw" */
	uint64_t size; /* bytes usable */
	int node; /* NUMA node, -1 if unknown */
	char device[NS_NAME_LEN]; /* "pmem1", "dax1.0" ("" if none) */
	char dev_path[NS_PATH_LEN]; /* "/dev/pmem1", "/dev/dax1.0" */
	char mount[NS_PATH_LEN]; /* fsdax mount point, "" if not mounted */
	char mount_opts[NS_PATH_LEN]; /* mount options ("dax" etc.), or "" */
	char uuid[40]; /* namespace UUID, "" if none */
};

/*
 * List namespaces. On success *ret_list (free with free()) holds *ret_count
 * entries; 0 entries when the machine has no PM. Returns 0 or -errno (only
 * for real failures such as -ENOMEM).
 */
int ns_list(struct ns_namespace **ret_list, size_t *ret_count);

/* NUMA node of the device backing path (file on fsdax, devdax, pmem block
 * device), or -1 if unknown; with PMAD_FAKE_NS, the node of the fake
 * namespace whose directory holds path (-1: none) */
int ns_path_node(const char *path);

/* 1 if path is a devdax character device */
int ns_path_is_devdax(const char *path);
/* size in bytes of a devdax device; 0 or -errno */
int ns_devdax_size(const char *path, uint64_t *ret_size);

/* topology (fake or real) */
int ns_topology_init(void); /* reads PMAD_FAKE_NUMA; 0 or -EINVAL */
/* a fake topology of nodes 0..nodes-1, all online */
int ns_topology_set_fake(unsigned nodes, const int *cpu_node, unsigned ncpus);
void ns_topology_clear_fake(void);
int ns_topology_is_fake(void);
/* >= 1: every node id is below it; ids may have gaps (nodes 0 and 2) */
unsigned ns_node_count(void);
/* 1 if node exists (is online), else 0 */
int ns_node_is_online(int node);
/* the kth online node (k counts from 0 and wraps around) */
int ns_node_nth_online(unsigned k);
/* the online node ids as "0,2" into buf; 0, or -ENOSPC if cut short */
int ns_nodes_online_format(char *buf, size_t len);
int ns_cpu_node(unsigned cpu); /* node of cpu, 0 if unknown */
int ns_current_node(void); /* node of the calling thread's CPU */
/* the distance between two nodes (10: the same; libnuma's table, 20 for
 * any two fake nodes or where the table is unknown) */
int ns_node_distance(int a, int b);

const char *ns_errormsg(void);

#endif
