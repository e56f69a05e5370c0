/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc slabs: the size-class table, the interleaved PM bitmap mapping,
 * and the DRAM state of a slab. A slab's live bitmap is the user's view
 * (set at alloc, cleared atomically by whichever thread frees); avail is
 * what the owner arena may hand out and changes only under its lock.
 * The PM bitmap is written only by checkpoints (a copy of live) and
 * recovery (apply.c), never here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pmalloc/internal.h"

/*
 * 64 B steps to 1 KiB, then 4 steps per doubling, then 4..7 blocks/slab;
 * version 11 adds the 16-byte steps between 64 and 256 B, appended (a
 * class index is on media: slab headers, page map, SLAB_NEW), so the
 * first PMA_NCLASSES_V10 keep their indices in older heaps
 */
static const uint32_t class_sizes[PMA_NCLASSES] = {
	64,   128,  192,  256,	 320,	384,   448,	      512,  576,
	640,  704,  768,  832,	 896,	960,   1024,	      1152, 1280,
	1408, 1536, 1664, 1792,	 1920,	2048,  2304,	      2560, 2816,
	3072, 3328, 3584, 3840,	 4096,	4608,  5120,	      5632, 6144,
	7168, 8192, 9280, 10816, 12992, 13824, PMA_SMALL_MAX, 80,   96,
	112,  144,  160,  176,	 208,	224,   240,
};
_Static_assert(PMA_NCLASSES <= PMA_STATS_MAX_CLASSES, "stats hold classes");

/* version 11: the class of a size of 1..256 bytes, by (size - 1) / 16 */
const uint8_t pma_class_fine[16] = {
	0, 0, 0, 0, 43, 44, 45, 1, 46, 47, 48, 2, 49, 50, 51, 3,
};

unsigned pma_class_count(void)
{
	return PMA_NCLASSES;
}

unsigned pma_nclasses(uint32_t version)
{
	return version >= PMA_HEAP_VERSION_FINE ? PMA_NCLASSES :
						  PMA_NCLASSES_V10;
}

uint32_t pma_class_size(unsigned cls)
{
	return cls < PMA_NCLASSES ? class_sizes[cls] : 0;
}

unsigned pma_class_of_large(size_t size)
{
	unsigned lo = 16, hi = PMA_NCLASSES_V10 - 1;

	/* smallest class >= size */
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (class_sizes[mid] >= size)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

uint32_t pma_class_inv(unsigned cls)
{
	return (uint32_t)(((1ULL << 32) + class_sizes[cls] - 1) /
			  class_sizes[cls]);
}

uint32_t pma_class_nblocks(unsigned cls)
{
	return (uint32_t)((PMA_CHUNK - PMA_SLAB_HDR_SIZE) / class_sizes[cls]);
}

uint64_t *pma_slab_bit(void *slab_pm, uint32_t i, uint64_t *ret_mask)
{
	char *bitmap = (char *)slab_pm + PMA_SLAB_BITMAP_OFF;
	uint32_t line = i % PMA_NBANKS;
	uint32_t bit = i / PMA_NBANKS;

	*ret_mask = 1ULL << (bit % 64);
	return (uint64_t *)(bitmap + line * PMA_LINE) + bit / 64;
}

/* bits of DRAM word w (linear layout) that name blocks < nblocks */
static uint64_t block_mask(uint32_t nblocks, uint32_t w)
{
	if (nblocks <= 64 * w)
		return 0;
	if (nblocks - 64 * w >= 64)
		return ~0ULL;
	return (1ULL << (nblocks - 64 * w)) - 1;
}

/* bits of word k of PM bitmap line l that name blocks < nblocks */
static uint64_t line_mask(uint32_t nblocks, uint32_t l, uint32_t k)
{
	uint32_t nbits =
		nblocks > l ? (nblocks - l + PMA_NBANKS - 1) / PMA_NBANKS : 0;

	return block_mask(nbits, k);
}

void pma_slab_init(struct pma_slab *slab, uint64_t off, unsigned cls,
		   unsigned owner)
{
	uint32_t w;

	memset(slab, 0, sizeof(*slab));
	slab->off = off;
	slab->cls = (uint16_t)cls;
	slab->owner = (uint16_t)owner;
	slab->block_size = class_sizes[cls];
	slab->block_inv = pma_class_inv(cls);
	slab->nblocks = pma_class_nblocks(cls);
	slab->navail = slab->nblocks;
	slab->old_cls = PMA_CLS_NONE;
	for (w = 0; w < PMA_LIVE_WORDS; w++) {
		slab->avail[w] = block_mask(slab->nblocks, w);
		if (slab->avail[w])
			slab->avail_words |= 1U << w;
	}
}

struct pma_slab *pma_slab_new(uint64_t off, unsigned cls, unsigned owner)
{
	struct pma_slab *slab = pma_slab_alloc();

	if (slab)
		pma_slab_init(slab, off, cls, owner);
	return slab;
}

/* byte b spread to stride PMA_NBANKS: bit j moves to bit 6 j */
#define SP(b)                                                             \
	(((b)&1ULL) | (((b)&2ULL) << 5) | (((b)&4ULL) << 10) |            \
	 (((b)&8ULL) << 15) | (((b)&16ULL) << 20) | (((b)&32ULL) << 25) | \
	 (((b)&64ULL) << 30) | (((b)&128ULL) << 35))
#define SP4(b) SP(b), SP((b) + 1), SP((b) + 2), SP((b) + 3)
#define SP16(b) SP4(b), SP4((b) + 4), SP4((b) + 8), SP4((b) + 12)
#define SP64(b) SP16(b), SP16((b) + 16), SP16((b) + 32), SP16((b) + 48)
static const uint64_t spread6[256] = { SP64(0), SP64(64), SP64(128),
				       SP64(192) };
_Static_assert(PMA_NBANKS == 6, "spread6 is for 6 banks");

/* OR PM word w (64 bits of one line, first block base) into the linear
 * bitmap lin: bit j of w is block base + 6 j; one table entry per byte */
static void spread_word(uint64_t *lin, uint64_t w, uint32_t base)
{
	uint32_t m, pos, sh;
	uint64_t v;

	for (m = 0; m < 8; m++, w >>= 8) {
		if (!(w & 0xff))
			continue;
		v = spread6[w & 0xff];
		pos = base + m * 8 * PMA_NBANKS;
		sh = pos % 64;
		lin[pos / 64] |= v << sh;
		if (sh > 64 - 7 * PMA_NBANKS - 1)
			lin[pos / 64 + 1] |= v >> (64 - sh);
	}
}

void pma_slab_load(struct pma_slab *slab, const void *slab_pm)
{
	const uint64_t *bm =
		(const uint64_t *)((const char *)slab_pm + PMA_SLAB_BITMAP_OFF);
	uint64_t lin[PMA_SLAB_LIN_WORDS] = { 0 };
	uint32_t l, k, nlive = 0;
	uint64_t v;

	/* live is the PM bitmap (blocks past nblocks masked off); avail is
	 * its complement, spread to the linear layout */
	for (l = 0; l < PMA_NBANKS; l++)
		for (k = 0; k < PMA_SLAB_LINE_WORDS; k++) {
			v = bm[l * (PMA_LINE / 8) + k] &
			    line_mask(slab->nblocks, l, k);
			atomic_store_explicit(&slab->live[l][k], v,
					      memory_order_relaxed);
			nlive += (uint32_t)__builtin_popcountll(v);
		}
	if (nlive == slab->nblocks) {
		for (k = 0; k < PMA_LIVE_WORDS; k++)
			lin[k] = block_mask(slab->nblocks, k);
	} else if (nlive) {
		for (l = 0; l < PMA_NBANKS; l++)
			for (k = 0; k < PMA_SLAB_LINE_WORDS; k++)
				spread_word(lin,
					    atomic_load_explicit(
						    &slab->live[l][k],
						    memory_order_relaxed),
					    k * 64 * PMA_NBANKS + l);
	}
	slab->avail_words = 0;
	for (k = 0; k < PMA_LIVE_WORDS; k++) {
		slab->avail[k] = block_mask(slab->nblocks, k) & ~lin[k];
		if (slab->avail[k])
			slab->avail_words |= 1U << k;
	}
	slab->navail = slab->nblocks - nlive;
}
