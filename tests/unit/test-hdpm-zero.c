/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-hdpm-zero: zero-tail pages (HDPM version 3). A new page object
 * whose data ends in zeros is written only up to the last non-zero cache
 * line; its header's zero_tail says the rest reads as zero. Checked: the
 * skipped bytes really hold stale data of a freed page and still read as
 * zero (through the base read, the log overlay, a CoW on top, truncate,
 * hdpm_gc; the background GC's builds are in the crash sweep), the flush count of a small write to a
 * new page, the stats counter, and the upgrade of a version 2 or 3 file
 * system to 4 (journal slots) at mount (read-only mounts leave it). And
 * one state of version 4 the crash sweep does not reach: a re-run of a
 * slot's commit at mount meets a block it freed before the crash that
 * another slot was handed since (test_rerun_skips_reused); and a crash
 * after an allocation whose slot the allocator's recovery leaves naming
 * an older block of another arena (test_orphan_older_redo).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hdpm-env.h"
#include "hdpm.h"
#include "hdpm/internal.h"
#include "pmalloc.h"
#include "pmem/pm.h"
#include "util/crc.h"

#define HEAP_SIZE (32ULL << 20)
#define PG 4096
#define NSTALE 64 /* pages of 0xff written and freed before each test */

static void env_mount(struct hdpm_env *e, unsigned flags)
{
	e->flags = HDPM_NO_GC_THREAD | flags;
	hdpm_env_mount(e);
}

/* a file of 0xff pages, unlinked: new pages reuse its blocks */
static void stale_pages(struct hdpm_fs *fs)
{
	static char ff[NSTALE * PG];
	struct hdpm_file *f;

	memset(ff, 0xff, sizeof(ff));
	assert_int_equal(hdpm_open(fs, "/stale", O_CREAT | O_RDWR, 0644, &f),
			 0);
	assert_int_equal(hdpm_pwrite(f, ff, sizeof(ff), 0), sizeof(ff));
	assert_int_equal(hdpm_close(f), 0);
	assert_int_equal(hdpm_unlink(fs, "/stale"), 0);
}

static int setup(void **state)
{
	if (hdpm_env_setup(state, "test-hdpm-zero", HEAP_SIZE,
			   HDPM_NO_GC_THREAD, 1))
		return -1;
	stale_pages(((struct hdpm_env *)*state)->fs);
	return 0;
}

/* the page object of page p of path */
static struct hdpm_page_hdr *page_of(struct hdpm_fs *fs, const char *path,
				     uint64_t p)
{
	struct hdpm_inode *in;
	uint64_t ino;

	assert_int_equal(hdpm_lookup(fs, path, &ino), 0);
	in = hdpm_inode(fs, ino);
	assert_true(p < in->index_cap);
	assert_true(hdpm_inode_index(fs, in)[p] != 0);
	return hdpm_page_hdr(fs, hdpm_inode_index(fs, in)[p]);
}

/* the file reads as want[0..len) */
static void check_file(struct hdpm_file *f, const char *want, size_t len)
{
	static char got[4 * PG];

	assert_true(len <= sizeof(got));
	assert_int_equal(hdpm_pread(f, got, len, 0), len);
	assert_memory_equal(got, want, len);
}

/* the first write to a page: header + 2 lines of data + the log slot */
static void test_new_page(void **state)
{
	struct hdpm_env *e = *state;
	struct hdpm_page_hdr *hdr;
	struct hdpm_stats s0, s1;
	struct pm_stats p0, p1;
	static char want[PG];
	struct hdpm_file *f;
	const char *stored;
	unsigned i, stale = 0;

	assert_int_equal(hdpm_open(e->fs, "/a", O_CREAT | O_RDWR, 0644, &f), 0);
	hdpm_stats(e->fs, &s0);
	memset(want, 0x11, 100);
	pm_stats_get(&p0);
	assert_int_equal(hdpm_pwrite(f, want, 100, 0), 100);
	pm_stats_get(&p1);
	hdpm_stats(e->fs, &s1);
	hdr = page_of(e->fs, "/a", 0);
	assert_int_equal(hdr->zero_tail, PG - 128);
	assert_int_equal(s1.zero_tail_bytes - s0.zero_tail_bytes, PG - 128);
	/* the page (header, 2 data lines, the log slot), the index growth
	 * and the journal: 23 here; writing the whole page object would add
	 * the 62 lines of the zero tail */
	print_message(
		"100 B to a new page: %llu lines flushed\n",
		(unsigned long long)(p1.lines_flushed - p0.lines_flushed));
	assert_true(p1.lines_flushed - p0.lines_flushed < 40);
	/* the block holds stale bytes past the mark: they read as zero */
	stored = (const char *)(hdr + 1);
	for (i = 128; i < PG; i++)
		stale += stored[i] != 0;
	print_message("stale non-zero bytes in the zero tail: %u\n", stale);
	/* a small write past the mark, in the log: the gap reads zero */
	memset(want + 3000, 0x22, 10);
	assert_int_equal(hdpm_pwrite(f, want + 3000, 10, 3000), 10);
	check_file(f, want, 3010);
	/* a CoW on top keeps the zeros and moves the mark */
	memset(want + 200, 0x33, 1500);
	assert_int_equal(hdpm_pwrite(f, want + 200, 1500, 200), 1500);
	check_file(f, want, 3010);
	assert_int_equal(hdpm_close(f), 0);
	/* after a remount too */
	hdpm_env_unmount(e);
	env_mount(e, 0);
	assert_int_equal(hdpm_open(e->fs, "/a", O_RDWR, 0, &f), 0);
	check_file(f, want, 3010);
	assert_int_equal(hdpm_close(f), 0);
}

/* at least one of many new pages reused a stale block; all read right */
static void test_stale_blocks(void **state)
{
	struct hdpm_env *e = *state;
	struct hdpm_file *f;
	static char want[4 * PG];
	char got[PG];
	unsigned p, i, stale = 0;

	assert_int_equal(hdpm_open(e->fs, "/b", O_CREAT | O_RDWR, 0644, &f), 0);
	for (p = 0; p < 4; p++) {
		memset(want + p * PG, 0x40 + (int)p, 64);
		assert_int_equal(hdpm_pwrite(f, want + p * PG, 64, p * PG), 64);
	}
	/* extend the file past page 3's data: its tail reads as zero */
	assert_int_equal(hdpm_ftruncate(f, 4 * PG), 0);
	for (p = 0; p < 4; p++) {
		const char *stored =
			(const char *)(page_of(e->fs, "/b", p) + 1);

		for (i = 64; i < PG; i++)
			stale += stored[i] != 0;
	}
	assert_true(stale > 0); /* the test reads over real stale bytes */
	check_file(f, want, 4 * PG);
	/* reads that start inside the zero tail */
	assert_int_equal(hdpm_pread(f, got, 100, PG + 1000), 100);
	for (i = 0; i < 100; i++)
		assert_int_equal(got[i], 0);
	/* hdpm_gc merges page 1's log into a new zero-tail page */
	memset(want + PG + 50, 0x55, 30);
	assert_int_equal(hdpm_pwrite(f, want + PG + 50, 30, PG + 50), 30);
	assert_true(hdpm_gc(e->fs, 0) >= 1);
	assert_int_equal(page_of(e->fs, "/b", 1)->zero_tail, PG - 128);
	check_file(f, want, 4 * PG);
	assert_int_equal(hdpm_close(f), 0);
}

/* truncate down merges the boundary page with zeros: a zero tail */
static void test_truncate(void **state)
{
	struct hdpm_env *e = *state;
	static char want[2 * PG];
	struct hdpm_file *f;

	assert_int_equal(hdpm_open(e->fs, "/t", O_CREAT | O_RDWR, 0644, &f), 0);
	memset(want, 0xaa, sizeof(want));
	assert_int_equal(hdpm_pwrite(f, want, sizeof(want), 0), sizeof(want));
	assert_int_equal(page_of(e->fs, "/t", 0)->zero_tail, 0);
	assert_int_equal(hdpm_ftruncate(f, PG + 100), 0);
	assert_int_equal(page_of(e->fs, "/t", 1)->zero_tail, PG - 128);
	assert_int_equal(hdpm_ftruncate(f, 2 * PG), 0);
	memset(want + PG + 100, 0, PG - 100);
	check_file(f, want, 2 * PG);
	assert_int_equal(hdpm_close(f), 0);
}

/* what a build of version v (2 or 3) leaves: no zero tails, one journal
 * (no slot block) */
static void make_old(struct hdpm_env *e, uint32_t v)
{
	e->fs->sb->version = v;
	pma_persist(e->heap, &e->fs->sb->version, 4);
	assert_int_equal(pma_free_from(e->heap, &e->fs->sb->jslots_off), 0);
	hdpm_env_unmount(e);
}

/* an old file system mounts read-only as it is (one journal slot) */
static void check_rdonly_old(struct hdpm_env *e, uint32_t v, const char *want)
{
	struct hdpm_file *f;

	env_mount(e, HDPM_RDONLY);
	assert_int_equal(e->fs->sb->version, v);
	assert_int_equal(e->fs->ntx, 1);
	assert_int_equal(e->fs->sb->jslots_off, 0);
	assert_int_equal(hdpm_open(e->fs, "/u", O_RDONLY, 0, &f), 0);
	check_file(f, want, PG);
	assert_int_equal(hdpm_close(f), 0);
	hdpm_env_unmount(e);
}

/* version 2 and 3 file systems mount and are upgraded to 4 (journal
 * slots); read-only keeps them; an upgrade that crashed after making the
 * slot block is finished with that block */
static void test_upgrade(void **state)
{
	struct hdpm_env *e = *state;
	struct hdpm_jslots *js;
	struct hdpm_stats st;
	static char want[PG];
	struct hdpm_file *f;
	uint64_t kept;
	uint32_t v;

	assert_int_equal(hdpm_open(e->fs, "/u", O_CREAT | O_RDWR, 0644, &f), 0);
	memset(want, 0x77, PG);
	assert_int_equal(hdpm_pwrite(f, want, PG, 0), PG);
	assert_int_equal(hdpm_close(f), 0);
	assert_int_equal(e->fs->sb->version, HDPM_VERSION);
	assert_int_equal(e->fs->ntx, HDPM_JSLOTS);
	for (v = 2; v <= 3; v++) {
		make_old(e, v);
		check_rdonly_old(e, v, want);
		env_mount(e, 0);
		assert_int_equal(e->fs->sb->version, HDPM_VERSION);
		assert_int_equal(e->fs->ntx, HDPM_JSLOTS);
		assert_true(e->fs->sb->jslots_off != 0);
		hdpm_stats(e->fs, &st);
		assert_int_equal(st.upgrades, 1);
		assert_int_equal(hdpm_open(e->fs, "/u", O_RDWR, 0, &f), 0);
		check_file(f, want, PG);
		assert_int_equal(hdpm_close(f), 0);
		hdpm_env_unmount(e);
		env_mount(e, 0);
		hdpm_stats(e->fs, &st);
		assert_int_equal(st.upgrades, 0);
	}
	/* crashed after the slot block, before the version: the block is
	 * reused and zeroed (every slot idle) */
	kept = e->fs->sb->jslots_off;
	js = pma_direct(e->heap, kept);
	memset(js, 0xa5, sizeof(*js));
	e->fs->sb->version = 3;
	pma_persist(e->heap, &e->fs->sb->version, 4);
	hdpm_env_unmount(e);
	env_mount(e, 0);
	assert_int_equal(e->fs->sb->version, HDPM_VERSION);
	assert_int_equal(e->fs->sb->jslots_off, kept);
	for (v = 0; v < HDPM_JSLOTS - 1; v++)
		assert_int_equal(js->slot[v].jstate, 0);
	assert_int_equal(hdpm_open(e->fs, "/u", O_RDWR, 0, &f), 0);
	check_file(f, want, PG);
	assert_int_equal(hdpm_close(f), 0);
	/* versions it does not know are refused */
	e->fs->sb->version = HDPM_VERSION + 1;
	pma_persist(e->heap, &e->fs->sb->version, 4);
	hdpm_unmount(e->fs);
	assert_int_equal(hdpm_mount(e->heap, HDPM_NO_GC_THREAD, &e->fs),
			 -EINVAL);
	e->fs = NULL;
	pma_heap_close(e->heap);
	assert_int_equal(pma_heap_open(e->path, 0, &e->heap), 0);
	/* the root object is the superblock: put a known version back */
	{
		uint64_t root;

		assert_int_equal(
			pma_root(e->heap, sizeof(struct hdpm_super), &root), 0);
		((struct hdpm_super *)pma_direct(e->heap, root))->version =
			HDPM_VERSION;
	}
	assert_int_equal(hdpm_mount(e->heap, HDPM_NO_GC_THREAD, &e->fs), 0);
}

/* the index entry of page p of path */
static uint64_t *entry_of(struct hdpm_fs *fs, const char *path, uint64_t p)
{
	struct hdpm_inode *in;
	uint64_t ino;

	assert_int_equal(hdpm_lookup(fs, path, &ino), 0);
	in = hdpm_inode(fs, ino);
	assert_true(p < in->index_cap);
	return &hdpm_inode_index(fs, in)[p];
}

/* journal slot 1 says: operation COMMITTED, one record {kind, word, old} */
static void slot1_committed(struct hdpm_env *e, enum hdpm_rec_kind kind,
			    uint64_t word, uint64_t old)
{
	struct hdpm_jslots *js = pma_direct(e->heap, e->fs->sb->jslots_off);
	struct hdpm_jslot *sl = &js->slot[0];
	uint64_t seq = (sl->jstate >> 8) + 1;
	struct hdpm_rec *rec = &sl->recs[0];

	memset(rec, 0, sizeof(*rec));
	rec->kind = kind;
	rec->seq = seq;
	rec->word = word;
	rec->old = old;
	rec->crc = util_crc32c(0, rec, sizeof(*rec));
	sl->jstate = seq << 8 | HDPM_J_COMMITTED;
	pma_persist(e->heap, sl, sizeof(*sl));
}

/*
 * A crash inside slot 1's commit after it freed a block that another
 * slot was then handed and linked: the re-run at mount must not free it
 * again (the ownership check). Built by hand: slot 1 COMMITTED with a
 * record whose block is /b's page now, first as the old page of a CoW
 * of /a's page, then as a FREE_TAIL page of /a whose index still names
 * it (the free's zeroing of the entry was not durable).
 */
static void test_rerun_skips_reused(void **state)
{
	struct hdpm_env *e = *state;
	static char want[PG];
	struct hdpm_stats st;
	struct hdpm_file *f;
	uint64_t x, a_ent, a_ino;
	int round;

	memset(want, 0x3c, PG);
	assert_int_equal(hdpm_open(e->fs, "/a", O_CREAT | O_RDWR, 0644, &f), 0);
	assert_int_equal(hdpm_pwrite(f, want, PG, 0), PG);
	assert_int_equal(hdpm_close(f), 0);
	memset(want, 0x5a, PG);
	assert_int_equal(hdpm_open(e->fs, "/b", O_CREAT | O_RDWR, 0644, &f), 0);
	assert_int_equal(hdpm_pwrite(f, want, PG, 0), PG);
	assert_int_equal(hdpm_close(f), 0);
	for (round = 0; round < 2; round++) {
		x = *entry_of(e->fs, "/b", 0);
		a_ent = hdpm_off(e->fs, entry_of(e->fs, "/a", 0));
		if (round == 0) {
			slot1_committed(e, HDPM_REC_PAGE, a_ent, x);
		} else {
			/* /a's entry names x too, as before the crash */
			*entry_of(e->fs, "/a", 0) = x;
			assert_int_equal(hdpm_lookup(e->fs, "/a", &a_ino), 0);
			slot1_committed(
				e, HDPM_REC_FREE_TAIL,
				hdpm_off(e->fs, hdpm_inode(e->fs, a_ino)), 0);
		}
		hdpm_env_unmount(e);
		hdpm_env_mount(e);
		hdpm_stats(e->fs, &st);
		assert_int_equal(st.rollforwards, 1);
		assert_true(pma_usable_size(e->heap, x) != 0);
		assert_int_equal(*entry_of(e->fs, "/b", 0), x);
		assert_int_equal(hdpm_open(e->fs, "/b", O_RDONLY, 0, &f), 0);
		check_file(f, want, PG);
		assert_int_equal(hdpm_close(f), 0);
	}
	/* the FREE_TAIL re-run let go of /a's stale entry */
	assert_int_equal(hdpm_inode_index(e->fs, hdpm_inode(e->fs, a_ino))[0],
			 0);
}

/* hold every journal slot but slot 1 (lock[i] set), or let them go */
static void slots_hold(struct hdpm_fs *fs, int hold)
{
	unsigned i;

	for (i = 0; i < fs->ntx; i++) {
		if (i == 1)
			continue;
		if (hold)
			assert_int_equal(pthread_mutex_lock(&fs->tx[i].lock),
					 0);
		else
			pthread_mutex_unlock(&fs->tx[i].lock);
	}
}

/* a thread of its own (its own arena): create path, through slot 1 */
static void *create_thread(void *arg)
{
	struct hdpm_fs *fs = arg;
	struct hdpm_file *f;

	if (hdpm_open(fs, "/x", O_CREAT | O_RDWR, 0644, &f) || hdpm_close(f))
		return (void *)1;
	return NULL;
}

/* the arena whose log holds an allocation of block into dest */
struct alloc_find {
	uint64_t block, dest;
	int arena;
};

static int alloc_find_one(const struct pma_log_entry *en, void *arg)
{
	struct alloc_find *a = arg;

	if (!strcmp(en->type, "alloc") && en->off == a->block &&
	    en->dest == a->dest)
		a->arena = (int)en->arena;
	return 0;
}

static int alloc_arena(struct pma_heap *heap, uint64_t block, uint64_t dest)
{
	struct alloc_find a = { .block = block, .dest = dest, .arena = -1 };

	assert_int_equal(pma_log_foreach(heap, alloc_find_one, &a), 0);
	return a.arena;
}

/* live blocks that no word of the file system names (the superblock is
 * the heap's root: not counted) */
struct unnamed {
	struct hdpm_fs *fs;
	unsigned n;
};

static int unnamed_one(uint64_t off, uint64_t size, void *arg)
{
	struct unnamed *u = arg;

	(void)size;
	u->n += off != hdpm_off(u->fs, u->fs->sb) &&
		!hdpm_block_named(u->fs, off);
	return 0;
}

static unsigned unnamed_blocks(struct hdpm_env *e)
{
	struct unnamed u = { .fs = e->fs };

	assert_int_equal(pma_block_foreach(e->heap, unnamed_one, &u), 0);
	return u.n;
}

static void file_copy(const char *from, const char *to)
{
	static char buf[1 << 16];
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	size_t n;

	assert_non_null(in);
	assert_non_null(out);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		assert_int_equal(fwrite(buf, 1, n, out), n);
	assert_int_equal(fclose(in), 0);
	assert_int_equal(fclose(out), 0);
}

/*
 * A crash after an allocation into slot 1's alloc_slot, before the block
 * reached its word, where the slot's previous allocation was logged by
 * another arena (another thread used the slot before) with a higher
 * index: the allocator's recovery redoes both, arena after arena, and
 * leaves alloc_slot naming the older block, the one the intent says it
 * held before. The mount must still free the new block (the two-thread
 * crash sweeps' leak, hdpm-fail-1..3). Built by hand: a thread creates
 * /x through slot 1 (its name block x), then this thread begins an
 * operation in slot 1 and allocates y into a journaled word whose store
 * the crash loses; the image is the pool file as it is then.
 */
static void test_orphan_older_redo(void **state)
{
	struct hdpm_env *e = *state;
	char image[128];
	struct hdpm_stats st;
	struct hdpm_inode *in;
	struct hdpm_tx *tx;
	uint64_t x, y, ino, dest, *word;
	pthread_t t;
	void *ret;

	dest = hdpm_off(e->fs, e->fs->tx[1].alloc_slot);
	slots_hold(e->fs, 1);
	assert_int_equal(pthread_create(&t, NULL, create_thread, e->fs), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_null(ret);
	assert_int_equal(hdpm_lookup(e->fs, "/x", &ino), 0);
	x = hdpm_inode(e->fs, ino)->name_off;
	assert_int_equal(*e->fs->tx[1].alloc_slot, x);
	/* a free inode's name word stands in for the operation's word */
	for (ino = 1; hdpm_mode(hdpm_inode(e->fs, ino)); ino++)
		;
	in = hdpm_inode(e->fs, ino);
	word = &in->name_off;
	tx = hdpm_tx_begin(e->fs);
	assert_ptr_equal(tx, &e->fs->tx[1]);
	assert_int_equal(hdpm_tx_log(tx, HDPM_REC_BLOCK, word), 0);
	assert_int_equal(hdpm_tx_alloc(tx, 64, word), 0);
	y = *word;
	assert_int_equal(*tx->alloc_slot, y);
	/* the arenas the test needs: x's after y's, so that the redo
	 * stores x last */
	assert_true(alloc_arena(e->heap, y, dest) >= 0);
	assert_true(alloc_arena(e->heap, x, dest) >
		    alloc_arena(e->heap, y, dest));
	/* the crash: y's store into its word never became durable */
	*word = 0;
	snprintf(image, sizeof(image), "%s.crash", e->path);
	file_copy(e->path, image);
	*word = y;
	hdpm_tx_abort(tx);
	slots_hold(e->fs, 0);
	hdpm_env_unmount(e);
	file_copy(image, e->path);
	unlink(image);
	hdpm_env_mount(e);
	hdpm_stats(e->fs, &st);
	assert_int_equal(st.rollbacks, 1);
	/* the allocator put x back; the sweep found y */
	assert_int_equal(*e->fs->tx[1].alloc_slot, x);
	assert_int_equal(pma_usable_size(e->heap, y), 0);
	assert_true(pma_usable_size(e->heap, x) != 0);
	assert_int_equal(hdpm_inode(e->fs, ino)->name_off, 0);
	assert_int_equal(e->fs->tx[1].jstate[0] & 0xff, HDPM_J_IDLE);
	assert_int_equal(unnamed_blocks(e), 0);
	assert_int_equal(hdpm_lookup(e->fs, "/x", &ino), 0);
	assert_int_equal(hdpm_inode(e->fs, ino)->name_off, x);
	assert_int_equal(pma_block_foreach(NULL, unnamed_one, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_new_page, setup,
						hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_stale_blocks, setup,
						hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_truncate, setup,
						hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_upgrade, setup,
						hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_rerun_skips_reused, setup,
						hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_orphan_older_redo, setup,
						hdpm_env_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
