/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc arena ownership: a thread binds to one arena per heap and, if
 * the arena has no owner yet, owns it. The owner locks its arena without
 * an atomic read-modify-write: it announces itself in arena->busy and
 * checks arena->revoked (a biased lock). Anyone else (a checkpoint, a
 * thread sharing the arena because every arena is owned, an allocation
 * taking a block from another arena) takes the arena mutex, sets revoked,
 * and waits until busy is clear. The two sides form a Dekker handshake:
 * the owner stores busy then loads revoked, the revoker stores revoked
 * then loads busy; the owner's side needs no fence because the revoker
 * issues membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which runs a full
 * barrier on every CPU running a thread of the process (and a context
 * switch is one too). Where membarrier is not available the owner issues
 * a full fence instead (still no lock). The owner's slow path (it saw
 * revoked) is the mutex, which the revoker holds until it clears revoked.
 * A thread has one binding per part index (a multi-part heap is one heap
 * per part, see heap.c). An owner releases its arena when it binds to
 * another heap of the same part index or exits
 * (thread-specific destructor), through a registry of open heaps, so a
 * closed heap is never touched. Lock order: heaps_lock, then an arena
 * mutex.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pmalloc/internal.h"

/* the address of this variable names the thread (unique among live
 * threads; a new thread reusing a dead one's address inherits nothing:
 * the dead thread released its arena at exit) */
UTIL_TLS_FAST char pma_tls_token;

/* per region slot, the heap this thread used last and its arena there */
UTIL_TLS_FAST struct pma_tls_binding pma_tls_binding[PMA_MAX_SLOTS];

static pthread_once_t owner_once = PTHREAD_ONCE_INIT;
static pthread_key_t owner_key; /* destructor: release at thread exit */
static int owner_key_ok;
/* the kernel has private expedited membarrier (set once, before any heap
 * is open; a heap uses it if its config says so: heap->membarrier) */
static int pma_use_membarrier;

static pthread_mutex_t heaps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pma_heap *heaps; /* open heaps (heap->next_open) */

static void binding_release(struct pma_tls_binding *b);

static void owner_thread_exit(void *arg)
{
	unsigned i;

	(void)arg;
	for (i = 0; i < PMA_MAX_SLOTS; i++)
		binding_release(&pma_tls_binding[i]);
}

static void owner_init(void)
{
	owner_key_ok = pthread_key_create(&owner_key, owner_thread_exit) == 0;
	pma_use_membarrier = syscall(__NR_membarrier,
				     MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
				     0, 0) == 0;
}

/* the revoker's side: after storing revoked, before loading busy */
static void revoker_fence(int membarrier)
{
	if (membarrier) {
		/* cannot fail once registered (a forked child inherits the
		 * registration; register again in case a kernel does not);
		 * if it did, owners would race with us: stop rather than
		 * corrupt the heap */
		if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED,
			    0, 0) != 0 &&
		    (syscall(__NR_membarrier,
			     MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0,
			     0) != 0 ||
		     syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED,
			     0, 0) != 0)) {
			fprintf(stderr, "pmalloc: membarrier failed\n");
			abort();
		}
		return;
	}
	atomic_thread_fence(memory_order_seq_cst);
}

static void wait_idle(struct pma_arena *arena)
{
	unsigned spins = 0;

	while (atomic_load_explicit(&arena->busy, memory_order_acquire)) {
		if (++spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_pause();
#endif
		} else {
			sched_yield();
		}
	}
}

void pma_heap_register(struct pma_heap *heap)
{
	pthread_once(&owner_once, owner_init);
	pthread_mutex_lock(&heaps_lock);
	heap->next_open = heaps;
	heaps = heap;
	pthread_mutex_unlock(&heaps_lock);
}

void pma_heap_unregister(struct pma_heap *heap)
{
	struct pma_heap **p;

	pthread_mutex_lock(&heaps_lock);
	for (p = &heaps; *p; p = &(*p)->next_open)
		if (*p == heap) {
			*p = heap->next_open;
			break;
		}
	pthread_mutex_unlock(&heaps_lock);
}

/* give up the arena this thread owns through b, if its heap is still
 * open */
static void binding_release(struct pma_tls_binding *b)
{
	struct pma_heap *h;
	uintptr_t me = pma_self_token();

	if (!b->owns)
		return;
	b->owns = 0;
	pthread_mutex_lock(&heaps_lock);
	for (h = heaps; h; h = h->next_open)
		if (h == b->heap && h->id == b->heap_id) {
			atomic_compare_exchange_strong(
				&h->arenas[b->arena].owner, &me, 0);
			break;
		}
	pthread_mutex_unlock(&heaps_lock);
}

/* bind the calling thread to arena idx of heap (owns: it owns it) */
static struct pma_arena *binding_set(struct pma_heap *heap, unsigned idx,
				     int owns)
{
	struct pma_tls_binding *b = &pma_tls_binding[heap->slot];

	b->heap_id = heap->id;
	b->heap = heap;
	b->arena = idx;
	b->arena_p = &heap->arenas[idx];
	b->owns = owns;
	if (owns && owner_key_ok)
		(void)pthread_setspecific(owner_key, pma_tls_binding);
	return &heap->arenas[idx];
}

/* own arena if nobody does (under its mutex: a revoker that found no
 * owner keeps that true while it holds the mutex) */
static int arena_claim(struct pma_arena *arena)
{
	int ok = 0;

	if (atomic_load_explicit(&arena->owner, memory_order_relaxed))
		return 0;
	pthread_mutex_lock(&arena->lock);
	if (!atomic_load_explicit(&arena->owner, memory_order_relaxed)) {
		atomic_store_explicit(&arena->owner, pma_self_token(),
				      memory_order_relaxed);
		ok = 1;
	}
	pthread_mutex_unlock(&arena->lock);
	return ok;
}

/* first use of heap by this thread: an unowned arena, round robin from
 * the heap's counter; if all are owned, share one (mutex path) */
struct pma_arena *pma_arena_bind_first(struct pma_heap *heap)
{
	unsigned n = heap->geom.narenas, start, i, idx;
	int owns = 0;

	binding_release(&pma_tls_binding[heap->slot]);
	start = atomic_fetch_add(&heap->next_arena, 1) % n;
	idx = start;
	for (i = 0; i < n && !owns; i++) {
		idx = (start + i) % n;
		owns = arena_claim(&heap->arenas[idx]);
	}
	if (!owns)
		idx = start;
	return binding_set(heap, idx, owns);
}

struct pma_arena *pma_arena_bind(struct pma_heap *heap, unsigned idx)
{
	binding_release(&pma_tls_binding[heap->slot]);
	idx %= heap->geom.narenas;
	return binding_set(heap, idx, arena_claim(&heap->arenas[idx]));
}

/* mutex held: keep the owner (if another thread) out of its fast path */
static int revoke_start(struct pma_arena *arena)
{
	uintptr_t owner =
		atomic_load_explicit(&arena->owner, memory_order_relaxed);

	if (!owner || owner == pma_self_token())
		return 0;
	atomic_store_explicit(&arena->revoked, 1, memory_order_relaxed);
	return 1;
}

/*
 * The owner saw revoked: spin a while for it to clear and enter the fast
 * path again, the same handshake as pma_arena_lock (a checkpoint holds
 * the arena for tens of microseconds; sleeping on the mutex costs a futex
 * wake and, in a VM, waking a halted vCPU, often more than that). 1 if it
 * got the arena that way.
 */
static int owner_spin_relock(struct pma_arena *arena)
{
	unsigned spins;

	for (spins = 0; spins < PMA_OWNER_SPINS; spins++) {
		if (!atomic_load_explicit(&arena->revoked,
					  memory_order_relaxed) &&
		    pma_owner_enter(arena))
			return 1;
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	}
	return 0;
}

void pma_arena_lock_slow(struct pma_arena *arena, int owner)
{
	if (owner) {
		/* the owner saw revoked: someone holds the mutex; wait for
		 * it to finish, spinning first, then on the mutex */
		atomic_store_explicit(&arena->busy, 0, memory_order_release);
		if (owner_spin_relock(arena))
			return;
		pthread_mutex_lock(&arena->lock);
		arena->owner_fast = 0;
		arena->revoking = 0;
		return;
	}
	pthread_mutex_lock(&arena->lock);
	arena->revoking = revoke_start(arena);
	if (arena->revoking) {
		revoker_fence(arena->membarrier);
		wait_idle(arena);
	}
}

/* unlock after pma_arena_lock took the mutex (or pma_arenas_lock did) */
static void arena_unlock_mutex(struct pma_arena *arena)
{
	if (arena->revoking)
		atomic_store_explicit(&arena->revoked, 0, memory_order_release);
	pthread_mutex_unlock(&arena->lock);
}

void pma_arena_unlock_slow(struct pma_arena *arena)
{
	arena_unlock_mutex(arena);
}

/* every arena, in index order, with one membarrier for all owners */
void pma_arenas_lock(struct pma_heap *heap)
{
	unsigned i, n = heap->geom.narenas;
	int any = 0;

	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&heap->arenas[i].lock);
		heap->arenas[i].revoking = revoke_start(&heap->arenas[i]);
		any |= heap->arenas[i].revoking;
	}
	if (!any)
		return;
	revoker_fence(heap->membarrier);
	for (i = 0; i < n; i++)
		if (heap->arenas[i].revoking)
			wait_idle(&heap->arenas[i]);
}

void pma_arenas_unlock(struct pma_heap *heap)
{
	unsigned i = heap->geom.narenas;

	while (i--)
		arena_unlock_mutex(&heap->arenas[i]);
}

int pma_owner_membarrier(void)
{
	pthread_once(&owner_once, owner_init);
	return pma_use_membarrier;
}
