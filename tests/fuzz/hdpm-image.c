/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpm-image (heap-image.h, setup_hdpm): the crashed image of a heap
 * holding an HDPM file system, for fuzz-fsck. A clean part: directories
 * /d and /d/e, files /f (two full pages, a CoW rewrite of most of page
 * 1, small writes in both pages: page logs), /g (one page and a log
 * entry) and /h (a hole, then one page); then a child appends to /g's
 * log, truncates /h and crashes inside a journaled operation (/f's size
 * journaled and changed: the journal is ACTIVE, the allocator's logs
 * hold ops). Every live block of the heap is remembered (fxh.blk[]):
 * an input patches them by number.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heap-image.h"
#include "hdpm.h"
#include "hdpm/internal.h"
#include "pmalloc.h"
#include "../lib/test-cfg.h"

#define PG 4096

static void hdie(const char *what)
{
	fprintf(stderr, "fuzz-fsck: HDPM image: %s: %s\n", what,
		hdpm_errormsg());
	abort();
}

/* write len bytes of c at off of path (created) */
static int put(struct hdpm_fs *fs, const char *path, size_t len, uint64_t off,
	       int c)
{
	static char buf[2 * PG];
	struct hdpm_file *f = NULL;
	ssize_t n;

	memset(buf, c, len);
	if (hdpm_open(fs, path, O_CREAT | O_RDWR, 0644, &f) < 0)
		return -1;
	n = hdpm_pwrite(f, buf, len, off);
	hdpm_close(f);
	return n == (ssize_t)len ? 0 : -1;
}

/* every operation takes journal slot 1: the others are held (a slot is
 * picked by a hash of pthread_self(), which ASLR changes: the image
 * would differ from run to run) */
static void pin_slot(struct hdpm_fs *fs, int hold)
{
	unsigned s;

	for (s = 0; s < fs->ntx; s++)
		if (s != 1 % fs->ntx && hold)
			pthread_mutex_lock(&fs->tx[s].lock);
		else if (s != 1 % fs->ntx)
			pthread_mutex_unlock(&fs->tx[s].lock);
}

static void make(struct hdpm_fs *fs)
{
	if (hdpm_mkdir(fs, "/d", 0755) < 0 || hdpm_mkdir(fs, "/d/e", 0755) < 0)
		hdie("mkdir");
	if (put(fs, "/f", 2 * PG, 0, 'a') < 0 ||
	    put(fs, "/f", 3000, PG + 500, 'b') < 0 || /* CoW */
	    put(fs, "/f", 100, 10, 'c') < 0 || put(fs, "/f", 50, 60, 'd') < 0 ||
	    put(fs, "/f", 64, PG + 8, 'e') < 0 ||
	    put(fs, "/g", PG, 0, 'g') < 0 || put(fs, "/g", 32, 0, 'h') < 0 ||
	    put(fs, "/h", PG, 3 * PG, 'i') < 0)
		hdie("write");
}

/* the child: a log append, a truncate, then a crash inside a journaled
 * operation (hdpm-damage crash-tx does the same) */
static void crash(const char *path)
{
	struct hdpm_inode *in;
	struct hdpm_file *f = NULL;
	struct pma_heap *heap;
	struct hdpm_fs *fs;
	struct hdpm_tx *tx;
	uint64_t ino;

	if (test_heap_open(path, 0, &heap) < 0 ||
	    hdpm_mount(heap, HDPM_NO_GC_THREAD, &fs) < 0)
		child_fail(2, "open, mount (HDPM)");
	pin_slot(fs, 1);
	if (put(fs, "/g", 40, 100, 'j') < 0 ||
	    hdpm_open(fs, "/h", O_RDWR, 0, &f) < 0 ||
	    hdpm_ftruncate(f, PG + 10) < 0)
		child_fail(3, "write, truncate (HDPM)");
	hdpm_close(f);
	if (hdpm_lookup(fs, "/f", &ino) < 0)
		child_fail(4, "lookup (HDPM)");
	in = hdpm_inode(fs, ino);
	tx = hdpm_tx_begin(fs);
	if (hdpm_tx_log(tx, HDPM_REC_WORD, &in->size) < 0)
		child_fail(5, "journal (HDPM)");
	hdpm_tx_set(fs, &in->size, in->size + 3 * PG);
	_exit(0); /* a crash: the operation never commits */
}

static int block(uint64_t off, uint64_t size, void *arg)
{
	struct heap_image *im = arg;

	if (im->nblk < MAX_BLOCKS) {
		im->blk[im->nblk] = pool_off_byte(off);
		im->blk_size[im->nblk++] = size;
	}
	return 0;
}

void setup_hdpm(uint64_t size)
{
	struct pma_heap *heap;
	struct hdpm_fs *fs;
	char name[4096];
	unsigned i;
	pid_t pid;

	image_name(name, sizeof(name));
	test_cfg.sum_shift = PMA_SUM_SHIFT_MIN;
	if (test_heap_create(name, size, PMA_HEAP_FORCE, &heap) < 0)
		die("create (HDPM)");
	if (hdpm_mount(heap, HDPM_NO_GC_THREAD, &fs) < 0)
		hdie("mount");
	pin_slot(fs, 1);
	make(fs);
	pin_slot(fs, 0);
	hdpm_unmount(fs);
	pma_heap_close(heap);
	pid = fork();
	if (pid == 0)
		crash(name);
	child_wait(pid, "crash child (HDPM)");
	image_hold(name, &fxh, size);
	image_survey(&fxh, 1);
	if (pma_heap_open(fxh.path, PMA_HEAP_RDONLY, &heap) < 0 ||
	    pma_block_foreach(heap, block, &fxh) < 0)
		die("the HDPM image's blocks");
	pma_heap_close(heap);
	for (i = 0; getenv("FUZZ_HEAP_VERBOSE") && i < fxh.nblk; i++)
		fprintf(stderr,
			"fuzz-fsck: HDPM image: block %u at 0x%llx, %llu B\n",
			i, (unsigned long long)fxh.blk[i],
			(unsigned long long)fxh.blk_size[i]);
}
