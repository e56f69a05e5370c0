/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmalloc banks: the slab bitmap banks a replay changes (version 7).
 *
 * A replay sets and clears single bits, and a bank it changes may be torn
 * by the checkpoint the crash interrupted: its words and its check word
 * each from before or after that checkpoint. Resealing such a bank
 * blindly would also bless a bit flipped by damage. So the replay records,
 * per bank, which bits it touched and what each was before the window
 * (the first op of a block in replay order tells: an allocation found it
 * clear, a free found it set; layout 8 keeps this true for remote frees:
 * an owner retires its SYNC_FREE of a block only after the RFREE is
 * retired, recovery.c), and at the end accepts the bank only if
 * its check matches the bank after the window (the checkpoint completed
 * it), before it (the checkpoint never reached it), or (version 8) after
 * one of its ops in replay order (a local checkpoint wrote it as of its
 * arena's cut, see recovery.c), then reseals it.
 * Banks of a slab made in the window (SLAB_NEW) are all from the log.
 * Version 9: the old bitmap of a mixed slab (words PMA_SLAB_OLD_WORD..,
 * its check in PMA_SLAB_OLD_CHECK) is a part of its own, checked the same
 * way (keyed by its first word; a replay only clears its bits). A free
 * record does not say whether it names an old block or the block of the
 * current class that starts at the same offset: a replayed free whose
 * old bit is clear already is either an old free replayed over a state
 * a checkpoint wrote (the bit was set before the window) or the free of
 * the new block (the old bit was clear all along). Its pre-window value
 * is unsure: the bank is accepted with such bits either way.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "pmalloc/internal.h"
#include "util/errmsg.h"

struct bank_ent {
	uint64_t *line; /* the part's first word; NULL: empty */
	int old; /* the old bitmap part (check at line[3]) */
	uint64_t slab_off;
	uint64_t touched[PMA_SLAB_BANK_WORDS];
	uint64_t pre[PMA_SLAB_BANK_WORDS];
	uint64_t unsure[PMA_SLAB_BANK_WORDS]; /* pre either way */
	uint64_t check; /* the bank's check word before the replay */
	unsigned bank;
	int fresh; /* its slab was made in the window */
	int mid; /* the check matched the bank after one of its ops */
	/* its ops in replay order (bit | PMA_CHECK_OP_SET), the first
	 * PMA_CHECK_OPS of them (nops counts on past it) */
	unsigned nops;
	uint16_t ops[PMA_CHECK_OPS];
};

struct pma_banks {
	struct bank_ent *ent;
	size_t mask, count;
};

int pma_banks_begin(struct pma_heap *heap)
{
	struct pma_banks *b = calloc(1, sizeof(*b));

	if (!b || !(b->ent = calloc(64, sizeof(*b->ent)))) {
		free(b);
		return util_errmsg_set(ENOMEM, "out of memory");
	}
	b->mask = 63;
	heap->banks = b;
	return 0;
}

static struct bank_ent *slot_of(struct pma_banks *b, uint64_t *line)
{
	size_t i = ((uintptr_t)line >> 6) * 0x9e3779b97f4a7c15ULL >> 20;

	for (i &= b->mask; b->ent[i].line && b->ent[i].line != line;
	     i = (i + 1) & b->mask)
		;
	return &b->ent[i];
}

static int grow(struct pma_banks *b)
{
	struct pma_banks nb = { calloc(2 * (b->mask + 1), sizeof(*nb.ent)),
				2 * b->mask + 1, b->count };
	size_t i;

	if (!nb.ent)
		return util_errmsg_set(ENOMEM, "out of memory");
	for (i = 0; i <= b->mask; i++)
		if (b->ent[i].line)
			*slot_of(&nb, b->ent[i].line) = b->ent[i];
	free(b->ent);
	*b = nb;
	return 0;
}

/* the entry of the bank at line, made if new */
static struct bank_ent *get(struct pma_banks *b, uint64_t *line,
			    uint64_t slab_off, unsigned bank)
{
	struct bank_ent *e;

	if (2 * (b->count + 1) > b->mask + 1 && grow(b) < 0)
		return NULL;
	e = slot_of(b, line);
	if (!e->line) {
		e->line = line;
		e->slab_off = slab_off;
		e->bank = bank;
		b->count++;
	}
	return e;
}

/* the part's check of words, and its check word */
static uint64_t part_check(const struct bank_ent *e, const uint64_t *words)
{
	return e->old ? pma_check_old(words, e->slab_off, e->bank) :
			pma_check_bank(words, e->slab_off, e->bank);
}
static uint64_t *part_check_word(const struct bank_ent *e)
{
	return e->old ? &e->line[PMA_SLAB_OLD_CHECK - PMA_SLAB_OLD_WORD] :
			&e->line[PMA_SLAB_BANK_CHECK];
}

static uint64_t *line_of(void *slab_meta, unsigned bank)
{
	return (uint64_t *)(void *)((char *)slab_meta + PMA_SLAB_BITMAP_OFF +
				    bank * PMA_LINE);
}

int pma_banks_fresh(struct pma_heap *heap, void *slab_meta, uint64_t slab_off)
{
	struct bank_ent *e;
	unsigned l;

	for (l = 0; l < PMA_NBANKS; l++) {
		e = get(heap->banks, line_of(slab_meta, l), slab_off, l);
		if (!e)
			return -ENOMEM;
		e->fresh = 1;
	}
	return 0;
}

int pma_banks_touch(struct pma_heap *heap, void *slab_meta, uint64_t slab_off,
		    const uint64_t *word, uint64_t mask, int pre)
{
	unsigned rel = (unsigned)((const char *)word - (char *)slab_meta -
				  PMA_SLAB_BITMAP_OFF);
	unsigned bank = rel / PMA_LINE, w = rel % PMA_LINE / 8;
	uint64_t *line = line_of(slab_meta, bank);
	struct bank_ent *e;
	int old = 0;

	if (w >= PMA_SLAB_OLD_WORD &&
	    w < PMA_SLAB_OLD_WORD + PMA_SLAB_BANK_WORDS) {
		old = 1;
		line += PMA_SLAB_OLD_WORD;
		w -= PMA_SLAB_OLD_WORD;
	}
	if (w >= PMA_SLAB_BANK_WORDS)
		return util_errmsg_set(EIO, "bitmap word outside its bank");
	e = get(heap->banks, line, slab_off, bank);
	if (!e)
		return -ENOMEM;
	e->old = old;
	if (!(e->touched[w] & mask)) { /* its first op in the window */
		if (!e->touched[0] && !e->touched[1] && !e->touched[2])
			e->check = *part_check_word(e);
		e->touched[w] |= mask;
		if (pre == PMA_BANKS_UNSURE)
			e->unsure[w] |= mask;
		else if (pre)
			e->pre[w] |= mask;
	}
	if (e->nops < PMA_CHECK_OPS)
		e->ops[e->nops] =
			(uint16_t)((w * 64 + (unsigned)__builtin_ctzll(mask)) |
				   (pre ? 0 : PMA_CHECK_OP_SET));
	e->nops++;
	/* version 8: a checkpoint of one arena writes the bank as it was
	 * after that arena's records up to its cut, which may be inside the
	 * window (later records of the arena, and other logs' remote frees
	 * of the bank's blocks, are replayed after it) */
	if (!e->mid && e->check == part_check(e, e->line))
		e->mid = 1;
	return 0;
}

/* does the bank's check match a state the replay explains, besides the
 * one after it: before the window (its words now but for the touched
 * bits, which are as they were before it, pre; the unsure ones either
 * way), or after one of its ops from there (mid above compares the words
 * as they are on media at that op, whose later bits a crashed recovery
 * may have changed already: a local checkpoint sealed the bank after an
 * op of the owner, then a recovery cleared a bit of a later op of the
 * window, an XFREE's, and crashed before it resealed) */
static int check_explained(const struct bank_ent *e, uint64_t check)
{
	uint64_t pre[PMA_SLAB_BANK_WORDS];
	unsigned w;

	for (w = 0; w < PMA_SLAB_BANK_WORDS; w++)
		pre[w] = (e->line[w] & ~e->touched[w]) | e->pre[w];
	return pma_check_unsure(check, pre, e->unsure, e->slab_off, e->bank,
				e->old) ||
	       pma_check_prefix(check, pre, e->ops, e->nops, e->slab_off,
				e->bank, e->old);
}

int pma_banks_end(struct pma_heap *heap, int ok)
{
	struct pma_banks *b = heap->banks;
	struct bank_ent *e;
	uint64_t check;
	int rc = 0;
	size_t i;

	heap->banks = NULL;
	for (i = 0; ok && rc == 0 && i <= b->mask; i++) {
		e = &b->ent[i];
		if (!e->line)
			continue;
		check = *part_check_word(e);
		if (!e->fresh && !e->mid && check != part_check(e, e->line) &&
		    !check_explained(e, check))
			rc = util_errmsg_set(
				EIO,
				"corrupt slab at 0x%llx (%s bitmap bank %u "
				"fails its check before and after the "
				"replay)",
				(unsigned long long)e->slab_off,
				e->old ? "old" : "allocation", e->bank);
	}
	for (i = 0; ok && rc == 0 && i <= b->mask; i++)
		if (b->ent[i].line)
			__atomic_store_n(part_check_word(&b->ent[i]),
					 part_check(&b->ent[i], b->ent[i].line),
					 __ATOMIC_RELAXED);
	free(b->ent);
	free(b);
	return rc;
}
