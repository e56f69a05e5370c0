/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PMAlloc heap: create / open / close, the heap region's geometry and
 * header, and the offset helpers. Open runs recovery (recovery.c) and then
 * rebuilds the DRAM state (apply.c) before any operation can run.
 * Step 1 keeps the heap in part 0 of the pool.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "pmalloc/internal.h"
#include "pmalloc/fsck.h"
#include "util/crc.h"
#include "util/errmsg.h"

#define HEAP_PART 0
#define HEAP_MIN_PAGES (2 * PMA_CHUNK_PAGES)
/* internal open flag: format even if the region holds an old heap (a
 * re-created pool file may keep the old bytes) */
#define HEAP_FORMAT_ALWAYS (1u << 30)

static atomic_ulong heap_ids = 1;

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

/* the summary's words for n pages (0 without a summary) */
static uint64_t sum_words(const struct pma_geom *g, uint64_t n)
{
	if (g->version < PMA_HEAP_VERSION_SUM)
		return 0;
	return (pma_sum_groups(n, g->sum_shift) + PMA_SUM_BITS - 1) /
	       PMA_SUM_BITS;
}

/* where the data area starts for n pages (the summary follows the page
 * map, if the version has one) */
static uint64_t data_off_for(struct pma_geom *g, uint64_t n)
{
	uint64_t end = g->pmap_off + n * 8;

	g->sum_words = sum_words(g, n);
	g->sum_off = 0;
	if (g->sum_words) {
		g->sum_off = align_up(end, PMA_LINE);
		end = g->sum_off + g->sum_words * 8;
	}
	return align_up(end, PMA_CHUNK);
}

/* geometry of a region of size bytes in layout version (a summary group
 * of 2^sum_shift pages from version 5); -EINVAL if too small or if
 * sum_shift is out of range */
static int geom_compute(uint64_t size, uint32_t version, uint32_t sum_shift,
			struct pma_geom *g)
{
	uint64_t n, lo, hi;

	memset(g, 0, sizeof(*g));
	g->region_size = size;
	g->version = version;
	if (version >= PMA_HEAP_VERSION_SUM) {
		if (sum_shift < PMA_SUM_SHIFT_MIN ||
		    sum_shift > PMA_SUM_SHIFT_MAX)
			return -EINVAL;
		g->sum_shift = sum_shift;
	}
	g->narenas = (uint32_t)(size >> 24);
	g->narenas = g->narenas < 2 ? 2 : g->narenas > 16 ? 16 : g->narenas;
	g->log_cap = size < (64ULL << 20) ? PMA_LOG_GROUP * 64 :
					    PMA_LOG_CAP_DEFAULT;
	g->arena_off = PMA_HDR_SIZE;
	g->log_off = align_up(g->arena_off + g->narenas * 64ULL, PMA_PAGE);
	if (version >= PMA_HEAP_VERSION_XRING) {
		g->xring_cap = PMA_XRING_CAP;
		g->xring_off = g->log_off;
		g->log_off =
			align_up(g->xring_off + (uint64_t)PMA_XRING_SLOTS *
							g->xring_cap *
							sizeof(struct pma_xent),
				 PMA_PAGE);
	}
	g->pmap_off = align_up(g->log_off + (uint64_t)g->narenas * g->log_cap *
						    sizeof(struct pma_rec),
			       PMA_PAGE);
	if (g->pmap_off + PMA_CHUNK >= size)
		return -EINVAL;
	/* the most pages that fit: binary search (the summary's share makes
	 * a step-by-step search from the estimate long in a huge region) */
	lo = 0;
	hi = (size - g->pmap_off) / (PMA_PAGE + 8);
	while (lo < hi) {
		n = hi - (hi - lo) / 2;
		if (data_off_for(g, n) + n * PMA_PAGE <= size)
			lo = n;
		else
			hi = n - 1;
	}
	n = lo;
	g->npages = n;
	g->data_off = data_off_for(g, n);
	return n < HEAP_MIN_PAGES ? -EINVAL : 0;
}

static uint32_t hdr_csum(const struct pma_heap_hdr *hdr)
{
	return util_crc32c(0, hdr, PMA_HDR_CSUM_LEN);
}

/*
 * Zero the metadata, then write the header: every field and the checksum
 * (computed as if the magic were set) first, and the 8-byte magic last, in
 * its own fence. The magic is the commit point: a crash before it leaves a
 * zero magic and the next open formats again; it never leaves a torn
 * header with a magic.
 */
/*
 * Version 12 (session 22): every log starts in lap 1, over a lap of
 * records 0 .. cap - 1 that no head ever reaches (type SLAB_FREE, all
 * zero): each slot holds the previous lap's record, whole, so an open
 * sees at once that no append went past the tail (log_end_check in
 * recovery.c) instead of reading the whole log (7 ms at each open of a
 * 15-arena heap here). Builds before it read such a heap as it is: a log
 * whose head is cap, empty.
 */
static int format_logs(struct pma_heap *heap)
{
	uint32_t cap = heap->geom.log_cap;
	size_t len = (size_t)cap * sizeof(struct pma_rec);
	struct pma_rec *lap0 = malloc(len);
	uint64_t k;
	unsigned i;

	if (!lap0)
		return util_errmsg_set(ENOMEM, "out of memory");
	for (k = 0; k < cap; k++)
		pma_booklog_encode(k, cap, PMA_REC_SLAB_FREE, 0, 0,
				   pma_booklog_slot(lap0, cap, k));
	for (i = 0; i < heap->geom.narenas; i++)
		pm_memcpy(heap->map,
			  pma_addr(heap, heap->region_off + heap->geom.log_off +
						 (uint64_t)i * len),
			  lap0, len, PM_COPY_NODRAIN);
	free(lap0);
	return 0;
}

/* version 7: generation 0 and every arena's head first, with their checks
 * (flushed; the header's persist makes them durable) */
static void format_checks(struct pma_heap *heap, uint64_t first)
{
	struct pma_arena_desc *descs =
		pma_addr(heap, heap->region_off + heap->geom.arena_off);
	unsigned i;

	heap->hdr->head_gen = pma_check_gen(0);
	pm_flush(heap->map, &heap->hdr->head_gen, sizeof(uint64_t));
	for (i = 0; i < heap->geom.narenas; i++) {
		descs[i].head[0] = first;
		descs[i].check[0] = pma_check_head(first, i, 0);
		if (heap->geom.version >= PMA_HEAP_VERSION_LOCAL)
			descs[i].lgen = pma_check_lgen(0, i);
	}
	pm_flush(heap->map, descs, heap->geom.narenas * sizeof(*descs));
}

static int heap_format(struct pma_heap *heap, uint64_t region_size)
{
	struct pma_heap_hdr *hdr = heap->hdr;
	struct pma_heap_hdr *shadow;
	uint64_t magic;
	struct pma_geom g;
	int rc;

	if (geom_compute(region_size, heap->cfg.format_version,
			 heap->cfg.sum_shift, &g) < 0)
		return util_errmsg_set(EINVAL,
				       "heap region of %llu bytes is "
				       "too small",
				       (unsigned long long)region_size);
	if (heap->region_off + region_size > pma_rec_off_end(g.version))
		return util_errmsg_set(
			EFBIG,
			"a heap of layout %u must end below "
			"%llu GiB of its part",
			g.version,
			(unsigned long long)(pma_rec_off_end(g.version) >> 30));
	pm_memset(heap->map, hdr, 0, g.data_off, PM_COPY_NODRAIN);
	pm_drain(heap->map);
	hdr->version = g.version;
	hdr->hdr_size = sizeof(*hdr);
	hdr->region_size = g.region_size;
	hdr->narenas = g.narenas;
	hdr->log_cap = g.log_cap;
	hdr->arena_off = g.arena_off;
	hdr->log_off = g.log_off;
	hdr->pmap_off = g.pmap_off;
	hdr->data_off = g.data_off;
	hdr->npages = g.npages;
	hdr->create_time = (uint64_t)time(NULL);
	hdr->sum_off = g.sum_off;
	hdr->sum_shift = g.sum_shift;
	hdr->xring_cap = g.xring_cap;
	hdr->xring_off = g.xring_off;
	heap->geom = g;
	pma_sum_format(heap);
	pm_flush(heap->map, pma_addr(heap, heap->region_off + g.sum_off),
		 g.sum_words * 8);
	if (g.version >= PMA_HEAP_VERSION_XRING) {
		rc = format_logs(heap);
		if (rc < 0)
			return rc;
	}
	if (g.version >= PMA_HEAP_VERSION_CHECKED)
		format_checks(heap, g.version >= PMA_HEAP_VERSION_XRING ?
					    g.log_cap :
					    0);
	shadow = malloc(sizeof(*shadow));
	if (!shadow)
		return util_errmsg_set(ENOMEM, "out of memory");
	*shadow = *hdr;
	memcpy(shadow->magic, PMA_HEAP_MAGIC, PMA_HEAP_MAGIC_LEN);
	hdr->checksum = hdr_csum(shadow);
	free(shadow);
	/* the header must be durable before the magic makes it valid */
	pm_persist(heap->map, hdr, PMA_HDR_CSUM_LEN + 4);
	memcpy(&magic, PMA_HEAP_MAGIC, sizeof(magic));
	__atomic_store_n((uint64_t *)(void *)hdr->magic, magic,
			 __ATOMIC_RELEASE);
	pm_persist(heap->map, hdr->magic, sizeof(magic));
	return 0;
}

/* validate the header against the region without trusting any field */
static int hdr_check(const struct pma_heap_hdr *hdr, uint64_t region_size,
		     struct pma_geom *ret_geom)
{
	struct pma_geom g;

	if (memcmp(hdr->magic, PMA_HEAP_MAGIC, PMA_HEAP_MAGIC_LEN) != 0)
		return util_errmsg_set(EINVAL,
				       "not a pmalloc heap (bad magic)");
	if (hdr->checksum != hdr_csum(hdr))
		return util_errmsg_set(EBADMSG,
				       "heap header checksum mismatch");
	if (hdr->version == 1 || hdr->version == 2)
		return util_errmsg_set(EPROTONOSUPPORT,
				       "heap version %u is not supported "
				       "(version %u keeps slab classes in "
				       "the page map and logs local extent "
				       "frees); create the heap again",
				       hdr->version, PMA_HEAP_VERSION);
	if (hdr->version < PMA_HEAP_VERSION_MIN ||
	    hdr->version > PMA_HEAP_VERSION)
		return util_errmsg_set(EPROTONOSUPPORT,
				       "heap version %u, "
				       "expected %u to %u",
				       hdr->version, PMA_HEAP_VERSION_MIN,
				       PMA_HEAP_VERSION);
	if (hdr->region_size > region_size ||
	    geom_compute(hdr->region_size, hdr->version, hdr->sum_shift, &g) <
		    0 ||
	    g.narenas != hdr->narenas || g.log_cap != hdr->log_cap ||
	    g.arena_off != hdr->arena_off || g.log_off != hdr->log_off ||
	    g.pmap_off != hdr->pmap_off || g.data_off != hdr->data_off ||
	    g.npages != hdr->npages || g.sum_off != hdr->sum_off ||
	    g.sum_shift != hdr->sum_shift || g.xring_cap != hdr->xring_cap ||
	    g.xring_off != hdr->xring_off)
		return util_errmsg_set(EBADMSG, "heap header geometry does not "
						"match its region");
	*ret_geom = g;
	return 0;
}

void *pma_zmap(size_t size)
{
	void *p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void pma_zunmap(void *p, size_t size)
{
	if (p)
		munmap(p, size ? size : 1);
}

/* zeroed memory starting on a cache line (size a multiple of PMA_LINE:
 * the structs have line-aligned members), or NULL */
static void *zalloc_lines(size_t size)
{
	void *p = aligned_alloc(PMA_LINE, size);

	if (p)
		memset(p, 0, size);
	return p;
}

static int heap_dram_init(struct pma_heap *heap)
{
	unsigned i;
	int rc;

	heap->nchunks = heap->geom.npages / PMA_CHUNK_PAGES + 1;
	/* fresh zero pages, faulted in only where written: open time does
	 * not grow with these (calloc may memset reused memory) */
	heap->pmap = pma_zmap(heap->geom.npages * sizeof(*heap->pmap));
	heap->slabs = pma_zmap(heap->nchunks * sizeof(*heap->slabs));
	/* line-aligned: no two threads' arenas share a line */
	heap->arenas = zalloc_lines(heap->geom.narenas * sizeof(*heap->arenas));
	if (heap->rdonly)
		heap->ro_slab_meta = calloc(heap->nchunks, sizeof(void *));
	if (!heap->pmap || !heap->slabs || !heap->arenas ||
	    (heap->rdonly && !heap->ro_slab_meta))
		return util_errmsg_set(ENOMEM, "out of memory for the heap");
	for (i = 0; i < heap->geom.narenas; i++) {
		rc = pma_arena_init(heap, i, &heap->arenas[i]);
		if (rc < 0)
			return rc;
		heap->arenas_ready = i + 1;
	}
	return 0;
}

/* a list of released slabs (linked by next) */
static void slab_list_free(struct pma_slab *slab)
{
	struct pma_slab *next;

	for (; slab; slab = next) {
		next = slab->next;
		pma_morph_release(slab);
		free(slab);
	}
}

static void heap_free(struct pma_heap *heap)
{
	uint64_t c;
	unsigned i;

	for (i = 0; i < heap->arenas_ready; i++) {
		slab_list_free(heap->arenas[i].released);
		pma_arena_release(&heap->arenas[i]);
	}
	for (c = 0; heap->slabs && c < heap->nchunks; c++) {
		if (atomic_load(&heap->slabs[c]))
			pma_morph_release(atomic_load(&heap->slabs[c]));
		free(atomic_load(&heap->slabs[c]));
	}
	slab_list_free(heap->spare_slabs);
	pma_lazy_release(heap);
	pma_slab_meta_release(heap);
	free(heap->ro_slab_meta);
	if (heap->rdonly)
		pma_zunmap(heap->pmap_pm,
			   heap->geom.npages * sizeof(*heap->pmap_pm));
	pma_sum_release(heap);
	free(heap->arenas);
	pma_zunmap(heap->slabs, heap->nchunks * sizeof(*heap->slabs));
	pma_zunmap((void *)heap->pmap, heap->geom.npages * sizeof(*heap->pmap));
	pma_ext_index_release(&heap->ext);
	pthread_mutex_destroy(&heap->ext_lock);
	pthread_mutex_destroy(&heap->ckpt_lock);
	pthread_mutex_destroy(&heap->xckpt_lock);
	pthread_mutex_destroy(&heap->root_lock);
	pthread_mutex_destroy(&heap->sum_lock);
	pthread_mutex_destroy(&heap->xring_lock);
	pthread_mutex_destroy(&heap->xdrain_lock);
	pthread_mutex_destroy(&heap->add_lock);
	pthread_mutex_destroy(&heap->room_lock);
	free(heap);
}

/* end of the free gap starting at s in part (s if s is in a region) */
static uint64_t gap_end(const struct pool_hdr *ph, unsigned part, uint64_t s)
{
	uint64_t end = ph->parts[part].size;
	unsigned i;

	for (i = 0; i < ph->nregions && i < POOL_MAX_REGIONS; i++) {
		const struct pool_region *r = &ph->regions[i];

		if (r->type == POOL_REGION_FREE || r->part != part)
			continue;
		if (s >= r->off && s < r->off + r->size)
			return s;
		if (r->off >= s && r->off < end)
			end = r->off;
	}
	return end;
}

/* the largest gap of part's data area not used by a region */
static uint64_t largest_gap(const struct pool *pool, unsigned part,
			    uint64_t *ret_off)
{
	const struct pool_hdr *ph = pool_header(pool);
	uint64_t s, e, best = 0;
	unsigned i;

	for (i = 0; i <= ph->nregions && i <= POOL_MAX_REGIONS; i++) {
		s = i == 0 ? POOL_DATA_OFF :
			     ph->regions[i - 1].off + ph->regions[i - 1].size;
		if (i && (ph->regions[i - 1].part != part ||
			  ph->regions[i - 1].type == POOL_REGION_FREE))
			continue;
		e = gap_end(ph, part, s);
		if (e > s && e - s > best) {
			best = e - s;
			*ret_off = s;
		}
	}
	return best;
}

/* fsck.c reads headers it does not open (fsck.h) */
int pma_heap_hdr_check(const struct pma_heap_hdr *hdr, uint64_t region_size,
		       struct pma_geom *ret_geom)
{
	return hdr_check(hdr, region_size, ret_geom);
}

/*
 * A new heap: cfg->regions equal regions in every part with room for them
 * (the largest gap of each, cut in that many), added in one pool header
 * update, so that a crash leaves the pool with its regions in every part
 * or in none. A region whose format a crash cut short has no magic and is
 * formatted at the next open.
 */
static int heap_region_add(struct pool *pool, const struct pma_config *cfg)
{
	uint64_t sizes[PMA_MAX_SLOTS], off = 0, size;
	unsigned parts[PMA_MAX_SLOTS], p, i, k = cfg->regions, n = 0;
	struct pma_geom g;

	for (p = 0; p < pool_part_count(pool) && p < POOL_MAX_PARTS; p++) {
		size = largest_gap(pool, p, &off) / k / POOL_ALIGN * POOL_ALIGN;
		if (geom_compute(size, cfg->format_version, cfg->sum_shift,
				 &g) < 0) {
			if (p == HEAP_PART)
				return util_errmsg_set(ENOSPC,
						       "no free space in the "
						       "pool for a heap of "
						       "%u regions",
						       k);
			continue; /* this part holds no heap */
		}
		if (n + k > PMA_MAX_SLOTS)
			return util_errmsg_set(ENFILE,
					       "%u regions per part: more "
					       "than %u regions",
					       k, PMA_MAX_SLOTS);
		for (i = 0; i < k; i++) {
			parts[n] = p;
			sizes[n++] = size;
		}
	}
	return pool_regions_add(pool, POOL_REGION_PMALLOC, n, parts, sizes,
				"pmalloc");
}

unsigned pma_part_regions(const struct pool *pool, unsigned part,
			  const struct pool_region **regs)
{
	const struct pool_hdr *ph = pool_header(pool);
	const struct pool_region *r;
	unsigned i, j, n = 0;

	for (i = 0; i < ph->nregions && i < POOL_MAX_REGIONS; i++) {
		r = &ph->regions[i];
		if (r->type != POOL_REGION_PMALLOC || r->part != part)
			continue;
		if (n > PMA_REGIONS_MAX)
			return n; /* too many: the caller refuses */
		for (j = n++; j > 0 && regs[j - 1]->off > r->off; j--)
			regs[j] = regs[j - 1];
		regs[j] = r;
	}
	return n;
}

/* regions per part of the pool's heap (part 0's count), checked: every
 * other part has as many or none; 0 or -EINVAL */
static int heap_nreg(const struct pool *pool, unsigned *ret_k)
{
	const struct pool_region *regs[PMA_REGIONS_MAX + 1];
	unsigned p, n, k = pma_part_regions(pool, HEAP_PART, regs);

	if (k == 0 || k > PMA_REGIONS_MAX || (k & (k - 1)))
		return util_errmsg_set(EINVAL,
				       "part 0 holds %u heap regions (1..%u, "
				       "a power of two)",
				       k, PMA_REGIONS_MAX);
	for (p = 1; p < pool_part_count(pool) && p < POOL_MAX_PARTS; p++) {
		n = pma_part_regions(pool, p, regs);
		if (n && (n != k || p * k + k > PMA_MAX_SLOTS))
			return util_errmsg_set(EINVAL,
					       "part %u holds %u heap regions, "
					       "part 0 %u",
					       p, n, k);
	}
	*ret_k = k;
	return 0;
}

static const uint8_t zero_magic[PMA_HEAP_MAGIC_LEN];

/* read-only: recovery replays into a DRAM copy of the page map, which
 * holds the marked groups' entries (zero pages elsewhere) */
static int pmap_copy(struct pma_heap *heap)
{
	const uint64_t *pm = heap->pmap_pm;
	uint64_t npages = heap->geom.npages, page, end;

	heap->pmap_pm = pma_zmap(npages * sizeof(uint64_t));
	if (!heap->pmap_pm)
		return util_errmsg_set(ENOMEM, "out of memory");
	for (page = pma_sum_next(heap, 0); page < npages;
	     page = pma_sum_next(heap, end)) {
		end = pma_sum_group_end(heap, page);
		memcpy(heap->pmap_pm + page, pm + page,
		       (end - page) * sizeof(uint64_t));
	}
	return 0;
}

/* the checkpoint triggers of heap, one of nparts heaps of a pool: the
 * recovery bound, PMA_CKPT_RECORDS, is shared by all the parts */
static void heap_ckpt_bound(struct pma_heap *heap, unsigned nparts)
{
	heap->ckpt_records = PMA_CKPT_RECORDS / nparts;
	heap->ckpt_share = heap->ckpt_records / heap->geom.narenas;
	if (heap->ckpt_share > heap->geom.log_cap / 2)
		heap->ckpt_share = heap->geom.log_cap / 2;
}

/* the heap region of heap->part in an open pool (region): format if new,
 * check, map the rest */
static int heap_setup(struct pma_heap *heap, const struct pool_region *region,
		      unsigned flags)
{
	int rc;

	heap->map = pool_part_map(heap->pool, heap->part);
	heap->node = pool_part_node(heap->pool, heap->part);
	heap->part_base = pm_map_addr(heap->map);
	heap->part_size = pm_map_size(heap->map);
	heap->region_off = region->off;
	heap->hdr = pma_addr(heap, region->off);
	if (heap->rdonly &&
	    !memcmp(heap->hdr->magic, zero_magic, sizeof(zero_magic)))
		return util_errmsg_set(ENOENT, "heap region is not formatted");
	if ((flags & HEAP_FORMAT_ALWAYS) ||
	    !memcmp(heap->hdr->magic, zero_magic, sizeof(zero_magic))) {
		rc = heap_format(heap, region->size);
		if (rc < 0)
			return rc;
	}
	rc = hdr_check(heap->hdr, region->size, &heap->geom);
	if (rc < 0)
		return rc;
	heap->data_base = heap->region_off + heap->geom.data_off;
	heap->data_len = heap->geom.npages << PMA_PAGE_SHIFT;
	/* an eighth of the threshold for the arenas' unpublished pages
	 * together (no slack at all in a small heap with many arenas) */
	heap->pend_slack =
		heap->geom.npages / PMA_PENDING_DIV / 8 / heap->geom.narenas;
	heap->fast_dest_lo = (uintptr_t)heap->part_base + heap->data_base;
	heap->fast_dest_off = pma_pool_off(heap, heap->data_base);
	if (!heap->rdonly) /* dest words in the data area: op_check */
		heap->fast_dest_len = heap->region_off +
				      heap->geom.region_size - heap->data_base;
	heap->checked = heap->hdr->version >= PMA_HEAP_VERSION_CHECKED;
	heap->fine = heap->hdr->version >= PMA_HEAP_VERSION_FINE;
	if (heap->region_off + heap->geom.region_size >
	    pma_rec_off_end(heap->geom.version))
		return util_errmsg_set(EBADMSG,
				       "heap region ends past what its log "
				       "records can name");
	heap->osh = pma_rec_osh(heap->hdr->version);
	heap->nclasses = pma_nclasses(heap->hdr->version);
	if (!heap->checked)
		heap->head_gen = heap->hdr->head_gen;
	else if (pma_check_gen_decode(heap->hdr->head_gen, &heap->head_gen))
		return util_errmsg_set(EIO,
				       "heap header: head generation word "
				       "0x%llx is damaged (check mismatch)",
				       (unsigned long long)heap->hdr->head_gen);
	/* a version 3 heap gets no record its version does not know */
	heap->ext1_pages = heap->hdr->version >= PMA_HEAP_VERSION_EXT1 ?
				   PMA_REC_EXT1_NPAGES_MAX :
				   0;
	heap->slab_keep = heap->cfg.slab_keep;
	heap->morph_pct = heap->hdr->version >= PMA_HEAP_VERSION_MORPH &&
					  !heap->rdonly &&
					  !((flags | heap->cfg.flags) &
					    PMA_HEAP_NO_MORPH) ?
				  heap->cfg.morph_pct :
				  0;
	atomic_store(&heap->may_mix, heap->morph_pct != 0);
	heap->local = heap->hdr->version >= PMA_HEAP_VERSION_LOCAL &&
		      (flags & PMA_HEAP_LOCAL_CHECKPOINTS);
	heap->xfree = heap->hdr->version >= PMA_HEAP_VERSION_XFREE;
	heap->xring = heap->hdr->version >= PMA_HEAP_VERSION_XRING &&
		      !heap->rdonly;
	heap_ckpt_bound(heap, 1);
	rc = pma_sum_load(heap);
	if (rc < 0)
		return rc;
	heap->pmap_pm = pma_addr(heap, heap->region_off + heap->geom.pmap_off);
	return heap->rdonly ? pmap_copy(heap) : 0;
}

/* the address of byte off of part in pool */
static void *pma_addr_part(struct pool *pool, unsigned part, uint64_t off)
{
	return (char *)pm_map_addr(pool_part_map(pool, part)) + off;
}

/* a heap struct for part of pool (not set up) */
static struct pma_heap *heap_new(struct pool *pool, unsigned part,
				 const struct pma_config *cfg, unsigned flags)
{
	struct pma_heap *heap = zalloc_lines(sizeof(*heap));

	if (!heap)
		return NULL;
	heap->cfg = *cfg;
	heap->membarrier = cfg->membarrier && pma_owner_membarrier();
	heap->pool = pool;
	heap->part = part;
	heap->slot = part;
	heap->top = heap;
	heap->nsib = 1;
	heap->nreg = 1;
	heap->sib[part] = heap;
	pthread_mutex_init(&heap->ext_lock, NULL);
	pthread_mutex_init(&heap->ckpt_lock, NULL);
	pthread_mutex_init(&heap->xckpt_lock, NULL);
	pthread_mutex_init(&heap->root_lock, NULL);
	pthread_mutex_init(&heap->sum_lock, NULL);
	pthread_mutex_init(&heap->xring_lock, NULL);
	pthread_mutex_init(&heap->xdrain_lock, NULL);
	pthread_mutex_init(&heap->add_lock, NULL);
	pthread_mutex_init(&heap->room_lock, NULL);
	heap->id = atomic_fetch_add(&heap_ids, 1);
	heap->rdonly = !!(flags & PMA_HEAP_RDONLY);
	return heap;
}

/* free top and its siblings, close the pool */
static void heap_free_all(struct pma_heap *top)
{
	struct pool *pool = top->pool;
	unsigned p;

	for (p = 0; p < PMA_MAX_SLOTS; p++)
		if (top->sib[p] && top->sib[p] != top)
			heap_free(top->sib[p]);
	pma_place_free(top);
	heap_free(top);
	pool_close(&pool);
}

/* a heap for region i of part p (slot p * nreg + i) next to top, set
 * up; not in top->sib[] yet */
static int heap_sibling_make(struct pma_heap *top, unsigned p, unsigned i,
			     const struct pool_region *region, unsigned flags,
			     struct pma_heap **ret_sib)
{
	struct pma_heap *sib = heap_new(top->pool, p, &top->cfg, flags);
	int rc;

	*ret_sib = sib;
	if (!sib)
		return util_errmsg_set(ENOMEM, "out of memory");
	sib->sib[p] = NULL;
	sib->slot = p * top->nreg + i;
	sib->top = top;
	rc = heap_setup(sib, region, flags);
	if (rc == 0)
		rc = heap_dram_init(sib);
	if (rc < 0) {
		if (top->nreg > 1)
			util_errmsg_prefix("part %u region %u", p, i);
		else
			util_errmsg_prefix("part %u", p);
	}
	return rc;
}

/* the heap of region r (slot p * nreg + i) next to top */
static int heap_add_sibling(struct pma_heap *top, unsigned p, unsigned i,
			    const struct pool_region *region, unsigned flags)
{
	struct pma_heap *sib;
	int rc;

	if (top->rdonly && !memcmp(pma_addr_part(top->pool, p, region->off),
				   zero_magic, sizeof(zero_magic)))
		return 0;
	rc = heap_sibling_make(top, p, i, region, flags, &sib);
	if (sib) { /* heap_free_all frees it with the rest */
		top->sib[sib->slot] = sib;
		top->nsib++;
	}
	return rc;
}

/*
 * The heap of every region after part 0's first (made with it,
 * heap_region_add): set up next to top, in slot p * nreg + i for the
 * i-th region of part p by offset. A read-only open skips a region whose
 * format a crash cut short (nothing was ever allocated in it); a
 * writable open formats it now.
 */
static int heap_add_siblings(struct pma_heap *top, unsigned flags)
{
	const struct pool_region *regs[PMA_REGIONS_MAX + 1];
	unsigned p, i, n;
	int rc;

	for (p = 0; p < pool_part_count(top->pool) && p < POOL_MAX_PARTS; p++) {
		n = pma_part_regions(top->pool, p, regs);
		for (i = 0; i < n && i < top->nreg; i++) {
			if (p * top->nreg + i == top->slot ||
			    !(top->held >> (p * top->nreg + i) & 1))
				continue;
			rc = heap_add_sibling(top, p, i, regs[i], flags);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

int pma_heap_foreign_check(const struct pma_heap *heap, uint64_t off)
{
	const struct pma_heap *top = heap->top;
	int s = pma_heap_slot_of(heap, off);

	if (s < 0 || top->held >> s & 1)
		return 0;
	return util_errmsg_set(EXDEV,
			       "0x%llx is in region %u of part %u, which this "
			       "open of the heap does not hold (region mask "
			       "0x%llx)",
			       (unsigned long long)off, (unsigned)s % top->nreg,
			       (unsigned)s / top->nreg,
			       (unsigned long long)top->held);
}

/*
 * Every slot's region into top (slot_off, slot_size), the slots held
 * (cfg.region_mask: checked against the pool's slots, each locked) and
 * top's slot (the lowest held). The region of top's slot into *ret.
 */
static int heap_slots(struct pma_heap *top, const struct pool_region **ret)
{
	const struct pool_region *regs[PMA_REGIONS_MAX + 1];
	uint64_t all = 0, mask = top->cfg.region_mask;
	unsigned p, i, n, k = top->nreg, s;
	char label[64];
	int rc;

	for (p = 0; p < pool_part_count(top->pool) && p < POOL_MAX_PARTS; p++) {
		n = pma_part_regions(top->pool, p, regs);
		for (i = 0; i < n && i < k && p * k + i < PMA_MAX_SLOTS; i++) {
			s = p * k + i;
			top->slot_off[s] = regs[i]->off;
			top->slot_size[s] = regs[i]->size;
			top->slot_hdr[s] =
				pma_addr_part(top->pool, p, regs[i]->off);
			all |= 1ULL << s;
		}
	}
	if (!k || !all)
		return util_errmsg_set(EINVAL, "pool has no heap region");
	if (mask & ~all)
		return util_errmsg_set(EINVAL,
				       "region mask 0x%llx: the pool has no "
				       "region slot %u (its slots: 0x%llx, %u "
				       "regions per part)",
				       (unsigned long long)mask,
				       (unsigned)__builtin_ctzll(mask & ~all),
				       (unsigned long long)all, k);
	/* every bit when unmasked: the free path tests ~held alone */
	top->held = mask ? mask : ~0ULL;
	top->ring_mask = mask				      ? ~mask :
			 top->cfg.flags & PMA_HEAP_TEST_XRING ? ~0ULL :
								0;
	s = (unsigned)__builtin_ctzll(mask ? mask : all);
	for (i = 0; mask && i < PMA_MAX_SLOTS; i++) {
		if (!(mask >> i & 1))
			continue;
		snprintf(label, sizeof(label), "region %u of part %u", i % k,
			 i / k);
		rc = pool_slot_lock(top->pool, i, label);
		if (rc < 0)
			return rc;
	}
	n = pma_part_regions(top->pool, s / k, regs);
	*ret = regs[s % k];
	top->part = s / k;
	top->slot = s;
	top->sib[0] = NULL;
	top->sib[s] = top;
	return n > s % k ? 0 : util_errmsg_set(EIO, "no region slot %u", s);
}

/*
 * A masked open (doc/shared-heaps.md, step 3a) cannot apply an XFREE
 * (a free across parts, logged by an open of the whole pool) whose block
 * and log are on different sides of its mask: refused (-EBUSY) if the
 * window of slot s (held or not, as held_side says) holds one whose
 * block is on the other side. The window is read from PM alone: another
 * open may append to a slot not held here, but masked opens never log
 * an XFREE, so a valid one is an old one.
 */
static int slot_xfree_check(struct pma_heap *top, uint64_t mask, unsigned s,
			    const struct pool_region *region)
{
	struct pma_heap *probe;
	struct pma_arena a;
	struct pma_op op;
	unsigned i;
	uint64_t k, tail;
	int rc, bs, held = (int)(mask >> s & 1);

	probe = heap_new(top->pool, s / top->nreg, &top->cfg, PMA_HEAP_RDONLY);
	if (!probe)
		return util_errmsg_set(ENOMEM, "out of memory");
	rc = heap_setup(probe, region, PMA_HEAP_RDONLY);
	if (rc == -ENOENT) /* never formatted: an empty window */
		rc = 0;
	else if (rc == 0 && probe->geom.version < PMA_HEAP_VERSION_XFREE)
		goto out;
	for (i = 0; rc == 0 && i < probe->geom.narenas; i++) {
		rc = pma_arena_init(probe, i, &a);
		if (rc < 0)
			break;
		tail = pma_booklog_find_tail(a.log, probe->geom.log_cap,
					     a.head);
		for (k = a.head; rc == 0 && k < tail; k += op.nrecs) {
			if (pma_booklog_read_op(a.log, probe->geom.log_cap, k,
						probe->osh, &op) < 0)
				break;
			if (op.type != PMA_REC_XFREE)
				continue;
			bs = pma_heap_slot_of(top,
					      pool_off_make(op.owner, op.off));
			if (bs >= 0 && (int)(mask >> bs & 1) != held)
				rc = util_errmsg_set(
					EBUSY,
					"region %u of part %u: arena %u "
					"record %llu frees a block of region "
					"%u of part %u (an open of the whole "
					"pool logged it and did not close); "
					"open the whole pool once to apply it",
					s % top->nreg, s / top->nreg, i,
					(unsigned long long)k,
					(unsigned)bs % top->nreg,
					(unsigned)bs / top->nreg);
		}
		pma_arena_release(&a);
	}
out:
	heap_free(probe);
	return rc;
}

/* slot_xfree_check of every slot but skip's, as if the open held mask
 * (an add skips the slots the open holds: it checked them when it
 * opened, it logs no XFREE, and its threads write them meanwhile) */
static int xfree_leftovers(struct pma_heap *top, uint64_t mask, uint64_t skip)
{
	const struct pool_region *regs[PMA_REGIONS_MAX + 1];
	unsigned p, i, n, s, k = top->nreg;
	int rc;

	for (p = 0; p < pool_part_count(top->pool) && p < POOL_MAX_PARTS; p++) {
		n = pma_part_regions(top->pool, p, regs);
		for (i = 0; i < n && i < k && p * k + i < PMA_MAX_SLOTS; i++) {
			s = p * k + i;
			if (skip >> s & 1)
				continue;
			/* a region another open holds has none (that open
			 * checked it, and masked opens log no XFREE); its
			 * holder writes it meanwhile, so it is not read */
			if (!(mask >> s & 1) &&
			    pool_slot_busy(top->pool, s) == 1)
				continue;
			rc = slot_xfree_check(top, mask, s, regs[i]);
			/* (or it was taken while read) */
			if (rc < 0 && !(mask >> s & 1) &&
			    pool_slot_busy(top->pool, s) == 1)
				rc = 0;
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

/* take ownership of an open pool: set up, recover, rebuild (every part) */
static int heap_attach(struct pool *pool, const struct pma_config *cfg,
		       unsigned flags, struct pma_heap **ret_heap)
{
	const struct pool_region *region;
	struct pma_heap *heap = heap_new(pool, HEAP_PART, cfg, flags);
	unsigned p;
	int rc = 0;

	if (!heap) {
		pool_close(&pool);
		return util_errmsg_set(ENOMEM, "out of memory");
	}
	region = pool_region_find(pool, POOL_REGION_PMALLOC, HEAP_PART);
	if (!region && !(flags & PMA_HEAP_FORMAT))
		rc = util_errmsg_set(ENOENT, "pool has no pmalloc heap");
	else if (!region)
		rc = heap_region_add(pool, cfg);
	if (rc == 0 && !region)
		region = pool_region_find(pool, POOL_REGION_PMALLOC, HEAP_PART);
	if (rc == 0)
		rc = heap_nreg(pool, &heap->nreg);
	if (rc == 0)
		rc = heap_slots(heap, &region);
	if (rc == 0 && cfg->region_mask)
		rc = xfree_leftovers(heap, heap->held, 0);
	if (rc == 0)
		rc = heap_setup(heap, region, flags);
	if (rc == 0)
		rc = heap_dram_init(heap);
	if (rc == 0)
		rc = heap_add_siblings(heap, flags);
	for (p = 0; rc == 0 && p < PMA_MAX_SLOTS; p++)
		if (heap->sib[p])
			heap_ckpt_bound(heap->sib[p], heap->nsib);
	if (rc == 0)
		rc = pma_root_verify(heap, 0);
	if (rc == 0)
		rc = pma_place_init(heap, flags);
	if (rc == 0)
		rc = pma_recover_parts(heap);
	for (p = 0; rc == 0 && p < PMA_MAX_SLOTS; p++)
		if (heap->sib[p])
			rc = pma_rebuild(heap->sib[p]);
	if (rc == 0)
		rc = pma_root_verify(heap, 1);
	if (rc == 0)
		rc = pma_xring_open(heap);
	if (rc < 0) {
		heap_free_all(heap);
		return rc;
	}
	for (p = 0; p < PMA_MAX_SLOTS; p++)
		if (heap->sib[p])
			pma_heap_register(heap->sib[p]);
	*ret_heap = heap;
	return 0;
}

/* a config with flags, or flags added to cfg (NULL: the defaults) */
static void cfg_with_flags(struct pma_config *out, const struct pma_config *cfg,
			   unsigned flags)
{
	if (cfg)
		*out = *cfg;
	else
		pma_config_init(out);
	out->flags |= flags;
}

PMA_API int pma_heap_open(const char *path, unsigned flags,
			  struct pma_heap **ret_heap)
{
	struct pma_config cfg;

	cfg_with_flags(&cfg, NULL, flags);
	return pma_heap_open_parts_cfg(&path, 1, &cfg, ret_heap);
}

PMA_API int pma_heap_open_cfg(const char *path, const struct pma_config *cfg,
			      struct pma_heap **ret_heap)
{
	return pma_heap_open_parts_cfg(&path, 1, cfg, ret_heap);
}

/* open the pool's parts at paths, or from fds if not NULL */
static int heap_open(const char *const *paths, unsigned npaths, const int *fds,
		     const struct pma_config *cfg, struct pma_heap **ret_heap)
{
	const char *path = npaths ? paths[0] : NULL;
	struct pma_config def;
	unsigned flags, pool_flags;
	struct pool *pool;
	int rc;

	if (!cfg) {
		pma_config_init(&def);
		cfg = &def;
	}
	flags = cfg->flags & ~(unsigned)HEAP_FORMAT_ALWAYS;
	pool_flags = (flags & PMA_HEAP_RDONLY)	? POOL_OPEN_RDONLY :
		     (flags & PMA_HEAP_PRIVATE) ? POOL_OPEN_PRIVATE :
		     cfg->region_mask		? POOL_OPEN_SHARED :
						  0;
	if (!path || !ret_heap)
		return util_errmsg_set(EINVAL, "no path or ret_heap");
	if (cfg->region_mask &&
	    (flags & (PMA_HEAP_RDONLY | PMA_HEAP_PRIVATE | PMA_HEAP_FORMAT)))
		return util_errmsg_set(EINVAL,
				       "a region mask is for writable opens "
				       "of a formatted heap");
	if ((flags & PMA_HEAP_RDONLY) && (flags & PMA_HEAP_FORMAT))
		return util_errmsg_set(EINVAL, "PMA_HEAP_RDONLY with "
					       "PMA_HEAP_FORMAT");
	rc = fds ? pool_open_fds(fds, npaths, pool_flags, &pool) :
		   pool_open_parts(paths, npaths, pool_flags, &pool);
	if (rc < 0)
		return rc;
	rc = heap_attach(pool, cfg, flags, ret_heap);
	if (rc < 0)
		util_errmsg_prefix("heap '%s'", path);
	return rc;
}

int pma_heap_open_parts(const char *const *paths, unsigned npaths,
			unsigned flags, struct pma_heap **ret_heap)
{
	struct pma_config cfg;

	cfg_with_flags(&cfg, NULL, flags);
	return heap_open(paths, npaths, NULL, &cfg, ret_heap);
}

int pma_heap_open_parts_cfg(const char *const *paths, unsigned npaths,
			    const struct pma_config *cfg,
			    struct pma_heap **ret_heap)
{
	return heap_open(paths, npaths, NULL, cfg, ret_heap);
}

PMA_API int pma_heap_open_fds_cfg(const int *fds, unsigned nfds,
				  const struct pma_config *cfg,
				  struct pma_heap **ret_heap)
{
	char names[POOL_MAX_PARTS][32];
	const char *paths[POOL_MAX_PARTS];
	unsigned i;

	if (!fds || !nfds || nfds > POOL_MAX_PARTS)
		return util_errmsg_set(EINVAL, "%u descriptors (1..%u)", nfds,
				       POOL_MAX_PARTS);
	for (i = 0; i < nfds; i++) { /* names for messages */
		snprintf(names[i], sizeof(names[i]), "fd %d", fds[i]);
		paths[i] = names[i];
	}
	return heap_open(paths, nfds, fds, cfg, ret_heap);
}

PMA_API int pma_heap_open_fds(const int *fds, unsigned nfds, unsigned flags,
			      struct pma_heap **ret_heap)
{
	struct pma_config cfg;

	cfg_with_flags(&cfg, NULL, flags);
	return pma_heap_open_fds_cfg(fds, nfds, &cfg, ret_heap);
}

PMA_API int pma_heap_create_cfg(const char *path, uint64_t size,
				const struct pma_config *cfg,
				struct pma_heap **ret_heap)
{
	struct pool_create_params params = { 0 };
	char names[POOL_MAX_PARTS][PATH_MAX];
	const char *paths[POOL_MAX_PARTS];
	struct pma_config def;
	struct pool *pool;
	unsigned p;
	int rc;

	if (!cfg) {
		pma_config_init(&def);
		cfg = &def;
	}
	if (!path || !ret_heap)
		return util_errmsg_set(EINVAL, "no path or ret_heap");
	if (cfg->flags & PMA_HEAP_RDONLY)
		return util_errmsg_set(EINVAL, "cannot create a heap "
					       "read-only");
	size = size / POOL_ALIGN * POOL_ALIGN;
	if (size < POOL_DATA_OFF + (1ULL << 20))
		return util_errmsg_set(EINVAL,
				       "heap size %llu too small (min "
				       "1 MiB + 64 KiB)",
				       (unsigned long long)size);
	for (p = 0; p < cfg->nparts; p++) {
		if (!p)
			rc = snprintf(names[p], sizeof(names[p]), "%s", path);
		else
			rc = snprintf(names[p], sizeof(names[p]), "%s.part%u",
				      path, p);
		if (rc < 0 || (size_t)rc >= sizeof(names[p]))
			return util_errmsg_set(ENAMETOOLONG,
					       "path of part %u too long", p);
		paths[p] = names[p];
	}
	params.nparts = cfg->nparts;
	params.paths = paths;
	params.nodes = cfg->nodes;
	params.part_size = size;
	params.mode = (mode_t)cfg->mode;
	params.flags = (cfg->flags & PMA_HEAP_FORCE) ? POOL_CREATE_FORCE : 0;
	rc = pool_create(&params, &pool);
	if (rc < 0)
		return rc;
	rc = heap_attach(pool, cfg,
			 PMA_HEAP_FORMAT | HEAP_FORMAT_ALWAYS |
				 (cfg->flags & (PMA_HEAP_LOCAL_CHECKPOINTS |
						PMA_HEAP_INTERLEAVE)),
			 ret_heap);
	if (rc < 0)
		util_errmsg_prefix("heap '%s'", path);
	return rc;
}

PMA_API int pma_heap_create(const char *path, uint64_t size, unsigned flags,
			    struct pma_heap **ret_heap)
{
	struct pma_config cfg;

	cfg_with_flags(&cfg, NULL, flags);
	return pma_heap_create_cfg(path, size, &cfg, ret_heap);
}

PMA_API const char *pma_heap_damage(const struct pma_heap *heap)
{
	return heap ? pool_header_note(heap->pool) : NULL;
}

/*
 * More room for a masked open (doc/shared-heaps.md, "More room"): the
 * regions of mask locked, checked for XFREE leftovers, set up, recovered
 * and rebuilt while the open's threads go on, each in sib[] before it is
 * held (its recovery routes offsets to it; pma_sib hides it from every
 * other reader), then held (release), then out of ring_mask, so a free
 * of one of its blocks goes through its ring until then (drained here
 * after). Nothing on media is new: it is what a masked open of the
 * regions does.
 */
static int add_check(struct pma_heap *top, uint64_t mask)
{
	uint64_t all = 0;
	unsigned s;

	if (!top->cfg.region_mask)
		return util_errmsg_set(EINVAL,
				       "this open holds every region already: "
				       "only an open with a region mask adds "
				       "regions");
	for (s = 0; s < PMA_MAX_SLOTS; s++)
		if (top->slot_size[s])
			all |= 1ULL << s;
	if (!mask)
		return util_errmsg_set(EINVAL, "no region to add (mask 0)");
	if (mask & ~all)
		return util_errmsg_set(EINVAL,
				       "region mask 0x%llx: the pool has no "
				       "region slot %u (its slots: 0x%llx)",
				       (unsigned long long)mask,
				       (unsigned)__builtin_ctzll(mask & ~all),
				       (unsigned long long)all);
	if (mask & top->held) {
		s = (unsigned)__builtin_ctzll(mask & top->held);
		return util_errmsg_set(EEXIST,
				       "region %u of part %u is held by this "
				       "open already",
				       s % top->nreg, s / top->nreg);
	}
	return 0;
}

/* lock mask's slots; on failure none stays locked */
static int add_lock_slots(struct pma_heap *top, uint64_t mask)
{
	char label[64];
	unsigned s, t;
	int rc;

	for (s = 0; s < PMA_MAX_SLOTS; s++) {
		if (!(mask >> s & 1))
			continue;
		snprintf(label, sizeof(label), "region %u of part %u",
			 s % top->nreg, s / top->nreg);
		rc = pool_slot_lock(top->pool, s, label);
		if (rc < 0) {
			for (t = 0; t < s; t++)
				if (mask >> t & 1)
					pool_slot_unlock(top->pool, t);
			return rc;
		}
	}
	return 0;
}

/* set up, recover and rebuild slot s's region into added[s] */
static int add_one(struct pma_heap *top, unsigned s, unsigned nsib,
		   struct pma_heap **added)
{
	const struct pool_region *regs[PMA_REGIONS_MAX + 1];
	unsigned p = s / top->nreg, i = s % top->nreg;
	int rc;

	if (pma_part_regions(top->pool, p, regs) <= i)
		return util_errmsg_set(EIO, "no region slot %u", s);
	rc = heap_sibling_make(top, p, i, regs[i], top->cfg.flags, &added[s]);
	if (!added[s])
		return rc;
	/* routing (recovery's dest words) reaches it from here on */
	__atomic_store_n(&top->sib[s], added[s], __ATOMIC_RELEASE);
	heap_ckpt_bound(added[s], nsib);
	if (rc == 0)
		rc = pma_recover(added[s]);
	if (rc == 0)
		rc = pma_rebuild(added[s]);
	if (rc == 0)
		rc = pma_xring_add(added[s]);
	if (rc < 0)
		util_errmsg_prefix("region %u of part %u", i, p);
	return rc;
}

PMA_API int pma_heap_add_regions(struct pma_heap *heap, uint64_t mask)
{
	struct pma_heap *top, *added[PMA_MAX_SLOTS] = { NULL };
	unsigned s, n = (unsigned)__builtin_popcountll(mask), parts = 0;
	int rc;

	if (!heap)
		return util_errmsg_set(EINVAL, "no heap");
	top = heap->top;
	pthread_mutex_lock(&top->add_lock);
	rc = add_check(top, mask);
	if (rc == 0)
		rc = add_lock_slots(top, mask);
	if (rc < 0) {
		pthread_mutex_unlock(&top->add_lock);
		return rc;
	}
	rc = xfree_leftovers(top, top->held | mask, top->held);
	for (s = 0; rc == 0 && s < PMA_MAX_SLOTS; s++)
		if (mask >> s & 1) {
			if (!pma_part_heap(top, s / top->nreg))
				parts = 1; /* a part new to the placement */
			rc = add_one(top, s, top->nsib + n, added);
		}
	if (rc < 0) {
		for (s = 0; s < PMA_MAX_SLOTS; s++) {
			if (!(mask >> s & 1))
				continue;
			if (added[s]) {
				__atomic_store_n(&top->sib[s], NULL,
						 __ATOMIC_RELEASE);
				heap_free(added[s]);
			}
			pool_slot_unlock(top->pool, s);
		}
		pthread_mutex_unlock(&top->add_lock);
		return rc;
	}
	top->nsib += n;
	__atomic_fetch_or(&top->held, mask, __ATOMIC_RELEASE);
	__atomic_fetch_and(&top->ring_mask, ~mask, __ATOMIC_RELEASE);
	if (!top->place || parts)
		rc = pma_place_init(top, top->cfg.flags);
	for (s = 0; s < PMA_MAX_SLOTS; s++)
		if (added[s]) {
			pma_heap_register(added[s]);
			(void)pma_xring_drain(added[s]);
		}
	pthread_mutex_unlock(&top->add_lock);
	return rc;
}

PMA_API void pma_heap_close(struct pma_heap *heap)
{
	unsigned p;

	if (!heap)
		return;
	heap = heap->top;
	if (!heap->rdonly) /* what other opens freed, applied now */
		(void)pma_heap_sync(heap);
	for (p = 0; p < PMA_MAX_SLOTS; p++) {
		if (!heap->sib[p])
			continue;
		/* exiting threads no longer release arenas of this heap */
		pma_heap_unregister(heap->sib[p]);
		/* XXX: on failure the logs stay and the next open replays
		 * them */
		if (!heap->rdonly)
			(void)pma_checkpoint(heap->sib[p]);
	}
	heap_free_all(heap);
}
