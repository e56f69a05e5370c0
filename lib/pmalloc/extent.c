/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc free-extent index (DRAM only, rebuilt from the page map at open):
 * free page ranges, always coalesced, in an AVL tree keyed by start. Every
 * node also holds the longest run of its subtree, so that take (first fit
 * with an alignment: slabs need 16-page alignment) descends only into
 * subtrees that can hold the request, and largest is the root's value.
 * put merges with both neighbours. Nodes come from blocks of
 * PMA_EXT_BLOCK_NODES (one malloc each, not one per node: the rebuild at
 * open puts every free run) and unused ones go to a free list; blocks are
 * freed only by pma_ext_index_release, so the index keeps its peak size
 * (48 bytes per run). Protected by heap->ext_lock.
 *
 * Operations are recursive: the depth is the tree height, below
 * 1.45 * log2(nodes + 2), i.e. < 90 for any node count that fits in memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pmalloc/internal.h"
#include "util/errmsg.h"
#include "util/io.h"

struct pma_ext_node {
	uint64_t start; /* first page */
	uint64_t npages; /* > 0 */
	uint64_t max; /* largest npages in this subtree */
	struct pma_ext_node *left, *right; /* left: next on the free list */
	int height; /* 1 for a leaf */
};

struct pma_ext_block {
	struct pma_ext_block *next;
	struct pma_ext_node nodes[PMA_EXT_BLOCK_NODES];
};

static int ext_height(const struct pma_ext_node *n)
{
	return n ? n->height : 0;
}

static uint64_t ext_max(const struct pma_ext_node *n)
{
	return n ? n->max : 0;
}

static uint64_t max3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a > b ? a : b;

	return m > c ? m : c;
}

/* recompute height and max of n from its children */
static void ext_update(struct pma_ext_node *n)
{
	int hl = ext_height(n->left), hr = ext_height(n->right);

	n->height = 1 + (hl > hr ? hl : hr);
	n->max = max3(n->npages, ext_max(n->left), ext_max(n->right));
}

static struct pma_ext_node *ext_rotate_right(struct pma_ext_node *n)
{
	struct pma_ext_node *l = n->left;

	/* called on a left-heavy node only (ext_balance): l is not NULL */
	/* NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
	n->left = l->right;
	l->right = n;
	ext_update(n);
	ext_update(l);
	return l;
}

static struct pma_ext_node *ext_rotate_left(struct pma_ext_node *n)
{
	struct pma_ext_node *r = n->right;

	/* a right-heavy node only: r is not NULL */
	/* NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
	n->right = r->left;
	r->left = n;
	ext_update(n);
	ext_update(r);
	return r;
}

/* n's subtrees are AVL trees whose heights differ by at most 2 */
static struct pma_ext_node *ext_balance(struct pma_ext_node *n)
{
	int bf = ext_height(n->left) - ext_height(n->right);

	if (bf > 1) {
		if (ext_height(n->left->left) < ext_height(n->left->right))
			n->left = ext_rotate_left(n->left);
		return ext_rotate_right(n);
	}
	if (bf < -1) {
		if (ext_height(n->right->right) < ext_height(n->right->left))
			n->right = ext_rotate_right(n->right);
		return ext_rotate_left(n);
	}
	ext_update(n);
	return n;
}

/* NOLINTNEXTLINE(misc-no-recursion): depth <= the AVL height */
static struct pma_ext_node *ext_insert(struct pma_ext_node *n,
				       struct pma_ext_node *x)
{
	if (!n)
		return x;
	if (x->start < n->start)
		n->left = ext_insert(n->left, x);
	else
		n->right = ext_insert(n->right, x);
	return ext_balance(n);
}

/* unlink the leftmost node of n into *ret_min */
/* NOLINTNEXTLINE(misc-no-recursion): depth <= the AVL height */
static struct pma_ext_node *ext_remove_min(struct pma_ext_node *n,
					   struct pma_ext_node **ret_min)
{
	if (!n->left) {
		*ret_min = n;
		return n->right;
	}
	n->left = ext_remove_min(n->left, ret_min);
	return ext_balance(n);
}

/*
 * Unlink the node starting at start. Nodes are relinked, never copied into
 * each other, so pointers to the other nodes stay valid.
 */
/* NOLINTNEXTLINE(misc-no-recursion): depth <= the AVL height */
static struct pma_ext_node *ext_remove(struct pma_ext_node *n, uint64_t start)
{
	struct pma_ext_node *m, *r;

	pma_assert(n);
	if (start < n->start) {
		n->left = ext_remove(n->left, start);
	} else if (start > n->start) {
		n->right = ext_remove(n->right, start);
	} else {
		if (!n->right)
			return n->left;
		r = ext_remove_min(n->right, &m);
		m->left = n->left;
		m->right = r;
		n = m;
	}
	return ext_balance(n);
}

/* recompute max on the path to the node starting at start (its length
 * changed, or its start moved without passing a neighbour) */
/* NOLINTNEXTLINE(misc-no-recursion): depth <= the AVL height */
static void ext_refresh(struct pma_ext_node *n, uint64_t start)
{
	pma_assert(n);
	if (start < n->start)
		ext_refresh(n->left, start);
	else if (start > n->start)
		ext_refresh(n->right, start);
	n->max = max3(n->npages, ext_max(n->left), ext_max(n->right));
}

/* a new newest block of PMA_EXT_BLOCK_NODES fresh nodes; -ENOMEM */
static int ext_block_new(struct pma_ext_index *idx)
{
	struct pma_ext_block *b;

	/* the shared allocation fault point: tests reach -ENOMEM through it */
	if (util_fault_hit(UTIL_FAULT_ALLOC))
		return -ENOMEM;
	b = malloc(sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->next = idx->blocks;
	idx->blocks = b;
	idx->nfresh = PMA_EXT_BLOCK_NODES;
	return 0;
}

/* a node from the free list, else from the newest block, else from a new
 * block; NULL if out of memory */
static struct pma_ext_node *ext_node_get(struct pma_ext_index *idx,
					 uint64_t start, uint64_t npages)
{
	struct pma_ext_node *n = idx->spare;

	if (n) {
		idx->spare = n->left;
		idx->nspare--;
	} else {
		if (idx->nfresh == 0 && ext_block_new(idx) < 0)
			return NULL;
		n = &idx->blocks->nodes[PMA_EXT_BLOCK_NODES - idx->nfresh--];
	}
	n->start = start;
	n->npages = npages;
	n->max = npages;
	n->left = n->right = NULL;
	n->height = 1;
	return n;
}

static void ext_node_put(struct pma_ext_index *idx, struct pma_ext_node *n)
{
	n->left = idx->spare;
	idx->spare = n;
	idx->nspare++;
}

int pma_ext_reserve(struct pma_ext_index *idx, size_t n)
{
	while (idx->nspare + idx->nfresh < n) {
		/* the newest block's unused nodes go to the spare list, so
		 * that a new block does not strand them */
		while (idx->nfresh)
			ext_node_put(idx,
				     &idx->blocks->nodes[PMA_EXT_BLOCK_NODES -
							 idx->nfresh--]);
		if (ext_block_new(idx) < 0)
			return -ENOMEM;
	}
	return 0;
}

void pma_ext_index_release(struct pma_ext_index *idx)
{
	struct pma_ext_block *b;

	while ((b = idx->blocks)) {
		idx->blocks = b->next;
		free(b);
	}
	memset(idx, 0, sizeof(*idx));
}

/* first page of an aligned range of npages in n, or UINT64_MAX */
static uint64_t ext_fit(const struct pma_ext_node *n, uint64_t npages,
			uint64_t align)
{
	uint64_t start = n->start;

	if (align > 1)
		start = (start + align - 1) / align * align;
	if (start - n->start > n->npages - npages)
		return UINT64_MAX;
	return start;
}

/*
 * The lowest-start node that can hold an aligned range of npages (its
 * first page in *ret_start), or NULL. Subtrees whose longest run is too
 * short are skipped. With align 1 every run of npages or more fits, so
 * this follows one path; with a larger alignment a run may be long enough
 * but not once aligned, and such near misses are the only backtracking.
 */
/* NOLINTNEXTLINE(misc-no-recursion): depth <= the AVL height */
static struct pma_ext_node *ext_first_fit(struct pma_ext_node *n,
					  uint64_t npages, uint64_t align,
					  uint64_t *ret_start)
{
	struct pma_ext_node *found;

	for (; n && n->max >= npages; n = n->right) {
		found = ext_first_fit(n->left, npages, align, ret_start);
		if (found)
			return found;
		if (n->npages >= npages) {
			*ret_start = ext_fit(n, npages, align);
			if (*ret_start != UINT64_MAX)
				return n;
		}
	}
	return NULL;
}

int pma_ext_take(struct pma_ext_index *idx, uint64_t npages, uint64_t align,
		 uint64_t *ret_start)
{
	struct pma_ext_node *n, *after = NULL;
	uint64_t start, end, n_end;

	pma_assert(npages > 0 && align > 0);
	n = ext_first_fit(idx->root, npages, align, &start);
	if (!n)
		return -ENOMEM;
	end = start + npages;
	n_end = n->start + n->npages;
	/* the one case that needs a node: allocate before changing anything */
	if (start > n->start && end < n_end) {
		after = ext_node_get(idx, end, n_end - end);
		if (!after)
			return -ENOMEM;
	}
	if (start == n->start && end == n_end) {
		idx->root = ext_remove(idx->root, n->start);
		ext_node_put(idx, n);
		idx->count--;
	} else if (start == n->start) {
		/* the start moves up, still below the next run's */
		n->start = end;
		n->npages = n_end - end;
		ext_refresh(idx->root, n->start);
	} else {
		n->npages = start - n->start;
		ext_refresh(idx->root, n->start);
		if (after) {
			idx->root = ext_insert(idx->root, after);
			idx->count++;
		}
	}
	idx->free_pages -= npages;
	/* the high-water mark of the pages in use (stats): takes happen
	 * only after the rebuild at open put every free run */
	if (!idx->low_set || idx->free_pages < idx->free_low) {
		idx->free_low = idx->free_pages;
		idx->low_set = 1;
	}
	*ret_start = start;
	return 0;
}

/* the nodes just below and just above page (none may start at it) */
static void ext_neighbours(struct pma_ext_node *n, uint64_t page,
			   struct pma_ext_node **ret_prev,
			   struct pma_ext_node **ret_next)
{
	*ret_prev = *ret_next = NULL;
	while (n) {
		pma_assert(n->start != page);
		if (n->start < page) {
			*ret_prev = n;
			n = n->right;
		} else {
			*ret_next = n;
			n = n->left;
		}
	}
}

int pma_ext_put(struct pma_ext_index *idx, uint64_t start, uint64_t npages)
{
	struct pma_ext_node *prev, *next, *n;
	uint64_t end = start + npages;
	int merge_prev, merge_next;

	pma_assert(npages > 0 && end > start);
	ext_neighbours(idx->root, start, &prev, &next);
	/* a range that overlaps a free one is a caller bug (double free) */
	pma_assert(!prev || prev->start + prev->npages <= start);
	pma_assert(!next || end <= next->start);
	merge_prev = prev && prev->start + prev->npages == start;
	merge_next = next && end == next->start;
	if (merge_prev && merge_next) {
		prev->npages += npages + next->npages;
		idx->root = ext_remove(idx->root, next->start);
		ext_node_put(idx, next);
		ext_refresh(idx->root, prev->start);
		idx->count--;
	} else if (merge_prev) {
		prev->npages += npages;
		ext_refresh(idx->root, prev->start);
	} else if (merge_next) {
		/* the start moves down, still above the previous run's end */
		next->start = start;
		next->npages += npages;
		ext_refresh(idx->root, start);
	} else {
		n = ext_node_get(idx, start, npages);
		if (!n)
			return -ENOMEM;
		idx->root = ext_insert(idx->root, n);
		idx->count++;
	}
	idx->free_pages += npages;
	return 0;
}

uint64_t pma_ext_largest(const struct pma_ext_index *idx)
{
	return ext_max(idx->root);
}

uint64_t pma_ext_free_pages(const struct pma_ext_index *idx)
{
	return idx->free_pages;
}

uint64_t pma_ext_free_low(const struct pma_ext_index *idx)
{
	return idx->low_set && idx->free_low < idx->free_pages ?
		       idx->free_low :
		       idx->free_pages;
}

/* NOLINTNEXTLINE(misc-no-recursion): depth <= the AVL height */
static int ext_walk_fn(const struct pma_ext_node *n, pma_ext_fn fn, void *arg)
{
	int rc;

	if (!n)
		return 0;
	rc = ext_walk_fn(n->left, fn, arg);
	if (rc == 0)
		rc = fn(n->start, n->npages, arg);
	if (rc == 0)
		rc = ext_walk_fn(n->right, fn, arg);
	return rc;
}

int pma_ext_foreach(const struct pma_ext_index *idx, pma_ext_fn fn, void *arg)
{
	return ext_walk_fn(idx->root, fn, arg);
}

/* ------------------------------------------------------------ checker */

struct ext_walk {
	const struct pma_ext_node *prev; /* in order */
	size_t count;
	uint64_t pages;
};

/* height of the subtree at n, or -EINVAL (message set) */
/* NOLINTNEXTLINE(misc-no-recursion): depth <= the AVL height */
static int ext_check_node(const struct pma_ext_node *n, struct ext_walk *w)
{
	int hl, hr;

	if (!n)
		return 0;
	hl = ext_check_node(n->left, w);
	if (hl < 0)
		return hl;
	if (n->npages == 0 || n->start + n->npages < n->start)
		return util_errmsg_set(EINVAL, "run at %llu: bad length %llu",
				       (unsigned long long)n->start,
				       (unsigned long long)n->npages);
	/* in order, strictly apart: touching runs must have been merged */
	if (w->prev && w->prev->start + w->prev->npages >= n->start)
		return util_errmsg_set(EINVAL,
				       "run at %llu (+%llu) not below run "
				       "at %llu, or touching it",
				       (unsigned long long)w->prev->start,
				       (unsigned long long)w->prev->npages,
				       (unsigned long long)n->start);
	w->prev = n;
	w->count++;
	w->pages += n->npages;
	hr = ext_check_node(n->right, w);
	if (hr < 0)
		return hr;
	if (hl - hr > 1 || hr - hl > 1)
		return util_errmsg_set(EINVAL,
				       "node at %llu unbalanced: %d vs %d",
				       (unsigned long long)n->start, hl, hr);
	if (n->height != 1 + (hl > hr ? hl : hr))
		return util_errmsg_set(EINVAL,
				       "node at %llu: height %d, real %d",
				       (unsigned long long)n->start, n->height,
				       1 + (hl > hr ? hl : hr));
	if (n->max != max3(n->npages, ext_max(n->left), ext_max(n->right)))
		return util_errmsg_set(EINVAL,
				       "node at %llu: subtree max %llu wrong",
				       (unsigned long long)n->start,
				       (unsigned long long)n->max);
	return n->height;
}

int pma_ext_check(const struct pma_ext_index *idx)
{
	struct ext_walk w = { 0 };
	const struct pma_ext_node *n;
	const struct pma_ext_block *b;
	size_t nspare = 0, nodes = 0;
	int rc;

	rc = ext_check_node(idx->root, &w);
	if (rc < 0)
		return rc;
	if (w.count != idx->count || w.pages != idx->free_pages)
		return util_errmsg_set(EINVAL,
				       "%zu runs of %llu pages, index says "
				       "%zu of %llu",
				       w.count, (unsigned long long)w.pages,
				       idx->count,
				       (unsigned long long)idx->free_pages);
	for (n = idx->spare; n; n = n->left)
		nspare++;
	for (b = idx->blocks; b; b = b->next)
		nodes += PMA_EXT_BLOCK_NODES;
	/* every node of every block is in the tree, free or fresh */
	if (nspare != idx->nspare || idx->count + nspare + idx->nfresh != nodes)
		return util_errmsg_set(EINVAL,
				       "%zu runs + %zu spare (list: %zu) + "
				       "%zu fresh nodes, %zu allocated",
				       idx->count, idx->nspare, nspare,
				       idx->nfresh, nodes);
	return 0;
}
