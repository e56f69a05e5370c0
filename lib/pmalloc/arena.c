/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc arenas: one bookkeeping log and the slabs allocated from it.
 * A thread binds to one arena per heap (round robin at first use) and
 * keeps it; the arena mutex is uncontended while threads <= arenas. Also
 * the log append/commit primitives every operation goes through.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pmalloc/internal.h"
#include "util/errmsg.h"

/* the last heap this thread used and its arena there */
static __thread struct {
	uint64_t heap_id;
	unsigned arena;
} tls_binding;

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
	arena->ops = calloc(heap->geom.log_cap, sizeof(*arena->ops));
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
	free(arena->ops);
	pthread_mutex_destroy(&arena->lock);
}

struct pma_arena *pma_arena_get(struct pma_heap *heap)
{
	if (tls_binding.heap_id != heap->id) {
		tls_binding.heap_id = heap->id;
		tls_binding.arena = atomic_fetch_add(&heap->next_arena, 1) %
				    heap->geom.narenas;
	}
	return &heap->arenas[tls_binding.arena];
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

/* write record k and flush its line; the caller fences */
static void log_put(struct pma_arena *arena, unsigned type, uint64_t payload,
		    uint64_t value)
{
	uint32_t cap = arena->heap->geom.log_cap;
	struct pma_rec *slot = pma_booklog_slot(arena->log, cap, arena->tail);
	struct pma_rec rec;

	pma_booklog_encode(arena->tail, cap, type, payload, value, &rec);
	__atomic_store_n(&slot->word0, rec.word0, __ATOMIC_RELAXED);
	__atomic_store_n(&slot->word1, rec.word1, __ATOMIC_RELAXED);
	pm_flush(arena->heap->map, slot, sizeof(*slot));
	arena->tail++;
}

/*
 * Append op's record(s), flushed but not fenced. The caller checked room
 * (pma_log_room). The records are the commit point once fenced.
 */
int pma_log_append_op(struct pma_arena *arena, const struct pma_op *op)
{
	uint32_t cap = arena->heap->geom.log_cap;
	struct pma_dram_op *d = &arena->ops[arena->tail % cap];
	uint64_t value = op->dest;
	int ext = op->type == PMA_REC_EXT_ALLOC || op->type == PMA_REC_EXT_FREE;

	if (arena->tail + 2 - arena->head > cap)
		return -ENOSPC;
	d->off = op->off;
	d->npages = op->npages;
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
 * Commit: flush the previous op's dest line, fence (the records appended
 * since the last fence become durable: the op is committed), then store
 * value in *dest. The store is made durable by the next commit or
 * checkpoint; until then recovery redoes it from the last record.
 */
void pma_log_commit(struct pma_arena *arena, uint64_t *dest, uint64_t value)
{
	struct pma_heap *heap = arena->heap;
	uint64_t dest_off = pma_offset(heap, dest);

	/* the same word again: this op's record supersedes the last one's,
	 * so its old value need not be durable (saves a reflush) */
	if (arena->dest_unflushed == dest)
		arena->dest_unflushed = NULL;
	pma_arena_flush_dest(arena);
	pm_drain(heap->map);
	__atomic_store_n(dest, value, __ATOMIC_RELEASE);
	if (dest_off) {
		arena->dest_unflushed = dest;
		arena->dest_map =
			pool_part_map(heap->pool, pool_off_part(dest_off));
	}
}

void pma_arena_flush_dest(struct pma_arena *arena)
{
	if (!arena->dest_unflushed)
		return;
	pm_flush(arena->dest_map, arena->dest_unflushed, sizeof(uint64_t));
	arena->dest_unflushed = NULL;
}

void pma_arenas_lock(struct pma_heap *heap)
{
	unsigned i;

	for (i = 0; i < heap->geom.narenas; i++)
		pthread_mutex_lock(&heap->arenas[i].lock);
}

void pma_arenas_unlock(struct pma_heap *heap)
{
	unsigned i = heap->geom.narenas;

	while (i--)
		pthread_mutex_unlock(&heap->arenas[i].lock);
}
