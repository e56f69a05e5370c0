/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * heap-image (heap-image.h): once per process a small heap is made in a
 * tmpfs file: slabs of several classes and extents, frees by the owner
 * and by another arena, a clean close, then a child process that
 * allocates and frees more and _exit()s without closing (a crash: its
 * records stay in the logs). An input's patch script (heap-script.h) is
 * applied to a copy of that image.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heap-image.h"
#include "pmalloc.h"
#include "pmalloc/internal.h"
#include "util/crc.h"
#include "../lib/test-cfg.h"

const size_t sizes[NSIZES] = { 24,   64,    100,   300,	  1000,	 2000,
			       5000, 14000, 20000, 70000, 200000 };

struct heap_image fx;

void die(const char *what)
{
	fprintf(stderr, "fuzz-heap: %s: %s\n", what, pma_errormsg());
	abort();
}

/* a failed call must return a negative errno and leave a message */
void check_rc(int rc, const char *what)
{
	if (rc && getenv("FUZZ_HEAP_VERBOSE"))
		fprintf(stderr, "fuzz-heap: %s: %d %s\n", what, rc,
			pma_errormsg());
	if (rc == 0)
		return;
	if (rc > 0 || rc < -4095 || !pma_errormsg()[0]) {
		fprintf(stderr, "fuzz-heap: %s returned %d, message '%s'\n",
			what, rc, pma_errormsg());
		abort();
	}
}

/* ------------------------------------------------------------ the image */

static uint64_t *slots_of(struct pma_heap *heap)
{
	uint64_t root;

	if (pma_root(heap, NSLOTS * sizeof(uint64_t), &root) < 0)
		die("root");
	return pma_direct(heap, root);
}

/* the clean part: both arenas allocate every size, some blocks are
 * freed by their owner, some by the other arena (RFREE) */
static void build_clean(const char *path)
{
	struct pma_heap *heap;
	uint64_t *slots;
	unsigned i;

	/* one-chunk summary groups: 62 groups, some of them unmarked */
	test_cfg.sum_shift = PMA_SUM_SHIFT_MIN;
	if (test_heap_create(path, POOL_SIZE, PMA_HEAP_FORCE, &heap) < 0)
		die("create");
	slots = slots_of(heap);
	for (i = 0; i < NSLOTS; i++) {
		pma_arena_bind(heap, i % 2);
		if (pma_malloc_to(heap, sizes[i % NSIZES], &slots[i]) < 0)
			die("malloc_to");
	}
	for (i = 0; i < NSLOTS; i += 4) {
		pma_arena_bind(heap, i / 4 % 2);
		if (pma_free_from(heap, &slots[i]) < 0)
			die("free_from");
	}
	pma_heap_close(heap);
}

/* the child's part, left in the logs: own and remote frees, new slabs
 * (a new class), extents allocated and freed */
static void build_crash(const char *path)
{
	struct pma_heap *heap;
	uint64_t *slots;
	unsigned i;

	if (test_heap_open(path, 0, &heap) < 0)
		die("open");
	slots = slots_of(heap);
	for (i = 1; i < NSLOTS; i += 3) {
		pma_arena_bind(heap, i % 2);
		if (pma_free_from(heap, &slots[i]) < 0)
			die("free_from");
	}
	for (i = 0; i < NSLOTS; i++) {
		if (slots[i])
			continue;
		pma_arena_bind(heap, i % 2);
		if (pma_malloc_to(heap, i % 5 ? 3000 : sizes[i % NSIZES],
				  &slots[i]) < 0)
			die("malloc_to");
	}
	pma_arena_bind(heap, 1);
	if (pma_free_from(heap, &slots[9]) < 0 ||
	    pma_free_from(heap, &slots[10]) < 0)
		die("free_from");
	_exit(0); /* a crash: no checkpoint, no close */
}

static int log_print(const struct pma_log_entry *e, void *arg)
{
	const uint64_t *head = arg;

	fprintf(stderr, "fuzz-heap: arena %u record +%llu: %s 0x%llx\n",
		e->arena, (unsigned long long)(e->index - head[e->arena]),
		e->type, (unsigned long long)e->off);
	return 0;
}

/* remember where things are, from a read-only open of the image */
static void survey(void)
{
	struct pma_heap *heap;
	uint64_t page, e, root;
	unsigned i;

	if (test_heap_open(fx.path, PMA_HEAP_RDONLY, &heap) < 0)
		die("read-only open");
	fx.region = heap->region_off;
	fx.geom = heap->geom;
	fx.data = heap->data_base;
	root = heap->hdr->root_off;
	fx.root = pool_off_byte(root);
	for (i = 0; i < heap->geom.narenas && i < PMA_MAX_ARENAS; i++)
		fx.head[i] = heap->arenas[i].head;
	for (page = 0; page < heap->geom.npages; page++) {
		/* the image's entry (pmap_pm is the replayed copy) */
		e = ((uint64_t *)(fx.pristine + fx.region +
				  fx.geom.pmap_off))[page];
		if (pma_pmap_kind(e) == PMA_PMAP_SLAB && fx.nslab < MAX_LIST)
			fx.slab[fx.nslab++] = page;
		if (pma_pmap_kind(e) == PMA_PMAP_EXTENT && fx.next < MAX_LIST)
			fx.ext[fx.next++] = page;
	}
	if (getenv("FUZZ_HEAP_VERBOSE") &&
	    pma_log_foreach(heap, log_print, fx.head) < 0)
		die("log walk");
	pma_heap_close(heap);
	if (!fx.nslab || !fx.next || !root)
		die("image has no slab, extent or root");
	if (getenv("FUZZ_HEAP_VERBOSE"))
		fprintf(stderr,
			"fuzz-heap: %u arenas, log_cap %u, %llu pages, "
			"%u slabs, %u extents\n",
			fx.geom.narenas, fx.geom.log_cap,
			(unsigned long long)fx.geom.npages, fx.nslab, fx.next);
}

void setup_file(uint64_t size)
{
	const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" :
			  getenv("TMPDIR")		? getenv("TMPDIR") :
							  "/tmp";
	char tmpl[4096];
	int fd, status;
	pid_t pid;

	fx.size = size;
	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 1);
	snprintf(tmpl, sizeof(tmpl), "%s/fuzz-heap.XXXXXX", dir);
	fd = mkstemp(tmpl);
	if (fd < 0)
		die("mkstemp");
	build_clean(tmpl);
	/* the pool was re-created at the name: hold it open, unlinked */
	close(fd);
	fd = open(tmpl, O_RDWR | O_CLOEXEC);
	if (fd < 0 || unlink(tmpl) < 0)
		die("reopen pool file");
	/* CLOEXEC does not matter: the path is opened, not exec'd */
	snprintf(fx.path, sizeof(fx.path), "/proc/self/fd/%d", fd);
	pid = fork();
	if (pid == 0)
		build_crash(fx.path);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
		die("crash child");
	fx.map = mmap(NULL, POOL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		      0);
	fx.pristine = malloc(POOL_SIZE);
	fx.patched = malloc(POOL_SIZE);
	if (fx.map == MAP_FAILED || !fx.pristine || !fx.patched)
		die("image buffers");
	memcpy(fx.pristine, fx.map, POOL_SIZE);
	survey();
}

/* ------------------------------------------------------------ patching */

/* a patch location: bytes [base, base + len) of the file, offset off in
 * them; k: global record index when the location is a log record */
struct loc {
	uint64_t base, len, off;
	int is_log, is_sum;
	unsigned arena;
	uint64_t k;
};

/* file offset of the slot of record k of arena's log */
static uint64_t log_slot(unsigned arena, uint64_t k)
{
	uint8_t *base = fx.pristine;
	struct pma_rec *logs =
		(struct pma_rec *)(void *)(base + fx.region + fx.geom.log_off);
	uint32_t cap = fx.geom.log_cap;

	return (uint64_t)((uint8_t *)pma_booklog_slot_at(logs + (size_t)arena *
									 cap,
							 (uint32_t)(k % cap)) -
			  base);
}

static void loc_range(struct loc *l, uint64_t base, uint64_t len, uint64_t off)
{
	l->base = base;
	l->len = len;
	l->off = len ? off % len : 0;
}

static void loc_of(unsigned rgn, uint32_t idx, struct loc *l)
{
	const struct pma_geom *g = &fx.geom;
	uint64_t pmap = fx.region + g->pmap_off;
	uint64_t n;

	memset(l, 0, sizeof(*l));
	switch (rgn) {
	case HEAP_RGN_HDR:
		return loc_range(l, fx.region, PMA_HDR_SIZE, idx);
	case HEAP_RGN_DESC:
		return loc_range(l, fx.region + g->arena_off,
				 g->narenas * 64ULL, idx);
	case HEAP_RGN_LOG:
		l->is_log = 1;
		l->arena = (idx >> 4 & 0xf) % g->narenas;
		l->k = fx.head[l->arena] + (idx >> 8) % g->log_cap;
		return loc_range(l, log_slot(l->arena, l->k),
				 sizeof(struct pma_rec), idx & 0xf);
	case HEAP_RGN_PMAP:
		return loc_range(l, pmap, g->npages * 8, idx);
	case HEAP_RGN_SLAB:
		n = fx.slab[(idx >> 9) % fx.nslab];
		return loc_range(l, fx.data + n * PMA_PAGE, PMA_SLAB_HDR_SIZE,
				 idx & 0x1ff);
	case HEAP_RGN_SLABENT:
		n = fx.slab[(idx >> 3) % fx.nslab];
		return loc_range(l, pmap + n * 8, 8, idx & 7);
	case HEAP_RGN_EXTENT:
		n = fx.ext[(idx >> 3) % fx.next];
		return loc_range(l, pmap + n * 8, 8, idx & 7);
	case HEAP_RGN_ROOT:
		return loc_range(l, fx.root, NSLOTS * 8, idx);
	case HEAP_RGN_DATA:
		return loc_range(l, fx.data, g->npages * PMA_PAGE, idx);
	case HEAP_RGN_SUM:
		l->is_sum = 1;
		return loc_range(l, fx.region + g->sum_off, g->sum_words * 8,
				 idx);
	default:
		return loc_range(l, fx.region, g->region_size, idx);
	}
}

/* the address of w bytes at l (moved back to fit in the location) */
static uint8_t *loc_addr(const struct loc *l, uint64_t w)
{
	uint64_t off = l->off + w > l->len ? l->len - w : l->off;

	return fx.patched + l->base + off;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* a fresh valid record from a REC command's value */
static void rec_make(const struct loc *l, uint64_t v, struct pma_rec *r)
{
	unsigned type = (v & 7) | (v >> 45 & 1) << 3;
	unsigned extra = (unsigned)(v >> 35 & 0x3ff);
	uint64_t payload = v >> 3 & 0xffffffffULL, value = 0;

	if (type == PMA_REC_NONE)
		type = PMA_REC_EXT_LEN;
	/* the one-record extent ops, also types no build knows */
	if ((type >= PMA_REC_EXT_ALLOC1 && type <= PMA_REC_EXT_LFREE1) ||
	    type >= PMA_REC_NTYPES)
		payload = ((fx.data >> PMA_PAGE_SHIFT) + (payload & 0x1fffff)) |
			  (payload >> 21) << PMA_REC_EXT1_OFF_BITS;
	else if (type != PMA_REC_EXT_LEN)
		payload += fx.data >> 6;
	if (type == PMA_REC_SLAB_NEW || type == PMA_REC_SLAB_FREE)
		value = (uint64_t)(extra & 0x3f) << 8 |
			(uint64_t)(extra >> 6 & 0xf) << 16;
	else if (type != PMA_REC_EXT_LEN && (extra & 0xff) != 255)
		value = pool_off_make(0, fx.root + (extra & 0xff) * 8ULL);
	pma_booklog_encode(l->k, fx.geom.log_cap, type,
			   payload & PMA_REC_PAYLOAD_MAX, value, r);
}

/* recompute epoch, tag and checksum of the record at l */
static void rec_reseal(const struct loc *l)
{
	uint8_t *p = fx.patched + l->base;
	uint64_t w0 = get64(p), w1 = get64(p + 8);
	struct pma_rec r;

	pma_booklog_encode(l->k, fx.geom.log_cap,
			   (unsigned)(w0 & ((1u << PMA_REC_TYPE_BITS) - 1)),
			   w0 >> PMA_REC_PAYLOAD_SHIFT, w1 & ~PMA_REC_TAG_MASK,
			   &r);
	put64(p, r.word0);
	put64(p + 8, r.word1);
}

/* the summary word the patch at l touched: a valid check again */
static void sum_reseal(const struct loc *l)
{
	uint64_t off = l->off + 8 > l->len ? l->len - 8 : l->off;
	uint64_t w;
	uint8_t *p;

	for (w = off / 8; w * 8 < off + 8 && w * 8 < l->len; w++) {
		p = fx.patched + l->base + w * 8;
		put64(p, pma_sum_encode(get64(p), w));
	}
}

static void hdr_reseal(void)
{
	struct pma_heap_hdr *hdr =
		(struct pma_heap_hdr *)(void *)(fx.patched + fx.region);

	hdr->checksum = util_crc32c(0, hdr, PMA_HDR_CSUM_LEN);
}

static void cmd_copy(const struct loc *dst, uint64_t v)
{
	struct loc src;
	uint64_t n = (v >> 32 & 0xfff) + 1;

	loc_of((unsigned)(v & 0xff) % HEAP_RGN_COUNT,
	       (uint32_t)(v >> 8 & 0xffffff), &src);
	if (n > src.len - src.off)
		n = src.len - src.off;
	if (n > dst->len - dst->off)
		n = dst->len - dst->off;
	memmove(fx.patched + dst->base + dst->off,
		fx.patched + src.base + src.off, n);
}

void cmd_apply(const struct heap_cmd *c)
{
	struct pma_rec r;
	struct loc l;
	uint8_t *p;

	loc_of(c->op == HEAP_OP_REC ? HEAP_RGN_LOG : c->rgn, c->idx, &l);
	switch (c->op) {
	case HEAP_OP_SET8:
		*loc_addr(&l, 1) = (uint8_t)c->value;
		break;
	case HEAP_OP_SET64:
		put64(loc_addr(&l, 8), c->value);
		break;
	case HEAP_OP_XOR64:
		p = loc_addr(&l, 8);
		put64(p, get64(p) ^ c->value);
		break;
	case HEAP_OP_ADD64:
		p = loc_addr(&l, 8);
		put64(p, get64(p) + c->value);
		break;
	case HEAP_OP_COPY:
		cmd_copy(&l, c->value);
		break;
	default: /* HEAP_OP_REC */
		rec_make(&l, c->value, &r);
		put64(fx.patched + l.base, r.word0);
		put64(fx.patched + l.base + 8, r.word1);
		break;
	}
	if (c->reseal && l.is_log && c->op != HEAP_OP_REC)
		rec_reseal(&l);
	if (c->reseal && l.is_sum)
		sum_reseal(&l);
	if (c->reseal)
		hdr_reseal();
}
