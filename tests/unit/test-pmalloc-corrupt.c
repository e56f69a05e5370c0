/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Corrupt heaps at open (regressions of the bugs tests/fuzz/fuzz-heap
 * found). The fixture makes a small heap with slabs and extents of two
 * arenas, closes it, then a child allocates and frees more and exits
 * without closing, so the logs hold records to replay. Each test patches
 * one thing in the file, as a corruption would, and checks that both the
 * read-only and the writable open refuse it with -EIO and a message, and
 * that the refused pool file is unchanged.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "pmalloc.h"
#include "pmalloc/internal.h"
#include "../lib/test-cfg.h"
#include "../lib/test-dir.h"
#include "util/crc.h"

#define POOL_SIZE (POOL_DATA_OFF + 4 * 1024 * 1024)
#define NSLOTS 32

struct fx {
	char dir[64];
	char path[96];
	uint8_t *map; /* the pool file */
	uint8_t *before; /* its bytes before an open */
	uint64_t region, data_base; /* byte offsets in the file */
	struct pma_geom geom;
	uint64_t tail[2]; /* next record index of each arena's log */
	uint64_t slots; /* pool offset of the root object's slots */
	uint64_t alloc_off; /* byte offset of a pending ALLOC's block */
};

static uint64_t *slots_of(struct pma_heap *heap)
{
	uint64_t root;

	if (pma_root(heap, NSLOTS * sizeof(uint64_t), &root) < 0)
		return NULL;
	return pma_direct(heap, root);
}

/* slabs of 128 B blocks and extents in both arenas, checkpointed */
static void make_clean(const char *path)
{
	struct pma_heap *heap;
	uint64_t *slots;
	unsigned i;

	assert_int_equal(test_heap_create(path, POOL_SIZE, 0, &heap), 0);
	slots = slots_of(heap);
	assert_non_null(slots);
	for (i = 0; i < NSLOTS / 2; i++) {
		pma_arena_bind(heap, i % 2);
		assert_int_equal(
			pma_malloc_to(heap, i % 4 ? 100 : 20000, &slots[i]), 0);
	}
	pma_heap_close(heap);
}

/* the child: records in both logs, then a crash */
static void make_crash(const char *path)
{
	struct pma_heap *heap;
	uint64_t *slots;
	unsigned i;

	if (test_heap_open(path, 0, &heap) < 0 || !(slots = slots_of(heap)))
		_exit(2);
	for (i = NSLOTS / 2; i < NSLOTS; i++) {
		pma_arena_bind(heap, i % 2);
		if (pma_malloc_to(heap, 100, &slots[i]) < 0)
			_exit(3);
	}
	pma_arena_bind(heap, 1);
	if (pma_free_from(heap, &slots[0]) < 0 ||
	    pma_free_from(heap, &slots[1]) < 0)
		_exit(4);
	_exit(0);
}

static int first_alloc(const struct pma_log_entry *e, void *arg)
{
	uint64_t *off = arg;

	if (strcmp(e->type, "alloc"))
		return 0;
	*off = pool_off_byte(e->off);
	return 1;
}

/* geometry, tails and a pending allocation, from a read-only open */
static void survey(struct fx *f)
{
	struct pma_heap *heap;

	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &heap), 0);
	f->region = heap->region_off;
	f->data_base = heap->data_base;
	f->geom = heap->geom;
	assert_int_equal(f->geom.narenas, 2);
	f->tail[0] = heap->arenas[0].tail;
	f->tail[1] = heap->arenas[1].tail;
	assert_true(f->tail[0] > heap->arenas[0].head);
	assert_true(f->tail[1] > heap->arenas[1].head);
	assert_int_equal(pma_log_foreach(heap, first_alloc, &f->alloc_off), 1);
	f->slots = pma_offset(heap, slots_of(heap));
	assert_true(f->slots != 0);
	pma_heap_close(heap);
}

/* a test's format: layout version and summary group (0: the default) */
struct format_opts {
	uint32_t version;
	uint32_t sum_shift;
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	int fd, status;
	pid_t pid;

	assert_non_null(f);
	test_dir_make(f->dir, sizeof(f->dir), f->path, sizeof(f->path),
		      "test-corrupt", "heap");
	/* the test's initial state, if any: the format (older layout
	 * versions, small summary groups) */
	test_cfg_reset();
	if (*state) {
		const struct format_opts *fo = *state;

		assert_int_equal(pma_config_set_format(&test_cfg, fo->version,
						       fo->sum_shift),
				 0);
	}
	make_clean(f->path);
	test_cfg_reset();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		make_crash(f->path);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(status, 0);
	survey(f);
	fd = open(f->path, O_RDWR);
	assert_true(fd >= 0);
	f->map = mmap(NULL, POOL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		      0);
	close(fd);
	assert_true(f->map != MAP_FAILED);
	f->before = malloc(POOL_SIZE);
	assert_non_null(f->before);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	munmap(f->map, POOL_SIZE);
	free(f->before);
	test_dir_remove(f->dir);
	free(f);
	return 0;
}

/* both opens refuse the patched pool with -EIO and a message naming
 * what is wrong, and leave the file as it was */
static void assert_refused(struct fx *f, const char *msg)
{
	struct pma_heap *heap = NULL;

	memcpy(f->before, f->map, POOL_SIZE);
	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &heap), -EIO);
	assert_non_null(strstr(pma_errormsg(), msg));
	assert_int_equal(test_heap_open(f->path, 0, &heap), -EIO);
	assert_non_null(strstr(pma_errormsg(), msg));
	assert_null(heap);
	assert_memory_equal(f->map, f->before, POOL_SIZE);
}

/* append a valid record to arena's log, at its tail (so it is replayed) */
static void append_rec(struct fx *f, unsigned arena, unsigned type,
		       uint64_t off, uint64_t value)
{
	struct pma_rec *logs = (struct pma_rec *)(void *)(f->map + f->region +
							  f->geom.log_off);
	uint32_t cap = f->geom.log_cap;

	/* EXT_LEN's payload is a page count, not an offset */
	pma_booklog_encode(f->tail[arena], cap, type,
			   type == PMA_REC_EXT_LEN ?
				   off :
				   off >> pma_rec_osh(f->geom.version),
			   value,
			   pma_booklog_slot(logs + (size_t)arena * cap, cap,
					    f->tail[arena]));
	f->tail[arena]++;
}

/* append a one-record extent op (EXT_ALLOC1 ...) of npages at byte
 * offset off, its dest root slot slot */
static void append_rec1(struct fx *f, unsigned arena, unsigned type,
			uint64_t off, uint64_t npages, unsigned slot)
{
	struct pma_rec *logs = (struct pma_rec *)(void *)(f->map + f->region +
							  f->geom.log_off);
	uint32_t cap = f->geom.log_cap;

	pma_booklog_encode(f->tail[arena], cap, type,
			   off >> PMA_PAGE_SHIFT |
				   (npages - 1) << PMA_REC_EXT1_OFF_BITS,
			   f->slots + slot * 8ULL,
			   pma_booklog_slot(logs + (size_t)arena * cap, cap,
					    f->tail[arena]));
	f->tail[arena]++;
}

/* byte offset of the last chunk of the data area (free in the fixture) */
static uint64_t free_chunk(const struct fx *f)
{
	uint64_t chunk = f->geom.npages / PMA_CHUNK_PAGES - 1;

	return f->data_base + chunk * PMA_CHUNK;
}

/*
 * Bug 1: recovery replayed the logs and moved the heads (writing PM)
 * before pma_rebuild refused a corrupt page map entry: a refused heap
 * had been changed. Now the page map is checked before anything is
 * written, every entry, also one in a free range.
 */
static void test_pmap_checked_before_recovery(void **state)
{
	struct fx *f = *state;
	uint64_t *pmap =
		(uint64_t *)(void *)(f->map + f->region + f->geom.pmap_off);
	/* inside a slab: a group the summary marks (layout.h) */
	uint64_t page =
		(f->alloc_off - f->data_base) / PMA_CHUNK * PMA_CHUNK_PAGES + 3;

	pmap[page] = pma_pmap_make(PMA_PMAP_EXTENT, f->geom.npages);
	assert_refused(f, "corrupt page map entry");
}

/* stats of a read-only open of the fixture */
static void ro_stats(struct fx *f, struct pma_heap_stats *st, uint64_t *ret_bad)
{
	struct pma_heap *heap;

	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &heap), 0);
	assert_int_equal(pma_heap_stats(heap, st), 0);
	*ret_bad = heap->sum_bad;
	pma_heap_close(heap);
}

/* an invalid summary word (zeroed, or one bit flipped) hides nothing:
 * open reads its groups, the read-only open changes nothing, and the
 * writable one rewrites it valid (all its groups set, then the ones
 * found empty cleared) */
static void test_sum_word_invalid(void **state)
{
	struct fx *f = *state;
	uint64_t *word =
		(uint64_t *)(void *)(f->map + f->region + f->geom.sum_off);
	struct pma_heap_stats good, st;
	struct pma_heap *heap;
	uint64_t bad, valid;
	unsigned i;

	assert_int_equal(f->geom.sum_words, 1);
	ro_stats(f, &good, &bad);
	assert_int_equal(bad, 0);
	valid = *word;
	for (i = 0; i < 2; i++) {
		*word = i ? valid ^ 4 : 0;
		memcpy(f->before, f->map, POOL_SIZE);
		ro_stats(f, &st, &bad);
		assert_int_equal(bad, 1);
		assert_int_equal(st.used_bytes, good.used_bytes);
		assert_int_equal(st.free_bytes, good.free_bytes);
		assert_int_equal(st.largest_free, good.largest_free);
		assert_memory_equal(f->map, f->before, POOL_SIZE);
		assert_int_equal(test_heap_open(f->path, 0, &heap), 0);
		assert_int_equal(heap->sum_bad, 1);
		assert_int_equal(pma_sum_check(heap), 0);
		pma_heap_close(heap);
		/* valid, with the groups the open found in use (trimmed
		 * from all 48) */
		assert_int_equal(*word, pma_sum_encode(*word, 0));
		assert_true((*word & PMA_SUM_BITS_MASK) != 0);
		assert_true((*word & PMA_SUM_BITS_MASK) != PMA_SUM_BITS_MASK);
		ro_stats(f, &st, &bad);
		assert_int_equal(bad, 0);
		assert_int_equal(st.used_bytes, good.used_bytes);
	}
}

/* a summary group shift out of range, or other than the one the
 * geometry was made with, is refused as a geometry mismatch */
static void test_sum_shift_checked(void **state)
{
	struct fx *f = *state;
	struct pma_heap_hdr *hdr = (void *)(f->map + f->region);
	static const uint32_t bad[] = { 0, PMA_SUM_SHIFT_MIN - 1,
					PMA_SUM_SHIFT_MAX + 1, 63 };
	struct pma_heap *heap = NULL;
	unsigned i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		hdr->sum_shift = bad[i];
		hdr->checksum = util_crc32c(0, hdr, PMA_HDR_CSUM_LEN);
		memcpy(f->before, f->map, POOL_SIZE);
		assert_int_equal(test_heap_open(f->path, 0, &heap), -EBADMSG);
		assert_non_null(strstr(pma_errormsg(), "geometry"));
		assert_memory_equal(f->map, f->before, POOL_SIZE);
	}
}

/* a page map entry in a group the summary does not mark is not read (a
 * corruption there is not refused), and it is cleared when the group
 * is first used: the heap does not become refused later */
static void test_garbage_in_unmarked_group(void **state)
{
	struct fx *f = *state;
	uint64_t *pmap =
		(uint64_t *)(void *)(f->map + f->region + f->geom.pmap_off);
	uint64_t page = (free_chunk(f) - f->data_base) / PMA_PAGE + 3;
	uint64_t dest[1024];
	struct pma_heap_stats st;
	struct pma_heap *heap;
	uint64_t bad;
	unsigned n = 0;
	int rc;

	assert_int_equal(pmap[page], 0);
	pmap[page] = pma_pmap_make(PMA_PMAP_EXTENT, 1);
	ro_stats(f, &st, &bad);
	assert_int_equal(test_heap_open(f->path, 0, &heap), 0);
	assert_false(pma_sum_has(heap, page));
	/* fill the heap with extents (dests outside the pool), so that
	 * the group is used, and checkpoint */
	while (n < 1024 &&
	       (rc = pma_malloc_to(heap, 8 * PMA_PAGE, &dest[n])) == 0)
		n++;
	assert_int_equal(rc, -ENOMEM);
	assert_int_equal(pma_heap_checkpoint(heap), 0);
	assert_true(pma_sum_has(heap, page));
	assert_int_equal(pma_sum_check(heap), 0);
	assert_int_equal(pmap[page], 0);
	pma_heap_close(heap);
	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &heap), 0);
	pma_heap_close(heap);
	assert_int_equal(test_heap_open(f->path, 0, &heap), 0);
	assert_int_equal(pma_sum_check(heap), 0);
	pma_heap_close(heap);
}

/*
 * Bug 1 again, in the replay: arena 0's records were applied to PM
 * before a bad record of arena 1 refused the heap. Now a dry run into
 * DRAM copies checks every record first.
 */
static void test_bad_record_after_good_ones(void **state)
{
	struct fx *f = *state;

	/* a block op on a chunk that is no slab */
	append_rec(f, 1, PMA_REC_ALLOC, free_chunk(f) + PMA_SLAB_HDR_SIZE, 0);
	assert_refused(f, "log names 0x");
}

/*
 * The root word is the dest of the root object's allocation only (made
 * once, never freed): a window allocation of another block to it would
 * overwrite the root (found by fuzz-fsck: the open then failed the root
 * word's check, fsck had called the pool consistent). Refused before
 * anything is written, naming the record.
 */
static void test_root_dest_other(void **state)
{
	struct fx *f = *state;
	uint64_t chunk = free_chunk(f);
	uint64_t word = pool_off_make(0, f->region + PMA_ROOT_WORD_OFF);
	struct pma_heap *heap = NULL;

	append_rec(f, 0, PMA_REC_SLAB_NEW, chunk,
		   (uint64_t)pma_class_of(100, 1) << 8);
	append_rec(f, 0, PMA_REC_ALLOC, chunk + PMA_SLAB_HDR_SIZE, word);
	memcpy(f->before, f->map, POOL_SIZE);
	/* a read-only open redoes no dest word: it opens */
	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &heap), 0);
	pma_heap_close(heap);
	heap = NULL;
	assert_int_equal(test_heap_open(f->path, 0, &heap), -EIO);
	assert_non_null(strstr(pma_errormsg(), "which holds the root"));
	assert_non_null(strstr(pma_errormsg(), "arena 0 record"));
	assert_null(heap);
	assert_memory_equal(f->map, f->before, POOL_SIZE);
}

/*
 * Bug 2: a SLAB_NEW record whose offset was inside the first page of a
 * chunk but not its start passed (only the page was checked): the slab
 * header was written at the wrong place, and the read-only open hit an
 * assertion (debug builds) or copied the wrong bytes.
 */
static void test_slab_new_not_chunk_start(void **state)
{
	struct fx *f = *state;

	append_rec(f, 0, PMA_REC_SLAB_NEW, free_chunk(f) + 64,
		   (uint64_t)pma_class_of(100, 1) << 8);
	assert_refused(f, "bad slab_new record");
}

/* a SLAB_FREE (layout 6) must name the start of a chunk holding a slab
 * of its class and owner */
static void test_slab_free_bad(void **state)
{
	struct fx *f = *state;

	append_rec(f, 0, PMA_REC_SLAB_FREE, free_chunk(f) + 64,
		   (uint64_t)pma_class_of(100, 1) << 8);
	assert_refused(f, "bad slab_free record");
}

static void test_slab_free_no_slab(void **state)
{
	struct fx *f = *state;

	append_rec(f, 0, PMA_REC_SLAB_FREE, free_chunk(f),
		   (uint64_t)pma_class_of(100, 1) << 8);
	assert_refused(f, "names no slab of class");
}

/* a slab made and released in the window: the replay leaves no slab */
static void test_slab_free_replayed(void **state)
{
	struct fx *f = *state;
	unsigned cls = pma_class_of(100, 1);
	struct pma_heap_stats st0, st;
	struct pma_heap *heap = NULL;

	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &heap), 0);
	assert_int_equal(pma_heap_stats(heap, &st0), 0);
	pma_heap_close(heap);
	append_rec(f, 0, PMA_REC_SLAB_NEW, free_chunk(f), (uint64_t)cls << 8);
	append_rec(f, 0, PMA_REC_SLAB_FREE, free_chunk(f), (uint64_t)cls << 8);
	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &heap), 0);
	assert_int_equal(pma_heap_stats(heap, &st), 0);
	assert_int_equal(st.classes[cls].slabs, st0.classes[cls].slabs);
	assert_int_equal(st.largest_free, st0.largest_free);
	pma_heap_close(heap);
	assert_int_equal(test_heap_open(f->path, 0, &heap), 0);
	assert_int_equal(pma_heap_stats(heap, &st), 0);
	assert_int_equal(st.classes[cls].slabs, st0.classes[cls].slabs);
	assert_int_equal(st.largest_free, st0.largest_free);
	assert_int_equal(pma_heap_checkpoint(heap), 0);
	pma_heap_close(heap);
}

/*
 * Bug 3: replaying a block op trusted the block size and count of the
 * slab header in PM: a header with block size 1 put the bit of a block
 * far past the bitmap (a write into block data, or past the 512-byte
 * DRAM copy of a read-only open). Now the header must match its class.
 */
static void test_slab_header_wrong_class(void **state)
{
	struct fx *f = *state;
	uint64_t chunk = f->data_base +
			 (f->alloc_off - f->data_base) / PMA_CHUNK * PMA_CHUNK;
	struct pma_slab_hdr *sh = (void *)(f->map + chunk);

	assert_int_equal(sh->magic, PMA_SLAB_MAGIC);
	sh->block_size = 1;
	sh->nblocks = 60000;
	assert_refused(f, "not a block of a valid slab");
}

/*
 * Bug 4: a corrupt record in the middle of a log ended it there: the
 * committed ops after it were dropped without a word, and once new
 * appends reached them they were replayed again (the next open refused
 * the heap, or worse). Now a valid record after the end is -EIO.
 */
static void test_valid_record_after_end(void **state)
{
	struct fx *f = *state;
	struct pma_rec *logs = (struct pma_rec *)(void *)(f->map + f->region +
							  f->geom.log_off);
	struct pma_rec *rec;
	struct pma_heap *heap;

	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &heap), 0);
	rec = pma_booklog_slot(logs, f->geom.log_cap, heap->arenas[0].head);
	pma_heap_close(heap);
	/* the first record of arena 0: written whole, fails its checksum
	 * (version 7: refused at the record itself) */
	rec->word1 ^= 1ULL << 40;
	assert_refused(f, "log record");
	rec->word1 ^= 1ULL << 40;
	/* an epoch no write of the slot leaves: the same */
	rec->word0 ^= 1ULL << (PMA_REC_EPOCH_SHIFT + 5);
	assert_refused(f, "is damaged");
}

/*
 * Found by an audit (2026-12-04): random bytes over the arena descriptors
 * opened as an empty log: every op not yet checkpointed was dropped
 * without a word. Now a head must follow a valid record of its log.
 */
static void test_head_corrupt(void **state)
{
	struct fx *f = *state;
	const struct pma_heap_hdr *hdr =
		(const struct pma_heap_hdr *)(void *)(f->map + f->region);
	struct pma_arena_desc *desc =
		(struct pma_arena_desc *)(void *)(f->map + f->region +
						  f->geom.arena_off);
	uint64_t *head = &desc[1].head[hdr->head_gen & 1];

	assert_true(*head > 0); /* the fixture checkpointed */
	*head += 12345; /* past the tail: no record before it */
	assert_refused(f, "arena 1: descriptor head");
	*head = 0x9e3779b97f4a7c15ULL; /* what random bytes look like */
	assert_refused(f, "is damaged (check mismatch)");
	/* a head moved by one bit within the log (issue 15: the next
	 * allocations overlapped live blocks); its check catches it */
	*head = f->tail[1] - 1;
	assert_refused(f, "arena 1: descriptor head");
}

/* a full log (tail = head + log_cap, possible when checkpoints keep
 * failing): its last record took the slot of the record before the head,
 * and the head is still accepted and the whole log replayed */
static void test_full_log_opens(void **state)
{
	struct fx *f = *state;
	struct pma_heap *heap;
	uint64_t *slots, chunk = free_chunk(f), head, n;

	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &heap), 0);
	head = heap->arenas[0].head;
	pma_heap_close(heap);
	assert_true(head > 0);
	/* extent ops of one record each, allocating and freeing one extent
	 * in turn, up to a full log that ends with the extent live */
	n = head + f->geom.log_cap - f->tail[0];
	assert_true(n > 2);
	if (n % 2 == 0)
		append_rec1(f, 0, PMA_REC_EXT_ALLOC1, chunk + 8 * PMA_PAGE, 1,
			    1);
	while (f->tail[0] < head + f->geom.log_cap - 1) {
		append_rec1(f, 0, PMA_REC_EXT_ALLOC1, chunk, 2, 0);
		append_rec1(f, 0, PMA_REC_EXT_LFREE1, chunk, 2, 0);
	}
	append_rec1(f, 0, PMA_REC_EXT_ALLOC1, chunk, 2, 0);
	assert_int_equal(f->tail[0], head + f->geom.log_cap);
	if (test_heap_open(f->path, 0, &heap) < 0)
		fail_msg("%s", pma_errormsg());
	slots = slots_of(heap);
	assert_non_null(slots);
	assert_int_equal(slots[0], pma_pool_off(heap, chunk));
	assert_int_equal(pma_usable_size(heap, slots[0]), 2 * PMA_PAGE);
	pma_heap_close(heap);
	assert_int_equal(test_heap_open(f->path, 0, &heap), 0);
	pma_heap_close(heap);
}

/*
 * Found by kill -9 of pma-workload --stress (2026-12-07, about 1 in 3,000
 * early kills): a full log's last record is written by two stores into
 * the slot of the record before the head; a kill between them left
 * neither record there, and open refused the heap ("log head ... does
 * not follow a record"). The torn record is the log's end: dropped, the
 * op it began uncommitted, everything before it kept.
 */
static void full_log_torn_last(struct fx *f, int second_lost)
{
	struct pma_rec *logs = (struct pma_rec *)(void *)(f->map + f->region +
							  f->geom.log_off);
	struct pma_heap *heap;
	struct pma_rec *last, old;
	uint64_t *slots, chunk = free_chunk(f), head;

	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &heap), 0);
	head = heap->arenas[0].head;
	pma_heap_close(heap);
	assert_true(head > 0);
	/* allocate and free one extent in turn up to one record short of a
	 * full log, the extent free */
	if ((head + f->geom.log_cap - 1 - f->tail[0]) % 2)
		append_rec1(f, 0, PMA_REC_EXT_ALLOC1, chunk + 8 * PMA_PAGE, 1,
			    1);
	while (f->tail[0] < head + f->geom.log_cap - 1) {
		append_rec1(f, 0, PMA_REC_EXT_ALLOC1, chunk, 2, 0);
		append_rec1(f, 0, PMA_REC_EXT_LFREE1, chunk, 2, 0);
	}
	assert_int_equal(f->tail[0], head + f->geom.log_cap - 1);
	/* the last record into the slot of record head - 1, one of its two
	 * stores lost */
	last = pma_booklog_slot(logs, f->geom.log_cap, f->tail[0]);
	old = *last;
	append_rec1(f, 0, PMA_REC_EXT_ALLOC1, chunk, 2, 0);
	if (second_lost)
		last->word1 = old.word1;
	else
		last->word0 = old.word0;
	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &heap), 0);
	pma_heap_close(heap);
	if (test_heap_open(f->path, 0, &heap) < 0)
		fail_msg("%s", pma_errormsg());
	slots = slots_of(heap);
	assert_non_null(slots);
	assert_int_equal(slots[0], 0); /* the torn op did not happen */
	pma_heap_close(heap);
	assert_int_equal(test_heap_open(f->path, 0, &heap), 0);
	pma_heap_close(heap);
}

static void test_full_log_torn_last(void **state)
{
	full_log_torn_last(*state, 1);
}

static void test_full_log_torn_first(void **state)
{
	full_log_torn_last(*state, 0);
}

/* the page of the first live extent of at least min pages whose start
 * is not a chunk start */
static uint64_t extent_page(struct fx *f, uint64_t min)
{
	uint64_t *pmap =
		(uint64_t *)(void *)(f->map + f->region + f->geom.pmap_off);
	uint64_t page;

	for (page = 0; page < f->geom.npages; page++)
		if (pma_pmap_kind(pmap[page]) == PMA_PMAP_EXTENT &&
		    pma_pmap_npages(pmap[page]) >= min &&
		    page % PMA_CHUNK_PAGES)
			return page;
	fail_msg("the fixture has no such extent");
	return 0;
}

/*
 * Found by fuzz-heap, accepted quietly until now: a page map entry inside
 * a live extent (its pages must be free) opened, and the two allocations
 * shared pages. Now the spans are checked: on PM before the dry run when
 * no record is pending, on the dry run's result otherwise, and in the
 * read-only open's rebuild.
 */
static void test_entry_inside_extent(void **state)
{
	struct fx *f = *state;
	uint64_t *pmap =
		(uint64_t *)(void *)(f->map + f->region + f->geom.pmap_off);
	uint64_t page = extent_page(f, 3);

	pmap[page + 2] =
		pma_check_pmap(pma_pmap_make(PMA_PMAP_EXTENT, 1), page + 2);
	assert_refused(f, "lies inside");
}

/* the same overlap made only by the replay: an EXT_ALLOC record of a
 * page inside a live slab (the page map is clean before the replay) */
static void test_ext_alloc_inside_slab(void **state)
{
	struct fx *f = *state;
	uint64_t chunk = f->data_base +
			 (f->alloc_off - f->data_base) / PMA_CHUNK * PMA_CHUNK;

	append_rec(f, 0, PMA_REC_EXT_ALLOC, chunk + 4 * PMA_PAGE, 0);
	append_rec(f, 0, PMA_REC_EXT_LEN, 1, 0); /* payload 1 page */
	assert_refused(f, "lies inside");
}

/* one-record extent ops (heap version 4) are replayed like the
 * two-record ones: an EXT_ALLOC1 sets its dest, an EXT_LFREE1 after it
 * in the same log frees the extent and clears its dest */
static void test_ext1_records_replayed(void **state)
{
	struct fx *f = *state;
	struct pma_heap *heap;
	uint64_t *slots, chunk = free_chunk(f);

	append_rec1(f, 0, PMA_REC_EXT_ALLOC1, chunk, 3, 0);
	append_rec1(f, 1, PMA_REC_EXT_ALLOC1, chunk + 8 * PMA_PAGE, 8, 1);
	append_rec1(f, 1, PMA_REC_EXT_LFREE1, chunk + 8 * PMA_PAGE, 8, 1);
	assert_int_equal(test_heap_open(f->path, 0, &heap), 0);
	slots = slots_of(heap);
	assert_non_null(slots);
	assert_int_equal(slots[0], pma_pool_off(heap, chunk));
	assert_int_equal(pma_usable_size(heap, slots[0]), 3 * PMA_PAGE);
	assert_int_equal(slots[1], 0);
	/* live for good: freeing it works, a second free is refused */
	assert_int_equal(pma_free_from(heap, &slots[0]), 0);
	slots[1] = pma_pool_off(heap, chunk);
	assert_int_equal(pma_free_from(heap, &slots[1]), -EINVAL);
	slots[1] = 0;
	pma_heap_close(heap);
	assert_int_equal(test_heap_open(f->path, 0, &heap), 0);
	pma_heap_close(heap);
}

/* an EXT_ALLOC1 record reaching past the data area is refused */
static void test_ext1_record_past_end(void **state)
{
	struct fx *f = *state;

	append_rec1(f, 0, PMA_REC_EXT_ALLOC1, free_chunk(f),
		    PMA_REC_EXT1_NPAGES_MAX, 3);
	assert_refused(f, "bad extent record");
}

/* patch the header's version (and its checksum) */
static void set_version(struct fx *f, uint32_t version)
{
	struct pma_heap_hdr *hdr = (void *)(f->map + f->region);

	hdr->version = version;
	hdr->checksum = util_crc32c(0, hdr, PMA_HDR_CSUM_LEN);
}

static const struct format_opts format_v3 = { 3, 0 };
static const struct format_opts format_v4 = { 4, 0 };

static const struct format_opts format_v11 = { 11, 0 };

/*
 * A hole in a log: record head + 1 zeroed (damage that looks like a
 * record never written) with valid records after it. Ending the log
 * there would drop committed ops, so open refuses the heap
 * (log_end_check). Logs formatted since session 22 start in lap 1 over a
 * lap of records, and the check reads a few slots; older ones (v11 here)
 * are in lap 0 with zeros ahead, and it reads them all.
 */
static void test_log_hole(void **state)
{
	struct fx *f = *state;
	struct pma_rec *logs = (struct pma_rec *)(void *)(f->map + f->region +
							  f->geom.log_off);
	struct pma_heap *heap;
	uint64_t head;

	assert_int_equal(test_heap_open(f->path, PMA_HEAP_RDONLY, &heap), 0);
	head = heap->arenas[0].head;
	pma_heap_close(heap);
	if (f->geom.version >= PMA_HEAP_VERSION_XRING)
		assert_true(head >= f->geom.log_cap);
	else
		assert_true(head < f->geom.log_cap);
	assert_true(f->tail[0] >= head + 4);
	memset(pma_booklog_slot(logs, f->geom.log_cap, head + 1), 0,
	       sizeof(struct pma_rec));
	assert_refused(f, "is invalid but record");
}

/* an extent op of arena 0 takes expect_slots log slots per record */
static void assert_ext_slots(struct pma_heap *heap, uint64_t *slot,
			     uint64_t expect_slots)
{
	uint64_t tail;

	pma_arena_bind(heap, 0);
	tail = heap->arenas[0].tail;
	assert_int_equal(pma_malloc_to(heap, 5 * PMA_PAGE, slot), 0);
	assert_int_equal(heap->arenas[0].tail, tail + expect_slots);
	assert_int_equal(pma_free_from(heap, slot), 0);
	assert_int_equal(heap->arenas[0].tail, tail + 2 * expect_slots);
}

/* a version 3 heap (no one-record extent ops, no summary) opens and
 * recovers, and gets only two-record extent ops; a newer version is
 * refused */
static void test_version3_heap(void **state)
{
	struct fx *f = *state;
	struct pma_heap *heap;

	assert_int_equal(f->geom.version, 3);
	assert_int_equal(f->geom.sum_words, 0);
	assert_int_equal(test_heap_open(f->path, 0, &heap), 0);
	assert_int_equal(heap->ext1_pages, 0);
	assert_null(heap->sum);
	assert_ext_slots(heap, &slots_of(heap)[1], 2);
	pma_heap_close(heap);
	assert_int_equal(
		((struct pma_heap_hdr *)(void *)(f->map + f->region))->version,
		3);
	/* (versions 1 and 2: test-pmalloc-lazy) */
	set_version(f, PMA_HEAP_VERSION + 1);
	assert_int_equal(test_heap_open(f->path, 0, &heap), -EPROTONOSUPPORT);
	assert_non_null(strstr(pma_errormsg(), "expected 3 to"));
}

/* a version 4 heap (no summary: open reads the whole page map) opens,
 * recovers and keeps its version; its extent ops take one record */
static void test_version4_heap(void **state)
{
	struct fx *f = *state;
	struct pma_heap *heap;
	unsigned i;

	assert_int_equal(f->geom.version, 4);
	for (i = 0; i < 2; i++) {
		assert_int_equal(test_heap_open(f->path, 0, &heap), 0);
		assert_int_equal(heap->ext1_pages, PMA_REC_EXT1_NPAGES_MAX);
		assert_null(heap->sum);
		assert_int_equal(pma_sum_check(heap), 0);
		assert_ext_slots(heap, &slots_of(heap)[1], 1);
		pma_heap_close(heap);
	}
	assert_int_equal(
		((struct pma_heap_hdr *)(void *)(f->map + f->region))->version,
		4);
	/* a version 4 header with a summary offset does not match */
	((struct pma_heap_hdr *)(void *)(f->map + f->region))->sum_shift = 9;
	set_version(f, 4);
	assert_int_equal(test_heap_open(f->path, 0, &heap), -EBADMSG);
	assert_non_null(strstr(pma_errormsg(), "geometry"));
}

/* the fixture itself opens, recovers and reopens cleanly */
static void test_fixture_opens(void **state)
{
	struct fx *f = *state;
	struct pma_heap *heap;

	assert_int_equal(test_heap_open(f->path, 0, &heap), 0);
	pma_heap_close(heap);
	assert_int_equal(test_heap_open(f->path, 0, &heap), 0);
	pma_heap_close(heap);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
/* with a format of the fixture's heap */
#define TV(fn, opts)                                                        \
	cmocka_unit_test_prestate_setup_teardown(fn, fx_setup, fx_teardown, \
						 (void *)(opts))

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_fixture_opens),
		T(test_pmap_checked_before_recovery),
		T(test_bad_record_after_good_ones),
		T(test_root_dest_other),
		T(test_slab_new_not_chunk_start),
		T(test_slab_free_bad),
		T(test_slab_free_no_slab),
		T(test_slab_free_replayed),
		T(test_slab_header_wrong_class),
		T(test_valid_record_after_end),
		T(test_head_corrupt),
		T(test_full_log_opens),
		T(test_full_log_torn_last),
		T(test_full_log_torn_first),
		T(test_log_hole),
		TV(test_log_hole, &format_v11),
		T(test_entry_inside_extent),
		T(test_ext_alloc_inside_slab),
		T(test_ext1_records_replayed),
		T(test_ext1_record_past_end),
		TV(test_version3_heap, &format_v3),
		TV(test_version4_heap, &format_v4),
		T(test_sum_word_invalid),
		T(test_garbage_in_unmarked_group),
		T(test_sum_shift_checked),
	};

	/* real clwb + sfence on tmpfs (set before the first mapping) */
	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
