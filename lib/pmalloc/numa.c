/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc placement over the parts of a pool (one per NUMA node): a thread
 * allocates from the part of the node its CPU belongs to, and when that
 * part is full from the others, nearest node first. The tables are built
 * at open from lib/ns's topology (PMAD_FAKE_NUMA fakes one, read here if
 * the program did not set one) and each
 * part's node (its part header). The CPU is read with sched_getcpu (a
 * vDSO call) every PMA_PLACE_RECHECK allocations of the thread, so a
 * thread that migrates follows within that many.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "ns/ns.h"
#include "pmalloc/internal.h"
#include "util/errmsg.h"

#define PMA_PLACE_RECHECK 64

struct place_tls {
	unsigned cpu;
	unsigned left; /* calls before the CPU is read again */
	unsigned turn; /* PMA_HEAP_INTERLEAVE: 1 + the thread's turn */
	unsigned region; /* 1 + the thread's turn among a part's regions */
};
/* threads take a part's regions in turn (per process, not heap) */
static atomic_uint region_turns;
static UTIL_TLS_FAST struct place_tls place_tls;

static int part_distance(const struct pma_heap *top, unsigned a, unsigned b)
{
	return ns_node_distance(pma_part_heap(top, a)->node,
				pma_part_heap(top, b)->node);
}

/* the nearest part with a heap to node (the lowest index of equals) */
static unsigned nearest_part(const struct pma_heap *top, int node)
{
	unsigned p, best = 0;
	int d, best_d = -1;

	for (p = 0; p < POOL_MAX_PARTS; p++) {
		if (!pma_part_heap(top, p))
			continue;
		d = pma_part_heap(top, p)->node == node ?
			    0 :
			    ns_node_distance(node, pma_part_heap(top, p)->node);
		if (best_d < 0 || d < best_d) {
			best = p;
			best_d = d;
		}
	}
	return best;
}

int pma_place_init(struct pma_heap *top, unsigned flags)
{
	struct pma_place *pl;
	unsigned p, q, k, n, c;
	long ncpus;

	if (top->nsib == 1)
		return 0;
	/* PMAD_FAKE_NUMA (tests) for any client, unless the program set a
	 * fake topology itself; a bad spec leaves the real one (pmactl and
	 * pmad report it) */
	if (!ns_topology_is_fake())
		(void)ns_topology_init();
	ncpus = sysconf(_SC_NPROCESSORS_CONF);
	if (ncpus < 1)
		ncpus = 1;
	pl = calloc(1, sizeof(*pl));
	if (pl) {
		pl->cpu_part = calloc((size_t)ncpus, 1);
		pl->cpu_node = calloc((size_t)ncpus, sizeof(int));
	}
	if (!pl || !pl->cpu_part || !pl->cpu_node) {
		if (pl) {
			free(pl->cpu_part);
			free(pl->cpu_node);
		}
		free(pl);
		return util_errmsg_set(ENOMEM, "out of memory");
	}
	pl->ncpus = (unsigned)ncpus;
	pl->interleave = !!(flags & PMA_HEAP_INTERLEAVE);
	for (c = 0; c < pl->ncpus; c++) {
		pl->cpu_node[c] = ns_cpu_node(c);
		pl->cpu_part[c] = (uint8_t)nearest_part(top, pl->cpu_node[c]);
	}
	for (p = 0, n = 0; p < POOL_MAX_PARTS; p++)
		if (pma_part_heap(top, p))
			pl->parts[n++] = (uint8_t)p;
	for (p = 0; p < POOL_MAX_PARTS; p++) {
		if (!pma_part_heap(top, p))
			continue;
		/* p itself, then the others by distance from p (insertion
		 * sort: stable, so equals stay in index order) */
		pl->order[p][0] = (uint8_t)p;
		n = 1;
		for (q = 0; q < POOL_MAX_PARTS; q++) {
			if (!pma_part_heap(top, q) || q == p)
				continue;
			for (k = n++;
			     k > 1 &&
			     part_distance(top, p, pl->order[p][k - 1]) >
				     part_distance(top, p, q);
			     k--)
				pl->order[p][k] = pl->order[p][k - 1];
			pl->order[p][k] = (uint8_t)q;
		}
		pl->norder = n;
	}
	pl->retired = top->place;
	__atomic_store_n(&top->place, pl, __ATOMIC_RELEASE);
	return 0;
}

void pma_place_free(struct pma_heap *top)
{
	struct pma_place *pl = top->place, *next;

	for (; pl; pl = next) {
		next = pl->retired;
		free(pl->cpu_part);
		free(pl->cpu_node);
		free(pl);
	}
	top->place = NULL;
}

/* the thread's region of part (its turn among the part's regions) */
static struct pma_heap *place_region(struct pma_heap *top, unsigned part)
{
	unsigned k = top->nreg, i, r;
	struct pma_heap *h;

	if (k == 1)
		return pma_sib(top, part);
	if (!place_tls.region)
		place_tls.region = 1 + atomic_fetch_add(&region_turns, 1);
	/* a read-only open may lack a region never formatted */
	for (i = 0, r = (place_tls.region - 1) % k; i < k; i++, r = (r + 1) % k)
		if ((h = pma_sib(top, part * k + r)))
			return h;
	return top;
}

struct pma_heap *pma_place_local(struct pma_heap *top)
{
	struct pma_place *pl = __atomic_load_n(&top->place, __ATOMIC_ACQUIRE);
	int cpu;

	if (!pl)
		return top;
	if (__builtin_expect(place_tls.left == 0, 0)) {
		cpu = sched_getcpu();
		place_tls.cpu = cpu < 0 ? 0 : (unsigned)cpu;
		place_tls.left = PMA_PLACE_RECHECK;
		/* lib/pmem counts flushes into other nodes' parts */
		pm_thread_set_node(place_tls.cpu < pl->ncpus ?
					   pl->cpu_node[place_tls.cpu] :
					   -1);
		if (pl->interleave && !place_tls.turn)
			place_tls.turn =
				1 + atomic_fetch_add(&pl->next_thread, 1);
	}
	place_tls.left--;
	if (pl->interleave) /* (a thread's turn is per process, not heap) */
		return place_region(
			top, pl->parts[(place_tls.turn - 1) % pl->norder]);
	return place_region(top, place_tls.cpu < pl->ncpus ?
					 pl->cpu_part[place_tls.cpu] :
					 0);
}

const uint8_t *pma_place_order(struct pma_heap *top, unsigned part,
			       unsigned *ret_n)
{
	static const uint8_t only_zero[1] = { 0 };
	const struct pma_place *pl =
		__atomic_load_n(&top->place, __ATOMIC_ACQUIRE);

	if (!pl) {
		*ret_n = 1;
		return only_zero;
	}
	*ret_n = pl->norder;
	return pl->order[part];
}

unsigned pma_place_heaps(struct pma_heap *top, struct pma_heap *local,
			 struct pma_heap **order)
{
	unsigned k = top->nreg, start = local->slot % k, p, i, n = 0, np;
	const uint8_t *parts = pma_place_order(top, local->part, &np);
	struct pma_heap *h;

	for (p = 0; p < np; p++) {
		for (i = 0; i < k && parts[p] * k + i < PMA_MAX_SLOTS; i++) {
			h = pma_sib(top, parts[p] * k + (start + i) % k);
			if (h)
				order[n++] = h;
		}
	}
	return n;
}

PMA_API int pma_numa_nodes(int *nodes, unsigned max)
{
	unsigned i, count = 0;
	int rc;

	if (!nodes && max)
		return util_errmsg_set(EINVAL, "no node array for %u", max);
	/* the topology placement uses (pma_place_new) */
	if (!ns_topology_is_fake()) {
		rc = ns_topology_init();
		if (rc < 0)
			return rc;
	}
	for (i = 0; i < ns_node_count(); i++) {
		if (!ns_node_is_online((int)i))
			continue;
		if (count < max)
			nodes[count] = (int)i;
		count++;
	}
	return (int)count;
}
