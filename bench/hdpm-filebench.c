/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpmbench --filebench: Filebench's fileserver, varmail, webserver and
 * webproxy personalities reproduced in-process on libhdpm, hybrid against
 * HDPM_COW_ONLY in one run. The shapes follow Filebench's workloads (*.f)
 * (file counts, directory width, mean file size, preallocation, random
 * appends of up to 16 KiB, 1 MiB I/O, the flowop sequence of each
 * thread); file counts are divided by --scale (--scale 1: Filebench's
 * own; HDPM's inode table grows to 255 x 4096 entries). Differences, on
 * purpose:
 *   - file sizes are uniform in [1, 2 x mean] (Filebench: gamma 1.5);
 *   - each thread picks the files it creates, deletes and appends to in
 *     its own share of the set (i % threads), so no two threads race for
 *     one file entry; webserver reads any file, and all its threads
 *     append to one log file (O_APPEND);
 *   - fsync is counted as an op and does nothing: hdpm_pwrite is durable
 *     on return.
 * Per (personality, threads, mode): a fresh pool, the set preallocated
 * (not timed), then every thread runs --loops loops of its flowops.
 * Reported: flowops/s (Filebench's ops/s), PM cache lines flushed,
 * fences and 256-byte XPLines per op (lib/pmem counters of all threads),
 * PM bytes written per user byte, pages copied and log entries appended
 * per op (hdpm_stats: how often the hybrid path is taken), and
 * hybrid/cow.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hdpmbench.h"
#include "hdpm.h"
#include "pmalloc.h"

#define IOSIZE (1u << 20) /* Filebench's iosize for whole-file I/O */
#define APPEND_MAX (16u << 10) /* meanappendsize: appends of 1..16 KiB */
/* HDPM's inode table at its largest: 8 chunks of 4096 << k (layout.h) */
#define HDPM_FB_ENTRIES_MAX (4096u * 255u)

enum { FB_FILESERVER, FB_VARMAIL, FB_WEBSERVER, FB_WEBPROXY, FB_N };

struct fb_thread;

struct personality {
	const char *name;
	unsigned nfiles; /* Filebench's, before --scale */
	unsigned dirwidth; /* files per directory */
	unsigned mean_size;
	unsigned prealloc_pct;
	int (*loop)(struct fb_thread *t); /* one pass of the flowops */
};

/* a file entry of the set: owned by one thread (i % threads) */
struct fb_slot {
	uint64_t size;
	int exists;
};

struct fb_run {
	const struct fb_opts *o;
	const struct personality *p;
	struct hdpm_fs *fs;
	unsigned nfiles, nthreads;
	struct fb_slot *slots;
	pthread_barrier_t start;
	int failed; /* atomic */
};

struct fb_thread {
	struct fb_run *run;
	unsigned id;
	uint64_t rng;
	uint64_t ops, user_bytes;
	/* flowop latencies (ns, from the end of the last one: the loop's
	 * own picking included, as in filebench's per-flowop times) */
	uint64_t last_ns;
	uint32_t *lat;
	size_t nlat, caplat;
	struct hdpm_file *log; /* webserver's shared log file */
	char *buf; /* IOSIZE */
	pthread_t tid;
};

/* one flowop done: counted, its latency kept (a sample is dropped if
 * memory runs out; the count stays exact) */
static void op_done(struct fb_thread *t)
{
	uint64_t now = hb_now_ns(), d = now - t->last_ns;
	uint32_t *lat;

	t->ops++;
	t->last_ns = now;
	if (t->nlat == t->caplat) {
		size_t cap = t->caplat ? 2 * t->caplat : 4096;

		lat = realloc(t->lat, cap * sizeof(*lat));
		if (!lat)
			return;
		t->lat = lat;
		t->caplat = cap;
	}
	t->lat[t->nlat++] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
}

static int fb_fail(struct fb_thread *t, const char *what)
{
	fprintf(stderr, "hdpmbench: %s %s: %s\n", t->run->p->name, what,
		hdpm_errormsg());
	__atomic_store_n(&t->run->failed, 1, __ATOMIC_RELAXED);
	return -1;
}

static void slot_path(const struct fb_run *r, unsigned i, char *buf,
		      size_t size)
{
	snprintf(buf, size, "/d%u/f%u", i / r->p->dirwidth, i);
}

static uint64_t draw_size(struct fb_thread *t)
{
	return 1 + hb_rnd(&t->rng) % (2ULL * t->run->p->mean_size);
}

/* a random slot of this thread's share that exists (or not); -1: none */
static int pick(struct fb_thread *t, int exists)
{
	struct fb_run *r = t->run;
	unsigned share = (r->nfiles - t->id + r->nthreads - 1) / r->nthreads;
	unsigned k, start, i;

	if (!share)
		return -1;
	start = (unsigned)(hb_rnd(&t->rng) % share);
	for (k = 0; k < share; k++) {
		i = ((start + k) % share) * r->nthreads + t->id;
		if (r->slots[i].exists == exists)
			return (int)i;
	}
	return -1;
}

/* any existing slot of the whole set (webserver's readers) */
static int pick_any(struct fb_thread *t)
{
	return (int)(hb_rnd(&t->rng) % t->run->nfiles);
}

static int f_open(struct fb_thread *t, unsigned i, int flags,
		  struct hdpm_file **ret)
{
	char path[48];

	slot_path(t->run, i, path, sizeof(path));
	op_done(t);
	return hdpm_open(t->run->fs, path, flags, 0644, ret) < 0 ?
		       fb_fail(t, "open") :
		       0;
}

static int f_close(struct fb_thread *t, struct hdpm_file *f)
{
	op_done(t);
	return hdpm_close(f) < 0 ? fb_fail(t, "close") : 0;
}

/* write [from, to) of f in IOSIZE pieces */
static int f_write(struct fb_thread *t, struct hdpm_file *f, uint64_t from,
		   uint64_t to)
{
	uint64_t off;
	size_t n;
	ssize_t w;

	for (off = from; off < to; off += (uint64_t)w) {
		n = to - off < IOSIZE ? (size_t)(to - off) : IOSIZE;
		t->buf[off % 4096] = (char)t->ops;
		w = hdpm_pwrite(f, t->buf, n, off);
		if (w <= 0)
			return fb_fail(t, "write");
	}
	t->user_bytes += to - from;
	return 0;
}

/* createfile + writewholefile (+ the caller's close) */
static int op_create(struct fb_thread *t, unsigned i, struct hdpm_file **ret)
{
	struct fb_slot *s = &t->run->slots[i];

	if (f_open(t, i, O_CREAT | O_EXCL | O_RDWR, ret) < 0)
		return -1;
	s->exists = 1;
	s->size = draw_size(t);
	op_done(t);
	return f_write(t, *ret, 0, s->size);
}

/* appendfilerand: 1..16 KiB at the end */
static int op_append(struct fb_thread *t, struct hdpm_file *f,
		     struct fb_slot *s)
{
	uint64_t n = 1 + hb_rnd(&t->rng) % APPEND_MAX;

	op_done(t);
	if (f_write(t, f, s->size, s->size + n) < 0)
		return -1;
	s->size += n;
	return 0;
}

/* readwholefile */
static int op_read(struct fb_thread *t, struct hdpm_file *f, uint64_t size)
{
	uint64_t off;
	ssize_t n;

	op_done(t);
	for (off = 0; off < size; off += (uint64_t)n) {
		n = hdpm_pread(f, t->buf,
			       size - off < IOSIZE ? (size_t)(size - off) :
						     IOSIZE,
			       off);
		if (n <= 0)
			return fb_fail(t, "read");
	}
	return 0;
}

static int op_delete(struct fb_thread *t, unsigned i)
{
	char path[48];

	slot_path(t->run, i, path, sizeof(path));
	op_done(t);
	if (hdpm_unlink(t->run->fs, path) < 0)
		return fb_fail(t, "delete");
	t->run->slots[i].exists = 0;
	return 0;
}

static int op_stat(struct fb_thread *t, unsigned i)
{
	struct stat st;
	char path[48];

	slot_path(t->run, i, path, sizeof(path));
	op_done(t);
	return hdpm_stat(t->run->fs, path, &st) < 0 ? fb_fail(t, "stat") : 0;
}

/* open, read all, close of slot i (which exists) */
static int open_read_close(struct fb_thread *t, unsigned i)
{
	struct hdpm_file *f;

	if (f_open(t, i, O_RDONLY, &f) < 0)
		return -1;
	if (op_read(t, f, t->run->slots[i].size) < 0) {
		(void)hdpm_close(f);
		return -1;
	}
	return f_close(t, f);
}

/* open, append, (fsync), close of slot i */
static int open_append_close(struct fb_thread *t, unsigned i, int fsync)
{
	struct hdpm_file *f;
	int rc;

	if (f_open(t, i, O_RDWR, &f) < 0)
		return -1;
	rc = op_append(t, f, &t->run->slots[i]);
	if (rc == 0 && fsync)
		op_done(t); /* durable already: hdpm_pwrite returned */
	if (rc < 0) {
		(void)hdpm_close(f);
		return -1;
	}
	return f_close(t, f);
}

/* fileserver.f: create+write whole+close, open+append+close,
 * open+read whole+close, delete, stat */
static int loop_fileserver(struct fb_thread *t)
{
	struct hdpm_file *f;
	int i;

	i = pick(t, 0);
	if (i >= 0) {
		if (op_create(t, (unsigned)i, &f) < 0 || f_close(t, f) < 0)
			return -1;
	}
	i = pick(t, 1);
	if (i >= 0 && open_append_close(t, (unsigned)i, 0) < 0)
		return -1;
	i = pick(t, 1);
	if (i >= 0 && open_read_close(t, (unsigned)i) < 0)
		return -1;
	i = pick(t, 1);
	if (i >= 0 && op_delete(t, (unsigned)i) < 0)
		return -1;
	i = pick(t, 1);
	return i >= 0 ? op_stat(t, (unsigned)i) : 0;
}

/* varmail.f: delete; create+append+fsync+close; open+read whole+append+
 * fsync+close; open+read whole+close */
static int loop_varmail(struct fb_thread *t)
{
	struct hdpm_file *f;
	int i;

	i = pick(t, 1);
	if (i >= 0 && op_delete(t, (unsigned)i) < 0)
		return -1;
	i = pick(t, 0);
	if (i >= 0) {
		struct fb_slot *s = &t->run->slots[i];

		if (f_open(t, (unsigned)i, O_CREAT | O_EXCL | O_RDWR, &f) < 0)
			return -1;
		s->exists = 1;
		s->size = 0;
		if (op_append(t, f, s) < 0)
			return -1;
		op_done(t); /* fsync */
		if (f_close(t, f) < 0)
			return -1;
	}
	i = pick(t, 1);
	if (i >= 0) {
		struct fb_slot *s = &t->run->slots[i];

		if (f_open(t, (unsigned)i, O_RDWR, &f) < 0 ||
		    op_read(t, f, s->size) < 0 || op_append(t, f, s) < 0)
			return -1;
		op_done(t); /* fsync */
		if (f_close(t, f) < 0)
			return -1;
	}
	i = pick(t, 1);
	return i >= 0 ? open_read_close(t, (unsigned)i) : 0;
}

/* webserver.f: 10 x open+read whole+close, append to the shared log */
static int loop_webserver(struct fb_thread *t)
{
	uint64_t n = 1 + hb_rnd(&t->rng) % APPEND_MAX;
	int k;

	for (k = 0; k < 10; k++)
		if (open_read_close(t, (unsigned)pick_any(t)) < 0)
			return -1;
	op_done(t);
	t->buf[0] = (char)t->ops;
	/* O_APPEND: the offset is the file's size under the fs lock */
	if (hdpm_pwrite(t->log, t->buf, (size_t)n, 0) != (ssize_t)n)
		return fb_fail(t, "log append");
	t->user_bytes += n;
	return 0;
}

/* webproxy.f: delete; create+append+close; 5 x open+read whole+close */
static int loop_webproxy(struct fb_thread *t)
{
	struct hdpm_file *f;
	int i, k;

	i = pick(t, 1);
	if (i >= 0 && op_delete(t, (unsigned)i) < 0)
		return -1;
	i = pick(t, 0);
	if (i >= 0) {
		struct fb_slot *s = &t->run->slots[i];

		if (f_open(t, (unsigned)i, O_CREAT | O_EXCL | O_RDWR, &f) < 0)
			return -1;
		s->exists = 1;
		s->size = 0;
		if (op_append(t, f, s) < 0 || f_close(t, f) < 0)
			return -1;
	}
	for (k = 0; k < 5; k++) {
		i = pick(t, 1);
		if (i >= 0 && open_read_close(t, (unsigned)i) < 0)
			return -1;
	}
	return 0;
}

static const struct personality personalities[FB_N] = {
	[FB_FILESERVER] = { "fileserver", 10000, 20, 128u << 10, 80,
			    loop_fileserver },
	[FB_VARMAIL] = { "varmail", 1000, 1000000, 16u << 10, 80,
			 loop_varmail },
	[FB_WEBSERVER] = { "webserver", 1000, 20, 16u << 10, 100,
			   loop_webserver },
	[FB_WEBPROXY] = { "webproxy", 10000, 1000000, 16u << 10, 80,
			  loop_webproxy },
};

int hb_filebench_parse(const char *list, unsigned *ret_which)
{
	char buf[128], *tok, *save = NULL;
	unsigned which = 0, k;

	if (strlen(list) >= sizeof(buf))
		return -1;
	memcpy(buf, list, strlen(list) + 1);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "all")) {
			which |= (1u << FB_N) - 1;
			continue;
		}
		for (k = 0; k < FB_N; k++)
			if (!strcmp(tok, personalities[k].name))
				break;
		if (k == FB_N)
			return -1;
		which |= 1u << k;
	}
	if (!which)
		return -1;
	*ret_which = which;
	return 0;
}

static void *thread_main(void *arg)
{
	struct fb_thread *t = arg;
	uint64_t n;

	(void)pthread_barrier_wait(&t->run->start);
	t->last_ns = hb_now_ns();
	for (n = 0; n < t->run->o->loops; n++) {
		if (__atomic_load_n(&t->run->failed, __ATOMIC_RELAXED) ||
		    t->run->p->loop(t) < 0)
			break;
	}
	return NULL;
}

/* the directories and the preallocated files (untimed) */
static int fileset_make(struct fb_run *r, struct fb_thread *t0)
{
	unsigned i, ndirs = (r->nfiles + r->p->dirwidth - 1) / r->p->dirwidth;
	struct hdpm_file *f;
	char path[48];

	for (i = 0; i < ndirs; i++) {
		snprintf(path, sizeof(path), "/d%u", i);
		if (hdpm_mkdir(r->fs, path, 0755) < 0)
			return fb_fail(t0, "mkdir");
	}
	for (i = 0; i < r->nfiles; i++) {
		if (hb_rnd(&t0->rng) % 100 >= r->p->prealloc_pct)
			continue;
		if (op_create(t0, i, &f) < 0 || f_close(t0, f) < 0)
			return -1;
	}
	if (r->p == &personalities[FB_WEBSERVER]) {
		if (hdpm_open(r->fs, "/log", O_CREAT | O_RDWR, 0644, &f) < 0)
			return fb_fail(t0, "create log");
		(void)hdpm_close(f);
	}
	return 0;
}

struct fb_result {
	double ops_per_sec;
	uint64_t ops;
	uint64_t lat_median_ns, lat_p99_ns; /* of every thread's flowops */
	double lines_per_op, fences_per_op, xplines_per_op, pm_per_user;
	double cow_per_op, log_per_op; /* pages copied, log entries */
};

static uint64_t pool_size(const struct fb_run *r)
{
	uint64_t set = (uint64_t)r->nfiles * r->p->mean_size;
	uint64_t appends = r->o->loops * r->nthreads * 2 * APPEND_MAX;

	/* the set with room for CoW copies and page logs, the appends,
	 * the files each loop creates, and slack for metadata */
	return 4 * set + 2 * appends + (128ULL << 20);
}

static int threads_prepare(struct fb_run *r, struct fb_thread *th)
{
	unsigned k;
	int rc = 0;

	for (k = 0; k < r->nthreads && rc == 0; k++) {
		th[k].run = r;
		th[k].id = k;
		th[k].rng = (r->o->seed + 1) * 0x9e3779b97f4a7c15ULL + k + 1;
		th[k].buf = malloc(IOSIZE);
		if (!th[k].buf) {
			fprintf(stderr, "hdpmbench: out of memory\n");
			return -1;
		}
		memset(th[k].buf, 0x5a, IOSIZE);
		if (r->p == &personalities[FB_WEBSERVER] &&
		    hdpm_open(r->fs, "/log", O_RDWR | O_APPEND, 0, &th[k].log) <
			    0)
			return fb_fail(&th[k], "open log");
	}
	return 0;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* median and p99 of the flowop latencies of all threads (0 if none) */
static void lat_percentiles(const struct fb_thread *th, unsigned nthreads,
			    struct fb_result *res)
{
	size_t n = 0, k, at = 0;
	uint32_t *all;
	unsigned i;

	res->lat_median_ns = res->lat_p99_ns = 0;
	for (i = 0; i < nthreads; i++)
		n += th[i].nlat;
	all = n ? malloc(n * sizeof(*all)) : NULL;
	if (!all)
		return;
	for (i = 0; i < nthreads; i++)
		for (k = 0; k < th[i].nlat; k++)
			all[at++] = th[i].lat[k];
	qsort(all, n, sizeof(*all), u32_cmp);
	res->lat_median_ns = all[n / 2];
	res->lat_p99_ns = all[n * 99 / 100];
	free(all);
}

/* start the threads together, wait for them; the counters of the run */
static int timed_run(struct fb_run *r, struct fb_thread *th,
		     struct fb_result *res)
{
	unsigned k, nthreads = r->nthreads;
	uint64_t t0, t1, user = 0;
	struct hdpm_stats h0, h1;
	struct pma_pm_counters s0, s1;

	pthread_barrier_init(&r->start, NULL, nthreads + 1);
	for (k = 0; k < nthreads; k++)
		if (pthread_create(&th[k].tid, NULL, thread_main, &th[k])) {
			fprintf(stderr, "hdpmbench: cannot start threads\n");
			exit(1);
		}
	pma_pm_counters(&s0, 0);
	hdpm_stats(r->fs, &h0);
	(void)pthread_barrier_wait(&r->start);
	t0 = hb_now_ns();
	for (k = 0; k < nthreads; k++)
		pthread_join(th[k].tid, NULL);
	t1 = hb_now_ns();
	pma_pm_counters(&s1, 0);
	hdpm_stats(r->fs, &h1);
	pthread_barrier_destroy(&r->start);
	if (r->failed)
		return -1;
	res->ops = 0;
	for (k = 0; k < nthreads; k++) {
		res->ops += th[k].ops;
		user += th[k].user_bytes;
	}
	if (!res->ops)
		return -1;
	res->ops_per_sec = (double)res->ops * 1e9 / (double)(t1 - t0);
	lat_percentiles(th, nthreads, res);
	res->lines_per_op = (double)(s1.lines_flushed - s0.lines_flushed) /
			    (double)res->ops;
	res->fences_per_op = (double)(s1.fences - s0.fences) / (double)res->ops;
	res->xplines_per_op =
		(double)(s1.xplines - s0.xplines) / (double)res->ops;
	res->cow_per_op =
		(double)(h1.cow_pages - h0.cow_pages) / (double)res->ops;
	res->log_per_op =
		(double)(h1.log_appends - h0.log_appends) / (double)res->ops;
	res->pm_per_user =
		user ? (double)(s1.lines_flushed - s0.lines_flushed) * 64.0 /
				(double)user :
		       0.0;
	return 0;
}

static int run_one(const struct fb_opts *o, const struct personality *p,
		   unsigned nthreads, const char *mode, unsigned flags,
		   struct fb_result *res)
{
	struct fb_run r = { .o = o, .p = p, .nthreads = nthreads };
	struct fb_thread *th = calloc(nthreads + 1, sizeof(*th));
	struct pma_heap *heap = NULL;
	char path[4096];
	unsigned k;
	int rc = -1;

	r.nfiles = p->nfiles / o->scale ? p->nfiles / o->scale : 1;
	r.slots = calloc(r.nfiles, sizeof(*r.slots));
	snprintf(path, sizeof(path), "%s/hdpmbench-fb-%d-%s.pool", o->dir,
		 (int)getpid(), mode);
	if (!th || !r.slots) {
		fprintf(stderr, "hdpmbench: out of memory\n");
		goto out;
	}
	if (r.nfiles + r.nfiles / p->dirwidth + 3 > HDPM_FB_ENTRIES_MAX) {
		fprintf(stderr,
			"hdpmbench: %s: %u files do not fit HDPM's %u "
			"inodes; raise --scale\n",
			p->name, r.nfiles, HDPM_FB_ENTRIES_MAX);
		goto out;
	}
	if (pma_heap_create(path, pool_size(&r), PMA_HEAP_FORCE, &heap) < 0) {
		fprintf(stderr, "hdpmbench: %s: %s\n", path, pma_errormsg());
		goto out;
	}
	if (hdpm_mount(heap, o->gc_thread ? flags : flags | HDPM_NO_GC_THREAD,
		       &r.fs) < 0) {
		fprintf(stderr, "hdpmbench: mount: %s\n", hdpm_errormsg());
		goto out;
	}
	/* thread nthreads is the setup's: its rng and buffer */
	th[nthreads].run = &r;
	th[nthreads].rng = o->seed * 2654435761ULL + 7;
	th[nthreads].buf = malloc(IOSIZE);
	if (!th[nthreads].buf || fileset_make(&r, &th[nthreads]) < 0 ||
	    threads_prepare(&r, th) < 0)
		goto out;
	rc = timed_run(&r, th, res);
out:
	for (k = 0; th && k <= nthreads; k++) {
		if (th[k].log)
			(void)hdpm_close(th[k].log);
		free(th[k].buf);
		free(th[k].lat);
	}
	hdpm_unmount(r.fs);
	pma_heap_close(heap);
	(void)unlink(path);
	free(r.slots);
	free(th);
	return rc;
}

static void row_print(const struct fb_opts *o, const struct personality *p,
		      unsigned nthreads, const char *mode, const char *gran,
		      const struct fb_result *r)
{
	if (o->json) {
		printf("{\"bench\":\"%s\",\"mode\":\"%s\",\"threads\":%u,"
		       "\"persistence\":\"%s\",\"scale\":%u,\"ops\":%" PRIu64
		       ",\"ops_per_sec\":%.0f,\"flushes_per_op\":%.3f,"
		       "\"fences_per_op\":%.3f,\"xplines_per_op\":%.3f,"
		       "\"pm_bytes_per_user_byte\":%.3f,\"cow_pages_per_op\":%.3f,"
		       "\"log_appends_per_op\":%.3f,\"lat_median_ns\":%" PRIu64
		       ",\"lat_p99_ns\":%" PRIu64 "}\n",
		       p->name, mode, nthreads, gran, o->scale, r->ops,
		       r->ops_per_sec, r->lines_per_op, r->fences_per_op,
		       r->xplines_per_op, r->pm_per_user, r->cow_per_op,
		       r->log_per_op, r->lat_median_ns, r->lat_p99_ns);
		return;
	}
	printf("%-11s %-6s %3u %-10s %10.0f %9.2f %9.2f %9.2f %8.3f %7.3f "
	       "%7.3f\n",
	       p->name, mode, nthreads, gran, r->ops_per_sec, r->lines_per_op,
	       r->fences_per_op, r->xplines_per_op, r->pm_per_user,
	       r->cow_per_op, r->log_per_op);
}

static void ratio_print(const struct fb_opts *o, const struct personality *p,
			unsigned nthreads, double ratio)
{
	if (o->json)
		printf("{\"bench\":\"%s\",\"threads\":%u,"
		       "\"hybrid_over_cow\":%.3f,\"target\":1.33}\n",
		       p->name, nthreads, ratio);
	else
		printf("%-11s %-6s %3u hybrid/cow %.3f (target 1.33)\n",
		       p->name, "ratio", nthreads, ratio);
}

static int cmp_res(const void *a, const void *b)
{
	double x = ((const struct fb_result *)a)->ops_per_sec;
	double y = ((const struct fb_result *)b)->ops_per_sec;

	return x < y ? -1 : x > y;
}

/*
 * --repeat runs of each mode, hybrid and cow alternating (so that a burst
 * of load from elsewhere hits both), and the run with the median ops/s
 * of each mode printed
 */
static int run_pair(const struct fb_opts *o, const struct personality *p,
		    unsigned n, const char *gran)
{
	static const char *const names[2] = { "hybrid", "cow" };
	static const unsigned flags[2] = { HDPM_HYBRID, HDPM_COW_ONLY };
	struct fb_result res[2][FB_REPEAT_MAX];
	unsigned rep, m;

	memset(res, 0, sizeof(res));
	for (rep = 0; rep < o->repeat; rep++)
		for (m = 0; m < 2; m++)
			if ((o->modes & (1 << m)) &&
			    run_one(o, p, n, names[m], flags[m], &res[m][rep]) <
				    0)
				return -1;
	for (m = 0; m < 2; m++) {
		if (!(o->modes & (1 << m)))
			continue;
		qsort(res[m], o->repeat, sizeof(res[m][0]), cmp_res);
		row_print(o, p, n, names[m], gran, &res[m][o->repeat / 2]);
	}
	if (o->modes == 3)
		ratio_print(o, p, n,
			    res[0][o->repeat / 2].ops_per_sec /
				    res[1][o->repeat / 2].ops_per_sec);
	(void)fflush(stdout);
	return 0;
}

int hb_filebench_run(const struct fb_opts *o, const char *gran)
{
	unsigned k, ti;

	if (!o->json)
		printf("%-11s %-6s %3s %-10s %10s %9s %9s %9s %8s %7s %7s\n",
		       "bench", "mode", "thr", "persist", "ops/s", "lines/op",
		       "fences/op", "xpl/op", "pm/user", "cow/op", "log/op");
	for (k = 0; k < FB_N; k++) {
		if (!(o->which & (1u << k)))
			continue;
		for (ti = 0; ti < 8 && o->threads[ti]; ti++)
			if (run_pair(o, &personalities[k], o->threads[ti],
				     gran) < 0)
				return -1;
	}
	return 0;
}
