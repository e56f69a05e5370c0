/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fsck of slab morphing (layout version 9, doc/morphing.md): the block
 * ops of a mixed slab's old blocks in the logs' windows, and each mixed
 * slab after them (its old class, its old bitmap against its checks, no
 * live block over a live old block). The SLAB_MORPH record itself is in
 * fsck.c (op_morph). A slab whose header names an old class but whose old
 * bitmap is empty is a plain slab (the library keeps morph_from while a
 * replay may need it): no finding.
 */
#include <stdint.h>

#include "pmalloc/fsck.h"

/* does rel start a block of the old class of s? its index in *ret_i */
static int old_block(const struct pma_fsck_slab *s, uint64_t rel,
		     uint32_t *ret_i)
{
	unsigned old = s->hdr.morph_from - 1u;
	uint32_t bs;

	if (old >= PMA_NCLASSES || rel < PMA_SLAB_HDR_SIZE)
		return 0;
	bs = pma_class_size(old);
	if ((rel - PMA_SLAB_HDR_SIZE) % bs ||
	    (rel - PMA_SLAB_HDR_SIZE) / bs >= pma_class_nblocks(old))
		return 0;
	*ret_i = (uint32_t)((rel - PMA_SLAB_HDR_SIZE) / bs);
	return 1;
}

int pma_fsck_old_live(const struct pma_fsck_slab *s, uint64_t rel)
{
	uint32_t i, bit;

	if (!s->hdr.morph_from || !old_block(s, rel, &i))
		return 0;
	bit = i / PMA_NBANKS;
	return (int)((s->old_cur[i % PMA_NBANKS][bit / 64] >> (bit % 64)) & 1);
}

/*
 * As the library's replay (apply.c): a free at a live old block clears
 * its old bit (1: done). A free at an old block whose bit is clear is
 * either the free of the block of the current class that starts there or
 * an old block's free met again over a later state: like the library,
 * the current block's bit is cleared (2: an op of the current class
 * whose bit's state before the window is unsure; if that bit is clear
 * already, nothing changes, 1), and the old bit's state before the
 * window is unsure too (pma_check_unsure). An
 * allocation, or a free at no old block, is the current class's (0), but
 * for an old class's op before the SLAB_MORPH replayed over a header a
 * checkpoint wrote (at an old block that is no block of the current
 * class: nothing, 1).
 */
int pma_fsck_old_op(struct pma_fsck_slab *s, uint64_t rel, int on)
{
	uint64_t *w, mask, cmask;
	uint32_t i, j, cw;
	int cur;

	if (!old_block(s, rel, &i))
		return 0;
	w = &s->old_cur[i % PMA_NBANKS][i / PMA_NBANKS / 64];
	mask = 1ULL << (i / PMA_NBANKS % 64);
	cur = rel >= PMA_SLAB_HDR_SIZE && s->hdr.block_size &&
	      (rel - PMA_SLAB_HDR_SIZE) % s->hdr.block_size == 0 &&
	      (rel - PMA_SLAB_HDR_SIZE) / s->hdr.block_size < s->hdr.nblocks;
	if (!on && (*w & mask)) {
		s->old_freed[i % PMA_NBANKS][i / PMA_NBANKS / 64] |= mask;
		*w &= ~mask;
		return 1;
	}
	if (!on) {
		s->old_unsure[i % PMA_NBANKS][i / PMA_NBANKS / 64] |= mask;
		if (!cur)
			return 1;
		j = (uint32_t)((rel - PMA_SLAB_HDR_SIZE) / s->hdr.block_size);
		cw = j / PMA_NBANKS / 64;
		cmask = 1ULL << (j / PMA_NBANKS % 64);
		if (s->cur[j % PMA_NBANKS][cw] & cmask)
			return 2; /* the current block's free */
		/* free either way: the library's clear changes nothing */
		if (!(s->touched[j % PMA_NBANKS][cw] & cmask)) {
			s->touched[j % PMA_NBANKS][cw] |= cmask;
			s->unsure[j % PMA_NBANKS][cw] |= cmask;
		}
		return 1;
	}
	return !cur;
}

/* the old bitmap's banks: each as on media against its check, or (a
 * bank the window changes, torn by a crash) its state before or after
 * the window */
static int old_banks_fsck(struct pma_fsck *f, uint64_t off,
			  const struct pma_fsck_slab *s)
{
	uint64_t boff, pre[PMA_SLAB_BANK_WORDS];
	unsigned l, w;

	for (l = 0; f->checked && l < PMA_NBANKS; l++) {
		for (w = 0; w < PMA_SLAB_BANK_WORDS; w++)
			pre[w] = s->old_pm[l][w] | s->old_freed[l][w];
		if (s->old_check[l] == pma_check_old(s->old_pm[l], off, l) ||
		    s->old_check[l] == pma_check_old(s->old_cur[l], off, l) ||
		    pma_check_unsure(s->old_check[l], pre, s->old_unsure[l],
				     off, l, 1))
			continue;
		boff = off + PMA_SLAB_BITMAP_OFF + l * PMA_LINE;
		return pma_fsck_report(
			f, "slab-old-bitmap-check", POOL_FSCK_ERROR, boff,
			"slab at 0x%llx: old bitmap bank %u at 0x%llx fails "
			"its check",
			(unsigned long long)off, l, (unsigned long long)boff);
	}
	return 0;
}

/* no live block of the current class over a live old block, no old bit
 * past the old class's last block */
static int overlap_fsck(struct pma_fsck *f, uint64_t off,
			const struct pma_fsck_slab *s)
{
	unsigned old = s->hdr.morph_from - 1u;
	uint32_t obs = pma_class_size(old), onb = pma_class_nblocks(old);
	uint32_t i, j, last, bit;
	uint64_t lo;

	for (i = 0; i < PMA_NBANKS * 64 * PMA_SLAB_BANK_WORDS; i++) {
		bit = i / PMA_NBANKS;
		if (!((s->old_cur[i % PMA_NBANKS][bit / 64] >> (bit % 64)) & 1))
			continue;
		if (i >= onb)
			return pma_fsck_report(
				f, "slab-morph-overlap", POOL_FSCK_ERROR, off,
				"slab at 0x%llx: old bitmap has block %u set, "
				"past the %u blocks of class %u",
				(unsigned long long)off, i, onb, old);
		lo = (uint64_t)i * obs;
		last = (uint32_t)((lo + obs - 1) / s->hdr.block_size);
		for (j = (uint32_t)(lo / s->hdr.block_size);
		     j <= last && j < s->hdr.nblocks; j++)
			if ((s->cur[j % PMA_NBANKS][j / PMA_NBANKS / 64] >>
			     (j / PMA_NBANKS % 64)) &
			    1)
				return pma_fsck_report(
					f, "slab-morph-overlap",
					POOL_FSCK_ERROR, off,
					"slab at 0x%llx: live block %u of "
					"class %u overlaps live old block %u "
					"of class %u (handed out twice)",
					(unsigned long long)off, j, s->hdr.cls,
					i, old);
	}
	return 0;
}

int pma_fsck_morph_slab(struct pma_fsck *f, uint64_t off,
			struct pma_fsck_slab *s)
{
	unsigned old = s->hdr.morph_from - 1u;
	int rc;

	if (old >= PMA_NCLASSES || old == s->hdr.cls)
		return pma_fsck_report(f, "slab-morph-class", POOL_FSCK_ERROR,
				       off,
				       "slab header at 0x%llx (class %u) "
				       "names old class %u, which no morph "
				       "makes",
				       (unsigned long long)off, s->hdr.cls,
				       old);
	rc = old_banks_fsck(f, off, s);
	if (rc == 0)
		rc = overlap_fsck(f, off, s);
	return rc;
}
