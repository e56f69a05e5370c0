/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A morph pass (pma_heap_morph, pmactl morph) and the slab walk behind it
 * and pmactl inspect --slabs (pma_slab_foreach); the walk of every live
 * block (pma_block_foreach).
 *
 * The pass plans from one snapshot of each part's slabs (the page map
 * walk of pma_slab_foreach, which also reads unloaded slabs): per arena,
 * the free blocks and slabs of every class, and the candidates (plain
 * slabs with live blocks, at most used_pct percent of them, no remote
 * free in flight). Candidates go fewest live bytes first; each gets a
 * target class (the one asked for, or the arena's class with the fewest
 * free blocks while it has fewer free bytes than the candidate's class
 * would keep) and is morphed if pma_morph_fits says the morph is worth
 * it; the counts are updated as if it was, so a dry run makes the same
 * choices as a real one.
 *
 * A real pass loads every slab and checkpoints first (pma_heap_load_all,
 * pma_checkpoint: the ordinary, swept checkpoint), so that every slab is
 * listed, idle and outside the log window, and then takes the
 * allocator's own step for each slab (morph.c, pma_morph_slab: old bitmap
 * durable, then SLAB_MORPH appended) under the owner's lock with log
 * room, and fences the record before the next one (what the allocator's
 * ALLOC commit does after pma_morph_try). Nothing else is written.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pmalloc/internal.h"
#include "util/errmsg.h"

/* ---------------------------------------------------------- slab walk */

typedef int (*slab_cb)(struct pma_heap *heap, struct pma_slab *slab, void *arg);

/* the blocks set in a bitmap of the interleaved layout */
static uint32_t bits_count(const uint64_t *w, size_t n)
{
	uint32_t c = 0;
	size_t i;

	for (i = 0; i < n; i++)
		c += (uint32_t)__builtin_popcountll(w[i]);
	return c;
}

static uint32_t slab_used(struct pma_slab *slab)
{
	uint64_t w[PMA_NBANKS * PMA_SLAB_LINE_WORDS];
	unsigned l, k;

	for (l = 0; l < PMA_NBANKS; l++)
		for (k = 0; k < PMA_SLAB_LINE_WORDS; k++)
			w[l * PMA_SLAB_LINE_WORDS + k] =
				atomic_load(&slab->live[l][k]);
	return bits_count(w, sizeof(w) / sizeof(w[0]));
}

/* an extent of npages pages at page of heap (walk's optional callback) */
typedef int (*extent_cb)(struct pma_heap *heap, uint64_t page, uint64_t npages,
			 void *arg);

/* call cb for every slab of one part's heap (and ecb, unless NULL, for
 * every live extent), every arena locked */
static int walk(struct pma_heap *heap, slab_cb cb, extent_cb ecb, void *arg)
{
	struct pma_slab *slab, tmp;
	uint64_t page = 0, e, n;
	int rc = 0;

	pma_arenas_lock(heap);
	while (page < heap->geom.npages && rc == 0) {
		e = atomic_load(&heap->pmap[page]);
		n = pma_pmap_npages(e);
		if (ecb && pma_pmap_kind(e) == PMA_PMAP_EXTENT && n) {
			rc = ecb(heap, page, n, arg);
			page += n;
			continue;
		}
		if (pma_pmap_kind(e) != PMA_PMAP_SLAB || n == 0) {
			page += n ? n : 1;
			continue;
		}
		slab = atomic_load(&heap->slabs[page / PMA_CHUNK_PAGES]);
		if (!slab) {
			rc = pma_lazy_peek(heap, page, e, &tmp);
			if (rc < 0)
				break;
			slab = &tmp;
		}
		rc = cb(heap, slab, arg);
		if (slab == &tmp)
			pma_morph_release(&tmp);
		page += n;
	}
	pma_arenas_unlock(heap);
	return rc;
}

/* walk over the heap of every part */
static int walk_all(struct pma_heap *heap, slab_cb cb, extent_cb ecb, void *arg)
{
	unsigned p;
	int rc;

	heap = heap->top;
	for (p = 0; p < PMA_MAX_SLOTS; p++) {
		if (!pma_sib(heap, p))
			continue;
		rc = walk(pma_sib(heap, p), cb, ecb, arg);
		if (rc)
			return rc;
	}
	return 0;
}

struct foreach_arg {
	pma_slab_fn fn;
	void *arg;
};

static int foreach_cb(struct pma_heap *heap, struct pma_slab *slab, void *arg)
{
	struct foreach_arg *a = arg;
	struct pma_slab_info info = {
		.off = pma_pool_off(heap, slab->off),
		.part = heap->part,
		.arena = slab->owner,
		.block_size = slab->block_size,
		.nblocks = slab->nblocks,
		.used = slab_used(slab),
		.avail = slab->navail,
	};

	if (slab->old_cls != PMA_CLS_NONE) {
		info.old_block_size = slab->old_block_size;
		info.old_used = slab->old_count;
	}
	return a->fn(&info, a->arg);
}

PMA_API int pma_slab_foreach(struct pma_heap *heap, pma_slab_fn fn, void *arg)
{
	struct foreach_arg a = { .fn = fn, .arg = arg };

	if (!heap || !fn)
		return util_errmsg_set(EINVAL, "no heap or function");
	return walk_all(heap, foreach_cb, NULL, &a);
}

struct blocks_arg {
	pma_block_fn fn;
	void *arg;
};

/* every live block of a slab: its own class's, and for a mixed slab the
 * old class's blocks still live */
static int blocks_slab(struct pma_heap *heap, struct pma_slab *slab, void *arg)
{
	struct blocks_arg *a = arg;
	uint64_t off;
	uint32_t i;
	int rc = 0;

	for (i = 0; rc == 0 && i < slab->nblocks; i++)
		if (pma_slab_is_live(slab, i))
			rc = a->fn(pma_pool_off(heap,
						pma_slab_block_off(slab, i)),
				   slab->block_size, a->arg);
	for (i = 0;
	     rc == 0 && slab->old_cls != PMA_CLS_NONE && i < slab->old_nblocks;
	     i++) {
		off = slab->off + PMA_SLAB_HDR_SIZE +
		      (uint64_t)i * slab->old_block_size;
		if (pma_morph_old_live(slab, off))
			rc = a->fn(pma_pool_off(heap, off),
				   slab->old_block_size, a->arg);
	}
	return rc;
}

static int blocks_extent(struct pma_heap *heap, uint64_t page, uint64_t npages,
			 void *arg)
{
	struct blocks_arg *a = arg;

	return a->fn(pma_pool_off(heap, pma_page_off(heap, page)),
		     npages << PMA_PAGE_SHIFT, a->arg);
}

PMA_API int pma_block_foreach(struct pma_heap *heap, pma_block_fn fn, void *arg)
{
	struct blocks_arg a = { .fn = fn, .arg = arg };

	if (!heap || !fn)
		return util_errmsg_set(EINVAL, "no heap or function");
	return walk_all(heap, blocks_slab, blocks_extent, &a);
}

/* ------------------------------------------------------------- the pass */

struct cand {
	uint64_t off; /* heap byte offset */
	uint64_t live_bytes;
	unsigned owner, cls;
	uint32_t used, avail;
	uint64_t live[PMA_NBANKS][PMA_SLAB_LINE_WORDS];
};

/* one part's plan */
struct plan {
	unsigned pct;
	unsigned target; /* PMA_NCLASSES: choose per slab */
	int64_t *free; /* [owner * PMA_NCLASSES + cls]: blocks to hand out */
	uint32_t *nslabs; /* [owner * PMA_NCLASSES + cls] */
	struct cand *c;
	size_t n, alloc;
};

static int rpend_any(struct pma_slab *slab)
{
	unsigned l, k;

	for (l = 0; l < PMA_NBANKS; l++)
		for (k = 0; k < PMA_SLAB_LINE_WORDS; k++)
			if (atomic_load(&slab->rpend[l][k]))
				return 1;
	return 0;
}

static int plan_cb(struct pma_heap *heap, struct pma_slab *slab, void *arg)
{
	struct plan *p = arg;
	size_t i = (size_t)slab->owner * PMA_NCLASSES + slab->cls;
	uint32_t used = slab_used(slab);
	struct cand *c;
	unsigned l, k;

	(void)heap;
	p->free[i] += slab->navail;
	p->nslabs[i]++;
	if (slab->old_cls != PMA_CLS_NONE || !used ||
	    (uint64_t)used * 100 > (uint64_t)slab->nblocks * p->pct ||
	    slab->cls == p->target || rpend_any(slab) ||
	    atomic_load(&slab->in_xlist))
		return 0;
	if (p->n == p->alloc) {
		size_t na = p->alloc ? 2 * p->alloc : 64;
		struct cand *nc = realloc(p->c, na * sizeof(*nc));

		if (!nc)
			return util_errmsg_set(ENOMEM, "out of memory");
		p->c = nc;
		p->alloc = na;
	}
	c = &p->c[p->n++];
	c->off = slab->off;
	c->owner = slab->owner;
	c->cls = slab->cls;
	c->used = used;
	c->avail = slab->navail;
	c->live_bytes = (uint64_t)used * slab->block_size;
	for (l = 0; l < PMA_NBANKS; l++)
		for (k = 0; k < PMA_SLAB_LINE_WORDS; k++)
			c->live[l][k] = atomic_load(&slab->live[l][k]);
	return 0;
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->owner != y->owner)
		return x->owner < y->owner ? -1 : 1;
	if (x->live_bytes != y->live_bytes)
		return x->live_bytes < y->live_bytes ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* the class c's slab goes to, or PMA_NCLASSES for none */
static unsigned target_of(const struct plan *p, const struct cand *c)
{
	const int64_t *fr = p->free + (size_t)c->owner * PMA_NCLASSES;
	const uint32_t *ns = p->nslabs + (size_t)c->owner * PMA_NCLASSES;
	unsigned t, best = PMA_NCLASSES;
	int64_t keep;

	if (p->target != PMA_NCLASSES)
		return p->target;
	for (t = 0; t < PMA_NCLASSES; t++)
		if (t != c->cls && ns[t] &&
		    (best == PMA_NCLASSES || fr[t] < fr[best]))
			best = t;
	if (best == PMA_NCLASSES)
		return best;
	/* only while it moves free space to where there is less */
	keep = (fr[c->cls] - (int64_t)c->avail) * pma_class_size(c->cls);
	if (fr[best] * (int64_t)pma_class_size(best) >= keep)
		return PMA_NCLASSES;
	return best;
}

/* the real step for c into class t; 0 (its free blocks of t in
 * *ret_free), -ENOENT (it stays), or -errno */
static int morph_one(struct pma_heap *heap, const struct plan *p,
		     const struct cand *c, unsigned t, uint32_t *ret_free)
{
	struct pma_arena *arena = &heap->arenas[c->owner];
	struct pma_slab *slab;
	uint64_t chunk = pma_page_of(heap, c->off) / PMA_CHUNK_PAGES;
	int rc;

	rc = pma_arena_lock_room(arena);
	if (rc < 0)
		return rc;
	slab = atomic_load(&heap->slabs[chunk]);
	rc = -ENOENT;
	if (slab && slab->off == c->off && slab->cls == c->cls) {
		/* frees of a mixed slab take the owner's lock (morph.c):
		 * set before the first slab becomes mixed */
		atomic_store(&heap->may_mix, 1);
		rc = pma_morph_slab(arena, slab, t, p->pct);
	}
	if (rc == 0) {
		/* SLAB_MORPH durable before any later record */
		pm_drain(heap->map);
		*ret_free = slab->navail;
	}
	pma_arena_unlock(arena);
	return rc;
}

static void report_move(struct pma_morph_report *r, unsigned from, unsigned to,
			uint64_t live_bytes, uint64_t free_bytes)
{
	struct pma_morph_move *m = NULL;
	unsigned i;

	r->slabs_morphed++;
	r->bytes_morphed += PMA_CHUNK;
	r->live_bytes += live_bytes;
	r->free_bytes += free_bytes;
	for (i = 0; i < r->nmoves; i++)
		if (r->moves[i].from_size == pma_class_size(from) &&
		    r->moves[i].to_size == pma_class_size(to))
			m = &r->moves[i];
	if (!m && r->nmoves == PMA_MORPH_MOVES_MAX) {
		r->moves_dropped++;
		return;
	}
	if (!m) {
		m = &r->moves[r->nmoves++];
		m->from_size = pma_class_size(from);
		m->to_size = pma_class_size(to);
	}
	m->slabs++;
	m->live_bytes += live_bytes;
	m->free_bytes += free_bytes;
}

static int pass_run(struct pma_heap *heap, struct plan *p, int dry,
		    struct pma_morph_report *r)
{
	struct cand *c;
	uint32_t nfree;
	unsigned t;
	size_t i;
	int rc;

	if (p->n) /* no plan: p->c may be NULL, which qsort may not take */
		qsort(p->c, p->n, sizeof(*p->c), cand_cmp);
	r->candidates += p->n;
	for (i = 0; i < p->n; i++) {
		c = &p->c[i];
		t = target_of(p, c);
		if (t == PMA_NCLASSES)
			continue;
		rc = pma_morph_fits(
			(const uint64_t(*)[PMA_SLAB_LINE_WORDS])c->live, c->cls,
			t, &nfree);
		if (rc < 0)
			return rc;
		if (!rc)
			continue;
		if (!dry) {
			rc = morph_one(heap, p, c, t, &nfree);
			if (rc == -ENOENT)
				continue;
			if (rc < 0)
				return rc;
		}
		p->free[(size_t)c->owner * PMA_NCLASSES + c->cls] -= c->avail;
		p->nslabs[(size_t)c->owner * PMA_NCLASSES + c->cls]--;
		p->free[(size_t)c->owner * PMA_NCLASSES + t] += nfree;
		p->nslabs[(size_t)c->owner * PMA_NCLASSES + t]++;
		report_move(r, c->cls, t, c->live_bytes,
			    (uint64_t)nfree * pma_class_size(t));
	}
	return 0;
}

static int pass_part(struct pma_heap *heap, unsigned target, unsigned pct,
		     int dry, struct pma_morph_report *r)
{
	size_t n = (size_t)heap->geom.narenas * PMA_NCLASSES;
	struct plan p = { .pct = pct, .target = target };
	int rc;

	if (heap->geom.version < PMA_HEAP_VERSION_MORPH)
		return util_errmsg_set(EOPNOTSUPP,
				       "heap layout version %u cannot morph "
				       "slabs (version %u and later can; there "
				       "is no in-place upgrade)",
				       heap->geom.version,
				       PMA_HEAP_VERSION_MORPH);
	if (!dry) {
		rc = pma_heap_load_all(heap);
		if (rc == 0)
			rc = pma_checkpoint(heap);
		if (rc < 0)
			return rc;
	}
	p.free = calloc(n, sizeof(*p.free));
	p.nslabs = calloc(n, sizeof(*p.nslabs));
	rc = p.free && p.nslabs ? walk(heap, plan_cb, NULL, &p) :
				  util_errmsg_set(ENOMEM, "out of memory");
	if (rc == 0)
		rc = pass_run(heap, &p, dry, r);
	free(p.c);
	free(p.free);
	free(p.nslabs);
	return rc;
}

/* the class of block size size in heap, or PMA_NCLASSES (with the
 * message) */
static unsigned class_exact(const struct pma_heap *heap, size_t size)
{
	uint32_t below = 0, above = 0, c;
	unsigned cls;

	for (cls = 0; cls < heap->nclasses; cls++) {
		c = pma_class_size(cls);
		if (c == size)
			return cls;
		if (c < size && c > below)
			below = c;
		if (c > size && (!above || c < above))
			above = c;
	}
	if (below && above)
		util_errmsg_set(EINVAL,
				"no size class of %zu bytes (the nearest are "
				"%u and %u)",
				size, below, above);
	else
		util_errmsg_set(EINVAL,
				"no size class of %zu bytes (the classes go "
				"from %u to %u bytes)",
				size, pma_class_size(0), PMA_SMALL_MAX);
	return PMA_NCLASSES;
}

PMA_API int pma_heap_morph(struct pma_heap *heap,
			   const struct pma_morph_req *req,
			   struct pma_morph_report *ret)
{
	struct pma_morph_report r;
	unsigned target = PMA_NCLASSES, pct, p;
	int rc;

	if (!heap || !req)
		return util_errmsg_set(EINVAL, "no heap or request");
	heap = heap->top;
	if (req->class_size) {
		target = class_exact(heap, req->class_size);
		if (target == PMA_NCLASSES)
			return -EINVAL;
	}
	pct = req->used_pct	  ? req->used_pct :
	      heap->cfg.morph_pct ? heap->cfg.morph_pct :
				    PMA_MORPH_PASS_PCT;
	if (pct > 100)
		return util_errmsg_set(
			EINVAL, "morph threshold %u%% is over 100%%", pct);
	if (!req->dry_run && pma_heap_writable(heap) < 0)
		return -EROFS;
	memset(&r, 0, sizeof(r));
	r.used_pct = pct;
	for (p = 0; p < PMA_MAX_SLOTS; p++) {
		if (!pma_sib(heap, p))
			continue;
		rc = pass_part(pma_sib(heap, p), target, pct, req->dry_run, &r);
		if (rc < 0)
			return rc;
	}
	if (ret)
		*ret = r;
	return 0;
}
