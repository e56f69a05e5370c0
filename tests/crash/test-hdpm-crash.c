/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-hdpm-crash: crash-simulation sweep of libhdpm (tests/lib/crash-sweep).
 * A child runs a deterministic list of file operations (small log writes,
 * full-page CoW writes, large unaligned writes over several pages, writes
 * that extend, truncates, renames over files, unlinks, creates, bursts of
 * small writes to one page that trigger inline GC, hdpm_gc passes); at
 * every fence the image is recovered (pma_heap_open + hdpm_mount) and
 * checked: the whole file system equals the reference state before or
 * after the operation that was running (each operation all-or-nothing),
 * every block HDPM names is live and named once, and nothing leaked
 * (live blocks == blocks HDPM names + the root). Then the fs must keep
 * working. pmactl fsck's HDPM check runs on every image before
 * recovery (no error: a crash leaves only states the mount accepts), and
 * its heap and HDPM checks after it (no finding at all). `test-hdpm-crash replay FILE` rechecks a saved image (the
 * operation index is then unknown: both ends of every op are tried).
 * New pages are written without their zero tails (HDPM version 3): every
 * run must have made such pages, over blocks freed earlier in the run.
 * Two sweeps start from a version 2 and a version 3 image (one journal,
 * no slot block): their upgrade at mount is swept. Three run a second
 * thread with its own op list on its own files (/e/...) beside the first,
 * so that two journal slots are open at some crashes (the checker counts
 * such images and wants some): each thread's files must equal their
 * state before or after that thread's running operation.
 * Two start with a 2-inode first chunk of the inode table, so that the
 * creates grow it (a journaled chunk allocation) under the sweep.
 * HDPM_CRASH_RUNS=N runs every sweep N times (other op lists; the
 * two-thread sweeps also other interleavings), HDPM_CRASH_FILTER=GLOB
 * runs only the sweeps whose test name matches (cmocka's filter, e.g.
 * "*two_threads*"). A leak names the live blocks nothing names (the
 * root among them); a replay dumps every journal slot in use.
 */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "crash-sweep.h"
#include "hdpm.h"
#include "hdpm/fsck.h"
#include "hdpm/internal.h"
#include "pmalloc.h"
#include "pmalloc/fsck.h"
#include "pmalloc/internal.h"

#define HEAP_SIZE (4ULL << 20)
#define PG 4096
#define NFILES 3
#define FSIZE (3 * PG)
#define NOPS 48

enum op_kind {
	OP_CREATE,
	OP_SMALL,
	OP_PAGE,
	OP_LARGE,
	OP_BURST,
	OP_TRUNC,
	OP_RENAME,
	OP_UNLINK,
	OP_GC,
	OP_BGGC, /* a background GC step (forced) */
	OP_BGGC_RACE /* one with a small write between build and publish */
};

struct op {
	enum op_kind kind;
	unsigned file, len, seed;
	uint64_t off;
};

struct model {
	int exists[NFILES];
	uint64_t size[NFILES];
	char data[NFILES][FSIZE + 2 * PG];
};

/* shared with the workload child: what it runs now */
struct shared {
	int op; /* index of the running operation */
	int cow_only; /* mount flag of the sweep */
	int gc_heavy; /* op mix of the background GC sweeps */
	int from_version; /* the image starts as this HDPM version (2, 3) */
	int two_threads; /* a second thread runs its own list on /e/... */
	int op2; /* index of the second thread's running operation */
	int small_itable; /* a 2-inode first chunk: creates grow the table */
	uint64_t seed; /* the op list of this run */
};
static struct shared *sh;

/* files 0..NFILES-1: the first thread's; NFILES..: the second's */
static const char *fname(unsigned i)
{
	static const char *names[2 * NFILES] = { "/a",	 "/d/b",   "/d/c",
						 "/e/a", "/e/f/b", "/e/f/c" };

	return names[i];
}

static void fill(char *buf, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (char)(seed * 131 + i * 7 + (i >> 9) + 1);
}

/* ------------------------------------------------------------ ops */

static uint64_t xorshift(uint64_t *r)
{
	*r ^= *r << 13, *r ^= *r >> 7, *r ^= *r << 17;
	return *r;
}

static void model_apply(struct model *m, const struct op *op)
{
	static char buf[FSIZE + 2 * PG];
	unsigned f = op->file, j = (f + 1) % NFILES, k;

	switch (op->kind) {
	case OP_CREATE:
		m->exists[f] = 1;
		m->size[f] = 0;
		memset(m->data[f], 0, sizeof(m->data[f]));
		break;
	case OP_BURST:
		for (k = 0; k < 8; k++)
			fill(m->data[f] + op->off + k * 40, 30, op->seed + k);
		if (op->off + 7 * 40 + 30 > m->size[f])
			m->size[f] = op->off + 7 * 40 + 30;
		break;
	case OP_SMALL:
	case OP_PAGE:
	case OP_LARGE:
		fill(buf, op->len, op->seed);
		memcpy(m->data[f] + op->off, buf, op->len);
		if (op->off + op->len > m->size[f])
			m->size[f] = op->off + op->len;
		break;
	case OP_TRUNC:
		if (op->off < m->size[f])
			memset(m->data[f] + op->off, 0, m->size[f] - op->off);
		m->size[f] = op->off;
		break;
	case OP_RENAME:
		memcpy(m->data[j], m->data[f], sizeof(m->data[j]));
		m->size[j] = m->size[f];
		m->exists[j] = 1;
		m->exists[f] = 0;
		break;
	case OP_UNLINK:
		m->exists[f] = 0;
		break;
	case OP_GC:
	case OP_BGGC:
		break;
	case OP_BGGC_RACE:
		fill(buf, op->len, op->seed);
		memcpy(m->data[f] + op->off, buf, op->len);
		break;
	}
}

/* the op list of a run: valid for the model state it meets */
static void ops_make(uint64_t rnd, struct op *ops)
{
	static struct model m;
	uint64_t r = rnd * 0x9e3779b97f4a7c15ULL + 12345;
	unsigned i, pick;
	int last_burst = -1;
	/* small x3, page, large, burst x4, trunc, unlink, gc/step x2,
	 * step with a racing write x3 */
	static const unsigned char heavy[16] = {
		0, 0, 0, 5, 7, 9, 9, 9, 9, 11, 13, 14, 14, 15, 15, 15
	};
	struct op *op;

	memset(&m, 0, sizeof(m));
	for (i = 0; i < NOPS; i++) {
		op = &ops[i];
		memset(op, 0, sizeof(*op));
		op->file = (unsigned)(xorshift(&r) % NFILES);
		op->seed = (unsigned)xorshift(&r);
		pick = (unsigned)(xorshift(&r) % 16);
		/* background GC sweeps: bursts and steps, fewer of the rest */
		if (sh->gc_heavy)
			pick = heavy[pick];
		op->off = xorshift(&r) % FSIZE;
		if (!m.exists[op->file]) {
			op->kind = OP_CREATE;
		} else if (pick < 5) {
			op->kind = OP_SMALL;
			op->len = 1 + op->seed % 150;
		} else if (pick < 7) {
			op->kind = OP_PAGE;
			op->off -= op->off % PG;
			op->len = PG;
		} else if (pick < 9) {
			op->kind = OP_LARGE;
			op->len = PG + op->seed % (PG + 500);
			/* inside the model's buffer */
			if (op->off + op->len > FSIZE + 2 * PG)
				op->len = (unsigned)(FSIZE + 2 * PG - op->off);
		} else if (pick < 11) {
			op->kind = OP_BURST;
			op->off %= PG - 8 * 40;
		} else if (pick < 12) {
			op->kind = OP_TRUNC;
			op->off = xorshift(&r) % (FSIZE + PG);
		} else if (pick < 13) {
			op->kind = OP_RENAME;
		} else if (pick < 14) {
			op->kind = OP_UNLINK;
		} else if (pick < 15) {
			op->kind = (xorshift(&r) & 1) ? OP_GC : OP_BGGC;
		} else {
			/* a write inside the file, to the last burst's page
			 * if there was one: the page the step merges first */
			op->kind = OP_BGGC_RACE;
			op->len = 1 + op->seed % 40;
			op->off = m.size[op->file] > op->len ?
					  xorshift(&r) %
						  (m.size[op->file] - op->len) :
					  0;
			if (last_burst >= 0 && m.exists[ops[last_burst].file] &&
			    m.size[ops[last_burst].file] >=
				    ops[last_burst].off + 64) {
				op->file = ops[last_burst].file;
				op->off = ops[last_burst].off + 3;
			}
			/* the race hook is global: one thread only */
			if (op->off + op->len > m.size[op->file] ||
			    sh->two_threads)
				op->kind = OP_BGGC;
		}
		if (op->kind == OP_BURST)
			last_burst = (int)i;
		model_apply(&m, op);
	}
}

static int fs_write(struct hdpm_fs *fs, unsigned f, const char *buf, size_t len,
		    uint64_t off)
{
	struct hdpm_file *file;
	ssize_t n;

	if (hdpm_open(fs, fname(f), O_RDWR, 0, &file))
		return -1;
	n = hdpm_pwrite(file, buf, len, off);
	hdpm_close(file);
	return n == (ssize_t)len ? 0 : -1;
}

/* each thread's write buffer */
static char buf1[FSIZE + 2 * PG], buf2[FSIZE + 2 * PG];

/* OP_BGGC_RACE: its write, made by the first merge's race hook */
static const struct op *race_op;

static void race_write(struct hdpm_fs *fs, void *arg)
{
	char buf[64];

	(void)arg;
	if (!race_op)
		return;
	fill(buf, race_op->len, race_op->seed);
	if (fs_write(fs, race_op->file, buf, race_op->len, race_op->off))
		_exit(5);
	race_op = NULL;
}

/* op on the files from base on (0: the first thread's, NFILES: the
 * second's) */
static int fs_apply(struct hdpm_fs *fs, const struct op *op, unsigned base)
{
	char *buf = base ? buf2 : buf1;
	unsigned k, f = op->file + base;
	struct hdpm_file *file;
	int rc;

	switch (op->kind) {
	case OP_CREATE:
		rc = hdpm_open(fs, fname(f), O_CREAT | O_EXCL | O_RDWR, 0644,
			       &file);
		hdpm_close(file);
		return rc;
	case OP_BURST:
		/* eight small writes to one page (the run itself splits
		 * a burst into single writes, ops_expand) */
		for (k = 0; k < 8; k++) {
			fill(buf, 30, op->seed + k);
			if (fs_write(fs, f, buf, 30, op->off + k * 40))
				return -1;
		}
		return 0;
	case OP_SMALL:
	case OP_PAGE:
	case OP_LARGE:
		fill(buf, op->len, op->seed);
		return fs_write(fs, f, buf, op->len, op->off);
	case OP_TRUNC:
		rc = hdpm_open(fs, fname(f), O_RDWR, 0, &file);
		if (rc == 0)
			rc = hdpm_ftruncate(file, op->off);
		hdpm_close(file);
		return rc;
	case OP_RENAME:
		return hdpm_rename(fs, fname(f),
				   fname((op->file + 1) % NFILES + base));
	case OP_UNLINK:
		return hdpm_unlink(fs, fname(f));
	case OP_GC:
		return hdpm_gc(fs, 0) < 0 ? -1 : 0;
	case OP_BGGC:
		return hdpm_gc(fs, HDPM_GC_BACKGROUND_STEP | HDPM_GC_FORCE) <
				       0 ?
			       -1 :
			       0;
	case OP_BGGC_RACE:
		race_op = op;
		fs->gc.race_hook = race_write;
		rc = hdpm_gc(fs, HDPM_GC_BACKGROUND_STEP | HDPM_GC_FORCE);
		fs->gc.race_hook = NULL;
		/* no merge ran (no log big enough): the write alone */
		race_write(fs, NULL);
		/* and a step the write does not race: it wins */
		if (rc >= 0)
			rc = hdpm_gc(fs,
				     HDPM_GC_BACKGROUND_STEP | HDPM_GC_FORCE);
		return rc < 0 ? -1 : 0;
	}
	return -1;
}

/* bursts are split into single writes so every write is one op */
static unsigned ops_expand(const struct op *ops, struct op *out)
{
	unsigned i, k, n = 0;

	for (i = 0; i < NOPS; i++) {
		if (ops[i].kind != OP_BURST) {
			out[n++] = ops[i];
			continue;
		}
		for (k = 0; k < 8; k++) {
			out[n] = ops[i];
			out[n].kind = OP_SMALL;
			out[n].off = ops[i].off + k * 40;
			out[n].len = 30;
			out[n++].seed = ops[i].seed + k;
		}
	}
	return n;
}

/* ------------------------------------------------------------ child */

/* the second thread's op list: its own seed, its own files */
#define SEED2 0x2f00dULL
static struct op list2[NOPS * 8];
static unsigned nlist2;

static void *thread2(void *arg)
{
	struct hdpm_fs *fs = arg;
	unsigned i;

	for (i = 0; i < nlist2; i++) {
		__atomic_store_n(&sh->op2, (int)i, __ATOMIC_SEQ_CST);
		if (fs_apply(fs, &list2[i], NFILES))
			_exit(4);
	}
	__atomic_store_n(&sh->op2, (int)nlist2, __ATOMIC_SEQ_CST);
	return NULL;
}

/* what a version 2 or 3 build leaves: that version, one journal (no
 * slot block); the mount that upgrades it runs under the sweep */
static void make_old(const char *path, struct hdpm_fs *fs,
		     struct pma_heap **heap, const struct hdpm_gc_config *cfg,
		     struct hdpm_fs **ret_fs)
{
	fs->sb->version = (uint32_t)sh->from_version;
	pma_persist(*heap, &fs->sb->version, sizeof(fs->sb->version));
	if (pma_free_from(*heap, &fs->sb->jslots_off))
		_exit(7);
	hdpm_unmount(fs);
	pma_heap_close(*heap);
	if (pma_heap_open(path, 0, heap))
		_exit(7);
	crash_sweep_arm((*heap)->map);
	if (hdpm_mount_config(*heap, HDPM_NO_GC_THREAD, cfg, ret_fs) ||
	    (*ret_fs)->sb->version != HDPM_VERSION ||
	    !(*ret_fs)->sb->jslots_off || (*ret_fs)->ntx != HDPM_JSLOTS)
		_exit(7);
}

static void workload(const char *path, uint64_t rnd)
{
	static struct op ops[NOPS], list[NOPS * 8];
	pthread_t t2;
	struct hdpm_gc_config cfg;
	struct hdpm_stats st;
	struct pma_heap *heap;
	struct hdpm_fs *fs;
	unsigned i, n;

	ops_make(rnd + sh->seed, ops);
	n = ops_expand(ops, list);
	sh->op = 0;
	sh->op2 = 0;
	if (sh->two_threads) {
		ops_make(rnd + sh->seed + SEED2, ops);
		nlist2 = ops_expand(ops, list2);
	}
	hdpm_gc_config_init(&cfg);
	cfg.min_log_bytes = 16; /* the bursts' logs are small */
	hdpm_test_itable_log2 = sh->small_itable ? 1 : 0;
	if (pma_heap_create(path, HEAP_SIZE, PMA_HEAP_FORCE, &heap) ||
	    hdpm_mount_config(heap,
			      HDPM_NO_GC_THREAD |
				      (sh->cow_only ? HDPM_COW_ONLY : 0),
			      &cfg, &fs) ||
	    hdpm_mkdir(fs, "/d", 0755) ||
	    (sh->two_threads &&
	     (hdpm_mkdir(fs, "/e", 0755) || hdpm_mkdir(fs, "/e/f", 0755))))
		_exit(7);
	if (sh->from_version)
		make_old(path, fs, &heap, &cfg, &fs);
	else
		crash_sweep_arm(heap->map);
	if (sh->two_threads && pthread_create(&t2, NULL, thread2, fs))
		_exit(7);
	for (i = 0; i < n; i++) {
		__atomic_store_n(&sh->op, (int)i, __ATOMIC_SEQ_CST);
		if (fs_apply(fs, &list[i], 0))
			_exit(4);
	}
	__atomic_store_n(&sh->op, (int)n, __ATOMIC_SEQ_CST);
	if (sh->two_threads && pthread_join(t2, NULL))
		_exit(7);
	hdpm_stats(fs, &st);
	if (sh->gc_heavy && (!st.bg_merges || !st.bg_lost))
		_exit(6);
	/* the images cover new pages written without their zero tails */
	if (!st.zero_tail_bytes)
		_exit(8);
	/* ... and the growth of the inode table */
	if (sh->small_itable &&
	    (fs->sb->ninodes <= 2 || !fs->sb->itable_more[0]))
		_exit(9);
	/* the run must publish merges and lose some */ /* the run must publish merges and lose some */
	crash_sweep_finish(sh->gc_heavy ? st.bg_merges + st.bg_lost :
					  st.gc_merges + st.bg_merges);
}

/* ------------------------------------------------------------ check */

#define CHECK(cond, ...)                                     \
	do {                                                 \
		if (!(cond)) {                               \
			snprintf(why, why_len, __VA_ARGS__); \
			goto out;                            \
		}                                            \
	} while (0)

/* 0 if the fs holds exactly the model's files */
static int fs_equals(struct hdpm_fs *fs, const struct model *m, unsigned base)
{
	static char out[FSIZE + 2 * PG];
	struct hdpm_file *file;
	struct stat st;
	unsigned f;
	ssize_t n;

	for (f = 0; f < NFILES; f++) {
		if (hdpm_stat(fs, fname(f + base), &st) !=
		    (m->exists[f] ? 0 : -ENOENT))
			return -1;
		if (!m->exists[f])
			continue;
		if ((uint64_t)st.st_size != m->size[f] ||
		    hdpm_open(fs, fname(f + base), O_RDONLY, 0, &file))
			return -1;
		n = hdpm_pread(file, out, sizeof(out), 0);
		hdpm_close(file);
		if (n != (ssize_t)m->size[f] ||
		    memcmp(out, m->data[f], (size_t)n))
			return -1;
	}
	return 0;
}

static int off_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct named {
	uint64_t *off;
	size_t n, cap;
};

static void name_block(struct named *nb, uint64_t off)
{
	if (!off)
		return;
	if (nb->n == nb->cap) {
		nb->cap = nb->cap ? nb->cap * 2 : 256;
		nb->off = realloc(nb->off, nb->cap * sizeof(*nb->off));
		if (!nb->off)
			abort();
	}
	nb->off[nb->n++] = off;
}

/* every block HDPM names: inode table, names, indexes, pages, logs */
static void collect(struct hdpm_fs *fs, struct named *nb)
{
	struct hdpm_inode *in;
	uint64_t i, p, *index;

	name_block(nb, fs->sb->itable_off);
	name_block(nb, fs->sb->jslots_off);
	for (i = 0; i < HDPM_ICHUNKS - 1; i++)
		if (fs->sb->itable_more[i])
			name_block(nb, fs->sb->itable_more[i]);
	for (i = 0; i < fs->ninodes; i++) {
		in = hdpm_inode(fs, i);
		if (!hdpm_mode(in))
			continue;
		name_block(nb, in->name_off);
		name_block(nb, in->index_off);
		index = hdpm_inode_index(fs, in);
		for (p = 0; index && p < in->index_cap; p++) {
			if (!index[p])
				continue;
			name_block(nb, index[p]);
			name_block(nb, hdpm_page_hdr(fs, index[p])->log_off);
		}
	}
}

/* live blocks by the heap's own state (as test-pmalloc-crash); the
 * first slab blocks no word in nb names go to leaked (if not NULL) */
static uint64_t heap_live_blocks(struct pma_heap *heap, const struct named *nb,
				 char *leaked, size_t leaked_len)
{
	uint64_t c, page, off, live = 0;
	struct pma_slab *slab;
	size_t used = 0;
	uint32_t i;

	for (c = 0; c < heap->nchunks; c++) {
		slab = pma_heap_slab_at(
			heap, pma_page_off(heap, c * PMA_CHUNK_PAGES));
		for (i = 0; slab && i < slab->nblocks; i++) {
			if (!pma_slab_is_live(slab, i))
				continue;
			live++;
			off = pma_slab_block_off(slab, i);
			if (leaked && used + 24 < leaked_len &&
			    !bsearch(&off, nb->off, nb->n, sizeof(*nb->off),
				     off_cmp))
				used += (size_t)snprintf(
					leaked + used, leaked_len - used,
					" 0x%llx", (unsigned long long)off);
		}
	}
	for (page = 0; page < heap->geom.npages; page++)
		live += pma_pmap_kind(heap->pmap[page]) == PMA_PMAP_EXTENT;
	return live;
}

static int ownership(struct pma_heap *heap, struct hdpm_fs *fs, char *why,
		     size_t why_len)
{
	struct named nb = { 0 };
	char leaked[128] = "";
	uint64_t live;
	size_t i;
	int rc = -1;

	collect(fs, &nb);
	qsort(nb.off, nb.n, sizeof(*nb.off), off_cmp);
	for (i = 0; i < nb.n; i++) {
		CHECK(pma_usable_size(heap, nb.off[i]) != 0,
		      "named block 0x%llx is not live",
		      (unsigned long long)nb.off[i]);
		CHECK(i == 0 || nb.off[i] != nb.off[i - 1],
		      "block 0x%llx named twice",
		      (unsigned long long)nb.off[i]);
	}
	live = heap_live_blocks(heap, &nb, leaked, sizeof(leaked));
	CHECK(live == nb.n + 1,
	      "%llu live blocks, %zu named + root (leak; unnamed:%s)",
	      (unsigned long long)live, nb.n, leaked);
	rc = 0;
out:
	free(nb.off);
	return rc;
}

/* state before (ret_a) and after (ret_b) op k of the list */
static void model_at(const struct op *list, unsigned n, unsigned k,
		     struct model *ret_a, struct model *ret_b)
{
	unsigned i;

	memset(ret_a, 0, sizeof(*ret_a));
	for (i = 0; i < k && i < n; i++)
		model_apply(ret_a, &list[i]);
	*ret_b = *ret_a;
	if (k < n)
		model_apply(ret_b, &list[k]);
}

/* which state do the files from base on show? -1 if neither */
static int state_match(struct hdpm_fs *fs, uint64_t rnd, int k, unsigned base)
{
	static struct op ops[NOPS], list[NOPS * 8];
	static struct model a, b;
	unsigned n, lo, hi, i;

	ops_make(rnd, ops);
	n = ops_expand(ops, list);
	lo = k < 0 ? 0 : (unsigned)k;
	hi = k < 0 ? n : (unsigned)k;
	for (i = lo; i <= hi; i++) {
		model_at(list, n, i, &a, &b);
		if (fs_equals(fs, &a, base) == 0 ||
		    fs_equals(fs, &b, base) == 0)
			return 0;
	}
	return -1;
}

/* "op K: kind file off len" of the run's op K, for failure messages */
static const char *op_describe(int k)
{
	static struct op ops[NOPS], list[NOPS * 8];
	static char text[96];
	unsigned n;

	ops_make(sh->seed, ops);
	n = ops_expand(ops, list);
	if (k < 0 || (unsigned)k >= n)
		return "no op";
	snprintf(text, sizeof(text), "op %d: kind %d file %u off %llu len %u",
		 k, list[k].kind, list[k].file, (unsigned long long)list[k].off,
		 list[k].len);
	return text;
}

/* the first finding of a severity fsck_findings counts */
struct fsck_first {
	enum pool_fsck_severity min;
	char text[200];
};

static int fsck_note(const struct pool_fsck_finding *f, void *arg)
{
	struct fsck_first *first = arg;

	if (f->severity >= first->min && !first->text[0])
		snprintf(first->text, sizeof(first->text), "%s: %s", f->code,
			 f->message);
	return 0;
}

/* pmactl fsck's checks of file (the heap's if heap_too, then HDPM's):
 * the findings of severity min or more, the first one in why */
static int fsck_findings(const char *file, int heap_too,
			 enum pool_fsck_severity min, const char *when,
			 char *why, size_t why_len)
{
	struct fsck_first first = { .min = min };
	struct pool_fsck_sink sink = { .fn = fsck_note, .arg = &first };
	struct pma_heap *heap;
	unsigned long n;
	int rc;

	rc = heap_too ? pma_fsck(file, &sink) : 0;
	if (rc == 0 && pma_heap_open(file, PMA_HEAP_RDONLY, &heap) == 0) {
		rc = hdpm_fsck_heap(heap, &sink);
		pma_heap_close(heap);
	}
	n = sink.counts[POOL_FSCK_ERROR] +
	    (min <= POOL_FSCK_WARNING ? sink.counts[POOL_FSCK_WARNING] : 0) +
	    (min <= POOL_FSCK_INFO ? sink.counts[POOL_FSCK_INFO] : 0);
	if (rc < 0)
		snprintf(why, why_len, "fsck %s: %s", when, pma_errormsg());
	else if (n)
		snprintf(why, why_len, "fsck %s: %lu findings (%s), %s", when,
			 n, first.text, op_describe(sh->op));
	return rc < 0 || n ? -1 : 0;
}

/* images with two or more journal slots open (parent) */
static unsigned two_open;

/* journal slots of an image (before recovery) that are not idle */
static unsigned open_slots(const char *file)
{
	const struct hdpm_jslots *js;
	struct pma_heap *heap;
	struct hdpm_super *sb;
	unsigned i, n = 0;
	uint64_t root;

	if (pma_heap_open(file, PMA_HEAP_RDONLY, &heap))
		return 0;
	if (pma_root(heap, sizeof(*sb), &root) == 0) {
		sb = pma_direct(heap, root);
		n += (sb->jstate & 0xff) != HDPM_J_IDLE;
		js = sb->version >= 4 && sb->jslots_off ?
			     pma_direct(heap, sb->jslots_off) :
			     NULL;
		for (i = 0; js && i < HDPM_JSLOTS - 1; i++)
			n += (js->slot[i].jstate & 0xff) != HDPM_J_IDLE;
	}
	pma_heap_close(heap);
	return n;
}

static int check_fs(const char *file, unsigned *ret_files, char *why,
		    size_t why_len)
{
	struct hdpm_file *f = NULL;
	struct pma_heap *heap;
	struct hdpm_fs *fs = NULL;
	char buf[64];
	struct stat st;
	int rc = -1;
	unsigned i;

	/* a crash image: nothing but what recovery finishes (the heap's
	 * crash images are test-fsck-crash's) */
	if (fsck_findings(file, 0, POOL_FSCK_ERROR, "before recovery", why,
			  why_len) < 0)
		return -1;
	if (open_slots(file) >= 2)
		two_open++;
	if (pma_heap_open(file, 0, &heap)) {
		snprintf(why, why_len, "heap open: %s", pma_errormsg());
		return -1;
	}
	CHECK(hdpm_mount(heap, HDPM_NO_GC_THREAD, &fs) == 0, "mount: %s (%s)",
	      hdpm_errormsg(), op_describe(sh->op));
	CHECK(state_match(fs, sh->seed, sh->op, 0) == 0,
	      "fs is neither before nor after %s", op_describe(sh->op));
	CHECK(!sh->two_threads ||
		      state_match(fs, sh->seed + SEED2, sh->op2, NFILES) == 0,
	      "second thread's files are neither before nor after its op %d",
	      sh->op2);
	if (ownership(heap, fs, why, why_len) < 0)
		goto out;
	*ret_files = 0;
	for (i = 0; i < (sh->two_threads ? 2 * NFILES : NFILES); i++)
		*ret_files += hdpm_stat(fs, fname(i), &st) == 0;
	/* it keeps working */
	CHECK(hdpm_open(fs, "/new", O_CREAT | O_RDWR, 0644, &f) == 0 &&
		      hdpm_pwrite(f, "0123456789", 10, 4090) == 10 &&
		      hdpm_pread(f, buf, 10, 4090) == 10 &&
		      !memcmp(buf, "0123456789", 10),
	      "fs does not work after recovery: %s", hdpm_errormsg());
	rc = 0;
out:
	hdpm_close(f);
	hdpm_unmount(fs);
	pma_heap_close(heap);
	/* recovered and closed: no finding at all */
	if (rc == 0)
		rc = fsck_findings(file, 1, POOL_FSCK_INFO, "after recovery",
				   why, why_len);
	return rc;
}

/* one journal slot of an image: its state, words, intent and records */
static void dump_slot(unsigned slot, uint64_t jstate, uint64_t alloc_slot,
		      uint64_t free_slot, const struct hdpm_intent *in,
		      const struct hdpm_rec *recs)
{
	unsigned r;

	print_message("# slot %u jstate %llu seq %llu alloc_slot 0x%llx "
		      "free_slot 0x%llx intent before 0x%llx live %u tag "
		      "0x%llx\n",
		      slot, (unsigned long long)(jstate & 0xff),
		      (unsigned long long)(jstate >> 8),
		      (unsigned long long)alloc_slot,
		      (unsigned long long)free_slot,
		      (unsigned long long)in->before, in->before_live,
		      (unsigned long long)in->tag);
	for (r = 0; jstate && r < HDPM_TX_MAX && recs[r].seq == jstate >> 8;
	     r++)
		print_message("#  rec %u kind %u word 0x%llx old 0x%llx\n", r,
			      recs[r].kind, (unsigned long long)recs[r].word,
			      (unsigned long long)recs[r].old);
}

/* the journals and the inodes of an image before recovery (read-only) */
static void dump_image(const char *file)
{
	const struct hdpm_jslots *js;
	struct pma_heap *heap;
	struct hdpm_super *sb;
	struct hdpm_inode *it;
	uint64_t root, i, p, *index;
	unsigned s;

	if (pma_heap_open(file, PMA_HEAP_RDONLY, &heap) ||
	    pma_root(heap, sizeof(*sb), &root)) {
		print_message("# %s: cannot open: %s\n", file, pma_errormsg());
		return;
	}
	sb = pma_direct(heap, root);
	dump_slot(0, sb->jstate, sb->alloc_slot, sb->free_slot, &sb->intent,
		  sb->recs);
	js = sb->version >= 4 && sb->jslots_off ?
		     pma_direct(heap, sb->jslots_off) :
		     NULL;
	for (s = 1; js && s < HDPM_JSLOTS; s++)
		if (js->slot[s - 1].jstate)
			dump_slot(s, js->slot[s - 1].jstate,
				  js->slot[s - 1].alloc_slot,
				  js->slot[s - 1].free_slot,
				  &js->slot[s - 1].intent,
				  js->slot[s - 1].recs);
	print_message("# gc state 0x%llx word 0x%llx old 0x%llx gc_slot 0x%llx "
		      "nretire %llu gc_free_slot 0x%llx\n",
		      (unsigned long long)sb->gc.state,
		      (unsigned long long)sb->gc.word,
		      (unsigned long long)sb->gc.old,
		      (unsigned long long)sb->gc_slot,
		      (unsigned long long)sb->gc.nretire,
		      (unsigned long long)sb->gc_free_slot);
	it = pma_direct(heap, sb->itable_off);
	for (i = 0; it && i < 8; i++) {
		if (!(uint32_t)it[i].mode_gen)
			continue;
		print_message("#  inode %llu at 0x%llx size %llu index 0x%llx"
			      "/%llu name 0x%llx\n",
			      (unsigned long long)i,
			      (unsigned long long)pma_offset(heap, &it[i]),
			      (unsigned long long)it[i].size,
			      (unsigned long long)it[i].index_off,
			      (unsigned long long)it[i].index_cap,
			      (unsigned long long)it[i].name_off);
		index = it[i].index_off ? pma_direct(heap, it[i].index_off) :
					  NULL;
		for (p = 0; index && p < it[i].index_cap && p < 8; p++)
			if (index[p])
				print_message(
					"#   page %llu 0x%llx (live %zu) log "
					"0x%llx\n",
					(unsigned long long)p,
					(unsigned long long)index[p],
					pma_usable_size(heap, index[p]),
					(unsigned long long)((struct hdpm_page_hdr
								      *)
								     pma_direct(
									     heap,
									     index[p]))
						->log_off);
	}
	pma_heap_close(heap);
}

static int recover_only(const char *file)
{
	struct pma_heap *heap;
	struct hdpm_fs *fs;
	int rc;

	if (pma_heap_open(file, 0, &heap))
		return 1;
	rc = hdpm_mount(heap, HDPM_NO_GC_THREAD, &fs);
	hdpm_unmount(fs);
	pma_heap_close(heap);
	return rc != 0;
}

static void workload_run(const char *path, uint64_t rnd)
{
	workload(path, rnd);
}

static const struct crash_sweep_ops hdpm_ops = {
	.name = "hdpm",
	.workload = workload_run,
	.check = check_fs,
	.recover = recover_only,
	.dump = dump_image,
	.stat_name = "files",
	.extra_name = "GC merges (inline, explicit, background; "
		      "background sweeps: published + lost)",
};

/* ------------------------------------------------------- leak reclaim */

/*
 * fsck --repair's leak reclaim (hdpm_fsck_repair: a mount, then a free of
 * every live block no word of the file system names) crashed at each of
 * its fences: every image holds /f as written, and either some of the
 * leaked blocks or none; a second repair frees the rest.
 */
#define RECLAIM_LEAKS 4
#define RECLAIM_FILE 10000

static void reclaim_fill(char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (char)(i * 7 + 3);
}

static void reclaim_workload(const char *path, uint64_t rnd)
{
	static const size_t sizes[RECLAIM_LEAKS] = { 200, 1000, 5000, 81920 };
	static char buf[RECLAIM_FILE];
	struct pma_heap *heap;
	struct hdpm_file *f;
	struct hdpm_fs *fs;
	uint64_t w;
	unsigned i;

	(void)rnd;
	reclaim_fill(buf, sizeof(buf));
	if (pma_heap_create(path, HEAP_SIZE, PMA_HEAP_FORCE, &heap) ||
	    hdpm_mount(heap, HDPM_NO_GC_THREAD, &fs) ||
	    hdpm_open(fs, "/f", O_CREAT | O_RDWR, 0644, &f) ||
	    hdpm_pwrite(f, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf) ||
	    hdpm_close(f))
		_exit(7);
	hdpm_unmount(fs);
	/* leaks: live blocks that only a DRAM word ever named */
	for (i = 0; i < RECLAIM_LEAKS; i++) {
		w = 0;
		if (pma_malloc_to(heap, sizes[i], &w) || !w)
			_exit(7);
	}
	crash_sweep_arm(heap->map);
	if (hdpm_fsck_repair(heap, 0, NULL))
		_exit(4);
	crash_sweep_finish(RECLAIM_LEAKS);
}

/* leaked blocks (hdpm-block-leaked) and errors of one fsck pass */
struct reclaim_tally {
	unsigned leaked, errors;
};

static int reclaim_finding(const struct pool_fsck_finding *f, void *arg)
{
	struct reclaim_tally *t = arg;

	if (f->severity == POOL_FSCK_ERROR)
		t->errors++;
	if (!strcmp(f->code, "hdpm-block-leaked"))
		t->leaked++;
	return 0;
}

/* the file is what the workload wrote; the heap's leaks into *t */
static int reclaim_state(const char *file, struct reclaim_tally *t, char *why,
			 size_t why_len)
{
	static char want[RECLAIM_FILE], got[RECLAIM_FILE + 1];
	struct pool_fsck_sink sink = { .fn = reclaim_finding, .arg = t };
	struct pma_heap *heap;
	struct hdpm_file *f;
	struct hdpm_fs *fs;
	ssize_t n = -1;
	int rc;

	memset(t, 0, sizeof(*t));
	reclaim_fill(want, sizeof(want));
	if (pma_heap_open(file, 0, &heap)) {
		snprintf(why, why_len, "open: %s", pma_errormsg());
		return -1;
	}
	rc = hdpm_mount(heap, HDPM_NO_GC_THREAD, &fs);
	if (rc == 0 && hdpm_open(fs, "/f", O_RDONLY, 0, &f) == 0) {
		n = hdpm_pread(f, got, sizeof(got), 0);
		(void)hdpm_close(f);
	}
	if (rc == 0)
		hdpm_unmount(fs);
	if (rc == 0)
		rc = hdpm_fsck_heap(heap, &sink);
	pma_heap_close(heap);
	if (rc || n != (ssize_t)sizeof(want) || memcmp(got, want, sizeof(want)))
		snprintf(why, why_len, "mount %d, /f read %zd bytes%s", rc, n,
			 n == (ssize_t)sizeof(want) ? ", not as written" : "");
	else if (t->errors)
		snprintf(why, why_len, "%u fsck errors", t->errors);
	else if (t->leaked > RECLAIM_LEAKS)
		snprintf(why, why_len, "%u leaks, %u made", t->leaked,
			 RECLAIM_LEAKS);
	else
		return 0;
	return -1;
}

static int reclaim_check(const char *file, unsigned *ret_leaks, char *why,
			 size_t why_len)
{
	struct reclaim_tally t;
	struct pma_heap *heap;

	if (reclaim_state(file, &t, why, why_len))
		return -1;
	*ret_leaks = t.leaked;
	/* a second repair frees what is left */
	if (pma_heap_open(file, 0, &heap)) {
		snprintf(why, why_len, "reopen: %s", pma_errormsg());
		return -1;
	}
	if (hdpm_fsck_repair(heap, 0, NULL)) {
		snprintf(why, why_len, "second repair: %s", hdpm_errormsg());
		pma_heap_close(heap);
		return -1;
	}
	pma_heap_close(heap);
	if (reclaim_state(file, &t, why, why_len))
		return -1;
	if (t.leaked) {
		snprintf(why, why_len, "%u leaks after a second repair",
			 t.leaked);
		return -1;
	}
	return 0;
}

static const struct crash_sweep_ops reclaim_ops = {
	.name = "hdpm-reclaim",
	.workload = reclaim_workload,
	.check = reclaim_check,
	.recover = recover_only,
	.stat_name = "leaks left",
	.extra_name = "leaks made",
};

static void test_reclaim(void **state)
{
	struct crash_sweep sw[] = {
		{ .name = "leak reclaim durable", .runs = 1 },
		{ .name = "leak reclaim torn",
		  .seed_base = 0x1eac0000,
		  .runs = 1 },
		{ .name = "leak reclaim recrash",
		  .seed_base = 0x1ead0000,
		  .recrash_every = 1,
		  .recrash_fences = 4,
		  .runs = 1 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(sw) / sizeof(sw[0]); i++)
		if (crash_sweep_run(&reclaim_ops, &sw[i]) < 0)
			fail_msg("%s failed", sw[i].name);
	/* the repair's frees are fenced: every one is an image */
	assert_int_equal(sw[0].images, sw[0].fences);
	assert_true(sw[0].fences >= RECLAIM_LEAKS);
	/* an image before any free holds every leak */
	assert_int_equal(sw[0].stat_max, RECLAIM_LEAKS);
}

/* ------------------------------------------------------------ sweeps */

struct hdpm_sweep {
	struct crash_sweep sw;
	int cow_only;
	int gc_heavy;
	int from_version;
	int small_itable;
	int two_threads;
};

static struct hdpm_sweep sweeps[] = {
	{ .sw = { .name = "durable", .runs = 2 } },
	{ .sw = { .name = "torn", .seed_base = 0x5eed0000, .runs = 2 } },
	{ .sw = { .name = "recrash",
		  .seed_base = 0xabcd0000,
		  .recrash_every = 3,
		  .recrash_fences = 6,
		  .runs = 1 } },
	{ .sw = { .name = "cow-only durable", .runs = 1 }, .cow_only = 1 },
	{ .sw = { .name = "byte torn",
		  .seed_base = 0xb17e0000,
		  .runs = 1,
		  .byte = 1 } },
	{ .sw = { .name = "background gc durable", .runs = 2 }, .gc_heavy = 1 },
	{ .sw = { .name = "background gc torn",
		  .seed_base = 0x6c6c0000,
		  .runs = 1 },
	  .gc_heavy = 1 },
	{ .sw = { .name = "background gc recrash",
		  .seed_base = 0x6c6d0000,
		  .recrash_every = 2,
		  .recrash_fences = 8,
		  .runs = 1 },
	  .gc_heavy = 1 },
	{ .sw = { .name = "upgrade from version 2", .runs = 1 },
	  .from_version = 2 },
	{ .sw = { .name = "inode table growth",
		  .seed_base = 0x17ab0000,
		  .runs = 2 },
	  .small_itable = 1 },
	{ .sw = { .name = "inode table growth recrash",
		  .seed_base = 0x17ac0000,
		  .recrash_every = 2,
		  .recrash_fences = 6,
		  .runs = 1 },
	  .small_itable = 1 },
	{ .sw = { .name = "upgrade from version 3", .runs = 1 },
	  .from_version = 3 },
	{ .sw = { .name = "two threads durable", .runs = 2 },
	  .two_threads = 1 },
	{ .sw = { .name = "two threads torn",
		  .seed_base = 0x7e0a0000,
		  .runs = 1 },
	  .two_threads = 1 },
	{ .sw = { .name = "two threads recrash",
		  .seed_base = 0x7e0b0000,
		  .recrash_every = 3,
		  .recrash_fences = 8,
		  .runs = 1 },
	  .two_threads = 1 },
};

static void test_sweep(void **state)
{
	struct hdpm_sweep hs = *(const struct hdpm_sweep *)*state;
	struct crash_sweep *sw = &hs.sw;
	const char *env = getenv("HDPM_CRASH_RUNS");
	unsigned r,
		runs = env && atoi(env) > 0 ? (unsigned)atoi(env) : sw->runs;

	sh->cow_only = hs.cow_only;
	sh->gc_heavy = hs.gc_heavy;
	sh->from_version = hs.from_version;
	sh->small_itable = hs.small_itable;
	sh->two_threads = hs.two_threads;
	two_open = 0;
	/* one run at a time: the checker regenerates the run's op list */
	sw->runs = 1;
	for (r = 0; r < runs; r++) {
		sh->seed = r * 0x1000193ULL + (uint64_t)hs.cow_only;
		if (crash_sweep_run(&hdpm_ops, sw) < 0)
			fail_msg("%s failed", sw->name);
	}
	assert_int_equal(sw->images, sw->fences);
	if (hs.two_threads) {
		/* the crashes hit two operations in two slots */
		print_message("# %s: %u images with two journal slots open\n",
			      sw->name, two_open);
		assert_true(two_open > 0);
	}
	assert_true(sw->fences > NOPS * 4);
	if (!hs.cow_only)
		assert_true(sw->extra > 0); /* the images cover inline GC */
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		{ "test_sweep_durable", test_sweep, NULL, NULL, &sweeps[0] },
		{ "test_sweep_torn", test_sweep, NULL, NULL, &sweeps[1] },
		{ "test_sweep_recrash", test_sweep, NULL, NULL, &sweeps[2] },
		{ "test_sweep_cow_only", test_sweep, NULL, NULL, &sweeps[3] },
		{ "test_sweep_byte_torn", test_sweep, NULL, NULL, &sweeps[4] },
		{ "test_sweep_bg_gc", test_sweep, NULL, NULL, &sweeps[5] },
		{ "test_sweep_bg_gc_torn", test_sweep, NULL, NULL, &sweeps[6] },
		{ "test_sweep_bg_gc_recrash", test_sweep, NULL, NULL,
		  &sweeps[7] },
		{ "test_sweep_upgrade_v2", test_sweep, NULL, NULL, &sweeps[8] },
		{ "test_sweep_itable_grow", test_sweep, NULL, NULL,
		  &sweeps[9] },
		{ "test_sweep_itable_grow_recrash", test_sweep, NULL, NULL,
		  &sweeps[10] },
		{ "test_sweep_upgrade_v3", test_sweep, NULL, NULL,
		  &sweeps[11] },
		{ "test_sweep_two_threads", test_sweep, NULL, NULL,
		  &sweeps[12] },
		{ "test_sweep_two_threads_torn", test_sweep, NULL, NULL,
		  &sweeps[13] },
		{ "test_sweep_two_threads_recrash", test_sweep, NULL, NULL,
		  &sweeps[14] },
		{ "test_reclaim", test_reclaim, NULL, NULL, NULL },
	};
	int rc;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	sh->op = -1; /* replay: try every op */
	sh->op2 = -1;
	rc = crash_sweep_main(&hdpm_ops, argc, argv);
	if (rc >= 0)
		return rc;
	if (getenv("HDPM_CRASH_FILTER"))
		cmocka_set_test_filter(getenv("HDPM_CRASH_FILTER"));
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	crash_sweep_cleanup();
	return rc;
}
