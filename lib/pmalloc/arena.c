/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc arenas: one bookkeeping log and the slabs allocated from it
 * (binding threads to arenas and locking them: owner.c). Also the log
 * append/commit primitives every operation goes through.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pmalloc/internal.h"
#include "util/errmsg.h"

int pma_arena_init(struct pma_heap *heap, unsigned id, struct pma_arena *arena)
{
	struct pma_arena_desc *descs =
		pma_addr(heap, heap->region_off + heap->geom.arena_off);
	struct pma_rec *logs =
		pma_addr(heap, heap->region_off + heap->geom.log_off);

	memset(arena, 0, sizeof(*arena));
	if (pthread_mutex_init(&arena->lock, NULL))
		return util_errmsg_set(ENOMEM, "cannot create arena lock");
	arena->heap = heap;
	arena->id = id;
	arena->desc = &descs[id];
	arena->log = logs + (size_t)id * heap->geom.log_cap;
	arena->head = arena->desc->head[heap->head_gen & 1];
	arena->tail = arena->head;
	arena->cur_k = ~0ULL;
	arena->ops = pma_zmap(heap->geom.log_cap * sizeof(*arena->ops));
	if (!arena->ops) {
		pthread_mutex_destroy(&arena->lock);
		return util_errmsg_set(ENOMEM, "out of memory for arena %u",
				       id);
	}
	return 0;
}

void pma_arena_release(struct pma_arena *arena)
{
	free(arena->rfreed.offs);
	free(arena->ext_freed.offs);
	free(arena->local.runs);
	pma_zunmap(arena->ops, arena->heap->geom.log_cap * sizeof(*arena->ops));
	pthread_mutex_destroy(&arena->lock);
}

int pma_pending_push(struct pma_pending *p, uint64_t off)
{
	uint64_t *v;
	size_t n;

	if (p->count == p->alloc) {
		n = p->alloc ? p->alloc * 2 : 64;
		v = reallocarray(p->offs, n, sizeof(*v));
		if (!v)
			return -ENOMEM;
		p->offs = v;
		p->alloc = n;
	}
	p->offs[p->count++] = off;
	return 0;
}

/* merge run i with any run adjacent to it (so a list of neighbours
 * freed one by one becomes one run again) */
static void runs_merge(struct pma_runs *r, size_t i)
{
	size_t j = 0;

	while (j < r->count) {
		if (j != i &&
		    (r->runs[j].page + r->runs[j].npages == r->runs[i].page ||
		     r->runs[i].page + r->runs[i].npages == r->runs[j].page)) {
			if (r->runs[j].page < r->runs[i].page)
				r->runs[i].page = r->runs[j].page;
			r->runs[i].npages += r->runs[j].npages;
			r->runs[j] = r->runs[--r->count];
			if (i == r->count)
				i = j;
			j = 0;
			continue;
		}
		j++;
	}
}

int pma_runs_put(struct pma_runs *r, uint64_t page, uint64_t npages)
{
	struct pma_run *v;
	size_t n;

	if (r->count == r->alloc) {
		n = r->alloc ? r->alloc * 2 : 16;
		v = reallocarray(r->runs, n, sizeof(*v));
		if (!v)
			return -ENOMEM;
		r->runs = v;
		r->alloc = n;
	}
	r->runs[r->count].page = page;
	r->runs[r->count].npages = npages;
	r->count++;
	r->pages += npages;
	runs_merge(r, r->count - 1);
	return 0;
}

int pma_runs_take(struct pma_runs *r, uint64_t npages, uint64_t *ret_page)
{
	struct pma_run *run = NULL;
	size_t i;

	/* best fit, the newest of equals (the warmest) */
	for (i = r->count; i-- > 0;)
		if (r->runs[i].npages >= npages &&
		    (!run || r->runs[i].npages < run->npages))
			run = &r->runs[i];
	if (!run)
		return -ENOMEM;
	*ret_page = run->page;
	run->page += npages;
	run->npages -= npages;
	r->pages -= npages;
	if (!run->npages)
		*run = r->runs[--r->count];
	return 0;
}

/* make the append cursor describe record tail */
static void log_cursor_sync(struct pma_arena *arena)
{
	uint32_t cap = arena->heap->geom.log_cap;

	if (arena->cur_k == arena->tail)
		return;
	arena->cur_k = arena->tail;
	arena->cur_lap = arena->tail / cap;
	arena->cur_slot = (uint32_t)(arena->tail % cap);
	arena->cur_epoch = pma_booklog_lap_epoch(arena->cur_lap);
	arena->cur_tag = pma_booklog_lap_tag(arena->cur_lap);
}

/* write record tail and flush its line; the caller fences */
static void log_put(struct pma_arena *arena, unsigned type, uint64_t payload,
		    uint64_t value)
{
	struct pma_rec *slot = pma_booklog_slot_at(arena->log, arena->cur_slot);
	struct pma_rec rec;

	pma_assert(arena->cur_k == arena->tail);
	pma_booklog_encode_bits(arena->tail, arena->cur_epoch, arena->cur_tag,
				type, payload, value, &rec);
	__atomic_store_n(&slot->word0, rec.word0, __ATOMIC_RELAXED);
	__atomic_store_n(&slot->word1, rec.word1, __ATOMIC_RELAXED);
	pm_flush(arena->heap->map, slot, sizeof(*slot));
	arena->tail++;
	arena->cur_k++;
	if (++arena->cur_slot == arena->heap->geom.log_cap) {
		arena->cur_slot = 0;
		arena->cur_lap++;
		arena->cur_epoch = pma_booklog_lap_epoch(arena->cur_lap);
		arena->cur_tag = pma_booklog_lap_tag(arena->cur_lap);
	}
}

/*
 * Append op's record(s), flushed but not fenced. The caller checked room
 * (pma_log_room). The records are the commit point once fenced.
 */
int pma_log_append_op(struct pma_arena *arena, const struct pma_op *op)
{
	uint32_t cap = arena->heap->geom.log_cap;
	struct pma_dram_op *d;
	uint64_t value = op->dest;
	int ext = op->type == PMA_REC_EXT_ALLOC ||
		  op->type == PMA_REC_EXT_FREE || op->type == PMA_REC_EXT_LFREE;

	if (arena->tail + 2 - arena->head > cap)
		return -ENOSPC;
	log_cursor_sync(arena);
	d = &arena->ops[arena->cur_slot];
	d->off = op->off;
	if (ext)
		d->npages = op->npages;
	else
		d->slab = op->slab;
	d->type = (uint8_t)op->type;
	d->nrecs = ext ? 2 : 1;
	d->cls = (uint8_t)op->cls;
	d->owner = (uint16_t)op->owner;
	if (op->type == PMA_REC_SLAB_NEW)
		value = (uint64_t)op->cls << 8 | (uint64_t)op->owner << 16;
	log_put(arena, op->type, op->off >> 6, value);
	if (ext)
		log_put(arena, PMA_REC_EXT_LEN, op->npages, 0);
	return 0;
}

/*
 * Commit: flush the pending dest line unless this op's dest word is in it,
 * fence (the records appended since the last fence become durable: the op
 * is committed), then store value in *dest. The stores of consecutive ops
 * into one line (an array of pointers, or one word again and again) are
 * so flushed once, not once per op (no reflush). Until their line is
 * flushed recovery redoes them from the log; to bound how far back, a
 * pending line holds at most PMA_DEST_BATCH runs (ops in a row on one
 * word form a run: only the last op of a run matters for its word).
 * Recovery redoes each arena's last PMA_DEST_REDO runs: a pending batch
 * plus the last op, whose fence may not have made its flush durable.
 */
void pma_log_commit(struct pma_arena *arena, uint64_t *dest, uint64_t dest_off,
		    uint64_t value)
{
	struct pma_heap *heap = arena->heap;
	uintptr_t line = (uintptr_t)dest & ~(uintptr_t)(PMA_LINE - 1);
	int new_run = dest != arena->dest_last;

	if (arena->dest_line &&
	    (!dest_off || line != arena->dest_line ||
	     (new_run && arena->dest_runs >= PMA_DEST_BATCH)))
		pma_arena_flush_dest(arena);
	pm_drain(heap->map);
	__atomic_store_n(dest, value, __ATOMIC_RELEASE);
	if (!dest_off)
		return;
	if (!arena->dest_line) {
		arena->dest_line = line;
		arena->dest_map =
			pool_off_part(dest_off) == heap->part ?
				heap->map :
				pool_part_map(heap->pool,
					      pool_off_part(dest_off));
		arena->dest_runs = 0;
		new_run = 1;
	}
	arena->dest_runs += new_run;
	arena->dest_last = dest;
}

void pma_arena_flush_dest(struct pma_arena *arena)
{
	if (!arena->dest_line)
		return;
	pm_flush(arena->dest_map, (const void *)arena->dest_line, PMA_LINE);
	arena->dest_line = 0;
	arena->dest_last = NULL;
}
