/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * heap-script: the input format of fuzz-heap. An input is a sequence of
 * fixed 13-byte commands that patch a valid crashed heap image before it
 * is opened (trailing bytes are ignored, at most HEAP_SCRIPT_MAX_CMDS run):
 *   byte 0      op: HEAP_OP_* in the low 7 bits, HEAP_OP_RESEAL in bit 7
 *   byte 1      region (HEAP_RGN_*, modulo HEAP_RGN_COUNT)
 *   bytes 2..4  index within the region, little-endian (see HEAP_RGN_*)
 *   bytes 5..12 value, little-endian
 * RESEAL recomputes what guards the patched bytes afterwards: the heap
 * header checksum (header), or the epoch, tag and checksum of the patched
 * record for its index (logs), so a patch reaches the deeper checks.
 * Shared by the target (tests/fuzz/fuzz-heap.c) and the seed generator.
 */
#ifndef PMAD_FUZZ_HEAP_SCRIPT_H
#define PMAD_FUZZ_HEAP_SCRIPT_H

#include <stddef.h>
#include <stdint.h>

#define HEAP_CMD_SIZE 13
#define HEAP_SCRIPT_MAX_CMDS 64

enum heap_op {
	HEAP_OP_SET8, /* byte = value */
	HEAP_OP_SET64, /* u64 = value */
	HEAP_OP_XOR64, /* u64 ^= value */
	HEAP_OP_ADD64, /* u64 += value (a bump; negative wraps) */
	/* copy value bits 32..43 + 1 bytes from the location value bits
	 * 0..31 select (a region byte and a 24-bit index, as a target) */
	HEAP_OP_COPY,
	/*
	 * logs only: write a fresh valid record at the target's index:
	 *   value bits 0..2   type (pma_rec_type, 0 is EXT_LEN), plus 8
	 *                     if bit 45 is set (EXT_LFREE, EXT_ALLOC1 ...)
	 *   bits 3..34        payload: block offset - data area start, in
	 *                     64 B units (EXT_LEN: npages); EXT_ALLOC1
	 *                     ...: bits 3..23 the page in the data area,
	 *                     24..34 npages - 1
	 *   bits 35..42       alloc/free ops: dest is root slot n, 255: none
	 *                     slab_new: class (35..40), owner (41..44)
	 */
	HEAP_OP_REC,
	HEAP_OP_COUNT,
};
#define HEAP_OP_RESEAL 0x80

/*
 * Regions and what their 24-bit index means (out-of-range values wrap):
 *   HDR      byte in the 4 KiB heap header (root word, head_gen too)
 *   DESC     byte in the arena descriptors
 *   LOG      bits 0..3 byte in the record, 4..7 arena, 8..23 record
 *            index relative to the arena's head in the image
 *   PMAP     byte in the page map
 *   SLAB     bits 0..8 byte in the slab header + bitmap, 9..23 which
 *            slab of the image's page map
 *   SLABENT  bits 0..2 byte, 3..23 which slab: its page map entry
 *   EXTENT   bits 0..2 byte, 3..23 which extent: its page map entry
 *   ROOT     byte in the root object (the dest words)
 *   DATA     byte in the data area
 *   RAW      byte in the whole heap region
 *   SUM      byte in the page map summary (version 5); RESEAL gives the
 *            patched word its valid check (so it may hide entries)
 */
enum heap_rgn {
	HEAP_RGN_HDR,
	HEAP_RGN_DESC,
	HEAP_RGN_LOG,
	HEAP_RGN_PMAP,
	HEAP_RGN_SLAB,
	HEAP_RGN_SLABENT,
	HEAP_RGN_EXTENT,
	HEAP_RGN_ROOT,
	HEAP_RGN_DATA,
	HEAP_RGN_RAW,
	HEAP_RGN_SUM,
	HEAP_RGN_COUNT,
};

struct heap_cmd {
	unsigned op; /* HEAP_OP_*, already reduced modulo HEAP_OP_COUNT */
	int reseal;
	unsigned rgn; /* HEAP_RGN_*, reduced */
	uint32_t idx; /* 24 bits */
	uint64_t value;
};

static inline uint64_t heap_script_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

/* decode command i of an input of size bytes; 0, or -1 past the end */
static inline int heap_script_cmd(const uint8_t *data, size_t size, unsigned i,
				  struct heap_cmd *ret_cmd)
{
	const uint8_t *p = data + (size_t)i * HEAP_CMD_SIZE;

	if (i >= HEAP_SCRIPT_MAX_CMDS || (size_t)(i + 1) * HEAP_CMD_SIZE > size)
		return -1;
	ret_cmd->op = (p[0] & 0x7f) % HEAP_OP_COUNT;
	ret_cmd->reseal = !!(p[0] & HEAP_OP_RESEAL);
	ret_cmd->rgn = p[1] % HEAP_RGN_COUNT;
	ret_cmd->idx = (uint32_t)heap_script_le(p + 2, 3);
	ret_cmd->value = heap_script_le(p + 5, 8);
	return 0;
}

/* encode one command into 13 bytes (seed generator) */
static inline void heap_script_put(uint8_t *p, unsigned op, int reseal,
				   unsigned rgn, uint32_t idx, uint64_t value)
{
	unsigned i;

	p[0] = (uint8_t)(op | (reseal ? HEAP_OP_RESEAL : 0));
	p[1] = (uint8_t)rgn;
	for (i = 0; i < 3; i++)
		p[2 + i] = (uint8_t)(idx >> (8 * i));
	for (i = 0; i < 8; i++)
		p[5 + i] = (uint8_t)(value >> (8 * i));
}

/* the selector of a COPY source (value bits 0..31) */
static inline uint64_t heap_script_copy_src(unsigned rgn, uint32_t idx,
					    unsigned len)
{
	return (uint64_t)rgn | (uint64_t)(idx & 0xffffff) << 8 |
	       (uint64_t)((len - 1) & 0xfff) << 32;
}

/* the value of a REC command */
static inline uint64_t heap_script_rec(unsigned type, uint64_t payload,
				       unsigned extra)
{
	return (uint64_t)(type & 7) | (payload & 0xffffffffULL) << 3 |
	       (uint64_t)(extra & 0x3ff) << 35 |
	       (uint64_t)(type >> 3 & 1) << 45;
}
/* the payload of an EXT_ALLOC1 ... command */
#define HEAP_REC_EXT1(page, npages) ((page) | ((npages)-1ULL) << 21)
#define HEAP_REC_NO_DEST 255
#define HEAP_REC_SLAB(cls, owner) ((cls) | (owner) << 6)

#endif
