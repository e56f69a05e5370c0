/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * On-media layout of a pmad pool. Fixed-width little-endian fields, explicit
 * padding, a _Static_assert on every size and on key offsets.
 *
 * A pool is 1..POOL_MAX_PARTS parts (one per NUMA node), each a file, a file
 * on a fsdax mount, or a devdax device:
 *
 *   every part  [0, 4 KiB)        struct pool_part_hdr
 *   part 0 only [8 KiB, 16 KiB)   struct pool_hdr, copy A
 *               [16 KiB, 24 KiB)  struct pool_hdr, copy B
 *   every part  [64 KiB, size)    data area, carved into regions
 *
 * Invariants:
 *  - every part header names the pool UUID and its own index; the pool
 *    header's part table names each part's UUID, so a swapped or foreign
 *    part is detected at open.
 *  - the pool header exists twice, and outside an update both copies are
 *    byte-identical. An update (generation + 1) writes the non-current copy
 *    first: its generation word, body, then seal (the last 8 bytes:
 *    reserved1 and the checksum, one 8-byte store): once that seal is
 *    durable the update is committed. Then the other copy is written seal
 *    first, then body, its generation word last. So a copy torn by a
 *    crash carries either its old seal (equal to the other copy's) and the
 *    new generation, or the new seal (equal to the complete copy's) and
 *    the old generation: one away from the other copy's, which damage at
 *    rest does not make (pool_fsck tells them apart). Open picks the valid copy
 *    (checksum ok) with the highest generation; an invalid copy is accepted
 *    as damage of the same state only if it equals the valid copy in its
 *    whole body or in its seal. Anything else may be a newer state that was
 *    damaged: a writable open is refused rather than rolled back.
 *  - regions never overlap and lie inside their part's data area.
 *  - a PM offset (struct pool_off) is part index << POOL_OFF_PART_SHIFT |
 *    byte offset in that part; 0 is the null offset (it falls in the part
 *    header, which no allocation can name).
 */
#ifndef PMAD_POOL_LAYOUT_H
#define PMAD_POOL_LAYOUT_H

#include <stdint.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "pmad's on-media format is little-endian; big-endian hosts are not supported"
#endif

#define POOL_PART_MAGIC "PMADPART" /* 8 bytes, no NUL stored */
#define POOL_HDR_MAGIC "PMADPOOL"
#define POOL_MAGIC_LEN 8
#define POOL_FORMAT_MAJOR 1
#define POOL_FORMAT_MINOR 0

#define POOL_MAX_PARTS 16
#define POOL_MAX_REGIONS 64
#define POOL_PATH_HINT_LEN 232
#define POOL_REGION_NAME_LEN 16

#define POOL_PART_HDR_OFF 0x0000ULL
#define POOL_HDR_A_OFF 0x2000ULL
#define POOL_HDR_B_OFF 0x4000ULL
#define POOL_HDR_SIZE 0x2000ULL
#define POOL_DATA_OFF 0x10000ULL /* 64 KiB: start of every data area */
/* smallest legal part: headers plus one 64 KiB data unit */
#define POOL_PART_MIN_SIZE (POOL_DATA_OFF + 0x10000ULL)
/* part sizes and region boundaries are multiples of this */
#define POOL_ALIGN 0x10000ULL

#define POOL_OFF_PART_SHIFT 56
#define POOL_OFF_MASK ((1ULL << POOL_OFF_PART_SHIFT) - 1)

static inline uint64_t pool_off_make(unsigned part, uint64_t off)
{
	return ((uint64_t)part << POOL_OFF_PART_SHIFT) | off;
}
static inline unsigned pool_off_part(uint64_t off)
{
	return (unsigned)(off >> POOL_OFF_PART_SHIFT);
}
static inline uint64_t pool_off_byte(uint64_t off)
{
	return off & POOL_OFF_MASK;
}

/* feature flags: an unknown INCOMPAT bit refuses open, an unknown RO_COMPAT
 * bit allows read-only open, an unknown COMPAT bit is ignored */
#define POOL_FEAT_INCOMPAT_KNOWN 0ULL
#define POOL_FEAT_RO_COMPAT_KNOWN 0ULL

/* Header at the start of every part. Written once at create. */
struct pool_part_hdr {
	char magic[POOL_MAGIC_LEN]; /* POOL_PART_MAGIC */
	uint16_t major; /* POOL_FORMAT_MAJOR */
	uint16_t minor; /* POOL_FORMAT_MINOR */
	uint32_t part_index; /* this part's index in the part table */
	uint8_t pool_uuid[16]; /* the pool this part belongs to */
	uint8_t part_uuid[16]; /* this part; matches the part table */
	uint64_t size; /* bytes of this part in use by the pool */
	uint32_t nparts; /* parts in the pool (as of create) */
	uint32_t reserved0;
	uint64_t create_time; /* seconds since the epoch */
	uint8_t reserved[176]; /* pads the struct to 256 bytes */
	uint32_t reserved1;
	uint32_t checksum; /* crc32c of all bytes before this field */
};
_Static_assert(sizeof(struct pool_part_hdr) == 256, "part header size");
_Static_assert(__builtin_offsetof(struct pool_part_hdr, checksum) == 252,
	       "checksum is the last word");

/* One entry of the part table. */
struct pool_part_entry {
	uint8_t uuid[16]; /* the part header's part_uuid */
	uint64_t size; /* bytes */
	int32_t node; /* NUMA node, -1 if unknown */
	uint32_t flags; /* POOL_PART_* */
	char path_hint[POOL_PATH_HINT_LEN]; /* absolute path at create,
					       NUL-terminated */
};
_Static_assert(sizeof(struct pool_part_entry) == 264, "part entry size");

#define POOL_PART_DEVDAX 0x1u /* the part is a devdax character device */

/* region types */
#define POOL_REGION_FREE 0u /* unused slot */
#define POOL_REGION_PMALLOC 1u
#define POOL_REGION_HDPM 2u
#define POOL_REGION_USER 3u

/* One entry of the region table: a range of a part's data area. */
struct pool_region {
	uint32_t type; /* POOL_REGION_*; FREE = unused */
	uint32_t part; /* part index */
	uint64_t off; /* byte offset in the part */
	uint64_t size; /* bytes */
	uint64_t flags; /* owner-defined */
	char name[POOL_REGION_NAME_LEN]; /* NUL-padded label */
};
_Static_assert(sizeof(struct pool_region) == 48, "region size");

/* The pool header (part 0, two copies). */
struct pool_hdr {
	char magic[POOL_MAGIC_LEN]; /* POOL_HDR_MAGIC */
	uint16_t major; /* incompatible format changes */
	uint16_t minor; /* compatible additions */
	uint32_t hdr_size; /* sizeof(struct pool_hdr) */
	uint64_t generation; /* bumped by every update */
	uint8_t uuid[16]; /* pool UUID */
	uint64_t feat_compat;
	uint64_t feat_incompat;
	uint64_t feat_ro_compat;
	uint64_t create_time; /* seconds since the epoch */
	uint32_t nparts; /* entries used in parts[] */
	uint32_t nregions; /* entries used in regions[] (dense) */
	uint8_t reserved0[48];
	struct pool_part_entry parts[POOL_MAX_PARTS];
	struct pool_region regions[POOL_MAX_REGIONS];
	uint8_t reserved[8192 - 128 - 264 * POOL_MAX_PARTS -
			 48 * POOL_MAX_REGIONS - 8];
	uint32_t reserved1;
	uint32_t checksum; /* crc32c of all bytes before this field */
};
_Static_assert(__builtin_offsetof(struct pool_hdr, parts) == 128,
	       "part table offset");
_Static_assert(sizeof(struct pool_hdr) == POOL_HDR_SIZE, "pool header size");
_Static_assert(__builtin_offsetof(struct pool_hdr, checksum) ==
		       POOL_HDR_SIZE - 4,
	       "checksum is the last word");

/* the seal of a header copy: reserved1 and checksum, stored as one word */
#define POOL_HDR_SEAL_OFF (POOL_HDR_SIZE - 8)
#define POOL_HDR_SEAL_SIZE 8
_Static_assert(__builtin_offsetof(struct pool_hdr, reserved1) ==
		       POOL_HDR_SEAL_OFF,
	       "the seal is the last 8-byte word");

#endif
