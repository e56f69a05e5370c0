/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-hdpm: libhdpm's public API. Every call with good and bad input
 * (the right negative errno, never a crash), the write path choices
 * (log, CoW, CoW-only), inline and explicit GC, truncate, the namespace,
 * a randomized model test against a DRAM reference of every file (with
 * remounts in between, both modes), and data kept across remounts.
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
#include <unistd.h>

#include <cmocka.h>

#include "hdpm-env.h"
#include "hdpm.h"
#include "pmalloc.h"

#define HEAP_SIZE (64ULL << 20)
#define PG 4096

static int setup_flags(void **state, unsigned flags)
{
	return hdpm_env_setup(state, "test-hdpm", HEAP_SIZE, flags, 1);
}

static int setup(void **state)
{
	return setup_flags(state, HDPM_HYBRID);
}

static int setup_cow(void **state)
{
	return setup_flags(state, HDPM_COW_ONLY);
}

static struct hdpm_file *xopen(struct hdpm_env *e, const char *path, int oflags)
{
	struct hdpm_file *f = NULL;

	assert_int_equal(hdpm_open(e->fs, path, oflags, 0644, &f), 0);
	return f;
}

static void xwrite(struct hdpm_file *f, const void *buf, size_t len,
		   uint64_t off)
{
	assert_int_equal(hdpm_pwrite(f, buf, len, off), (ssize_t)len);
}

static void fill(char *buf, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (char)(seed * 31 + i * 7 + (i >> 8));
}

/* ------------------------------------------------------------ tests */

static void test_mount_args(void **state)
{
	struct hdpm_env *e = *state;
	struct hdpm_fs *fs = NULL;

	assert_int_equal(hdpm_mount(NULL, 0, &fs), -EINVAL);
	assert_int_equal(hdpm_mount(e->heap, 0, NULL), -EINVAL);
	assert_int_equal(hdpm_mount(e->heap, 1 << 5, &fs), -EINVAL);
	assert_null(fs);
	assert_true(strlen(hdpm_errormsg()) > 0);
	hdpm_unmount(NULL);
	assert_int_equal(hdpm_close(NULL), 0);
}

static void test_mount_foreign_root(void **state)
{
	struct hdpm_env *e = *state;
	char path[96];
	struct pma_heap *heap;
	struct hdpm_fs *fs;
	uint64_t root;
	int fd;

	(void)e;
	snprintf(path, sizeof(path), "/dev/shm/test-hdpm-root.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(pma_heap_create(path, 8 << 20, PMA_HEAP_FORCE, &heap),
			 0);
	/* a root that is not an HDPM superblock: too small, then garbage */
	assert_int_equal(pma_root(heap, 64, &root), 0);
	assert_int_equal(hdpm_mount(heap, 0, &fs), -EINVAL);
	pma_heap_close(heap);
	assert_int_equal(pma_heap_create(path, 8 << 20, PMA_HEAP_FORCE, &heap),
			 0);
	assert_int_equal(pma_root(heap, 16384, &root), 0);
	memset(pma_direct(heap, root), 0x5a, 64);
	assert_int_equal(hdpm_mount(heap, 0, &fs), -EINVAL);
	pma_heap_close(heap);
	unlink(path);
}

static void test_open_errors(void **state)
{
	struct hdpm_env *e = *state;
	struct hdpm_file *f = NULL;
	char longname[300];

	memset(longname, 'x', sizeof(longname));
	longname[0] = '/';
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(hdpm_open(NULL, "/a", O_RDONLY, 0, &f), -EINVAL);
	assert_int_equal(hdpm_open(e->fs, "/a", O_RDONLY, 0, NULL), -EINVAL);
	assert_int_equal(hdpm_open(e->fs, NULL, O_RDONLY, 0, &f), -EINVAL);
	assert_int_equal(hdpm_open(e->fs, "a", O_RDONLY, 0, &f), -EINVAL);
	assert_int_equal(hdpm_open(e->fs, "", O_RDONLY, 0, &f), -EINVAL);
	assert_int_equal(hdpm_open(e->fs, "/a", O_ACCMODE, 0, &f), -EINVAL);
	assert_int_equal(hdpm_open(e->fs, "/a", O_RDONLY, 0, &f), -ENOENT);
	assert_int_equal(hdpm_open(e->fs, "/", O_RDONLY, 0, &f), -EISDIR);
	assert_int_equal(hdpm_open(e->fs, "/x/../a", O_CREAT | O_RDWR, 0, &f),
			 -EINVAL);
	assert_int_equal(hdpm_open(e->fs, longname, O_CREAT | O_RDWR, 0, &f),
			 -ENAMETOOLONG);
	assert_int_equal(hdpm_open(e->fs, "/no/a", O_CREAT | O_RDWR, 0, &f),
			 -ENOENT);
	f = xopen(e, "/a", O_CREAT | O_EXCL | O_RDWR);
	assert_int_equal(hdpm_close(f), 0);
	assert_int_equal(hdpm_open(e->fs, "/a", O_CREAT | O_EXCL | O_RDWR, 0,
				   &f),
			 -EEXIST);
	assert_int_equal(hdpm_open(e->fs, "/a/b", O_CREAT | O_RDWR, 0, &f),
			 -ENOTDIR);
	assert_int_equal(hdpm_mkdir(e->fs, "/d", 0755), 0);
	assert_int_equal(hdpm_open(e->fs, "/d", O_RDWR, 0, &f), -EISDIR);
	/* repeated slashes are one separator */
	f = xopen(e, "//d///f", O_CREAT | O_RDWR);
	hdpm_close(f);
	f = xopen(e, "/d/f", O_RDWR);
	hdpm_close(f);
}

static void test_rw_errors(void **state)
{
	struct hdpm_env *e = *state;
	struct hdpm_file *r, *w;
	char buf[16] = "hello";

	w = xopen(e, "/f", O_CREAT | O_WRONLY);
	r = xopen(e, "/f", O_RDONLY);
	assert_int_equal(hdpm_pwrite(NULL, buf, 5, 0), -EINVAL);
	assert_int_equal(hdpm_pwrite(w, NULL, 5, 0), -EINVAL);
	assert_int_equal(hdpm_pread(NULL, buf, 5, 0), -EINVAL);
	assert_int_equal(hdpm_pwrite(r, buf, 5, 0), -EBADF);
	assert_int_equal(hdpm_pread(w, buf, 5, 0), -EBADF);
	assert_int_equal(hdpm_ftruncate(r, 0), -EBADF);
	assert_int_equal(hdpm_ftruncate(NULL, 0), -EINVAL);
	assert_int_equal(hdpm_pwrite(w, buf, 5, UINT64_MAX - 2), -EFBIG);
	assert_int_equal(hdpm_ftruncate(w, UINT64_MAX), -EFBIG);
	assert_int_equal(hdpm_pwrite(w, buf, 0, 0), 0);
	xwrite(w, buf, 5, 0);
	assert_int_equal(hdpm_pread(r, buf, sizeof(buf), 0), 5);
	assert_int_equal(hdpm_pread(r, buf, sizeof(buf), 5), 0);
	assert_int_equal(hdpm_pread(r, buf, sizeof(buf), 1000), 0);
	/* an unlinked file's handles are stale */
	assert_int_equal(hdpm_unlink(e->fs, "/f"), 0);
	assert_int_equal(hdpm_pread(r, buf, 5, 0), -ESTALE);
	assert_int_equal(hdpm_pwrite(w, buf, 5, 0), -ESTALE);
	assert_int_equal(hdpm_ftruncate(w, 0), -ESTALE);
	hdpm_close(r);
	hdpm_close(w);
}

static void test_write_paths(void **state)
{
	struct hdpm_env *e = *state;
	struct hdpm_file *f = xopen(e, "/f", O_CREAT | O_RDWR);
	char page[2 * PG], out[2 * PG], small[64];
	struct hdpm_stats st0, st1;

	fill(page, sizeof(page), 1);
	hdpm_stats(e->fs, &st0);
	xwrite(f, page, PG, 0); /* full page: CoW */
	hdpm_stats(e->fs, &st1);
	assert_int_equal(st1.cow_pages, st0.cow_pages + 1);
	assert_int_equal(st1.log_appends, st0.log_appends);
	fill(small, sizeof(small), 2);
	xwrite(f, small, sizeof(small), 100); /* small: the log */
	memcpy(page + 100, small, sizeof(small));
	hdpm_stats(e->fs, &st0);
	assert_int_equal(st0.log_appends, st1.log_appends + 1);
	assert_int_equal(st0.cow_pages, st1.cow_pages);
	xwrite(f, small, 10, 3000); /* the one-append path */
	memcpy(page + 3000, small, 10);
	hdpm_stats(e->fs, &st1);
	assert_int_equal(st1.log_appends, st0.log_appends + 1);
	assert_int_equal(st1.txs, st0.txs);
	/* an unaligned write over two pages extends the file */
	xwrite(f, small, sizeof(small), PG - 20);
	memcpy(page + PG - 20, small, sizeof(small));
	memset(page + PG + 44, 0, PG - 44);
	assert_int_equal(hdpm_pread(f, out, sizeof(out), 0), PG + 44);
	assert_memory_equal(out, page, PG + 44);
	hdpm_close(f);
}

static void test_cow_only(void **state)
{
	struct hdpm_env *e = *state;
	struct hdpm_file *f = xopen(e, "/f", O_CREAT | O_RDWR);
	char buf[PG], out[PG];
	struct hdpm_stats st;
	unsigned i;

	memset(buf, 0, sizeof(buf));
	for (i = 0; i < 50; i++) {
		buf[i * 7] = (char)i;
		xwrite(f, &buf[i * 7], 1, i * 7);
	}
	hdpm_stats(e->fs, &st);
	assert_int_equal(st.log_appends, 0);
	assert_true(st.cow_pages >= 50);
	assert_int_equal(hdpm_pread(f, out, PG, 0), 50 * 7 - 6);
	assert_memory_equal(out, buf, 50 * 7 - 6);
	hdpm_close(f);
}

static void test_inline_gc(void **state)
{
	struct hdpm_env *e = *state;
	struct hdpm_file *f = xopen(e, "/f", O_CREAT | O_RDWR);
	char ref[PG], out[PG], b[100];
	struct hdpm_stats st;
	unsigned i, off;

	fill(ref, sizeof(ref), 3);
	xwrite(f, ref, PG, 0);
	for (i = 0; i < 200; i++) {
		off = (i * 977) % (PG - 100);
		fill(b, sizeof(b), i + 10);
		xwrite(f, b, 1 + i % 100, off);
		memcpy(ref + off, b, 1 + i % 100);
	}
	hdpm_stats(e->fs, &st);
	assert_true(st.gc_merges > 0);
	assert_true(st.log_appends > 100);
	assert_int_equal(hdpm_pread(f, out, PG, 0), PG);
	assert_memory_equal(out, ref, PG);
	/* an explicit pass merges what is left, the data stay */
	assert_int_equal(hdpm_gc(e->fs, 1 << 4), -EINVAL);
	assert_int_equal(hdpm_gc(e->fs, HDPM_GC_FORCE), -EINVAL);
	assert_int_equal(hdpm_gc(NULL, 0), -EINVAL);
	xwrite(f, b, 10, 5);
	memcpy(ref + 5, b, 10);
	assert_int_equal(hdpm_gc(e->fs, 0), 1);
	assert_int_equal(hdpm_gc(e->fs, 0), 0);
	assert_int_equal(hdpm_pread(f, out, PG, 0), PG);
	assert_memory_equal(out, ref, PG);
	hdpm_close(f);
}

static void test_truncate(void **state)
{
	struct hdpm_env *e = *state;
	struct hdpm_file *f = xopen(e, "/f", O_CREAT | O_RDWR);
	char buf[3 * PG], out[3 * PG];
	struct stat st;

	fill(buf, sizeof(buf), 4);
	xwrite(f, buf, sizeof(buf), 0);
	assert_int_equal(hdpm_ftruncate(f, PG + 10), 0);
	assert_int_equal(hdpm_stat(e->fs, "/f", &st), 0);
	assert_int_equal(st.st_size, PG + 10);
	assert_int_equal(st.st_blocks, 2 * 8);
	assert_int_equal(hdpm_ftruncate(f, 3 * PG), 0);
	memset(buf + PG + 10, 0, 2 * PG - 10);
	assert_int_equal(hdpm_pread(f, out, sizeof(out), 0), 3 * PG);
	assert_memory_equal(out, buf, sizeof(buf));
	hdpm_close(f);
	/* O_TRUNC empties it */
	f = xopen(e, "/f", O_RDWR | O_TRUNC);
	assert_int_equal(hdpm_stat(e->fs, "/f", &st), 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(st.st_blocks, 0);
	/* a write past the end leaves a hole of zeros */
	xwrite(f, "x", 1, 5 * PG + 3);
	assert_int_equal(hdpm_pread(f, out, PG, 4 * PG), PG);
	assert_true(out[0] == 0 && out[PG - 1] == 0);
	hdpm_close(f);
}

static int count_entry(const char *name, const struct stat *st, void *arg)
{
	unsigned *n = arg;

	(void)st;
	if (!strcmp(name, "stop"))
		return 42;
	(*n)++;
	return 0;
}

static void test_namespace(void **state)
{
	struct hdpm_env *e = *state;
	struct hdpm_file *f;
	struct stat st;
	unsigned n = 0;

	assert_int_equal(hdpm_mkdir(NULL, "/d", 0755), -EINVAL);
	assert_int_equal(hdpm_mkdir(e->fs, "/d", 0755), 0);
	assert_int_equal(hdpm_mkdir(e->fs, "/d", 0755), -EEXIST);
	assert_int_equal(hdpm_mkdir(e->fs, "/", 0755), -EEXIST);
	assert_int_equal(hdpm_mkdir(e->fs, "/x/y", 0755), -ENOENT);
	assert_int_equal(hdpm_mkdir(e->fs, "/d/e", 0700), 0);
	f = xopen(e, "/d/f", O_CREAT | O_RDWR);
	xwrite(f, "abc", 3, 0);
	hdpm_close(f);
	assert_int_equal(hdpm_stat(e->fs, "/d/f", &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_size, 3);
	assert_int_equal(hdpm_stat(e->fs, "/d/e", &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(hdpm_stat(e->fs, "/d/g", &st), -ENOENT);
	assert_int_equal(hdpm_stat(e->fs, "/d", NULL), -EINVAL);
	assert_int_equal(hdpm_stat(e->fs, "/d/f/x", &st), -ENOTDIR);
	assert_int_equal(hdpm_readdir(e->fs, "/d", count_entry, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(hdpm_readdir(e->fs, "/d/f", count_entry, &n),
			 -ENOTDIR);
	assert_int_equal(hdpm_readdir(e->fs, "/d", NULL, &n), -EINVAL);
	assert_int_equal(hdpm_mkdir(e->fs, "/d/stop", 0755), 0);
	assert_int_equal(hdpm_readdir(e->fs, "/d", count_entry, &n), 42);
	assert_int_equal(hdpm_rmdir(e->fs, "/d/stop"), 0);
	/* removal */
	assert_int_equal(hdpm_rmdir(e->fs, "/d"), -ENOTEMPTY);
	assert_int_equal(hdpm_rmdir(e->fs, "/d/f"), -ENOTDIR);
	assert_int_equal(hdpm_rmdir(e->fs, "/"), -EBUSY);
	assert_int_equal(hdpm_unlink(e->fs, "/d/e"), -EISDIR);
	assert_int_equal(hdpm_unlink(e->fs, "/d/zz"), -ENOENT);
	assert_int_equal(hdpm_unlink(NULL, "/d/zz"), -EINVAL);
	assert_int_equal(hdpm_rmdir(NULL, "/d"), -EINVAL);
	/* rename */
	assert_int_equal(hdpm_rename(NULL, "/d", "/e"), -EINVAL);
	assert_int_equal(hdpm_rename(e->fs, "/d", "/d/e/x"), -EINVAL);
	assert_int_equal(hdpm_rename(e->fs, "/", "/x"), -EBUSY);
	assert_int_equal(hdpm_rename(e->fs, "/nope", "/x"), -ENOENT);
	assert_int_equal(hdpm_rename(e->fs, "/d/f", "/d/e"), -EISDIR);
	assert_int_equal(hdpm_rename(e->fs, "/d/e", "/d/f"), -ENOTDIR);
	assert_int_equal(hdpm_rename(e->fs, "/d/f", "/d/f"), 0);
	assert_int_equal(hdpm_rename(e->fs, "/d/f", "/g"), 0);
	assert_int_equal(hdpm_stat(e->fs, "/d/f", &st), -ENOENT);
	assert_int_equal(hdpm_stat(e->fs, "/g", &st), 0);
	assert_int_equal(st.st_size, 3);
	/* over an existing file: the old one goes */
	f = xopen(e, "/h", O_CREAT | O_RDWR);
	xwrite(f, "0123456789", 10, 0);
	hdpm_close(f);
	assert_int_equal(hdpm_rename(e->fs, "/g", "/h"), 0);
	assert_int_equal(hdpm_stat(e->fs, "/h", &st), 0);
	assert_int_equal(st.st_size, 3);
	assert_int_equal(hdpm_stat(e->fs, "/g", &st), -ENOENT);
	/* a directory over an empty one, then removals */
	assert_int_equal(hdpm_mkdir(e->fs, "/empty", 0755), 0);
	assert_int_equal(hdpm_rename(e->fs, "/d", "/empty"), 0);
	assert_int_equal(hdpm_stat(e->fs, "/empty/e", &st), 0);
	assert_int_equal(hdpm_rmdir(e->fs, "/empty/e"), 0);
	assert_int_equal(hdpm_rmdir(e->fs, "/empty"), 0);
	assert_int_equal(hdpm_unlink(e->fs, "/h"), 0);
	n = 0;
	assert_int_equal(hdpm_readdir(e->fs, "/", count_entry, &n), 0);
	assert_int_equal(n, 0);
	/* it all survives a remount */
	assert_int_equal(hdpm_mkdir(e->fs, "/keep", 0755), 0);
	hdpm_env_remount(e);
	assert_int_equal(hdpm_stat(e->fs, "/keep", &st), 0);
	assert_true(S_ISDIR(st.st_mode));
}

static void test_remount_keeps_data(void **state)
{
	struct hdpm_env *e = *state;
	struct hdpm_file *f = xopen(e, "/f", O_CREAT | O_RDWR);
	char buf[3 * PG + 100], out[sizeof(buf)];

	fill(buf, sizeof(buf), 5);
	xwrite(f, buf, sizeof(buf), 0);
	xwrite(f, "small", 5, 77);
	memcpy(buf + 77, "small", 5);
	hdpm_close(f);
	hdpm_env_remount(e);
	f = xopen(e, "/f", O_RDONLY);
	assert_int_equal(hdpm_pread(f, out, sizeof(out), 0), sizeof(buf));
	assert_memory_equal(out, buf, sizeof(buf));
	hdpm_close(f);
}

static void test_append_and_short_write(void **state)
{
	struct hdpm_env *e = *state;
	struct hdpm_file *f = xopen(e, "/f", O_CREAT | O_RDWR | O_APPEND);
	size_t big = (1 << 20) + 3 * PG, max = 1 << 20;
	char *buf = malloc(big), *out = malloc(big);
	struct stat st;

	assert_non_null(buf);
	assert_non_null(out);
	xwrite(f, "abc", 3, 0);
	xwrite(f, "def", 3, 0); /* O_APPEND: at the end, not at 0 */
	assert_int_equal(hdpm_pread(f, out, 16, 0), 6);
	assert_memory_equal(out, "abcdef", 6);
	hdpm_close(f);
	/* above 1 MiB a write is cut at the 256-page boundary */
	f = xopen(e, "/g", O_CREAT | O_RDWR);
	fill(buf, big, 9);
	assert_int_equal(hdpm_pwrite(f, buf, big, 100), (ssize_t)(max - 100));
	assert_int_equal(hdpm_stat(e->fs, "/g", &st), 0);
	assert_int_equal(st.st_size, max);
	assert_int_equal(hdpm_pread(f, out, big, 100), (ssize_t)(max - 100));
	assert_memory_equal(out, buf, max - 100);
	hdpm_close(f);
	free(buf);
	free(out);
}

/* ------------------------------------------------------------ model */

#define MFILES 3
#define MSIZE (6 * PG)

struct model {
	size_t size[MFILES];
	int exists[MFILES];
	char data[MFILES][MSIZE + PG];
};

static const char *mname(unsigned i)
{
	static const char *names[MFILES] = { "/m0", "/m1", "/dir/m2" };

	return names[i];
}

static void model_verify(struct hdpm_env *e, const struct model *m)
{
	static char out[MSIZE + PG];
	struct hdpm_file *f;
	struct stat st;
	unsigned i;

	for (i = 0; i < MFILES; i++) {
		if (!m->exists[i]) {
			assert_int_equal(hdpm_stat(e->fs, mname(i), &st),
					 -ENOENT);
			continue;
		}
		assert_int_equal(hdpm_stat(e->fs, mname(i), &st), 0);
		assert_int_equal(st.st_size, m->size[i]);
		f = xopen(e, mname(i), O_RDONLY);
		assert_int_equal(hdpm_pread(f, out, sizeof(out), 0),
				 m->size[i]);
		assert_memory_equal(out, m->data[i], m->size[i]);
		hdpm_close(f);
	}
}

/* one random operation on the fs and the model */
static void model_step(struct hdpm_env *e, struct model *m, uint64_t r)
{
	static char buf[2 * PG + 64];
	unsigned i = (unsigned)(r % MFILES), op = (unsigned)(r >> 8) % 10;
	size_t off = (r >> 16) % MSIZE, len;
	struct hdpm_file *f;

	if (!m->exists[i]) {
		f = xopen(e, mname(i), O_CREAT | O_EXCL | O_RDWR);
		hdpm_close(f);
		m->exists[i] = 1;
		m->size[i] = 0;
		memset(m->data[i], 0, sizeof(m->data[i]));
		return;
	}
	if (op <= 5) { /* small, page-sized or large, aligned or not */
		len = op < 4 ? 1 + (r >> 32) % 200 :
			       (op == 4 ? PG : 1 + (r >> 32) % (2 * PG));
		if (op == 4)
			off -= off % PG;
		if (off + len > MSIZE)
			len = MSIZE - off;
		fill(buf, len, (unsigned)(r >> 40));
		f = xopen(e, mname(i), O_RDWR);
		xwrite(f, buf, len, off);
		hdpm_close(f);
		memcpy(m->data[i] + off, buf, len);
		if (off + len > m->size[i])
			m->size[i] = off + len;
	} else if (op == 6) {
		f = xopen(e, mname(i), O_RDWR);
		assert_int_equal(hdpm_ftruncate(f, off), 0);
		hdpm_close(f);
		if (off < m->size[i])
			memset(m->data[i] + off, 0, m->size[i] - off);
		m->size[i] = off;
	} else if (op == 7) {
		assert_int_equal(hdpm_unlink(e->fs, mname(i)), 0);
		m->exists[i] = 0;
	} else if (op == 8) {
		assert_true(hdpm_gc(e->fs, 0) >= 0);
	} else {
		/* rename over the next file and back under the old name */
		unsigned j = (i + 1) % MFILES;

		assert_int_equal(hdpm_rename(e->fs, mname(i), mname(j)), 0);
		memcpy(m->data[j], m->data[i], sizeof(m->data[j]));
		m->size[j] = m->size[i];
		m->exists[j] = 1;
		m->exists[i] = 0;
	}
}

static void run_model(struct hdpm_env *e, uint64_t seed, unsigned steps)
{
	static struct model m;
	uint64_t r = seed;
	unsigned s;

	memset(&m, 0, sizeof(m));
	assert_int_equal(hdpm_mkdir(e->fs, "/dir", 0755), 0);
	for (s = 0; s < steps; s++) {
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		model_step(e, &m, r);
		if (s % 50 == 49) {
			model_verify(e, &m);
			hdpm_env_remount(e);
		}
	}
	model_verify(e, &m);
}

static void test_model(void **state)
{
	run_model(*state, 0x12345678, 1500);
}

/* inode-number calls: stat and path by number, in step with the names */
static void test_ino_calls(void **state)
{
	struct hdpm_env *e = *state;
	struct hdpm_file *f;
	char path[64], small[4];
	struct stat st, st2;

	assert_int_equal(hdpm_mkdir(e->fs, "/d", 0755), 0);
	assert_int_equal(hdpm_mkdir(e->fs, "/d/e", 0755), 0);
	f = xopen(e, "/d/e/f", O_CREAT | O_RDWR);
	xwrite(f, "abc", 3, 0);
	hdpm_close(f);
	assert_int_equal(hdpm_stat(e->fs, "/d/e/f", &st), 0);
	assert_int_equal(hdpm_stat_ino(e->fs, st.st_ino, &st2), 0);
	assert_int_equal(st2.st_ino, st.st_ino);
	assert_int_equal(st2.st_size, 3);
	assert_int_equal(hdpm_ino_path(e->fs, st.st_ino, path, sizeof(path)),
			 0);
	assert_string_equal(path, "/d/e/f");
	assert_int_equal(hdpm_ino_path(e->fs, 1, path, sizeof(path)), 0);
	assert_string_equal(path, "/");
	assert_int_equal(hdpm_stat_ino(e->fs, 1, &st2), 0);
	assert_true(S_ISDIR(st2.st_mode));
	/* too small a buffer, bad numbers, bad arguments */
	assert_int_equal(hdpm_ino_path(e->fs, st.st_ino, small, sizeof(small)),
			 -ENAMETOOLONG);
	assert_int_equal(hdpm_stat_ino(e->fs, 0, &st2), -ENOENT);
	assert_int_equal(hdpm_stat_ino(e->fs, 1ULL << 40, &st2), -ENOENT);
	assert_int_equal(hdpm_stat_ino(e->fs, 4000, &st2), -ENOENT);
	assert_int_equal(hdpm_stat_ino(NULL, 1, &st2), -EINVAL);
	assert_int_equal(hdpm_ino_path(e->fs, 1, path, 1), -EINVAL);
	/* a rename changes the path of the same number; unlink frees it */
	assert_int_equal(hdpm_rename(e->fs, "/d/e", "/g"), 0);
	assert_int_equal(hdpm_ino_path(e->fs, st.st_ino, path, sizeof(path)),
			 0);
	assert_string_equal(path, "/g/f");
	assert_int_equal(hdpm_unlink(e->fs, "/g/f"), 0);
	assert_int_equal(hdpm_stat_ino(e->fs, st.st_ino, &st2), -ENOENT);
	assert_int_equal(hdpm_ino_path(e->fs, st.st_ino, path, sizeof(path)),
			 -ENOENT);
}

struct walk_count {
	unsigned files, pages;
	uint64_t live, dead, entries;
};

static int walk_file(const struct hdpm_file_info *fi, void *arg)
{
	struct walk_count *w = arg;

	w->files++;
	assert_string_equal(fi->path, "/f");
	return 0;
}

static int walk_page(const struct hdpm_file_info *fi,
		     const struct hdpm_page_info *pi, void *arg)
{
	struct walk_count *w = arg;

	(void)fi;
	w->pages++;
	w->live += pi->log_live_bytes;
	w->dead += pi->log_dead_bytes;
	w->entries += pi->log_entries;
	return 0;
}

/*
 * Log use per file and page (live: a read still returns the byte), and
 * a read-only mount that sees it without writing and refuses changes.
 */
static void test_info_and_rdonly(void **state)
{
	struct hdpm_env *e = *state;
	struct hdpm_file *f = xopen(e, "/f", O_CREAT | O_RDWR);
	struct walk_count w = { 0 };
	struct hdpm_fs_info info;
	char buf[2 * PG];

	fill(buf, sizeof(buf), 9);
	xwrite(f, buf, 2 * PG, 0);
	xwrite(f, buf, 100, 10); /* page 0: 100 live */
	xwrite(f, buf, 50, 60); /* 50 of the first entry's now dead */
	xwrite(f, buf, 64, PG + 8); /* page 1: 64 live */
	hdpm_close(f);
	assert_int_equal(hdpm_mkdir(e->fs, "/d", 0755), 0);
	assert_int_equal(hdpm_fs_info(e->fs, &info), 0);
	assert_int_equal(info.files, 1);
	assert_int_equal(info.dirs, 2);
	assert_int_equal(info.inodes_used, 3);
	assert_int_equal(info.pages, 2);
	assert_int_equal(info.log_chunks, 2);
	assert_int_equal(info.log_entries, 3);
	assert_int_equal(info.log_live_bytes, 100 + 64);
	assert_int_equal(info.log_dead_bytes, 50);
	assert_int_equal(info.file_bytes, 2 * PG);
	assert_int_equal(info.needs_recovery, 0);
	assert_int_equal(hdpm_file_walk(e->fs, walk_file, walk_page, &w), 0);
	assert_int_equal(w.files, 1);
	assert_int_equal(w.pages, 2);
	assert_int_equal(w.live, 164);
	assert_int_equal(w.dead, 50);
	assert_int_equal(w.entries, 3);
	/* a truncate makes log bytes past the size dead, after a gc none */
	f = xopen(e, "/f", O_RDWR);
	assert_int_equal(hdpm_ftruncate(f, 80), 0);
	hdpm_close(f);
	assert_int_equal(hdpm_fs_info(e->fs, &info), 0);
	assert_int_equal(info.pages, 1);
	assert_true(hdpm_gc(e->fs, 0) >= 0);
	assert_int_equal(hdpm_fs_info(e->fs, &info), 0);
	assert_int_equal(info.log_chunks, 0);
	assert_int_equal(info.log_bytes, 0);

	/* read-only: the same view, and -EROFS for every change */
	hdpm_env_unmount(e);
	assert_int_equal(pma_heap_open(e->path, PMA_HEAP_RDONLY, &e->heap), 0);
	assert_int_equal(hdpm_mount(e->heap, HDPM_RDONLY, &e->fs), 0);
	assert_int_equal(hdpm_fs_info(e->fs, &info), 0);
	assert_int_equal(info.files, 1);
	assert_int_equal(info.file_bytes, 80);
	assert_int_equal(hdpm_open(e->fs, "/f", O_RDWR, 0, &f), -EROFS);
	assert_int_equal(hdpm_open(e->fs, "/n", O_CREAT | O_RDONLY, 0, &f),
			 -EROFS);
	assert_int_equal(hdpm_mkdir(e->fs, "/x", 0755), -EROFS);
	assert_int_equal(hdpm_unlink(e->fs, "/f"), -EROFS);
	assert_int_equal(hdpm_rmdir(e->fs, "/d"), -EROFS);
	assert_int_equal(hdpm_rename(e->fs, "/f", "/h"), -EROFS);
	assert_int_equal(hdpm_gc(e->fs, 0), -EROFS);
	f = xopen(e, "/f", O_RDONLY);
	assert_int_equal(hdpm_pread(f, buf, PG, 0), 80);
	hdpm_close(f);
	assert_int_equal(hdpm_fs_info(NULL, &info), -EINVAL);
	assert_int_equal(hdpm_file_walk(NULL, NULL, NULL, NULL), -EINVAL);
	hdpm_env_unmount(e);
	hdpm_env_mount(e);
}

/* a read-only mount of a heap with no file system yet */
static void test_rdonly_unformatted(void **state)
{
	char path[] = "/dev/shm/test-hdpm-ro.XXXXXX";
	struct pma_heap *heap = NULL;
	struct hdpm_fs *fs = NULL;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(pma_heap_create(path, 8 << 20, PMA_HEAP_FORCE, &heap),
			 0);
	pma_heap_close(heap);
	assert_int_equal(pma_heap_open(path, PMA_HEAP_RDONLY, &heap), 0);
	assert_true(hdpm_mount(heap, HDPM_RDONLY, &fs) < 0);
	assert_null(fs);
	pma_heap_close(heap);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mount_args, setup,
						hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_mount_foreign_root, setup,
						hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_open_errors, setup,
						hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_rw_errors, setup,
						hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_write_paths, setup,
						hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_cow_only, setup_cow,
						hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_inline_gc, setup,
						hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_truncate, setup,
						hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_namespace, setup,
						hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_remount_keeps_data, setup,
						hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_append_and_short_write,
						setup, hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_ino_calls, setup,
						hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_info_and_rdonly, setup,
						hdpm_env_teardown),
		cmocka_unit_test(test_rdonly_unformatted),
		cmocka_unit_test_setup_teardown(test_model, setup,
						hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_model, setup_cow,
						hdpm_env_teardown),
	};

	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
