/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc fsck, part 1 (fsck.h): the driver, the heap header, the arena
 * heads, the bookkeeping logs, and the walk's replay of their windows
 * (the records from each head to its tail) into its own model: the page
 * map entries the structural ops write, and per slab the bitmap bits the
 * block ops set and clear. Phase 1 applies each log's own ops in log
 * order, phase 2 the frees of other arenas' blocks and extents, as
 * recovery does (doc/pmalloc.md, "Protocol"). Nothing here writes PM.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmalloc/fsck.h"
#include "util/errmsg.h"

/* a repair asked for: the stores planned since the previous one are
 * this finding's; kept or dropped as ask says */
static int ask(struct pma_fsck *f, const char *code,
	       enum pool_fsck_severity severity, unsigned flags, uint64_t off,
	       const char *msg)
{
	struct pma_fsck_plan *p = f->plan;
	char full[2 * UTIL_ERRMSG_MAX + 32];
	struct pool_fsck_finding q = { .code = code,
				       .severity = severity,
				       .part = f->part,
				       .off = off,
				       .message = full,
				       .flags = flags };
	int rc = 0;

	if (p->n > p->change_start) {
		if (f->set && f->set->nreg > 1)
			snprintf(full, sizeof(full), "part %u region %u: %s",
				 f->part, f->slot % f->set->nreg, msg);
		else if (f->set && f->set->nheaps > 1)
			snprintf(full, sizeof(full), "part %u: %s", f->part,
				 msg);
		else
			snprintf(full, sizeof(full), "%s", msg);
		rc = p->ask(&q, p->ask_arg);
		if (rc == 0) {
			p->n = p->change_start;
			p->declined++;
		}
	}
	p->change_start = p->n;
	return rc < 0 ? rc : 0;
}

static int vreport(struct pma_fsck *f, const char *code,
		   enum pool_fsck_severity severity, unsigned flags,
		   uint64_t off, const char *fmt, va_list ap)
	__attribute__((format(printf, 6, 0)));

static int vreport(struct pma_fsck *f, const char *code,
		   enum pool_fsck_severity severity, unsigned flags,
		   uint64_t off, const char *fmt, va_list ap)
{
	char msg[2 * UTIL_ERRMSG_MAX];

	/* ap comes initialized from the caller's va_start (an analyzer
	 * false positive) */
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (severity == POOL_FSCK_ERROR)
		f->heap_errors++;
	if (f->plan && f->plan->ask &&
	    (flags & (POOL_FSCK_REPAIRABLE | POOL_FSCK_ADVANCED))) {
		int rc = ask(f, code, severity, flags, off, msg);

		if (rc < 0)
			return rc;
	}
	if (f->set && f->set->nreg > 1)
		return pool_fsck_report_flags(f->sink, code, severity, flags,
					      f->part, off,
					      "part %u region %u: %s", f->part,
					      f->slot % f->set->nreg, msg);
	if (f->set && f->set->nheaps > 1)
		return pool_fsck_report_flags(f->sink, code, severity, flags,
					      f->part, off, "part %u: %s",
					      f->part, msg);
	return pool_fsck_report_flags(f->sink, code, severity, flags, f->part,
				      off, "%s", msg);
}

int pma_fsck_report(struct pma_fsck *f, const char *code,
		    enum pool_fsck_severity severity, uint64_t off,
		    const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	/* va_start is right above (an analyzer false positive) */
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	rc = vreport(f, code, severity, 0, off, fmt, ap);
	va_end(ap);
	return rc;
}

int pma_fsck_report_flags(struct pma_fsck *f, const char *code,
			  enum pool_fsck_severity severity, unsigned flags,
			  uint64_t off, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	rc = vreport(f, code, severity, flags, off, fmt, ap);
	va_end(ap);
	return rc;
}

/* the pages of the heaps before f's (progress) */
static uint64_t pages_before(const struct pma_fsck *f)
{
	uint64_t n = 0;
	unsigned p;

	for (p = 0; p < f->slot; p++)
		n += f->set->part[p].npages_hint;
	return n;
}

void pma_fsck_progress(const struct pma_fsck *f, uint64_t page)
{
	const struct pool_fsck_sink *s = f->sink;
	uint64_t total = f->set ? f->set->total_pages : f->g.npages;
	uint64_t base = f->set ? pages_before(f) : 0, done;

	if (!s->progress || (page % 4096 && page != f->g.npages) ||
	    total < base + f->g.npages)
		return;
	/* the walks' passes over every part, then the library's pass */
	if (f->phase < PMA_FSCK_PASSES - 1)
		done = (PMA_FSCK_PASSES - 1) * base + f->phase * f->g.npages +
		       page;
	else
		done = (PMA_FSCK_PASSES - 1) * total + base + page;
	s->progress(done * PMA_PAGE / PMA_FSCK_PASSES, total * PMA_PAGE,
		    s->progress_arg);
}

int pma_fsck_sum_has(const struct pma_fsck *f, uint64_t page)
{
	uint64_t g;

	if (!f->sum)
		return 1;
	g = page >> f->g.sum_shift;
	return ((f->sum[g / PMA_SUM_BITS] >> (g % PMA_SUM_BITS)) & 1) != 0;
}

struct pma_fsck_slab *pma_fsck_slab_get(struct pma_fsck *f, uint64_t chunk)
{
	struct pma_fsck_slab *s = f->slabs[chunk];
	const uint64_t *line;
	const char *pm;
	unsigned l;

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	pm = f->base + pma_fsck_page_off(f, chunk * PMA_CHUNK_PAGES);
	memcpy(&s->hdr, pm, sizeof(s->hdr));
	for (l = 0; l < PMA_NBANKS; l++) {
		line = (const uint64_t *)(const void *)(pm +
							PMA_SLAB_BITMAP_OFF +
							l * PMA_LINE);
		memcpy(s->pm[l], line, sizeof(s->pm[l]));
		memcpy(s->cur[l], line, sizeof(s->cur[l]));
		s->pm_check[l] = line[PMA_SLAB_BANK_CHECK];
		memcpy(s->old_pm[l], line + PMA_SLAB_OLD_WORD,
		       sizeof(s->old_pm[l]));
		memcpy(s->old_cur[l], s->old_pm[l], sizeof(s->old_cur[l]));
		s->old_check[l] = line[PMA_SLAB_OLD_CHECK];
	}
	f->slabs[chunk] = s;
	return s;
}

/* ------------------------------------------------------------ header */

/* magic, checksum, version, geometry; 1 if the heap cannot be walked */
static int header_fsck(struct pma_fsck *f)
{
	const struct pma_heap_hdr *h = f->hdr;
	const char *code = NULL;

	if (f->unformatted) { /* (part_init) */
		pma_fsck_report(f, "heap-unformatted", POOL_FSCK_INFO,
				f->region_off,
				"heap region at 0x%llx is not formatted (no "
				"magic): nothing to check",
				(unsigned long long)f->region_off);
		return 1;
	}
	if (memcmp(h->magic, PMA_HEAP_MAGIC, PMA_HEAP_MAGIC_LEN) != 0)
		code = "heap-hdr-magic";
	else if (h->checksum != util_crc32c(0, h, PMA_HDR_CSUM_LEN))
		code = "heap-hdr-checksum";
	else if (h->version < PMA_HEAP_VERSION_MIN ||
		 h->version > PMA_HEAP_VERSION)
		code = "heap-hdr-version";
	else if (pma_heap_hdr_check(h, f->region_size, &f->g) < 0)
		code = "heap-hdr-geometry";
	if (code) {
		pma_heap_hdr_check(h, f->region_size, &f->g);
		pma_fsck_report(f, code, POOL_FSCK_ERROR, f->region_off,
				"heap header at 0x%llx: %s; the heap's other "
				"structures are not checked",
				(unsigned long long)f->region_off,
				util_errmsg());
		return 1;
	}
	f->checked = h->version >= PMA_HEAP_VERSION_CHECKED;
	f->osh = pma_rec_osh(h->version);
	f->nclasses = pma_nclasses(h->version);
	f->data_base = f->region_off + f->g.data_off;
	f->logs =
		(const struct pma_rec *)(const void *)(f->base + f->region_off +
						       f->g.log_off);
	f->pmap_pm = (const uint64_t *)(const void *)(f->base + f->region_off +
						      f->g.pmap_off);
	f->gen_ok = 1;
	f->gen = h->head_gen;
	if (f->checked && pma_check_gen_decode(h->head_gen, &f->gen)) {
		f->gen_ok = 0;
		pma_fsck_report(
			f, "heap-head-gen-check", POOL_FSCK_ERROR,
			f->region_off + PMA_HEAD_GEN_OFF,
			"heap head generation word at 0x%llx "
			"(0x%llx) fails its check: the current heads, "
			"so the logs, are unknown and not checked",
			(unsigned long long)(f->region_off + PMA_HEAD_GEN_OFF),
			(unsigned long long)h->head_gen);
	}
	return 0;
}

/* ------------------------------------------------------------ logs */

static const struct pma_rec *log_of(const struct pma_fsck *f, unsigned a)
{
	return f->logs + (uint64_t)a * f->g.log_cap;
}

/* byte offset in its part of record k's slot of arena a */
static uint64_t rec_off(const struct pma_fsck *f, unsigned a, uint64_t k)
{
	const struct pma_rec *slot = pma_booklog_slot(
		(struct pma_rec *)log_of(f, a), f->g.log_cap, k);

	return (uint64_t)((const char *)slot - f->base);
}

static int rec_valid(const struct pma_fsck *f, unsigned a, uint64_t k)
{
	uint64_t payload, value;
	unsigned type;

	return pma_booklog_decode(log_of(f, a), f->g.log_cap, k, &type,
				  &payload, &value) == 0;
}

static const struct pma_arena_desc *desc_of(const struct pma_fsck *f,
					    unsigned a)
{
	return (const struct pma_arena_desc *)(const void *)(f->base +
							     f->region_off +
							     f->g.arena_off) +
	       a;
}

/* the arena's current head: its check, and that it follows a record; a
 * head that fails is left to drop_fsck (after every other arena's log) */
static int head_fsck(struct pma_fsck *f, unsigned a)
{
	const struct pma_arena_desc *d = desc_of(f, a);
	struct pma_fsck_arena *ar = &f->arenas[a];
	uint64_t gen = f->gen, lgen, slot, h;

	/* version 8: the arena's generation is head_gen + its lgen */
	if (f->hdr->version >= PMA_HEAP_VERSION_LOCAL) {
		if (pma_check_lgen_decode(d->lgen, a, &lgen)) {
			/* a drop seals the generation of the word's value */
			ar->bad = PMA_FSCK_HEAD_GEN;
			ar->gen = (gen + (d->lgen & PMA_GEN_MASK)) &
				  PMA_GEN_MASK;
			return 0;
		}
		gen = (gen + lgen) & PMA_GEN_MASK;
	}
	ar->gen = gen;
	slot = gen & 1;
	h = d->head[slot];
	if (f->checked && d->check[slot] != pma_check_head(h, a, gen))
		ar->bad = PMA_FSCK_HEAD_CHECK;
	/* see head_check in recovery.c */
	else if (!pma_booklog_head_ok(log_of(f, a), f->g.log_cap, h))
		ar->bad = PMA_FSCK_HEAD_ORPHAN;
	if (ar->bad)
		return 0;
	ar->head = h;
	ar->usable = 1;
	return 0;
}

int pma_fsck_slot_torn(const struct pma_rec *log, uint32_t cap, uint64_t k)
{
	const struct pma_rec *s =
		pma_booklog_slot((struct pma_rec *)log, cap, k);
	uint64_t lap = k / cap;
	int e = (s->word0 & PMA_REC_EPOCH_MASK << PMA_REC_EPOCH_SHIFT) ==
		pma_booklog_lap_epoch(lap);
	int t = (s->word1 & PMA_REC_TAG_MASK) == pma_booklog_lap_tag(lap);

	return e != t;
}

static const char *op_where(const struct pma_fsck *f, unsigned a,
			    const struct pma_op *op, char *buf, size_t len);

/* damaged slots ahead of arena a's tail (after end_checked, the slot
 * tail_fsck looked at): one finding; --repair zeroes them all */
static int slots_ahead_fsck(struct pma_fsck *f, unsigned a,
			    uint64_t end_checked)
{
	struct pma_fsck_arena *ar = &f->arenas[a];
	uint32_t cap = f->g.log_cap;
	uint64_t k, first = 0, n = 0;
	int rc = 0;

	for (k = ar->tail + 1; f->checked && rc == 0 && k - ar->head < cap;
	     k++) {
		if (k == end_checked ||
		    !pma_booklog_slot_damaged(log_of(f, a), cap, k))
			continue;
		if (!n++)
			first = k;
		rc = pma_fsck_plan_zero_slot(
			f, pma_booklog_slot((struct pma_rec *)log_of(f, a), cap,
					    k));
	}
	if (rc == 0 && n)
		rc = pma_fsck_note(f, "repair-log-slot", rec_off(f, a, first),
				   "arena %u log: %llu damaged slots after the "
				   "end of the log (the first: record %llu at "
				   "0x%llx) are zeroed",
				   a, (unsigned long long)n,
				   (unsigned long long)first,
				   (unsigned long long)rec_off(f, a, first));
	if (rc < 0 || !n)
		return rc;
	return pma_fsck_report_flags(
		f, "log-slot-damaged", POOL_FSCK_ERROR, POOL_FSCK_REPAIRABLE,
		rec_off(f, a, first),
		"arena %u log: %llu slots after the end of the log (record "
		"%llu) hold a damaged record (the first: record %llu at "
		"0x%llx): once appends reach one, the log ends there and "
		"open refuses it",
		a, (unsigned long long)n, (unsigned long long)ar->tail,
		(unsigned long long)first,
		(unsigned long long)rec_off(f, a, first));
}

/*
 * --repair --advanced of a log that ends at record end with valid or
 * damaged records after it (which make open refuse the heap): each
 * operation after the end is told as lost, then the slots after the end
 * are zeroed last first (until the last, the log still ends at end with
 * records after it: as before), and the one at end last. Not when one of
 * them is the slot of the record the head follows (head - 1 + cap, the
 * same slot as head - 1): zeroing it orphans the head, and no single
 * store can make it a record of the previous lap again. Returns
 * POOL_FSCK_ADVANCED if the cut can be made, 0 if not, or -errno.
 */
static int log_drop(struct pma_fsck *f, unsigned a, uint64_t end)
{
	struct pma_fsck_arena *ar = &f->arenas[a];
	uint32_t cap = f->g.log_cap;
	const struct pma_rec *slot;
	uint64_t k, last = end;
	struct pma_op op;
	char where[160];
	int rc = 0;

	for (k = end + 1; k - ar->head < cap; k++)
		if (rec_valid(f, a, k) ||
		    pma_booklog_slot_damaged(log_of(f, a), cap, k))
			last = k;
	if (ar->head && last >= ar->head - 1 + cap)
		return 0;
	if (!f->plan || !(f->plan->flags & PMA_FSCK_ADVANCED))
		return POOL_FSCK_ADVANCED;
	for (k = end; rc == 0 && k <= last; k++) {
		if (pma_booklog_read_op(log_of(f, a), cap, k, f->osh, &op)) {
			if (k == end || !rec_valid(f, a, k))
				rc = pma_fsck_note(
					f, "repair-drops-record",
					rec_off(f, a, k),
					"arena %u log record %llu at 0x%llx "
					"(unreadable): dropped, its operation "
					"(if any) is lost",
					a, (unsigned long long)k,
					(unsigned long long)rec_off(f, a, k));
			continue;
		}
		rc = pma_fsck_note(
			f, "repair-drops-record", rec_off(f, a, k),
			"%s: 0x%llx, dest 0x%llx: dropped, the operation is "
			"lost",
			op_where(f, a, &op, where, sizeof(where)),
			(unsigned long long)op.off,
			(unsigned long long)op.dest);
	}
	for (k = last + 1; rc == 0 && k-- > end;) {
		slot = pma_booklog_slot((struct pma_rec *)log_of(f, a), cap, k);
		if (k == end || rec_valid(f, a, k) ||
		    pma_booklog_slot_damaged(log_of(f, a), cap, k))
			rc = pma_fsck_plan_zero_slot(f, slot);
	}
	return rc < 0 ? rc : POOL_FSCK_ADVANCED;
}

/* where the log ends: damage (see tail_check and log_end_check in
 * recovery.c), or a torn last append, which recovery drops */
static int tail_fsck(struct pma_fsck *f, unsigned a)
{
	struct pma_fsck_arena *ar = &f->arenas[a];
	uint32_t cap = f->g.log_cap;
	uint64_t k = ar->tail, end_checked;
	unsigned type;
	int rc;

	if (k - ar->head < cap && rec_valid(f, a, k))
		k++; /* the first half of an extent op without its length */
	end_checked = k;
	if (f->checked && k - ar->head < cap &&
	    pma_booklog_type_unknown(log_of(f, a), cap, k, &type)) {
		rc = log_drop(f, a, k);
		return rc < 0 ? rc :
				pma_fsck_report_flags(
					f, "log-record-type", POOL_FSCK_ERROR,
					(unsigned)rc, rec_off(f, a, k),
					"arena %u log record %llu at 0x%llx "
					"has unknown record type %u (written "
					"whole, its checksum is valid): the "
					"log ends there and the ops after it "
					"are lost",
					a, (unsigned long long)k,
					(unsigned long long)rec_off(f, a, k),
					type);
	}
	if (f->checked && k - ar->head < cap &&
	    pma_booklog_slot_damaged(log_of(f, a), cap, k)) {
		rc = log_drop(f, a, k);
		return rc < 0 ?
			       rc :
			       pma_fsck_report_flags(
				       f, "log-record-damaged", POOL_FSCK_ERROR,
				       (unsigned)rc, rec_off(f, a, k),
				       "arena %u log record %llu at 0x%llx is "
				       "damaged (written whole, fails its "
				       "checksum): the log ends there and the "
				       "ops after it are lost",
				       a, (unsigned long long)k,
				       (unsigned long long)rec_off(f, a, k));
	}
	for (k = ar->tail + 2; k - ar->head < cap; k++)
		if (rec_valid(f, a, k)) {
			rc = log_drop(f, a, ar->tail);
			return rc < 0 ? rc :
					pma_fsck_report_flags(
						f, "log-record-after-end",
						POOL_FSCK_ERROR, (unsigned)rc,
						rec_off(f, a, ar->tail),
						"arena %u log: record %llu at "
						"0x%llx is invalid but record "
						"%llu after it is valid "
						"(corrupt log)",
						a, (unsigned long long)ar->tail,
						(unsigned long long)rec_off(
							f, a, ar->tail),
						(unsigned long long)k);
		}
	/* slots ahead: each holds the previous lap's record (or nothing);
	 * a damaged one ends the log with an error once appends reach it */
	rc = slots_ahead_fsck(f, a, end_checked);
	if (rc < 0 || f->sink->rc < 0)
		return rc;
	rc = 0;
	if (ar->tail - ar->head < cap &&
	    pma_fsck_slot_torn(log_of(f, a), cap, ar->tail))
		rc = pma_fsck_report(
			f, "log-torn-tail", POOL_FSCK_INFO,
			rec_off(f, a, ar->tail),
			"arena %u log record %llu at 0x%llx is torn (an "
			"append a crash interrupted): recovery drops it",
			a, (unsigned long long)ar->tail,
			(unsigned long long)rec_off(f, a, ar->tail));
	return rc;
}

/* ------------------------------------------------------------ drop */

/* the largest index of a valid record of arena a's log in [base - cap,
 * base + 2 cap], and the run after it: one past its last valid record
 * (0 if none is valid). A valid index names a record really written
 * there (its slot holds that lap's epoch and tag and its checksum binds
 * the index), so every base near the log's records finds the same end. */
static uint64_t drop_end_near(const struct pma_fsck *f, unsigned a,
			      uint64_t base)
{
	uint32_t cap = f->g.log_cap;
	uint64_t lo = base > cap ? base - cap : 0, k, e;

	if (base > UINT64_MAX - 3ULL * cap)
		return 0;
	/* two valid records in a row (or the log's first): a damaged slot
	 * far from the log that passes as a record of a far lap (its
	 * epoch, tag and 8-bit checksum matching by chance) is not taken */
	for (k = base + 2ULL * cap + 1;
	     k > lo &&
	     (!rec_valid(f, a, k - 1) || (k > 1 && !rec_valid(f, a, k - 2)));
	     k--)
		;
	if (k == lo) /* none is valid */
		return 0;
	for (e = k; e - k < cap && rec_valid(f, a, e); e++)
		;
	return e;
}

#define DROP_NONE UINT64_MAX /* drop_end: no end found */

/* arena a's log holds only the lap 0 a format writes (format_logs in
 * heap.c: record k in slot k, SLAB_FREE, zero words), or zeros (an open
 * clears the slots at its tail, clear_tail in recovery.c), and no op of
 * its own: an arena no thread used, whose head can only be log_cap */
static int log_format_only(const struct pma_fsck *f, unsigned a)
{
	const struct pma_rec *log = log_of(f, a), *slot;
	uint64_t k, payload, value;
	unsigned type;

	for (k = 0; k < f->g.log_cap; k++) {
		slot = pma_booklog_slot((struct pma_rec *)log, f->g.log_cap, k);
		if (!slot->word0 && !slot->word1)
			continue;
		if (pma_booklog_decode(log, f->g.log_cap, k, &type, &payload,
				       &value) ||
		    type != PMA_REC_SLAB_FREE || payload || value)
			return 0;
	}
	return 1;
}

/* no slot of arena a's log was ever written (an arena no thread used):
 * its head can only be 0 */
static int log_unwritten(const struct pma_fsck *f, unsigned a)
{
	const struct pma_rec *log = log_of(f, a);
	uint32_t j;

	for (j = 0; j < f->g.log_cap; j++)
		if (log[j].word0 || log[j].word1)
			return 0;
	return 1;
}

/*
 * Where a drop of arena a's log sets its head: one past the last valid
 * record, found from the other head slot if it passes its check for
 * the generation before or after the current one (the previous head, or
 * one a checkpoint staged before the crash), else from the current
 * slot's damaged head, else from the other slot's head all the same; 0
 * for a log never written, DROP_NONE if no valid record is near them.
 */
static uint64_t drop_end(const struct pma_fsck *f, unsigned a)
{
	const struct pma_arena_desc *d = desc_of(f, a);
	const struct pma_fsck_arena *ar = &f->arenas[a];
	unsigned cur = (unsigned)(ar->gen & 1), o = cur ^ 1;
	uint64_t e = 0, g0 = (ar->gen - 1) & PMA_GEN_MASK,
		 g1 = (ar->gen + 1) & PMA_GEN_MASK;

	if (ar->bad != PMA_FSCK_HEAD_GEN &&
	    (!f->checked || d->check[o] == pma_check_head(d->head[o], a, g0) ||
	     d->check[o] == pma_check_head(d->head[o], a, g1)))
		e = drop_end_near(f, a, d->head[o]);
	if (!e)
		e = drop_end_near(f, a, d->head[cur]);
	/* its check failed too: still a place to look from (what is found
	 * there is a record of the log all the same) */
	if (!e)
		e = drop_end_near(f, a, d->head[o]);
	return e ? e : log_unwritten(f, a) ? 0 : DROP_NONE;
}

static int off_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/*
 * The frees in the other arenas' windows of a block or extent that a
 * record of the dropped range [from, e) of arena a allocates (an RFREE,
 * an EXT_FREE): if that allocation was after the true head, the drop
 * loses it and the free is replayed over a block the heap's image shows
 * free, which recovery (a blind clear) and the check accept: the block
 * ends free, as the program left it. Each is told.
 */
static int drop_frees(struct pma_fsck *f, unsigned a, uint64_t from, uint64_t e)
{
	uint32_t cap = f->g.log_cap;
	uint64_t *offs = NULL, k;
	size_t n = 0, max = 0;
	struct pma_op op;
	char where[160];
	unsigned b;
	int rc = 0;

	for (k = from; k < e; k++) {
		if (pma_booklog_read_op(log_of(f, a), cap, k, f->osh, &op) ||
		    (op.type != PMA_REC_ALLOC && op.type != PMA_REC_EXT_ALLOC))
			continue;
		if (n == max) {
			uint64_t *more;

			max = max ? 2 * max : 64;
			more = realloc(offs, max * sizeof(*offs));
			if (!more) {
				free(offs);
				return util_errmsg_set(ENOMEM, "out of memory");
			}
			offs = more;
		}
		offs[n++] = op.off;
	}
	if (n)
		qsort(offs, n, sizeof(*offs), off_cmp);
	for (b = 0; n && rc == 0 && b < f->g.narenas; b++) {
		const struct pma_fsck_arena *br = &f->arenas[b];

		if (b == a || !br->usable || br->dropped)
			continue;
		for (k = br->head; rc == 0 && k < br->tail; k += op.nrecs) {
			if (pma_booklog_read_op(log_of(f, b), cap, k, f->osh,
						&op))
				break;
			if ((op.type != PMA_REC_RFREE &&
			     op.type != PMA_REC_EXT_FREE) ||
			    !bsearch(&op.off, offs, n, sizeof(*offs), off_cmp))
				continue;
			rc = pma_fsck_note(
				f, "repair-drops-arena-free", rec_off(f, b, k),
				"%s frees 0x%llx, which a dropped record of "
				"arena %u allocates: replayed (if the "
				"allocation was lost, the block ends free, as "
				"the free left it)",
				op_where(f, b, &op, where, sizeof(where)),
				(unsigned long long)op.off, a);
		}
	}
	free(offs);
	return rc;
}

/* the stores of a drop: the head, then its check, then (a damaged
 * generation word) the generation: until the last the arena's head
 * fails as before */
static int drop_plan(struct pma_fsck *f, unsigned a, uint64_t e)
{
	const struct pma_arena_desc *d = desc_of(f, a);
	const struct pma_fsck_arena *ar = &f->arenas[a];
	uint64_t off = (uint64_t)((const char *)d - f->base), lgen, chk;
	unsigned cur = (unsigned)(ar->gen & 1);
	int rc = 0;

	if (d->head[cur] != e)
		rc = pma_fsck_plan_store(
			f,
			off + __builtin_offsetof(struct pma_arena_desc, head) +
				8ULL * cur,
			e);
	chk = pma_check_head(e, a, ar->gen);
	if (rc == 0 && f->checked && d->check[cur] != chk)
		rc = pma_fsck_plan_store(
			f,
			off + __builtin_offsetof(struct pma_arena_desc, check) +
				8ULL * cur,
			chk);
	lgen = pma_check_lgen(d->lgen & PMA_GEN_MASK, a);
	if (rc == 0 && ar->bad == PMA_FSCK_HEAD_GEN && d->lgen != lgen)
		rc = pma_fsck_plan_store(
			f,
			off + __builtin_offsetof(struct pma_arena_desc, lgen),
			lgen);
	return rc;
}

/* --advanced: what a drop of arena a's log loses (the operations of its
 * records [from, e): possibly lost), the other arenas' frees that name
 * what they allocate, and the stores */
static int drop_lost(struct pma_fsck *f, unsigned a, uint64_t from, uint64_t e)
{
	uint64_t off = (uint64_t)((const char *)desc_of(f, a) - f->base), k,
		 lost = 0;
	struct pma_op op;
	char where[160];
	int rc = 0;

	for (k = from; rc == 0 && k < e; k++) {
		if (pma_booklog_read_op(log_of(f, a), f->g.log_cap, k, f->osh,
					&op))
			continue; /* a record of an older lap */
		lost++;
		rc = pma_fsck_note(f, "repair-drops-arena-record",
				   rec_off(f, a, k),
				   "%s: 0x%llx, dest 0x%llx: before the new "
				   "head, not replayed: the operation is "
				   "possibly lost",
				   op_where(f, a, &op, where, sizeof(where)),
				   (unsigned long long)op.off,
				   (unsigned long long)op.dest);
		k += op.nrecs - 1;
	}
	if (rc == 0)
		rc = drop_frees(f, a, from, e);
	if (rc == 0)
		rc = drop_plan(f, a, e);
	if (rc == 0)
		rc = pma_fsck_note(f, "repair-drops-arena", off,
				   "arena %u: head set to %llu, one past its "
				   "log's last valid record: its window is "
				   "empty, the %llu operations listed are "
				   "possibly lost",
				   a, (unsigned long long)e,
				   (unsigned long long)lost);
	return rc;
}

/* what a drop of a log at e loses, records [from, e) (fresh: a log
 * never written, nothing) */
static void drop_how(uint64_t e, uint64_t from, int fresh, char *how,
		     size_t len)
{
	if (fresh)
		snprintf(how, len,
			 "its log was never written: head set to %llu, "
			 "nothing is lost",
			 (unsigned long long)e);
	else
		snprintf(how, len,
			 "head set to record %llu, its end: the operations "
			 "of its last %llu records are possibly lost",
			 (unsigned long long)e, (unsigned long long)(e - from));
}

/*
 * An arena whose head is not known (its generation word or its head
 * fails its check, or the head follows no record): its window's start is
 * unknown, so its log is not replayed. --repair --advanced drops it:
 * the head set to E, one past the log's last valid record, so the
 * window is empty; every valid record of the ring before E is told as
 * possibly lost (the ones before the true head were checkpointed, which
 * fsck cannot tell apart), and the other arenas' frees of blocks they
 * allocate (drop_frees). The walk goes on as after the drop (the arena's
 * log from E: its tail and the slots ahead checked), so what the heap
 * would hold then (a bank a checkpoint sealed inside the window, which
 * nothing replays any more) is checked and repaired (a bank rebuild) or
 * refused by its own finding. Without a valid record near the heads:
 * not repairable.
 */
static int drop_fsck(struct pma_fsck *f, unsigned a)
{
	static const char *const codes[] = { "", "arena-gen-check",
					     "arena-head-check",
					     "arena-head-orphan" };
	const struct pma_arena_desc *d = desc_of(f, a);
	struct pma_fsck_arena *ar = &f->arenas[a];
	uint32_t cap = f->g.log_cap;
	uint64_t off = (uint64_t)((const char *)d - f->base), e, from;
	uint64_t h = d->head[ar->gen & 1];
	char what[192];
	unsigned flags = 0;
	int rc = 0, fresh;

	if (ar->bad == PMA_FSCK_HEAD_GEN)
		snprintf(what, sizeof(what),
			 "generation word 0x%llx fails its check",
			 (unsigned long long)d->lgen);
	else if (ar->bad == PMA_FSCK_HEAD_CHECK)
		snprintf(what, sizeof(what),
			 "head %llu fails its check (generation %llu)",
			 (unsigned long long)h, (unsigned long long)ar->gen);
	else
		snprintf(what, sizeof(what),
			 "head %llu does not follow a record of its log",
			 (unsigned long long)h);
	e = drop_end(f, a);
	fresh = e == 0 || (e == cap && log_format_only(f, a));
	from = fresh ? e : e != DROP_NONE && e > cap ? e - cap : 0;
	if (e != DROP_NONE && f->plan && (f->plan->flags & PMA_FSCK_ADVANCED)) {
		rc = drop_lost(f, a, from, e);
		if (rc < 0)
			return rc;
	}
	if (e != DROP_NONE) {
		char how[128];

		drop_how(e, from, fresh, how, sizeof(how));
		flags = POOL_FSCK_ADVANCED;
		rc = pma_fsck_report_flags(
			f, codes[ar->bad], POOL_FSCK_ERROR, flags,
			ar->bad == PMA_FSCK_HEAD_GEN ?
				off + __builtin_offsetof(struct pma_arena_desc,
							 lgen) :
				off,
			"arena %u descriptor at 0x%llx: %s: the start of its "
			"window is unknown, so its log is not replayed and "
			"open refuses the heap; --repair --advanced drops the "
			"arena's log (%s)",
			a, (unsigned long long)off, what, how);
	} else {
		rc = pma_fsck_report(
			f, codes[ar->bad], POOL_FSCK_ERROR,
			ar->bad == PMA_FSCK_HEAD_GEN ?
				off + __builtin_offsetof(struct pma_arena_desc,
							 lgen) :
				off,
			"arena %u descriptor at 0x%llx: %s: its log is not "
			"checked, and --advanced cannot drop it either: no "
			"valid record of its log is near its heads to find "
			"the log's end from",
			a, (unsigned long long)off, what);
	}
	if (rc < 0 || e == DROP_NONE || f->sink->rc < 0)
		return rc;
	/* the walk goes on as after the drop */
	ar->head = e;
	ar->tail = e;
	ar->usable = 1;
	ar->dropped = 1;
	return tail_fsck(f, a);
}

static int arenas_fsck(struct pma_fsck *f)
{
	unsigned a;
	int rc = 0;

	for (a = 0; rc == 0 && a < f->g.narenas; a++) {
		rc = head_fsck(f, a);
		if (rc < 0 || !f->arenas[a].usable)
			continue;
		f->arenas[a].tail = pma_booklog_find_tail(
			log_of(f, a), f->g.log_cap, f->arenas[a].head);
		rc = tail_fsck(f, a);
	}
	/* the heads that failed, once the other arenas' windows are known */
	for (a = 0; rc == 0 && a < f->g.narenas; a++)
		if (f->arenas[a].bad)
			rc = drop_fsck(f, a);
	return rc;
}

/* ------------------------------------------------------------ window */

struct op_list {
	struct pma_op *ops;
	unsigned *arena;
	size_t count, alloc;
};

static int op_list_push(struct op_list *l, const struct pma_op *op, unsigned a)
{
	struct pma_op *ops;
	unsigned *ar;
	size_t n;

	if (l->count == l->alloc) {
		n = l->alloc ? 2 * l->alloc : 64;
		ops = realloc(l->ops, n * sizeof(*ops));
		if (ops)
			l->ops = ops;
		ar = ops ? realloc(l->arena, n * sizeof(*ar)) : NULL;
		if (!ar)
			return util_errmsg_set(ENOMEM, "out of memory");
		l->arena = ar;
		l->alloc = n;
	}
	l->ops[l->count] = *op;
	l->arena[l->count++] = a;
	return 0;
}

/* "arena A record K at 0x...: " into buf */
static const char *op_where(const struct pma_fsck *f, unsigned a,
			    const struct pma_op *op, char *buf, size_t len)
{
	snprintf(buf, len, "arena %u log record %llu (%s) at 0x%llx", a,
		 (unsigned long long)op->index, pma_booklog_type_name(op->type),
		 (unsigned long long)rec_off(f, a, op->index));
	return buf;
}

static void pmap_set(struct pma_fsck *f, uint64_t page, uint64_t e)
{
	f->pmap[page] = f->checked ? pma_check_pmap(e, page) : e;
	f->written[page / 64] |= 1ULL << (page % 64);
}

/* the page of a byte offset in the data area, or -1 */
static int64_t page_of(const struct pma_fsck *f, uint64_t off)
{
	if (off < f->data_base ||
	    (off - f->data_base) >> PMA_PAGE_SHIFT >= f->g.npages)
		return -1;
	return (int64_t)((off - f->data_base) >> PMA_PAGE_SHIFT);
}

/* the block index of byte offset off in slab s, or -1 (a header that
 * does not match its class names no block) */
static int64_t block_of(const struct pma_fsck *f, const struct pma_fsck_slab *s,
			uint64_t chunk, uint64_t off)
{
	const struct pma_slab_hdr *h = &s->hdr;
	uint64_t rel = off - pma_fsck_page_off(f, chunk * PMA_CHUNK_PAGES);

	if (h->magic != PMA_SLAB_MAGIC || h->cls >= f->nclasses ||
	    h->block_size != pma_class_size(h->cls) ||
	    h->nblocks != pma_class_nblocks(h->cls) ||
	    rel < PMA_SLAB_HDR_SIZE ||
	    (rel - PMA_SLAB_HDR_SIZE) % h->block_size ||
	    (rel - PMA_SLAB_HDR_SIZE) / h->block_size >= h->nblocks)
		return -1;
	return (int64_t)((rel - PMA_SLAB_HDR_SIZE) / h->block_size);
}

int pma_fsck_block_of(const struct pma_fsck *f, const struct pma_fsck_slab *s,
		      uint64_t chunk, uint64_t off)
{
	return (int)block_of(f, s, chunk, off);
}

/* version 9, before a block op of slab s (chunk) is applied: 1 if it is
 * done (an old block's, or one deferred to a SLAB_MORPH later in the
 * window: pma_fsck_old_op, torn_rec), else 0, or 2 for the current
 * class's op whose block's state before the window is unsure */
static int op_block_morph(struct pma_fsck *f, unsigned a,
			  const struct pma_op *op, int on,
			  struct pma_fsck_slab *s, uint64_t chunk)
{
	int rc = 0;

	if (f->hdr->version < PMA_HEAP_VERSION_MORPH)
		return 0;
	if (s->hdr.morph_from)
		rc = pma_fsck_old_op(
			s,
			op->off - pma_fsck_page_off(f, chunk * PMA_CHUNK_PAGES),
			on);
	if (rc == 1 || block_of(f, s, chunk, op->off) >= 0 ||
	    s->hdr.magic != PMA_SLAB_MAGIC || s->morphed)
		return rc;
	/* an old class's op over a header torn between its class and
	 * morph_from: the SLAB_MORPH must come (checked at the end) */
	if (!s->torn_rec) {
		s->torn_rec = rec_off(f, a, op->index) + 1;
		s->torn_off = op->off;
		s->torn_arena = a;
	}
	return 1;
}

static int op_block(struct pma_fsck *f, unsigned a, const struct pma_op *op,
		    int on)
{
	int64_t page = page_of(f, op->off), idx;
	struct pma_fsck_slab *s;
	uint64_t mask, chunk;
	unsigned l, w;
	char where[160];
	int unsure;

	op_where(f, a, op, where, sizeof(where));
	if (page < 0)
		return pma_fsck_report(f, "log-op-range", POOL_FSCK_ERROR,
				       rec_off(f, a, op->index),
				       "%s names 0x%llx, outside the data area",
				       where, (unsigned long long)op->off);
	chunk = (uint64_t)page / PMA_CHUNK_PAGES;
	s = pma_fsck_slab_get(f, chunk);
	if (!s)
		return util_errmsg_set(ENOMEM, "out of memory");
	unsure = op_block_morph(f, a, op, on, s, chunk);
	if (unsure == 1)
		return 0;
	idx = block_of(f, s, chunk, op->off);
	if (idx < 0)
		return pma_fsck_report(f, "log-op-target", POOL_FSCK_ERROR,
				       rec_off(f, a, op->index),
				       "%s names 0x%llx, not a block of a "
				       "valid slab",
				       where, (unsigned long long)op->off);
	l = (unsigned)(idx % PMA_NBANKS);
	w = (unsigned)(idx / PMA_NBANKS / 64);
	mask = 1ULL << (idx / PMA_NBANKS % 64);
	if (!(s->touched[l][w] & mask)) { /* its first op in the window */
		s->touched[l][w] |= mask;
		if (unsure)
			s->unsure[l][w] |= mask;
		else if (!on)
			s->pre[l][w] |= mask;
	} else if (op->type == PMA_REC_RFREE && (s->synced[l][w] & mask) &&
		   !(s->cur[l][w] & mask)) {
		/* its owner applied it (phase 2) before this replay */
		s->synced[l][w] &= ~mask;
		return 0;
	} else if (!!(s->cur[l][w] & mask) == on) {
		return pma_fsck_report(f, "log-block-conflict", POOL_FSCK_ERROR,
				       rec_off(f, a, op->index),
				       "%s: block 0x%llx is already %s there",
				       where, (unsigned long long)op->off,
				       on ? "allocated" : "free");
	}
	if (on)
		s->cur[l][w] |= mask;
	else
		s->cur[l][w] &= ~mask;
	if (s->nops[l] < PMA_CHECK_OPS)
		s->ops[l][s->nops[l]] =
			(uint16_t)((w * 64 + (unsigned)__builtin_ctzll(mask)) |
				   (on ? PMA_CHECK_OP_SET : 0));
	s->nops[l]++;
	if (op->type == PMA_REC_SYNC_FREE)
		s->synced[l][w] |= mask;
	else if (on)
		s->synced[l][w] &= ~mask;
	if (f->checked && !s->mid[l] &&
	    s->pm_check[l] ==
		    pma_check_bank(
			    s->cur[l],
			    pma_fsck_page_off(f, chunk * PMA_CHUNK_PAGES), l))
		s->mid[l] = 1;
	return 0;
}

/* SLAB_NEW / SLAB_FREE: a chunk of the data area, a class and owner */
static int op_slab(struct pma_fsck *f, unsigned a, const struct pma_op *op)
{
	int64_t page = page_of(f, op->off);
	struct pma_fsck_slab *s;
	char where[160];
	unsigned l;

	op_where(f, a, op, where, sizeof(where));
	if (page < 0 || op->off != pma_fsck_page_off(f, (uint64_t)page) ||
	    page % PMA_CHUNK_PAGES ||
	    (uint64_t)page + PMA_CHUNK_PAGES > f->g.npages ||
	    op->cls >= f->nclasses || op->owner >= f->g.narenas)
		return pma_fsck_report(f, "log-op-invalid", POOL_FSCK_ERROR,
				       rec_off(f, a, op->index),
				       "%s: slab 0x%llx, class %u, arena %u is "
				       "not a slab this heap can have",
				       where, (unsigned long long)op->off,
				       op->cls, op->owner);
	s = pma_fsck_slab_get(f, (uint64_t)page / PMA_CHUNK_PAGES);
	if (!s)
		return util_errmsg_set(ENOMEM, "out of memory");
	if (op->type == PMA_REC_SLAB_FREE) {
		if (s->hdr.magic != PMA_SLAB_MAGIC || s->hdr.cls != op->cls ||
		    s->hdr.owner != op->owner)
			return pma_fsck_report(
				f, "log-op-invalid", POOL_FSCK_ERROR,
				rec_off(f, a, op->index),
				"%s names no slab of class %u, arena %u at "
				"0x%llx",
				where, op->cls, op->owner,
				(unsigned long long)op->off);
		pmap_set(f, (uint64_t)page, 0);
		return 0;
	}
	memset(s, 0, sizeof(*s));
	s->hdr.magic = PMA_SLAB_MAGIC;
	s->hdr.cls = (uint16_t)op->cls;
	s->hdr.owner = (uint16_t)op->owner;
	s->hdr.block_size = pma_class_size(op->cls);
	s->hdr.nblocks = pma_class_nblocks(op->cls);
	s->fresh = 1;
	for (l = 0; l < PMA_NBANKS; l++) /* every bit starts clear */
		memset(s->touched[l], 0xff, sizeof(s->touched[l]));
	pmap_set(f, (uint64_t)page, pma_pmap_make_slab(op->cls, op->owner));
	return 0;
}

/* version 9, SLAB_MORPH: a slab of the owner of class old_cls (or
 * already cls: a checkpoint wrote a later state) becomes a mixed slab of
 * class cls; its old bitmap is on media (written before the record), its
 * live bitmap starts empty */
static int op_morph(struct pma_fsck *f, unsigned a, const struct pma_op *op)
{
	int64_t page = page_of(f, op->off);
	struct pma_fsck_slab *s;
	char where[160];
	unsigned l;

	op_where(f, a, op, where, sizeof(where));
	if (page < 0 || op->off != pma_fsck_page_off(f, (uint64_t)page) ||
	    page % PMA_CHUNK_PAGES ||
	    (uint64_t)page + PMA_CHUNK_PAGES > f->g.npages ||
	    op->cls >= f->nclasses || op->old_cls >= f->nclasses ||
	    op->cls == op->old_cls || op->owner >= f->g.narenas)
		return pma_fsck_report(f, "log-op-invalid", POOL_FSCK_ERROR,
				       rec_off(f, a, op->index),
				       "%s: slab 0x%llx, class %u from %u, "
				       "arena %u is not a morph this heap can "
				       "have",
				       where, (unsigned long long)op->off,
				       op->cls, op->old_cls, op->owner);
	s = pma_fsck_slab_get(f, (uint64_t)page / PMA_CHUNK_PAGES);
	if (!s)
		return util_errmsg_set(ENOMEM, "out of memory");
	if (s->hdr.magic != PMA_SLAB_MAGIC || s->hdr.owner != op->owner ||
	    (s->hdr.cls != op->old_cls && s->hdr.cls != op->cls))
		return pma_fsck_report(
			f, "slab-morph-log", POOL_FSCK_ERROR,
			rec_off(f, a, op->index),
			"%s: slab 0x%llx is no slab of class %u or %u of arena "
			"%u (its header: class %u, arena %u)",
			where, (unsigned long long)op->off, op->old_cls,
			op->cls, op->owner, s->hdr.cls, s->hdr.owner);
	s->hdr.cls = (uint16_t)op->cls;
	s->hdr.block_size = pma_class_size(op->cls);
	s->hdr.nblocks = pma_class_nblocks(op->cls);
	s->hdr.morph_from = (uint16_t)(op->old_cls + 1);
	s->morphed = 1;
	s->torn_rec = 0; /* the ops before it were the old class's */
	/* the live bitmap starts again: every bit of it is the window's,
	 * as before it on media (pre) where no earlier op touched it */
	for (l = 0; l < PMA_NBANKS; l++) {
		unsigned w;

		for (w = 0; w < PMA_SLAB_BANK_WORDS; w++) {
			s->pre[l][w] |= s->pm[l][w] & ~s->touched[l][w];
			s->touched[l][w] = ~0ULL;
			s->cur[l][w] = 0;
			s->synced[l][w] = 0;
		}
	}
	pmap_set(f, (uint64_t)page, pma_pmap_make_slab(op->cls, op->owner));
	return 0;
}

static int op_extent(struct pma_fsck *f, unsigned a, const struct pma_op *op)
{
	int64_t page = page_of(f, op->off);
	char where[160];

	if (page < 0 || op->off % PMA_PAGE || !op->npages ||
	    op->npages > f->g.npages - (uint64_t)page)
		return pma_fsck_report(
			f, "log-op-range", POOL_FSCK_ERROR,
			rec_off(f, a, op->index),
			"%s: extent 0x%llx of %llu pages is not in the data "
			"area",
			op_where(f, a, op, where, sizeof(where)),
			(unsigned long long)op->off,
			(unsigned long long)op->npages);
	pmap_set(f, (uint64_t)page,
		 op->type == PMA_REC_EXT_ALLOC ?
			 pma_pmap_make(PMA_PMAP_EXTENT, op->npages) :
			 0);
	return 0;
}

/* a record type the heap's version cannot hold (a reader of that version
 * would take it for the end of the log) */
static int op_version_bad(const struct pma_fsck *f, const struct pma_op *op)
{
	uint32_t v = f->hdr->version;

	if (op->type == PMA_REC_SLAB_FREE)
		return v < PMA_HEAP_VERSION_SLAB_FREE;
	if (op->type == PMA_REC_SYNC_FREE)
		return v < PMA_HEAP_VERSION_LOCAL;
	if (op->type == PMA_REC_SLAB_MORPH)
		return v < PMA_HEAP_VERSION_MORPH;
	if (op->type == PMA_REC_XFREE)
		return v < PMA_HEAP_VERSION_XFREE;
	return pma_rec_is_ext(op->type) && op->nrecs == 1 &&
	       v < PMA_HEAP_VERSION_EXT1;
}

/* a dest word recovery refuses (pma_heap_dest_addr): misaligned, in a
 * part's headers, in the metadata of the heap of its part (any part's)
 * other than the root word, or not inside a part */
static int dest_bad(const struct pma_fsck *f, uint64_t dest)
{
	uint64_t b = pool_off_byte(dest);
	const struct pma_fsck *q;

	if (b < POOL_DATA_OFF || dest % sizeof(uint64_t))
		return 1;
	q = pma_fsck_route(f->set, dest);
	if (q && q->meta_hi && b >= q->meta_lo && b < q->meta_hi &&
	    b != q->meta_lo + PMA_ROOT_WORD_OFF)
		return 1;
	return !pool_direct(f->pool, dest) ||
	       !pool_direct(f->pool, dest + sizeof(uint64_t) - 1);
}

/* an XFREE (version 10) names a block of another part's heap, which
 * recovery frees there after every part's window (recovery.c,
 * xfree_recover; a block already free there was applied by its owner):
 * here only its place is checked */
static int op_xfree(struct pma_fsck *f, unsigned a, const struct pma_op *op)
{
	const struct pma_fsck *o =
		pma_fsck_route(f->set, pool_off_make(op->owner, op->off));
	char where[160];

	/* a heap not formatted yet holds no block (a writable open
	 * formats it, and its replay refuses an XFREE out of its data
	 * area) */
	if (o && o->part != f->part && o->present && o->unformatted)
		return pma_fsck_report(
			f, "log-op-range", POOL_FSCK_ERROR,
			rec_off(f, a, op->index),
			"%s names 0x%llx of part %u, whose heap is not "
			"formatted",
			op_where(f, a, op, where, sizeof(where)),
			(unsigned long long)op->off, op->owner);
	/* a heap whose header fails its check has its own finding: where
	 * its data area is is not known */
	if (o && o->part != f->part && o->present &&
	    (!o->meta_hi ||
	     (op->off >= o->meta_hi &&
	      (op->off - o->meta_hi) >> PMA_PAGE_SHIFT < o->npages_hint)))
		return 0;
	return pma_fsck_report(f, "log-op-range", POOL_FSCK_ERROR,
			       rec_off(f, a, op->index),
			       "%s names 0x%llx of part %u, not in the data "
			       "area of another part's heap",
			       op_where(f, a, op, where, sizeof(where)),
			       (unsigned long long)op->off, op->owner);
}

static int op_apply(struct pma_fsck *f, unsigned a, const struct pma_op *op)
{
	char where[160];

	if (op_version_bad(f, op))
		return pma_fsck_report(
			f, "log-op-version", POOL_FSCK_ERROR,
			rec_off(f, a, op->index),
			"%s: a heap of layout version %u has no such record",
			op_where(f, a, op, where, sizeof(where)),
			f->hdr->version);
	if (op->dest && op->type != PMA_REC_SLAB_NEW && dest_bad(f, op->dest))
		return pma_fsck_report(
			f, "log-op-dest", POOL_FSCK_ERROR,
			rec_off(f, a, op->index),
			"%s: dest word 0x%llx is not a word the heap can store "
			"to (the library never logs one; recovery refuses "
			"the log when it redoes that word)",
			op_where(f, a, op, where, sizeof(where)),
			(unsigned long long)op->dest);
	/* the root word is part 0's (another region's own is checked as
	 * recovery checks it: pma_fsck_root_other) */
	if ((op->type == PMA_REC_ALLOC || op->type == PMA_REC_EXT_ALLOC) &&
	    op->dest == pool_off_make(0, f->set->part[0].region_off +
						 PMA_ROOT_WORD_OFF))
		f->set->part[0].root_logged = 1;
	if ((op->type == PMA_REC_ALLOC || op->type == PMA_REC_EXT_ALLOC) &&
	    op->dest ==
		    pool_off_make(f->part, f->region_off + PMA_ROOT_WORD_OFF))
		f->root_logged = 1;
	switch (op->type) {
	case PMA_REC_ALLOC:
		return op_block(f, a, op, 1);
	case PMA_REC_FREE:
	case PMA_REC_RFREE:
	case PMA_REC_SYNC_FREE:
		return op_block(f, a, op, 0);
	case PMA_REC_XFREE:
		return op_xfree(f, a, op);
	case PMA_REC_SLAB_NEW:
	case PMA_REC_SLAB_FREE:
		return op_slab(f, a, op);
	case PMA_REC_SLAB_MORPH:
		return op_morph(f, a, op);
	default:
		return op_extent(f, a, op);
	}
}

/* phase 1: each log's own ops in log order (phase 2 ops kept in later) */
static int window_arena(struct pma_fsck *f, unsigned a, struct op_list *later)
{
	struct pma_fsck_arena *ar = &f->arenas[a];
	struct pma_op op;
	uint64_t k;
	int rc = 0;

	for (k = ar->head; rc == 0 && k < ar->tail; k += op.nrecs) {
		if (pma_booklog_read_op(log_of(f, a), f->g.log_cap, k, f->osh,
					&op))
			break; /* cannot happen below the tail */
		rc = pma_op_is_phase2(&op) ? op_list_push(later, &op, a) :
					     op_apply(f, a, &op);
	}
	return rc;
}

static int window_fsck(struct pma_fsck *f)
{
	struct op_list later = { 0 };
	unsigned a;
	size_t i;
	int rc = 0;

	for (a = 0; rc == 0 && a < f->g.narenas; a++)
		if (f->arenas[a].usable)
			rc = window_arena(f, a, &later);
	for (i = 0; rc == 0 && i < later.count; i++)
		rc = op_apply(f, later.arena[i], &later.ops[i]);
	free(later.ops);
	free(later.arena);
	return rc;
}

/* ------------------------------------------------------------ redo */

/* if pool offset dest is a word of the header or bitmap (the first
 * PMA_SLAB_HDR_SIZE bytes) of a slab of its part's heap after the
 * windows, the slab's byte offset in its part, else 0: allocator
 * metadata in the data area, which a dest word names only by damage (or
 * by a pointer into memory that became a slab since) */
static uint64_t fsck_pmap_entry(const void *q, uint64_t page)
{
	return ((const struct pma_fsck *)q)->pmap[page];
}

static uint64_t dest_in_slab_hdr(const struct pma_fsck_set *set, uint64_t dest)
{
	uint64_t b = pool_off_byte(dest), page;
	const struct pma_fsck *q;

	q = pma_fsck_route(set, dest);
	if (!q || !q->walked || b < q->data_base)
		return 0;
	/* the predicate recovery's dry run refuses with (recovery.c) */
	page = pma_slab_hdr_page(b - q->data_base, q->g.npages, fsck_pmap_entry,
				 q);
	return page == UINT64_MAX ? 0 : q->data_base + (page << PMA_PAGE_SHIFT);
}

/* recovery's redo ring of arena a (redo_push in recovery.c): its last
 * PMA_DEST_REDO runs of ops with a dest, an op on the word of the op
 * before it replacing it; the number of ops in ring */
static unsigned redo_ring_of(struct pma_fsck *f, unsigned a,
			     struct pma_op ring[PMA_DEST_REDO])
{
	const struct pma_fsck_arena *ar = &f->arenas[a];
	struct pma_op op;
	unsigned n = 0;
	uint64_t k;

	for (k = ar->head; k < ar->tail; k += op.nrecs) {
		if (pma_booklog_read_op(log_of(f, a), f->g.log_cap, k, f->osh,
					&op))
			break;
		if (op.type == PMA_REC_SLAB_NEW || !op.dest)
			continue;
		if (n && ring[n - 1].dest == op.dest) {
			ring[n - 1] = op;
			continue;
		}
		if (n == PMA_DEST_REDO) {
			memmove(&ring[0], &ring[1], (n - 1) * sizeof(ring[0]));
			n--;
		}
		ring[n++] = op;
	}
	return n;
}

/* the walk of the heap whose root word dest is, or NULL */
static struct pma_fsck *root_word_of(const struct pma_fsck_set *set,
				     uint64_t dest)
{
	struct pma_fsck *q = pma_fsck_route(set, dest);

	return q && q->hdr && q->meta_hi &&
			       pool_off_byte(dest) ==
				       q->meta_lo + PMA_ROOT_WORD_OFF ?
		       q :
		       NULL;
}

/* a redo through a heap's root word that recovery refuses (recovery.c,
 * redo_root_check): the root word is the dest of the root object's
 * allocation only, made once and never freed */
static int root_dest_fsck(struct pma_fsck *f, unsigned a,
			  const struct pma_op *op, int alloc)
{
	const struct pma_fsck *q = root_word_of(f->set, op->dest);
	uint64_t block = pool_off_make(f->part, op->off);
	char where[160];

	if (!alloc)
		return pma_fsck_report(
			f, "root-check", POOL_FSCK_ERROR,
			rec_off(f, a, op->index),
			"%s frees through the root word 0x%llx: the root "
			"object is never freed (recovery refuses the log)",
			op_where(f, a, op, where, sizeof(where)),
			(unsigned long long)op->dest);
	if (!q->hdr->root_off || q->hdr->root_off == block)
		return 0;
	return pma_fsck_report(
		f, "root-check", POOL_FSCK_ERROR, rec_off(f, a, op->index),
		"%s allocates 0x%llx to the root word 0x%llx, which holds "
		"the root 0x%llx (made once: recovery refuses the log)",
		op_where(f, a, op, where, sizeof(where)),
		(unsigned long long)block, (unsigned long long)op->dest,
		(unsigned long long)q->hdr->root_off);
}

/*
 * The ops recovery's redo stores to (redo_dest in recovery.c): a free of
 * the ring (it clears a word that does not name a live block), an
 * allocation of the ring whose block is live after the windows and that
 * no later op of the ring names. One whose dest word is in a slab's
 * header or bitmap would overwrite allocator metadata: log-op-dest (a
 * writable open's dry run refuses the log for it, redo_meta_check); one
 * through a root word recovery refuses: root-check (root_dest_fsck).
 */
static int redo_dest_fsck(struct pma_fsck *f, unsigned a)
{
	struct pma_op ring[PMA_DEST_REDO];
	unsigned i, j, n = redo_ring_of(f, a, ring);
	char where[160];
	int alloc, live, rc = 0;
	uint64_t slab;

	for (i = 0; rc == 0 && i < n; i++) {
		slab = dest_in_slab_hdr(f->set, ring[i].dest);
		if (!slab && !root_word_of(f->set, ring[i].dest))
			continue;
		alloc = ring[i].type == PMA_REC_ALLOC ||
			ring[i].type == PMA_REC_EXT_ALLOC;
		for (j = i + 1; alloc && j < n; j++)
			if (ring[j].off == ring[i].off &&
			    ring[j].type != PMA_REC_XFREE)
				break;
		if (alloc && j < n)
			continue;
		live = alloc ? pma_fsck_live_after(
				       f, pool_off_make(f->part, ring[i].off)) :
			       1;
		if (live < 0)
			return util_errmsg_set(-live, "out of memory");
		if (!live)
			continue;
		if (!slab) {
			rc = root_dest_fsck(f, a, &ring[i], alloc);
			continue;
		}
		rc = pma_fsck_report(
			f, "log-op-dest", POOL_FSCK_ERROR,
			rec_off(f, a, ring[i].index),
			"%s: dest word 0x%llx is in the header of the slab at "
			"0x%llx of part %u (allocator metadata): recovery's "
			"redo of the %s would overwrite it",
			op_where(f, a, &ring[i], where, sizeof(where)),
			(unsigned long long)ring[i].dest,
			(unsigned long long)slab, pool_off_part(ring[i].dest),
			alloc ? "allocation" : "free");
	}
	return rc;
}

/* every walked heap's redo rings, once every heap's window is replayed
 * (a dest word may be in another heap) */
static int redo_fsck(struct pma_fsck_set *set)
{
	struct pma_fsck *f;
	unsigned p, a;
	int rc = 0;

	for (p = 0; rc == 0 && p < PMA_MAX_SLOTS; p++) {
		f = &set->part[p];
		for (a = 0; f->walked && rc == 0 && a < f->g.narenas; a++)
			if (f->arenas[a].usable)
				rc = redo_dest_fsck(f, a);
	}
	return rc;
}

/* ------------------------------------------------------------ driver */

static int walk_alloc(struct pma_fsck *f)
{
	uint64_t nchunks = f->g.npages / PMA_CHUNK_PAGES + 1;

	f->pmap = pma_zmap(f->g.npages * sizeof(uint64_t));
	f->written = calloc(f->g.npages / 64 + 1, sizeof(uint64_t));
	f->slabs = calloc(nchunks, sizeof(struct pma_fsck_slab *));
	f->arenas = calloc(f->g.narenas, sizeof(*f->arenas));
	f->sum = f->g.sum_words ? calloc(f->g.sum_words, sizeof(uint64_t)) :
				  NULL;
	if (!f->pmap || !f->written || !f->slabs || !f->arenas ||
	    (f->g.sum_words && !f->sum))
		return util_errmsg_set(ENOMEM, "out of memory");
	return 0;
}

static void walk_free_part(struct pma_fsck *f)
{
	uint64_t c, nchunks = f->g.npages / PMA_CHUNK_PAGES + 1;

	for (c = 0; f->slabs && c < nchunks; c++)
		free(f->slabs[c]);
	free(f->slabs);
	pma_zunmap(f->pmap, f->g.npages * sizeof(uint64_t));
	free(f->written);
	free(f->arenas);
	free(f->sum);
}

/* the walk over the mapped region, in the order of fsck.h (the root
 * word after every part's walk) */
static int walk(struct pma_fsck *f)
{
	int rc;

	if (header_fsck(f))
		return f->sink->rc;
	rc = walk_alloc(f);
	if (rc == 0)
		rc = pma_fsck_pmap(f);
	if (rc == 0 && f->gen_ok)
		rc = arenas_fsck(f);
	if (rc == 0)
		rc = window_fsck(f);
	if (rc == 0)
		rc = pma_fsck_spans(f);
	if (rc == 0)
		rc = pma_fsck_slabs(f);
	f->walked = rc == 0;
	return rc;
}

struct pma_fsck *pma_fsck_route(const struct pma_fsck_set *set, uint64_t off)
{
	unsigned part = pool_off_part(off), k = set->nreg ? set->nreg : 1, i;
	uint64_t b = pool_off_byte(off);
	const struct pma_fsck *f;

	if (part >= POOL_MAX_PARTS || part * k >= PMA_MAX_SLOTS)
		return NULL;
	for (i = 1; i < k && part * k + i < PMA_MAX_SLOTS; i++) {
		f = &set->part[part * k + i];
		if (f->present && b >= f->region_off &&
		    b - f->region_off < f->region_size)
			return (struct pma_fsck *)f;
	}
	return (struct pma_fsck *)&set->part[(size_t)part * k];
}

/* slot s (region of part p, NULL if none) into set->part[s], with what
 * its header alone says (geometry unchecked: zero) */
static void part_init(struct pma_fsck_set *set, struct pool *pool, unsigned p,
		      unsigned s, const struct pool_region *region)
{
	static const char zero[PMA_HEAP_MAGIC_LEN];
	struct pma_fsck *f = &set->part[s];
	struct pma_geom g;

	memset(f, 0, sizeof(*f));
	f->sink = set->sink;
	f->plan = set->plan;
	f->set = set;
	f->part = p;
	f->slot = s;
	if (!region)
		return;
	f->present = 1;
	f->pool = pool;
	f->base = pm_map_addr(pool_part_map(pool, p));
	f->region_off = region->off;
	f->region_size = region->size;
	f->hdr = (const struct pma_heap_hdr *)(const void *)(f->base +
							     region->off);
	set->nheaps++;
	f->unformatted = !memcmp(f->hdr->magic, zero, sizeof(zero));
	if (memcmp(f->hdr->magic, PMA_HEAP_MAGIC, PMA_HEAP_MAGIC_LEN) != 0 ||
	    pma_heap_hdr_check(f->hdr, f->region_size, &g) < 0) {
		util_errmsg_clear();
		return;
	}
	f->meta_lo = f->region_off;
	f->meta_hi = f->region_off + g.data_off;
	f->npages_hint = g.npages;
	set->total_pages += g.npages;
}

/* every part's heap regions into set->part[] by slot (part 0's count
 * per part: another count is a finding, its regions past it unwalked) */
static int regions_init(struct pma_fsck_set *set, struct pool *pool)
{
	const struct pool_region *regs[PMA_REGIONS_MAX + 1];
	unsigned p, i, n, k, nparts = pool_part_count(pool);
	int rc = 0;

	k = pma_part_regions(pool, 0, regs);
	if (k > PMA_REGIONS_MAX || (k & (k - 1)))
		rc = pool_fsck_report(set->sink, "heap-regions",
				      POOL_FSCK_ERROR, 0, 0,
				      "part 0 holds %u heap regions (1..%u, "
				      "a power of two)",
				      k, PMA_REGIONS_MAX);
	set->nreg = k && k <= PMA_REGIONS_MAX ? k : 1;
	for (p = 0; p < PMA_MAX_SLOTS; p++) /* no such region */
		part_init(set, pool, p / set->nreg, p, NULL);
	for (p = 0; p < nparts && p < POOL_MAX_PARTS; p++) {
		n = pma_part_regions(pool, p, regs);
		if (n && n != set->nreg && rc == 0)
			rc = pool_fsck_report(set->sink, "heap-regions",
					      POOL_FSCK_ERROR, p, 0,
					      "part %u holds %u heap regions, "
					      "part 0 %u",
					      p, n, set->nreg);
		for (i = 0; i < n && i < set->nreg &&
			    p * set->nreg + i < PMA_MAX_SLOTS;
		     i++)
			part_init(set, pool, p, p * set->nreg + i, regs[i]);
	}
	return rc;
}

/* the walk over the heap regions of an open pool (none: a finding) */
int pma_fsck_walk_pool(struct pma_fsck_set *set, struct pool *pool)
{
	unsigned p;
	int rc = 0;

	set->pool = pool;
	set->nheaps = 0;
	set->total_pages = 0;
	set->heap_errors = 0;
	rc = regions_init(set, pool);
	if (rc < 0)
		return rc;
	if (!set->nheaps)
		return pool_fsck_report(set->sink, "heap-none", POOL_FSCK_INFO,
					0, 0,
					"the pool has no PMAlloc heap region");
	for (p = 0; rc == 0 && p < PMA_MAX_SLOTS; p++) {
		if (!set->part[p].present)
			continue;
		if (!(set->skip >> p & 1))
			rc = walk(&set->part[p]);
		else
			rc = pool_fsck_report(set->sink, "region-not-held",
					      POOL_FSCK_INFO, set->part[p].part,
					      set->part[p].region_off,
					      "region slot %u (region %u of "
					      "part %u) is held by another "
					      "open (a client of pmad): not "
					      "checked",
					      p, p % set->nreg, p / set->nreg);
	}
	if (rc == 0)
		rc = redo_fsck(set);
	/* the root word is part 0's, and may name a block of any part */
	if (rc == 0 && set->part[0].walked)
		rc = pma_fsck_root(&set->part[0]);
	for (p = 1; rc == 0 && p < PMA_MAX_SLOTS; p++)
		if (set->part[p].present && set->part[p].walked)
			rc = pma_fsck_root_other(&set->part[p]);
	if (rc == 0)
		rc = pma_fsck_rings(set);
	for (p = 0; p < PMA_MAX_SLOTS; p++) {
		set->heap_errors += set->part[p].heap_errors;
		set->part[p].pool = NULL;
	}
	return rc;
}

void pma_fsck_walk_free(struct pma_fsck_set *set)
{
	unsigned p;

	for (p = 0; p < PMA_MAX_SLOTS; p++)
		if (set->part[p].present)
			walk_free_part(&set->part[p]);
}

/* did a walk get far enough for the library's open to be compared? */
static int any_walked(const struct pma_fsck_set *set)
{
	unsigned p;

	for (p = 0; p < PMA_MAX_SLOTS; p++)
		if (set->part[p].walked)
			return 1;
	return 0;
}

int pma_fsck(const char *path, struct pool_fsck_sink *sink)
{
	struct pma_fsck_set *set = calloc(1, sizeof(*set));
	struct pool *pool;
	int rc;

	if (!set)
		return util_errmsg_set(ENOMEM, "out of memory");
	set->sink = sink;
	if (pool_open(path, POOL_OPEN_RDONLY | POOL_OPEN_SHOW_OLDER, &pool)) {
		free(set);
		return pool_fsck_report(sink, "heap-not-checked",
					POOL_FSCK_INFO, 0, 0,
					"the heap is not checked: the pool "
					"cannot be opened (%s)",
					pool_errormsg());
	}
	rc = pma_fsck_walk_pool(set, pool);
	pool_close(&pool); /* the library's open takes its own */
	if (rc == 0 && !set->heap_errors && any_walked(set))
		rc = pma_fsck_library(set, path);
	pma_fsck_walk_free(set);
	free(set);
	return rc;
}

int pma_fsck_heap(struct pma_heap *heap, struct pool_fsck_sink *sink)
{
	struct pma_fsck_set *set = calloc(1, sizeof(*set));
	int rc;

	if (!set)
		return util_errmsg_set(ENOMEM, "out of memory");
	set->sink = sink;
	heap = heap->top;
	set->skip = heap->cfg.region_mask ? ~heap->held : 0;
	rc = pma_fsck_walk_pool(set, heap->pool);
	if (rc == 0 && !set->heap_errors && any_walked(set))
		rc = pma_fsck_library_heap(set, heap);
	pma_fsck_walk_free(set);
	free(set);
	return rc;
}

/* ------------------------------------------------------------ repair */

int pma_fsck_repairable(const char *code)
{
	static const char *const codes[] = {
		"pool-hdr-checksum",	"pool-hdr-magic",
		"pool-hdr-invalid",	"pool-hdr-unwritten",
		"pool-hdr-stale-copy",	"pmap-summary-check",
		"root-unsealed",	"log-torn-tail",
		"pool-hdr-torn-update",
	};
	size_t i;

	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (!strcmp(code, codes[i]))
			return 1;
	return 0;
}

int pma_fsck_blocks_repair(const struct pool_fsck_finding *f, int advanced)
{
	if (f->severity == POOL_FSCK_ERROR)
		return !pma_fsck_repairable(f->code) &&
		       !(f->flags & POOL_FSCK_REPAIRABLE) &&
		       !(advanced && (f->flags & POOL_FSCK_ADVANCED));
	return !strcmp(f->code, "pool-feature-ro-compat");
}
