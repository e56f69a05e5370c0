/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpm gc: the background GC. A step picks the pages with the most log
 * bytes and merges each without the fs lock: it reads the page and its
 * log up to the tail it saw, builds the new page (allocated through
 * sb->gc_slot, journaled in sb->gc), and publishes it with a
 * compare-and-swap of the page's index word, under the claim handshake
 * of internal.h: an append to the page, or any journaled operation, that
 * ran meanwhile wins and the new page is freed. Replaced pages go on a
 * durable retire list, freed at the end of the step: first each merged
 * inode's lock is taken for writing and dropped (a reader holds its
 * inode's read lock while it reads a page, so after that none is left in
 * a replaced page), then the pages are freed through gc_free_slot (at
 * mount, a listed page is freed only if no word names it: journaled
 * operations in the slots may have been handed it again meanwhile).
 * Lock order: gc.step_lock, then one inode lock at a time.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hdpm/internal.h"
#include "util/crc.h"
#include "util/errmsg.h"
#include "util/log.h"

/* the journal's first line: the record of the merge in flight */
#define GC_REC_SIZE offsetof(struct hdpm_gc_journal, nretire)

static uint64_t ld(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

static void st(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}

static void count(uint64_t *counter)
{
	__atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------ handshake */

static int gc_publishing(struct hdpm_fs *fs, uint64_t page)
{
	uint64_t a = ld(&fs->gc.gc_claim[0]), b = ld(&fs->gc.gc_claim[1]);

	if (page == HDPM_CLAIM_ALL)
		return a || b;
	return a == page || b == page;
}

/* a publication takes a few fences and never waits for a writer */
static void wait_gc(struct hdpm_fs *fs, uint64_t page)
{
	while (gc_publishing(fs, page))
		sched_yield();
}

void hdpm_gc_claim_all(struct hdpm_fs *fs)
{
	__atomic_add_fetch(&fs->gc.all_claim, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&fs->gc.gen, 1, __ATOMIC_SEQ_CST);
	wait_gc(fs, HDPM_CLAIM_ALL);
}

void hdpm_gc_release_all(struct hdpm_fs *fs)
{
	/* gen moves before the claim goes: a GC that sees no claim sees
	 * the new gen */
	__atomic_add_fetch(&fs->gc.gen, 1, __ATOMIC_SEQ_CST);
	/* release is enough here: a GC that loads 0 sees what the claims
	 * covered (only the claim store needs the store-load order) */
	__atomic_sub_fetch(&fs->gc.all_claim, 1, __ATOMIC_RELEASE);
}

void hdpm_gc_claim_page(struct hdpm_fs *fs, uint64_t ino, uint64_t page_off)
{
	st(&hdpm_ilock(fs, ino)->claim, page_off);
	wait_gc(fs, page_off);
}

void hdpm_gc_release_page(struct hdpm_fs *fs, uint64_t ino)
{
	__atomic_store_n(&hdpm_ilock(fs, ino)->claim, 0, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------ journal */

static uint32_t rec_crc(const struct hdpm_gc_journal *j)
{
	struct hdpm_gc_journal r;

	memcpy(&r, j, GC_REC_SIZE);
	r.crc = 0;
	return util_crc32c(0, &r, GC_REC_SIZE);
}

static int rec_building(const struct hdpm_gc_journal *j)
{
	return (j->state & 0xff) == HDPM_GC_BUILD && j->crc == rec_crc(j);
}

/* the record of the merge in flight is void (one 8-byte store) */
static void rec_clear(struct hdpm_fs *fs)
{
	struct hdpm_gc_journal *j = &fs->sb->gc;

	j->state = j->state >> 8 << 8;
	pma_persist(fs->heap, &j->state, sizeof(j->state));
}

/* free the pages on the retire list (the step, or mount) */
static int retire_all(struct hdpm_fs *fs)
{
	struct hdpm_gc_journal *j = &fs->sb->gc;
	uint64_t i;
	int rc;

	if (!j->nretire)
		return 0;
	if (j->nretire > HDPM_GC_BATCH_MAX)
		return util_errmsg_set(EIO, "gc journal: %llu pages to retire",
				       (unsigned long long)j->nretire);
	/* a page freed before a crash is dead, or was handed out again and
	 * is named by a word: either way the mount skips it */
	for (i = 0; i < j->nretire; i++) {
		rc = hdpm_block_free(fs, &fs->sb->gc_free_slot, j->retire[i],
				     1);
		if (rc < 0)
			return rc;
	}
	j->nretire = 0;
	pma_persist(fs->heap, &j->nretire, sizeof(j->nretire));
	return 0;
}

void hdpm_gc_rec_clear(struct hdpm_fs *fs)
{
	rec_clear(fs);
}

/*
 * A merge interrupted in BUILD leaves one page named by no word: its new
 * page if it did not publish (the allocation happened, the index word
 * still names the old page), the old one (and its log) if it did. gc_slot
 * does not tell which: the allocator's recovery may have put an older
 * background allocation back there (of another arena: steps run in
 * whatever thread calls them), a published page named by a word. So the
 * record stays until the orphan sweep (hdpm_recover_orphans), once every
 * journal is recovered, has freed every live block no word names.
 */
int hdpm_gc_recover(struct hdpm_fs *fs)
{
	struct hdpm_gc_journal *j = &fs->sb->gc;
	int rc;

	if (j->nretire)
		count(&fs->gc.recovered);
	rc = retire_all(fs);
	if (rc < 0 || !rec_building(j))
		return rc;
	count(&fs->gc.recovered);
	fs->gc_orphans = 1;
	return 0;
}

/* ------------------------------------------------------------ merge */

/* a page found by the scan */
struct gc_cand {
	uint64_t ino;
	uint64_t index_off; /* the file's index array when seen */
	uint64_t p; /* page number */
	uint64_t page; /* page object */
	uint64_t tail; /* its log tail */
};

/* [off, off + len) lies in the pool (words read without the lock may be
 * stale: they are only followed inside the pool) */
static int in_pool(struct hdpm_fs *fs, uint64_t off, uint64_t len)
{
	return off && len && off + len > off && hdpm_direct(fs, off) &&
	       hdpm_direct(fs, off + len - 1);
}

/* keep the max candidates with the largest tails, largest first */
static void cand_add(struct gc_cand *c, unsigned *n, unsigned max,
		     const struct gc_cand *x)
{
	unsigned i;

	if (!max)
		return;
	if (*n < max) {
		i = (*n)++;
	} else {
		if (c[max - 1].tail >= x->tail)
			return;
		i = max - 1;
	}
	for (; i > 0 && c[i - 1].tail < x->tail; i--)
		c[i] = c[i - 1];
	c[i] = *x;
}

static void scan_file(struct hdpm_fs *fs, uint64_t ino, struct gc_cand *c,
		      unsigned *n)
{
	struct hdpm_inode *in = hdpm_inode(fs, ino);
	struct gc_cand x = { .ino = ino };
	uint64_t cap, *index;

	x.index_off = ld(&in->index_off);
	cap = ld(&in->index_cap);
	if (!in_pool(fs, x.index_off, cap * 8))
		return;
	index = hdpm_direct(fs, x.index_off);
	for (x.p = 0; x.p < cap; x.p++) {
		x.page = ld(&index[x.p]);
		if (!in_pool(fs, x.page, HDPM_PAGE_OBJ_SIZE))
			continue;
		x.tail = ld(&hdpm_page_hdr(fs, x.page)->log_tail);
		if (x.tail >= fs->gc.cfg.min_log_bytes &&
		    x.tail <= HDPM_LOG_TOTAL)
			cand_add(c, n, fs->gc.cfg.batch, &x);
	}
}

static unsigned gc_scan(struct hdpm_fs *fs, struct gc_cand *c)
{
	uint64_t i, ninodes = hdpm_ninodes(fs);
	unsigned n = 0;

	for (i = 1; i < ninodes; i++)
		if (S_ISREG((uint32_t)ld(&hdpm_inode(fs, i)->mode_gen)))
			scan_file(fs, i, c, &n);
	return n;
}

/* journal the merge, allocate the new page and write buf into it */
static int gc_build(struct hdpm_fs *fs, uint64_t *word, uint64_t page,
		    char *buf)
{
	struct hdpm_gc_journal *j = &fs->sb->gc;
	int rc;

	j->word = hdpm_off(fs, word);
	j->old = page;
	j->before = fs->sb->gc_slot;
	j->before_live = (uint32_t)hdpm_block_live(fs, j->before);
	j->state = ((j->state >> 8) + 1) << 8 | HDPM_GC_BUILD;
	j->crc = rec_crc(j);
	/* the record is durable before the allocation can be */
	pma_persist(fs->heap, j, GC_REC_SIZE);
	rc = pma_malloc_to(fs->heap, HDPM_PAGE_OBJ_SIZE, &fs->sb->gc_slot);
	if (rc < 0) {
		rec_clear(fs);
		return util_errmsg_set(ENOSPC, "gc: no space for a page: %s",
				       pma_errormsg());
	}
	(void)hdpm_page_write_new(fs, hdpm_direct(fs, fs->sb->gc_slot), buf);
	/* the new page is durable before it is published */
	pma_drain(fs->heap);
	return 0;
}

/* the old page is replaced: on the retire list, the record done */
static void gc_commit(struct hdpm_fs *fs, uint64_t *word, uint64_t page)
{
	struct hdpm_gc_journal *j = &fs->sb->gc;

	pma_persist(fs->heap, word, sizeof(*word));
	j->retire[j->nretire] = page;
	pma_persist(fs->heap, &j->retire[j->nretire], sizeof(uint64_t));
	/* listed before the count covers it */
	j->nretire++;
	pma_persist(fs->heap, &j->nretire, sizeof(j->nretire));
	rec_clear(fs);
}

/*
 * Publish the built page in place of page if no writer claims it (or
 * everything), no journaled operation ran since gen was read, and the
 * log tail is still the merged one. Returns 1 if published, 0 if a
 * writer won (the new page is freed).
 */
static int gc_publish(struct hdpm_fs *fs, uint64_t ino, uint64_t *word,
		      uint64_t page, uint64_t tail, uint64_t gen)
{
	struct hdpm_gc_state *g = &fs->gc;
	uint64_t n = fs->sb->gc_slot, expect = page;
	int won = 0, rc;

	st(&g->gc_claim[0], page);
	st(&g->gc_claim[1], n);
	if (ld(&hdpm_ilock(fs, ino)->claim) != page && ld(&g->all_claim) == 0 &&
	    ld(&g->gen) == gen &&
	    ld(&hdpm_page_hdr(fs, page)->log_tail) == tail)
		won = __atomic_compare_exchange_n(word, &expect, n, 0,
						  __ATOMIC_SEQ_CST,
						  __ATOMIC_SEQ_CST);
	/* the claims stay until the merge is durable and the old page
	 * listed: no writer replaces or frees either meanwhile */
	if (won) {
		g->retire_ino[fs->sb->gc.nretire] = ino;
		gc_commit(fs, word, page);
	}
	st(&g->gc_claim[1], 0);
	st(&g->gc_claim[0], 0);
	if (won) {
		count(&g->merges);
		return 1;
	}
	count(&g->lost);
	rc = pma_free_from(fs->heap, &fs->sb->gc_slot);
	rec_clear(fs);
	return rc < 0 ? rc : 0;
}

/* merge one candidate: 1 published, 0 skipped or lost, or an error */
static int gc_merge(struct hdpm_fs *fs, const struct gc_cand *c, char *buf)
{
	uint64_t gen = ld(&fs->gc.gen), *word, log_off, tail;
	struct hdpm_page_hdr *hdr;
	int rc;

	/* a journaled operation is running: its pages may be half made */
	if (ld(&fs->gc.all_claim) ||
	    ld(&hdpm_inode(fs, c->ino)->index_off) != c->index_off)
		return 0;
	word = (uint64_t *)hdpm_direct(fs, c->index_off) + c->p;
	if (ld(word) != c->page ||
	    pma_usable_size(fs->heap, c->page) < HDPM_PAGE_OBJ_SIZE)
		return 0;
	hdr = hdpm_page_hdr(fs, c->page);
	tail = ld(&hdr->log_tail);
	log_off = ld(&hdr->log_off);
	/* positions past the inline part are in the chunk */
	if (!tail || tail > HDPM_LOG_TOTAL ||
	    (log_off && !in_pool(fs, log_off, HDPM_LOG_SIZE)) ||
	    (tail > HDPM_LOG_INLINE && !log_off))
		return 0;
	(void)hdpm_page_prepare(fs, buf);
	hdpm_page_read_at(fs, c->page, log_off, tail, 0, HDPM_PAGE_SIZE,
			  buf + sizeof(struct hdpm_page_hdr));
	rc = gc_build(fs, word, c->page, buf);
	if (rc < 0)
		return rc;
	if (fs->gc.race_hook)
		fs->gc.race_hook(fs, fs->gc.race_arg);
	return gc_publish(fs, c->ino, word, c->page, tail, gen);
}

static int space_low(struct hdpm_fs *fs)
{
	struct pma_heap_stats s;

	if (pma_heap_stats(fs->heap, &s) < 0 || !s.heap_size)
		return 0;
	return s.free_bytes * 100 < (uint64_t)fs->gc.cfg.free_pct * s.heap_size;
}

static int gc_retire(struct hdpm_fs *fs)
{
	uint64_t i, n = fs->sb->gc.nretire;

	if (!n)
		return 0;
	/* a barrier per merged inode: its readers that may still be in a
	 * replaced page hold its read lock; later ones find the new page */
	for (i = 0; i < n; i++) {
		if (i > 0 && fs->gc.retire_ino[i] == fs->gc.retire_ino[i - 1])
			continue;
		hdpm_wrlock(fs, fs->gc.retire_ino[i]);
		hdpm_unlock(fs, fs->gc.retire_ino[i]);
	}
	return retire_all(fs);
}

int hdpm_gc_background(struct hdpm_fs *fs, unsigned flags)
{
	struct gc_cand cand[HDPM_GC_BATCH_MAX] = { 0 };
	char buf[HDPM_PAGE_NEW_SIZE];
	unsigned n, i;
	int rc = 0, merged = 0, rrc;

	pthread_mutex_lock(&fs->gc.step_lock);
	if (!(flags & HDPM_GC_FORCE) && !space_low(fs))
		goto out_unlock;
	count(&fs->gc.steps);
	n = gc_scan(fs, cand);
	for (i = 0; i < n && rc >= 0; i++) {
		rc = gc_merge(fs, &cand[i], buf);
		if (rc > 0)
			merged++;
	}
	rrc = gc_retire(fs);
	if (rc >= 0)
		rc = rrc;
out_unlock:
	pthread_mutex_unlock(&fs->gc.step_lock);
	return rc < 0 ? rc : merged;
}

/* ------------------------------------------------------------ thread */

static void *gc_main(void *arg)
{
	struct hdpm_fs *fs = arg;
	struct hdpm_gc_state *g = &fs->gc;
	struct timespec ts;
	int n;

	pthread_mutex_lock(&g->mu);
	while (!g->stop) {
		pthread_mutex_unlock(&g->mu);
		n = hdpm_gc_background(fs, HDPM_GC_BACKGROUND_STEP);
		if (n < 0)
			util_warn("hdpm: background gc: %s", util_errmsg());
		pthread_mutex_lock(&g->mu);
		if (n >= (int)g->cfg.batch)
			continue; /* more to merge */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)(g->cfg.interval_ms % 1000) * 1000000L;
		ts.tv_sec +=
			g->cfg.interval_ms / 1000 + ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		if (!g->stop)
			(void)pthread_cond_timedwait(&g->cond, &g->mu, &ts);
	}
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

void hdpm_gc_config_init(struct hdpm_gc_config *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->free_pct = 20;
	cfg->batch = 16;
	cfg->interval_ms = 1000;
	cfg->min_log_bytes = 256;
}

static int config_check(const struct hdpm_gc_config *cfg)
{
	if (cfg->free_pct > 100)
		return util_errmsg_set(EINVAL, "gc free_pct %u is above 100",
				       cfg->free_pct);
	if (!cfg->batch || cfg->batch > HDPM_GC_BATCH_MAX)
		return util_errmsg_set(EINVAL, "gc batch %u is not in 1..%u",
				       cfg->batch, HDPM_GC_BATCH_MAX);
	if (!cfg->interval_ms || cfg->interval_ms > 3600000)
		return util_errmsg_set(EINVAL,
				       "gc interval %u ms is not in "
				       "1..3600000",
				       cfg->interval_ms);
	if (cfg->min_log_bytes > HDPM_LOG_TOTAL)
		return util_errmsg_set(EINVAL,
				       "gc min_log_bytes %u is above the "
				       "log size %u",
				       cfg->min_log_bytes, HDPM_LOG_TOTAL);
	return 0;
}

int hdpm_gc_init(struct hdpm_fs *fs, const struct hdpm_gc_config *cfg)
{
	struct hdpm_gc_state *g = &fs->gc;
	pthread_condattr_t ca;
	int rc;

	if (cfg) {
		rc = config_check(cfg);
		if (rc < 0)
			return rc;
		g->cfg = *cfg;
	} else {
		hdpm_gc_config_init(&g->cfg);
	}
	pthread_mutex_init(&g->step_lock, NULL);
	pthread_mutex_init(&g->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cond, &ca);
	pthread_condattr_destroy(&ca);
	g->inited = 1;
	return 0;
}

int hdpm_gc_start(struct hdpm_fs *fs)
{
	int rc;

	rc = pthread_create(&fs->gc.thread, NULL, gc_main, fs);
	if (rc)
		return util_errmsg_set(EAGAIN, "cannot start the gc thread: %s",
				       strerror(rc));
	fs->gc.running = 1;
	return 0;
}

int hdpm_gc_thread_start(struct hdpm_fs *fs)
{
	if (!fs)
		return util_errmsg_set(EINVAL, "no file system");
	if (fs->rdonly)
		return util_errmsg_set(EROFS, "read-only mount");
	if (fs->gc.running)
		return 0;
	fs->gc.stop = 0;
	return hdpm_gc_start(fs);
}

void hdpm_gc_thread_stop(struct hdpm_fs *fs)
{
	struct hdpm_gc_state *g;

	if (!fs || !fs->gc.running)
		return;
	g = &fs->gc;
	pthread_mutex_lock(&g->mu);
	g->stop = 1;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->mu);
	pthread_join(g->thread, NULL);
	g->running = 0;
}

void hdpm_gc_stop(struct hdpm_fs *fs)
{
	struct hdpm_gc_state *g = &fs->gc;

	if (!g->inited)
		return;
	hdpm_gc_thread_stop(fs);
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->mu);
	pthread_mutex_destroy(&g->step_lock);
	g->inited = 0;
}
