/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc fsck, part 4 (fsck.h): the repairs fsck makes itself, before
 * the library's writable open makes its own. The walk of the check finds
 * them (with a plan it also records the 8-byte stores that make them);
 * each store is atomic and persisted before the next, and the stores of
 * one repair are ordered so that a crash between any two leaves a pool
 * that checks as before or repaired:
 *
 *  - a slab bitmap bank that fails its check, rebuilt from what is known
 *    of it: no bit past the slab's last block, the bits the logs' window
 *    names (as before its records, or after them), and at most one other
 *    bit (of its three words, or of its check word) found by the check.
 *    Only a unique such bank is stored: CRC-32C has Hamming distance 6
 *    at this length, so two banks with one check differ in at least six
 *    bits, and a bank the evidence fixes up to one unknown bit cannot be
 *    another valid bank unless five more unknown bits were damaged.
 *    Anything else about a bank is not repaired: the bits no record
 *    names are unknown.
 *  - a damaged slot ahead of a log's tail: zeroed, word by word (a slot
 *    with a zero word is not damaged).
 *  - page map entries in groups the summary does not mark: zeroed (open
 *    ignores them, so the heap it sees does not change).
 *  - with PMA_FSCK_ADVANCED, a log whose end is a damaged record
 *    (log-record-damaged) or an invalid one followed by valid records
 *    (log-record-after-end): the records after the end are dropped, last
 *    first, then the bad one; every operation they held is reported as
 *    lost (the library's open refused the heap because of them).
 *  - with PMA_FSCK_ADVANCED, an arena whose head (or generation word)
 *    is unknown: its log dropped where it ends (fsck.c, drop_fsck: the
 *    head, then its check, then the generation word), every record
 *    before the new head reported as possibly lost.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmalloc/fsck.h"
#include "pmem/pm.h"
#include "util/errmsg.h"

int pma_fsck_plan_store(struct pma_fsck *f, uint64_t off, uint64_t value)
{
	struct pma_fsck_plan *p = f->plan;
	struct pma_fsck_store *more;
	size_t n;

	if (!p)
		return 0;
	if (p->n == p->cap) {
		n = p->cap ? 2 * p->cap : 16;
		more = realloc(p->stores, n * sizeof(*more));
		if (!more)
			return util_errmsg_set(ENOMEM, "out of memory");
		p->stores = more;
		p->cap = n;
	}
	p->stores[p->n].off = off;
	p->stores[p->n].part = f->part;
	p->stores[p->n++].value = value;
	return 0;
}

int pma_fsck_note(struct pma_fsck *f, const char *code, uint64_t off,
		  const char *fmt, ...)
{
	char msg[2 * UTIL_ERRMSG_MAX];
	va_list ap;

	if (!f->plan || !f->plan->notes)
		return 0;
	va_start(ap, fmt);
	/* va_start is right above (an analyzer false positive) */
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (f->set && f->set->nheaps > 1)
		return pool_fsck_report(f->plan->notes, code, POOL_FSCK_INFO,
					f->part, off, "part %u: %s", f->part,
					msg);
	return pool_fsck_report(f->plan->notes, code, POOL_FSCK_INFO, f->part,
				off, "%s", msg);
}

/* ------------------------------------------------------------ banks */

/* the bank's in-range bits (blocks l, l + NBANKS, ... below nblocks) */
static void bank_valid(unsigned nblocks, unsigned l,
		       uint64_t valid[PMA_SLAB_BANK_WORDS])
{
	unsigned nbits =
		nblocks > l ? (nblocks - l + PMA_NBANKS - 1) / PMA_NBANKS : 0;
	unsigned w, b;

	for (w = 0; w < PMA_SLAB_BANK_WORDS; w++) {
		b = w * 64;
		valid[w] = nbits <= b	   ? 0 :
			   nbits - b >= 64 ? ~0ULL :
					     (1ULL << (nbits - b)) - 1;
	}
}

/* add the candidate (words, check) to ret unless it is there; the
 * number of distinct candidates */
static unsigned bank_candidate(struct pma_fsck_bank *ret, unsigned n,
			       const uint64_t *words, uint64_t check)
{
	if (n && !memcmp(ret->words, words, sizeof(ret->words)) &&
	    ret->check == check)
		return n;
	if (n == 0) {
		memcpy(ret->words, words, sizeof(ret->words));
		ret->check = check;
	}
	return n + 1;
}

int pma_fsck_bank_rebuild(const struct pma_fsck *f, uint64_t slab_off,
			  const struct pma_fsck_slab *s, unsigned l,
			  struct pma_fsck_bank *ret)
{
	uint64_t valid[PMA_SLAB_BANK_WORDS], k[PMA_SLAB_BANK_WORDS];
	const uint64_t *t = s->touched[l], *pm = s->pm[l];
	uint64_t c, any = t[0] | t[1] | t[2];
	unsigned st, w, b, n = 0;

	memset(ret, 0, sizeof(*ret));
	if (!f->checked || s->fresh || s->mid[l])
		return 0;
	bank_valid(s->hdr.nblocks, l, valid);
	for (w = 0; w < PMA_SLAB_BANK_WORDS; w++)
		ret->unknown +=
			(unsigned)__builtin_popcountll(valid[w] & ~t[w]);
	/* the states the evidence allows: no bit past the last block, and
	 * the bits the window's records name as before them or after them
	 * (a bank they do not touch: as it is) */
	for (st = 0; st < (any ? 2u : 1u); st++) {
		for (w = 0; w < PMA_SLAB_BANK_WORDS; w++)
			k[w] = ((pm[w] & ~t[w]) |
				((st ? s->cur[l][w] : s->pre[l][w]) & t[w])) &
			       valid[w];
		c = pma_check_bank(k, slab_off, l);
		/* it fits as it is, or with its check word one bit off */
		if (__builtin_popcountll(c ^ s->pm_check[l]) <= 1)
			n = bank_candidate(ret, n, k, c);
		/* one bit nothing else tells */
		for (w = 0; w < PMA_SLAB_BANK_WORDS; w++) {
			for (b = 0; b < 64; b++) {
				if (!((valid[w] & ~t[w]) >> b & 1))
					continue;
				k[w] ^= 1ULL << b;
				if (pma_check_bank(k, slab_off, l) ==
				    s->pm_check[l])
					n = bank_candidate(ret, n, k,
							   s->pm_check[l]);
				k[w] ^= 1ULL << b;
			}
		}
	}
	if (n != 1)
		return 0;
	for (w = 0; w < PMA_SLAB_BANK_WORDS; w++) {
		ret->known += (unsigned)__builtin_popcountll(
			(pm[w] ^ ret->words[w]) & (t[w] | ~valid[w]));
		ret->guessed += (unsigned)__builtin_popcountll(
			(pm[w] ^ ret->words[w]) & valid[w] & ~t[w]);
	}
	ret->guessed +=
		(unsigned)__builtin_popcountll(ret->check ^ s->pm_check[l]);
	return ret->known + ret->guessed != 0;
}

int pma_fsck_plan_bank(struct pma_fsck *f, uint64_t slab_off,
		       const struct pma_fsck_slab *s, unsigned l,
		       const struct pma_fsck_bank *fix)
{
	uint64_t base = slab_off + PMA_SLAB_BITMAP_OFF + (uint64_t)l * PMA_LINE;
	unsigned w;
	int rc = 0;

	/* the words, then the check: until the check is stored the bank
	 * fails it as before, and the same evidence gives the same bank */
	for (w = 0; rc == 0 && w < PMA_SLAB_BANK_WORDS; w++)
		if (fix->words[w] != s->pm[l][w])
			rc = pma_fsck_plan_store(f, base + w * 8ULL,
						 fix->words[w]);
	if (rc == 0 && fix->check != s->pm_check[l])
		rc = pma_fsck_plan_store(f, base + PMA_SLAB_BANK_CHECK * 8ULL,
					 fix->check);
	return rc;
}

/* ------------------------------------------------------------ logs */

int pma_fsck_plan_zero_slot(struct pma_fsck *f, const struct pma_rec *slot)
{
	uint64_t off = (uint64_t)((const char *)slot - f->base);
	int rc = 0;

	/* the tag word first: either half alone leaves no damaged slot */
	if (slot->word1)
		rc = pma_fsck_plan_store(f, off + 8, 0);
	if (rc == 0 && slot->word0)
		rc = pma_fsck_plan_store(f, off, 0);
	return rc;
}

/* ------------------------------------------------------------ apply */

static int apply(const struct pma_fsck_plan *p, struct pool *pool)
{
	struct pm_map *map;
	uint64_t *word;
	size_t i;

	for (i = 0; i < p->n; i++) {
		map = p->stores[i].part < pool_part_count(pool) ?
			      pool_part_map(pool, p->stores[i].part) :
			      NULL;
		if (!map || p->stores[i].off % 8 ||
		    p->stores[i].off + 8 > pm_map_size(map))
			return util_errmsg_set(
				EINVAL,
				"repair store at 0x%llx is "
				"outside part %u",
				(unsigned long long)p->stores[i].off,
				p->stores[i].part);
		word = (uint64_t *)(void *)((char *)pm_map_addr(map) +
					    p->stores[i].off);
		__atomic_store_n(word, p->stores[i].value, __ATOMIC_RELAXED);
		pm_persist(map, word, sizeof(*word));
	}
	return 0;
}

int pma_fsck_repair_ask(const char *path, unsigned flags,
			struct pool_fsck_sink *notes, pma_fsck_ask_fn ask,
			void *arg, unsigned *ret_declined)
{
	struct pool_fsck_sink quiet = { 0 };
	struct pma_fsck_plan plan = {
		.flags = flags, .notes = notes, .ask = ask, .ask_arg = arg
	};
	struct pma_fsck_set *set;
	struct pma_heap *heap;
	struct pool *pool;
	int rc;

	/* rewrites a damaged or older header copy of the same state; a dry
	 * run only reads */
	rc = pool_open(path, (flags & PMA_FSCK_DRY_RUN) ? POOL_OPEN_RDONLY : 0,
		       &pool);
	if (rc < 0)
		return rc;
	if (!pool_region_find(pool, POOL_REGION_PMALLOC, 0)) {
		pool_close(&pool);
		return 0;
	}
	set = calloc(1, sizeof(*set));
	if (!set) {
		pool_close(&pool);
		return util_errmsg_set(ENOMEM, "out of memory");
	}
	set->sink = &quiet;
	set->plan = &plan;
	rc = pma_fsck_walk_pool(set, pool);
	/* stores planned after the last asked-for finding belong to none */
	if (ask)
		plan.n = plan.change_start;
	if (rc == 0 && !(flags & PMA_FSCK_DRY_RUN) && plan.n)
		rc = apply(&plan, pool);
	if (ret_declined)
		*ret_declined = plan.declined;
	pma_fsck_walk_free(set);
	free(set);
	free(plan.stores);
	pool_close(&pool);
	if (rc < 0 || (flags & (PMA_FSCK_DRY_RUN | PMA_FSCK_NO_OPEN)))
		return rc;
	/* recovery, summary words, root check; close checkpoints */
	rc = pma_heap_open(path, 0, &heap);
	if (rc < 0)
		return rc;
	pma_heap_close(heap);
	return 0;
}

int pma_fsck_repair_flags(const char *path, unsigned flags,
			  struct pool_fsck_sink *notes)
{
	return pma_fsck_repair_ask(path, flags, notes, NULL, NULL, NULL);
}

int pma_fsck_repair(const char *path)
{
	return pma_fsck_repair_flags(path, 0, NULL);
}
