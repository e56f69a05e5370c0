/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmalloc xring: the free rings of layout 12 (doc/shared-heaps.md, step
 * 3b). A block of a region that another open holds (a masked open,
 * pma_config_set_region_mask) is freed without writing that region: the
 * freer appends an entry to its own region's ring for the block's slot
 * and the holder of that slot applies it in its own logs later.
 *
 * Freer (region P, ring for slot D, entry j):
 *   entry (block, dest), fence: the free is committed;
 *   *dest = 0, flushed, fence;
 *   P's xprod[D] = j + 1, published (a plain store).
 * Holder of D (pma_xring_drain, every arena lock of D held; when the
 * holder frees a block of another region and PMA_XRING_BATCH entries
 * wait for D, on its general path every PMA_XRING_EVERY ops, and at
 * open, close, checkpoint and pma_heap_sync):
 *   for j from D's xcons[P] to P's xprod[D]: the owner's free of the
 *   block in D's logs (pma_xring_apply_locked), fenced;
 *   D's xcons[P] persisted (checked word); then the locks go, and only
 *   then can the blocks be taken again.
 * So an entry at or above xcons names a block nobody reused: recovery
 * of D applies such entries again only if the block is still live, and
 * recovery of P redoes their dest words if they still name the block.
 *
 * Only the producer and consumer words are shared between opens; each
 * is written by the one holder of its region. The lock of a ring is
 * process-local (one open writes a region's rings).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "pmalloc/fsck.h"
#include "pmalloc/internal.h"
#include "util/errmsg.h"

/* entries for a region that a free of another region's block applies
 * on the way (a quarter ring): a drain takes every arena lock of the
 * region and persists a consumer word, worth it for a batch */
#define PMA_XRING_BATCH (PMA_XRING_CAP / 4)
#include "util/log.h"

struct pma_xent *pma_xring_of(const struct pma_heap_hdr *hdr, uint64_t size,
			      unsigned d)
{
	if (hdr->version < PMA_HEAP_VERSION_XRING ||
	    hdr->xring_cap != PMA_XRING_CAP || hdr->xring_off < PMA_HDR_SIZE ||
	    hdr->xring_off + (uint64_t)PMA_XRING_SLOTS * PMA_XRING_CAP *
				     sizeof(struct pma_xent) >
		    size)
		return NULL;
	return (struct pma_xent *)((char *)hdr + hdr->xring_off) +
	       (uint64_t)d * PMA_XRING_CAP;
}

int pma_xent_read(const struct pma_xent *ring, uint64_t j, uint64_t *block,
		  uint64_t *dest_off)
{
	uint64_t lap = j / PMA_XRING_CAP;
	uint64_t w0 = __atomic_load_n(&ring[j % PMA_XRING_CAP].word0,
				      __ATOMIC_RELAXED);
	uint64_t w1 = __atomic_load_n(&ring[j % PMA_XRING_CAP].word1,
				      __ATOMIC_RELAXED);

	if ((w0 & PMA_XENT_TAG0_MASK) != pma_xent_tag0(lap) ||
	    (w1 & PMA_XENT_TAG1_MASK) != pma_xent_tag1(lap))
		return 0;
	*block = w0 & ~PMA_XENT_TAG0_MASK;
	*dest_off = w1 & ~PMA_XENT_TAG1_MASK;
	return 1;
}

/*
 * Where reading ring starts for a consumer word cons as persisted. The
 * holder's drain stores its consumer word (visible at once to other
 * opens) before that store is durable: a power loss in between leaves
 * the older word on media while a freer may already have taken the new
 * one and written the next lap's entries into the slots below it. Such
 * slots, valid as index + PMA_XRING_CAP, are a prefix from cons (a freer
 * writes index k + CAP only once the word is past k, in index order):
 * reading starts after them, where the lost word was or below it. An
 * entry below the lost word was applied (a drain's frees are fenced
 * before its word): applied again it finds its block free and is
 * ignored (the drain's locks held its blocks until the word was
 * durable).
 */
uint64_t pma_xring_start(const struct pma_xent *ring, uint64_t cons)
{
	uint64_t k, block, dest_off;

	for (k = cons;
	     k - cons < PMA_XRING_CAP &&
	     pma_xent_read(ring, k + PMA_XRING_CAP, &block, &dest_off);
	     k++)
		;
	return k;
}

/* entries other opens published for o that o has not applied */
static uint64_t drain_pending(const struct pma_heap *o)
{
	const struct pma_heap *top = o->top;
	uint64_t n = 0;
	unsigned s;

	for (s = 0; s < PMA_MAX_SLOTS; s++)
		if (s != o->slot && top->slot_hdr[s])
			n += __atomic_load_n(&top->slot_hdr[s]->xprod[o->slot],
					     __ATOMIC_ACQUIRE) -
			     o->xcons[s];
	return n;
}

/* the entry, fence, dest cleared, fence, published: 0, 1 if no ring
 * applies (a region of layout 11 or older), or -errno (-EAGAIN: full) */
static int xring_put(struct pma_heap *l, unsigned d, uint64_t off,
		     uint64_t *dest, uint64_t dest_off)
{
	struct pma_heap *top = l->top;
	struct pma_heap_hdr *dh = top->slot_hdr[d];
	uint64_t cons, j, lap;
	struct pma_xent *ring, *e;
	struct pm_map *dmap;

	if (!l->xring || !dh || dh->version < PMA_HEAP_VERSION_XRING)
		return 1;
	ring = pma_xring_of(l->hdr, l->geom.region_size, d);
	if (!ring)
		return 1;
	if (off ==
	    __atomic_load_n(&top->slot_hdr[0]->root_off, __ATOMIC_ACQUIRE))
		return util_errmsg_set(EINVAL,
				       "0x%llx is the root object, which is "
				       "never freed",
				       (unsigned long long)off);
	pthread_mutex_lock(&l->xring_lock);
	if (pma_check_cons_decode(__atomic_load_n(&dh->xcons[l->slot],
						  __ATOMIC_ACQUIRE),
				  l->slot, &cons) < 0) {
		pthread_mutex_unlock(&l->xring_lock);
		return util_errmsg_set(EIO,
				       "region %u of part %u: the word of "
				       "frees applied from slot %u is "
				       "damaged (check mismatch)",
				       d % top->nreg, d / top->nreg, l->slot);
	}
	j = l->xprod[d];
	if (j - cons >= PMA_XRING_CAP) {
		pthread_mutex_unlock(&l->xring_lock);
		return util_errmsg_set(EAGAIN,
				       "region %u of part %u has not applied "
				       "the last %u frees of its blocks made "
				       "here yet (its holder applies them as "
				       "it allocates, checkpoints or calls "
				       "pma_heap_sync)",
				       d % top->nreg, d / top->nreg,
				       PMA_XRING_CAP);
	}
	lap = j / PMA_XRING_CAP;
	e = &ring[j % PMA_XRING_CAP];
	__atomic_store_n(&e->word0, off | pma_xent_tag0(lap), __ATOMIC_RELAXED);
	__atomic_store_n(&e->word1, (dest ? dest_off : 0) | pma_xent_tag1(lap),
			 __ATOMIC_RELAXED);
	pm_flush(l->map, e, sizeof(*e));
	pm_drain(l->map); /* the free is committed */
	if (dest) {
		__atomic_store_n(dest, 0, __ATOMIC_RELEASE);
		if (dest_off) {
			dmap = pool_part_map(l->pool, pool_off_part(dest_off));
			pm_flush(dmap, dest, sizeof(*dest));
			pm_drain(dmap);
		}
	}
	l->xprod[d] = j + 1;
	__atomic_store_n(&l->hdr->xprod[d], j + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&l->xring_lock);
	atomic_fetch_add_explicit(&top->xring_frees, 1, memory_order_relaxed);
	/* and what the other opens freed here, once there is a batch
	 * worth a drain's locks and consumer fence (the general path
	 * drains the rest every PMA_XRING_EVERY ops, pma_heap_sync all) */
	if (drain_pending(l) >= PMA_XRING_BATCH)
		(void)pma_xring_drain(l);
	return 0;
}

/* slot d, which no open holds (its holder closed or died), opened here
 * alone and closed again: its recovery applies every ring for it */
static int xring_adopt(struct pma_heap *l, unsigned d)
{
	char names[POOL_MAX_PARTS][40];
	const char *paths[POOL_MAX_PARTS];
	unsigned i, n = pool_part_count(l->pool);
	struct pma_config cfg = l->cfg;
	struct pma_heap *h = NULL;
	int rc;

	if (n > POOL_MAX_PARTS)
		return util_errmsg_set(EINVAL, "%u parts", n);
	/* a new open file description of each part: its own region lock */
	for (i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "/proc/self/fd/%d",
			 pool_part_fd(l->pool, i));
		paths[i] = names[i];
	}
	cfg.region_mask = 1ULL << d;
	cfg.flags &= ~(unsigned)(PMA_HEAP_FORMAT | PMA_HEAP_TEST_XRING);
	rc = pma_heap_open_parts_cfg(paths, n, &cfg, &h);
	if (rc < 0)
		return rc;
	pma_heap_close(h); /* (its open applied every ring for it) */
	return 0;
}

/*
 * xring_put, and if the ring is full: a region this open holds
 * (PMA_HEAP_TEST_XRING) is drained here; a region no open holds is
 * opened here alone and closed (xring_adopt: its open applies the
 * ring); another open's gets up to PMA_XRING_WAIT_US to apply what it
 * owes (it drains as it allocates) before the free fails with -EAGAIN.
 */
#define PMA_XRING_WAIT_US 20000
int pma_xring_free(struct pma_heap *l, unsigned d, uint64_t off, uint64_t *dest,
		   uint64_t dest_off)
{
	struct timespec ts = { 0, 100000L };
	unsigned waited;
	int rc;

	for (waited = 0;; waited += 100) {
		rc = xring_put(l, d, off, dest, dest_off);
		if (rc != -EAGAIN || waited >= PMA_XRING_WAIT_US)
			return rc;
		if (pma_sib(l->top, d)) {
			(void)pma_xring_drain(pma_sib(l->top, d));
			continue;
		}
		/* nobody holds the region (its holder closed or died):
		 * open it here, which applies the ring, and try again */
		if (pool_slot_busy(l->pool, d) == 0 && xring_adopt(l, d) == 0)
			continue;
		/* the holder may itself wait for this open to apply
		 * what it freed here: apply it meanwhile */
		(void)pma_heap_sync(l->top);
		nanosleep(&ts, NULL);
	}
}

/* is there an entry of another slot's ring for o that o has not
 * applied? */
static int drain_due(const struct pma_heap *o)
{
	const struct pma_heap *top = o->top;
	unsigned s;

	for (s = 0; s < PMA_MAX_SLOTS; s++)
		if (s != o->slot && top->slot_hdr[s] &&
		    __atomic_load_n(&top->slot_hdr[s]->xprod[o->slot],
				    __ATOMIC_ACQUIRE) != o->xcons[s])
			return 1;
	return 0;
}

/* apply the entries of slot s's ring for o up to its producer word; the
 * count applied (every arena lock of o held) */
static int drain_slot(struct pma_heap *o, unsigned s)
{
	struct pma_heap *top = o->top;
	const struct pma_heap_hdr *sh = top->slot_hdr[s];
	const struct pma_xent *ring =
		pma_xring_of(sh, top->slot_size[s], o->slot);
	uint64_t prod, j, off, dest_off;
	unsigned n = 0, unfenced = 0;
	int rc;

	if (!ring)
		return 0;
	prod = __atomic_load_n(&sh->xprod[o->slot], __ATOMIC_ACQUIRE);
	for (j = o->xcons[s]; j < prod && j - o->xcons[s] < PMA_XRING_CAP;
	     j++) {
		if (!pma_xent_read(ring, j, &off, &dest_off)) {
			util_err("region %u of part %u: entry %llu of slot "
				 "%u's free ring is not valid (damaged); its "
				 "frees wait",
				 o->slot % top->nreg, o->slot / top->nreg,
				 (unsigned long long)j, s);
			break;
		}
		if (!off)
			continue; /* a void entry (fsck --repair --advanced) */
		rc = pool_off_part(off) == o->part ?
			     pma_xring_apply_locked(o, pool_off_byte(off),
						    &unfenced) :
			     -EINVAL;
		if (rc == -ENOSPC)
			break; /* the next drain, after a checkpoint */
		if (rc < 0) {
			util_warn("region %u of part %u: a free from slot %u "
				  "names 0x%llx, no live block of the region "
				  "(a double free or a bad offset): ignored",
				  o->slot % top->nreg, o->slot / top->nreg, s,
				  (unsigned long long)off);
			atomic_fetch_add_explicit(&top->xring_ignored, 1,
						  memory_order_relaxed);
		} else {
			atomic_fetch_add_explicit(&top->xring_applied, 1,
						  memory_order_relaxed);
		}
		n++;
	}
	if (j == o->xcons[s])
		return 0;
	/* the frees are durable (two records a fence) ... */
	if (unfenced)
		pm_drain(o->map);
	o->xcons[s] = j;
	__atomic_store_n(&o->hdr->xcons[s], pma_check_cons(j, s),
			 __ATOMIC_RELEASE);
	pm_persist(o->map, &o->hdr->xcons[s], sizeof(uint64_t));
	return (int)n; /* ... then applied: the locks may go */
}

int pma_xring_drain(struct pma_heap *o)
{
	unsigned s;
	int n = 0;

	if (!o->xring || !drain_due(o))
		return 0;
	pthread_mutex_lock(&o->xdrain_lock);
	pma_arenas_lock(o);
	for (s = 0; s < PMA_MAX_SLOTS; s++)
		if (s != o->slot && o->top->slot_hdr[s])
			n += drain_slot(o, s);
	pma_arenas_unlock(o);
	pthread_mutex_unlock(&o->xdrain_lock);
	return n;
}

/*
 * Recovery of p's rings: for each slot d, the entries from where both
 * d's consumer word and p's producer word (as published before the
 * crash) are on while valid: the last ones may be committed with their
 * dest word not durable; their blocks are not applied yet (at or above
 * xcons), so a dest word that still names the block is stale: cleared.
 * Then the producer word is published.
 */
static int xring_recover(struct pma_heap *p)
{
	struct pma_heap *top = p->top;
	uint64_t cons, j, block, dest_off, *dest;
	struct pma_heap_hdr *dh;
	struct pma_xent *ring;
	unsigned d;
	int redone = 0;

	for (d = 0; d < PMA_MAX_SLOTS; d++) {
		dh = top->slot_hdr[d];
		ring = pma_xring_of(p->hdr, p->geom.region_size, d);
		if (d == p->slot || !dh || !ring)
			continue;
		if (pma_check_cons_decode(dh->xcons[p->slot], p->slot, &cons) <
		    0)
			return util_errmsg_set(EIO,
					       "region %u of part %u: the "
					       "word of frees applied from "
					       "slot %u is damaged (check "
					       "mismatch)",
					       d % top->nreg, d / top->nreg,
					       p->slot);
		cons = pma_xring_start(ring, cons);
		j = p->hdr->xprod[d] > cons ? p->hdr->xprod[d] : cons;
		for (; j - cons < PMA_XRING_CAP &&
		       pma_xent_read(ring, j, &block, &dest_off);
		     j++) {
			dest = dest_off ? pma_direct(p, dest_off) : NULL;
			if (dest && pma_heap_dest_check(p, dest_off) == 0 &&
			    *dest == block) {
				__atomic_store_n(dest, 0, __ATOMIC_RELAXED);
				pm_flush(pool_part_map(p->pool,
						       pool_off_part(dest_off)),
					 dest, sizeof(*dest));
				redone = 1;
			}
		}
		p->xprod[d] = j;
	}
	if (redone)
		pm_drain(p->map);
	for (d = 0; d < PMA_MAX_SLOTS; d++)
		if (p->xprod[d] != p->hdr->xprod[d])
			__atomic_store_n(&p->hdr->xprod[d], p->xprod[d],
					 __ATOMIC_RELEASE);
	return 0;
}

/*
 * Is the block at pool offset off of region o named by a committed ring
 * entry o has not applied (at or above o's consumer word, valid)? The
 * recovery of o's logs asks before it redoes an allocation's dest word:
 * such a block is freed, its dest cleared by the freer (or by the
 * freer's recovery), and the drain at the end of the open frees it; a
 * dest stored again would name a free block.
 */
int pma_xring_pending(const struct pma_heap *o, uint64_t off)
{
	const struct pma_heap *top = o->top;
	const struct pma_heap_hdr *sh;
	const struct pma_xent *ring;
	uint64_t cons, j, block, dest_off;
	unsigned s;

	if (o->geom.version < PMA_HEAP_VERSION_XRING)
		return 0;
	for (s = 0; s < PMA_MAX_SLOTS; s++) {
		sh = top->slot_hdr[s];
		if (s == o->slot || !sh)
			continue;
		ring = pma_xring_of(sh, top->slot_size[s], o->slot);
		if (!ring || pma_check_cons_decode(o->hdr->xcons[s], s, &cons))
			continue;
		cons = pma_xring_start(ring, cons);
		for (j = cons; j - cons < PMA_XRING_CAP &&
			       pma_xent_read(ring, j, &block, &dest_off);
		     j++)
			if (block == off)
				return 1;
	}
	return 0;
}

/* committed entries, published or not, of producer slot p's ring for
 * slot d (headers dh and ph, ph's region psize bytes) */
static uint64_t ring_pending_of(const struct pma_heap_hdr *dh,
				const struct pma_heap_hdr *ph, uint64_t psize,
				unsigned d, unsigned p)
{
	const struct pma_xent *ring;
	uint64_t n = 0, cons, j, block, dest_off;

	if (p == d || !dh || !ph || dh->version < PMA_HEAP_VERSION_XRING)
		return 0;
	ring = pma_xring_of(ph, psize, d);
	if (!ring || pma_check_cons_decode(__atomic_load_n(&dh->xcons[p],
							   __ATOMIC_ACQUIRE),
					   p, &cons) < 0)
		return 0;
	cons = pma_xring_start(ring, cons);
	for (j = cons; j - cons < PMA_XRING_CAP &&
		       pma_xent_read(ring, j, &block, &dest_off);
	     j++)
		n += block != 0; /* (0: a void entry) */
	return n;
}

PMA_API int pma_heap_ring_pending(const struct pma_heap *heap,
				  uint64_t *ret_entries)
{
	const struct pma_heap *top;
	uint64_t n = 0;
	unsigned d, p;

	if (!heap || !ret_entries)
		return util_errmsg_set(EINVAL, "no %s",
				       heap ? "ret_entries" : "heap");
	top = heap->top;
	for (d = 0; d < PMA_MAX_SLOTS; d++)
		for (p = 0; p < PMA_MAX_SLOTS; p++)
			n += ring_pending_of(top->slot_hdr[d], top->slot_hdr[p],
					     top->slot_size[p], d, p);
	*ret_entries = n;
	return 0;
}

int pma_pool_ring_pending(struct pool *pool, uint64_t dest_mask,
			  uint64_t *ret_entries)
{
	const struct pool_region *regs[PMA_REGIONS_MAX + 1];
	const struct pma_heap_hdr *hdr[PMA_MAX_SLOTS] = { NULL };
	uint64_t size[PMA_MAX_SLOTS] = { 0 }, n = 0;
	unsigned part, i, k, cnt, d, p;

	if (!pool || !ret_entries)
		return util_errmsg_set(EINVAL, "no %s",
				       pool ? "ret_entries" : "pool");
	k = pma_part_regions(pool, 0, regs);
	for (part = 0;
	     k && part < pool_part_count(pool) && part < POOL_MAX_PARTS;
	     part++) {
		cnt = pma_part_regions(pool, part, regs);
		for (i = 0; i < cnt && i < k && part * k + i < PMA_MAX_SLOTS;
		     i++) {
			if (regs[i]->size < PMA_HDR_SIZE)
				continue;
			hdr[part * k + i] =
				(const void *)((const char *)pm_map_addr(
						       pool_part_map(pool,
								     part)) +
					       regs[i]->off);
			size[part * k + i] = regs[i]->size;
		}
	}
	for (d = 0; d < PMA_MAX_SLOTS; d++)
		for (p = 0; (dest_mask >> d & 1) && p < PMA_MAX_SLOTS; p++)
			n += ring_pending_of(hdr[d], hdr[p], size[p], d, p);
	*ret_entries = n;
	return 0;
}

/* o's consumer words into DRAM (each moved past the next lap's
 * entries a lost store of it left below, pma_xring_start: persisted) */
static int xring_cons_load(struct pma_heap *o)
{
	const struct pma_heap *top = o->top;
	const struct pma_xent *ring;
	uint64_t start;
	unsigned s;

	for (s = 0; s < PMA_MAX_SLOTS; s++) {
		if (pma_check_cons_decode(o->hdr->xcons[s], s, &o->xcons[s]) <
		    0)
			return util_errmsg_set(
				EIO,
				"heap header: the word of frees "
				"applied from slot %u is damaged "
				"(check mismatch)",
				s);
		ring = s != o->slot && top->slot_hdr[s] ?
			       pma_xring_of(top->slot_hdr[s], top->slot_size[s],
					    o->slot) :
			       NULL;
		start = ring ? pma_xring_start(ring, o->xcons[s]) : o->xcons[s];
		if (start == o->xcons[s])
			continue;
		o->xcons[s] = start;
		__atomic_store_n(&o->hdr->xcons[s],
				 pma_check_cons(o->xcons[s], s),
				 __ATOMIC_RELEASE);
		pm_persist(o->map, &o->hdr->xcons[s], sizeof(uint64_t));
	}
	return 0;
}

int pma_xring_open(struct pma_heap *top)
{
	unsigned s;
	int rc;

	for (s = 0; s < PMA_MAX_SLOTS; s++) {
		if (!top->sib[s] || !top->sib[s]->xring)
			continue;
		rc = xring_cons_load(top->sib[s]);
		if (rc == 0)
			rc = xring_recover(top->sib[s]);
		if (rc < 0) {
			util_errmsg_prefix("part %u region %u", s / top->nreg,
					   s % top->nreg);
			return rc;
		}
	}
	for (s = 0; s < PMA_MAX_SLOTS; s++)
		if (top->sib[s])
			(void)pma_xring_drain(top->sib[s]);
	return 0;
}

int pma_xring_add(struct pma_heap *sib)
{
	int rc;

	if (!sib->xring)
		return 0;
	rc = xring_cons_load(sib);
	return rc < 0 ? rc : xring_recover(sib);
}

PMA_API int pma_heap_sync(struct pma_heap *heap)
{
	unsigned s;
	int n = 0;

	if (!heap)
		return util_errmsg_set(EINVAL, "no heap");
	heap = heap->top;
	for (s = 0; s < PMA_MAX_SLOTS; s++)
		if (pma_sib(heap, s))
			n += pma_xring_drain(pma_sib(heap, s));
	return n;
}
