/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc fsck, part 3 (fsck.h): the recovery check. What recovery still
 * has to do is read from a read-only open (the window of every arena's
 * log: its operations by type, a torn append it drops, remote frees whose
 * owner has not applied them yet); the recovery itself runs on a private
 * copy-on-write view of the pool (PMA_HEAP_PRIVATE: nothing reaches the
 * files), followed by a checkpoint, and the state it leaves is walked as
 * pma_fsck walks a pool on media.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pmalloc/fsck.h"
#include "util/errmsg.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* append v to the array *a of *n (capacity *cap); 0 or -ENOMEM */
static int push_u64(uint64_t **a, size_t *n, size_t *cap, uint64_t v)
{
	uint64_t *more;
	size_t c;

	if (*n == *cap) {
		c = *cap ? 2 * *cap : 64;
		more = realloc(*a, c * sizeof(*more));
		if (!more)
			return util_errmsg_set(ENOMEM, "out of memory");
		*a = more;
		*cap = c;
	}
	(*a)[(*n)++] = v;
	return 0;
}

/* the blocks of the windows' SYNC_FREE records, sorted: remote frees
 * their owner applied already */
static int synced_blocks(struct pma_heap *heap, uint64_t **ret, size_t *ret_n)
{
	uint32_t cap = heap->geom.log_cap;
	uint64_t *offs = NULL, k;
	size_t n = 0, alloc = 0;
	struct pma_op op;
	unsigned a;
	int rc = 0;

	for (a = 0; rc == 0 && a < heap->geom.narenas; a++) {
		const struct pma_arena *ar = &heap->arenas[a];

		for (k = ar->head; rc == 0 && k < ar->tail; k += op.nrecs) {
			if (pma_booklog_read_op(ar->log, cap, k, heap->osh,
						&op))
				break;
			if (op.type == PMA_REC_SYNC_FREE)
				rc = push_u64(&offs, &n, &alloc, op.off);
		}
	}
	if (rc < 0) {
		free(offs);
		return rc;
	}
	if (n)
		qsort(offs, n, sizeof(*offs), cmp_u64);
	*ret = offs;
	*ret_n = n;
	return 0;
}

static void pending_arena(struct pma_heap *heap, unsigned a,
			  const uint64_t *synced, size_t nsynced,
			  struct pma_fsck_pending_arena *p)
{
	const struct pma_arena *ar = &heap->arenas[a];
	uint32_t cap = heap->geom.log_cap;
	struct pma_op op;
	uint64_t k;

	p->head = ar->head;
	p->tail = ar->tail;
	for (k = ar->head; k < ar->tail; k += op.nrecs) {
		if (pma_booklog_read_op(ar->log, cap, k, heap->osh, &op))
			break;
		p->ops++;
		if (op.type < PMA_REC_NTYPES)
			p->by_type[op.type]++;
		if (op.type == PMA_REC_RFREE &&
		    !(nsynced && bsearch(&op.off, synced, nsynced,
					 sizeof(*synced), cmp_u64)))
			p->rfree_pending++;
	}
	p->torn = ar->tail - ar->head < cap &&
		  pma_fsck_slot_torn(ar->log, cap, ar->tail);
}

/* the pending work of one part's heap into ret->arenas[ret->narenas..] */
static int pending_part(struct pma_heap *heap, struct pma_fsck_pending *ret)
{
	uint64_t *synced = NULL;
	size_t nsynced = 0;
	unsigned a;
	int rc;

	/* a remote free and its owner's SYNC_FREE are in the logs of the
	 * block's own part */
	rc = synced_blocks(heap, &synced, &nsynced);
	for (a = 0; rc == 0 && a < heap->geom.narenas; a++) {
		struct pma_fsck_pending_arena *p = &ret->arenas[ret->narenas++];

		p->part = heap->part;
		p->arena = a;
		pending_arena(heap, a, synced, nsynced, p);
		ret->ops += p->ops;
		ret->torn += (unsigned)p->torn;
		ret->rfree_pending += p->rfree_pending;
		ret->arenas_pending += p->ops || p->torn;
	}
	free(synced);
	return rc;
}

int pma_fsck_pending(const char *path, struct pma_fsck_pending *ret)
{
	struct pma_heap *heap;
	unsigned p, n = 0;
	int rc;

	memset(ret, 0, sizeof(*ret));
	rc = pma_heap_open(path, PMA_HEAP_RDONLY, &heap);
	if (rc < 0)
		return rc;
	for (p = 0; p < PMA_MAX_SLOTS; p++)
		if (heap->sib[p])
			n += heap->sib[p]->geom.narenas;
	ret->arenas = calloc(n ? n : 1, sizeof(*ret->arenas));
	if (!ret->arenas)
		rc = util_errmsg_set(ENOMEM, "out of memory");
	for (p = 0; rc == 0 && p < PMA_MAX_SLOTS; p++) {
		if (!heap->sib[p])
			continue;
		ret->nparts += heap->sib[p]->slot % heap->nreg == 0;
		rc = pending_part(heap->sib[p], ret);
	}
	ret->root_unsealed = heap->hdr->root_off && !heap->hdr->root_check &&
			     heap->hdr->version >= PMA_HEAP_VERSION_CHECKED;
	pma_heap_close(heap);
	return rc;
}

int pma_fsck_window_dests(struct pma_heap *heap, pma_fsck_dest_fn fn, void *arg)
{
	const struct pma_heap *top = heap->top, *h;
	uint32_t cap;
	struct pma_op op;
	unsigned p, a;
	uint64_t k;
	int rc = 0;

	for (p = 0; rc == 0 && p < PMA_MAX_SLOTS; p++) {
		h = top->sib[p];
		if (!h)
			continue;
		cap = h->geom.log_cap;
		for (a = 0; rc == 0 && a < h->geom.narenas; a++) {
			const struct pma_arena *ar = &h->arenas[a];

			for (k = ar->head; rc == 0 && k < ar->tail;
			     k += op.nrecs) {
				if (pma_booklog_read_op(ar->log, cap, k, h->osh,
							&op))
					break;
				/* (a SLAB_NEW's value is no dest) */
				if (op.dest && op.type != PMA_REC_SLAB_NEW)
					rc = fn(h->part, a, op.index, op.dest,
						arg);
			}
		}
	}
	return rc;
}

void pma_fsck_pending_free(struct pma_fsck_pending *p)
{
	free(p->arenas);
	p->arenas = NULL;
	p->narenas = 0;
}

int pma_fsck_recover_private(const char *path, struct pool_fsck_sink *sink,
			     pma_fsck_then_fn then)
{
	struct pma_heap *heap;
	int rc;

	rc = pma_heap_open(path, PMA_HEAP_PRIVATE, &heap);
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0)
		return pool_fsck_report(sink, "recovery-refused",
					POOL_FSCK_ERROR, 0, 0,
					"recovery (on a private view of the "
					"pool) refuses it: %s",
					pma_errormsg());
	/* retire what recovery replayed: the state on media alone */
	rc = pma_heap_checkpoint(heap);
	if (rc == -ENOMEM) {
		pma_heap_close(heap);
		return rc;
	}
	if (rc < 0)
		rc = pool_fsck_report(sink, "recovery-checkpoint-failed",
				      POOL_FSCK_ERROR, 0, 0,
				      "the checkpoint after recovery (on a "
				      "private view of the pool) fails: %s",
				      pma_errormsg());
	else
		rc = pma_fsck_heap(heap, sink);
	if (rc == 0 && then)
		rc = then(heap, sink);
	pma_heap_close(heap);
	return rc;
}
