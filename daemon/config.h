/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmad configuration: pmad.yaml(5) parsed with libyaml into one immutable
 * struct pmad_config. A reload parses a new one and swaps it in only when
 * it is valid. Errors name the file, line and column (1-based) and what was
 * expected; they are returned (-EINVAL, -ENOENT, ...) with the util errmsg
 * set, never printed.
 */
#ifndef PMAD_DAEMON_CONFIG_H
#define PMAD_DAEMON_CONFIG_H

#include <stdint.h>
#include <sys/types.h>

#define PMAD_CONFIG_DEFAULT "/etc/pmad/pmad.yaml"
#define PMAD_POOL_NAME_MAX 64
#define PMAD_MAX_POOLS 256
/* parts of a pool placed on namespaces (lib/pool's POOL_MAX_PARTS) */
#define PMAD_MAX_PARTS 16

/* a pool the daemon creates (if missing) and opens at start */
struct pmad_pool_conf {
	char *name; /* [A-Za-z0-9_.-], 1..64 bytes, no leading '.' */
	char *path; /* NULL: <state_dir>/<name>.pool */
	uint64_t size; /* bytes, used when the pool is created */
	uid_t owner; /* who may use it, with group and mode */
	gid_t group;
	mode_t mode;
	unsigned regions; /* heap regions per part at creation (1..16, a
			     power of two; 0: 1): clients at a time */
	/* parts on namespaces: 0 = one part at path (the default); else
	 * one part per node of parts[] (nparts of them), or with
	 * parts_all_nodes one per node that has a namespace */
	int parts_all_nodes;
	int parts[PMAD_MAX_PARTS];
	unsigned nparts;
	unsigned line; /* 1-based line of its entry, for log messages */
};

/* a PM namespace given explicitly (a directory on fsdax, per node) */
struct pmad_ns_conf {
	int node;
	char *path;
};

/* seconds between HDPM gc service rounds when gc_interval is not set */
#define CONFIG_GC_INTERVAL_DEFAULT 10
/* seconds between sync service rounds when sync_interval is not set */
#define CONFIG_SYNC_INTERVAL_DEFAULT 1

struct pmad_config {
	char *file; /* the file read; NULL for the embedded default */
	char *socket_path; /* NULL: the default (proto_default_socket) */
	mode_t socket_mode; /* default 0660 */
	gid_t socket_group; /* (gid_t)-1: leave the group alone */
	char *state_dir; /* NULL: $XDG_RUNTIME_DIR/pmad or /run/pmad */
	int log_level; /* syslog priority; -1 when not set */
	int ns_auto; /* namespaces: auto (discovered through lib/ns) */
	unsigned checkpoint_interval; /* seconds between checkpoints, 0 off */
	/* HDPM gc service: every gc_interval seconds, pools whose heap has
	 * less than gc_free_pct % free get a gc pass; 0 off */
	unsigned gc_free_pct;
	unsigned gc_interval; /* default CONFIG_GC_INTERVAL_DEFAULT */
	/* seconds between compactions (pma_heap_compact) of every open pool
	 * no client holds, 0 off */
	unsigned compact_interval;
	/* seconds between rounds of the sync service (the frees clients
	 * made of blocks of regions no client holds applied; 0 off;
	 * default CONFIG_SYNC_INTERVAL_DEFAULT) */
	unsigned sync_interval;
	/* heap: the slab morphing policy of the heaps pmad opens
	 * (pma_config_set_morph): morph_pct -1 for the library's default */
	int morph_pct;
	int morph_idle;
	struct pmad_ns_conf *ns; /* namespaces listed explicitly */
	unsigned nns;
	struct pmad_pool_conf *pools;
	unsigned npools;
};

/* the embedded default: no namespaces, no pools, 0660 socket */
int pmad_config_default(struct pmad_config **ret_conf);
/* parse file; -ENOENT if it does not exist, -EINVAL with
 * "FILE:LINE:COL: message" for any error in it */
int pmad_config_load(const char *file, struct pmad_config **ret_conf);
/* parse a YAML text of len bytes; name is used in messages */
int pmad_config_parse(const char *name, const char *text, size_t len,
		      struct pmad_config **ret_conf);
void pmad_config_free(struct pmad_config *conf);

/* 1 if name is a valid pool name */
int pmad_pool_name_valid(const char *name);
/* the pool conf called name, or NULL */
const struct pmad_pool_conf *pmad_config_pool(const struct pmad_config *conf,
					      const char *name);

#endif
