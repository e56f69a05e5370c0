/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-hdpm-mt: libhdpm under threads, with per-inode locks. Writer
 * threads each own stripes of two shared files (small writes into the
 * same pages as the others: log appends, inline merges) and a private
 * file of their own (small, full-page, extending and truncating writes),
 * and check their bytes against a DRAM model while they run. Reader
 * threads read the shared files whole at the same time: every 8-byte word
 * must be zero or a stamp its owner wrote there (no torn or misplaced
 * data). A namespace thread creates, renames, stats, lists and unlinks
 * entries of its own directory meanwhile, and the background GC thread
 * and a thread of forced GC steps merge under all of them. At the end
 * every file equals its model, again after a remount, and removing
 * everything gives back every byte.
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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "hdpm-env.h"
#include "hdpm.h"
#include "hdpm/internal.h"
#include "pmalloc.h"

#define HEAP_SIZE (64ULL << 20)
#define PG 4096
#define NWRITERS 4
#define NREADERS 2
#define NSHARED 2
#define STRIPE 256 /* bytes; stripe s of a page belongs to s % NWRITERS */
#define SHARED_PAGES 8
#define SHARED_SIZE (SHARED_PAGES * PG)
#define PRIV_MAX HDPM_ENV_PRIV_MAX
#define NOPS 12000

static int setup(void **state)
{
	setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 1);
	return hdpm_env_setup(state, "test-hdpm-mt", HEAP_SIZE, 0, 0);
}

static const char *shared_name(unsigned i)
{
	return i ? "/d/shared1" : "/shared0";
}

/* the owner of the byte at off of a shared file */
static unsigned owner(uint64_t off)
{
	return (unsigned)(off / STRIPE % NWRITERS);
}

/* the word a writer stores: owner + 1 in the top byte, its op number
 * below, and the word's own offset in the low 24 bits */
static uint64_t stamp(unsigned t, uint64_t seq, uint64_t off)
{
	return (uint64_t)(t + 1) << 56 | (seq & 0xffffffffULL) << 24 |
	       (off & 0xffffff);
}

struct writer {
	struct hdpm_fs *fs;
	unsigned id;
	uint64_t seq; /* atomic: ops started */
	char shared[NSHARED][SHARED_SIZE]; /* this writer's stripes */
	struct hdpm_env_priv priv; /* the private file's model */
	int failed; /* op index + 1 of the first mismatch */
};

static struct writer *writers;
static volatile int stop_all;

static int check_stripes(struct writer *w, struct hdpm_file **f)
{
	char buf[STRIPE];
	uint64_t off;
	unsigned i, s;

	for (i = 0; i < NSHARED; i++)
		for (s = w->id; s < SHARED_SIZE / STRIPE; s += NWRITERS) {
			off = (uint64_t)s * STRIPE;
			if (hdpm_pread(f[i], buf, STRIPE, off) != STRIPE ||
			    memcmp(buf, w->shared[i] + off, STRIPE))
				return -1;
		}
	return 0;
}

/* stamped words into one of this writer's stripes */
static int shared_op(struct writer *w, struct hdpm_file **f, uint64_t *r)
{
	uint64_t words[STRIPE / 8], seq, off;
	unsigned i = (unsigned)(hdpm_env_rand(r) % NSHARED);
	unsigned s = w->id +
		     NWRITERS * (unsigned)(hdpm_env_rand(r) %
					   (SHARED_SIZE / STRIPE / NWRITERS));
	unsigned n = 1 + (unsigned)(hdpm_env_rand(r) % (STRIPE / 8));
	unsigned a = (unsigned)(hdpm_env_rand(r) % (STRIPE / 8 - n + 1)), k;

	seq = __atomic_add_fetch(&w->seq, 1, __ATOMIC_SEQ_CST);
	off = (uint64_t)s * STRIPE + a * 8;
	for (k = 0; k < n; k++)
		words[k] = stamp(w->id, seq, off + k * 8);
	if (hdpm_pwrite(f[i], words, n * 8, off) != (ssize_t)(n * 8))
		return -1;
	memcpy(w->shared[i] + off, words, n * 8);
	return 0;
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct hdpm_file *sf[NSHARED] = { NULL }, *pf = NULL;
	char name[32];
	uint64_t r = 0x9e3779b97f4a7c15ULL * (w->id + 1);
	unsigned i;
	int rc = 0;

	snprintf(name, sizeof(name), "/d/p%u", w->id);
	for (i = 0; i < NSHARED; i++)
		rc |= hdpm_open(w->fs, shared_name(i), O_RDWR, 0, &sf[i]);
	rc |= hdpm_open(w->fs, name, O_CREAT | O_RDWR, 0644, &pf);
	for (i = 0; i < NOPS && !rc; i++) {
		rc = (hdpm_env_rand(&r) % 3) ?
			     shared_op(w, sf, &r) :
			     hdpm_env_priv_op(&w->priv, pf, 13, 2000, &r);
		if (rc == 0 && i % 128 == 127)
			rc = check_stripes(w, sf) ||
			     hdpm_env_priv_check(&w->priv, pf);
		if (rc)
			w->failed = (int)i + 1;
	}
	if (!w->failed &&
	    (check_stripes(w, sf) || hdpm_env_priv_check(&w->priv, pf)))
		w->failed = NOPS + 1;
	for (i = 0; i < NSHARED; i++)
		hdpm_close(sf[i]);
	hdpm_close(pf);
	return NULL;
}

struct helper {
	struct hdpm_fs *fs;
	unsigned id;
	long rounds;
	char why[128]; /* the first failure, or "" */
};

/* every word of a shared file: 0, or a stamp of the word's owner and
 * offset with an op number the owner has started */
static int check_words(struct helper *h, const char *buf, uint64_t base,
		       size_t len)
{
	uint64_t v, off, t;

	for (off = base; off + 8 <= base + len; off += 8) {
		memcpy(&v, buf + (off - base), 8);
		if (!v)
			continue;
		t = v >> 56;
		if (t != owner(off) + 1 || (v & 0xffffff) != (off & 0xffffff) ||
		    ((v >> 24) & 0xffffffffULL) >
			    __atomic_load_n(&writers[t - 1].seq,
					    __ATOMIC_SEQ_CST)) {
			snprintf(h->why, sizeof(h->why),
				 "word at %llu is 0x%016llx",
				 (unsigned long long)off,
				 (unsigned long long)v);
			return -1;
		}
	}
	return 0;
}

static void *reader_main(void *arg)
{
	static __thread char buf[SHARED_SIZE];
	struct helper *h = arg;
	struct hdpm_file *f[NSHARED] = { NULL };
	uint64_t r = 0x2545f4914f6cdd1dULL * (h->id + 1), off, len;
	unsigned i;

	for (i = 0; i < NSHARED; i++)
		if (hdpm_open(h->fs, shared_name(i), O_RDONLY, 0, &f[i])) {
			snprintf(h->why, sizeof(h->why), "open: %s",
				 hdpm_errormsg());
			goto out;
		}
	while (!stop_all && !h->why[0]) {
		i = (unsigned)(hdpm_env_rand(&r) % NSHARED);
		/* whole files, single pages, or pieces across pages */
		off = (hdpm_env_rand(&r) % (SHARED_SIZE / 8)) * 8;
		len = (h->rounds & 3) == 0 ? SHARED_SIZE :
					     1 + hdpm_env_rand(&r) % (2 * PG);
		if (len == SHARED_SIZE)
			off = 0;
		if (off + len > SHARED_SIZE)
			len = SHARED_SIZE - off;
		len &= ~7ULL;
		if (!len)
			continue;
		if (hdpm_pread(f[i], buf, len, off) != (ssize_t)len) {
			snprintf(h->why, sizeof(h->why), "short read");
			break;
		}
		if (check_words(h, buf, off, len) == 0)
			h->rounds++;
	}
out:
	for (i = 0; i < NSHARED; i++)
		hdpm_close(f[i]);
	return NULL;
}

static int stat_fn(const char *name, const struct stat *st, void *arg)
{
	(void)name;
	(void)st;
	(*(unsigned *)arg)++;
	return 0;
}

/* the namespace: create, write, rename, stat, list, unlink in /n */
static void *ns_main(void *arg)
{
	struct helper *h = arg;
	struct hdpm_file *f;
	char a[32], b[32], data[100];
	uint64_t r = 77;
	unsigned n, k;
	struct stat st;

	while (!stop_all && !h->why[0]) {
		k = (unsigned)(hdpm_env_rand(&r) % 50);
		snprintf(a, sizeof(a), "/n/f%u", k);
		snprintf(b, sizeof(b), "/n/g%u", k);
		hdpm_env_fill_rand(data, sizeof(data), &r);
		if (hdpm_open(h->fs, a, O_CREAT | O_RDWR | O_TRUNC, 0644, &f) ||
		    hdpm_pwrite(f, data, sizeof(data), 0) != sizeof(data) ||
		    hdpm_close(f) || hdpm_rename(h->fs, a, b) ||
		    hdpm_stat(h->fs, b, &st) || st.st_size != sizeof(data)) {
			snprintf(h->why, sizeof(h->why), "%s: %s", a,
				 hdpm_errormsg());
			break;
		}
		n = 0;
		if (hdpm_readdir(h->fs, "/n", stat_fn, &n) || n < 1 ||
		    hdpm_readdir(h->fs, "/d", stat_fn, &n) || n < 2) {
			snprintf(h->why, sizeof(h->why), "readdir: %u", n);
			break;
		}
		if ((hdpm_env_rand(&r) & 3) == 0 && hdpm_unlink(h->fs, b)) {
			snprintf(h->why, sizeof(h->why), "unlink %s: %s", b,
				 hdpm_errormsg());
			break;
		}
		h->rounds++;
	}
	return NULL;
}

static void *stepper_main(void *arg)
{
	struct helper *h = arg;
	int n;

	while (!stop_all && !getenv("MT_NOGC")) {
		n = hdpm_gc(h->fs, HDPM_GC_BACKGROUND_STEP | HDPM_GC_FORCE);
		if (n < 0) {
			snprintf(h->why, sizeof(h->why), "gc step: %s",
				 hdpm_errormsg());
			break;
		}
		h->rounds += n;
		sched_yield();
	}
	return NULL;
}

static void check_file(struct hdpm_fs *fs, const char *path, const char *ref,
		       uint64_t size)
{
	static char buf[SHARED_SIZE + PRIV_MAX + 1];
	struct hdpm_file *f = NULL;

	assert_int_equal(hdpm_open(fs, path, O_RDONLY, 0, &f), 0);
	assert_int_equal(hdpm_pread(f, buf, sizeof(buf), 0), (ssize_t)size);
	if (memcmp(buf, ref, size))
		fail_msg("%s differs from its model", path);
	hdpm_close(f);
}

static void verify_all(struct hdpm_fs *fs)
{
	static char shared[SHARED_SIZE];
	char name[32];
	unsigned t, i;
	uint64_t off;

	for (i = 0; i < NSHARED; i++) {
		for (off = 0; off < SHARED_SIZE; off += STRIPE)
			memcpy(shared + off,
			       writers[owner(off)].shared[i] + off, STRIPE);
		check_file(fs, shared_name(i), shared, SHARED_SIZE);
	}
	for (t = 0; t < NWRITERS; t++) {
		snprintf(name, sizeof(name), "/d/p%u", t);
		check_file(fs, name, writers[t].priv.data,
			   writers[t].priv.size);
	}
}

struct names {
	char name[64][32];
	unsigned n;
};

/* readdir holds the namespace lock: collect, then unlink */
static int name_fn(const char *name, const struct stat *st, void *arg)
{
	struct names *nm = arg;

	(void)st;
	if (nm->n >= 64)
		return -1;
	snprintf(nm->name[nm->n++], 32, "%s", name);
	return 0;
}

static void unlink_all(struct hdpm_fs *fs, const char *dir)
{
	struct names nm = { .n = 0 };
	char path[64];
	unsigned i;

	assert_int_equal(hdpm_readdir(fs, dir, name_fn, &nm), 0);
	for (i = 0; i < nm.n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, nm.name[i]);
		assert_int_equal(hdpm_unlink(fs, path), 0);
	}
	assert_int_equal(hdpm_rmdir(fs, dir), 0);
}

static void test_threads(void **state)
{
	struct hdpm_env *e = *state;
	pthread_t wt[NWRITERS], ht[NREADERS + 2];
	struct helper h[NREADERS + 2];
	struct hdpm_gc_config cfg;
	struct hdpm_file *f;
	struct hdpm_stats st;
	static char zero[SHARED_SIZE];
	uint64_t base;
	unsigned t, i;

	writers = calloc(NWRITERS, sizeof(*writers));
	assert_non_null(writers);
	memset(h, 0, sizeof(h));
	stop_all = 0;
	hdpm_gc_config_init(&cfg);
	cfg.free_pct = 100; /* always short of space */
	cfg.interval_ms = 2;
	cfg.min_log_bytes = 16;
	assert_int_equal(
		hdpm_mount_config(e->heap,
				  getenv("MT_NOGC") ? HDPM_NO_GC_THREAD : 0,
				  &cfg, &e->fs),
		0);
	base = hdpm_env_used_bytes(e->heap);
	assert_int_equal(hdpm_mkdir(e->fs, "/d", 0755), 0);
	assert_int_equal(hdpm_mkdir(e->fs, "/n", 0755), 0);
	for (i = 0; i < NSHARED; i++) {
		assert_int_equal(hdpm_open(e->fs, shared_name(i),
					   O_CREAT | O_RDWR, 0644, &f),
				 0);
		/* full pages: the writers' pieces go to page logs */
		assert_int_equal(hdpm_pwrite(f, zero, SHARED_SIZE, 0),
				 SHARED_SIZE);
		hdpm_close(f);
	}
	for (i = 0; i < NREADERS + 2; i++) {
		h[i].fs = e->fs;
		h[i].id = i;
		assert_int_equal(pthread_create(&ht[i], NULL,
						i < NREADERS  ? reader_main :
						i == NREADERS ? ns_main :
								stepper_main,
						&h[i]),
				 0);
	}
	for (t = 0; t < NWRITERS; t++) {
		writers[t].fs = e->fs;
		writers[t].id = t;
		assert_int_equal(pthread_create(&wt[t], NULL, writer_main,
						&writers[t]),
				 0);
	}
	for (t = 0; t < NWRITERS; t++)
		pthread_join(wt[t], NULL);
	stop_all = 1;
	for (i = 0; i < NREADERS + 2; i++)
		pthread_join(ht[i], NULL);
	for (t = 0; t < NWRITERS; t++)
		if (writers[t].failed)
			fail_msg("writer %u: mismatch at op %d", t,
				 writers[t].failed - 1);
	for (i = 0; i < NREADERS + 2; i++)
		if (h[i].why[0])
			fail_msg("helper %u: %s", i, h[i].why);
	/* journaled operations of different files ran at the same time, in
	 * different journal slots */
	print_message("# journaled operations at once: up to %llu\n",
		      (unsigned long long)e->fs->tx_overlap);
	assert_true(e->fs->tx_overlap >= 2);
	hdpm_stats(e->fs, &st);
	print_message("# %u writers x %u ops; reader rounds %ld + %ld, "
		      "namespace rounds %ld, forced-step merges %ld; "
		      "background merges %llu published, %llu lost; "
		      "%llu inline merges, %llu log appends\n",
		      NWRITERS, NOPS, h[0].rounds, h[1].rounds, h[2].rounds,
		      h[3].rounds, (unsigned long long)st.bg_merges,
		      (unsigned long long)st.bg_lost,
		      (unsigned long long)st.gc_merges,
		      (unsigned long long)st.log_appends);
	/* every helper ran, and the GC and the log path were exercised */
	assert_true(h[0].rounds > 0 && h[1].rounds > 0 && h[2].rounds > 0);
	assert_true(st.bg_merges > 0 && st.gc_merges > 0 && st.log_appends > 0);
	verify_all(e->fs);
	hdpm_unmount(e->fs);
	assert_int_equal(
		hdpm_mount_config(e->heap, HDPM_NO_GC_THREAD, &cfg, &e->fs), 0);
	verify_all(e->fs);
	/* nothing leaked: every byte comes back */
	unlink_all(e->fs, "/n");
	unlink_all(e->fs, "/d");
	assert_int_equal(hdpm_unlink(e->fs, shared_name(0)), 0);
	assert_int_equal(hdpm_env_used_bytes(e->heap), base);
	free(writers);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_threads, setup,
						hdpm_env_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
