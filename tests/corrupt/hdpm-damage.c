/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpm-damage -- make an HDPM file system in a pool's heap and damage
 * one of its structures in one specific way, for tests/cli/fsck-hdpm.bats
 * (the HDPM part of fsck's corruption suite: each damage must give its
 * exact finding code).
 *
 *   hdpm-damage make POOL    format the heap of POOL (a pool without
 *                            one) and make /d, /d/e, /f (two full pages,
 *                            then 100 B at 10 and 50 B at 60 in page 0,
 *                            64 B at 4104 in page 1: logs of 2 and 1
 *                            entries) and /g (one page, 32 B at 0)
 *   hdpm-damage KIND POOL    damage it (KIND: see damages[] below)
 *   hdpm-damage work POOL    mount it and write /f, /g and a new file /w
 *                            (each write read back): it works
 *   hdpm-damage crash-tx POOL
 *                            a child crashes inside a journaled operation
 *                            (/f's size journaled and changed: ACTIVE)
 *   hdpm-damage crash-tx-record POOL
 *                            crash-tx, its journal record naming a
 *                            misaligned word (resealed)
 *   hdpm-damage crash-gc POOL
 *                            a child crashes inside a background merge,
 *                            between its build and its publication
 *
 * The damage is written through a writable mount (the library's own
 * recovery runs first), with pma_persist, and the pool is closed.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hdpm/internal.h"
#include "pmalloc.h"
#include "util/crc.h"

#define PG 4096

static void die(const char *what)
{
	fprintf(stderr, "hdpm-damage: %s: %s\n", what, hdpm_errormsg());
	exit(99);
}

static void put_file(struct hdpm_fs *fs, const char *path, size_t full,
		     const unsigned (*small)[2], unsigned nsmall)
{
	static char buf[2 * PG];
	struct hdpm_file *f = NULL;
	unsigned i;

	memset(buf, 'x', sizeof(buf));
	if (hdpm_open(fs, path, O_CREAT | O_RDWR, 0644, &f) < 0)
		die(path);
	if (hdpm_pwrite(f, buf, full, 0) != (ssize_t)full)
		die("pwrite");
	for (i = 0; i < nsmall; i++)
		if (hdpm_pwrite(f, buf, small[i][1], small[i][0]) !=
		    (ssize_t)small[i][1])
			die("pwrite");
	hdpm_close(f);
}

static void make(struct hdpm_fs *fs)
{
	static const unsigned f_small[][2] = { { 10, 100 },
					       { 60, 50 },
					       { PG + 8, 64 } };
	static const unsigned g_small[][2] = { { 0, 32 } };

	if (hdpm_mkdir(fs, "/d", 0755) < 0 || hdpm_mkdir(fs, "/d/e", 0755) < 0)
		die("mkdir");
	put_file(fs, "/f", 2 * PG, f_small, 3);
	put_file(fs, "/g", PG, g_small, 1);
}

/* len bytes of c at off of path (created if need be), read back */
static void write_check(struct hdpm_fs *fs, const char *path, char c,
			size_t len, uint64_t off)
{
	static char buf[3 * PG], got[3 * PG];
	struct hdpm_file *f = NULL;

	memset(buf, c, len);
	if (hdpm_open(fs, path, O_CREAT | O_RDWR, 0644, &f) < 0)
		die(path);
	if (hdpm_pwrite(f, buf, len, (off_t)off) != (ssize_t)len ||
	    hdpm_pread(f, got, len, (off_t)off) != (ssize_t)len)
		die("pwrite or pread");
	if (memcmp(buf, got, len)) {
		fprintf(stderr, "hdpm-damage: %s reads other bytes\n", path);
		exit(99);
	}
	hdpm_close(f);
}

/* the file system works: small writes to /f and /g (page logs), a new
 * file /w of three pages, each read back */
static void work(struct hdpm_fs *fs)
{
	write_check(fs, "/f", 'y', 200, 300);
	write_check(fs, "/f", 'y', 16, PG + 100);
	write_check(fs, "/g", 'y', 100, 1000);
	write_check(fs, "/w", 'w', 3 * PG, 0);
	write_check(fs, "/w", 'v', 40, 2 * PG + 8);
}

/* ------------------------------------------------------------ damage */

static struct hdpm_inode *inode_of(struct hdpm_fs *fs, const char *path,
				   uint64_t *ret_ino)
{
	uint64_t ino;

	if (hdpm_lookup(fs, path, &ino) < 0)
		die(path);
	if (ret_ino)
		*ret_ino = ino;
	return hdpm_inode(fs, ino);
}

static void set(struct hdpm_fs *fs, void *word, uint64_t value)
{
	*(uint64_t *)word = value;
	pma_persist(fs->heap, word, sizeof(uint64_t));
}

static uint64_t *index_of(struct hdpm_fs *fs, const char *path)
{
	return hdpm_direct(fs, inode_of(fs, path, NULL)->index_off);
}

/* the first (or last) log entry of page p of /f */
static struct hdpm_log_ent *entry(struct hdpm_fs *fs, unsigned p, int last)
{
	struct hdpm_log_ent *ents[HDPM_LOG_TOTAL / HDPM_LOG_ALIGN];
	uint64_t end, page = index_of(fs, "/f")[p];
	unsigned n = hdpm_page_log_entries(fs, page, ents, &end);

	if (!n) {
		fprintf(stderr, "hdpm-damage: page %u of /f has no log\n", p);
		exit(99);
	}
	return ents[last ? n - 1 : 0];
}

static void flip_data(struct hdpm_fs *fs, struct hdpm_log_ent *e)
{
	char *data = (char *)(e + 1);

	data[0] ^= 0x01;
	pma_persist(fs->heap, data, 1);
}

/* the last entry of page 1's log (its only one): a torn tail */
static void d_log_torn(struct hdpm_fs *fs)
{
	flip_data(fs, entry(fs, 1, 1));
}
/* the first of page 0's two entries: the second is lost behind it */
static void d_log_mid(struct hdpm_fs *fs)
{
	flip_data(fs, entry(fs, 0, 0));
}
static void d_log_seq(struct hdpm_fs *fs)
{
	struct hdpm_log_ent *e = entry(fs, 1, 1);

	e->seq += 1;
	pma_persist(fs->heap, &e->seq, sizeof(e->seq));
}
static void d_log_bounds(struct hdpm_fs *fs)
{
	struct hdpm_log_ent *e = entry(fs, 1, 1);

	e->off = PG - 8; /* 64 bytes from there leave the page */
	pma_persist(fs->heap, &e->off, sizeof(e->off));
}
static void d_log_tail(struct hdpm_fs *fs)
{
	struct hdpm_page_hdr *h = hdpm_page_hdr(fs, index_of(fs, "/f")[1]);

	set(fs, &h->log_tail, 17);
}
static void d_page_shared(struct hdpm_fs *fs)
{
	set(fs, &index_of(fs, "/g")[0], index_of(fs, "/f")[0]);
}
/* /g's page 0 names a block freed in the allocator */
static void d_page_free(struct hdpm_fs *fs)
{
	uint64_t scratch = 0, off;

	if (pma_malloc_to(fs->heap, HDPM_PAGE_OBJ_SIZE, &scratch) < 0)
		die("malloc");
	off = scratch;
	if (pma_free_from(fs->heap, &scratch) < 0)
		die("free");
	set(fs, &index_of(fs, "/g")[0], off);
}
/* a small block and an extent allocated and named by nothing (the
 * offsets printed, one a line) */
static void d_leak(struct hdpm_fs *fs)
{
	uint64_t a = 0, b = 0;

	if (pma_malloc_to(fs->heap, 200, &a) < 0 ||
	    pma_malloc_to(fs->heap, 20 * PG, &b) < 0)
		die("malloc");
	printf("0x%llx\n0x%llx\n", (unsigned long long)a,
	       (unsigned long long)b);
}
static void d_mode(struct hdpm_fs *fs)
{
	struct hdpm_inode *in = inode_of(fs, "/g", NULL);

	set(fs, &in->mode_gen, (in->mode_gen >> 32 << 32) | S_IFLNK | 0777);
}
/* /d renamed "g" behind the library's back: two "g" in "/" */
static void d_dup_name(struct hdpm_fs *fs)
{
	char *name = hdpm_direct(fs, inode_of(fs, "/d", NULL)->name_off);

	name[0] = 'g';
	pma_persist(fs->heap, name, 1);
}
static void d_bad_name(struct hdpm_fs *fs)
{
	char *name = hdpm_direct(fs, inode_of(fs, "/g", NULL)->name_off);

	name[0] = '/';
	pma_persist(fs->heap, name, 1);
}
static void d_loop(struct hdpm_fs *fs)
{
	uint64_t e;

	inode_of(fs, "/d/e", &e);
	set(fs, &inode_of(fs, "/d", NULL)->parent, e);
}
static void d_parent(struct hdpm_fs *fs)
{
	uint64_t f;

	inode_of(fs, "/f", &f);
	set(fs, &inode_of(fs, "/g", NULL)->parent, f);
}
static void d_journal_state(struct hdpm_fs *fs)
{
	set(fs, &fs->sb->jstate, (fs->sb->jstate >> 8 << 8) | 9);
}
static void d_past_size(struct hdpm_fs *fs)
{
	set(fs, &inode_of(fs, "/f", NULL)->size, 100);
}
static void d_itable(struct hdpm_fs *fs)
{
	set(fs, &fs->sb->ninodes, fs->sb->ninodes * 4);
}
static void d_version(struct hdpm_fs *fs)
{
	fs->sb->version = 99;
	pma_persist(fs->heap, &fs->sb->version, sizeof(fs->sb->version));
}
/* the magic zeroed: a mount would take it for a format that crashed
 * and wipe the files, if it did not find them in the table */
static void d_magic(struct hdpm_fs *fs)
{
	memset(fs->sb->magic, 0, sizeof(fs->sb->magic));
	pma_persist(fs->heap, fs->sb->magic, sizeof(fs->sb->magic));
}
static void d_free_blocks(struct hdpm_fs *fs)
{
	struct hdpm_inode *in = inode_of(fs, "/g", NULL);

	set(fs, &in->mode_gen, in->mode_gen >> 32 << 32);
}
static void d_gc_journal(struct hdpm_fs *fs)
{
	set(fs, &fs->sb->gc.nretire, HDPM_GC_BATCH_MAX + 1);
}
static void d_log_chunk(struct hdpm_fs *fs)
{
	struct hdpm_page_hdr *h = hdpm_page_hdr(fs, index_of(fs, "/g")[0]);

	set(fs, &h->log_off, index_of(fs, "/g")[0] + 64);
}

/* /g's page index of more entries than a file can have */
static void d_index(struct hdpm_fs *fs)
{
	set(fs, &inode_of(fs, "/g", NULL)->index_cap, HDPM_MAX_PAGES + 1);
}
/* /g's page 0 is /f's page index: a live block, too small for a page */
static void d_page_invalid(struct hdpm_fs *fs)
{
	set(fs, &index_of(fs, "/g")[0], inode_of(fs, "/f", NULL)->index_off);
}
static void d_zero_tail(struct hdpm_fs *fs)
{
	struct hdpm_page_hdr *h = hdpm_page_hdr(fs, index_of(fs, "/g")[0]);

	set(fs, &h->zero_tail, 65);
}
/* the journal slots' block pointer one line into that block */
static void d_journal_slots(struct hdpm_fs *fs)
{
	set(fs, &fs->sb->jslots_off, fs->sb->jslots_off + 64);
}

/* ------------------------------------------------------------ crashes */

static void crash_tx(struct hdpm_fs *fs)
{
	struct hdpm_inode *in = inode_of(fs, "/f", NULL);
	struct hdpm_tx *tx = hdpm_tx_begin(fs);

	if (hdpm_tx_log(tx, HDPM_REC_WORD, &in->size) < 0)
		die("journal");
	hdpm_tx_set(fs, &in->size, in->size + 3 * PG);
	_exit(0); /* a crash: the operation never commits */
}

/* crash-tx whose journal record names a misaligned word, resealed */
/* a new file written, then a crash with the heap's logs unretired: the
 * allocations and frees of its operations are in the logs' windows */
static void crash_write(struct hdpm_fs *fs)
{
	put_file(fs, "/n", 2 * PG, NULL, 0);
	_exit(0);
}
static void crash_tx_record(struct hdpm_fs *fs)
{
	struct hdpm_inode *in = inode_of(fs, "/f", NULL);
	struct hdpm_tx *tx = hdpm_tx_begin(fs);
	struct hdpm_rec *r = &tx->recs[0];

	if (hdpm_tx_log(tx, HDPM_REC_WORD, &in->size) < 0)
		die("journal");
	r->word += 4;
	r->crc = 0;
	r->crc = util_crc32c(0, r, sizeof(*r));
	pma_persist(fs->heap, r, sizeof(*r));
	_exit(0); /* a crash: the operation never commits */
}

static void crash_now(struct hdpm_fs *fs, void *arg)
{
	(void)fs;
	(void)arg;
	_exit(0);
}

static void crash_gc(struct hdpm_fs *fs)
{
	fs->gc.race_hook = crash_now;
	if (hdpm_gc(fs, HDPM_GC_BACKGROUND_STEP | HDPM_GC_FORCE) < 0)
		die("gc");
	fputs("hdpm-damage: the background step merged nothing\n", stderr);
	_exit(3);
}

/* run fn in a child on a fresh writable mount; the child crashes */
static int crash(const char *path, void (*fn)(struct hdpm_fs *fs))
{
	struct hdpm_gc_config cfg;
	struct pma_heap *heap;
	struct hdpm_fs *fs;
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		hdpm_gc_config_init(&cfg);
		cfg.min_log_bytes = 16; /* /f's logs are merged too */
		if (pma_heap_open(path, 0, &heap) < 0 ||
		    hdpm_mount_config(heap, HDPM_NO_GC_THREAD, &cfg, &fs) < 0)
			_exit(2);
		fn(fs);
		_exit(4);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		fprintf(stderr, "hdpm-damage: the crashing child failed\n");
		return 99;
	}
	return 0;
}

static const struct damage {
	const char *name;
	void (*fn)(struct hdpm_fs *fs);
} damages[] = {
	{ "log-torn", d_log_torn },
	{ "log-mid", d_log_mid },
	{ "log-seq", d_log_seq },
	{ "log-bounds", d_log_bounds },
	{ "log-tail", d_log_tail },
	{ "page-shared", d_page_shared },
	{ "page-free", d_page_free },
	{ "mode", d_mode },
	{ "dup-name", d_dup_name },
	{ "bad-name", d_bad_name },
	{ "loop", d_loop },
	{ "parent", d_parent },
	{ "journal-state", d_journal_state },
	{ "past-size", d_past_size },
	{ "itable", d_itable },
	{ "version", d_version },
	{ "magic", d_magic },
	{ "free-blocks", d_free_blocks },
	{ "gc-journal", d_gc_journal },
	{ "log-chunk", d_log_chunk },
	{ "leak", d_leak },
	{ "index", d_index },
	{ "page-invalid", d_page_invalid },
	{ "zero-tail", d_zero_tail },
	{ "journal-slots", d_journal_slots },
};
#define NDAMAGES (sizeof(damages) / sizeof(damages[0]))

int main(int argc, char **argv)
{
	const struct damage *d = NULL;
	struct pma_heap *heap;
	struct hdpm_fs *fs;
	size_t i;

	if (argc != 3) {
		fputs("usage: hdpm-damage make|work|KIND|crash-tx|"
		      "crash-tx-record|crash-write|crash-gc POOL\n",
		      stderr);
		return 2;
	}
	if (!strcmp(argv[1], "crash-tx"))
		return crash(argv[2], crash_tx);
	if (!strcmp(argv[1], "crash-write"))
		return crash(argv[2], crash_write);
	if (!strcmp(argv[1], "crash-tx-record"))
		return crash(argv[2], crash_tx_record);
	if (!strcmp(argv[1], "crash-gc"))
		return crash(argv[2], crash_gc);
	for (i = 0; i < NDAMAGES; i++)
		if (!strcmp(argv[1], damages[i].name))
			d = &damages[i];
	if (!d && strcmp(argv[1], "make") && strcmp(argv[1], "work")) {
		fprintf(stderr, "hdpm-damage: unknown damage '%s'\n", argv[1]);
		return 2;
	}
	if (pma_heap_open(argv[2], d || argv[1][0] == 'w' ? 0 : PMA_HEAP_FORMAT,
			  &heap) < 0) {
		fprintf(stderr, "hdpm-damage: %s\n", pma_errormsg());
		return 99;
	}
	if (hdpm_mount(heap, HDPM_NO_GC_THREAD, &fs) < 0)
		die("mount");
	if (d)
		d->fn(fs);
	else if (!strcmp(argv[1], "work"))
		work(fs);
	else
		make(fs);
	hdpm_unmount(fs);
	pma_heap_close(heap);
	return 0;
}
