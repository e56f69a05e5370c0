/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-fsck-crash: every crash image of a short PMAlloc workload checks
 * consistent with fsck (issue 20): before recovery (no error: a crash
 * leaves only states recovery accepts; a torn log tail is information)
 * and after a writable open has recovered it (no error and no warning).
 * The workload (one thread, both arenas, small blocks, extents in both
 * log forms, every free remote, checkpoints that release empty slabs) runs
 * under the crash-sweep driver (tests/lib/crash-sweep.c), which images
 * every fence: durable lines only, and with random dirty words too.
 *
 * The repair test: a pool whose heap has un-checkpointed records, with
 * damage of each kind --repair repairs (a pool header copy and a summary
 * word, which the library's open repairs; a bank one bit off, a bank
 * with two wrong bits rebuilt (two words stored), a damaged
 * log slot ahead of the tail and an entry in an unmarked group, which
 * fsck repairs itself; with --advanced a damaged record inside a window,
 * whose log is cut there; arena 0's head or its generation word
 * damaged, whose log is dropped; with --advanced, a free ring's damaged
 * entries voided or its producer word set back; and no damage but a
 * consumer word whose store was lost, which the repair's open moves and
 * persists), is repaired (pma_fsck_repair_flags, in a
 * re-exec of this test with PM_CRASH_AT=N) and crashed at every fence N
 * of the repair in turn: each crash image may only show findings the
 * repair repairs (as before, or repaired), and repairing it again leaves
 * no finding at all.
 *
 * The garbage test (in process, so the sanitizer build covers it): fsck
 * of random files and of heaps with random bytes never crashes.
 */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <string.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pmalloc.h"
#include "pmalloc/fsck.h"
#include "pmalloc/internal.h"
#include "../lib/test-cfg.h"
#include "pmem/crash.h"
#include "pool/fsck.h"
#include "crash-sweep.h"

#define HEAP_SIZE (4ULL << 20)
#define NSLOTS 32
#define NOPS 160

static size_t slot_size(unsigned s)
{
	uint32_t h = s * 2654435761u;

	if (s % 5 == 2)
		return 16384 + (h >> 16) % (100 * 1024);
	return 1 + (h >> 8) % 3000;
}

static void workload(const char *path, uint64_t rnd)
{
	struct pma_heap *heap;
	uint64_t root, *slots;
	unsigned i, s;

	test_cfg.sum_shift = PMA_SUM_SHIFT_MIN;
	test_cfg.slab_keep = 0;
	if (test_heap_create(path, HEAP_SIZE, PMA_HEAP_FORCE, &heap) ||
	    pma_root(heap, (size_t)NSLOTS * 8, &root))
		_exit(7);
	slots = pma_direct(heap, root);
	heap->ext1_pages = 8; /* both extent record forms */
	rnd = rnd * 0x9e3779b97f4a7c15ULL + 1; /* never 0: xorshift */
	crash_sweep_arm(heap->map);
	for (i = 0; i < NOPS; i++) {
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		s = (unsigned)(rnd % NSLOTS);
		/* a slot allocates in arena s % 2 and frees through the
		 * other: every free is remote (RFREE, EXT_FREE) */
		pma_arena_bind(heap, (s + (slots[s] != 0)) % 2);
		if (slots[s] ? pma_free_from(heap, &slots[s]) :
			       pma_malloc_to(heap, slot_size(s), &slots[s]))
			_exit(4);
		if (i % 50 == 49 && pma_heap_checkpoint(heap))
			_exit(5);
	}
	crash_sweep_finish(0);
}

struct tally {
	unsigned long count[3];
	char first[256]; /* the first error or warning */
};

static int on_finding(const struct pool_fsck_finding *f, void *arg)
{
	struct tally *t = arg;

	t->count[f->severity]++;
	if (f->severity != POOL_FSCK_INFO && !t->first[0])
		snprintf(t->first, sizeof(t->first), "%s: %s", f->code,
			 f->message);
	return 0;
}

/* fsck the file; -1 with why if it found an error (or, strict, a
 * warning) or could not run */
static int fsck_file(const char *file, int strict, const char *when, char *why,
		     size_t why_len)
{
	struct tally t = { { 0 }, "" };
	struct pool_fsck_sink sink = { .fn = on_finding, .arg = &t };
	int rc;

	rc = pool_fsck(file, &sink);
	if (rc == 0)
		rc = pma_fsck(file, &sink);
	if (rc < 0) {
		snprintf(why, why_len, "fsck %s: cannot run: %s", when,
			 pma_errormsg());
		return -1;
	}
	if (t.count[POOL_FSCK_ERROR] ||
	    (strict && t.count[POOL_FSCK_WARNING])) {
		snprintf(why, why_len, "fsck %s: %s", when, t.first);
		return -1;
	}
	return 0;
}

static int check(const char *file, unsigned *ret_stat, char *why,
		 size_t why_len)
{
	struct pma_heap *heap;

	*ret_stat = 0;
	if (fsck_file(file, 0, "before recovery", why, why_len) < 0)
		return -1;
	if (test_heap_open(file, 0, &heap) < 0) {
		snprintf(why, why_len, "open: %s", pma_errormsg());
		return -1;
	}
	pma_heap_close(heap);
	return fsck_file(file, 1, "after recovery", why, why_len);
}

/* the re-crashed recovery of the sweeps, and the repair under test
 * (FSCK_CRASH_ADVANCED=1: with PMA_FSCK_ADVANCED) */
static int recover(const char *file)
{
	unsigned flags = getenv("FSCK_CRASH_ADVANCED") ? PMA_FSCK_ADVANCED : 0;

	return pma_fsck_repair_flags(file, flags, NULL) ? 1 : 0;
}

static const struct crash_sweep_ops fsck_ops = {
	.name = "fsck",
	.workload = workload,
	.check = check,
	.recover = recover,
	.stat_name = "-",
	.extra_name = "-",
};

static void test_sweep(void **state)
{
	struct crash_sweep sw = *(const struct crash_sweep *)*state;

	if (crash_sweep_run(&fsck_ops, &sw) < 0)
		fail_msg("%s failed", sw.name);
	/* the workload ran: at least a fence per op, each one imaged */
	assert_true(sw.fences >= (uint64_t)NOPS * sw.runs);
	assert_int_equal(sw.images, sw.fences);
}

/* ------------------------------------------------------------ repair */

static char repair_dir[64];
static const char *self_path;

/* a new heap (open flags) whose root's first NSLOTS / 2 slots hold
 * blocks of both arenas */
static void repair_prefill(const char *path, unsigned flags)
{
	struct pma_heap *heap;
	uint64_t root, *slots;
	unsigned i;

	assert_int_equal(test_heap_create(path, HEAP_SIZE,
					  PMA_HEAP_FORCE | flags, &heap),
			 0);
	assert_int_equal(pma_root(heap, (size_t)NSLOTS * 8, &root), 0);
	slots = pma_direct(heap, root);
	for (i = 0; i < NSLOTS / 2; i++) {
		pma_arena_bind(heap, i % 2);
		assert_int_equal(pma_malloc_to(heap, slot_size(i), &slots[i]),
				 0);
	}
	pma_heap_close(heap);
}

/* a heap with live blocks in both arenas and a crashed child's records */
static void repair_base(const char *path)
{
	struct pma_heap *heap;
	uint64_t root, *slots;
	unsigned i;
	int status;
	pid_t pid;

	repair_prefill(path, 0);
	pid = fork();
	if (pid == 0) {
		if (test_heap_open(path, 0, &heap) ||
		    pma_root(heap, (size_t)NSLOTS * 8, &root))
			_exit(2);
		slots = pma_direct(heap, root);
		for (i = 0; i < NSLOTS; i++) {
			pma_arena_bind(heap, (i + 1) % 2);
			if (slots[i] ? pma_free_from(heap, &slots[i]) :
				       pma_malloc_to(heap, slot_size(i),
						     &slots[i]))
				_exit(3);
		}
		_exit(0);
	}
	assert_true(pid > 0 && waitpid(pid, &status, 0) == pid && status == 0);
}

/* the same with per-arena checkpoints (layout version 8): in the
 * child, arena 0 checkpoints alone halfway (its remote frees not yet
 * applied by their owner cut its window: its banks sealed as of the
 * cut, its lgen moved), then both arenas log more */
static void repair_base_local(const char *path)
{
	struct pma_heap *heap;
	uint64_t root, *slots;
	unsigned i;
	int status;
	pid_t pid;

	repair_prefill(path, PMA_HEAP_LOCAL_CHECKPOINTS);
	pid = fork();
	if (pid == 0) {
		if (test_heap_open(path, PMA_HEAP_LOCAL_CHECKPOINTS, &heap) ||
		    pma_root(heap, (size_t)NSLOTS * 8, &root))
			_exit(2);
		slots = pma_direct(heap, root);
		/* arena 0 allocates, both free the other's blocks */
		pma_arena_bind(heap, 0);
		for (i = NSLOTS / 2; i < NSLOTS; i++)
			if (pma_malloc_to(heap, slot_size(i), &slots[i]))
				_exit(3);
		for (i = 0; i < NSLOTS / 2; i++) {
			pma_arena_bind(heap, (i + 1) % 2);
			if (pma_free_from(heap, &slots[i]))
				_exit(3);
		}
		/* arena 0 alone: its allocations retired, its window cut
		 * at its first remote free (arena 1 has not applied it) */
		pma_arena_bind(heap, 0);
		if (pma_heap_checkpoint_arena(heap))
			_exit(4);
		/* then more in both logs */
		for (i = NSLOTS / 2; i < NSLOTS; i++) {
			pma_arena_bind(heap, i % 2);
			if (i % 3 ? pma_free_from(heap, &slots[i]) :
				    pma_malloc_to(heap, 64, &slots[i - 16]))
				_exit(3);
		}
		_exit(0);
	}
	assert_true(pid > 0 && waitpid(pid, &status, 0) == pid && status == 0);
	/* arena 0 checkpointed alone, and logged after it */
	assert_int_equal(test_heap_open(path, PMA_HEAP_RDONLY, &heap), 0);
	assert_true(heap->arenas[0].lgen > 0);
	assert_true(heap->arenas[0].tail > heap->arenas[0].head);
	pma_heap_close(heap);
}

/* flip a byte of path at off */
static void flip_at(const char *path, uint64_t off)
{
	int fd = open(path, O_RDWR);
	uint8_t b = 0;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, (off_t)off), 1);
	b ^= 0x01;
	assert_int_equal(pwrite(fd, &b, 1, (off_t)off), 1);
	assert_int_equal(close(fd), 0);
}

/* where the damages go, from a read-only open of the base pool */
static struct {
	uint64_t sum; /* the first summary word */
	uint64_t bank; /* bank 0 of the first slab */
	uint64_t ahead; /* the slot of record tail + 3 of arena 0 */
	struct pma_rec ahead_rec; /* a damaged record of its index */
	uint64_t unmarked, unmarked_entry; /* an entry in an unmarked group */
	uint64_t window; /* a record inside a window (not its first) */
	uint64_t head, lgen; /* arena 0's current head slot, its lgen */
	uint64_t orphan[2]; /* a head past its log's end, and its check */
} dmg;

static void damage_survey(const char *path)
{
	struct pma_heap *heap;
	struct pma_arena *a;
	uint64_t page, k;
	unsigned i;

	memset(&dmg, 0, sizeof(dmg));
	assert_int_equal(test_heap_open(path, PMA_HEAP_RDONLY, &heap), 0);
	dmg.sum = heap->region_off + heap->geom.sum_off;
	for (page = 0; page < heap->geom.npages && !dmg.bank; page++)
		if (pma_pmap_kind(heap->pmap_pm[page]) == PMA_PMAP_SLAB)
			dmg.bank =
				pma_page_off(heap, page) + PMA_SLAB_BITMAP_OFF;
	for (page = heap->geom.npages; page-- > 0 && !dmg.unmarked;)
		if (!pma_sum_has(heap, page)) {
			dmg.unmarked = heap->region_off + heap->geom.pmap_off +
				       page * 8;
			dmg.unmarked_entry = pma_check_pmap(
				pma_pmap_make(PMA_PMAP_EXTENT, 1), page);
		}
	a = &heap->arenas[0];
	k = a->tail + 3;
	pma_booklog_encode(k, heap->geom.log_cap, PMA_REC_ALLOC,
			   (heap->data_base + 256) >> heap->osh, 0,
			   &dmg.ahead_rec);
	dmg.ahead_rec.word0 ^= 1ULL << 40;
	dmg.ahead = (uint64_t)((char *)pma_booklog_slot(a->log,
							heap->geom.log_cap, k) -
			       heap->part_base);
	for (i = 0; i < heap->geom.narenas && !dmg.window; i++) {
		a = &heap->arenas[i];
		if (a->tail - a->head >= 4)
			dmg.window =
				(uint64_t)((char *)pma_booklog_slot(
						   a->log, heap->geom.log_cap,
						   a->head + 1) -
					   heap->part_base);
	}
	dmg.lgen = heap->region_off + heap->geom.arena_off +
		   offsetof(struct pma_arena_desc, lgen);
	dmg.head = heap->region_off + heap->geom.arena_off +
		   8 * (heap->arenas[0].gen & 1);
	dmg.orphan[0] = heap->arenas[0].tail + 5;
	dmg.orphan[1] = pma_check_head(dmg.orphan[0], 0, heap->arenas[0].gen);
	pma_heap_close(heap);
	assert_true(dmg.bank && dmg.unmarked && dmg.window);
}

static void put_at(const char *path, uint64_t off, const void *buf, size_t len)
{
	int fd = open(path, O_RDWR);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf, len, (off_t)off), (ssize_t)len);
	assert_int_equal(close(fd), 0);
}

/* copy B's body and the first summary word (a writable open repairs
 * both) */
static void damage_open(const char *path)
{
	flip_at(path, POOL_HDR_B_OFF + 0x1000);
	flip_at(path, dmg.sum);
}

/* fsck's own repairs: a bank one bit off, a damaged slot ahead of a
 * log's end, an entry in an unmarked group */
static void damage_fsck(const char *path)
{
	flip_at(path, dmg.bank + 23);
	put_at(path, dmg.ahead, &dmg.ahead_rec, sizeof(dmg.ahead_rec));
	put_at(path, dmg.unmarked, &dmg.unmarked_entry,
	       sizeof(dmg.unmarked_entry));
}

/* a bank rebuilt from several bits: a bit past its last block (bank 0
 * word 2) and block 0's bit (word 0: the window's records name it, or
 * the check finds it), two words stored */
static void damage_bank(const char *path)
{
	flip_at(path, dmg.bank + 23);
	flip_at(path, dmg.bank);
}

/* --advanced: a record inside a window damaged (the rest dropped) */
static void damage_advanced(const char *path)
{
	flip_at(path, dmg.window + 5);
}

/* --advanced: arena 0's head (its log dropped), or its generation word
 * (the same, and the word resealed) */
static void damage_head(const char *path)
{
	flip_at(path, dmg.head + 1);
}

/* a head with a valid check that follows no record of its log */
static void damage_orphan(const char *path)
{
	put_at(path, dmg.head, &dmg.orphan[0], 8);
	put_at(path, dmg.head + 16, &dmg.orphan[1], 8);
}

static void damage_lgen(const char *path)
{
	flip_at(path, dmg.lgen + 7);
}

/* arena 0's slabs' banks as a checkpoint that crashed before the heads
 * moved left them (the window applied and sealed: copied from a
 * recovered copy of the pool), then its head damaged: the drop leaves
 * the banks as they are, which must check as they are */
static void sealed_banks(const char *path, int torn)
{
	char copy[160];
	struct pma_heap *heap, *rec;
	uint8_t a[PMA_LINE], b[PMA_LINE];
	uint64_t page, e, off;
	unsigned l, changed = 0;
	/* torn: the words of the later image, the check of the earlier */
	size_t len = torn ? (size_t)PMA_SLAB_BANK_CHECK * 8 : sizeof(b);
	int fd, cfd;

	snprintf(copy, sizeof(copy), "%s.sealed", path);
	assert_int_equal(crash_sweep_copy_file(path, copy), 0);
	assert_int_equal(test_heap_open(copy, 0, &rec), 0);
	pma_heap_close(rec);
	assert_int_equal(test_heap_open(path, PMA_HEAP_RDONLY, &heap), 0);
	assert_int_equal(test_heap_open(copy, PMA_HEAP_RDONLY, &rec), 0);
	fd = open(path, O_RDWR);
	cfd = open(copy, O_RDONLY);
	assert_true(fd >= 0 && cfd >= 0);
	for (page = 0; page < heap->geom.npages; page += PMA_CHUNK_PAGES) {
		e = heap->pmap_pm[page];
		if (pma_pmap_kind(e) != PMA_PMAP_SLAB || pma_pmap_owner(e) ||
		    rec->pmap_pm[page] != e)
			continue;
		for (l = 0; l < PMA_NBANKS; l++) {
			off = pma_page_off(heap, page) + PMA_SLAB_BITMAP_OFF +
			      l * PMA_LINE;
			assert_int_equal(pread(fd, a, sizeof(a), (off_t)off),
					 sizeof(a));
			assert_int_equal(pread(cfd, b, sizeof(b), (off_t)off),
					 sizeof(b));
			if (!memcmp(a, b, sizeof(a)))
				continue;
			changed++;
			assert_int_equal(pwrite(fd, b, len, (off_t)off), len);
		}
	}
	assert_int_equal(close(fd), 0);
	assert_int_equal(close(cfd), 0);
	pma_heap_close(rec);
	pma_heap_close(heap);
	unlink(copy);
	assert_true(changed > 0);
	damage_head(path);
}

static void damage_sealed(const char *path)
{
	sealed_banks(path, 0);
}

/* ------------------------------------------------------------ rings */

/* a pool of one part with two heap regions (layout 12 free rings):
 * region 1's holder allocated RING_N blocks and died; region 0's holder
 * freed them all into its ring for region 1, which nothing drained */
#define RING_N 6

static struct {
	uint64_t ent0; /* entry 0 of region 0's ring for region 1 */
	uint64_t prod; /* that ring's producer word */
} ring;

static int ring_open(const char *path, uint64_t mask,
		     struct pma_heap **ret_heap)
{
	struct pma_config c = test_cfg_with(0);

	assert_int_equal(pma_config_set_region_mask(&c, mask), 0);
	return pma_heap_open_cfg(path, &c, ret_heap);
}

/* a new pool of two regions, its root word's block */
static uint64_t ring_create(const char *path)
{
	struct pma_config c = test_cfg_with(PMA_HEAP_FORCE);
	struct pma_heap *heap;
	uint64_t root;

	assert_int_equal(pma_config_set_regions(&c, 2), 0);
	assert_int_equal(pma_heap_create_cfg(path, HEAP_SIZE, &c, &heap), 0);
	assert_int_equal(pma_root(heap, (size_t)NSLOTS * 8, &root), 0);
	pma_heap_close(heap);
	return root;
}

static void ring_base(const char *path)
{
	struct pma_heap *heap;
	uint64_t root = ring_create(path), *w;
	unsigned i;
	int status;
	pid_t pid;

	pid = fork();
	if (pid == 0) {
		if (ring_open(path, 0x2, &heap) < 0)
			_exit(2);
		w = pma_direct(heap, root);
		for (i = 0; i < RING_N; i++)
			if (pma_malloc_to(heap, 300, &w[i]) < 0)
				_exit(3);
		raise(SIGKILL); /* no close: nothing drains region 1 */
	}
	assert_true(pid > 0 && waitpid(pid, &status, 0) == pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(ring_open(path, 0x1, &heap), 0);
	w = pma_direct(heap, root);
	for (i = 0; i < RING_N; i++) {
		assert_true(w[i] != 0);
		assert_int_equal(pma_free_from(heap, &w[i]), 0);
	}
	ring.ent0 = heap->region_off + heap->hdr->xring_off +
		    (uint64_t)PMA_XRING_CAP * sizeof(struct pma_xent);
	ring.prod = heap->region_off + offsetof(struct pma_heap_hdr, xprod) +
		    sizeof(uint64_t);
	pma_heap_close(heap); /* drains region 0 only */
}

/*
 * A consumer word whose store was lost (test-pmalloc-regions,
 * test_mask_ring_lost_cons): region 1's holder drained 8 of region 0's
 * frees, then 60 more; region 0's holder took the second word and wrote
 * 8 frees of the next lap into slots 4..11; then both died, and the
 * first word is stored back over the second. The repair's open moves
 * the word past those slots (persisted: pma_xring_start) and applies
 * them; crashed at every fence of it.
 */
#define LOST_N 76

static void ring_lost_base(const char *path)
{
	struct pma_heap *a, *b;
	uint64_t root = ring_create(path), *w, *wb, *tab, *shared;
	unsigned i;
	int status, fd;
	pid_t pid;

	shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(shared != MAP_FAILED);
	pid = fork();
	if (pid == 0) {
		if (ring_open(path, 0x1, &a) < 0 ||
		    ring_open(path, 0x2, &b) < 0)
			_exit(2);
		w = pma_direct(a, root);
		wb = pma_direct(b, root);
		if (pma_malloc_to(b, LOST_N * 8, &wb[0]) < 0)
			_exit(3);
		tab = pma_direct(b, wb[0]);
		for (i = 0; i < LOST_N; i++)
			if (pma_malloc_to(b, 200, &tab[i]) < 0)
				_exit(4);
		tab = pma_direct(a, w[0]);
		for (i = 0; i < LOST_N; i++) {
			if (pma_free_from(a, &tab[i]) < 0)
				_exit(5);
			if (i == 7 && pma_heap_sync(b) != 8)
				_exit(6);
			if (i == 7) { /* the consumer word at 8 */
				shared[0] = __atomic_load_n(&b->hdr->xcons[0],
							    __ATOMIC_ACQUIRE);
				shared[1] =
					b->region_off +
					offsetof(struct pma_heap_hdr, xcons);
			}
			if (i == 67 && pma_heap_sync(b) != 60)
				_exit(7);
		}
		/* entries 68..75 wait in slots 4..11: read from 8, the
		 * ring starts after them */
		shared[2] = pma_xring_start(
			pma_xring_of(a->hdr, a->geom.region_size, b->slot), 8);
		raise(SIGKILL);
	}
	assert_true(pid > 0 && waitpid(pid, &status, 0) == pid);
	assert_true(WIFSIGNALED(status));
	assert_true(shared[0] != 0 && shared[1] != 0);
	assert_int_equal(shared[2], 12);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &shared[0], 8, (off_t)shared[1]), 8);
	assert_int_equal(close(fd), 0);
	assert_int_equal(munmap(shared, 4096), 0);
}

static void damage_none(const char *path)
{
	(void)path;
}

/* entries 1 and 3 damaged: both voided, the producer word stays */
static void damage_ring_entries(const char *path)
{
	flip_at(path, ring.ent0 + 1 * sizeof(struct pma_xent));
	flip_at(path, ring.ent0 + 3 * sizeof(struct pma_xent) + 8);
}

/* the producer word ahead of the entries written: set back */
static void damage_ring_prod(const char *path)
{
	uint64_t prod = RING_N + 5;

	put_at(path, ring.prod, &prod, sizeof(prod));
}

struct repair_case {
	const char *name;
	void (*damage)(const char *path);
	int advanced;
	unsigned min_errors;
	const char *code; /* an error it must give (NULL: any) */
	void (*base)(const char *path); /* NULL: repair_base */
	int own_damage; /* the base says where (no damage_survey) */
};

static const struct repair_case repair_cases[] = {
	{ "open", damage_open, 0, 2 },
	{ "fsck", damage_fsck, 0, 2 },
	{ "bank", damage_bank, 0, 1 },
	{ "advanced", damage_advanced, 1, 1 },
	{ "drop-head", damage_head, 1, 1, "arena-head-check" },
	{ "drop-gen", damage_lgen, 1, 1, "arena-gen-check" },
	{ "drop-orphan", damage_orphan, 1, 1, "arena-head-orphan" },
	{ "drop-sealed", damage_sealed, 1, 1, "arena-head-check" },
	{ "drop-local", damage_head, 1, 1, "arena-head-check",
	  repair_base_local },
	{ "drop-local-gen", damage_lgen, 1, 1, "arena-gen-check",
	  repair_base_local },
	{ "drop-local-sealed", damage_sealed, 1, 1, "arena-head-check",
	  repair_base_local },
	{ "ring-void", damage_ring_entries, 1, 1, "ring-entry-invalid",
	  ring_base, 1 },
	{ "ring-prod", damage_ring_prod, 1, 1, "ring-entry-invalid", ring_base,
	  1 },
	{ "ring-lost-cons", damage_none, 0, 0, NULL, ring_lost_base, 1 },
};

/* the repair in a re-exec crashing at fence n (torn with seed != 0):
 * 1 if it crashed, 0 if it ran to the end */
static int repair_crashed(const char *file, unsigned n, unsigned seed)
{
	char at[16], sd[16];
	int status = 0;
	pid_t pid = fork();

	if (pid == 0) {
		snprintf(at, sizeof(at), "%u", n);
		snprintf(sd, sizeof(sd), "%u", seed);
		setenv("PM_CRASH_AT", at, 1);
		setenv("PM_CRASH_SEED", sd, 1);
		execl(self_path, self_path, "recover", file, (char *)NULL);
		_exit(127);
	}
	assert_true(pid > 0 && waitpid(pid, &status, 0) == pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == PM_CRASH_EXIT_CODE)
		return 1;
	assert_int_equal(WEXITSTATUS(status), 0);
	return 0;
}

/* arg: the case (its advanced flag) */
static int only_repairable(const struct pool_fsck_finding *f, void *arg)
{
	const struct repair_case *c = arg;
	int bad = f->severity == POOL_FSCK_ERROR &&
		  pma_fsck_blocks_repair(f, c->advanced);

	if (bad)
		print_message("# %s: unrepairable after a crashed repair: %s: "
			      "%s\n",
			      c->name, f->code, f->message);
	return bad ? -EIO : 0;
}

/*
 * One repair case: the damage is there and repairable; the repair is
 * crashed at each of its fences in turn (durable lines only, and torn):
 * every crash image checks as before or repaired (only findings the
 * repair repairs, none new), and repairing it again leaves none at all.
 */
static void repair_case_run(const struct repair_case *c)
{
	char base[128], work[128], why[512];
	struct pool_fsck_sink sink = { .fn = only_repairable,
				       .arg = (void *)c };
	unsigned n, crashes = 0, seed,
		    flags = c->advanced ? PMA_FSCK_ADVANCED : 0;

	snprintf(base, sizeof(base), "%s/base", repair_dir);
	snprintf(work, sizeof(work), "%s/work", repair_dir);
	(c->base ? c->base : repair_base)(base);
	if (!c->own_damage)
		damage_survey(base);
	c->damage(base);
	assert_int_equal(pool_fsck(base, &sink), 0);
	assert_int_equal(pma_fsck(base, &sink), 0);
	assert_true(sink.counts[POOL_FSCK_ERROR] >= c->min_errors);
	if (c->code) {
		struct tally t = { { 0 }, "" };
		struct pool_fsck_sink s2 = { .fn = on_finding, .arg = &t };

		assert_int_equal(pma_fsck(base, &s2), 0);
		if (!strstr(t.first, c->code))
			fail_msg("%s: no %s: %s", c->name, c->code, t.first);
	}
	if (c->advanced)
		setenv("FSCK_CRASH_ADVANCED", "1", 1);
	for (n = 1;; n++) {
		for (seed = 0; seed < 2; seed++) {
			assert_int_equal(crash_sweep_copy_file(base, work), 0);
			if (!repair_crashed(work, n, seed ? n : 0))
				goto out;
			crashes++;
			memset(&sink, 0, sizeof(sink));
			sink.fn = only_repairable;
			sink.arg = (void *)c;
			if (pool_fsck(work, &sink) || pma_fsck(work, &sink))
				fail_msg("%s: fence %u seed %u: new damage",
					 c->name, n, seed);
			assert_int_equal(
				pma_fsck_repair_flags(work, flags, NULL), 0);
			if (fsck_file(work, 1, "after a second repair", why,
				      sizeof(why)))
				fail_msg("%s: fence %u seed %u: %s", c->name, n,
					 seed, why);
		}
	}
out:
	unsetenv("FSCK_CRASH_ADVANCED");
	print_message("# %s: repair crashed at each of its %u fences (%u "
		      "images), each repaired again\n",
		      c->name, n - 1, crashes);
	/* the uncrashed repair left nothing */
	if (fsck_file(work, 1, "after the repair", why, sizeof(why)))
		fail_msg("%s: %s", c->name, why);
	assert_true(n > 3);
	unlink(base);
	unlink(work);
}

static void test_repair_crash(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(repair_cases) / sizeof(repair_cases[0]); i++)
		repair_case_run(&repair_cases[i]);
}

/* a bank torn by a checkpoint inside the dropped window (its words of
 * the later image, its check of the earlier one): after a drop nothing
 * replays it, so the check reports it as what keeps the drop from being
 * made (or rebuilds it); the arena's finding stays --advanced */
struct torn_seen {
	unsigned head, banks, banks_blocking;
};

static int torn_finding(const struct pool_fsck_finding *f, void *arg)
{
	struct torn_seen *t = arg;

	if (!strcmp(f->code, "arena-head-check") &&
	    (f->flags & POOL_FSCK_ADVANCED))
		t->head++;
	if (!strcmp(f->code, "slab-bitmap-bank-check")) {
		if (!strstr(f->message, "--advanced drops"))
			fail_msg("bank finding without why: %s", f->message);
		t->banks++;
		t->banks_blocking += pma_fsck_blocks_repair(f, 1);
	}
	return 0;
}

static void drop_torn_bank(void (*make)(const char *path), const char *name)
{
	char base[128];
	struct torn_seen t = { 0 };
	struct pool_fsck_sink sink = { .fn = torn_finding, .arg = &t };

	snprintf(base, sizeof(base), "%s/torn", repair_dir);
	make(base);
	damage_survey(base);
	sealed_banks(base, 1);
	assert_int_equal(pma_fsck(base, &sink), 0);
	print_message("# %s: torn banks under a dropped arena: %u reported, "
		      "%u of them not repairable\n",
		      name, t.banks, t.banks_blocking);
	assert_int_equal(t.head, 1);
	assert_true(t.banks > 0);
	/* rebuilt where the check and the other logs' records allow: then
	 * the drop and the rebuilds leave a clean heap */
	if (!t.banks_blocking) {
		char why[512];

		assert_int_equal(pma_fsck_repair_flags(base, PMA_FSCK_ADVANCED,
						       NULL),
				 0);
		if (fsck_file(base, 1, "after the drop", why, sizeof(why)))
			fail_msg("%s: torn banks: %s", name, why);
	}
	unlink(base);
}

static void test_drop_torn_bank(void **state)
{
	(void)state;
	drop_torn_bank(repair_base, "global");
	drop_torn_bank(repair_base_local, "local");
}

/* ------------------------------------------------------------ garbage */

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* fsck in process (for the sanitizer runs): 0 or the rc; errors found */
static int fsck_count(const char *file, unsigned long *ret_errors)
{
	struct pool_fsck_sink sink = { 0 };
	int rc = pool_fsck(file, &sink);

	if (rc == 0)
		rc = pma_fsck(file, &sink);
	*ret_errors = sink.counts[POOL_FSCK_ERROR];
	return rc;
}

/* random garbage of several sizes: checked, never a crash, errors found;
 * random bytes over a heap's metadata: checked, never a crash */
static void test_fsck_garbage(void **state)
{
	static const size_t sizes[] = { 0, 100, 5000, 70000, 300000 };
	char base[128], work[128];
	unsigned long errors, damaged = 0;
	uint64_t x = 0x6a09e667f3bcc909ULL, meta, span;
	struct pma_heap *heap;
	unsigned i, j;
	uint8_t buf[4096];
	size_t k, n;
	FILE *f;

	(void)state;
	snprintf(work, sizeof(work), "%s/garbage", repair_dir);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		f = fopen(work, "w");
		assert_non_null(f);
		for (k = 0; k < sizes[i]; k += n) {
			n = sizes[i] - k < sizeof(buf) ? sizes[i] - k :
							 sizeof(buf);
			for (j = 0; j < n; j++)
				buf[j] = (uint8_t)xorshift(&x);
			assert_int_equal(fwrite(buf, 1, n, f), n);
		}
		assert_int_equal(fclose(f), 0);
		assert_int_equal(fsck_count(work, &errors), 0);
		assert_true(errors > 0);
	}
	snprintf(base, sizeof(base), "%s/gbase", repair_dir);
	repair_base(base);
	assert_int_equal(test_heap_open(base, PMA_HEAP_RDONLY, &heap), 0);
	meta = heap->region_off;
	span = heap->data_base + 2 * PMA_CHUNK - meta;
	pma_heap_close(heap);
	for (i = 0; i < 200; i++) {
		assert_int_equal(crash_sweep_copy_file(base, work), 0);
		for (j = 0; j < 1 + xorshift(&x) % 3; j++)
			flip_at(work, meta + xorshift(&x) % span);
		assert_int_equal(fsck_count(work, &errors), 0);
		damaged += errors != 0;
	}
	print_message("# 200 damaged heaps checked, %lu with errors\n",
		      damaged);
	assert_true(damaged > 0);
	unlink(base);
	unlink(work);
}

static struct crash_sweep sweeps[] = {
	{ .name = "durable", .runs = 3 },
	{ .name = "torn", .seed_base = 0xf5c40000, .runs = 3 },
};

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		{ "test_fsck_sweep_durable", test_sweep, NULL, NULL,
		  &sweeps[0] },
		{ "test_fsck_sweep_torn", test_sweep, NULL, NULL, &sweeps[1] },
		cmocka_unit_test(test_repair_crash),
		cmocka_unit_test(test_drop_torn_bank),
		cmocka_unit_test(test_fsck_garbage),
	};
	int rc;

	rc = crash_sweep_main(&fsck_ops, argc, argv);
	if (rc >= 0)
		return rc;
	self_path = argv[0];
	snprintf(repair_dir, sizeof(repair_dir), "/tmp/fsck-repair-%d",
		 (int)getpid());
	if (mkdir(repair_dir, 0700) < 0) {
		perror("mkdir");
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(repair_dir);
	crash_sweep_cleanup();
	return rc;
}
