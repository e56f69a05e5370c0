/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * HDPM fsck (internal): the check of the HDPM file system in a heap,
 * behind `pmactl fsck` (doc/fsck.md, "HDPM"). It reads the superblock,
 * the operation journal, the background GC's journal, every inode (kind,
 * parent, name), every file's page index, every page object and its log
 * (entries' checksums and sequence numbers, entries inside the page,
 * where the log ends against its stored tail), and that no block is
 * named twice or named and free in the allocator (pma_usable_size of the
 * heap as it is open: a read-only open shows the allocator's recovered
 * state). Findings go to a pool_fsck_sink (pool/fsck.h) with stable
 * "hdpm-..." codes (pmactl-fsck(1)). Nothing is written except by
 * hdpm_fsck_repair.
 */
#ifndef PMAD_HDPM_FSCK_H
#define PMAD_HDPM_FSCK_H

#include <stdint.h>

#include "pmalloc.h"
#include "pool/fsck.h"

/* does heap's root object hold an HDPM superblock (its magic)? */
int hdpm_fsck_present(struct pma_heap *heap);

/*
 * Check the file system in heap (open read-only, or a private view after
 * recovery). A heap without one: 0 and no finding. 0 when the check ran,
 * -ENOMEM, or the sink's error.
 */
int hdpm_fsck_heap(struct pma_heap *heap, struct pool_fsck_sink *sink);

enum hdpm_fsck_flag {
	HDPM_FSCK_ADVANCED = 1 << 0, /* also destructive repairs */
	HDPM_FSCK_DRY_RUN = 1 << 1, /* write nothing, tell notes */
};

/*
 * Repair the file system in heap (open writable): the stores fsck makes
 * itself (a page log's stored tail set back to the end of its last valid
 * entry when the entry at the tail is damaged: a torn tail; with
 * HDPM_FSCK_ADVANCED also when valid-looking entries follow the damaged
 * one, which are lost), each persisted before the next; then a writable
 * mount without the GC thread (journal undo or commit, GC journal, every
 * log's end) and unmount; then every live block no word of the file
 * system names (hdpm-block-leaked) is freed, one allocator free each.
 * notes (may be NULL) is told each of fsck's repairs as an info finding
 * ("repair-hdpm-..."); HDPM_FSCK_DRY_RUN writes nothing. No file system:
 * 0. 0, or -errno with a message.
 */
int hdpm_fsck_repair(struct pma_heap *heap, unsigned flags,
		     struct pool_fsck_sink *notes);

/* at most this many journal slots (a version 4 file system's) */
#define HDPM_FSCK_SLOTS 8u

/* an operation a crash interrupted, in one journal slot */
struct hdpm_fsck_pending_op {
	unsigned slot; /* 0: the superblock's journal; 1..: the jslots */
	int committed; /* 0: ACTIVE, the mount undoes it; 1: COMMITTED,
			* the mount finishes it */
	uint64_t seq; /* the operation's sequence number */
	unsigned records; /* its valid journal records */
	unsigned part; /* where the slot's state word is */
	uint64_t off;
};

/* what the next mount's recovery does (hdpm_fsck_pending) */
struct hdpm_fsck_pending {
	int present; /* the heap holds a file system (else all 0) */
	/* a journal the mount refuses (a state word naming no state, a GC
	 * retire list too long): hdpm_fsck_heap's findings say which */
	int refused;
	unsigned undo, finish; /* operations undone, finished */
	unsigned nops; /* entries of ops: the slots not idle */
	struct hdpm_fsck_pending_op ops[HDPM_FSCK_SLOTS];
	/* background merges the mount finishes or undoes (the count of
	 * hdpm_stats.bg_recovered it makes): one for a retire list to free,
	 * one for a merge being built (its orphan page freed) */
	unsigned merges;
	int merge_building;
	uint64_t retire; /* pages on the GC journal's retire list */
};

/*
 * What recovery (the next writable mount) would do to the file system in
 * heap, from its journals as they are (open read-only; nothing is
 * written): the operations a crash interrupted, per journal slot, and
 * the background merge it left. Page log tails are not looked at (a torn
 * one is a finding of hdpm_fsck_heap). 0 (no file system: present 0).
 */
int hdpm_fsck_pending(struct pma_heap *heap, struct hdpm_fsck_pending *ret);

/*
 * Recovery of the file system in heap (a private view: pma_heap_open
 * with PMA_HEAP_PRIVATE), as the next mount makes it, then the check of
 * the state it leaves. A mount that refuses is "hdpm-recovery-refused".
 */
int hdpm_fsck_recover(struct pma_heap *heap, struct pool_fsck_sink *sink);

#endif
