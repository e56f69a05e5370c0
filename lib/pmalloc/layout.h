/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * On-media layout of a PMAlloc heap: one POOL_REGION_PMALLOC region of a
 * pool part. Fixed-width little-endian fields, _Static_asserts on sizes.
 * Offsets named *_off are relative to the region start unless they say
 * "pool offset" (part << 56 | byte offset in the part, see pool/layout.h).
 *
 *   [0, 4 KiB)            struct pma_heap_hdr (geometry, checksum, root word)
 *   [arena_off, ...)      narenas x struct pma_arena_desc (one line each)
 *   [log_off, ...)        narenas x log_cap x struct pma_rec (16 B slots)
 *   [pmap_off, ...)       npages x uint64_t page map (PMA_PMAP_*)
 *   [sum_off, ...)        version 5: the page map's summary, one bit per
 *                         group of 2^sum_shift pages (PMA_SUM_*)
 *   [data_off, size)      data area, npages 4 KiB pages; slabs are 64 KiB
 *                         (16 pages) aligned to 64 KiB from data_off
 *
 * Invariants (see doc/pmalloc.md for the protocol):
 *  - the page map and the slab bitmaps equal the state at the last
 *    checkpoint, plus possibly part of a re-appliable checkpoint; the logs
 *    from each arena's head hold every later change (redo records).
 *  - a page map entry is non-zero only at the first page of a used extent
 *    or slab; the pages it covers are zero.
 *  - (version 5) a group whose summary bit is clear has no non-zero page
 *    map entry, except entries that a replay of the logs from the current
 *    heads writes again (a checkpoint makes the bits it set durable before
 *    it moves the heads). Only a writable open clears bits, of groups
 *    with no entry (no record is pending then).
 */
#ifndef PMAD_PMALLOC_LAYOUT_H
#define PMAD_PMALLOC_LAYOUT_H

#include <stdint.h>

#include "pool/layout.h"

#define PMA_HEAP_MAGIC "PMAHEAP1" /* 8 bytes, no NUL stored */
#define PMA_HEAP_MAGIC_LEN 8
/* 2: page map entries of slabs carry the class and owner arena;
 * 3: EXT_LFREE records; 4: one-record extent ops (EXT_ALLOC1 ...);
 * 5: the page map summary (sum_off, sum_shift); 6: SLAB_FREE records
 * (empty slabs are released); 7: every word recovery trusts is checked
 * (head_gen, the arena heads, the root word, page map entries, slab
 * bitmap banks: PMA_CHECK_* below; issue 15); 8: per-arena
 * checkpoints: each arena descriptor has its own generation (lgen) and
 * SYNC_FREE records (an owner applies another arena's remote free);
 * 9: slab morphing (SLAB_MORPH records, the slab header's morph_from,
 * the old bitmap in words 3-5 of each bank with its check in word 6;
 * doc/morphing.md);
 * 10: XFREE records (a free of another part's block in the freeing
 * thread's own part, doc/shared-heaps.md step 1);
 * 11: size classes in 16-byte steps from 64 to 256 B (class indices 43
 * to 51, appended: slab.c), so blocks are 16-byte aligned and the offset
 * in a record's payload is in 16-byte units (PMA_REC_OSH_FINE; before:
 * 64-byte units), which bounds a part's heap to 16 TiB;
 * 12: free rings (xring_off): a free of a block of a region another open
 * holds is an entry in the freeing region's ring for that region, which
 * the holder applies (xcons); doc/shared-heaps.md, step 3.
 * Version 3 to 10 heaps are still opened (their logs hold no records
 * their version does not know, and none are written to them; without a
 * summary, open reads their whole page map) */
#define PMA_HEAP_VERSION 12
#define PMA_HEAP_VERSION_MIN 3
#define PMA_HEAP_VERSION_EXT1 4 /* the first with EXT_ALLOC1 ... */
#define PMA_HEAP_VERSION_SUM 5 /* the first with a page map summary */
#define PMA_HEAP_VERSION_SLAB_FREE 6 /* the first with SLAB_FREE */
#define PMA_HEAP_VERSION_CHECKED 7 /* the first with checked words */
#define PMA_HEAP_VERSION_LOCAL 8 /* the first with per-arena generations */
#define PMA_HEAP_VERSION_MORPH 9 /* the first with SLAB_MORPH */
#define PMA_HEAP_VERSION_XFREE 10 /* the first with XFREE records */
#define PMA_HEAP_VERSION_FINE 11 /* the first with 16-byte classes */
#define PMA_HEAP_VERSION_XRING 12 /* the first with free rings */

#define PMA_LINE 64ULL
#define PMA_PAGE 4096ULL
#define PMA_PAGE_SHIFT 12
#define PMA_CHUNK 65536ULL /* a slab */
#define PMA_CHUNK_PAGES 16ULL
#define PMA_HDR_SIZE 4096ULL
#define PMA_ROOT_WORD_OFF 2048ULL /* region offset of the root word */
#define PMA_HEAD_GEN_OFF 2112ULL /* region offset of the head generation */
/* version 12: the free rings' producer and consumer words (lines after
 * head_gen's, in the header page outside the checksum) */
#define PMA_XPROD_OFF 2176ULL
#define PMA_XRING_SLOTS 64 /* PMA_MAX_SLOTS */
#define PMA_XRING_CAP 64 /* entries per ring */
/* version 7: the root word's check, in the root word's line */
#define PMA_ROOT_CHECK_OFF (PMA_ROOT_WORD_OFF + 8)

/* interleaving: consecutive items go to NBANKS different cache lines */
#define PMA_NBANKS 6

/* ------------------------------------------------------------ header */

/* Written once at format; afterwards only root_off and head_gen change,
 * each alone in its cache line. */
struct pma_heap_hdr {
	char magic[PMA_HEAP_MAGIC_LEN]; /* PMA_HEAP_MAGIC */
	uint32_t version; /* PMA_HEAP_VERSION */
	uint32_t hdr_size; /* sizeof(struct pma_heap_hdr) */
	uint64_t region_size; /* bytes of the region */
	uint32_t narenas; /* arenas (descs and logs) */
	uint32_t log_cap; /* records per arena log */
	uint64_t arena_off; /* region offset of the descs */
	uint64_t log_off; /* region offset of the first log */
	uint64_t pmap_off; /* region offset of the page map */
	uint64_t data_off; /* region offset of the data area */
	uint64_t npages; /* 4 KiB pages in the data area */
	uint64_t create_time; /* seconds since the epoch */
	/* version 5 (0 before): region offset of the page map summary, and
	 * log2 of the pages of one summary group */
	uint64_t sum_off;
	uint32_t sum_shift;
	/* version 12 (0 before): entries per free ring, and the region
	 * offset of the rings (PMA_MAX_SLOTS of them, by destination slot) */
	uint32_t xring_cap;
	uint64_t xring_off;
	uint8_t reserved[148];
	uint32_t checksum; /* crc32c of all bytes before this field */
	uint8_t pad[PMA_ROOT_WORD_OFF - 256];
	/* the root object: a pool offset, 0 if none; a malloc_to dest */
	uint64_t root_off;
	/* version 7: pma_check_root(root_off) once the root is made (0
	 * before, and after a crash between the two stores) */
	uint64_t root_check;
	uint8_t pad2[PMA_HEAD_GEN_OFF - PMA_ROOT_WORD_OFF - 16];
	/*
	 * Selects the current head of every arena: pma_arena_desc.head[
	 * head_gen & 1]. A checkpoint writes all new heads into the other
	 * slots, fences, then increments head_gen (one 8-byte store): the
	 * heads of all arenas move together, never one without the others.
	 * Version 7: the generation is the low 48 bits, a check the high
	 * 16 (pma_check_gen), so a flipped bit cannot select stale heads.
	 */
	uint64_t head_gen;
	uint8_t pad3[PMA_XPROD_OFF - PMA_HEAD_GEN_OFF - 8];
	/*
	 * Version 12, the free rings (doc/shared-heaps.md, step 3). Both
	 * words of a pair are written by one holder only:
	 * xprod[d]: entries this region's ring for slot d holds, published
	 *   once each entry and the clear of its dest word are durable (a
	 *   plain store, not flushed: recovery of this region finds the
	 *   entries from the valid ones, and republishes it);
	 * xcons[s]: entries of slot s's ring for this region applied (their
	 *   frees durable in this region's logs), persisted, with a check
	 *   (pma_check_cons); 0 if none yet.
	 */
	uint64_t xprod[PMA_XRING_SLOTS];
	uint64_t xcons[PMA_XRING_SLOTS];
	uint8_t pad4[PMA_HDR_SIZE - PMA_XPROD_OFF - 16 * PMA_XRING_SLOTS];
};
_Static_assert(__builtin_offsetof(struct pma_heap_hdr, checksum) == 252,
	       "heap header checksum is the last word of the first 256 B");
_Static_assert(__builtin_offsetof(struct pma_heap_hdr, root_off) ==
		       PMA_ROOT_WORD_OFF,
	       "root word offset");
_Static_assert(__builtin_offsetof(struct pma_heap_hdr, head_gen) ==
		       PMA_HEAD_GEN_OFF,
	       "head generation offset");
_Static_assert(__builtin_offsetof(struct pma_heap_hdr, xprod) == PMA_XPROD_OFF,
	       "free ring words offset");
_Static_assert(sizeof(struct pma_heap_hdr) == PMA_HDR_SIZE, "heap hdr size");

/*
 * Version 12: a free ring entry, 16 bytes: entry j of the ring of region
 * P for slot D is at P's xring_off + (D * xring_cap + j % xring_cap) *
 * 16, lap = j / xring_cap:
 *   word0 = pool offset of the block freed | (lap % 15 + 1)  (4 bits)
 *   word1 = pool offset of its dest word (0: none) | (lap % 7 + 1)
 * Valid iff both tags match the lap (never 0; consecutive laps differ,
 * so a slot of the last lap or a torn entry is invalid). A valid entry
 * whose block is 0 is void: fsck --repair --advanced writes one over a
 * damaged entry below the producer word, and the holder skips it.
 */
struct pma_xent {
	uint64_t word0;
	uint64_t word1;
};
_Static_assert(sizeof(struct pma_xent) == 16, "free ring entry size");
#define PMA_XENT_TAG0_MASK 0xfULL
#define PMA_XENT_TAG1_MASK 0x7ULL
static inline uint64_t pma_xent_tag0(uint64_t lap)
{
	return lap % 15 + 1;
}
static inline uint64_t pma_xent_tag1(uint64_t lap)
{
	return lap % 7 + 1;
}
#define PMA_HDR_CSUM_LEN 252

/* One per arena, one cache line: head[G & 1] is the global index of the
 * first record not yet applied by a checkpoint; the other slot is the
 * staging area of the next checkpoint. G, the arena's generation, is
 * hdr.head_gen before version 8; from version 8 it is hdr.head_gen +
 * lgen (low PMA_GEN_BITS bits of each): a global checkpoint (every
 * arena at once) increments head_gen, a local checkpoint (one arena,
 * under its own lock alone) increments only its lgen.
 * Version 7: check[s] = pma_check_head(head[s], arena, G') for the
 * generation G' that makes slot s current, staged with its head (both
 * durable before the generation moves).
 * Version 8: lgen = pma_check_lgen(generation, arena) (check in the top
 * 16 bits, like head_gen's). */
struct pma_arena_desc {
	uint64_t head[2];
	uint64_t check[2];
	uint64_t lgen;
	uint8_t reserved[24];
};
_Static_assert(sizeof(struct pma_arena_desc) == 64, "arena desc is a line");

/* ------------------------------------------------------------ log */

/*
 * A bookkeeping log record, 16 bytes, two 8-byte words (8-byte atomic):
 *   word0 = type:4 | epoch:12 | cksum:8 | payload:40    (low bits first)
 *   word1 = tag:3 | value:61 (value has its low 3 bits zero)
 * Record with global index k lives in slot k % log_cap (see
 * pma_booklog_slot(): consecutive k go to different lines). lap = k /
 * log_cap; epoch = (lap + 1) & 0xfff and tag = lap % 7 + 1 are never 0 and
 * differ between consecutive laps, so a slot still holding the previous
 * lap's record, a zeroed slot, or a torn record (one word old) is invalid.
 * cksum = low 8 bits of crc32c(word0 without cksum, word1, k).
 * Formats of version 12 since session 22 start each log in lap 1 (heads
 * log_cap) over a lap 0 of SLAB_FREE records with zero words that no
 * head reaches: every slot ahead of a tail holds a whole record of the
 * lap before (see log_end_check in recovery.c).
 */
struct pma_rec {
	uint64_t word0;
	uint64_t word1;
};
_Static_assert(sizeof(struct pma_rec) == 16, "log record size");

enum pma_rec_type {
	PMA_REC_NONE = 0,
	PMA_REC_ALLOC = 1, /* payload block>>6; value dest pool offset */
	PMA_REC_FREE = 2, /* block freed by its owner arena; dest */
	PMA_REC_RFREE = 3, /* block freed by another arena; dest */
	PMA_REC_SLAB_NEW = 4, /* payload slab>>6; value class<<8|owner<<16 */
	PMA_REC_EXT_ALLOC = 5, /* payload extent>>6; dest; then EXT_LEN */
	PMA_REC_EXT_FREE = 6, /* payload extent>>6; dest; then EXT_LEN */
	PMA_REC_EXT_LEN = 7, /* payload npages; value 0 */
	/* payload extent>>6; dest; then EXT_LEN: an extent freed by the
	 * arena whose log holds its allocation (applied in log order) */
	PMA_REC_EXT_LFREE = 8,
	/* version 4: EXT_ALLOC, EXT_FREE and EXT_LFREE in one record, for
	 * an extent below PMA_REC_EXT1_OFF_MAX of at most
	 * PMA_REC_EXT1_NPAGES_MAX pages: payload (extent>>12) |
	 * (npages - 1) << PMA_REC_EXT1_OFF_BITS; value dest */
	PMA_REC_EXT_ALLOC1 = 9,
	PMA_REC_EXT_FREE1 = 10,
	PMA_REC_EXT_LFREE1 = 11,
	/* version 6: an empty slab goes back to the free pages (its owner
	 * arena's log, written by a checkpoint): payload slab>>6; value
	 * class<<8|owner<<16, as its SLAB_NEW */
	PMA_REC_SLAB_FREE = 12,
	/* version 8: the block's owner arena applies a remote free (an
	 * RFREE in another arena's log, phase 1 of a two-phase free) to its
	 * own state, in its own log: payload block>>6; value 0. The RFREE
	 * is retired only after this record is durable, and the block is
	 * reused only after the RFREE is retired (doc/pmalloc.md) */
	PMA_REC_SYNC_FREE = 13,
	/* version 9: the owner turns a slab of class old into one of class
	 * cls, its live blocks of old staying where they are (the old
	 * bitmap; doc/morphing.md): payload slab>>6; value
	 * cls<<8|owner<<16|old<<32. Appended with the first allocation of
	 * the new class, after the old bitmap is durable */
	PMA_REC_SLAB_MORPH = 14,
	/* version 10: a block of another part's heap, freed by this arena
	 * (phase 1 of a two-phase free across parts, written in the
	 * freeing thread's own part): payload (block >> 6) | part <<
	 * PMA_REC_XFREE_OFF_BITS (block: byte offset in that part); value
	 * dest. The block's owner arena applies it in its own log
	 * (SYNC_FREE); this record is retired only after that, and the
	 * block is reused only after this record is retired */
	PMA_REC_XFREE = 15,
	PMA_REC_NTYPES,
};
#define PMA_REC_EXT1_OFF_BITS 29 /* extent offset >> 12: below 2 TiB */
#define PMA_REC_EXT1_OFF_MAX (1ULL << (PMA_REC_EXT1_OFF_BITS + 12))
#define PMA_REC_EXT1_NPAGES_MAX 2048ULL /* 11 bits: 8 MiB */
/* block >> osh: below 4 TiB in its part (1 TiB from version 11) */
#define PMA_REC_XFREE_OFF_BITS 36
#define PMA_REC_TYPE_BITS 4
#define PMA_REC_EPOCH_SHIFT 4
#define PMA_REC_EPOCH_MASK 0xfffULL
#define PMA_REC_CSUM_SHIFT 16
#define PMA_REC_CSUM_MASK 0xffULL
#define PMA_REC_PAYLOAD_SHIFT 24
#define PMA_REC_PAYLOAD_MAX ((1ULL << 40) - 1)
#define PMA_REC_TAG_MASK 0x7ULL
/* the shift of the offset in a record's payload (>> 6 before version 11:
 * payload << osh is the offset; not EXT_*1, EXT_LEN) */
#define PMA_REC_OSH 6
#define PMA_REC_OSH_FINE 4
static inline unsigned pma_rec_osh(uint32_t version)
{
	return version >= PMA_HEAP_VERSION_FINE ? PMA_REC_OSH_FINE :
						  PMA_REC_OSH;
}
/* a heap of this version lies below this offset of its part */
static inline uint64_t pma_rec_off_end(uint32_t version)
{
	return (PMA_REC_PAYLOAD_MAX + 1) << pma_rec_osh(version);
}

/* slots per group: NBANKS lines of 4 records */
#define PMA_LOG_GROUP (PMA_NBANKS * (PMA_LINE / 16))
#define PMA_LOG_CAP_DEFAULT (PMA_LOG_GROUP * 1024) /* 24576 records, 384 KiB */

/* ------------------------------------------------------------ page map */

/*
 * entry = kind:4 | cls:6 | owner:6 | npages:36 | check:12 (low bits
 * first; before version 7 npages:48 with its top 12 bits 0, no check).
 * check = crc32c(entry without check, page, PMA_CHECK_SEED) & 0xfff; a
 * free entry is 0 (no check). cls and
 * owner are set in PMA_PMAP_SLAB entries only (same values as the slab
 * header, which stays the checked copy): open learns every slab's class
 * and owner from the page map without touching the slab.
 */
#define PMA_PMAP_FREE 0ULL /* free page, or inside an extent/slab */
#define PMA_PMAP_SLAB 1ULL /* first page of a 16-page slab */
#define PMA_PMAP_EXTENT 2ULL /* first page of a large allocation */
#define PMA_PMAP_FREEING 3ULL /* DRAM only: extent freed, not checkpointed */
#define PMA_PMAP_KIND_MASK 0xfULL
#define PMA_PMAP_CLS_SHIFT 4
#define PMA_PMAP_OWNER_SHIFT 10
#define PMA_PMAP_FIELD_MASK 0x3fULL /* cls and owner: 6 bits each */
#define PMA_PMAP_NPAGES_SHIFT 16
#define PMA_PMAP_NPAGES_BITS 36 /* 256 TiB of 4 KiB pages */
#define PMA_PMAP_CHECK_SHIFT 52
#define PMA_PMAP_CHECK_MASK (0xfffULL << PMA_PMAP_CHECK_SHIFT)

static inline uint64_t pma_pmap_make(uint64_t kind, uint64_t npages)
{
	return kind | (npages << PMA_PMAP_NPAGES_SHIFT);
}
/* the entry of a slab of class cls owned by arena owner */
static inline uint64_t pma_pmap_make_slab(uint64_t cls, uint64_t owner)
{
	return pma_pmap_make(PMA_PMAP_SLAB, PMA_CHUNK_PAGES) |
	       (cls & PMA_PMAP_FIELD_MASK) << PMA_PMAP_CLS_SHIFT |
	       (owner & PMA_PMAP_FIELD_MASK) << PMA_PMAP_OWNER_SHIFT;
}
static inline unsigned pma_pmap_cls(uint64_t e)
{
	return (unsigned)(e >> PMA_PMAP_CLS_SHIFT & PMA_PMAP_FIELD_MASK);
}
static inline unsigned pma_pmap_owner(uint64_t e)
{
	return (unsigned)(e >> PMA_PMAP_OWNER_SHIFT & PMA_PMAP_FIELD_MASK);
}
static inline uint64_t pma_pmap_kind(uint64_t e)
{
	return e & PMA_PMAP_KIND_MASK;
}
static inline uint64_t pma_pmap_npages(uint64_t e)
{
	return e >> PMA_PMAP_NPAGES_SHIFT &
	       ((1ULL << PMA_PMAP_NPAGES_BITS) - 1);
}

/* ------------------------------------------------------------ summary */

/*
 * The page map summary (version 5) lets open read only the parts of the
 * page map that can hold entries: its time follows the heap's use, not
 * its size. Group g covers pages [g << sum_shift, (g + 1) << sum_shift);
 * its bit is set (by a checkpoint or a recovery, before the heads move)
 * before any entry in it can be relied on; a writable open clears the
 * bits of the groups its page map scan found empty.
 *
 * Summary word w (8-byte atomic) holds the bits of groups 48w .. 48w+47
 * in bits 0-47 and a check in bits 48-63: 0x8000 | (crc32c(bits, w,
 * PMA_SUM_SEED) & 0x7fff). A zeroed or torn word is never valid; open
 * treats the groups of an invalid word as set (reads them), so a
 * corrupt summary costs time, not data. Format writes every word.
 */
#define PMA_SUM_SHIFT_DEFAULT 9 /* 512 pages: 2 MiB of data, 4 KiB of map */
#define PMA_SUM_SHIFT_MIN 4 /* a chunk */
#define PMA_SUM_SHIFT_MAX 16 /* 256 MiB of data, 512 KiB of map */
#define PMA_SUM_BITS 48
#define PMA_SUM_BITS_MASK ((1ULL << PMA_SUM_BITS) - 1)
#define PMA_SUM_SEED 0x50534d31ULL /* "PSM1" */

/* ------------------------------------------------------------ slab */

#define PMA_SLAB_MAGIC 0x31424c53u /* "SLB1" */
#define PMA_SLAB_BITMAP_OFF 64ULL
#define PMA_SLAB_BITMAP_SIZE (PMA_NBANKS * PMA_LINE)
#define PMA_SLAB_HDR_SIZE 512ULL /* blocks start here */
#define PMA_SLAB_MAX_BLOCKS ((PMA_CHUNK - PMA_SLAB_HDR_SIZE) / 64)
#define PMA_SLAB_BANK_WORDS 3 /* 192 bits: PMA_SLAB_MAX_BLOCKS / NBANKS */
#define PMA_SLAB_BANK_CHECK 7 /* the word of a bank that holds its check */
/* version 9: a mixed slab's old bitmap (its blocks of the old class
 * still live, interleaved like the live bitmap) in words 3-5 of each
 * bank, with its own check (pma_check_old) in word 6. Only read when the
 * header's morph_from is set: the owner writes these words before the
 * SLAB_MORPH record that makes them count */
#define PMA_SLAB_OLD_WORD 3
#define PMA_SLAB_OLD_CHECK 6

/* ------------------------------------------------------------ checks */

/*
 * Version 7 checks of the words recovery trusts (issue 15: one flipped
 * bit must be refused, never applied). Each check is a crc32c of the word
 * and where it lives, so a word copied to another place fails too; the
 * 64-bit checks carry a marker bit, so a zeroed check word is never
 * valid. The functions are in lib/pmalloc/check.c.
 */
#define PMA_CHECK_SEED 0x4b434850ULL /* "PHCK" */
#define PMA_CHECK_MARK (1ULL << 63)
#define PMA_GEN_BITS 48
#define PMA_GEN_MASK ((1ULL << PMA_GEN_BITS) - 1)

/*
 * First line of a slab (64 KiB chunk), written by a checkpoint applying
 * SLAB_NEW. The allocation bitmap follows at PMA_SLAB_BITMAP_OFF: block
 * i's bit is bit (i / NBANKS) of cache line (i % NBANKS), so neighbouring
 * blocks' bits are in different lines. A bank (line) uses its first
 * PMA_SLAB_BANK_WORDS words; version 7 keeps a check of them in its last
 * word, PMA_SLAB_BANK_CHECK: pma_check_bank(words, slab offset, bank),
 * written with the words (same line) by every checkpoint and replay that
 * changes them.
 */
struct pma_slab_hdr {
	uint32_t magic; /* PMA_SLAB_MAGIC */
	uint16_t cls; /* size class index */
	uint16_t owner; /* arena that allocates from this slab */
	uint32_t block_size; /* bytes */
	uint32_t nblocks; /* blocks after the header */
	/* version 9: the old class + 1 of a mixed slab (blocks of class
	 * morph_from - 1 live in the old bitmap), 0 for a plain slab; a
	 * slab whose old bitmap is empty is plain whatever this says (the
	 * owner keeps it while a replay may need it) */
	uint16_t morph_from;
	uint8_t reserved[46];
};
_Static_assert(sizeof(struct pma_slab_hdr) == 64, "slab header is a line");
_Static_assert(PMA_SLAB_BITMAP_OFF + PMA_SLAB_BITMAP_SIZE <= PMA_SLAB_HDR_SIZE,
	       "bitmap fits before the first block");
_Static_assert(PMA_SLAB_MAX_BLOCKS <= PMA_NBANKS * 64 * PMA_SLAB_BANK_WORDS,
	       "bitmap has a bit for every block");
_Static_assert(PMA_SLAB_OLD_WORD >= PMA_SLAB_BANK_WORDS &&
		       PMA_SLAB_OLD_CHECK >=
			       PMA_SLAB_OLD_WORD + PMA_SLAB_BANK_WORDS &&
		       PMA_SLAB_OLD_CHECK < PMA_SLAB_BANK_CHECK,
	       "the old bitmap and its check fit between bits and check");
_Static_assert(PMA_SLAB_BANK_CHECK >= PMA_SLAB_BANK_WORDS &&
		       PMA_SLAB_BANK_CHECK < PMA_LINE / 8,
	       "a bank's check is in its line, after its words");

#endif
