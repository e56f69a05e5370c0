/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc fsck, part 2 (fsck.h): the page map summary and entries as they
 * are on media (before the logs' windows, as open checks them), then the
 * state after the windows: spans, slabs (header against their page map
 * entry, bitmap banks against their check before or after the window),
 * the root word, and the library's own read-only open compared with the
 * walk (its free-extent index against the page map).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "pmalloc/fsck.h"
#include "util/errmsg.h"

/* ------------------------------------------------------------ page map */

/* summary words: valid, and their bits (invalid: all set, as open does) */
static int sum_fsck(struct pma_fsck *f)
{
	const uint64_t *words =
		(const uint64_t *)(const void *)(f->base + f->region_off +
						 f->g.sum_off);
	uint64_t w, v, off;
	int rc = 0;

	for (w = 0; rc == 0 && w < f->g.sum_words; w++) {
		v = words[w];
		f->sum[w] = v & PMA_SUM_BITS_MASK;
		if (v == pma_sum_encode(v, w))
			continue;
		f->sum[w] = PMA_SUM_BITS_MASK;
		off = f->region_off + f->g.sum_off + w * 8;
		rc = pma_fsck_report(
			f, "pmap-summary-check", POOL_FSCK_ERROR, off,
			"page map summary word %llu at 0x%llx (0x%llx) fails "
			"its check: open reads all its groups; a writable "
			"open rewrites it",
			(unsigned long long)w, (unsigned long long)off,
			(unsigned long long)v);
	}
	return rc;
}

/* what is wrong with entry e of page (before the window), NULL if
 * nothing; *code the finding's code */
static const char *entry_bad(const struct pma_fsck *f, uint64_t page,
			     uint64_t e, const char **code)
{
	uint64_t n = pma_pmap_npages(e);

	*code = "pmap-entry-check";
	if (f->checked ? pma_check_pmap(e, page) != e :
			 (e & PMA_PMAP_CHECK_MASK) != 0)
		return "fails its check";
	*code = "pmap-entry-kind";
	if (pma_pmap_kind(e) == PMA_PMAP_SLAB) {
		*code = "pmap-slab-entry";
		if (n != PMA_CHUNK_PAGES || page % PMA_CHUNK_PAGES ||
		    page + n > f->g.npages)
			return "is a slab entry off a chunk boundary";
		if (pma_pmap_cls(e) >= f->nclasses)
			return "names no size class";
		if (pma_pmap_owner(e) >= f->g.narenas)
			return "names no arena";
		return NULL;
	}
	if (pma_pmap_kind(e) != PMA_PMAP_EXTENT || pma_pmap_cls(e) ||
	    pma_pmap_owner(e))
		return "is of no valid kind";
	*code = "pmap-extent-range";
	if (!n || page + n > f->g.npages)
		return "is an extent that does not fit the data area";
	return NULL;
}

int pma_fsck_pmap(struct pma_fsck *f)
{
	const char *why, *code;
	uint64_t page, e, off;
	int rc = f->sum ? sum_fsck(f) : 0;

	for (page = 0; rc == 0 && page < f->g.npages; page++) {
		pma_fsck_progress(f, page);
		e = f->pmap_pm[page];
		if (!e || !pma_fsck_sum_has(f, page))
			continue; /* unmarked: pma_fsck_spans */
		why = entry_bad(f, page, e, &code);
		if (!why) {
			f->pmap[page] = e; /* the window starts from it */
			continue;
		}
		off = f->region_off + f->g.pmap_off + page * 8;
		rc = pma_fsck_report(f, code, POOL_FSCK_ERROR, off,
				     "page map entry %llu at 0x%llx (0x%llx) "
				     "%s",
				     (unsigned long long)page,
				     (unsigned long long)off,
				     (unsigned long long)e, why);
	}
	return rc;
}

/* entries in groups the summary does not mark, which no window op
 * writes again: open ignores them (and clears them when it marks the
 * group), so they are left over from damage or an old crash */
static int unmarked_fsck(struct pma_fsck *f)
{
	uint64_t page, e, off, n = 0, first = 0;

	for (page = 0; f->sum && page < f->g.npages; page++) {
		e = f->pmap_pm[page];
		if (!e || pma_fsck_sum_has(f, page) ||
		    (f->written[page / 64] >> (page % 64) & 1))
			continue;
		if (!n++)
			first = page;
		if (pma_fsck_plan_store(
			    f, f->region_off + f->g.pmap_off + page * 8, 0) < 0)
			return -ENOMEM;
	}
	if (!n)
		return 0;
	off = f->region_off + f->g.pmap_off + first * 8;
	if (pma_fsck_note(f, "repair-pmap-unmarked", off,
			  "%llu page map entries in groups the summary does "
			  "not mark (the first: page %llu at 0x%llx): zeroed",
			  (unsigned long long)n, (unsigned long long)first,
			  (unsigned long long)off) < 0)
		return -ENOMEM;
	return pma_fsck_report_flags(
		f, "pmap-entry-unmarked", POOL_FSCK_WARNING,
		POOL_FSCK_REPAIRABLE, off,
		"%llu page map entries (the first: page %llu "
		"at 0x%llx) are in groups the summary does not "
		"mark: open ignores them",
		(unsigned long long)n, (unsigned long long)first,
		(unsigned long long)off);
}

int pma_fsck_spans(struct pma_fsck *f)
{
	uint64_t page, e, n, end = 0, owner = 0;
	int rc = unmarked_fsck(f);

	f->phase = 1;
	for (page = 0; rc == 0 && page < f->g.npages; page++) {
		pma_fsck_progress(f, page);
		e = f->pmap[page];
		if (!e)
			continue;
		n = pma_pmap_npages(e);
		if (page < end) {
			rc = pma_fsck_report(
				f, "pmap-overlap", POOL_FSCK_ERROR,
				pma_fsck_page_off(f, page),
				"the %s at 0x%llx (page %llu) lies inside the "
				"%s at page %llu",
				pma_pmap_kind(e) == PMA_PMAP_SLAB ? "slab" :
								    "extent",
				(unsigned long long)pma_fsck_page_off(f, page),
				(unsigned long long)page,
				pma_pmap_kind(f->pmap[owner]) == PMA_PMAP_SLAB ?
					"slab" :
					"extent",
				(unsigned long long)owner);
			continue;
		}
		f->used_pages += n;
		end = page + n;
		owner = page;
	}
	return rc;
}

/* ------------------------------------------------------------ slabs */

/*
 * Bank l of slab s at off fails its check (why: how): rebuilt from the
 * evidence if exactly one bank fits (fsck-repair.c), else reported with
 * what fsck cannot know. A rebuild changes what the library reads: the
 * walk's copy of the bank is updated.
 */
static int bank_bad(struct pma_fsck *f, uint64_t off, struct pma_fsck_slab *s,
		    unsigned l, const char *why)
{
	uint64_t boff = off + PMA_SLAB_BITMAP_OFF + l * PMA_LINE;
	struct pma_fsck_bank fix;
	unsigned w, one = 0;
	int rc;
	/* a drop (fsck.c, drop_fsck): a checkpoint may have sealed the
	 * bank inside the dropped window, and no replay rewrites it now */
	const char *drop = s->hdr.owner < f->g.narenas &&
					   f->arenas[s->hdr.owner].dropped ?
				   " (its arena's log is one --advanced drops: "
				   "no replay would rewrite it)" :
				   "";

	if (!pma_fsck_bank_rebuild(f, off, s, l, &fix))
		return pma_fsck_report(
			f, "slab-bitmap-bank-check", POOL_FSCK_ERROR, boff,
			"slab at 0x%llx: allocation bitmap bank %u at 0x%llx "
			"%s%s; not repaired: %u of its blocks' bits are named "
			"by no record of the logs, so their state is unknown, "
			"and no single one of them (nor its check) explains "
			"the check",
			(unsigned long long)off, l, (unsigned long long)boff,
			why, drop, fix.unknown);
	for (w = 0; w < PMA_SLAB_BANK_WORDS; w++)
		one += fix.words[w] != s->pm[l][w];
	one += fix.check != s->pm_check[l];
	rc = pma_fsck_plan_bank(f, off, s, l, &fix);
	if (rc == 0 && fix.known == 0 && fix.guessed == 1)
		rc = pma_fsck_note(f, "repair-bank-bit", boff,
				   "slab at 0x%llx, bitmap bank %u: %s at "
				   "0x%llx is one bit off its check: restored",
				   (unsigned long long)off, l,
				   fix.check != s->pm_check[l] ?
					   "the check word" :
					   "a word of the bank",
				   (unsigned long long)boff);
	else if (rc == 0)
		rc = pma_fsck_note(f, "repair-bank-rebuild", boff,
				   "slab at 0x%llx, bitmap bank %u rebuilt (%u "
				   "word%s stored): %u bit%s from the logs' "
				   "records and the slab's block count, %u "
				   "from its check",
				   (unsigned long long)off, l, one,
				   one == 1 ? "" : "s", fix.known,
				   fix.known == 1 ? "" : "s", fix.guessed);
	if (rc < 0)
		return rc;
	/* the walk goes on with the rebuilt bank (its untouched bits are
	 * what the window starts from) */
	for (w = 0; w < PMA_SLAB_BANK_WORDS; w++)
		s->cur[l][w] = (fix.words[w] & ~s->touched[l][w]) |
			       (s->cur[l][w] & s->touched[l][w]);
	memcpy(s->pm[l], fix.words, sizeof(fix.words));
	s->pm_check[l] = fix.check;
	if (fix.known == 0 && fix.guessed == 1)
		return pma_fsck_report_flags(
			f, "slab-bitmap-bank-check", POOL_FSCK_ERROR,
			POOL_FSCK_REPAIRABLE, boff,
			"slab at 0x%llx: allocation bitmap bank %u at 0x%llx "
			"%s%s by exactly one bit: --repair restores it",
			(unsigned long long)off, l, (unsigned long long)boff,
			why, drop);
	return pma_fsck_report_flags(
		f, "slab-bitmap-bank-check", POOL_FSCK_ERROR,
		POOL_FSCK_REPAIRABLE, boff,
		"slab at 0x%llx: allocation bitmap bank %u at 0x%llx %s%s: "
		"--repair rebuilds it (%u bit%s from the logs' records and the "
		"slab's block count, %u from its check)",
		(unsigned long long)off, l, (unsigned long long)boff, why, drop,
		fix.known, fix.known == 1 ? "" : "s", fix.guessed);
}

/* the banks the window changed: on media either before or after it */
static int touched_fsck(struct pma_fsck *f, uint64_t chunk,
			struct pma_fsck_slab *s)
{
	uint64_t off = pma_fsck_page_off(f, chunk * PMA_CHUNK_PAGES);
	uint64_t pre[PMA_SLAB_BANK_WORDS], any;
	unsigned l, w;
	int rc;

	/* a SLAB_MORPH in the window starts the live bitmap again: every
	 * bit is the log's, as for a new slab (the library's replay seals
	 * it, banks.c); every bank is looked at, so that a repair of one
	 * does not leave another the open refuses */
	for (l = 0; f->checked && !s->fresh && !s->morphed && l < PMA_NBANKS;
	     l++) {
		for (w = 0, any = 0; w < PMA_SLAB_BANK_WORDS; w++) {
			any |= s->touched[l][w];
			pre[w] = (s->pm[l][w] & ~s->touched[l][w]) |
				 s->pre[l][w];
		}
		if (!any || s->mid[l] ||
		    s->pm_check[l] == pma_check_bank(s->cur[l], off, l) ||
		    pma_check_unsure(s->pm_check[l], pre, s->unsure[l], off, l,
				     0) ||
		    pma_check_prefix(s->pm_check[l], pre, s->ops[l], s->nops[l],
				     off, l, 0))
			continue;
		rc = bank_bad(f, off, s, l,
			      "matches neither the state before the logs' "
			      "records nor after them");
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* the slab header against its page map entry e; a code if bad */
static const char *slab_hdr_bad(const struct pma_fsck *f,
				const struct pma_slab_hdr *h, uint64_t e,
				const char **code)
{
	*code = "slab-magic";
	if (h->magic != PMA_SLAB_MAGIC)
		return "has no slab magic";
	*code = "slab-class";
	if (h->cls >= f->nclasses || h->cls != pma_pmap_cls(e))
		return "names a class its page map entry does not";
	*code = "slab-owner";
	if (h->owner >= f->g.narenas || h->owner != pma_pmap_owner(e))
		return "names an arena its page map entry does not";
	*code = "slab-geometry";
	if (h->block_size != pma_class_size(h->cls) ||
	    h->nblocks != pma_class_nblocks(h->cls))
		return "has a block size or count not of its class";
	return NULL;
}

/* bank l of slab s: untouched banks against their check, and no bit
 * past the last block */
static int bank_fsck(struct pma_fsck *f, uint64_t off, struct pma_fsck_slab *s,
		     unsigned l)
{
	uint64_t boff = off + PMA_SLAB_BITMAP_OFF + l * PMA_LINE, valid;
	unsigned w, b, nbits;

	if (f->checked && !s->fresh &&
	    !(s->touched[l][0] | s->touched[l][1] | s->touched[l][2]) &&
	    s->pm_check[l] != pma_check_bank(s->pm[l], off, l))
		return bank_bad(f, off, s, l, "fails its check");
	/* bank l holds blocks l, l + NBANKS, ...: nbits of them */
	nbits = s->hdr.nblocks > l ?
			(s->hdr.nblocks - l + PMA_NBANKS - 1) / PMA_NBANKS :
			0;
	for (w = 0; w < PMA_SLAB_BANK_WORDS; w++) {
		b = w * 64;
		valid = nbits <= b	? 0 :
			nbits - b >= 64 ? ~0ULL :
					  (1ULL << (nbits - b)) - 1;
		if (s->cur[l][w] & ~valid)
			return pma_fsck_report(
				f, "slab-bitmap-stray", POOL_FSCK_ERROR, boff,
				"slab at 0x%llx: allocation bitmap bank %u at "
				"0x%llx has bits set past its %u blocks",
				(unsigned long long)off, l,
				(unsigned long long)boff, s->hdr.nblocks);
	}
	return 0;
}

static int slab_fsck(struct pma_fsck *f, uint64_t page, uint64_t e)
{
	uint64_t chunk = page / PMA_CHUNK_PAGES,
		 off = pma_fsck_page_off(f, page);
	struct pma_fsck_slab *s = pma_fsck_slab_get(f, chunk);
	const char *why, *code;
	unsigned l;
	int rc = 0;

	if (!s)
		return util_errmsg_set(ENOMEM, "out of memory");
	if (!s->fresh && (why = slab_hdr_bad(f, &s->hdr, e, &code)) != NULL)
		return pma_fsck_report(f, code, POOL_FSCK_ERROR, off,
				       "slab header at 0x%llx (class %u, arena "
				       "%u in its header; %u, %u in its page "
				       "map entry) %s",
				       (unsigned long long)off, s->hdr.cls,
				       s->hdr.owner, pma_pmap_cls(e),
				       pma_pmap_owner(e), why);
	for (l = 0; rc == 0 && l < PMA_NBANKS; l++)
		rc = bank_fsck(f, off, s, l);
	if (rc == 0 && f->hdr->version >= PMA_HEAP_VERSION_MORPH &&
	    s->hdr.morph_from)
		rc = pma_fsck_morph_slab(f, off, s);
	return rc;
}

/*
 * A slab in a group the summary does not mark, which the window's ops
 * use: the open ignores its entry, but its replay of those ops reads the
 * slab and checks its banks. The replay finds the header by the chunk's
 * offset, not by the entry (apply.c, pma_slab_meta), so a header with
 * the slab magic is checked whatever the entry holds (without the magic
 * the replay refuses the op: log-op-target). 1 with the entry to check
 * it against in *ret_e (the media entry if a slab's, else the header's
 * own class and owner), else 0.
 */
static int unmarked_slab(struct pma_fsck *f, uint64_t page, uint64_t *ret_e)
{
	const struct pma_fsck_slab *s;

	if (f->pmap[page] || page % PMA_CHUNK_PAGES || !f->sum ||
	    pma_fsck_sum_has(f, page))
		return 0;
	s = f->slabs[page / PMA_CHUNK_PAGES];
	if (!s)
		return 0;
	if (pma_pmap_kind(f->pmap_pm[page]) == PMA_PMAP_SLAB)
		*ret_e = f->pmap_pm[page];
	else if (s->hdr.magic == PMA_SLAB_MAGIC)
		*ret_e = pma_pmap_make_slab(s->hdr.cls, s->hdr.owner);
	else
		return 0;
	return 1;
}

int pma_fsck_slabs(struct pma_fsck *f)
{
	uint64_t c, page, e, nchunks = f->g.npages / PMA_CHUNK_PAGES + 1;
	int rc = 0;

	for (c = 0; rc == 0 && c < nchunks; c++) {
		if (!f->slabs[c])
			continue;
		if (f->slabs[c]->torn_rec)
			rc = pma_fsck_report(
				f, "log-op-target", POOL_FSCK_ERROR,
				f->slabs[c]->torn_rec - 1,
				"arena %u: a log record names 0x%llx, not a "
				"block of a valid slab (and no slab_morph of "
				"the log rewrites its header)",
				f->slabs[c]->torn_arena,
				(unsigned long long)f->slabs[c]->torn_off);
		if (rc == 0)
			rc = touched_fsck(f, c, f->slabs[c]);
	}
	f->phase = 2;
	for (page = 0; rc == 0 && page < f->g.npages; page++) {
		pma_fsck_progress(f, page);
		if (pma_pmap_kind(f->pmap[page]) == PMA_PMAP_SLAB)
			rc = slab_fsck(f, page, f->pmap[page]);
		else if (unmarked_slab(f, page, &e))
			rc = slab_fsck(f, page, e);
	}
	return rc;
}

/* ------------------------------------------------------------ root */

/* the root word at off names root: a live block or extent after the
 * logs' records (root-not-live) */
static int root_live_fsck(struct pma_fsck *f, uint64_t off, uint64_t root)
{
	int live = pma_fsck_live_after(f, root);

	if (live < 0)
		return util_errmsg_set(ENOMEM, "out of memory");
	if (!live)
		return pma_fsck_report(f, "root-not-live", POOL_FSCK_ERROR, off,
				       "root word at 0x%llx names 0x%llx, not "
				       "a live block or extent",
				       (unsigned long long)off,
				       (unsigned long long)root);
	return 0;
}

/* does pool offset off name a live block or extent after the window
 * (of its part's heap; a part whose walk did not end: unknown, 1)? */
int pma_fsck_live_after(struct pma_fsck *f, uint64_t off)
{
	uint64_t b = pool_off_byte(off), page, chunk;
	struct pma_fsck_slab *s;
	int idx;

	f = pma_fsck_route(f->set, off);
	if (!f || !f->present)
		return 0;
	if (!f->walked)
		return 1;
	if (b < f->data_base ||
	    (page = (b - f->data_base) >> PMA_PAGE_SHIFT) >= f->g.npages)
		return 0;
	if (b % PMA_PAGE == 0 &&
	    pma_pmap_kind(f->pmap[page]) == PMA_PMAP_EXTENT)
		return 1;
	chunk = page / PMA_CHUNK_PAGES;
	if (pma_pmap_kind(f->pmap[chunk * PMA_CHUNK_PAGES]) != PMA_PMAP_SLAB)
		return 0;
	s = pma_fsck_slab_get(f, chunk);
	if (!s)
		return -ENOMEM;
	/* a mixed slab's live old block (layout 9) is live too */
	if (pma_fsck_old_live(
		    s, b - pma_fsck_page_off(f, chunk * PMA_CHUNK_PAGES)))
		return 1;
	idx = pma_fsck_block_of(f, s, chunk, b);
	return idx >= 0 && (s->cur[idx % PMA_NBANKS][idx / PMA_NBANKS / 64] >>
				    (idx / PMA_NBANKS % 64) &
			    1);
}

int pma_fsck_root(struct pma_fsck *f)
{
	uint64_t root = f->hdr->root_off, check = f->hdr->root_check;
	uint64_t off = f->region_off + PMA_ROOT_WORD_OFF;

	if (f->checked && root && check && check != pma_check_root(root))
		return pma_fsck_report(f, "root-check", POOL_FSCK_ERROR, off,
				       "root word at 0x%llx (0x%llx) fails "
				       "its check",
				       (unsigned long long)off,
				       (unsigned long long)root);
	if (f->checked && !root && check && !f->root_logged)
		return pma_fsck_report(f, "root-check", POOL_FSCK_ERROR, off,
				       "root word at 0x%llx is 0 but its "
				       "check is set, and no log record "
				       "allocates to it",
				       (unsigned long long)off);
	if (f->checked && root && !check &&
	    pma_fsck_report(f, "root-unsealed", POOL_FSCK_WARNING, off,
			    "root word at 0x%llx has no check yet (a crash "
			    "between its two stores): a writable open "
			    "completes it",
			    (unsigned long long)off) < 0)
		return f->sink->rc;
	if (!root)
		return 0;
	return root_live_fsck(f, off, root);
}

/*
 * The root word of a region other than slot 0's: unused, but recovery
 * checks every region's as it checks slot 0's (recovery.c
 * root_zero_check: a word of 0 with its check set, unless an allocation
 * to it is redone; object.c pma_root_dry_check: a word naming this
 * region's data area must name a live block), and refuses the open.
 */
int pma_fsck_root_other(struct pma_fsck *f)
{
	uint64_t root = f->hdr->root_off, check = f->hdr->root_check;
	uint64_t off = f->region_off + PMA_ROOT_WORD_OFF, b;

	if (!f->checked)
		return 0;
	if (!root && check && !f->root_logged)
		return pma_fsck_report(f, "root-check", POOL_FSCK_ERROR, off,
				       "root word at 0x%llx is 0 but its "
				       "check is set, and no log record "
				       "allocates to it",
				       (unsigned long long)off);
	b = pool_off_byte(root);
	if (!root || pool_off_part(root) != f->part || b < f->data_base ||
	    (b - f->data_base) >> PMA_PAGE_SHIFT >= f->g.npages)
		return 0;
	return root_live_fsck(f, off, root);
}

/* the byte offset (in fp's part) of entry j of fp's ring for slot d */
static uint64_t xent_off(const struct pma_fsck *fp, unsigned d, uint64_t j)
{
	return fp->region_off + fp->hdr->xring_off +
	       ((uint64_t)d * PMA_XRING_CAP + j % PMA_XRING_CAP) *
		       sizeof(struct pma_xent);
}

/*
 * Entries of fp's ring for slot d from j (the first invalid one at or
 * above the consumer word cons) below the producer word prod: every one
 * is committed (xring.c: an entry is fenced before the word that counts
 * it is stored), so an invalid one is damage, and the holder's drain
 * stops there for good. --repair --advanced voids each invalid entry
 * before the last valid one (a block word of 0: the drain skips it; the
 * free it held is lost, its block stays allocated), then sets the
 * producer word back to one past that last valid entry.
 */
static int ring_gap(struct pma_fsck *fd, struct pma_fsck *fp,
		    const struct pma_xent *ring, uint64_t cons, uint64_t j,
		    uint64_t prod)
{
	uint64_t lim = prod - cons > PMA_XRING_CAP ? cons + PMA_XRING_CAP :
						     prod,
		 end = j, k, block, dest_off, bad = 0, prod_off;
	unsigned d = fd->slot, flags = POOL_FSCK_ADVANCED;
	int rc = 0;

	for (k = j; k < lim; k++)
		if (pma_xent_read(ring, k, &block, &dest_off))
			end = k + 1;
	for (k = j; k < end; k++)
		bad += !pma_xent_read(ring, k, &block, &dest_off);
	prod_off = fp->region_off + offsetof(struct pma_heap_hdr, xprod) +
		   d * sizeof(uint64_t);
	if (fp->plan && (fp->plan->flags & PMA_FSCK_ADVANCED)) {
		for (k = j; rc == 0 && k < end; k++) {
			if (pma_xent_read(ring, k, &block, &dest_off))
				continue;
			rc = pma_fsck_note(
				fp, "repair-ring-entry-void",
				xent_off(fp, d, k),
				"free ring of region slot %u for slot %u: "
				"entry %llu at 0x%llx voided: the free it "
				"held is lost (its block stays allocated)",
				fp->slot, d, (unsigned long long)k,
				(unsigned long long)xent_off(fp, d, k));
			if (rc == 0)
				rc = pma_fsck_plan_store(
					fp, xent_off(fp, d, k),
					pma_xent_tag0(k / PMA_XRING_CAP));
			if (rc == 0)
				rc = pma_fsck_plan_store(
					fp, xent_off(fp, d, k) + 8,
					pma_xent_tag1(k / PMA_XRING_CAP));
		}
		if (rc == 0)
			rc = pma_fsck_note(
				fp, "repair-ring-prod", prod_off,
				"free ring of region slot %u for slot %u: "
				"producer word at 0x%llx set from %llu to %llu",
				fp->slot, d, (unsigned long long)prod_off,
				(unsigned long long)prod,
				(unsigned long long)end);
		if (rc == 0)
			rc = pma_fsck_plan_store(fp, prod_off, end);
		if (rc < 0)
			return rc;
	}
	if (!bad)
		return pma_fsck_report_flags(
			fp, "ring-entry-invalid", POOL_FSCK_ERROR, flags,
			xent_off(fp, d, j),
			"free ring of region slot %u for slot %u: entries "
			"%llu to %llu are not valid, below the producer word "
			"(%llu): the holder stops at entry %llu, and frees "
			"into the region fail once %u are owed; --repair "
			"--advanced sets the producer word to %llu (if those "
			"entries were written, their frees are lost)",
			fp->slot, d, (unsigned long long)j,
			(unsigned long long)(lim - 1), (unsigned long long)prod,
			(unsigned long long)j, PMA_XRING_CAP,
			(unsigned long long)end);
	return pma_fsck_report_flags(
		fp, "ring-entry-invalid", POOL_FSCK_ERROR, flags,
		xent_off(fp, d, j),
		"free ring of region slot %u for slot %u: entry %llu at 0x%llx "
		"is not valid, below the producer word (%llu): the holder "
		"applies no free from it on, and frees into the region fail "
		"once %u are owed; --repair --advanced voids the %llu invalid "
		"entr%s before the last valid one (the frees they held are "
		"lost: the blocks stay allocated) and sets the producer word "
		"to %llu",
		fp->slot, d, (unsigned long long)j,
		(unsigned long long)xent_off(fp, d, j),
		(unsigned long long)prod, PMA_XRING_CAP,
		(unsigned long long)bad, bad == 1 ? "y" : "ies",
		(unsigned long long)end);
}

/* the rings of freer region fp for region fd (layout 12): fd's consumer
 * word for fp, and every committed entry at or above it (not applied
 * yet) names a live block of fd; *pending counts them */
static int ring_check(struct pma_fsck *fd, struct pma_fsck *fp,
		      uint64_t *pending)
{
	const struct pma_xent *ring =
		pma_xring_of(fp->hdr, fp->region_size, fd->slot);
	uint64_t cons, j, block, dest_off, prod;
	int live;

	if (!ring)
		return 0;
	/* (a region the open formats gets consumer words of 0) */
	if (fd->unformatted)
		cons = 0;
	else if (pma_check_cons_decode(fd->hdr->xcons[fp->slot], fp->slot,
				       &cons) < 0) {
		util_errmsg_clear();
		return pma_fsck_report(
			fd, "ring-cons-check", POOL_FSCK_ERROR,
			fd->region_off + offsetof(struct pma_heap_hdr, xcons) +
				fp->slot * sizeof(uint64_t),
			"the word of frees applied from region slot %u fails "
			"its check: an open refuses the pool",
			fp->slot);
	}
	cons = pma_xring_start(ring, cons);
	for (j = cons; j - cons < PMA_XRING_CAP &&
		       pma_xent_read(ring, j, &block, &dest_off);
	     j++) {
		if (!block)
			continue; /* void (ring_gap) */
		(*pending)++;
		/* (an unformatted region has no live block) */
		live = fd->walked && pool_off_part(block) == fd->part &&
				       pool_off_byte(block) >= fd->region_off &&
				       pool_off_byte(block) <
					       fd->region_off +
						       fd->region_size ?
			       pma_fsck_live_after(fd, block) :
			       0;
		if (live < 0)
			return util_errmsg_set(ENOMEM, "out of memory");
		if (!live &&
		    pma_fsck_report(fd, "ring-entry-not-live",
				    POOL_FSCK_WARNING,
				    xent_off(fp, fd->slot, j),
				    "free ring of region slot %u: entry %llu "
				    "frees 0x%llx, not a live block of region "
				    "slot %u (a double free or a bad offset: "
				    "its holder skips it)",
				    fp->slot, (unsigned long long)j,
				    (unsigned long long)block, fd->slot) < 0)
			return fd->sink->rc;
	}
	/* (a producer word behind the consumer word is one a crash lost:
	 * the freer's recovery moves it on) */
	prod = fp->hdr->xprod[fd->slot];
	if (j - cons < PMA_XRING_CAP && prod > j)
		return ring_gap(fd, fp, ring, cons, j, prod);
	return 0;
}

/* the consumer words of region d's header ring_check does not look at
 * (its own slot's, and those of slots no walked region holds): a
 * writable open decodes all of them (xring.c, xring_cons_load) */
static int cons_check_rest(struct pma_fsck_set *set, struct pma_fsck *fd,
			   unsigned d)
{
	uint64_t cons;
	unsigned s;

	for (s = 0; s < PMA_MAX_SLOTS; s++) {
		if (s != d && set->part[s].present && set->part[s].walked)
			continue;
		if (pma_check_cons_decode(fd->hdr->xcons[s], s, &cons) == 0)
			continue;
		util_errmsg_clear();
		if (pma_fsck_report(
			    fd, "ring-cons-check", POOL_FSCK_ERROR,
			    fd->region_off +
				    offsetof(struct pma_heap_hdr, xcons) +
				    s * sizeof(uint64_t),
			    "the word of frees applied from region slot %u "
			    "fails its check: an open refuses the pool",
			    s) < 0)
			return fd->sink->rc;
	}
	return 0;
}

/* the rings of every walked region for the unformatted region fd */
static int rings_for_new(struct pma_fsck_set *set, struct pma_fsck *fd)
{
	uint64_t pending = 0;
	unsigned p;
	int rc;

	for (p = 0; p < PMA_MAX_SLOTS; p++) {
		if (p == fd->slot || !set->part[p].present ||
		    !set->part[p].walked ||
		    set->part[p].g.version < PMA_HEAP_VERSION_XRING)
			continue;
		rc = ring_check(fd, &set->part[p], &pending);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int pma_fsck_rings(struct pma_fsck_set *set)
{
	struct pma_fsck *fd;
	uint64_t pending;
	unsigned d, p;
	int rc;

	for (d = 0; d < PMA_MAX_SLOTS; d++) {
		fd = &set->part[d];
		/* a region a writable open formats (its consumer words 0)
		 * then drains the rings the other regions hold for it */
		if (fd->present && fd->unformatted) {
			rc = rings_for_new(set, fd);
			if (rc < 0)
				return rc;
			continue;
		}
		if (!fd->present || !fd->walked ||
		    fd->g.version < PMA_HEAP_VERSION_XRING)
			continue;
		rc = cons_check_rest(set, fd, d);
		if (rc < 0)
			return rc;
		pending = 0;
		for (p = 0; p < PMA_MAX_SLOTS; p++) {
			if (p == d || !set->part[p].present ||
			    !set->part[p].walked)
				continue;
			rc = ring_check(fd, &set->part[p], &pending);
			if (rc < 0)
				return rc;
		}
		if (pending &&
		    pma_fsck_report(fd, "ring-pending", POOL_FSCK_INFO,
				    fd->region_off,
				    "region slot %u: %llu frees of its blocks "
				    "by other regions are committed in free "
				    "rings and not applied yet (its holder "
				    "applies them; their blocks count as used "
				    "until then)",
				    d, (unsigned long long)pending) < 0)
			return fd->sink->rc;
	}
	return 0;
}

/* ------------------------------------------------------------ library */

/* the read-only open's page map and free-extent index against the walk
 * (one part's) */
static int library_compare(struct pma_fsck *f, struct pma_heap *heap)
{
	uint64_t page, free_pages = f->g.npages - f->used_pages;

	if (pma_ext_check(&heap->ext) < 0)
		return pma_fsck_report(f, "extent-index-invalid",
				       POOL_FSCK_ERROR, f->data_base,
				       "the free-extent index built at open "
				       "is inconsistent: %s",
				       pma_errormsg());
	if (pma_ext_free_pages(&heap->ext) != free_pages)
		return pma_fsck_report(
			f, "extent-index-mismatch", POOL_FSCK_ERROR,
			f->data_base,
			"the free-extent index built at open holds %llu free "
			"pages, the page map leaves %llu",
			(unsigned long long)pma_ext_free_pages(&heap->ext),
			(unsigned long long)free_pages);
	f->phase = 3;
	for (page = 0; page < f->g.npages; page++, pma_fsck_progress(f, page))
		if (heap->pmap_pm[page] != f->pmap[page])
			return pma_fsck_report(
				f, "heap-replay-mismatch", POOL_FSCK_ERROR,
				f->region_off + f->g.pmap_off + page * 8,
				"page map entry %llu after recovery is 0x%llx, "
				"fsck expected 0x%llx",
				(unsigned long long)page,
				(unsigned long long)heap->pmap_pm[page],
				(unsigned long long)f->pmap[page]);
	return 0;
}

int pma_fsck_library_heap(struct pma_fsck_set *set, struct pma_heap *heap)
{
	struct pma_heap_stats st;
	struct pma_fsck *f;
	unsigned p;
	int rc = 0;

	heap = heap->top;
	/* reads every slab of every part, with the checks of its first use */
	if (pma_heap_stats(heap, &st) < 0)
		return pma_fsck_report(&set->part[0], "heap-slab-refused",
				       POOL_FSCK_ERROR, set->part[0].data_base,
				       "reading every slab fails: %s",
				       pma_errormsg());
	for (p = 0; rc == 0 && p < PMA_MAX_SLOTS; p++) {
		f = &set->part[p];
		if (!f->walked)
			continue;
		if (heap->nreg != set->nreg)
			return pma_fsck_report(
				f, "heap-replay-mismatch", POOL_FSCK_ERROR,
				f->region_off,
				"the heap's open has %u regions per part, "
				"fsck %u",
				heap->nreg, set->nreg);
		if (!heap->sib[p]) /* a region the open skipped */
			rc = pma_fsck_report(
				f, "heap-replay-mismatch", POOL_FSCK_ERROR,
				f->region_off,
				"the heap's open has no heap in part %u, fsck "
				"walked the one at 0x%llx",
				p, (unsigned long long)f->region_off);
		else
			rc = library_compare(f, heap->sib[p]);
	}
	return rc;
}

int pma_fsck_library(struct pma_fsck_set *set, const char *path)
{
	struct pma_heap *heap;
	int rc;

	if (pma_heap_open(path, PMA_HEAP_RDONLY, &heap) < 0)
		return pma_fsck_report(&set->part[0], "heap-open-refused",
				       POOL_FSCK_ERROR, set->part[0].region_off,
				       "the heap's read-only open refuses it: "
				       "%s",
				       pma_errormsg());
	rc = pma_fsck_library_heap(set, heap);
	pma_heap_close(heap);
	return rc;
}
