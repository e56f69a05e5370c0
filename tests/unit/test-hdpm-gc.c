/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-hdpm-gc: libhdpm's background GC. The config and flag checks, the
 * background step (forced and by the free-space threshold), the GC thread
 * started by hdpm_mount, and a stress run: writer threads (stripes of one
 * shared file, plus a private file each with small, full-page, extending
 * and truncating writes) against the GC thread and a second thread that
 * runs forced steps back to back. Every thread checks its bytes against
 * its DRAM model while it runs; at the end every file is checked, again
 * after a remount, and removing every file must give back every byte
 * (nothing leaked by merges won or lost).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "hdpm-env.h"
#include "hdpm.h"
#include "pmalloc.h"

#define HEAP_SIZE (64ULL << 20)
#define PG 4096
#define NWRITERS 4
#define STRIPE (PG / NWRITERS)
#define SHARED_PAGES 8
#define NOPS 40000

static int setup(void **state)
{
	/* real flushes and fences, not msync */
	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 1);
	return hdpm_env_setup(state, "test-hdpm-gc", HEAP_SIZE, 0, 0);
}

static struct hdpm_file *xopen(struct hdpm_fs *fs, const char *path, int oflags)
{
	struct hdpm_file *f = NULL;

	assert_int_equal(hdpm_open(fs, path, oflags, 0644, &f), 0);
	return f;
}

/* a log on each of n pages of path (file of n full pages) */
static void make_logs(struct hdpm_fs *fs, const char *path, unsigned n,
		      char *ref)
{
	struct hdpm_file *f = xopen(fs, path, O_CREAT | O_RDWR);
	uint64_t r = 7;
	unsigned p, k;

	hdpm_env_fill_rand(ref, (size_t)n * PG, &r);
	assert_int_equal(hdpm_pwrite(f, ref, (size_t)n * PG, 0),
			 (ssize_t)n * PG);
	for (p = 0; p < n; p++)
		for (k = 0; k < 6; k++) {
			hdpm_env_fill_rand(ref + p * PG + 100 * k + 3, 50, &r);
			assert_int_equal(hdpm_pwrite(f,
						     ref + p * PG + 100 * k + 3,
						     50, p * PG + 100 * k + 3),
					 50);
		}
	hdpm_close(f);
}

static void check_file(struct hdpm_fs *fs, const char *path, const char *ref,
		       size_t size)
{
	struct hdpm_file *f = xopen(fs, path, O_RDONLY);
	char *out = malloc(size + 1);

	assert_non_null(out);
	assert_int_equal(hdpm_pread(f, out, size + 1, 0), (ssize_t)size);
	assert_memory_equal(out, ref, size);
	free(out);
	hdpm_close(f);
}

/* ------------------------------------------------------------ api */

static void test_config_and_flags(void **state)
{
	struct hdpm_env *e = *state;
	struct hdpm_gc_config cfg, bad;
	struct hdpm_fs *fs = NULL;

	hdpm_gc_config_init(&cfg);
	assert_int_equal(cfg.free_pct, 20);
	assert_int_equal(cfg.batch, 16);
	assert_true(cfg.interval_ms > 0);
	bad = cfg;
	bad.free_pct = 101;
	assert_int_equal(hdpm_mount_config(e->heap, 0, &bad, &fs), -EINVAL);
	assert_non_null(strstr(hdpm_errormsg(), "free_pct"));
	bad = cfg;
	bad.batch = 0;
	assert_int_equal(hdpm_mount_config(e->heap, 0, &bad, &fs), -EINVAL);
	bad.batch = 33;
	assert_int_equal(hdpm_mount_config(e->heap, 0, &bad, &fs), -EINVAL);
	bad = cfg;
	bad.interval_ms = 0;
	assert_int_equal(hdpm_mount_config(e->heap, 0, &bad, &fs), -EINVAL);
	bad = cfg;
	bad.min_log_bytes = 1 << 20;
	assert_int_equal(hdpm_mount_config(e->heap, 0, &bad, &fs), -EINVAL);
	assert_null(fs);
	assert_int_equal(
		hdpm_mount_config(e->heap, HDPM_NO_GC_THREAD, &cfg, &e->fs), 0);
	assert_int_equal(hdpm_gc(e->fs, HDPM_GC_FORCE), -EINVAL);
	assert_int_equal(hdpm_gc(e->fs, 1 << 7), -EINVAL);
	assert_int_equal(hdpm_gc(NULL, HDPM_GC_BACKGROUND_STEP), -EINVAL);
}

static void test_background_step(void **state)
{
	struct hdpm_env *e = *state;
	static char ref[4 * PG];
	struct hdpm_gc_config cfg;
	struct hdpm_fs_info info;
	struct hdpm_stats st;

	hdpm_gc_config_init(&cfg);
	cfg.batch = 3;
	assert_int_equal(
		hdpm_mount_config(e->heap, HDPM_NO_GC_THREAD, &cfg, &e->fs), 0);
	make_logs(e->fs, "/f", 4, ref);
	/* the heap is nearly empty: above the 20 % threshold, no work */
	assert_int_equal(hdpm_gc(e->fs, HDPM_GC_BACKGROUND_STEP), 0);
	hdpm_stats(e->fs, &st);
	assert_int_equal(st.bg_steps, 0);
	/* forced: the batch (3 of the 4 logs), then the last one */
	assert_int_equal(
		hdpm_gc(e->fs, HDPM_GC_BACKGROUND_STEP | HDPM_GC_FORCE), 3);
	assert_int_equal(hdpm_fs_info(e->fs, &info), 0);
	assert_int_equal(info.log_chunks, 1);
	assert_int_equal(
		hdpm_gc(e->fs, HDPM_GC_BACKGROUND_STEP | HDPM_GC_FORCE), 1);
	assert_int_equal(
		hdpm_gc(e->fs, HDPM_GC_BACKGROUND_STEP | HDPM_GC_FORCE), 0);
	assert_int_equal(hdpm_fs_info(e->fs, &info), 0);
	assert_int_equal(info.log_chunks, 0);
	assert_int_equal(info.pages, 4);
	hdpm_stats(e->fs, &st);
	assert_int_equal(st.bg_merges, 4);
	assert_int_equal(st.bg_lost, 0);
	assert_int_equal(st.bg_steps, 3);
	check_file(e->fs, "/f", ref, sizeof(ref));
	hdpm_unmount(e->fs);
	e->fs = NULL;
	/* a threshold of 100 %: a plain step works */
	cfg.free_pct = 100;
	assert_int_equal(
		hdpm_mount_config(e->heap, HDPM_NO_GC_THREAD, &cfg, &e->fs), 0);
	make_logs(e->fs, "/g", 2, ref);
	assert_int_equal(hdpm_gc(e->fs, HDPM_GC_BACKGROUND_STEP), 2);
	check_file(e->fs, "/g", ref, 2 * PG);
}

static void test_thread_merges(void **state)
{
	struct hdpm_env *e = *state;
	static char ref[4 * PG];
	struct hdpm_gc_config cfg;
	struct hdpm_stats st;
	struct timespec ts = { 0, 1000000 };
	int i;

	hdpm_gc_config_init(&cfg);
	cfg.free_pct = 100;
	cfg.interval_ms = 1;
	assert_int_equal(hdpm_mount_config(e->heap, 0, &cfg, &e->fs), 0);
	make_logs(e->fs, "/f", 4, ref);
	/* wait (up to 10 s) for the thread to merge all four */
	for (i = 0; i < 10000; i++) {
		hdpm_stats(e->fs, &st);
		if (st.bg_merges >= 4)
			break;
		nanosleep(&ts, NULL);
	}
	assert_int_equal(st.bg_merges, 4);
	check_file(e->fs, "/f", ref, sizeof(ref));
	/* the same mount in CoW-only mode starts no thread and keeps no
	 * log: a step finds nothing */
	hdpm_unmount(e->fs);
	assert_int_equal(
		hdpm_mount_config(e->heap, HDPM_COW_ONLY, &cfg, &e->fs), 0);
	assert_int_equal(hdpm_gc(e->fs, HDPM_GC_BACKGROUND_STEP), 0);
	check_file(e->fs, "/f", ref, sizeof(ref));
}

/* ------------------------------------------------------------ stress */

struct writer {
	struct hdpm_fs *fs;
	unsigned id;
	char shared[SHARED_PAGES * PG]; /* only this writer's stripes */
	struct hdpm_env_priv priv; /* the private file's model */
	int failed; /* op index + 1 of the first mismatch */
};

static int check_stripes(struct writer *w, struct hdpm_file *f)
{
	char buf[STRIPE];
	uint64_t off;
	unsigned p;

	for (p = 0; p < SHARED_PAGES; p++) {
		off = (uint64_t)p * PG + w->id * STRIPE;
		if (hdpm_pread(f, buf, STRIPE, off) != STRIPE ||
		    memcmp(buf, w->shared + off, STRIPE))
			return -1;
	}
	return 0;
}

/* a small write inside one of this writer's stripes */
static int shared_op(struct writer *w, struct hdpm_file *f, uint64_t *r)
{
	char buf[200];
	unsigned p = (unsigned)(hdpm_env_rand(r) % SHARED_PAGES);
	unsigned len = 1 + (unsigned)(hdpm_env_rand(r) % sizeof(buf));
	unsigned a = (unsigned)(hdpm_env_rand(r) % (STRIPE - len + 1));
	uint64_t off = (uint64_t)p * PG + w->id * STRIPE + a;

	hdpm_env_fill_rand(buf, len, r);
	if (hdpm_pwrite(f, buf, len, off) != (ssize_t)len)
		return -1;
	memcpy(w->shared + off, buf, len);
	return 0;
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct hdpm_file *sf = NULL, *pf = NULL;
	char name[16];
	uint64_t r = 0x9e3779b97f4a7c15ULL * (w->id + 1);
	unsigned i;
	int rc;

	snprintf(name, sizeof(name), "/p%u", w->id);
	if (hdpm_open(w->fs, "/shared", O_RDWR, 0, &sf) ||
	    hdpm_open(w->fs, name, O_CREAT | O_RDWR, 0644, &pf)) {
		w->failed = -1;
		goto out;
	}
	for (i = 0; i < NOPS && !w->failed; i++) {
		rc = (hdpm_env_rand(&r) & 1) ?
			     shared_op(w, sf, &r) :
			     hdpm_env_priv_op(&w->priv, pf, 14, 200, &r);
		if (rc == 0 && i % 64 == 63)
			rc = check_stripes(w, sf) ||
			     hdpm_env_priv_check(&w->priv, pf);
		if (rc)
			w->failed = (int)i + 1;
	}
	if (!w->failed &&
	    (check_stripes(w, sf) || hdpm_env_priv_check(&w->priv, pf)))
		w->failed = NOPS + 1;
out:
	hdpm_close(sf);
	hdpm_close(pf);
	return NULL;
}

struct stepper {
	struct hdpm_fs *fs;
	volatile int stop;
	int steps, merged, failed;
};

static void *stepper_main(void *arg)
{
	struct stepper *s = arg;
	int n;

	while (!s->stop) {
		n = hdpm_gc(s->fs, HDPM_GC_BACKGROUND_STEP | HDPM_GC_FORCE);
		if (n < 0) {
			s->failed = n;
			break;
		}
		s->steps++;
		s->merged += n;
		sched_yield();
	}
	return NULL;
}

static void verify_all(struct hdpm_fs *fs, struct writer *w)
{
	static char shared[SHARED_PAGES * PG];
	char name[16];
	unsigned t, p;

	memset(shared, 0, sizeof(shared));
	for (t = 0; t < NWRITERS; t++) {
		for (p = 0; p < SHARED_PAGES; p++)
			memcpy(shared + p * PG + t * STRIPE,
			       w[t].shared + p * PG + t * STRIPE, STRIPE);
		snprintf(name, sizeof(name), "/p%u", t);
		check_file(fs, name, w[t].priv.data, w[t].priv.size);
	}
	check_file(fs, "/shared", shared, sizeof(shared));
}

static void test_stress(void **state)
{
	struct hdpm_env *e = *state;
	struct writer *w = calloc(NWRITERS, sizeof(*w));
	pthread_t tid[NWRITERS], stid;
	struct stepper s = { 0 };
	struct hdpm_gc_config cfg;
	struct hdpm_file *f;
	struct hdpm_stats st;
	uint64_t base;
	char name[16];
	unsigned t;

	assert_non_null(w);
	hdpm_gc_config_init(&cfg);
	cfg.free_pct = 100; /* always short of space */
	cfg.interval_ms = 1;
	cfg.min_log_bytes = 16;
	cfg.batch = 32;
	assert_int_equal(hdpm_mount_config(e->heap, 0, &cfg, &e->fs), 0);
	base = hdpm_env_used_bytes(e->heap);
	f = xopen(e->fs, "/shared", O_CREAT | O_RDWR);
	/* zeroed full pages: every later write is a log append */
	assert_int_equal(hdpm_pwrite(f, w[0].shared, sizeof(w[0].shared), 0),
			 (ssize_t)sizeof(w[0].shared));
	hdpm_close(f);
	s.fs = e->fs;
	assert_int_equal(pthread_create(&stid, NULL, stepper_main, &s), 0);
	for (t = 0; t < NWRITERS; t++) {
		w[t].fs = e->fs;
		w[t].id = t;
		assert_int_equal(
			pthread_create(&tid[t], NULL, writer_main, &w[t]), 0);
	}
	for (t = 0; t < NWRITERS; t++)
		pthread_join(tid[t], NULL);
	s.stop = 1;
	pthread_join(stid, NULL);
	for (t = 0; t < NWRITERS; t++)
		if (w[t].failed)
			fail_msg("writer %u: mismatch at op %d", t,
				 w[t].failed - 1);
	assert_int_equal(s.failed, 0);
	hdpm_stats(e->fs, &st);
	print_message("# stress: %u writers x %u ops, %d forced steps; "
		      "background merges %llu published, %llu lost to a "
		      "write; %llu inline merges\n",
		      NWRITERS, NOPS, s.steps, (unsigned long long)st.bg_merges,
		      (unsigned long long)st.bg_lost,
		      (unsigned long long)st.gc_merges);
	assert_true(st.bg_merges > 0);
	verify_all(e->fs, w);
	/* the same after a remount */
	hdpm_unmount(e->fs);
	assert_int_equal(
		hdpm_mount_config(e->heap, HDPM_NO_GC_THREAD, &cfg, &e->fs), 0);
	verify_all(e->fs, w);
	/* nothing leaked: every byte comes back */
	for (t = 0; t < NWRITERS; t++) {
		snprintf(name, sizeof(name), "/p%u", t);
		assert_int_equal(hdpm_unlink(e->fs, name), 0);
	}
	assert_int_equal(hdpm_unlink(e->fs, "/shared"), 0);
	assert_int_equal(hdpm_env_used_bytes(e->heap), base);
	free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_config_and_flags, setup,
						hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_background_step, setup,
						hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_thread_merges, setup,
						hdpm_env_teardown),
		cmocka_unit_test_setup_teardown(test_stress, setup,
						hdpm_env_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
