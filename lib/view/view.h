/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/view: JSON views of an open pool and of its PMAlloc heap, the
 * documents `pmactl inspect` and `pmactl stat` print. pmactl builds them
 * from a pool it opened itself, pmad from the pools it holds, so a pool
 * looks the same offline and through pmad. Keys are API (pmactl-inspect(1),
 * pmactl-stat(1)): add, never rename. Sizes are integers in bytes, or with
 * VIEW_HUMAN strings with units ("4 MiB"); the set of keys never changes.
 * Functions add keys to a caller's object and return 0 or a negative errno
 * (-ENOMEM, or what pmalloc returned) with the util errmsg set.
 */
#ifndef PMAD_VIEW_VIEW_H
#define PMAD_VIEW_VIEW_H

#include <stdint.h>
#include <json-c/json.h>

#include "hdpm.h"

struct pool;
struct pma_heap;

enum view_flags {
	VIEW_HUMAN = 1 << 0, /* sizes as strings with units */
};

/* a size under key: an integer, or with VIEW_HUMAN a string */
int view_add_size(struct json_object *obj, const char *key, uint64_t size,
		  unsigned flags);

/* uuid, version, major, minor, generation, header copies, features,
 * create_time, granularity, size (all parts), nparts, parts[], regions[] */
int view_pool_json(const struct pool *pool, unsigned flags,
		   struct json_object *obj);

/* "heap": arenas, logs, size classes, used/free, extents, page map */
int view_heap_json(struct pma_heap *heap, unsigned flags,
		   struct json_object *obj);

/* the heap's usage for pmactl stat: heap_size, used, free,
 * largest_free_extent, log_records, log_capacity, checkpoints */
int view_heap_stat_json(struct pma_heap *heap, unsigned flags,
			struct json_object *obj);

/* pma_heap_compact's report (or its plan's, dry_run): dry_run,
 * slabs_released, log_records_before/after, free_runs_before/after,
 * largest_free_before/after, free_bytes_after, punched_bytes,
 * file_bytes_before/after, bytes_reclaimed, holes_punched, note */
struct pma_compact_report;
struct pool_fsck_finding;
/* one fsck finding as pmactl fsck --json shows it (code, severity, part,
 * offset, message), appended to the array arr: offline and through pmad */
int view_fsck_finding_json(const struct pool_fsck_finding *f,
			   struct json_object *arr);

int view_compact_json(const struct pma_compact_report *r, int dry_run,
		      unsigned flags, struct json_object *obj);

/* "slabs" (slabs.c, pmactl inspect --slabs): classes[] (part, arena,
 * block_size, slabs, used_blocks, free_blocks; per part, arena and size
 * class in use), mixed_count, mixed[] (part, arena, offset,
 * old_block_size, block_size, old_live_blocks, used_blocks, free_blocks) */
int view_slabs_json(struct pma_heap *heap, unsigned flags,
		    struct json_object *obj);

/* pma_heap_morph's report (pmactl morph): dry_run, used_pct, candidates,
 * slabs_morphed, bytes_morphed, live_bytes, free_bytes, moves[]
 * (from_block_size, to_block_size, slabs, live_bytes, free_bytes),
 * moves_dropped */
struct pma_morph_report;
int view_morph_json(const struct pma_morph_report *r, int dry_run,
		    unsigned flags, struct json_object *obj);

/* ------------------------------------------------------- HDPM (hdpm.c) */
struct hdpm_fs;
/* the file system: inodes, inodes_used, file_count, dir_count,
 * file_bytes, pages, log_chunks, log_entries, log_bytes, live_bytes,
 * dead_bytes, needs_recovery, files[] (path, ino, size, pages,
 * log_pages, log_*; with_pages: page_logs[] of the pages with a log) */
int view_hdpm_json(struct hdpm_fs *fs, int with_pages, unsigned flags,
		   struct json_object *obj);

/* one gc pass (pmactl gc, pmad's "gc" request and service) */
struct view_gc {
	unsigned merged; /* page logs merged */
	struct hdpm_fs_info before, after;
	uint64_t used_before, used_after; /* heap bytes in use */
};
/* mount the file system in heap (writable, recovery runs; it must
 * exist: check first), merge every page log, unmount */
int view_hdpm_gc(struct pma_heap *heap, struct view_gc *ret);
uint64_t view_gc_reclaimed(const struct view_gc *r);
/* pages_merged, log_bytes_before/after, dead_bytes_before,
 * heap_used_before/after, bytes_reclaimed */
int view_gc_json(const struct view_gc *r, unsigned flags,
		 struct json_object *obj);

/* --------------------------------------------------------- log (log.c) */
/* the records not checkpointed (arena >= 0: only arena of part): count,
 * heap_parts, records[] (arena, part, index, type, offset, dest, size,
 * class); -ENOENT for an arena or part the heap does not have */
int view_log_json(struct pma_heap *heap, long part, long arena, unsigned flags,
		  struct json_object *obj);

#endif
