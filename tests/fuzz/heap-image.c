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
#include <pthread.h>
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

struct heap_image fx, fx2[2], fxr[2], fxh;

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

/* a child building an image failed: say why (it has no other way) */
void child_fail(int code, const char *what)
{
	fprintf(stderr, "fuzz-heap: image child: %s: %s\n", what,
		pma_errormsg());
	_exit(code);
}

void child_wait(pid_t pid, const char *what)
{
	int status = 0;
	pid_t rc;

	if (pid < 0)
		die(what);
	/* (libFuzzer's timer signal interrupts the wait: not a failure) */
	do
		rc = waitpid(pid, &status, 0);
	while (rc < 0 && errno == EINTR);
	if (rc != pid) {
		fprintf(stderr, "fuzz-heap: ERROR: %s: waitpid: %s\n", what,
			strerror(errno));
		abort();
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return;
	if (WIFSIGNALED(status))
		fprintf(stderr, "fuzz-heap: ERROR: %s: killed by signal %d\n",
			what, WTERMSIG(status));
	else
		fprintf(stderr, "fuzz-heap: ERROR: %s: exit code %d\n", what,
			WEXITSTATUS(status));
	abort();
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

/* where the structures of one part's heap are (image->pristine read) */
static void survey_part(struct heap_image *image, struct pma_heap *heap)
{
	uint64_t page, e;
	unsigned i;

	image->part = heap->part;
	image->region = heap->region_off;
	image->geom = heap->geom;
	image->data = heap->data_base;
	for (i = 0; i < heap->geom.narenas && i < PMA_MAX_ARENAS; i++)
		image->head[i] = heap->arenas[i].head;
	for (page = 0; page < heap->geom.npages; page++) {
		/* the image's entry (pmap_pm is the replayed copy) */
		e = ((uint64_t *)(image->pristine + image->region +
				  image->geom.pmap_off))[page];
		if (pma_pmap_kind(e) == PMA_PMAP_SLAB &&
		    image->nslab < MAX_LIST)
			image->slab[image->nslab++] = page;
		if (pma_pmap_kind(e) == PMA_PMAP_EXTENT &&
		    image->next < MAX_LIST)
			image->ext[image->next++] = page;
	}
	if (getenv("FUZZ_HEAP_VERBOSE"))
		fprintf(stderr,
			"fuzz-heap: part %u region at 0x%llx: %u arenas, "
			"log_cap %u, %llu pages, %u slabs, %u extents, rings "
			"at +0x%llx\n",
			image->part, (unsigned long long)image->region,
			image->geom.narenas, image->geom.log_cap,
			(unsigned long long)image->geom.npages, image->nslab,
			image->next, (unsigned long long)image->geom.xring_off);
	if (!image->nslab || !image->next)
		die("image has no slab or extent");
}

/* remember where things are, from a read-only open of the image of n
 * parts or regions (images[0] names the pool) */
void image_survey(struct heap_image *images, unsigned n)
{
	struct pma_heap *heap;
	uint64_t root;
	unsigned p;

	if (test_heap_open(images[0].path, PMA_HEAP_RDONLY, &heap) < 0)
		die("read-only open");
	for (p = 0; p < n; p++) {
		if (!heap->sib[p])
			die("a part without its heap");
		survey_part(&images[p], heap->sib[p]);
	}
	root = heap->hdr->root_off;
	if (!root || pool_off_part(root))
		die("image has no root in part 0");
	/* the root object's dest words (part 0's); ROOT commands of
	 * another part patch the start of its data area */
	for (p = 0; p < n; p++) {
		images[p].dest_root = root;
		images[p].root = p ? images[p].data : pool_off_byte(root);
	}
	if (getenv("FUZZ_HEAP_VERBOSE") &&
	    pma_log_foreach(heap, log_print, images[0].head) < 0)
		die("log walk");
	pma_heap_close(heap);
}

void setup_file(uint64_t size)
{
	const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" :
			  getenv("TMPDIR")		? getenv("TMPDIR") :
							  "/tmp";
	char tmpl[4096];
	int fd;
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
	child_wait(pid, "crash child");
	fx.map = mmap(NULL, POOL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		      0);
	fx.pristine = malloc(POOL_SIZE);
	fx.patched = malloc(POOL_SIZE);
	if (fx.map == MAP_FAILED || !fx.pristine || !fx.patched)
		die("image buffers");
	memcpy(fx.pristine, fx.map, POOL_SIZE);
	image_survey(&fx, 1);
}

/* ------------------------------------------------------------ 2 parts */

/* a thread of an interleaved heap (threads take the parts in turn) */
struct filler {
	struct pma_heap *heap;
	uint64_t *slots;
	unsigned first, step; /* its slots: first, first + step, ... */
	int alloc; /* allocate its empty slots, else free every other */
	int rc;
};

static void *fill(void *arg)
{
	struct filler *w = arg;
	unsigned i, n = 0;

	for (i = w->first; i < NSLOTS && w->rc == 0; i += w->step) {
		if (w->alloc && !w->slots[i])
			w->rc = pma_malloc_to(w->heap, sizes[(i * 7) % NSIZES],
					      &w->slots[i]);
		else if (!w->alloc && w->slots[i] && n++ % 2 == 0)
			w->rc = pma_free_from(w->heap, &w->slots[i]);
	}
	return NULL;
}

/* two threads, one after the other (thread i takes the part the heap's
 * turn gives it): allocate, then each frees every other block of the
 * other thread's slots (frees of another part's blocks) */
static void fill_both(struct pma_heap *heap, uint64_t *slots)
{
	struct filler w[2];
	pthread_t t;
	unsigned i, k;

	for (k = 0; k < 2; k++)
		for (i = 0; i < 2; i++) {
			w[i] = (struct filler){ heap, slots, k ? 1 - i : i,
						2,    !k,    0 };
			if (pthread_create(&t, NULL, fill, &w[i]) ||
			    pthread_join(t, NULL) || w[i].rc < 0)
				die(k ? "free (2 parts)" : "malloc (2 parts)");
		}
}

/* a pool of two parts (PATH and PATH.part1) whose heaps both hold blocks,
 * closed cleanly, then a child's ops in both parts' logs and a crash */
static void build2(const char *path, uint64_t size)
{
	struct pma_heap *heap;
	uint64_t *slots;
	unsigned i, parts[2] = { 0, 0 };
	pid_t pid;

	test_cfg.sum_shift = PMA_SUM_SHIFT_MIN;
	test_cfg.nparts = 2;
	if (test_heap_create(path, size, PMA_HEAP_FORCE | PMA_HEAP_INTERLEAVE,
			     &heap) < 0)
		die("create (2 parts)");
	test_cfg.nparts = 1;
	slots = slots_of(heap);
	fill_both(heap, slots);
	for (i = 0; i < NSLOTS; i++)
		if (slots[i])
			parts[pool_off_part(slots[i]) & 1]++;
	if (!parts[0] || !parts[1])
		die("2-part image: a part without blocks");
	pma_heap_close(heap);
	pid = fork();
	if (pid == 0) {
		if (test_heap_open(path, PMA_HEAP_INTERLEAVE, &heap) < 0)
			child_fail(2, "open (2 parts)");
		slots = slots_of(heap);
		fill_both(heap, slots);
		for (i = 0; i < NSLOTS; i += 5)
			if (!slots[i] &&
			    pma_malloc_to(heap, 3000, &slots[i]) < 0)
				child_fail(3, "malloc (2 parts)");
		_exit(0); /* a crash: no checkpoint, no close */
	}
	child_wait(pid, "crash child (2 parts)");
}

static char dir2[40];

static void cleanup2(void)
{
	unsigned p;

	for (p = 0; p < 2; p++)
		if (fx2[p].file[0])
			unlink(fx2[p].file);
	if (dir2[0])
		rmdir(dir2);
}

void setup_file2(uint64_t size)
{
	const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	unsigned p;
	int fd;

	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 1);
	snprintf(dir2, sizeof(dir2), "%s/fuzz-heap2.XXXXXX", tmp);
	if (!mkdtemp(dir2))
		die("mkdtemp");
	snprintf(fx2[0].file, sizeof(fx2[0].file), "%s/pool", dir2);
	snprintf(fx2[1].file, sizeof(fx2[1].file), "%s/pool.part1", dir2);
	atexit(cleanup2);
	build2(fx2[0].file, size);
	for (p = 0; p < 2; p++) {
		fx2[p].size = size;
		snprintf(fx2[p].path, sizeof(fx2[p].path), "%s", fx2[0].file);
		fd = open(fx2[p].file, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			die("open a part");
		fx2[p].map = mmap(NULL, size, PROT_READ | PROT_WRITE,
				  MAP_SHARED, fd, 0);
		close(fd);
		fx2[p].pristine = malloc(size);
		fx2[p].patched = malloc(size);
		if (fx2[p].map == MAP_FAILED || !fx2[p].pristine ||
		    !fx2[p].patched)
			die("image buffers (2 parts)");
		memcpy(fx2[p].pristine, fx2[p].map, size);
	}
	image_survey(fx2, 2);
}

/* ------------------------------------------------------------ 2 regions */

/* a new pool file's name in /dev/shm (or $TMPDIR, /tmp) */
void image_name(char *buf, size_t len)
{
	const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" :
			  getenv("TMPDIR")		? getenv("TMPDIR") :
							  "/tmp";
	int fd;

	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 1);
	snprintf(buf, (size_t)len, "%s/fuzz-heap.XXXXXX", dir);
	fd = mkstemp(buf);
	if (fd < 0)
		die("mkstemp");
	close(fd);
}

void image_hold(const char *name, struct heap_image *image, uint64_t size)
{
	int fd = open(name, O_RDWR | O_CLOEXEC);

	if (fd < 0 || unlink(name) < 0)
		die("reopen pool file");
	image->size = size;
	snprintf(image->path, sizeof(image->path), "/proc/self/fd/%d", fd);
	image->map =
		mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	image->pristine = malloc(size);
	image->patched = malloc(size);
	if (image->map == MAP_FAILED || !image->pristine || !image->patched)
		die("image buffers");
	memcpy(image->pristine, image->map, size);
}

/* an open of the region slots in mask only */
static struct pma_heap *open_mask(const char *path, uint64_t mask)
{
	struct pma_config c = test_cfg_with(0);
	struct pma_heap *heap;

	c.region_mask = mask;
	if (pma_heap_open_cfg(path, &c, &heap) < 0)
		return NULL;
	return heap;
}

/* region 1's holder (a child of region 0's): blocks into slots 24..47
 * of the root object and a close; with crash, it frees two of them and
 * allocates one more and crashes */
static void region1(const char *path, uint64_t root, int crash)
{
	struct pma_heap *b = open_mask(path, 0x2);
	uint64_t *w;
	unsigned i;

	if (!b)
		child_fail(2, "open region 1");
	w = pma_direct(b, root);
	for (i = NSLOTS / 2; i < NSLOTS && !crash; i++)
		if (pma_malloc_to(b, sizes[i % NSIZES], &w[i]) < 0)
			child_fail(3, "malloc (region 1)");
	if (!crash) {
		pma_heap_close(b);
		_exit(0);
	}
	if (pma_free_from(b, &w[NSLOTS - 1]) < 0 ||
	    pma_free_from(b, &w[NSLOTS - 2]) < 0 ||
	    pma_malloc_to(b, 3000, &w[NSLOTS - 1]) < 0)
		child_fail(4, "free, malloc (region 1)");
	_exit(0); /* a crash: no checkpoint, no close */
}

/* region 0's holder: its blocks into slots 0..23, some freed, region 1's
 * holder fills its slots, both close; then again: region 1's holder
 * crashes, region 0's frees of region 1's blocks are entries in region
 * 0's ring for region 1 (nobody applies them), region 0's holder
 * allocates and frees its own and crashes */
static void region0(const char *path)
{
	struct pma_heap *a = open_mask(path, 0x1);
	uint64_t root, *w;
	unsigned i, k;
	pid_t pid;

	if (!a || pma_root(a, NSLOTS * sizeof(uint64_t), &root) < 0)
		child_fail(2, "open region 0");
	w = pma_direct(a, root);
	for (i = 0; i < NSLOTS / 2; i++)
		if (pma_malloc_to(a, sizes[(i * 3) % NSIZES], &w[i]) < 0)
			child_fail(3, "malloc (region 0)");
	for (k = 0; k < 2; k++) {
		pid = fork();
		if (pid == 0)
			region1(path, root, k);
		child_wait(pid, "region 1's child");
		if (k)
			break;
		for (i = 0; i < NSLOTS / 2; i += 3)
			if (pma_free_from(a, &w[i]) < 0)
				child_fail(5, "free (region 0)");
		pma_heap_close(a);
		a = open_mask(path, 0x1);
		if (!a)
			child_fail(6, "reopen region 0");
		w = pma_direct(a, root);
	}
	for (i = NSLOTS / 2; i < NSLOTS - 2; i += 4)
		if (pma_free_from(a, &w[i]) < 0)
			child_fail(7, "ring free (region 0)");
	if (pma_malloc_to(a, 3000, &w[0]) < 0 || pma_free_from(a, &w[1]) < 0)
		child_fail(8, "malloc, free (region 0)");
	_exit(0); /* a crash: no checkpoint, no close */
}

void setup_regions(uint64_t size)
{
	struct pma_heap *heap;
	char name[4096];
	pid_t pid;

	image_name(name, sizeof(name));
	test_cfg.sum_shift = PMA_SUM_SHIFT_MIN;
	test_cfg.regions = 2;
	if (test_heap_create(name, size, PMA_HEAP_FORCE, &heap) < 0)
		die("create (2 regions)");
	test_cfg.regions = 1;
	pma_heap_close(heap);
	pid = fork();
	if (pid == 0)
		region0(name);
	child_wait(pid, "crash children (2 regions)");
	image_hold(name, &fxr[0], size);
	fxr[1] = fxr[0]; /* one file: the same buffers */
	image_survey(fxr, 2);
}

/* ------------------------------------------------------------ patching */

/* the image the command being applied patches */
static struct heap_image *im = &fx;

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
	uint8_t *base = im->pristine;
	struct pma_rec *logs = (struct pma_rec *)(void *)(base + im->region +
							  im->geom.log_off);
	uint32_t cap = im->geom.log_cap;

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
	const struct pma_geom *g = &im->geom;
	uint64_t pmap = im->region + g->pmap_off;
	uint64_t n;

	memset(l, 0, sizeof(*l));
	switch (rgn) {
	case HEAP_RGN_HDR:
		return loc_range(l, im->region, PMA_HDR_SIZE, idx);
	case HEAP_RGN_DESC:
		return loc_range(l, im->region + g->arena_off,
				 g->narenas * 64ULL, idx);
	case HEAP_RGN_LOG:
		l->is_log = 1;
		l->arena = (idx >> 4 & 0xf) % g->narenas;
		l->k = im->head[l->arena] + (idx >> 8) % g->log_cap;
		return loc_range(l, log_slot(l->arena, l->k),
				 sizeof(struct pma_rec), idx & 0xf);
	case HEAP_RGN_PMAP:
		return loc_range(l, pmap, g->npages * 8, idx);
	case HEAP_RGN_SLAB:
		n = im->slab[(idx >> 9) % im->nslab];
		return loc_range(l, im->data + n * PMA_PAGE, PMA_SLAB_HDR_SIZE,
				 idx & 0x1ff);
	case HEAP_RGN_SLABENT:
		n = im->slab[(idx >> 3) % im->nslab];
		return loc_range(l, pmap + n * 8, 8, idx & 7);
	case HEAP_RGN_EXTENT:
		n = im->ext[(idx >> 3) % im->next];
		return loc_range(l, pmap + n * 8, 8, idx & 7);
	case HEAP_RGN_ROOT:
		return loc_range(l, im->root, NSLOTS * 8, idx);
	case HEAP_RGN_DATA:
		return loc_range(l, im->data, g->npages * PMA_PAGE, idx);
	case HEAP_RGN_SUM:
		l->is_sum = 1;
		return loc_range(l, im->region + g->sum_off, g->sum_words * 8,
				 idx);
	default:
		return loc_range(l, im->region, g->region_size, idx);
	}
}

/* the address of w bytes at l (moved back to fit in the location) */
static uint8_t *loc_addr(const struct loc *l, uint64_t w)
{
	uint64_t off = l->off + w > l->len ? l->len - w : l->off;

	return im->patched + l->base + off;
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
		payload =
			((im->data >> PMA_PAGE_SHIFT) + (payload & 0x1fffff)) |
			(payload >> 21) << PMA_REC_EXT1_OFF_BITS;
	else if (type != PMA_REC_EXT_LEN)
		payload += im->data >> 6;
	if (type == PMA_REC_SLAB_NEW || type == PMA_REC_SLAB_FREE)
		value = (uint64_t)(extra & 0x3f) << 8 |
			(uint64_t)(extra >> 6 & 0xf) << 16;
	else if (type != PMA_REC_EXT_LEN && (extra & 0xff) != 255)
		value = im->dest_root + (extra & 0xff) * 8ULL;
	pma_booklog_encode(l->k, im->geom.log_cap, type,
			   payload & PMA_REC_PAYLOAD_MAX, value, r);
}

/* recompute epoch, tag and checksum of the record at l */
static void rec_reseal(const struct loc *l)
{
	uint8_t *p = im->patched + l->base;
	uint64_t w0 = get64(p), w1 = get64(p + 8);
	struct pma_rec r;

	pma_booklog_encode(l->k, im->geom.log_cap,
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
		p = im->patched + l->base + w * 8;
		put64(p, pma_sum_encode(get64(p), w));
	}
}

static void hdr_reseal(void)
{
	struct pma_heap_hdr *hdr =
		(struct pma_heap_hdr *)(void *)(im->patched + im->region);

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
	memmove(im->patched + dst->base + dst->off,
		im->patched + src.base + src.off, n);
}

void cmd_apply_in(struct heap_image *image, const struct heap_cmd *c)
{
	struct pma_rec r;
	struct loc l;
	uint8_t *p;

	im = image;
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
		put64(im->patched + l.base, r.word0);
		put64(im->patched + l.base + 8, r.word1);
		break;
	}
	if (c->reseal && l.is_log && c->op != HEAP_OP_REC)
		rec_reseal(&l);
	if (c->reseal && l.is_sum)
		sum_reseal(&l);
	if (c->reseal)
		hdr_reseal();
}

void cmd_apply(const struct heap_cmd *c)
{
	cmd_apply_in(&fx, c);
}
