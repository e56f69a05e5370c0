/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc fsck, part 4 (fsck.h): the repairs fsck makes itself, before
 * the library's writable open makes its own. The walk of the check finds
 * them (with a plan it also records the 8-byte stores that make them);
 * each store is atomic and persisted before the next, and the stores of
 * one repair are ordered so that a crash between any two leaves a pool
 * that checks as before or repaired:
 *
 *  - a slab bitmap bank that fails its check by exactly one bit (of its
 *    three words, or of its check word): the only single-bit change that
 *    makes it pass is provably the damage (CRC-32C has Hamming distance
 *    6 at this length: no other bitmap within two bits has this check),
 *    so that word is stored back. Anything else about a bank is not
 *    repaired: its true bits are unknown.
 *  - a damaged slot ahead of a log's tail: zeroed, word by word (a slot
 *    with a zero word is not damaged).
 *  - page map entries in groups the summary does not mark: zeroed (open
 *    ignores them, so the heap it sees does not change).
 *  - with PMA_FSCK_ADVANCED, a log whose end is a damaged record
 *    (log-record-damaged) or an invalid one followed by valid records
 *    (log-record-after-end): the records after the end are dropped, last
 *    first, then the bad one; every operation they held is reported as
 *    lost (the library's open refused the heap because of them).
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

/* no bit past the bank's share of nblocks blocks */
static int bank_bits_ok(const uint64_t *words, unsigned nblocks, unsigned l)
{
	unsigned nbits =
		nblocks > l ? (nblocks - l + PMA_NBANKS - 1) / PMA_NBANKS : 0;
	uint64_t valid;
	unsigned w, b;

	for (w = 0; w < PMA_SLAB_BANK_WORDS; w++) {
		b = w * 64;
		valid = nbits <= b	? 0 :
			nbits - b >= 64 ? ~0ULL :
					  (1ULL << (nbits - b)) - 1;
		if (words[w] & ~valid)
			return 0;
	}
	return 1;
}

int pma_fsck_bank_fix(const struct pma_fsck *f, uint64_t slab_off,
		      const struct pma_fsck_slab *s, unsigned l,
		      struct pma_fsck_store *ret)
{
	uint64_t words[PMA_SLAB_BANK_WORDS], c;
	uint64_t base = slab_off + PMA_SLAB_BITMAP_OFF + (uint64_t)l * PMA_LINE;
	unsigned w, b, found = 0;

	if (!f->checked)
		return 0;
	for (w = 0; w < PMA_SLAB_BANK_WORDS; w++) {
		for (b = 0; b < 64; b++) {
			memcpy(words, s->pm[l], sizeof(words));
			words[w] ^= 1ULL << b;
			if (pma_check_bank(words, slab_off, l) !=
				    s->pm_check[l] ||
			    !bank_bits_ok(words, s->hdr.nblocks, l))
				continue;
			ret->off = base + (uint64_t)w * 8;
			ret->value = words[w];
			found++;
		}
	}
	c = pma_check_bank(s->pm[l], slab_off, l);
	if (__builtin_popcountll(c ^ s->pm_check[l]) == 1 &&
	    bank_bits_ok(s->pm[l], s->hdr.nblocks, l)) {
		ret->off = base + PMA_SLAB_BANK_CHECK * 8ULL;
		ret->value = c;
		found++;
	}
	return found == 1;
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

int pma_fsck_repair_flags(const char *path, unsigned flags,
			  struct pool_fsck_sink *notes)
{
	struct pool_fsck_sink quiet = { 0 };
	struct pma_fsck_plan plan = { .flags = flags, .notes = notes };
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
	if (rc == 0 && !(flags & PMA_FSCK_DRY_RUN) && plan.n)
		rc = apply(&plan, pool);
	pma_fsck_walk_free(set);
	free(set);
	free(plan.stores);
	pool_close(&pool);
	if (rc < 0 || (flags & PMA_FSCK_DRY_RUN))
		return rc;
	/* recovery, summary words, root check; close checkpoints */
	rc = pma_heap_open(path, 0, &heap);
	if (rc < 0)
		return rc;
	pma_heap_close(heap);
	return 0;
}

int pma_fsck_repair(const char *path)
{
	return pma_fsck_repair_flags(path, 0, NULL);
}
