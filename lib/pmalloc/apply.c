/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc apply: redo one logged op on the PM page map and slab bitmaps
 * (used by checkpoints and recovery), collecting the dirty cache lines so
 * each is flushed once. Every op sets its target state absolutely (set a
 * bit, clear a bit, write an entry), so re-applying a log range after a
 * crash in the middle of a checkpoint gives the same result. Also the
 * rebuild of the DRAM state from the PM page map at open (slabs are
 * loaded later, lazy.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pmalloc/internal.h"
#include "util/errmsg.h"

#define DIRTY_SET_MIN 64

static size_t dirty_hash(uintptr_t a, size_t mask)
{
	return (size_t)(((uint64_t)a >> 6) * 0x9e3779b97f4a7c15ULL >> 20) &
	       mask;
}

/* insert a into the set; 1 if new, 0 if already there */
static int dirty_set_insert(uintptr_t *set, size_t mask, uintptr_t a)
{
	size_t h = dirty_hash(a, mask);

	while (set[h]) {
		if (set[h] == a)
			return 0;
		h = (h + 1) & mask;
	}
	set[h] = a;
	return 1;
}

/* keep the set at most half full (rebuilt from the line list) */
static int dirty_set_grow(struct pma_dirty *dirty)
{
	size_t n = dirty->set_mask ? (dirty->set_mask + 1) * 2 : DIRTY_SET_MIN;
	uintptr_t *set;
	size_t i;

	if (dirty->set_mask && dirty->count + 1 <= (dirty->set_mask + 1) / 2)
		return 0;
	set = calloc(n, sizeof(*set));
	if (!set)
		return -ENOMEM;
	for (i = 0; i < dirty->count; i++)
		dirty_set_insert(set, n - 1, dirty->lines[i]);
	free(dirty->set);
	dirty->set = set;
	dirty->set_mask = n - 1;
	return 0;
}

static int dirty_line_add(struct pma_dirty *dirty, uintptr_t a)
{
	uintptr_t *v, *r = &dirty->recent[(a / PMA_LINE) % 16];

	if (*r == a)
		return 0;
	if (dirty_set_grow(dirty) < 0)
		return -ENOMEM;
	if (dirty->count == dirty->alloc) {
		v = pma_grow(dirty->lines, &dirty->alloc, sizeof(*v), 256);
		if (!v)
			return -ENOMEM;
		dirty->lines = v;
	}
	if (dirty_set_insert(dirty->set, dirty->set_mask, a))
		dirty->lines[dirty->count++] = a;
	*r = a;
	return 0;
}

/* remember the lines of [addr, addr + len) once each (no sort needed at
 * flush time: flush order does not matter, one fence follows) */
int pma_dirty_add(struct pma_dirty *dirty, const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr & ~(uintptr_t)(PMA_LINE - 1);
	uintptr_t end = (uintptr_t)addr + len;
	int rc;

	if (dirty->off)
		return 0;
	for (; a < end; a += PMA_LINE) {
		rc = dirty_line_add(dirty, a);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* flush every distinct dirty line once (no fence) */
void pma_dirty_flush(struct pma_heap *heap, struct pma_dirty *dirty)
{
	size_t i;

	for (i = 0; i < dirty->count; i++) {
		/* the set keeps line addresses as integers */
		/* NOLINTNEXTLINE(performance-no-int-to-ptr) */
		pm_flush(heap->map, (void *)dirty->lines[i], PMA_LINE);
	}
	dirty->count = 0;
	memset(dirty->recent, 0, sizeof(dirty->recent));
	if (dirty->set)
		memset(dirty->set, 0,
		       (dirty->set_mask + 1) * sizeof(*dirty->set));
}

void pma_dirty_release(struct pma_dirty *dirty)
{
	free(dirty->lines);
	free(dirty->set);
	memset(dirty, 0, sizeof(*dirty));
}

int pma_op_is_phase2(const struct pma_op *op)
{
	return op->type == PMA_REC_RFREE || op->type == PMA_REC_EXT_FREE;
}

/* page index of a byte offset that must be in the data area */
static int op_page(struct pma_heap *heap, uint64_t off, uint64_t *ret_page)
{
	*ret_page =
		0; /* XXX: ret_ set on failure only to calm -Wmaybe-uninit */
	if (off < heap->data_base ||
	    pma_page_of(heap, off) >= heap->geom.npages)
		return util_errmsg_set(EIO,
				       "log names offset 0x%llx outside "
				       "the heap data area",
				       (unsigned long long)off);
	*ret_page = pma_page_of(heap, off);
	return 0;
}

static int pmap_write(struct pma_heap *heap, uint64_t page, uint64_t entry,
		      struct pma_dirty *dirty)
{
	uint64_t *e = &heap->pmap_pm[page];
	int rc;

	if (heap->shadow && pma_pending_push(&heap->shadow->written, page) < 0)
		return util_errmsg_set(ENOMEM, "out of memory");
	/* the group's bit is flushed with the entry (before the heads
	 * move); a dry run's sink has no summary */
	if (entry && !heap->shadow) {
		rc = pma_sum_mark(heap, page, dirty);
		if (rc < 0)
			return util_errmsg_set(ENOMEM, "out of memory");
	}
	if (heap->checked)
		entry = pma_check_pmap(entry, page);
	__atomic_store_n(e, entry, __ATOMIC_RELAXED);
	return pma_dirty_add(dirty, e, sizeof(*e));
}

/* the first page of the chunk a SLAB_NEW / SLAB_FREE names: op->off must
 * be exactly a chunk start in the data area, and bad must be 0; -EIO
 * naming the record otherwise */
static int slab_op_page(struct pma_heap *heap, const struct pma_op *op, int bad,
			uint64_t *ret_page)
{
	int rc = op_page(heap, op->off, ret_page);

	if (rc < 0)
		return rc;
	if (bad || op->off != pma_page_off(heap, *ret_page) ||
	    *ret_page % PMA_CHUNK_PAGES ||
	    *ret_page + PMA_CHUNK_PAGES > heap->geom.npages)
		return util_errmsg_set(EIO, "bad %s record for 0x%llx",
				       pma_booklog_type_name(op->type),
				       (unsigned long long)op->off);
	return 0;
}

/* a slab header op->off rewrote for class op->cls of arena op->owner
 * (SLAB_NEW, SLAB_MORPH): its bitmap banks sealed, header and bitmap
 * dirty, its page map entry written */
static int slab_hdr_commit(struct pma_heap *heap, const struct pma_op *op,
			   struct pma_slab_hdr *sh, uint64_t page,
			   struct pma_dirty *dirty)
{
	unsigned l;
	int rc;

	if (heap->checked) {
		for (l = 0; l < PMA_NBANKS; l++)
			pma_check_bank_seal(sh, op->off, l);
		if (heap->banks && pma_banks_fresh(heap, sh, op->off) < 0)
			return -ENOMEM;
	}
	rc = pma_dirty_add(dirty, sh,
			   PMA_SLAB_BITMAP_OFF + PMA_SLAB_BITMAP_SIZE);
	if (rc < 0)
		return rc;
	return pmap_write(heap, page, pma_pmap_make_slab(op->cls, op->owner),
			  dirty);
}

static int apply_slab_new(struct pma_heap *heap, const struct pma_op *op,
			  struct pma_dirty *dirty)
{
	struct pma_slab_hdr *sh;
	uint64_t page;
	int rc;

	/* the slab header is written at op->off */
	rc = slab_op_page(heap, op,
			  op->cls >= heap->nclasses ||
				  op->owner >= heap->geom.narenas,
			  &page);
	if (rc < 0)
		return rc;
	sh = pma_slab_meta(heap, op->off);
	if (!sh)
		return util_errmsg_set(ENOMEM, "out of memory");
	memset(sh, 0, PMA_SLAB_HDR_SIZE);
	sh->magic = PMA_SLAB_MAGIC;
	sh->cls = (uint16_t)op->cls;
	sh->owner = (uint16_t)op->owner;
	sh->block_size = pma_class_size(op->cls);
	sh->nblocks = pma_class_nblocks(op->cls);
	return slab_hdr_commit(heap, op, sh, page, dirty);
}

/* a slab goes back to the free pages: its entry cleared. The header and
 * bitmap stay as they are (a replay of this window may still apply
 * block ops of the slab before this record) */
static int apply_slab_free(struct pma_heap *heap, const struct pma_op *op,
			   struct pma_dirty *dirty)
{
	struct pma_slab_hdr *sh;
	uint64_t page;
	int rc;

	rc = slab_op_page(heap, op, 0, &page);
	if (rc < 0)
		return rc;
	sh = pma_slab_meta(heap, op->off);
	if (!sh)
		return util_errmsg_set(ENOMEM, "out of memory");
	if (sh->magic != PMA_SLAB_MAGIC || sh->cls != op->cls ||
	    sh->owner != op->owner)
		return util_errmsg_set(EIO,
				       "slab_free record for 0x%llx names "
				       "no slab of class %u, arena %u",
				       (unsigned long long)op->off, op->cls,
				       op->owner);
	return pmap_write(heap, page, 0, dirty);
}

/* the index of the block at rel bytes into the slab with header sh; -1
 * if sh is not a slab header that matches its size class (its block size
 * and count decide where the bit is: never trust them alone) or rel is
 * not the start of one of its blocks */
static int64_t slab_block_of(const struct pma_slab_hdr *sh, uint64_t rel)
{
	if (!sh || sh->magic != PMA_SLAB_MAGIC || sh->cls >= PMA_NCLASSES ||
	    sh->block_size != pma_class_size(sh->cls) ||
	    sh->nblocks != pma_class_nblocks(sh->cls) ||
	    rel < PMA_SLAB_HDR_SIZE ||
	    (rel - PMA_SLAB_HDR_SIZE) % sh->block_size ||
	    (rel - PMA_SLAB_HDR_SIZE) / sh->block_size >= sh->nblocks)
		return -1;
	return (int64_t)((rel - PMA_SLAB_HDR_SIZE) / sh->block_size);
}

/* version 9: the old bitmap word and mask of the live old block at rel
 * of mixed slab sh, or NULL */
static uint64_t *old_bit_of(struct pma_slab_hdr *sh, uint64_t rel,
			    uint64_t *ret_mask)
{
	unsigned old = sh->morph_from - 1u;
	uint64_t *word;
	uint32_t i, bs;

	if (!sh->morph_from || old >= PMA_NCLASSES || rel < PMA_SLAB_HDR_SIZE)
		return NULL;
	bs = pma_class_size(old);
	if ((rel - PMA_SLAB_HDR_SIZE) % bs ||
	    (rel - PMA_SLAB_HDR_SIZE) / bs >= pma_class_nblocks(old))
		return NULL;
	i = (uint32_t)((rel - PMA_SLAB_HDR_SIZE) / bs);
	word = pma_slab_bit(sh, i, ret_mask) + PMA_SLAB_OLD_WORD;
	return (*word & *ret_mask) ? word : NULL;
}

/* version 9: does rel start a block of sh's old class (live or not)? */
static int old_block_at(const struct pma_slab_hdr *sh, uint64_t rel)
{
	unsigned old = sh->morph_from - 1u;
	uint32_t bs;

	if (old >= PMA_NCLASSES || rel < PMA_SLAB_HDR_SIZE)
		return 0;
	bs = pma_class_size(old);
	return (rel - PMA_SLAB_HDR_SIZE) % bs == 0 &&
	       (rel - PMA_SLAB_HDR_SIZE) / bs < pma_class_nblocks(old);
}

/* version 9: is sh a header a checkpoint tore while writing a morph (its
 * class, geometry and old class from before and after)? A replay meets
 * it only before the slab's SLAB_MORPH, which rewrites it */
static int hdr_torn(const struct pma_heap *heap, const struct pma_slab_hdr *sh)
{
	return heap->geom.version >= PMA_HEAP_VERSION_MORPH && sh &&
	       sh->magic == PMA_SLAB_MAGIC && sh->cls < PMA_NCLASSES &&
	       slab_block_of(sh, PMA_SLAB_HDR_SIZE) < 0;
}

/* version 9: a free of an old block of a mixed slab: its old bit goes.
 * morph_from stays, also when the last one went: a replay may still
 * meet frees of old blocks whose bits a checkpoint cleared (a header
 * with an empty old bitmap is a plain slab; the owner's checkpoint
 * clears morph_from once no mixed op is in its window, recovery.c).
 * rel starting an old block whose bit is clear already (replayed over a
 * state a checkpoint or a crashed recovery wrote) is cleared again all
 * the same, so that the bank's check is judged against the state before
 * the op and resealed (banks.c). 1 if the old block was live, 2 if its
 * bit was clear (the op may be one of a block of the current class), 0
 * at no old block; errors in *ret_rc */
static int apply_old_free(struct pma_heap *heap, struct pma_slab_hdr *sh,
			  uint64_t slab_off, uint64_t rel,
			  struct pma_dirty *dirty, int *ret_rc)
{
	uint64_t mask, *word, was;

	*ret_rc = 0;
	if (!old_block_at(sh, rel))
		return 0;
	word = pma_slab_bit(sh,
			    (uint32_t)((rel - PMA_SLAB_HDR_SIZE) /
				       pma_class_size(sh->morph_from - 1u)),
			    &mask) +
	       PMA_SLAB_OLD_WORD;
	was = *word & mask;
	*word &= ~mask;
	if (heap->banks) {
		/* clear already: an old free over a later state, or the free
		 * of the current class's block at rel (banks.c) */
		*ret_rc = pma_banks_touch(heap, sh, slab_off, word, mask,
					  was ? 1 : PMA_BANKS_UNSURE);
	} else if (heap->checked) {
		uint64_t rel_w = (uint64_t)((char *)word - (char *)sh) -
				 PMA_SLAB_BITMAP_OFF;
		uint64_t *line = word - rel_w % PMA_LINE / 8;
		unsigned bank = (unsigned)(rel_w / PMA_LINE);

		__atomic_store_n(&line[PMA_SLAB_OLD_CHECK],
				 pma_check_old(line + PMA_SLAB_OLD_WORD,
					       slab_off, bank),
				 __ATOMIC_RELAXED);
	}
	if (*ret_rc == 0)
		*ret_rc = pma_dirty_add(dirty, word, sizeof(*word));
	return was ? 1 : 2;
}

/* an op of a slab whose header is torn (hdr_torn) is skipped: its
 * SLAB_MORPH, later in the window, must rewrite the header; noted for
 * pma_apply_torn_check */
static int torn_note(struct pma_dirty *dirty, uint64_t slab_off)
{
	unsigned i;

	for (i = 0; i < dirty->ntorn; i++)
		if (dirty->torn[i] == slab_off) {
			/* an op after the SLAB_MORPH that rewrote it */
			if (dirty->torn_ok & 1U << i)
				return util_errmsg_set(
					EIO,
					"log names a block of slab 0x%llx "
					"that is no block of its class",
					(unsigned long long)slab_off);
			return 0;
		}
	if (dirty->ntorn == PMA_TORN_MAX)
		return util_errmsg_set(EIO,
				       "slab header 0x%llx: more than %u "
				       "slab headers are not valid (damaged)",
				       (unsigned long long)slab_off,
				       PMA_TORN_MAX);
	dirty->torn[dirty->ntorn++] = slab_off;
	return 0;
}

int pma_apply_torn_check(struct pma_heap *heap, const struct pma_dirty *dirty)
{
	const struct pma_slab_hdr *sh;
	unsigned i;

	for (i = 0; i < dirty->ntorn; i++) {
		sh = pma_slab_meta(heap, dirty->torn[i]);
		if (hdr_torn(heap, sh) || !(dirty->torn_ok & 1U << i))
			return util_errmsg_set(
				EIO,
				"log names a block of slab 0x%llx, not a "
				"block of a valid slab (its header is damaged "
				"and no slab_morph of the log rewrites it)",
				(unsigned long long)dirty->torn[i]);
	}
	return 0;
}

/* set (on) or clear the PM bit of the block at op->off */
static int apply_block(struct pma_heap *heap, const struct pma_op *op, int on,
		       struct pma_dirty *dirty)
{
	uint64_t page, slab_off, mask, *word;
	struct pma_slab_hdr *sh;
	int64_t idx;
	int rc, old, unsure = 0;

	rc = op_page(heap, op->off, &page);
	if (rc < 0)
		return rc;
	slab_off = pma_page_off(heap, page - page % PMA_CHUNK_PAGES);
	sh = pma_slab_meta(heap, slab_off);
	if (sh && sh->morph_from && !on && !hdr_torn(heap, sh)) {
		old = apply_old_free(heap, sh, slab_off, op->off - slab_off,
				     dirty, &rc);
		if (old == 1 || rc < 0)
			return rc;
		/* at an old block whose bit was clear (2): the free of the
		 * block of the current class there, or an old free met
		 * again over a later state (its bit in the live bitmap is
		 * then clear, or set by a later ALLOC in the window): the
		 * bit is cleared either way, its state before the window
		 * is unsure (banks.c) */
		unsure = old == 2;
	}
	idx = slab_block_of(sh, op->off - slab_off);
	/* version 9: an op of a slab before its SLAB_MORPH, replayed over
	 * the header a checkpoint wrote (torn, or mixed: the block is an
	 * old one) changes nothing SLAB_MORPH keeps */
	if (idx < 0 && hdr_torn(heap, sh))
		return torn_note(dirty, slab_off);
	if (idx < 0 && sh && sh->morph_from &&
	    old_block_at(sh, op->off - slab_off))
		return 0;
	/* version 9: an op of the old class before a SLAB_MORPH later in
	 * the window, over a header a checkpoint (or a recovery) wrote and
	 * tore between its class and morph_from, which are in different
	 * words: the SLAB_MORPH must come (pma_apply_torn_check) */
	if (idx < 0 && sh && sh->magic == PMA_SLAB_MAGIC &&
	    heap->geom.version >= PMA_HEAP_VERSION_MORPH)
		return torn_note(dirty, slab_off);
	if (idx < 0)
		return util_errmsg_set(EIO,
				       "log names 0x%llx, not a block of a "
				       "valid slab",
				       (unsigned long long)op->off);
	word = pma_slab_bit(sh, (uint32_t)idx, &mask);
	if (on)
		*word |= mask;
	else
		*word &= ~mask;
	if (heap->banks) /* checked and resealed at the replay's end */
		rc = pma_banks_touch(heap, sh, slab_off, word, mask,
				     unsure ? PMA_BANKS_UNSURE : !on);
	else if (heap->checked)
		pma_check_bank_seal_word(sh, slab_off, word);
	if (rc < 0)
		return rc;
	return pma_dirty_add(dirty, word, sizeof(*word));
}

/*
 * Version 9: the owner morphed a slab of class old_cls into one of class
 * cls (morph.c). The old bitmap is on media already (written before the
 * record, never derived here); the header gets the new class, the live
 * bitmap starts empty (the ops after the record set it again), the page
 * map entry the new class; morph_from is set even if the old bitmap is
 * empty by now (a checkpoint wrote a later state: the frees of old
 * blocks after the record are replayed next and must find the old
 * class). Applied again over any state a checkpoint left, it gives the
 * same result.
 */
static int apply_slab_morph(struct pma_heap *heap, const struct pma_op *op,
			    struct pma_dirty *dirty)
{
	struct pma_slab_hdr *sh;
	uint64_t page, *line;
	unsigned l, k;
	int rc;

	if (heap->geom.version < PMA_HEAP_VERSION_MORPH)
		return util_errmsg_set(EIO,
				       "slab_morph record in a version %u heap",
				       heap->geom.version);
	rc = slab_op_page(heap, op,
			  op->cls >= heap->nclasses ||
				  op->old_cls >= heap->nclasses ||
				  op->cls == op->old_cls ||
				  op->owner >= heap->geom.narenas,
			  &page);
	if (rc < 0)
		return rc;
	sh = pma_slab_meta(heap, op->off);
	if (!sh)
		return util_errmsg_set(ENOMEM, "out of memory");
	if (sh->magic != PMA_SLAB_MAGIC || sh->owner != op->owner ||
	    (sh->cls != op->old_cls && sh->cls != op->cls))
		return util_errmsg_set(EIO,
				       "slab_morph record for 0x%llx names "
				       "no slab of class %u, arena %u",
				       (unsigned long long)op->off, op->old_cls,
				       op->owner);
	sh->cls = (uint16_t)op->cls;
	sh->block_size = pma_class_size(op->cls);
	sh->nblocks = pma_class_nblocks(op->cls);
	sh->morph_from = (uint16_t)(op->old_cls + 1);
	for (l = 0; l < dirty->ntorn; l++)
		if (dirty->torn[l] == op->off)
			dirty->torn_ok |= 1U << l;
	line = (uint64_t *)(void *)((char *)sh + PMA_SLAB_BITMAP_OFF);
	for (l = 0; l < PMA_NBANKS; l++)
		for (k = 0; k < PMA_SLAB_LINE_WORDS; k++)
			line[l * (PMA_LINE / 8) + k] = 0;
	return slab_hdr_commit(heap, op, sh, page, dirty);
}

static int apply_extent(struct pma_heap *heap, const struct pma_op *op, int on,
			struct pma_dirty *dirty)
{
	uint64_t page;
	int rc;

	rc = op_page(heap, op->off, &page);
	if (rc < 0)
		return rc;
	if (op->off % PMA_PAGE || page + op->npages > heap->geom.npages)
		return util_errmsg_set(EIO, "bad extent record 0x%llx+%llu",
				       (unsigned long long)op->off,
				       (unsigned long long)op->npages);
	return pmap_write(heap, page,
			  on ? pma_pmap_make(PMA_PMAP_EXTENT, op->npages) : 0,
			  dirty);
}

/* pma_apply_extent_trusted's case with lines to record */
int pma_apply_extent_trusted_call(struct pma_heap *heap, uint64_t off,
				  uint64_t npages, int on,
				  struct pma_dirty *dirty)
{
	pma_assert(!heap->shadow && off % PMA_PAGE == 0 &&
		   pma_page_of(heap, off) + npages <= heap->geom.npages);
	return pmap_write(heap, pma_page_of(heap, off),
			  on ? pma_pmap_make(PMA_PMAP_EXTENT, npages) : 0,
			  dirty);
}

/* is byte offset b the start of a live slab block or extent in PM? */
int pma_pm_live_at(struct pma_heap *heap, uint64_t b)
{
	uint64_t page, chunk, mask;
	struct pma_slab_hdr *sh;
	int64_t idx;

	if (b < heap->data_base ||
	    (page = pma_page_of(heap, b)) >= heap->geom.npages)
		return 0;
	if (b % PMA_PAGE == 0 &&
	    pma_pmap_kind(pma_pmap_now(heap, page)) == PMA_PMAP_EXTENT)
		return 1;
	chunk = page - page % PMA_CHUNK_PAGES;
	if (pma_pmap_kind(pma_pmap_now(heap, chunk)) != PMA_PMAP_SLAB)
		return 0;
	sh = pma_slab_meta(heap, pma_page_off(heap, chunk));
	if (sh && sh->morph_from &&
	    old_bit_of(sh, b - pma_page_off(heap, chunk), &mask))
		return 1;
	idx = slab_block_of(sh, b - pma_page_off(heap, chunk));
	if (idx < 0)
		return 0;
	return (*pma_slab_bit(sh, (uint32_t)idx, &mask) & mask) != 0;
}

int pma_pm_is_live(struct pma_heap *heap, const struct pma_op *op)
{
	uint64_t page;

	if (op->type != PMA_REC_EXT_ALLOC)
		return pma_pm_live_at(heap, op->off);
	if (op->off < heap->data_base ||
	    (page = pma_page_of(heap, op->off)) >= heap->geom.npages)
		return 0;
	return (pma_pmap_now(heap, page) & ~PMA_PMAP_CHECK_MASK) ==
	       pma_pmap_make(PMA_PMAP_EXTENT, op->npages);
}

/* an XFREE names a block in the data area of another part's heap */
static int xfree_check(const struct pma_heap *heap, const struct pma_op *op)
{
	const struct pma_heap *o;

	if (heap->geom.version < PMA_HEAP_VERSION_XFREE)
		return util_errmsg_set(EIO, "xfree record in a version %u heap",
				       heap->geom.version);
	o = pma_heap_route(heap, pool_off_make(op->owner, op->off));
	if (!o || o->part == heap->part || op->off < o->data_base ||
	    op->off - o->data_base >= o->data_len)
		return util_errmsg_set(EIO,
				       "xfree record names 0x%llx of part "
				       "%u, not in another part's heap",
				       (unsigned long long)op->off, op->owner);
	return 0;
}

int pma_apply_op(struct pma_heap *heap, const struct pma_op *op,
		 struct pma_dirty *dirty)
{
	switch (op->type) {
	case PMA_REC_ALLOC:
		return apply_block(heap, op, 1, dirty);
	case PMA_REC_FREE:
	case PMA_REC_RFREE:
		return apply_block(heap, op, 0, dirty);
	case PMA_REC_SYNC_FREE:
		if (heap->geom.version < PMA_HEAP_VERSION_LOCAL)
			return util_errmsg_set(EIO,
					       "sync_free record in a version "
					       "%u heap",
					       heap->geom.version);
		return apply_block(heap, op, 0, dirty);
	case PMA_REC_XFREE:
		/* another part's block: applied to that part after every
		 * part's replay (recovery.c, xfree_recover) */
		return xfree_check(heap, op);
	case PMA_REC_SLAB_NEW:
		return apply_slab_new(heap, op, dirty);
	case PMA_REC_SLAB_FREE:
		return apply_slab_free(heap, op, dirty);
	case PMA_REC_SLAB_MORPH:
		return apply_slab_morph(heap, op, dirty);
	case PMA_REC_EXT_ALLOC:
		return apply_extent(heap, op, 1, dirty);
	case PMA_REC_EXT_FREE:
	case PMA_REC_EXT_LFREE:
		return apply_extent(heap, op, 0, dirty);
	default:
		return util_errmsg_set(EIO, "unexpected log record type %u",
				       op->type);
	}
}

/* first page in [page, end) whose entry is not 0 (end if none): free
 * runs are skipped 8 entries (one line) per test */
static uint64_t skip_free_range(const uint64_t *pmap, uint64_t page,
				uint64_t end)
{
	const uint64_t *p;

	while (page < end && (page % 8 || page + 8 > end)) {
		if (pmap[page])
			return page;
		page++;
	}
	for (; page + 8 <= end; page += 8) {
		p = pmap + page;
		if (p[0] | p[1] | p[2] | p[3] | p[4] | p[5] | p[6] | p[7])
			break;
	}
	while (page < end && !pmap[page])
		page++;
	return page;
}

/* first page at or after page whose entry in pmap (the PM page map, or
 * a copy of it) is not 0 (a non-zero free entry is corrupt), npages if
 * none: only the groups the summary marks are read */
static uint64_t skip_free(const struct pma_heap *heap, const uint64_t *pmap,
			  uint64_t page)
{
	uint64_t npages = heap->geom.npages, end, p;

	while ((page = pma_sum_next(heap, page)) < npages) {
		end = pma_sum_group_end(heap, page);
		p = skip_free_range(pmap, page, end);
		if (p < end)
			return p;
		page = end;
	}
	return npages;
}

/* is e a valid entry for page? A slab's class and owner must exist; a
 * version 7 entry carries its check, an older one has 0 there */
static int entry_ok(struct pma_heap *heap, uint64_t page, uint64_t e)
{
	uint64_t n = pma_pmap_npages(e);

	if (heap->checked ? pma_check_pmap(e, page) != e :
			    (e & PMA_PMAP_CHECK_MASK) != 0)
		return 0;
	if (pma_pmap_kind(e) == PMA_PMAP_SLAB)
		return n == PMA_CHUNK_PAGES && page % PMA_CHUNK_PAGES == 0 &&
		       page + n <= heap->geom.npages &&
		       pma_pmap_cls(e) < heap->nclasses &&
		       pma_pmap_owner(e) < heap->geom.narenas;
	return pma_pmap_kind(e) == PMA_PMAP_EXTENT && n &&
	       page + n <= heap->geom.npages && pma_pmap_cls(e) == 0 &&
	       pma_pmap_owner(e) == 0;
}

static int entry_corrupt(uint64_t page, uint64_t e)
{
	return util_errmsg_set(EIO, "corrupt page map entry %llu: 0x%llx",
			       (unsigned long long)page, (unsigned long long)e);
}

/* every entry that is not free, also those inside an extent or slab
 * (which must be free, see layout.h): a replay may free the extent */
int pma_pmap_check(struct pma_heap *heap)
{
	uint64_t page = 0;

	while ((page = skip_free(heap, heap->pmap_pm, page)) <
	       heap->geom.npages) {
		if (!entry_ok(heap, page, heap->pmap_pm[page]))
			return entry_corrupt(page, heap->pmap_pm[page]);
		page++;
	}
	return 0;
}

/* the page map after a dry run: PM's entries, except the pages the
 * replay wrote (sorted w[0..nw)), whose entries are the sink's */
struct span_view {
	const struct pma_heap *heap;
	const uint64_t *pm, *sink, *w;
	size_t nw, i; /* w[i] is the first written page >= the last query */
	uint64_t npages;
};

static int written_has(const struct span_view *v, uint64_t page)
{
	size_t lo = 0, hi = v->nw, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (v->w[mid] < page)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < v->nw && v->w[lo] == page;
}

static uint64_t view_entry(const struct span_view *v, uint64_t page)
{
	return written_has(v, page) ? v->sink[page] : v->pm[page];
}

/* the first page >= page (non-decreasing across calls) whose entry in
 * the view is not free; npages if none */
static uint64_t view_next(struct span_view *v, uint64_t page)
{
	uint64_t p;
	size_t j;

	for (;;) {
		p = skip_free(v->heap, v->pm, page);
		while (v->i < v->nw && v->w[v->i] < page)
			v->i++;
		/* a written page before p whose new entry is not free */
		for (j = v->i; j < v->nw && v->w[j] < p; j++)
			if (pma_pmap_kind(v->sink[v->w[j]]) != PMA_PMAP_FREE)
				return v->w[j];
		if (p < v->npages && j < v->nw && v->w[j] == p &&
		    pma_pmap_kind(v->sink[p]) == PMA_PMAP_FREE) {
			page = p + 1; /* the replay freed it */
			continue;
		}
		return p;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t pma_pmap_now(const struct pma_heap *heap, uint64_t page)
{
	const struct pma_shadow *s = heap->shadow;

	if (!s)
		return heap->pmap_pm[page];
	pma_assert(s->sorted);
	/* no page written yet: offs may be NULL, which bsearch must not get */
	return s->written.count &&
			       bsearch(&page, s->written.offs, s->written.count,
				       sizeof(*s->written.offs), cmp_u64) ?
		       s->pmap_sink[page] :
		       s->pmap_pm[page];
}

int pma_pmap_check_spans(struct pma_heap *heap, struct pma_shadow *shadow)
{
	struct span_view v = { .heap = heap,
			       .pm = heap->pmap_pm,
			       .npages = heap->geom.npages };
	uint64_t page, next, e, n;
	size_t i, k = 0;

	if (shadow) {
		struct pma_pending *w = &shadow->written;

		if (w->count)
			qsort(w->offs, w->count, sizeof(*w->offs), cmp_u64);
		for (i = 0; i < w->count; i++)
			if (!k || w->offs[i] != w->offs[k - 1])
				w->offs[k++] = w->offs[i];
		w->count = k;
		shadow->sorted = 1;
		v.pm = shadow->pmap_pm;
		v.sink = shadow->pmap_sink;
		v.w = w->offs;
		v.nw = k;
	}
	for (page = view_next(&v, 0); page < v.npages; page = next) {
		e = view_entry(&v, page);
		n = pma_pmap_npages(e);
		next = view_next(&v, page + 1);
		if (n && next < page + n)
			return util_errmsg_set(
				EIO,
				"corrupt page map: the entry "
				"of page %llu (0x%llx) lies "
				"inside the %s at page %llu",
				(unsigned long long)next,
				(unsigned long long)view_entry(&v, next),
				pma_pmap_kind(e) == PMA_PMAP_SLAB ? "slab" :
								    "extent",
				(unsigned long long)page);
	}
	return 0;
}

static int rebuild_scan(struct pma_heap *heap, uint64_t *seen)
{
	uint64_t page = 0, gap = 0, e, mask, w;
	int rc;

	while ((page = skip_free(heap, heap->pmap_pm, page)) <
	       heap->geom.npages) {
		e = heap->pmap_pm[page];
		if (!entry_ok(heap, page, e))
			return entry_corrupt(page, e);
		if (page > gap && pma_ext_put(&heap->ext, gap, page - gap) < 0)
			return util_errmsg_set(ENOMEM, "out of memory");
		e &= ~PMA_PMAP_CHECK_MASK; /* DRAM entries carry none */
		heap->pmap[page] = e;
		if (pma_pmap_kind(e) == PMA_PMAP_SLAB) {
			rc = pma_lazy_add(heap, page, e);
			if (rc < 0)
				return rc;
		}
		if (seen) {
			/* the call sets mask: sequenced before mask is read */
			w = pma_sum_word(heap, page, &mask);
			seen[w] |= mask;
		}
		page += pma_pmap_npages(e);
		gap = page;
	}
	if (page > gap && pma_ext_put(&heap->ext, gap, page - gap) < 0)
		return util_errmsg_set(ENOMEM, "out of memory");
	return 0;
}

/*
 * Scan the PM page map: mirror it, index the free gaps, and record each
 * slab as not loaded (lazy.c): its header and bitmap are read at its
 * first use, so open does not touch the slabs (one page fault each). A
 * writable open then unmarks the summary groups that hold no entry.
 */
int pma_rebuild(struct pma_heap *heap)
{
	uint64_t *seen = NULL;
	int rc;

	if (heap->sum_pm) {
		seen = calloc(heap->geom.sum_words, sizeof(*seen));
		if (!seen)
			return util_errmsg_set(ENOMEM, "out of memory");
	}
	rc = rebuild_scan(heap, seen);
	if (rc == 0 && seen)
		pma_sum_trim(heap, seen);
	free(seen);
	return rc;
}
