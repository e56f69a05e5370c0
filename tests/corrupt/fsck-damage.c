/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fsck-damage -- make a pool with a PMAlloc heap and damage one structure
 * of it in one specific way, for tests/cli/fsck.bats (the fsck corruption
 * suite: each damage must give its exact finding code and exit status).
 *
 *   fsck-damage make POOL     a pool whose heap has live blocks of several
 *                             classes and extents in both arenas, then
 *                             records of every kind in the logs of a
 *                             child that "crashes" (exits without close)
 *   fsck-damage make2 POOL    the same over two parts (POOL and POOL.1):
 *                             two threads take the parts in turn
 *                             (PMA_HEAP_INTERLEAVE), so both parts' heaps
 *                             hold blocks, dest words name blocks of the
 *                             other part, and each thread frees the other
 *                             part's blocks
 *   fsck-damage make-v9 POOL  a pool whose heap is of layout version 9
 *                             (before XFREE records), blocks of several
 *                             classes, closed
 *   fsck-damage list POOL     every root slot: index, block, usable size
 *   fsck-damage KIND POOL [PART]
 *                             damage POOL (KIND: see damages[] below) in
 *                             the heap of PART (default 0)
 *
 * Structures are found through a read-only open, as
 * tests/corrupt/corrupt-heap.c does; the damage is written with pwrite.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pmalloc.h"
#include "pmalloc/internal.h"
#include "pool/internal.h"
#include "util/crc.h"

#define POOL_SIZE (POOL_DATA_OFF + 6 * 1024 * 1024)
#define NSLOTS 64

static const size_t sizes[] = { 64, 100, 256, 700, 3000, 9000, 20000, 70000 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void die(const char *what)
{
	fprintf(stderr, "fsck-damage: %s: %s\n", what, pma_errormsg());
	exit(99);
}

static uint64_t *slots_of(struct pma_heap *heap)
{
	uint64_t root;

	if (pma_root(heap, NSLOTS * sizeof(uint64_t), &root) < 0)
		return NULL;
	return pma_direct(heap, root);
}

/* checkpointed blocks in both arenas, then a child's logged ops + crash */
static void make(const char *path)
{
	struct pma_heap *heap;
	uint64_t *slots;
	unsigned i;
	int status;
	pid_t pid;

	if (pma_heap_create(path, POOL_SIZE, PMA_HEAP_FORCE, &heap) < 0 ||
	    !(slots = slots_of(heap)))
		die("create");
	for (i = 0; i < NSLOTS / 2; i++) {
		pma_arena_bind(heap, i % 2);
		if (pma_malloc_to(heap, sizes[i % NSIZES], &slots[i]) < 0)
			die("malloc_to");
	}
	for (i = 0; i < NSLOTS / 2; i += 5)
		if (pma_free_from(heap, &slots[i]) < 0)
			die("free_from");
	pma_heap_close(heap);
	pid = fork();
	if (pid == 0) {
		if (pma_heap_open(path, 0, &heap) < 0 ||
		    !(slots = slots_of(heap)))
			_exit(2);
		for (i = NSLOTS / 2; i < NSLOTS; i++) {
			pma_arena_bind(heap, i % 2);
			if (pma_malloc_to(heap, sizes[(i * 3) % NSIZES],
					  &slots[i]) < 0)
				_exit(3);
		}
		for (i = 1; i < NSLOTS; i += 7) {
			pma_arena_bind(heap, (i / 7) % 2);
			if (slots[i] && pma_free_from(heap, &slots[i]) < 0)
				_exit(4);
		}
		_exit(0); /* a crash: no close, no checkpoint */
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
		die("child");
}

/* a heap of layout version 9 (before XFREE records) with blocks of
 * several classes, closed cleanly */
static void make_v9(const char *path)
{
	struct pma_config *cfg;
	struct pma_heap *heap;
	uint64_t *slots;
	unsigned i;

	if (pma_config_new(&cfg) < 0 ||
	    pma_config_set_format(cfg, PMA_HEAP_VERSION_MORPH, 0) < 0 ||
	    pma_config_set_flags(cfg, PMA_HEAP_FORCE) < 0)
		die("config");
	if (pma_heap_create_cfg(path, POOL_SIZE, cfg, &heap) < 0 ||
	    !(slots = slots_of(heap)))
		die("create");
	pma_config_delete(&cfg);
	for (i = 0; i < NSLOTS / 2; i++)
		if (pma_malloc_to(heap, sizes[i % NSIZES], &slots[i]) < 0)
			die("malloc_to");
	pma_heap_close(heap);
}

/* ------------------------------------------------------------ 2 parts */

struct filler {
	struct pma_heap *heap;
	uint64_t *slots; /* its half of the slots */
	unsigned first, n; /* slots [first, first + n) */
	int rc;
};

/* a thread of an interleaved heap (the first one takes part 0, the next
 * part 1): fill its slots, then free every third slot of the other
 * thread (blocks of the other part: frees of another part's blocks) */
static void *fill(void *arg)
{
	struct filler *w = arg;
	unsigned i;

	for (i = w->first; i < w->first + w->n; i++) {
		w->rc = pma_malloc_to(w->heap, sizes[(i * 5) % NSIZES],
				      &w->slots[i]);
		if (w->rc < 0)
			return NULL;
	}
	return NULL;
}

static void *unfill(void *arg)
{
	struct filler *w = arg;
	unsigned i;

	for (i = w->first; i < w->first + w->n; i += 3) {
		w->rc = w->slots[i] ? pma_free_from(w->heap, &w->slots[i]) : 0;
		if (w->rc < 0)
			return NULL;
	}
	return NULL;
}

/* two threads, one per part: fill, join, then each frees the other's */
static int fill_both(struct pma_heap *heap, uint64_t *slots, unsigned first,
		     unsigned n)
{
	struct filler w[2];
	pthread_t t[2];
	unsigned i;

	for (i = 0; i < 2; i++) {
		w[i] = (struct filler){ heap, slots, first + i * n / 2, n / 2,
					0 };
		if (pthread_create(&t[i], NULL, fill, &w[i]))
			return -1;
		/* one after the other: thread i takes part i */
		pthread_join(t[i], NULL);
		if (w[i].rc < 0)
			return -1;
	}
	for (i = 0; i < 2; i++) {
		w[i].first = first + (1 - i) * n / 2;
		if (pthread_create(&t[i], NULL, unfill, &w[i]))
			return -1;
	}
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return w[0].rc < 0 || w[1].rc < 0 ? -1 : 0;
}

/* a block of each part holds a dest word naming a block of the other */
static int cross_dests(struct pma_heap *heap, uint64_t *slots, unsigned a,
		       unsigned b)
{
	uint64_t *in_a = pma_direct(heap, slots[a]);
	uint64_t *in_b = pma_direct(heap, slots[b]);

	if (!in_a || !in_b)
		return -1;
	if (pma_malloc_to(heap, 128, &in_a[0]) < 0 ||
	    pma_malloc_to(heap, 128, &in_b[0]) < 0)
		return -1;
	return 0;
}

static void make2(const char *path)
{
	struct pool_create_params params = { 0 };
	char path1[4096];
	const char *paths[2] = { path, path1 };
	struct pma_heap *heap;
	struct pool *pool;
	uint64_t *slots;
	unsigned i, parts[2] = { 0, 0 };
	int status;
	pid_t pid;

	snprintf(path1, sizeof(path1), "%s.1", path);
	unlink(path);
	unlink(path1);
	params.nparts = 2;
	params.paths = paths;
	params.part_size = POOL_SIZE;
	params.mode = 0600;
	if (pool_create(&params, &pool) < 0)
		die("pool_create");
	pool_close(&pool);
	if (pma_heap_open(path, PMA_HEAP_FORMAT | PMA_HEAP_INTERLEAVE, &heap) <
		    0 ||
	    !(slots = slots_of(heap)))
		die("create");
	if (fill_both(heap, slots, 0, NSLOTS / 2) < 0)
		die("fill");
	for (i = 0; i < NSLOTS / 2; i++)
		if (slots[i])
			parts[(slots[i] >> 56) & 1]++;
	if (!parts[0] || !parts[1]) {
		fprintf(stderr, "fsck-damage: blocks in parts: %u, %u\n",
			parts[0], parts[1]);
		exit(99);
	}
	pma_heap_close(heap);
	pid = fork();
	if (pid == 0) {
		if (pma_heap_open(path, PMA_HEAP_INTERLEAVE, &heap) < 0 ||
		    !(slots = slots_of(heap)))
			_exit(2);
		if (fill_both(heap, slots, NSLOTS / 2, NSLOTS / 2) < 0)
			_exit(3);
		/* slot 1 (part 0) and slot NSLOTS / 4 + 1 (part 1) */
		if (cross_dests(heap, slots, 1, NSLOTS / 4 + 1) < 0)
			_exit(4);
		_exit(0); /* a crash: no close, no checkpoint */
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
		die("child");
}

/* ------------------------------------------------------------ damage */

struct where {
	struct pma_heap *heap; /* read-only */
	int fd;
};

static void put(struct where *w, uint64_t off, const void *buf, size_t len)
{
	if (pwrite(w->fd, buf, len, (off_t)off) != (ssize_t)len) {
		perror("fsck-damage: pwrite");
		exit(99);
	}
}

static void get(struct where *w, uint64_t off, void *buf, size_t len)
{
	if (pread(w->fd, buf, len, (off_t)off) != (ssize_t)len) {
		perror("fsck-damage: pread");
		exit(99);
	}
}

static void flip(struct where *w, uint64_t off, uint8_t mask)
{
	uint8_t b;

	get(w, off, &b, 1);
	b ^= mask;
	put(w, off, &b, 1);
}

static uint64_t pmap_off(struct where *w, uint64_t page)
{
	return w->heap->region_off + w->heap->geom.pmap_off + page * 8;
}

/* page of the first entry of kind on media (checkpointed: its slab
 * header is on media too), an extent of at least min pages */
static uint64_t find_page(struct where *w, uint64_t kind, uint64_t min)
{
	struct pma_heap *h = w->heap;
	uint64_t p, e;

	for (p = 0; p < h->geom.npages; p++) {
		get(w, pmap_off(w, p), &e, sizeof(e));
		if (pma_pmap_kind(e) == kind && pma_pmap_npages(e) >= min)
			return p;
	}
	fprintf(stderr, "fsck-damage: no page map entry of kind %llu\n",
		(unsigned long long)kind);
	exit(99);
}

/* a pool header copy changed and resealed (so only the change is bad) */
static void hdr_patch(struct where *w, unsigned copy, uint64_t size)
{
	struct pool_hdr *h = malloc(sizeof(*h));

	if (!h)
		exit(98);
	get(w, pool_hdr_copy_off(copy), h, sizeof(*h));
	h->regions[0].size = size;
	h->checksum = pool_hdr_checksum(h);
	put(w, pool_hdr_copy_off(copy), h, sizeof(*h));
	free(h);
}

static void d_hdr_a(struct where *w)
{
	flip(w, POOL_HDR_A_OFF + 0x1000, 0x01);
}
static void d_hdr_b(struct where *w)
{
	flip(w, POOL_HDR_B_OFF + 0x1000, 0x01);
}
static void d_part_hdr(struct where *w)
{
	flip(w, POOL_PART_HDR_OFF + 100, 0x01);
}
static void d_truncate(struct where *w)
{
	if (ftruncate(w->fd, POOL_SIZE - POOL_ALIGN) < 0)
		exit(99);
}
static void d_region(struct where *w)
{
	hdr_patch(w, 0, POOL_SIZE);
	hdr_patch(w, 1, POOL_SIZE);
}
static void d_heap_hdr(struct where *w)
{
	flip(w, w->heap->region_off + 72, 0x01); /* create_time */
}
static void d_head_gen(struct where *w)
{
	flip(w, w->heap->region_off + PMA_HEAD_GEN_OFF, 0x02);
}
static void d_arena_head(struct where *w)
{
	uint64_t off = w->heap->region_off + w->heap->geom.arena_off;

	flip(w, off + 8 * (w->heap->head_gen & 1), 0x04);
}
/* a record in the middle of a window: written whole, then damaged */
static void d_log_record(struct where *w)
{
	struct pma_heap *h = w->heap;
	struct pma_arena *a;
	unsigned i;

	for (i = 0; i < h->geom.narenas; i++) {
		a = &h->arenas[i];
		if (a->tail - a->head < 4)
			continue;
		/* word0's payload: the checksum no longer matches */
		flip(w,
		     (uint64_t)((char *)pma_booklog_slot(
					a->log, h->geom.log_cap, a->head + 1) -
				h->part_base) +
			     5,
		     0x10);
		return;
	}
	fprintf(stderr, "fsck-damage: no log with records\n");
	exit(99);
}
/* a record in the middle of a window sealed again (epoch, tag, checksum
 * valid) with record type 0 (PMA_REC_NONE), which no build writes: since
 * layout 10 (XFREE = 15) every other value of the 4-bit type field is a
 * record type */
static void d_log_type(struct where *w)
{
	struct pma_heap *h = w->heap;
	uint64_t k, payload, value;
	struct pma_arena *a;
	struct pma_rec r;
	unsigned i, type;

	for (i = 0; i < h->geom.narenas; i++) {
		a = &h->arenas[i];
		k = a->head + 1;
		if (a->tail - a->head < 4 ||
		    pma_booklog_decode(a->log, h->geom.log_cap, k, &type,
				       &payload, &value) < 0)
			continue;
		pma_booklog_encode(k, h->geom.log_cap, PMA_REC_NONE, payload,
				   value, &r);
		put(w,
		    (uint64_t)((char *)pma_booklog_slot(a->log, h->geom.log_cap,
							k) -
			       h->part_base),
		    &r, sizeof(r));
		return;
	}
	fprintf(stderr, "fsck-damage: no log with records\n");
	exit(99);
}
/* a torn append after the last record of arena 0's log: the first word
 * of a valid record written, its second not (a crash between them) */
static void d_torn_tail(struct where *w)
{
	struct pma_heap *h = w->heap;
	struct pma_arena *a = &h->arenas[0];
	struct pma_rec r;
	uint64_t off;

	pma_booklog_encode(a->tail, h->geom.log_cap, PMA_REC_ALLOC,
			   (h->data_base + 256) >> h->osh, 0, &r);
	off = (uint64_t)((char *)pma_booklog_slot(a->log, h->geom.log_cap,
						  a->tail) -
			 h->part_base);
	put(w, off, &r.word0, sizeof(r.word0));
}
static void d_slab_class(struct where *w)
{
	uint64_t page = find_page(w, PMA_PMAP_SLAB, 1);
	uint16_t cls = 63;

	put(w, pma_page_off(w->heap, page) + offsetof(struct pma_slab_hdr, cls),
	    &cls, sizeof(cls));
}
/* a bit past the last block of bank 0: no record touches it */
static void d_bitmap_bank(struct where *w)
{
	uint64_t page = find_page(w, PMA_PMAP_SLAB, 1);

	flip(w, pma_page_off(w->heap, page) + PMA_SLAB_BITMAP_OFF + 23, 0x80);
}
/* does a record of a window of h name byte offset off: a block op's
 * block (slab_op 0) or a slab op's slab (1)? */
static int in_window(struct pma_heap *h, uint64_t off, int slab_op)
{
	uint64_t k, payload, value;
	unsigned i, type;
	int hit;

	for (i = 0; i < h->geom.narenas; i++) {
		struct pma_arena *a = &h->arenas[i];

		for (k = a->head; k < a->tail; k++) {
			if (pma_booklog_decode(a->log, h->geom.log_cap, k,
					       &type, &payload, &value) < 0)
				continue;
			hit = slab_op ? type == PMA_REC_SLAB_NEW ||
						type == PMA_REC_SLAB_FREE :
					type == PMA_REC_ALLOC ||
						type == PMA_REC_FREE ||
						type == PMA_REC_RFREE ||
						type == PMA_REC_SYNC_FREE;
			if (hit && payload << h->osh == off)
				return 1;
		}
	}
	return 0;
}

/* flip bit b of the bank at base */
static void flip_bit(struct where *w, uint64_t base, unsigned b)
{
	flip(w, base + b / 8, (uint8_t)(1u << (b % 8)));
}

/*
 * Bitmap banks with several wrong bits. bank-window: in the bank of a
 * block a window's record names (of a slab made before the window), that
 * block's bit, a bit past the slab's last block and one bit no record
 * names (the evidence knows two, the check finds the third). bank-two:
 * two bits no record names in a bank no record touches (nothing knows
 * them).
 */
static void bank_bits(struct where *w, int window)
{
	struct pma_heap *h = w->heap;
	uint64_t k, payload, value, blk, slab, chunk_bytes, base;
	struct pma_slab_hdr hdr;
	unsigned i, type, idx, l, nbits, j, flipped;

	chunk_bytes = (uint64_t)PMA_CHUNK_PAGES << PMA_PAGE_SHIFT;
	for (i = 0; i < h->geom.narenas; i++) {
		struct pma_arena *a = &h->arenas[i];

		for (k = a->head; k < a->tail; k++) {
			if (pma_booklog_decode(a->log, h->geom.log_cap, k,
					       &type, &payload, &value) < 0 ||
			    (type != PMA_REC_ALLOC && type != PMA_REC_FREE))
				continue;
			blk = payload << h->osh;
			slab = h->data_base +
			       (blk - h->data_base) / chunk_bytes * chunk_bytes;
			get(w, slab, &hdr, sizeof(hdr));
			if (in_window(h, slab, 1) ||
			    hdr.magic != PMA_SLAB_MAGIC || !hdr.block_size)
				continue;
			idx = (unsigned)((blk - slab - PMA_SLAB_HDR_SIZE) /
					 hdr.block_size);
			l = idx % PMA_NBANKS;
			nbits = (hdr.nblocks - l + PMA_NBANKS - 1) / PMA_NBANKS;
			if (window && nbits >= 64 * PMA_SLAB_BANK_WORDS)
				continue; /* no bit past the last block */
			base = slab + PMA_SLAB_BITMAP_OFF + l * PMA_LINE;
			if (window) {
				flip_bit(w, base, idx / PMA_NBANKS);
				flip_bit(w, base, 64 * PMA_SLAB_BANK_WORDS - 1);
			} else {
				for (j = 0; j < PMA_NBANKS; j++)
					if (j != l)
						break;
				/* a bank of this slab the window leaves */
				l = j;
				base = slab + PMA_SLAB_BITMAP_OFF +
				       l * PMA_LINE;
				nbits = (hdr.nblocks - l + PMA_NBANKS - 1) /
					PMA_NBANKS;
			}
			for (j = 0, flipped = 0;
			     j < nbits && flipped < (window ? 1u : 2u); j++) {
				if (in_window(h,
					      slab + PMA_SLAB_HDR_SIZE +
						      (uint64_t)(j * PMA_NBANKS +
								 l) *
							      hdr.block_size,
					      0))
					continue;
				flip_bit(w, base, j);
				flipped++;
			}
			return;
		}
	}
	fprintf(stderr, "fsck-damage: no block op of an older slab\n");
	exit(99);
}
static void d_bank_window(struct where *w)
{
	bank_bits(w, 1);
}
static void d_bank_two(struct where *w)
{
	bank_bits(w, 0);
}
/* bank-two, then arena 0's head (after it the heap no longer opens
 * read-only): a drop of arena 0's log leaves the bank unrepairable */
static void d_head_bank_two(struct where *w)
{
	bank_bits(w, 0);
	d_arena_head(w);
}
static void d_pmap_entry(struct where *w)
{
	flip(w, pmap_off(w, find_page(w, PMA_PMAP_SLAB, 1)) + 2, 0x01);
}
/* a second, correctly checked extent entry inside an extent */
static void d_pmap_overlap(struct where *w)
{
	uint64_t page = find_page(w, PMA_PMAP_EXTENT, 2) + 1;
	uint64_t e = pma_check_pmap(pma_pmap_make(PMA_PMAP_EXTENT, 1), page);

	put(w, pmap_off(w, page), &e, sizeof(e));
}
/* a record of a window (alloc or free with a dest) whose dest is
 * rewritten to the root object's first word, resealed: for a heap that
 * holds an HDPM file system, the superblock's magic (hdpm-log-dest) */
static void d_dest_root_obj(struct where *w)
{
	struct pma_heap *h = w->heap;
	uint64_t k, payload, value, off, root = h->top->hdr->root_off;
	unsigned a, type;
	struct pma_rec r;

	for (a = 0; root && a < h->geom.narenas; a++) {
		struct pma_arena *ar = &h->arenas[a];

		for (k = ar->tail; k-- > ar->head;) {
			if (pma_booklog_decode(ar->log, h->geom.log_cap, k,
					       &type, &payload, &value) < 0 ||
			    (type != PMA_REC_ALLOC && type != PMA_REC_FREE) ||
			    !value)
				continue;
			pma_booklog_encode(k, h->geom.log_cap, type, payload,
					   root, &r);
			off = (uint64_t)((char *)pma_booklog_slot(
						 ar->log, h->geom.log_cap, k) -
					 h->part_base);
			put(w, off, &r, sizeof(r));
			return;
		}
	}
	fprintf(stderr, "fsck-damage: no root object, or no alloc or free "
			"record with a dest in a window\n");
	exit(99);
}
/* one bit of a slab bitmap bank's check word */
static void d_bank_check(struct where *w)
{
	uint64_t page = find_page(w, PMA_PMAP_SLAB, 1);

	flip(w,
	     pma_page_off(w->heap, page) + PMA_SLAB_BITMAP_OFF +
		     PMA_SLAB_BANK_CHECK * 8 + 2,
	     0x10);
}
/* the slot of record tail + 3 of arena 0's log, ahead of its end: a
 * record of this lap that fails its checksum */
static void d_slot_ahead(struct where *w)
{
	struct pma_heap *h = w->heap;
	struct pma_arena *a = &h->arenas[0];
	uint64_t k = a->tail + 3, off;
	struct pma_rec r;

	pma_booklog_encode(k, h->geom.log_cap, PMA_REC_ALLOC,
			   (h->data_base + 256) >> h->osh, 0, &r);
	r.word0 ^= 1ULL << 40; /* the payload: the checksum fails */
	off = (uint64_t)((char *)pma_booklog_slot(a->log, h->geom.log_cap, k) -
			 h->part_base);
	put(w, off, &r, sizeof(r));
}
/* a checked one-page extent entry in the last group the summary does
 * not mark (open ignores it) */
static void d_unmarked(struct where *w)
{
	struct pma_heap *h = w->heap;
	uint64_t page, e, mask;

	for (page = h->geom.npages; page-- > 0;) {
		if (pma_sum_has(h, page))
			continue;
		(void)pma_sum_word(h, page, &mask);
		e = pma_check_pmap(pma_pmap_make(PMA_PMAP_EXTENT, 1), page);
		put(w, pmap_off(w, page), &e, sizeof(e));
		return;
	}
	fprintf(stderr, "fsck-damage: every summary group is marked\n");
	exit(99);
}
static void d_summary(struct where *w)
{
	flip(w, w->heap->region_off + w->heap->geom.sum_off, 0x01);
}
static void d_root_word(struct where *w)
{
	flip(w, w->heap->region_off + PMA_ROOT_WORD_OFF + 1, 0x01);
}

/* a record of arena 0's window (a heap of 2 parts) gets as its dest word
 * a word of the other part's heap header (resealed: only the dest is
 * bad): recovery refuses a dest in any part's heap metadata */
static void d_dest_meta(struct where *w)
{
	struct pma_heap *h = w->heap, *other;
	struct pma_arena *a = &h->arenas[0];
	uint64_t k, payload, value, off;
	unsigned type;
	struct pma_rec r;

	other = h->top->sib[h->part ? 0 : 1];
	if (!other) {
		fprintf(stderr, "fsck-damage: dest-meta needs 2 parts\n");
		exit(99);
	}
	for (k = a->head; k < a->tail; k++) {
		if (pma_booklog_decode(a->log, h->geom.log_cap, k, &type,
				       &payload, &value) < 0 ||
		    type != PMA_REC_ALLOC || !value)
			continue;
		pma_booklog_encode(
			k, h->geom.log_cap, type, payload,
			pool_off_make(other->part, other->region_off + 64), &r);
		off = (uint64_t)((char *)pma_booklog_slot(a->log,
							  h->geom.log_cap, k) -
				 h->part_base);
		put(w, off, &r, sizeof(r));
		return;
	}
	fprintf(stderr, "fsck-damage: no alloc record in arena 0's window\n");
	exit(99);
}

/* the last allocation of arena 0's window (one recovery redoes) gets as
 * its dest word the block size word of a slab's header (resealed: only
 * the dest is bad) */
static void d_dest_slab(struct where *w)
{
	struct pma_heap *h = w->heap;
	struct pma_arena *a = &h->arenas[0];
	uint64_t k, payload, value, off, slab;
	unsigned type;
	struct pma_rec r;

	slab = pma_page_off(h, find_page(w, PMA_PMAP_SLAB, 1));
	for (k = a->tail; k-- > a->head;) {
		if (pma_booklog_decode(a->log, h->geom.log_cap, k, &type,
				       &payload, &value) < 0 ||
		    type != PMA_REC_ALLOC || !value)
			continue;
		pma_booklog_encode(k, h->geom.log_cap, type, payload,
				   pool_off_make(h->part, slab + 8), &r);
		off = (uint64_t)((char *)pma_booklog_slot(a->log,
							  h->geom.log_cap, k) -
				 h->part_base);
		put(w, off, &r, sizeof(r));
		return;
	}
	fprintf(stderr, "fsck-damage: no alloc record in arena 0's window\n");
	exit(99);
}

/* ------------------------------------------------------------ pool */

/* both (copy 2) or one pool header copy changed by fn and resealed */
static void hdr_edit(struct where *w, unsigned copy,
		     void (*fn)(struct pool_hdr *h))
{
	struct pool_hdr *h = malloc(sizeof(*h));
	unsigned i;

	if (!h)
		exit(98);
	for (i = 0; i < 2; i++) {
		if (copy != 2 && i != copy)
			continue;
		get(w, pool_hdr_copy_off(i), h, sizeof(*h));
		fn(h);
		h->checksum = pool_hdr_checksum(h);
		put(w, pool_hdr_copy_off(i), h, sizeof(*h));
	}
	free(h);
}

/* the part header changed by fn and resealed */
static void part_edit(struct where *w, void (*fn)(struct pool_part_hdr *h))
{
	struct pool_part_hdr h;

	get(w, POOL_PART_HDR_OFF, &h, sizeof(h));
	fn(&h);
	h.checksum = pool_part_hdr_checksum(&h);
	put(w, POOL_PART_HDR_OFF, &h, sizeof(h));
}

static void zero(struct where *w, uint64_t off, size_t len)
{
	char *buf = calloc(1, len);

	if (!buf)
		exit(98);
	put(w, off, buf, len);
	free(buf);
}

static void d_too_small(struct where *w)
{
	if (ftruncate(w->fd, 100) < 0)
		exit(99);
}
static void d_hdr_a_zero(struct where *w)
{
	zero(w, POOL_HDR_A_OFF, POOL_HDR_SIZE);
}
static void d_hdr_zero(struct where *w)
{
	zero(w, POOL_HDR_A_OFF, 2 * POOL_HDR_SIZE);
}
static void d_hdr_magic(struct where *w)
{
	flip(w, POOL_HDR_A_OFF, 0x01);
}
static void e_major(struct pool_hdr *h)
{
	h->major = POOL_FORMAT_MAJOR + 1;
}
static void d_hdr_version(struct where *w)
{
	hdr_edit(w, 0, e_major);
}
static void e_hdr_size(struct pool_hdr *h)
{
	h->hdr_size = 0;
}
static void d_hdr_invalid(struct where *w)
{
	hdr_edit(w, 0, e_hdr_size);
}
static void e_create_time(struct pool_hdr *h)
{
	h->create_time++;
}
/* copy B: another state of the same generation */
static void d_hdr_gen(struct where *w)
{
	hdr_edit(w, 1, e_create_time);
}
static void e_older(struct pool_hdr *h)
{
	h->generation--;
}
/* copy B one generation older: an update interrupted before it */
static void d_hdr_stale(struct where *w)
{
	hdr_edit(w, 1, e_older);
}
static void e_ro_compat(struct pool_hdr *h)
{
	h->feat_ro_compat |= 1ULL << 63;
}
static void d_ro_compat(struct where *w)
{
	hdr_edit(w, 2, e_ro_compat);
}
static void e_region_free(struct pool_hdr *h)
{
	h->regions[0].type = POOL_REGION_FREE;
}
static void d_region_invalid(struct where *w)
{
	hdr_edit(w, 2, e_region_free);
}
/* a second region over the first (a user region of its own name) */
static void e_region_overlap(struct pool_hdr *h)
{
	h->regions[h->nregions] = h->regions[0];
	h->regions[h->nregions].type = POOL_REGION_USER;
	h->regions[h->nregions].off += POOL_ALIGN;
	h->regions[h->nregions].size = POOL_ALIGN;
	memcpy(h->regions[h->nregions].name, "overlap", 8);
	h->nregions++;
}
static void d_region_overlap(struct where *w)
{
	hdr_edit(w, 2, e_region_overlap);
}
static void d_part_magic(struct where *w)
{
	flip(w, POOL_PART_HDR_OFF, 0x01);
}
static void e_part_major(struct pool_part_hdr *h)
{
	h->major = POOL_FORMAT_MAJOR + 1;
}
static void d_part_version(struct where *w)
{
	part_edit(w, e_part_major);
}
static void e_part_nparts(struct pool_part_hdr *h)
{
	h->nparts = 0;
}
static void d_part_invalid(struct where *w)
{
	part_edit(w, e_part_nparts);
}
static void e_part_size(struct pool_part_hdr *h)
{
	h->size -= POOL_ALIGN;
}
static void d_part_size(struct where *w)
{
	part_edit(w, e_part_size);
}

/* ------------------------------------------------------------ heap */

/* the heap header changed by fn and resealed */
static void heap_edit(struct where *w, void (*fn)(struct pma_heap_hdr *h))
{
	struct pma_heap_hdr h;

	get(w, w->heap->region_off, &h, sizeof(h));
	fn(&h);
	h.checksum = util_crc32c(0, &h, PMA_HDR_CSUM_LEN);
	put(w, w->heap->region_off, &h, sizeof(h));
}
static void d_heap_magic(struct where *w)
{
	flip(w, w->heap->region_off, 0x01);
}
static void e_heap_version(struct pma_heap_hdr *h)
{
	h->version = PMA_HEAP_VERSION + 1;
}
static void d_heap_version(struct where *w)
{
	heap_edit(w, e_heap_version);
}
static void e_heap_npages(struct pma_heap_hdr *h)
{
	h->npages += 1000;
}
static void d_heap_geometry(struct where *w)
{
	heap_edit(w, e_heap_npages);
}

/* the heap header all zero: a heap region create never formatted */
static void d_heap_zero(struct where *w)
{
	zero(w, w->heap->region_off, sizeof(struct pma_heap_hdr));
}
static void e_region_user(struct pool_hdr *h)
{
	h->regions[h->nregions - 1].type = POOL_REGION_USER;
}
/* the last region of the table no longer a heap region (a pool of
 * create --regions 4: part 0 holds 3) */
static void d_region_user(struct where *w)
{
	hdr_edit(w, 2, e_region_user);
}
/* a bit of the check of region slot 0's word of frees applied from
 * region slot 1's ring (a pool of create --regions 2 or more) */
static void d_xcons(struct where *w)
{
	flip(w,
	     w->heap->region_off + offsetof(struct pma_heap_hdr, xcons) +
		     sizeof(uint64_t) + 7,
	     0x10);
}

/* the root word set to root with its check (a seal, or 0) */
static void root_set(struct where *w, uint64_t root, uint64_t check)
{
	uint64_t words[2] = { root, check };

	put(w, w->heap->region_off + PMA_ROOT_WORD_OFF, words, sizeof(words));
}
/* the root names the last page of the data area (free), sealed */
static void d_root_not_live(struct where *w)
{
	struct pma_heap *h = w->heap;
	uint64_t root;

	root = pool_off_make(h->part, pma_page_off(h, h->geom.npages - 1));
	root_set(w, root, pma_check_root(root));
}
/* the root's check word cleared: a crash between the two stores */
static void d_root_unsealed(struct where *w)
{
	root_set(w, w->heap->hdr->root_off, 0);
}

/* does a record of a window name a byte offset in [lo, hi)? */
static int window_names(struct pma_heap *h, uint64_t lo, uint64_t hi)
{
	uint64_t k, payload, value, off;
	unsigned i, type;

	for (i = 0; i < h->geom.narenas; i++) {
		struct pma_arena *a = &h->arenas[i];

		for (k = a->head; k < a->tail; k++) {
			if (pma_booklog_decode(a->log, h->geom.log_cap, k,
					       &type, &payload, &value) < 0)
				continue;
			off = payload << h->osh;
			if (off >= lo && off < hi)
				return 1;
		}
	}
	return 0;
}

/* a checkpointed slab no record of a window names (in the base pool:
 * the root object's), whose bank 0 has
 * bits past its last block (a class of fewer than 6 * 192 blocks) */
static uint64_t quiet_slab(struct where *w, struct pma_slab_hdr *hdr)
{
	struct pma_heap *h = w->heap;
	uint64_t p, e, off, chunk = PMA_CHUNK_PAGES << PMA_PAGE_SHIFT;

	for (p = 0; p < h->geom.npages; p += PMA_CHUNK_PAGES) {
		get(w, pmap_off(w, p), &e, sizeof(e));
		off = pma_page_off(h, p);
		if (pma_pmap_kind(e) != PMA_PMAP_SLAB ||
		    window_names(h, off, off + chunk))
			continue;
		get(w, off, hdr, sizeof(*hdr));
		if (hdr->magic == PMA_SLAB_MAGIC && !hdr->morph_from &&
		    hdr->nblocks < PMA_NBANKS * 64 * PMA_SLAB_BANK_WORDS)
			return off;
	}
	fprintf(stderr, "fsck-damage: no slab the logs do not name\n");
	exit(99);
}
static void d_slab_magic(struct where *w)
{
	struct pma_slab_hdr hdr;

	flip(w, quiet_slab(w, &hdr) + offsetof(struct pma_slab_hdr, magic),
	     0x01);
}
static void d_slab_owner(struct where *w)
{
	struct pma_slab_hdr hdr;
	uint64_t off = quiet_slab(w, &hdr);

	hdr.owner = (uint16_t)((hdr.owner + 1) % w->heap->geom.narenas);
	put(w, off, &hdr, sizeof(hdr));
}
static void d_slab_geometry(struct where *w)
{
	struct pma_slab_hdr hdr;
	uint64_t off = quiet_slab(w, &hdr);

	hdr.nblocks--;
	put(w, off, &hdr, sizeof(hdr));
}
/* the last bit of bank 0 (past the slab's last block), the bank's check
 * word sealed again: only the stray bit is wrong */
static void d_slab_stray(struct where *w)
{
	struct pma_slab_hdr hdr;
	uint64_t off = quiet_slab(w, &hdr);
	static uint8_t meta[PMA_SLAB_HDR_SIZE];
	unsigned b = 64 * PMA_SLAB_BANK_WORDS - 1;

	get(w, off, meta, sizeof(meta));
	meta[PMA_SLAB_BITMAP_OFF + b / 8] ^= (uint8_t)(1u << (b % 8));
	pma_check_bank_seal(meta, off, 0);
	put(w, off, meta, sizeof(meta));
}

/* a page map entry e of page, with its check */
static void pmap_put(struct where *w, uint64_t page, uint64_t e)
{
	e = pma_check_pmap(e, page);
	put(w, pmap_off(w, page), &e, sizeof(e));
}
/* an extent's entry of a kind no entry has on media (FREEING) */
static void d_pmap_kind(struct where *w)
{
	uint64_t page = find_page(w, PMA_PMAP_EXTENT, 1), e;

	get(w, pmap_off(w, page), &e, sizeof(e));
	pmap_put(w, page, pma_pmap_make(PMA_PMAP_FREEING, pma_pmap_npages(e)));
}
/* a slab's entry naming arena 63 (no such arena) */
static void d_pmap_slab(struct where *w)
{
	uint64_t page = find_page(w, PMA_PMAP_SLAB, 1), e;

	get(w, pmap_off(w, page), &e, sizeof(e));
	pmap_put(w, page, pma_pmap_make_slab(pma_pmap_cls(e), 63));
}
/* the last extent's entry running past the data area */
static void d_pmap_range(struct where *w)
{
	struct pma_heap *h = w->heap;
	uint64_t page, e;

	for (page = h->geom.npages; page-- > 0;) {
		get(w, pmap_off(w, page), &e, sizeof(e));
		if (pma_pmap_kind(e) == PMA_PMAP_EXTENT)
			break;
	}
	pmap_put(w, page,
		 pma_pmap_make(PMA_PMAP_EXTENT, h->geom.npages - page + 1));
}

/* ------------------------------------------------------------ logs */

static uint64_t slot_off(struct where *w, unsigned arena, uint64_t k)
{
	struct pma_heap *h = w->heap;

	return (uint64_t)((char *)pma_booklog_slot(h->arenas[arena].log,
						   h->geom.log_cap, k) -
			  h->part_base);
}

/* a whole, valid record of index k written into arena's log */
static void rec_put(struct where *w, unsigned arena, uint64_t k, unsigned type,
		    uint64_t payload, uint64_t value)
{
	struct pma_rec r;

	pma_booklog_encode(k, w->heap->geom.log_cap, type, payload, value, &r);
	put(w, slot_off(w, arena, k), &r, sizeof(r));
}
/* a valid record appended to arena 0's log (one more op in its window) */
static void append(struct where *w, unsigned type, uint64_t payload,
		   uint64_t value)
{
	rec_put(w, 0, w->heap->arenas[0].tail, type, payload, value);
}

/* a record two slots past the end of arena 0's log, valid for its index:
 * the slots between are not */
static void d_rec_after_end(struct where *w)
{
	struct pma_heap *h = w->heap;

	rec_put(w, 0, h->arenas[0].tail + 2, PMA_REC_ALLOC,
		(h->data_base + 256) >> h->osh, 0);
}
/* a free of the heap header (outside the data area) */
static void d_op_range(struct where *w)
{
	append(w, PMA_REC_FREE, (w->heap->region_off + 256) >> w->heap->osh, 0);
}
/* an allocation of the data area's last page: no slab is there */
static void d_op_target(struct where *w)
{
	struct pma_heap *h = w->heap;

	append(w, PMA_REC_ALLOC, pma_page_off(h, h->geom.npages - 1) >> h->osh,
	       0);
}
/* a SLAB_NEW of class 255 */
static void d_op_invalid(struct where *w)
{
	struct pma_heap *h = w->heap;

	append(w, PMA_REC_SLAB_NEW,
	       pma_page_off(h, h->geom.npages - PMA_CHUNK_PAGES) >> h->osh,
	       255u << 8);
}
/* a SLAB_MORPH of a checkpointed slab from a class it is not */
static void d_morph_log(struct where *w)
{
	struct pma_heap *h = w->heap;
	uint64_t page = find_page(w, PMA_PMAP_SLAB, 1);
	struct pma_slab_hdr hdr;
	uint64_t off = pma_page_off(h, page);
	unsigned old, cls;

	get(w, off, &hdr, sizeof(hdr));
	old = hdr.cls > 2 ? 1 : hdr.cls + 1;
	cls = old + 1 == hdr.cls ? old + 2 : old + 1;
	append(w, PMA_REC_SLAB_MORPH, off >> h->osh,
	       (uint64_t)cls << 8 | (uint64_t)hdr.owner << 16 |
		       (uint64_t)old << 32);
}
/* an XFREE (layout 10) appended to the log of a layout 9 heap (make-v9),
 * naming a block of part 0 */
static void d_xfree_old(struct where *w)
{
	struct pma_heap *h = w->heap;

	if (h->hdr->version >= PMA_HEAP_VERSION_XFREE) {
		fprintf(stderr, "fsck-damage: xfree-old needs make-v9\n");
		exit(99);
	}
	append(w, PMA_REC_XFREE, pma_page_off(h, 0) >> h->osh, 0);
}
/* a remote free, appended, of a block a record of the window freed */
static void d_block_conflict(struct where *w)
{
	struct pma_heap *h = w->heap;
	uint64_t k, payload, value;
	unsigned i, type;

	for (i = 0; i < h->geom.narenas; i++) {
		struct pma_arena *a = &h->arenas[i];

		for (k = a->tail; k-- > a->head;) {
			if (pma_booklog_decode(a->log, h->geom.log_cap, k,
					       &type, &payload, &value) < 0 ||
			    (type != PMA_REC_FREE && type != PMA_REC_RFREE))
				continue;
			append(w, PMA_REC_RFREE, payload, 0);
			return;
		}
	}
	fprintf(stderr, "fsck-damage: no free in a window\n");
	exit(99);
}

/* every root slot of a pool of make: index, block, usable size (what a
 * repair must keep), from a read-only open (recovered in memory) */
static void list(const char *path)
{
	struct pma_heap *heap;
	const uint64_t *slots;
	uint64_t root;
	unsigned i;

	if (pma_heap_open(path, PMA_HEAP_RDONLY, &heap) < 0)
		die("open read-only");
	root = heap->hdr->root_off;
	slots = root ? pma_direct(heap, root) : NULL;
	if (!slots)
		die("no root");
	for (i = 0; i < NSLOTS; i++)
		printf("%u 0x%llx %zu\n", i, (unsigned long long)slots[i],
		       slots[i] ? pma_usable_size(heap, slots[i]) : 0);
	pma_heap_close(heap);
}

static const struct damage {
	const char *name;
	void (*fn)(struct where *w);
} damages[] = {
	{ "hdr-a", d_hdr_a },
	{ "hdr-b", d_hdr_b },
	{ "part-hdr", d_part_hdr },
	{ "truncate", d_truncate },
	{ "region", d_region },
	{ "heap-hdr", d_heap_hdr },
	{ "head-gen", d_head_gen },
	{ "arena-head", d_arena_head },
	{ "log-record", d_log_record },
	{ "torn-tail", d_torn_tail },
	{ "slab-class", d_slab_class },
	{ "bitmap-bank", d_bitmap_bank },
	{ "pmap-entry", d_pmap_entry },
	{ "pmap-overlap", d_pmap_overlap },
	{ "summary", d_summary },
	{ "root-word", d_root_word },
	{ "bank-check", d_bank_check },
	{ "dest-root-obj", d_dest_root_obj },
	{ "slot-ahead", d_slot_ahead },
	{ "unmarked", d_unmarked },
	{ "dest-meta", d_dest_meta },
	{ "log-type", d_log_type },
	{ "dest-slab", d_dest_slab },
	{ "bank-window", d_bank_window },
	{ "bank-two", d_bank_two },
	{ "head-bank-two", d_head_bank_two },
	{ "too-small", d_too_small },
	{ "hdr-a-zero", d_hdr_a_zero },
	{ "hdr-zero", d_hdr_zero },
	{ "hdr-magic", d_hdr_magic },
	{ "hdr-version", d_hdr_version },
	{ "hdr-invalid", d_hdr_invalid },
	{ "hdr-gen", d_hdr_gen },
	{ "hdr-stale", d_hdr_stale },
	{ "ro-compat", d_ro_compat },
	{ "region-invalid", d_region_invalid },
	{ "region-overlap", d_region_overlap },
	{ "part-magic", d_part_magic },
	{ "part-version", d_part_version },
	{ "part-invalid", d_part_invalid },
	{ "part-size", d_part_size },
	{ "heap-magic", d_heap_magic },
	{ "heap-version", d_heap_version },
	{ "heap-geometry", d_heap_geometry },
	{ "root-not-live", d_root_not_live },
	{ "root-unsealed", d_root_unsealed },
	{ "slab-magic", d_slab_magic },
	{ "slab-owner", d_slab_owner },
	{ "slab-geometry", d_slab_geometry },
	{ "slab-stray", d_slab_stray },
	{ "pmap-kind", d_pmap_kind },
	{ "pmap-slab", d_pmap_slab },
	{ "pmap-range", d_pmap_range },
	{ "rec-after-end", d_rec_after_end },
	{ "op-range", d_op_range },
	{ "op-target", d_op_target },
	{ "op-invalid", d_op_invalid },
	{ "morph-log", d_morph_log },
	{ "block-conflict", d_block_conflict },
	{ "heap-zero", d_heap_zero },
	{ "region-user", d_region_user },
	{ "xcons", d_xcons },
	{ "xfree-old", d_xfree_old },
};
#define NDAMAGES (sizeof(damages) / sizeof(damages[0]))

static void damage(const struct damage *d, const char *path, unsigned part)
{
	struct pma_heap *top;
	struct where w;

	if (pma_heap_open(path, PMA_HEAP_RDONLY, &top) < 0)
		die("open read-only");
	w.heap = part < POOL_MAX_PARTS ? top->sib[part] : NULL;
	if (!w.heap) {
		fprintf(stderr, "fsck-damage: no heap in part %u\n", part);
		exit(99);
	}
	w.fd = open(pool_part_path(top->pool, part), O_RDWR);
	if (w.fd < 0) {
		perror("fsck-damage: open");
		exit(99);
	}
	d->fn(&w);
	pma_heap_close(top);
	if (fsync(w.fd) < 0 || close(w.fd) < 0)
		exit(99);
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc != 3 && argc != 4) {
		fputs("usage: fsck-damage make|make2|make-v9|list|KIND POOL [PART]\n",
		      stderr);
		return 2;
	}
	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
	if (!strcmp(argv[1], "make")) {
		make(argv[2]);
		return 0;
	}
	if (!strcmp(argv[1], "list")) {
		list(argv[2]);
		return 0;
	}
	if (!strcmp(argv[1], "make-v9")) {
		make_v9(argv[2]);
		return 0;
	}
	if (!strcmp(argv[1], "make2")) {
		make2(argv[2]);
		return 0;
	}
	for (i = 0; i < NDAMAGES; i++)
		if (!strcmp(argv[1], damages[i].name)) {
			damage(&damages[i], argv[2],
			       argc == 4 ? (unsigned)atoi(argv[3]) : 0);
			return 0;
		}
	fprintf(stderr, "fsck-damage: unknown damage '%s'\n", argv[1]);
	return 2;
}
