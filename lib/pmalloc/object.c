/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc objects: offset <-> address, what an offset names (slab block,
 * extent), usable size, the root object, and the checks that keep dest
 * words out of pool and heap metadata. All lock-free readers of the DRAM
 * state: a slab a checkpoint released while they read it was empty (no
 * live block), and its DRAM slab stays allocated while the heap is open
 * (reused for a new slab: then it describes that one).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pmalloc/internal.h"
#include "util/errmsg.h"

PMA_API const char *pma_errormsg(void)
{
	return util_errmsg();
}

PMA_API void *pma_direct(struct pma_heap *heap, uint64_t off)
{
	return heap && off ? pool_direct(heap->pool, off) : NULL;
}

PMA_API uint64_t pma_offset(struct pma_heap *heap, const void *addr)
{
	return heap && addr ? pool_offset(heap->pool, addr) : 0;
}

struct pma_slab *pma_heap_slab_load(struct pma_heap *heap, uint64_t chunk)
{
	struct pma_slab *slab;

	if (pma_lazy_get(heap, chunk, &slab) < 0)
		return NULL;
	return slab;
}

uint64_t *pma_heap_dest_addr(struct pma_heap *heap, uint64_t off)
{
	char *addr;

	if (pma_heap_dest_check(heap, off) < 0)
		return NULL;
	addr = pool_direct(heap->pool, off);
	/* the whole word must be mapped */
	if (!addr || !pool_direct(heap->pool, off + sizeof(uint64_t) - 1))
		return NULL;
	return (uint64_t *)addr;
}

/* pma_usable_size of a block of a mixed slab (version 9): under its
 * owner's lock */
static size_t usable_mixed(struct pma_heap *heap, uint64_t b)
{
	uint64_t rel = b - heap->data_base;
	struct pma_slab *slab = pma_heap_slab_at_rel(heap, rel);
	struct pma_arena *arena;
	size_t size = 0;
	uint32_t idx;

	if (!slab)
		return 0;
	arena = &heap->arenas[slab->owner];
	pma_arena_lock(arena);
	if (pma_heap_slab_is(heap, rel, slab)) {
		if (pma_morph_old_live(slab, b))
			size = slab->old_block_size;
		else if (pma_slab_index(slab, b, &idx) == 0 &&
			 pma_slab_is_live(slab, idx))
			size = slab->block_size;
	}
	pma_arena_unlock(arena);
	return size;
}

PMA_API size_t pma_usable_size(struct pma_heap *heap, uint64_t off)
{
	uint64_t b = pool_off_byte(off), e;
	struct pma_slab *slab;
	uint32_t idx;
	int held;

	if (heap && (pool_off_part(off) != heap->part || heap->top->nreg > 1)) {
		const struct pma_heap *from = heap;

		heap = pma_heap_route(heap, off); /* its region's */
		if (heap && !pma_sib(from->top, heap->slot))
			heap = NULL; /* a region being added */
		if (!heap && ~from->top->held)
			(void)pma_heap_foreign_check(from, off);
	}
	if (!heap || pool_off_part(off) != heap->part || b < heap->data_base ||
	    pma_page_of(heap, b) >= heap->geom.npages)
		return 0;
	slab = pma_heap_slab_at(heap, b);
	if (slab &&
	    (held = pma_slab_geom_enter(
		     atomic_load_explicit(&heap->may_mix, memory_order_relaxed),
		     slab)) >= 0) {
		size_t size = pma_slab_index(slab, b, &idx) < 0 ||
					      !pma_slab_is_live(slab, idx) ?
				      0 :
				      slab->block_size;

		pma_slab_geom_leave(slab, held);
		return size;
	}
	if (slab)
		return usable_mixed(heap, b);
	e = atomic_load(&heap->pmap[pma_page_of(heap, b)]);
	if (b % PMA_PAGE || pma_pmap_kind(e) != PMA_PMAP_EXTENT)
		return 0;
	return pma_pmap_npages(e) * PMA_PAGE;
}

/* store the root word's check (its line, with the root word, durable) */
void pma_root_seal(struct pma_heap *heap)
{
	__atomic_store_n(&heap->hdr->root_check,
			 pma_check_root(heap->hdr->root_off), __ATOMIC_RELAXED);
	pm_persist(heap->map, &heap->hdr->root_off, 2 * sizeof(uint64_t));
}

/*
 * A root word and its check must agree (the word is written once). Before
 * recovery (recovered == 0) only a word and a check that are both set are
 * compared: recovery redoes the root word if its allocation was not
 * checkpointed. After it, a check of 0 with a root is a crash between the
 * two stores of pma_root (a writable open completes it); a check without
 * a root word is damage, except in a read-only open, which does not redo
 * dest words.
 */
int pma_root_verify(struct pma_heap *heap, int recovered)
{
	uint64_t off = heap->hdr->root_off, check = heap->hdr->root_check;

	if (!heap->checked || (!off && (!check || heap->rdonly)))
		return 0;
	if (!recovered && (!off || !check))
		return 0;
	if (off && (check == pma_check_root(off) || !check)) {
		if (!recovered)
			return 0;
		if (!check && !heap->rdonly)
			pma_root_seal(heap);
		/* the root's slab is read now, not at its first use: the
		 * way into everything else is checked at open */
		util_errmsg_clear();
		if (pma_usable_size(heap, off))
			return 0;
		if (!*util_errmsg())
			util_errmsg_set(EIO, "it names no live block");
		util_errmsg_prefix("the root object 0x%llx",
				   (unsigned long long)off);
		return -EIO;
	}
	return util_errmsg_set(EIO,
			       "heap header: the root word 0x%llx is damaged "
			       "(check mismatch)",
			       (unsigned long long)off);
}

/*
 * The dry run of a writable open (shadow state: the replayed page map
 * entries in heap->pmap_pm, the replayed slabs' copies): the root's slab
 * must pass the check of its first use, before recovery writes anything,
 * so that a refused heap stays as it was. The root word itself is redone
 * only after this; 0 here means not yet, and pma_root_verify checks the
 * rest after recovery.
 */
static uint64_t entry_now(const struct pma_heap *heap, const uint64_t *pmap_pm,
			  uint64_t page)
{
	uint64_t e = heap->pmap_pm[page] ? heap->pmap_pm[page] : pmap_pm[page];

	return e & ~PMA_PMAP_CHECK_MASK;
}

static int root_not_live(uint64_t off)
{
	return util_errmsg_set(EIO,
			       "the root object 0x%llx: it names no live "
			       "block after the replay",
			       (unsigned long long)off);
}

int pma_root_dry_check(struct pma_heap *heap, const uint64_t *pmap_pm)
{
	uint64_t off = heap->hdr->root_off, b = pool_off_byte(off), page, e;
	struct pma_slab *slab;
	uint32_t idx;
	int rc;

	if (!heap->checked || !off || pool_off_part(off) != heap->part ||
	    b < heap->data_base ||
	    (page = pma_page_of(heap, b)) >= heap->geom.npages)
		return 0;
	e = entry_now(heap, pmap_pm, page);
	if (b % PMA_PAGE == 0 && pma_pmap_kind(e) == PMA_PMAP_EXTENT)
		return 0; /* its page map entry was checked */
	page -= page % PMA_CHUNK_PAGES;
	e = entry_now(heap, pmap_pm, page);
	if (pma_pmap_kind(e) != PMA_PMAP_SLAB)
		return root_not_live(off);
	/* an entry the replay did not write must be in a marked group, or
	 * open would not see it (a damaged summary) */
	if ((!heap->shadow || !heap->pmap_pm[page]) && !pma_sum_has(heap, page))
		return util_errmsg_set(EIO,
				       "page map summary: the group of the "
				       "root object's slab 0x%llx is not "
				       "marked (damaged summary)",
				       (unsigned long long)pma_page_off(heap,
									page));
	slab = pma_slab_alloc();
	if (!slab)
		return util_errmsg_set(ENOMEM, "out of memory");
	rc = pma_lazy_peek(heap, page, e, slab);
	if (rc < 0)
		util_errmsg_prefix("the root object 0x%llx",
				   (unsigned long long)off);
	else if (!pma_morph_old_live(slab, b) &&
		 (pma_slab_index(slab, b, &idx) < 0 ||
		  !pma_slab_is_live(slab, idx)))
		rc = root_not_live(off);
	pma_morph_release(slab);
	free(slab);
	return rc;
}

/* the root object of h, whose header holds the root word (a whole-pool
 * open's, or slot 0's): made if there is none (h->root_lock held) */
static int root_get(struct pma_heap *h, size_t size, uint64_t *ret_off)
{
	uint64_t off;
	size_t have;
	int rc = 0;

	off = __atomic_load_n(&h->hdr->root_off, __ATOMIC_ACQUIRE);
	if (!off) { /* -EROFS if read-only */
		rc = pma_alloc_to(h, size, &h->hdr->root_off,
				  PMA_ALLOC_ZERO | PMA_ALLOC_HERE);
		off = h->hdr->root_off;
		if (rc == 0 && h->checked)
			pma_root_seal(h);
	} else if (!(have = pma_usable_size(h, off))) {
		rc = util_errmsg_set(EIO,
				     "the root word 0x%llx names no live "
				     "block (corrupt heap)",
				     (unsigned long long)off);
	} else if (have < size) {
		rc = util_errmsg_set(EINVAL,
				     "root object has %zu bytes, %zu "
				     "asked",
				     have, size);
	}
	if (rc == 0)
		*ret_off = off;
	return rc;
}

/*
 * A masked open without slot 0 and no root yet: the root lives in slot
 * 0's region and its word in slot 0's header, which only slot 0's holder
 * writes. The open takes slot 0 (the config's root hook: libpmad asks
 * pmad for it; without one, pma_heap_add_regions) and then makes it.
 * top->root_lock held.
 */
static int root_take_slot0(struct pma_heap *top)
{
	char why[256] = "";
	int rc;

	if (top->cfg.root_hook.fn) {
		rc = top->cfg.root_hook.fn(top, top->cfg.root_hook.arg, why,
					   sizeof(why));
		if (rc < 0) /* the hook's library keeps its own message */
			util_errmsg_set(-rc, "%s",
					why[0] ? why : strerror(-rc));
	} else {
		rc = pma_heap_add_regions(top, 1);
	}
	if (rc < 0) {
		util_errmsg_prefix("no root object yet, and this open could "
				   "not take region 0 of part 0 (slot 0), "
				   "where it is made");
		return rc;
	}
	if (!(__atomic_load_n(&top->held, __ATOMIC_ACQUIRE) & 1))
		return util_errmsg_set(EXDEV,
				       "no root object yet, and the root hook "
				       "did not give this open region 0 of "
				       "part 0 (slot 0), where it is made");
	return 0;
}

/* slot 0's root word, as another open may have written it */
static uint64_t root_word(const struct pma_heap *top)
{
	return __atomic_load_n(&top->slot_hdr[0]->root_off, __ATOMIC_ACQUIRE);
}

static int slot0_held(const struct pma_heap *top)
{
	return (__atomic_load_n(&top->held, __ATOMIC_ACQUIRE) & 1) != 0;
}

/* pma_root of a masked open whose lowest slot is not 0: the root word
 * read (its block is in a region another open holds), or slot 0 taken
 * and the root made there */
static int root_masked(struct pma_heap *top, size_t size, uint64_t *ret_off)
{
	uint64_t off = root_word(top);
	int rc = 0;

	if (off && !slot0_held(top)) {
		*ret_off = off;
		return 0;
	}
	pthread_mutex_lock(&top->root_lock);
	if (!slot0_held(top)) {
		rc = root_take_slot0(top);
		/* slot 0's holder made it meanwhile */
		off = root_word(top);
		if (rc < 0 && off) {
			util_errmsg_clear();
			*ret_off = off;
			rc = 1;
		}
	}
	if (rc == 0) {
		struct pma_heap *h0 = top->sib[0];

		pthread_mutex_lock(&h0->root_lock);
		rc = root_get(h0, size, ret_off);
		pthread_mutex_unlock(&h0->root_lock);
	}
	pthread_mutex_unlock(&top->root_lock);
	return rc < 0 ? rc : 0;
}

PMA_API int pma_root(struct pma_heap *heap, size_t size, uint64_t *ret_off)
{
	int rc;

	if (!heap || !ret_off || !size)
		return util_errmsg_set(EINVAL, "no heap, size or ret_off");
	heap = heap->top; /* the root word and its block are in part 0 */
	if (heap->slot)
		return root_masked(heap, size, ret_off);
	pthread_mutex_lock(&heap->root_lock);
	rc = root_get(heap, size, ret_off);
	pthread_mutex_unlock(&heap->root_lock);
	return rc;
}
