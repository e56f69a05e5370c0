/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * HDPM on-media layout. Every field is little-endian and fixed-width;
 * every link is a pool offset (0: none), never a pointer.
 *
 *   heap root object -> struct hdpm_super (magic, journal slot 0, the
 *                       pmalloc dest words allocations and frees go through)
 *   jslots_off       -> journal slots 1..HDPM_JSLOTS-1 (version 4)
 *   itable_off       -> the inode table's first chunk (inode 0: "/"); chunk
 *                       k >= 1 (itable_more[k - 1]) holds the next
 *                       n0 << k inodes, n0 the first chunk's count
 *   inode.index_off  -> index_cap x uint64_t page entries
 *   page entry       -> page object: struct hdpm_page_hdr + 4096 data bytes
 *   page.log_off     -> log chunk: HDPM_LOG_SIZE bytes of log entries
 *   inode.name_off   -> the entry's name, NUL-terminated
 *
 * Invariants: a block is named by exactly one of these words (or is the
 * root / the inode table); page bytes at or past the inode's size read
 * as zero (base page and log); a page's entries [0, log_tail) are valid
 * (checksum, sequence); words change only inside a journaled operation,
 * except the log tail of a single-page append that does not change the
 * size (the tail store is that write's commit point).
 */
#ifndef PMAD_HDPM_LAYOUT_H
#define PMAD_HDPM_LAYOUT_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#define HDPM_MAGIC "HDPMFS\0\1"
#define HDPM_MAGIC_LEN 8
/* 2: the background GC journal; 3: page headers say how much of the
 * data is a zero tail that was never written; 4: HDPM_JSLOTS journals
 * (slot 0 in the superblock, 1.. in the block at jslots_off). A version 2
 * or 3 file system is upgraded at its first read-write mount: its pages
 * all have zero_tail 0 (which version 3 reads the same), the slot block
 * is allocated and zeroed, then 4 is stored */
#define HDPM_VERSION 4
#define HDPM_VERSION_OLDEST 2 /* still mounted (and upgraded) */
#define HDPM_JSLOTS 8u /* journals of a version 4 file system */

#define HDPM_PAGE_SIZE 4096u
#define HDPM_NINODES 4096u /* inodes of a new file system */
/* the inode table grows by chunks that never move: chunk k holds
 * n0 << k inodes (n0 = the first chunk's, HDPM_NINODES unless
 * sb->itable_log2 says), so 8 chunks hold 255 x n0 */
#define HDPM_ICHUNKS 8u
#define HDPM_NAME_MAX 255u
#define HDPM_PATH_MAX 4096u
#define HDPM_LOG_INLINE 448u /* log bytes inside the page object */
#define HDPM_LOG_SIZE 2048u /* bytes of one page's overflow log chunk */
#define HDPM_LOG_TOTAL (HDPM_LOG_INLINE + HDPM_LOG_SIZE) /* log positions */
#define HDPM_LOG_GC 1984u /* a log past this is merged (inline GC) */
#define HDPM_LOG_DATA_MAX 1024u /* larger partial writes go CoW */
#define HDPM_TX_MAX 300u /* journal records of one operation */
#define HDPM_WRITE_MAX_PAGES 256u /* pages of one atomic write */
#define HDPM_MAX_PAGES (1ULL << 28) /* 1 TiB files */
#define HDPM_GC_BATCH_MAX 32u /* pages one background GC step merges */

/*
 * A page object: this header, the 4096 data bytes, then the first
 * HDPM_LOG_INLINE bytes of the page's log (4608 bytes: the allocation
 * class a 4160-byte object gets anyway). Log positions [0, INLINE) are in
 * the object, [INLINE, TOTAL) in the overflow chunk at log_off, allocated
 * by the first entry that does not fit inline. An entry never straddles:
 * one that does not fit in the inline rest goes to INLINE, after a pad
 * entry (seq HDPM_LOG_PAD, len 0) at its old place.
 *
 * The tail is published with a plain store and is NOT flushed by an
 * append: an entry is committed when it is durable (one fence), and the
 * mount finds the end of the log by checking entries past the stored
 * tail (crc and sequence). The crc covers the page's nonce, unique to
 * this page object's life, so entries of an older life of the same bytes
 * never validate; a new page starts with a zeroed first entry.
 */
struct hdpm_page_hdr {
	uint64_t log_off; /* the overflow chunk, 0 until needed */
	uint64_t log_tail; /* log bytes of published entries (positions) */
	uint64_t nonce; /* this page object's life, in every entry's crc */
	/* v3: the last zero_tail bytes of the data read as zero, whatever
	 * the block holds there: they were not written (0 in version 2) */
	uint64_t zero_tail;
	uint64_t rsvd[4];
};
static_assert(sizeof(struct hdpm_page_hdr) == 64, "page header size");
#define HDPM_PAGE_LOG_OFF (sizeof(struct hdpm_page_hdr) + HDPM_PAGE_SIZE)
#define HDPM_PAGE_OBJ_SIZE (HDPM_PAGE_LOG_OFF + HDPM_LOG_INLINE)
static_assert(HDPM_PAGE_OBJ_SIZE == 4608, "page object size");
#define HDPM_LOG_PAD 0xffffffffu /* seq of a pad entry */

/*
 * One log entry: this header, then len data bytes, padded to 16 bytes.
 * crc: crc32c seeded with the page object's offset, over its nonce, the
 * header (crc = 0) and the data, so an entry of another page or an older
 * life of the bytes never validates. seq: 1 + the entry's position / 16
 * (HDPM_LOG_PAD for a pad).
 */
struct hdpm_log_ent {
	uint32_t crc;
	uint32_t seq;
	uint16_t off; /* first byte in the page */
	uint16_t len; /* data bytes, 1..HDPM_LOG_DATA_MAX */
	uint32_t rsvd;
};
static_assert(sizeof(struct hdpm_log_ent) == 16, "log entry size");
#define HDPM_LOG_ALIGN 16u

/* the kind of a file system entry, with its permission bits and gen */
struct hdpm_inode {
	uint64_t mode_gen; /* st_mode (0: free slot) | generation << 32 */
	uint64_t parent; /* inode number of the directory holding it */
	uint64_t size; /* bytes (files) */
	uint64_t index_off; /* page entries, 0 if none */
	uint64_t index_cap; /* entries in that array */
	uint64_t name_off; /* name block */
	uint64_t mtime_ns; /* not journaled: may be older after a crash */
	uint64_t rsvd;
};
static_assert(sizeof(struct hdpm_inode) == 64, "inode size");

/* journal record kinds */
enum hdpm_rec_kind {
	HDPM_REC_WORD = 1, /* undo: *word = old */
	HDPM_REC_PAGE = 2, /* word names a page object: undo frees a new
			      one and restores old; commit frees old */
	HDPM_REC_BLOCK = 3, /* the same for a plain block (no log) */
	HDPM_REC_FREE_TAIL = 4, /* word: inode; old: first page index;
				   commit frees those pages */
	HDPM_REC_FREE_INODE = 5, /* word: inode; commit frees all its blocks */
	HDPM_REC_TAIL = 6, /* word: a log tail; undo restores it and voids
			      the entry at the old tail */
};

/* a journal record; valid iff seq is the journal's and crc matches */
struct hdpm_rec {
	uint32_t kind;
	uint32_t crc; /* crc32c of the record with crc = 0 */
	uint64_t seq;
	uint64_t word; /* pool offset of the word (or of the inode) */
	uint64_t old; /* the word's value before the operation */
};
static_assert(sizeof(struct hdpm_rec) == 32, "record size");

/* journal states (low byte of jstate; the tx sequence above it) */
enum hdpm_jstate {
	HDPM_J_IDLE = 0,
	HDPM_J_ACTIVE = 1, /* records valid; crash: undo them */
	HDPM_J_COMMITTED = 2, /* done; crash: run the commit actions */
};

/*
 * The allocation in flight: written (and fenced) before every
 * pma_malloc_to into alloc_slot. Valid iff crc matches and its seq is the
 * journal's; then alloc_slot differing from before (or before not live
 * and alloc_slot live) means the allocation happened.
 */
struct hdpm_intent {
	uint64_t before; /* alloc_slot before the allocation */
	uint64_t tag; /* tx seq << 16 | record index */
	uint32_t before_live; /* before named a live block */
	uint32_t crc; /* crc32c of the intent with crc = 0 */
};
static_assert(sizeof(struct hdpm_intent) == 24, "intent size");

/*
 * The background GC's own journal (gc.c). The GC runs without the fs
 * lock, so it cannot use the operation journal: it allocates through
 * gc_slot (never freed, like alloc_slot) and says what it does here.
 *
 * A merge: the record {word, old, before} is made durable (state BUILD),
 * the new page is allocated into gc_slot and written, then published by a
 * compare-and-swap of the index word from old to the new page. The old
 * page goes on the retire list (durable) before the record is cleared;
 * the pages on the list are freed under the fs lock (so that no reader is
 * still in them). Recovery frees the listed pages, then, for a BUILD
 * record: if the word names gc_slot's block the merge was published and
 * old is freed; otherwise the block is freed unless a word names it (the
 * allocator's recovery may have put an older, published one back there).
 */
struct hdpm_gc_journal {
	uint64_t state; /* HDPM_GC_BUILD | seq << 8, or seq << 8 (idle) */
	uint64_t word; /* pool offset of the index word being merged */
	uint64_t old; /* the page object it names */
	uint64_t before; /* gc_slot before the allocation */
	uint32_t before_live; /* before named a live block */
	uint32_t crc; /* crc32c of the record with crc = 0 */
	uint64_t rsvd[3];
	uint64_t nretire; /* pages on the retire list */
	uint64_t retire[HDPM_GC_BATCH_MAX]; /* replaced pages to free */
};
static_assert(sizeof(struct hdpm_gc_journal) == 72 + 8 * HDPM_GC_BATCH_MAX,
	      "gc journal size");
#define HDPM_GC_BUILD 1u

/*
 * Journal slot 1..HDPM_JSLOTS-1 (version 4): the same journal as slot 0's
 * words in the superblock (jstate, alloc_slot, free_slot, intent, recs),
 * for another operation running at the same time. Every slot has its own
 * seq, records, alloc_slot and free_slot (never freed, like the
 * superblock's).
 */
struct hdpm_jslot {
	uint64_t jstate; /* enum hdpm_jstate | seq << 8 */
	uint64_t alloc_slot; /* dest of this slot's allocations */
	uint64_t free_slot; /* dest of this slot's frees */
	uint64_t rsvd[5];
	struct hdpm_intent intent; /* own cache line */
	uint64_t rsvd2[5];
	struct hdpm_rec recs[HDPM_TX_MAX];
};
static_assert(offsetof(struct hdpm_jslot, intent) == 64, "jslot intent");
static_assert(offsetof(struct hdpm_jslot, recs) == 128, "jslot records");
static_assert(sizeof(struct hdpm_jslot) == 128 + 32 * HDPM_TX_MAX,
	      "jslot size");

/* the block at sb->jslots_off: slots 1..HDPM_JSLOTS-1 */
struct hdpm_jslots {
	struct hdpm_jslot slot[HDPM_JSLOTS - 1];
};
static_assert(sizeof(struct hdpm_jslots) ==
		      (HDPM_JSLOTS - 1) * sizeof(struct hdpm_jslot),
	      "jslots size");

/*
 * The superblock, in the heap's root object. The alloc_slots and
 * free_slots (this one and each journal slot's), gc_slot and gc_free_slot
 * are the only words
 * HDPM hands to pma_malloc_to / pma_free_from: they are never freed, so
 * the allocator's redo of a dest word at its recovery never lands in a
 * block HDPM has since freed and reused.
 */
struct hdpm_super {
	char magic[HDPM_MAGIC_LEN]; /* written last at format */
	uint32_t version;
	/* log2 of the first chunk's inode count; 0: HDPM_NINODES (every
	 * file system made before the table could grow) */
	uint32_t itable_log2;
	uint64_t itable_off; /* the inode table's first chunk */
	uint64_t ninodes; /* inodes in the chunks in use (journaled) */
	uint64_t alloc_slot; /* dest of journal slot 0's allocations */
	uint64_t free_slot; /* dest of journal slot 0's frees */
	uint64_t jstate; /* slot 0: enum hdpm_jstate | seq << 8 */
	uint64_t mounts; /* read-write mounts: the high bits of nonces */
	struct hdpm_intent intent; /* slot 0's; own cache line */
	/* v4: struct hdpm_jslots (journal slots 1..), never freed; 0 in
	 * older versions (their one journal is slot 0) */
	uint64_t jslots_off;
	uint64_t gc_free_slot; /* v4: dest of the background GC's frees */
	uint64_t rsvd2[3];
	struct hdpm_rec recs[HDPM_TX_MAX];
	uint64_t gc_slot; /* dest of every background GC allocation */
	/* chunks 1..7 of the inode table (journaled; 0 until grown into).
	 * A build that predates them reads only the first chunk and refuses
	 * a grown table: ninodes is more than that chunk holds */
	uint64_t itable_more[HDPM_ICHUNKS - 1];
	struct hdpm_gc_journal gc; /* own cache lines */
};
static_assert(offsetof(struct hdpm_super, intent) == 64, "intent line");
static_assert(offsetof(struct hdpm_super, jslots_off) == 88, "jslots");
static_assert(offsetof(struct hdpm_super, recs) == 128, "records");
static_assert(offsetof(struct hdpm_super, gc) == 128 + 32 * HDPM_TX_MAX + 64,
	      "gc journal line");
static_assert(sizeof(struct hdpm_super) ==
		      128 + 32 * HDPM_TX_MAX + 64 +
			      sizeof(struct hdpm_gc_journal),
	      "super size");

#endif
