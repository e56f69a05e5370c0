/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libpmalloc: a crash-safe persistent-memory allocator (PMAlloc).
 *
 * A heap lives in a pmad pool. Every object is named by a pool offset
 * (never a pointer); pma_direct() turns it into an address in this
 * process. Allocation publishes the new offset into an 8-byte destination
 * word (pma_malloc_to) and freeing clears one (pma_free_from), each
 * atomically with respect to crashes. All functions returning int return
 * 0 or a negative errno and set a per-thread message (pma_errormsg()).
 * All functions are thread-safe; any thread may free any block.
 */
#ifndef PMALLOC_H
#define PMALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PMA_API __attribute__((visibility("default")))
#define PMA_WUR __attribute__((warn_unused_result))

struct pma_heap;

enum pma_heap_flags {
	/* pma_heap_create: overwrite an existing file */
	PMA_HEAP_FORCE = 1 << 0,
	/* pma_heap_open: add and format a heap region if the pool has none */
	PMA_HEAP_FORMAT = 1 << 1,
	/*
	 * pma_heap_open, for inspection (pmactl inspect --heap, pmactl log):
	 * open the pool read-only with a shared lock (-EBUSY while a writer
	 * has it open) and never write PM. The logs are replayed into DRAM
	 * only, so pma_heap_stats, pma_usable_size and pma_log_foreach show
	 * the recovered state and the records still to be checkpointed; dest
	 * words are shown as they are on media. pma_malloc_to,
	 * pma_zalloc_to, pma_free_from, pma_heap_checkpoint and a pma_root
	 * that would create the root return -EROFS. Not with
	 * PMA_HEAP_FORMAT (-EINVAL).
	 */
	PMA_HEAP_RDONLY = 1 << 2,
	/*
	 * pma_heap_open / pma_heap_create, layout version 8: each arena
	 * checkpoints its own log when it fills, under its own lock alone,
	 * instead of every arena at once (see pma_heap_checkpoint_arena).
	 * Off by default for now: with two threads freeing each other's
	 * blocks (larson) it is about half as fast as global checkpoints
	 * (bench/RESULTS.md); pmad's shared heaps need it. Changes nothing
	 * on media: a heap may be opened either way.
	 */
	PMA_HEAP_LOCAL_CHECKPOINTS = 1 << 3,
	/*
	 * pma_heap_open, a heap over several parts: threads take the parts
	 * in turn (the first thread part 0, the next part 1, ...) whatever
	 * node they run on, instead of their own node's part first. For
	 * comparisons (bench/pmabench --interleave) and for data that every
	 * node uses alike.
	 */
	PMA_HEAP_INTERLEAVE = 1 << 5,
	/*
	 * pma_heap_open / pma_heap_create, layout version 9: never morph a
	 * slab (see pma_config_set_morph); for comparisons (fragbench's
	 * pmalloc-nomorph rows). Changes nothing on media.
	 */
	PMA_HEAP_NO_MORPH = 1 << 6,
};

/*
 * Create a one-part pool of size bytes at path (a file or devdax device;
 * size is rounded down to 64 KiB) holding one heap that spans the pool's
 * data area, and open it. -EEXIST if path exists (without PMA_HEAP_FORCE),
 * -EINVAL for a size too small, plus pool creation errors. The heap is
 * durable when it returns.
 */
PMA_API PMA_WUR int pma_heap_create(const char *path, uint64_t size,
				    unsigned flags, struct pma_heap **ret_heap);

/*
 * Open the heap in the pool at path (made by pma_heap_create or pmactl
 * create) and run recovery: every committed operation is completed, every
 * uncommitted one vanishes. A pool without a heap region gives -ENOENT
 * unless flags has PMA_HEAP_FORMAT (then the largest free range of part 0
 * becomes the heap). -EBADMSG for a corrupt heap header, -EIO for a log
 * that contradicts the heap, plus pool_open errors (-EBUSY when locked).
 */
PMA_API PMA_WUR int pma_heap_open(const char *path, unsigned flags,
				  struct pma_heap **ret_heap);

/* Checkpoint, unmap and free. Accepts NULL. No other call may be running
 * on the heap. */
PMA_API void pma_heap_close(struct pma_heap *heap);

/*
 * pma_heap_open on a pool given as open descriptors, one per part (fds[0]
 * part 0, then parts 1..nfds-1 in order), as pmad passes them to its
 * clients: the caller needs no right to open the files by name. Each is
 * duplicated (the caller may close its own after the call) and verified
 * as at open (the part's pool and index). -EINVAL if nfds is not the
 * pool's part count, -EROFS for a writable open of a read-only
 * descriptor.
 */
PMA_API PMA_WUR int pma_heap_open_fds(const int *fds, unsigned nfds,
				      unsigned flags,
				      struct pma_heap **ret_heap);

/*
 * A heap configuration, in libpmem2's style: the tuning of one create or
 * open, copied at the call (the config may be changed or deleted right
 * after; no setting is process-wide, so two heaps may be tuned apart).
 * pma_config_new gives the defaults that pma_heap_create / pma_heap_open
 * use. Setters return 0 or -EINVAL (message: pma_errormsg()).
 */
struct pma_config;
PMA_API PMA_WUR int pma_config_new(struct pma_config **ret_cfg);
/* frees *cfg and sets it to NULL; accepts NULL and *cfg == NULL */
PMA_API void pma_config_delete(struct pma_config **cfg);
/* enum pma_heap_flags for the open (PMA_HEAP_FORCE for a create); 0 */
PMA_API PMA_WUR int pma_config_set_flags(struct pma_config *cfg,
					 unsigned flags);
/* empty slabs a checkpoint keeps per class and arena instead of giving
 * them back to the free pages: 0 none, 1 (the default) the one the arena
 * allocates from next, more keeps all of them until space runs short */
PMA_API PMA_WUR int pma_config_set_slab_keep(struct pma_config *cfg,
					     unsigned slabs);
/*
 * Slab morphing (layout version 9, doc/morphing.md): when an arena needs
 * a slab of a size class and has none with a free block, it first turns
 * one of its slabs of another class with at most used_pct percent of its
 * blocks live into a slab of the class, instead of taking
 * new pages; the live blocks stay where they are. idle (the default 1):
 * only a slab that served no allocation since its arena's last
 * checkpoint. The default is 20 and idle: morphing is on for every
 * heap of layout version 9 or later; used_pct 0 turns it off (as
 * PMA_HEAP_NO_MORPH).
 * -EINVAL for used_pct over 100.
 */
PMA_API PMA_WUR int pma_config_set_morph(struct pma_config *cfg,
					 unsigned used_pct, int idle);
/* 1 (the default): take an arena from its owning thread with one
 * membarrier(2) where the kernel has it, so owners need no fence of
 * their own; 0: owners issue a full fence per operation instead (for a
 * seccomp profile without membarrier, or for comparison) */
PMA_API PMA_WUR int pma_config_set_membarrier(struct pma_config *cfg, int use);
/* pma_heap_create_cfg: a pool of nparts parts (1..16, default 1): path is
 * part 0, part N is "path.partN"; each part gets size bytes and a heap */
PMA_API PMA_WUR int pma_config_set_parts(struct pma_config *cfg,
					 unsigned nparts);
/* pma_heap_create_cfg: the NUMA node of part (default -1: the node of
 * the file's memory, detected; see pmactl create --node) */
PMA_API PMA_WUR int pma_config_set_part_node(struct pma_config *cfg,
					     unsigned part, int node);
/*
 * The online NUMA nodes heaps place parts and threads by: the system's,
 * or PMAD_FAKE_NUMA's (tests) when it is set. The first max node
 * numbers, ascending, go to nodes (NULL if max is 0). Returns the count
 * of online nodes (may exceed max), or -EINVAL (a bad PMAD_FAKE_NUMA, or
 * nodes NULL with max over 0). For a pool with a part per node
 * (pma_config_set_parts, pma_config_set_part_node).
 */
PMA_API PMA_WUR int pma_numa_nodes(int *nodes, unsigned max);
/* pma_heap_create_cfg: permission bits of new part files (default 0600) */
PMA_API PMA_WUR int pma_config_set_mode(struct pma_config *cfg, unsigned mode);
/* a heap formatted with this config (pma_heap_create_cfg, or
 * PMA_HEAP_FORMAT of a pool without a heap): every part carved into
 * regions equal PMAlloc regions (a power of two, 1..16, default 1), each
 * a whole heap (arenas, logs, page map, checkpoints); threads allocate in
 * one region of their local part, then the part's others, then other
 * parts. An open finds the count in the pool. 0 or -EINVAL */
PMA_API PMA_WUR int pma_config_set_regions(struct pma_config *cfg,
					   unsigned regions);
/*
 * An open with this config attaches only the heap regions whose slot bit
 * is set in mask (slot s: part s / K, region s % K of that part by
 * offset, K = pma_heap_regions; 0, the default: every region). Several
 * processes (or opens) with disjoint masks share one pool: each writes
 * the allocator metadata of its regions only, and the regions are
 * locked per open (-EBUSY naming the region if another open holds it;
 * the kernel drops the locks of a process that dies). Blocks of regions
 * not attached are read and written as data (pma_direct) and freed
 * through a free ring (layout 12; pma_heap_sync; -EAGAIN if the ring is
 * full: the holder has not applied the last 64 frees yet; -EXDEV in an
 * older layout); the root object lives in slot 0's region: pma_root of
 * an open without slot 0 when there is no root yet takes slot 0 first
 * (pma_config_set_root_hook). An exclusive open of the pool (every region, or pmactl's
 * offline commands) is -EBUSY while any masked open runs and the other
 * way round. Not with PMA_HEAP_RDONLY or PMA_HEAP_FORMAT. 0 (the open
 * checks the mask: -EINVAL for a slot the pool does not have) */
PMA_API PMA_WUR int pma_config_set_region_mask(struct pma_config *cfg,
					       uint64_t mask);
/*
 * How a masked open without slot 0 gets slot 0 when pma_root must make
 * the root object (it lives in region 0 of part 0): pma_root calls
 * hook(heap, arg, why, why_len) once, under a lock of its own; the hook
 * gives the open slot 0 (pma_heap_add_regions) and returns 0, or returns
 * -errno, which pma_root returns, with a reason in why (a string of at
 * most why_len bytes, for pma_errormsg). NULL (the default): pma_root calls
 * pma_heap_add_regions(heap, 1) itself (-EBUSY if another open holds
 * slot 0). libpmad sets one that asks pmad for slot 0. 0 or -EINVAL.
 */
PMA_API PMA_WUR int pma_config_set_root_hook(struct pma_config *cfg,
					     int (*hook)(struct pma_heap *heap,
							 void *arg, char *why,
							 size_t why_len),
					     void *arg);
/*
 * How a masked open gets more room: an allocation that finds no room in
 * the regions the open holds calls hook(heap, arg, why, why_len) (one
 * call at a time) and, when it returns 0 (it gave the open more regions:
 * pma_heap_add_regions), tries again; -errno with a reason in why ends
 * it with -ENOMEM, the reason in pma_errormsg. Not called for a size no
 * region can hold. NULL (the default): -ENOMEM at once. libpmad sets one
 * that leases more regions from pmad. 0 or -EINVAL.
 */
PMA_API PMA_WUR int pma_config_set_room_hook(struct pma_config *cfg,
					     int (*hook)(struct pma_heap *heap,
							 void *arg, char *why,
							 size_t why_len),
					     void *arg);
/*
 * Apply now the frees other opens made of blocks of the regions heap
 * holds (free rings, layout 12: a masked open frees a block of a region
 * it does not hold by an entry in a ring of its own region; the holder
 * applies them on its own as it allocates, checkpoints and closes). For
 * an open that holds regions but is idle. The count applied, or -errno.
 */
PMA_API int pma_heap_sync(struct pma_heap *heap);
/*
 * Frees across regions committed in free rings but not applied yet by
 * their region's holder, over the whole pool (their blocks still count
 * as used): into *ret_entries. 0 or -EINVAL.
 */
PMA_API int pma_heap_ring_pending(const struct pma_heap *heap,
				  uint64_t *ret_entries);
/*
 * More room for an open with a region mask: take the regions of mask
 * (bit s: region slot s) too, while the open's threads go on. Each is
 * locked as the open's own, recovered if its last holder died, and
 * then serves allocations (after the open's own regions) and frees; the
 * frees other opens made of its blocks are applied. 0, or -EINVAL (an
 * open of the whole pool, an empty mask, a slot the pool does not have),
 * -EEXIST (a region this open holds), -EBUSY (held by another open),
 * or a recovery error; on error no region of mask is added.
 */
PMA_API PMA_WUR int pma_heap_add_regions(struct pma_heap *heap, uint64_t mask);

/* pma_heap_create, pma_heap_open and pma_heap_open_fds with a config
 * (NULL: the defaults; flags come from the config) */
PMA_API PMA_WUR int pma_heap_create_cfg(const char *path, uint64_t size,
					const struct pma_config *cfg,
					struct pma_heap **ret_heap);
PMA_API PMA_WUR int pma_heap_open_cfg(const char *path,
				      const struct pma_config *cfg,
				      struct pma_heap **ret_heap);
PMA_API PMA_WUR int pma_heap_open_fds_cfg(const int *fds, unsigned nfds,
					  const struct pma_config *cfg,
					  struct pma_heap **ret_heap);

/*
 * NULL, or a message saying that a pool header copy failed its check when
 * the heap was opened, and that the open went on with the other copy,
 * which holds the same state (a writable open also rewrote the bad copy).
 * Damage the library could not accept makes pma_heap_open fail instead.
 * Valid until pma_heap_close; report it to the user.
 */
PMA_API const char *pma_heap_damage(const struct pma_heap *heap);

/*
 * Allocate at least size bytes and store the block's pool offset in *dest.
 * dest is an 8-byte aligned word, usually inside the pool (not inside the
 * heap's metadata); a dest outside the pool is allowed and is not
 * persisted. When it returns 0 the allocation and the store are durable:
 * after a crash either both happened or neither (no leak). The block's
 * content is undefined. -ENOMEM when no space is left (for this thread's
 * arena), -EINVAL for size 0, a misaligned dest or a dest in heap
 * metadata. *dest is flushed lazily, with the dest words of this arena's
 * next ops in the same cache line (at most 8 runs of ops on one word; a
 * checkpoint or close flushes it): until then, recovery may rewrite *dest
 * with this result.
 */
PMA_API PMA_WUR int pma_malloc_to(struct pma_heap *heap, size_t size,
				  uint64_t *dest);

/* As pma_malloc_to, and the block reads as zeros (durably, also after a
 * crash: the zeros are fenced before the record, so one more fence). */
PMA_API PMA_WUR int pma_zalloc_to(struct pma_heap *heap, size_t size,
				  uint64_t *dest);

/*
 * Free the block whose offset is in *dest and durably store 0 there,
 * atomically with respect to crashes. *dest == 0 is a no-op returning 0.
 * -EINVAL when *dest does not name a live block (bad offset, interior
 * offset, or double free); *dest is left untouched then.
 */
PMA_API PMA_WUR int pma_free_from(struct pma_heap *heap, uint64_t *dest);

/*
 * The heap's root object: created (zeroed, durable) on first call with at
 * least size bytes; later calls return the same object. -EINVAL if the
 * existing root is smaller than size. An open with a region mask that
 * holds no slot 0 reads the root word without checking size; with no
 * root yet it takes slot 0 first (pma_config_set_root_hook), and the
 * hook's error (-EBUSY: another open holds slot 0) is returned.
 */
PMA_API PMA_WUR int pma_root(struct pma_heap *heap, size_t size,
			     uint64_t *ret_off);

/* address of pool offset off in this process; NULL if off is not in the
 * pool */
PMA_API void *pma_direct(struct pma_heap *heap, uint64_t off);
/* pool offset of addr; 0 if addr is not in the pool */
PMA_API uint64_t pma_offset(struct pma_heap *heap, const void *addr);

/* usable bytes of the live block at off; 0 if off names no live block */
PMA_API size_t pma_usable_size(struct pma_heap *heap, uint64_t off);

/*
 * Call fn(off, size, arg) for every live block of the heap: the blocks of
 * every slab (and the old blocks a morphed slab still holds) and every
 * extent, part by part in page order, from one consistent snapshot of
 * each part (every arena of the part locked: fn must not call into the
 * heap). size is the block's (or extent's) bytes. For a program that owns
 * every object of its heap and, after a crash, finds the blocks none of
 * its words names. Works on a PMA_HEAP_RDONLY heap; loads no slab. Stops
 * and returns fn's value if it is non-zero; else 0, -EINVAL (no heap or
 * fn), -ENOMEM or -EIO (a corrupt slab).
 */
typedef int (*pma_block_fn)(uint64_t off, uint64_t size, void *arg);
PMA_API PMA_WUR int pma_block_foreach(struct pma_heap *heap, pma_block_fn fn,
				      void *arg);

/* last error message of this thread ("" if none) */
PMA_API const char *pma_errormsg(void);

/* ------------------------------------------------------------ publish */
/*
 * Persistence for callers that store into their own blocks (libhdpm):
 * addr must lie in a block of this heap (pma_direct). Only lib/pmem
 * flushes; these forward to the heap's mapping and count in its
 * per-thread counters. pma_flush writes the lines of [addr, addr+len)
 * back without ordering; pma_drain is the fence after which every earlier
 * flush of this thread is durable; pma_persist is both. pma_memcpy_flush
 * and pma_memset_flush copy / fill and flush (non-temporal for large
 * ranges) without the fence: call pma_drain before relying on them.
 */
PMA_API void pma_flush(struct pma_heap *heap, const void *addr, size_t len);
PMA_API void pma_drain(struct pma_heap *heap);
PMA_API void pma_persist(struct pma_heap *heap, const void *addr, size_t len);
PMA_API void pma_memcpy_flush(struct pma_heap *heap, void *dst, const void *src,
			      size_t len);
PMA_API void pma_memset_flush(struct pma_heap *heap, void *dst, int c,
			      size_t len);

/*
 * What persisting cost so far, counted by the persistence layer in every
 * mapping of this process (all heaps): with thread_only, the calling
 * thread's counts, else the sum over all threads that ever flushed. For
 * benchmarks: the difference of two reads is the cost of what ran
 * between them.
 */
struct pma_pm_counters {
	uint64_t lines_flushed; /* cache lines written back */
	uint64_t fences; /* store fences (drains) */
	uint64_t reflushes; /* lines flushed again soon after their last */
	uint64_t bytes_persisted; /* bytes in flushed or persisted ranges */
	uint64_t remote_lines; /* lines of a part on another NUMA node than
				  the flushing thread's */
	uint64_t xplines; /* 256-byte media lines (XPLines) written back: a
			     flushed line in another XPLine than the line
			     flushed before it counts one */
};
PMA_API void pma_pm_counters(struct pma_pm_counters *c, int thread_only);

/* how stores to heap's pool become durable: "BYTE" (eADR: a fence),
 * "CACHE_LINE" (ADR: cache line write-back + fence) or "PAGE" (msync) */
PMA_API const char *pma_heap_persistence(const struct pma_heap *heap);

/* ------------------------------------------------------------ inspection */

#define PMA_STATS_MAX_CLASSES 64

struct pma_class_stats {
	uint32_t block_size; /* bytes */
	uint32_t slabs; /* slabs of this class */
	uint64_t blocks; /* blocks in those slabs */
	uint64_t used; /* live blocks */
};

struct pma_heap_stats {
	uint32_t narenas;
	uint32_t nclasses;
	uint32_t log_cap; /* records per arena log */
	uint64_t heap_size; /* bytes of the data area */
	uint64_t used_bytes; /* live blocks + live extents */
	uint64_t free_bytes; /* free pages + free slab blocks */
	uint64_t slab_bytes; /* bytes in slabs */
	uint64_t extents; /* live large allocations */
	uint64_t extent_bytes; /* bytes in them */
	uint64_t largest_free; /* largest free extent, bytes */
	uint64_t log_records; /* records not yet checkpointed */
	uint64_t checkpoints; /* since open */
	struct pma_class_stats classes[PMA_STATS_MAX_CLASSES];
	uint32_t layout_version; /* the heap's on-media layout version */
	/* the page map summary (layout version 5; all 0 before): groups of
	 * map_group_bytes of data, those marked as holding page map entries
	 * (what an open reads), and summary words found invalid at open */
	uint64_t map_groups;
	uint64_t map_groups_marked;
	uint64_t map_group_bytes;
	uint64_t map_summary_invalid;
	/* layout version 8: checkpoints of one arena alone since open
	 * (checkpoints counts the global ones), and remote frees the
	 * blocks' owners have applied (SYNC_FREE records) */
	uint64_t local_checkpoints;
	uint64_t remote_frees_synced;
	/* a heap over several parts (one per NUMA node): parts with a
	 * heap; the part's node (pma_heap_part_stats; -1 for the whole
	 * heap); allocations a full local part sent to another part, and
	 * frees of a block of another part than the thread's (since open;
	 * 0 in a part's stats) */
	uint32_t parts;
	int32_t node;
	uint64_t fallbacks;
	uint64_t remote_part_frees;
	/*
	 * The PM the heap holds (fragbench, pmactl compact). meta_bytes:
	 * the heap region before the data area (header, arena descriptors,
	 * logs, page map, summary; fixed by the heap's size).
	 * footprint_bytes: meta_bytes plus every data page not free for any
	 * allocation now: slabs (full, partial or empty), live extents, and
	 * freed extents that wait for a checkpoint. peak_footprint_bytes:
	 * the most footprint_bytes has been since open (exact: updated at
	 * every take of free pages; over several parts, the sum of each
	 * part's peak, which bounds the peak of the sum from above).
	 */
	uint64_t meta_bytes;
	uint64_t footprint_bytes;
	uint64_t peak_footprint_bytes;
	/* layout version 9 (slab morphing): slabs that hold live blocks of
	 * an old class besides their own (whose classes[].used counts
	 * them), and slabs morphed since open */
	uint64_t mixed_slabs;
	uint64_t slabs_morphed;
	/* layout version 12 (free rings), since open, whole heap only (0 in
	 * a part's stats): frees this open made of blocks of regions it
	 * does not hold (through rings), entries of other opens' rings it
	 * applied to the regions it holds, and entries it ignored instead
	 * (no live block: a double free or a bad offset, logged) */
	uint64_t ring_frees;
	uint64_t ring_frees_applied;
	uint64_t ring_frees_ignored;
};

/* a consistent snapshot (briefly locks every arena) */
PMA_API PMA_WUR int pma_heap_stats(struct pma_heap *heap,
				   struct pma_heap_stats *ret_stats);

/*
 * The same for the heap of one part of the pool (index 0 .. parts - 1 of
 * the pool's parts): -ENOENT if that part holds no heap.
 */
PMA_API PMA_WUR int pma_heap_part_stats(struct pma_heap *heap, unsigned part,
					struct pma_heap_stats *ret_stats);

/* PMAlloc regions per part of the heap's pool, each a whole heap (1 for
 * a plain pool; pma_config_set_regions); 0 if heap is NULL */
PMA_API unsigned pma_heap_regions(const struct pma_heap *heap);

/* one arena's share of the heap (pma_heap_arena_stats) */
struct pma_arena_stats {
	uint64_t slabs; /* slabs the arena allocates from */
	uint64_t used_bytes; /* live blocks in them */
	uint64_t free_bytes; /* free blocks in them */
	uint64_t log_records; /* records of its log not yet checkpointed */
	/* frees of other arenas' blocks logged here; the blocks go back to
	 * their owners at the next checkpoint */
	uint64_t remote_frees;
	/* extents freed through this arena, reusable by it before the next
	 * checkpoint (counted as free in pma_heap_stats) */
	uint64_t local_free_bytes;
	unsigned part; /* the pool part of the arena */
	unsigned arena; /* its index in that part */
};

/* per arena, a consistent snapshot like pma_heap_stats: fills
 * ret_stats[0 .. min(n, narenas) - 1] and returns narenas (of every
 * part, part by part) */
PMA_API PMA_WUR int pma_heap_arena_stats(struct pma_heap *heap,
					 struct pma_arena_stats *ret_stats,
					 unsigned n);

/* apply every log to the page map and bitmaps and truncate the logs
 * (of every part) */
PMA_API PMA_WUR int pma_heap_checkpoint(struct pma_heap *heap);

/*
 * Checkpoint the calling thread's arena alone, under its own lock: other
 * threads keep allocating and freeing meanwhile (layout version 8; an
 * older heap gets a global checkpoint). Retires the arena's log as far as
 * it can without other arenas: records of frees of other arenas' blocks
 * that their owners have not applied yet stay for a later checkpoint.
 * Arenas do this themselves when their log fills; this call is for
 * tests and for callers that want the log short now. In a heap over
 * several parts: the thread's arena of each part it has used.
 */
PMA_API PMA_WUR int pma_heap_checkpoint_arena(struct pma_heap *heap);

/* what pma_heap_compact did (or pma_heap_compact_plan would do) */
struct pma_compact_report {
	/* records not yet checkpointed, before and after (after: 0) */
	uint64_t log_records_before;
	uint64_t log_records_after;
	/* empty slabs given back to the free pages (plan: that would be) */
	uint64_t slabs_released;
	/* free page runs (coalesced) and the largest one in bytes, before
	 * and after; plan: after is what they would be */
	uint64_t free_runs_before;
	uint64_t free_runs_after;
	uint64_t largest_free_before;
	uint64_t largest_free_after;
	uint64_t free_bytes_after; /* bytes in the free runs after */
	/* bytes of free runs holes were punched in (0 if punching was
	 * skipped); plan: the bytes of free runs a compaction would punch */
	uint64_t punched_bytes;
	/* bytes the file system allocated for the heap's part (st_blocks *
	 * 512), before and after; reclaimed: their difference (0 if the
	 * file grew meanwhile: other threads allocate concurrently). Plan:
	 * reclaimed is an upper bound (punched_bytes, at most the file's
	 * allocated bytes), after is before less it */
	uint64_t file_bytes_before;
	uint64_t file_bytes_after;
	uint64_t reclaimed_bytes;
	/* 1 if holes were punched; 0 with a reason in note (a devdax
	 * part, a file system without hole punching, a plan) */
	int punched;
	char note[128];
};

/*
 * Compact the heap, online (other threads may allocate and free
 * meanwhile) or offline: load every slab, checkpoint (the logs are
 * truncated: every arena's head moves to its tail) releasing every empty
 * slab to the free pages (layout version 6 and later), where free runs
 * coalesce; then punch holes (fallocate PUNCH_HOLE) in every free run of a
 * file-backed part and fdatasync it, so the file system gets the space
 * back (a devdax part: skipped, said in ret->note). Objects are never
 * moved. Crash-safe: the checkpoint is an ordinary one, and only pages
 * that are free on media and named by no log record are punched, while
 * no allocation can take them (concurrent allocations needing new
 * pages wait until the punch is durable). A punched page reads as
 * zeros. Fills ret (may be NULL). -EROFS on a read-only heap, -ENOMEM,
 * -EIO from a checkpoint or the file system.
 */
PMA_API PMA_WUR int pma_heap_compact(struct pma_heap *heap,
				     struct pma_compact_report *ret);

/*
 * What pma_heap_compact would do now, changing nothing (also on a
 * PMA_HEAP_RDONLY heap): the empty slabs it would release (slabs without
 * a live block), the free runs and largest free run after, the bytes it
 * would punch, and an upper bound of the bytes reclaimed. Loads no slab:
 * unloaded slabs are read from PM. -ENOMEM, -EIO.
 */
PMA_API PMA_WUR int pma_heap_compact_plan(struct pma_heap *heap,
					  struct pma_compact_report *ret);

/* one slab as pma_slab_foreach shows it */
struct pma_slab_info {
	uint64_t off; /* pool offset of the slab */
	unsigned part; /* the pool part of its owner arena */
	unsigned arena; /* the owner arena's index in that part */
	uint32_t block_size; /* its size class: block bytes */
	uint32_t nblocks; /* blocks of that size */
	uint32_t used; /* of them live */
	uint32_t avail; /* of them free to hand out (a mixed slab's free
			   blocks that overlap a live old block are not) */
	/* a mixed slab (layout version 9, morphed): the old class's block
	 * size and its blocks still live where they were; 0, 0 if plain */
	uint32_t old_block_size;
	uint32_t old_used;
};
typedef int (*pma_slab_fn)(const struct pma_slab_info *info, void *arg);

/*
 * Call fn for every slab of the heap, part by part, in page order, from
 * one consistent snapshot (every arena of the part locked: fn must not
 * call into the heap). Works on a PMA_HEAP_RDONLY heap; loads no slab
 * (unloaded slabs are read from PM). Stops and returns fn's value if it
 * is non-zero; else 0, -ENOMEM or -EIO (a corrupt slab).
 */
PMA_API PMA_WUR int pma_slab_foreach(struct pma_heap *heap, pma_slab_fn fn,
				     void *arg);

/* a morph pass (pma_heap_morph) */
struct pma_morph_req {
	/* block size of the class to morph slabs into (one of the size
	 * classes, e.g. 192); 0: per arena, each slab into the class with
	 * the fewest free blocks, while that class has fewer free bytes than
	 * the slab's own class would keep */
	size_t class_size;
	/* a slab is morphed only with at most used_pct percent of its blocks
	 * live (1..100); 0: the heap's threshold (pma_config_set_morph), or
	 * PMA_MORPH_PASS_PCT if morphing is off */
	unsigned used_pct;
	int dry_run; /* report what would move, write nothing */
};
#define PMA_MORPH_PASS_PCT 20
#define PMA_MORPH_MOVES_MAX 64

/* the slabs one pass moved from one class to another */
struct pma_morph_move {
	uint32_t from_size; /* block size of the old class */
	uint32_t to_size; /* block size of the new class */
	uint64_t slabs; /* slabs morphed */
	uint64_t live_bytes; /* old blocks left live in place */
	uint64_t free_bytes; /* new-class blocks free to hand out */
};

/* what pma_heap_morph did (or would do) */
struct pma_morph_report {
	unsigned used_pct; /* the threshold used */
	uint64_t candidates; /* plain slabs with live blocks <= used_pct */
	uint64_t slabs_morphed;
	uint64_t bytes_morphed; /* bytes of the slabs morphed */
	uint64_t live_bytes; /* sum of moves[].live_bytes */
	uint64_t free_bytes; /* sum of moves[].free_bytes */
	unsigned nmoves; /* class pairs in moves[] */
	/* pairs past PMA_MORPH_MOVES_MAX are in the sums only */
	unsigned moves_dropped;
	struct pma_morph_move moves[PMA_MORPH_MOVES_MAX];
};

/*
 * A morph pass (layout version 9 and later, doc/morphing.md): per arena,
 * every plain slab with live blocks and at most used_pct percent of them
 * live is morphed, fewest live bytes first, into req->class_size's class
 * (or, without one, the class with the fewest free blocks, see
 * pma_morph_req), if at least half of that class's blocks would be free
 * to hand out. Live blocks never move. Each morph is the crash-safe step
 * the allocator takes (its SLAB_MORPH record fenced before the next); a
 * checkpoint runs first so that every slab is idle. For a heap no other
 * thread uses (offline: pmactl morph) unless it was opened with morphing
 * on. dry_run: the same choices, nothing written (also on a
 * PMA_HEAP_RDONLY heap). Fills ret (may be NULL). -EINVAL (no class of
 * that size, used_pct over 100), -EOPNOTSUPP (layout version before 9),
 * -EROFS, -ENOMEM, -EIO.
 */
PMA_API PMA_WUR int pma_heap_morph(struct pma_heap *heap,
				   const struct pma_morph_req *req,
				   struct pma_morph_report *ret);

/* one decoded bookkeeping-log record (pma_log_foreach) */
struct pma_log_entry {
	unsigned arena; /* index in its part */
	uint64_t index; /* global record index in the arena's log */
	const char *type; /* "alloc", "free", "rfree", "slab_new",
			      "slab_free", "ext_alloc", "ext_free",
			      "ext_lfree" */
	uint64_t off; /* block / slab / extent pool offset */
	uint64_t dest; /* dest pool offset, 0 if outside the pool */
	uint64_t size; /* extent bytes, or block size (0 if unknown) */
	unsigned cls; /* slab_new, slab_free: size class; otherwise 0 */
	unsigned part; /* the pool part of the arena */
};
typedef int (*pma_log_fn)(const struct pma_log_entry *entry, void *arg);

/* call fn for every record not yet checkpointed, part by part, arena by
 * arena, in log order; stops and returns fn's value if it is non-zero */
PMA_API PMA_WUR int pma_log_foreach(struct pma_heap *heap, pma_log_fn fn,
				    void *arg);

#ifdef __cplusplus
}
#endif

#endif
