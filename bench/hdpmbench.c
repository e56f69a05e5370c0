/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpmbench: HDPM's hybrid write path against copy-on-write only
 * (HDPM_COW_ONLY, the NOVA way) in the same engine, one run, one pool
 * type. Per mode: a fresh pool, a file set written sequentially, then
 * phases: random overwrites of 64 B, 256 B, 1 KiB and 4 KiB (aligned to
 * their size), 4 KiB random reads after them, and 1 KiB appends, by one
 * thread or, with --threads, by N threads at once (each on its own share
 * of the files, or with --shared on all of them). Each phase reports
 * ops/s (all threads), latency median, p99 and p99.9 (over every op), the
 * lib/pmem counters per op (cache lines flushed, fences; every thread's)
 * and PM bytes written per user byte (flushed lines x 64 / bytes the
 * callers wrote).
 * --filebench runs the Filebench personalities instead (hdpm-filebench.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "hdpmbench.h"
#include "hdpm.h"
#include "pmalloc.h"

#define PG 4096u
#define FILL_CHUNK (1u << 20)

struct opts {
	const char *dir;
	uint64_t set_size; /* bytes over all files */
	unsigned nfiles;
	uint64_t ops; /* per phase */
	uint64_t seed;
	int json;
	int modes; /* bit 0 hybrid, bit 1 cow */
	int gc_thread; /* --gc-thread: hybrid mounts run the GC thread */
	int shared; /* --shared: every thread uses every file */
	struct fb_opts fb; /* --filebench (fb.which != 0) and its options */
};

struct phase {
	const char *name;
	unsigned size; /* bytes per op */
	int kind; /* PH_OVERWRITE, PH_READ, PH_APPEND */
};

enum { PH_OVERWRITE, PH_READ, PH_APPEND };

static const struct phase phases[] = {
	{ "overwrite-64", 64, PH_OVERWRITE },
	{ "overwrite-256", 256, PH_OVERWRITE },
	{ "overwrite-1k", 1024, PH_OVERWRITE },
	{ "overwrite-4k", 4096, PH_OVERWRITE },
	{ "read-4k", 4096, PH_READ },
	{ "append-1k", 1024, PH_APPEND },
};
#define NPHASES (sizeof(phases) / sizeof(phases[0]))

struct result {
	double ops_per_sec;
	uint64_t median_ns, p99_ns, p999_ns;
	double flushes_per_op, fences_per_op, pm_per_user;
};

struct bench {
	const struct opts *o;
	struct pma_heap *heap;
	struct hdpm_fs *fs;
	struct hdpm_file **files;
	uint64_t file_size;
	uint64_t rng;
	uint64_t *lat;
	unsigned nthreads; /* of the running phases */
};

/* one thread of a phase: ops [first, first + n) of b->lat */
struct worker {
	struct bench *b;
	const struct phase *ph;
	unsigned id;
	uint64_t rng;
	uint64_t first, n;
	int rc;
	char buf[PG];
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int fail(const char *what, const char *msg)
{
	fprintf(stderr, "hdpmbench: %s: %s\n", what, msg);
	return -1;
}

/* the file set: nfiles files of file_size, written in 1 MiB pieces */
static int files_make(struct bench *b)
{
	char path[32], *chunk;
	uint64_t off;
	unsigned i;
	int rc = 0;

	chunk = malloc(FILL_CHUNK);
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
	b->files = calloc(b->o->nfiles, sizeof(*b->files));
	if (!chunk || !b->files) {
		free(chunk);
		return fail("setup", "out of memory");
	}
	memset(chunk, 0xa5, FILL_CHUNK);
	for (i = 0; i < b->o->nfiles && rc == 0; i++) {
		snprintf(path, sizeof(path), "/f%u", i);
		if (hdpm_open(b->fs, path, O_CREAT | O_RDWR, 0644,
			      &b->files[i]) < 0) {
			rc = fail("create", hdpm_errormsg());
			break;
		}
		for (off = 0; off < b->file_size && rc == 0; off += FILL_CHUNK)
			if (hdpm_pwrite(b->files[i], chunk,
					b->file_size - off < FILL_CHUNK ?
						b->file_size - off :
						FILL_CHUNK,
					off) < 0)
				rc = fail("fill", hdpm_errormsg());
	}
	free(chunk);
	return rc;
}

/* files of worker w: its own share (file id, id + nthreads, ...), or all
 * of them (--shared) */
static uint64_t own_files(const struct worker *w)
{
	unsigned nt = w->b->nthreads, nf = w->b->o->nfiles;

	return (nf - w->id + nt - 1) / nt;
}

static struct hdpm_file *pick_file(struct worker *w, uint64_t k)
{
	struct bench *b = w->b;

	if (b->o->shared)
		return b->files[k % b->o->nfiles];
	return b->files[w->id + b->nthreads * (k % own_files(w))];
}

/* one timed op of phase ph (the worker's i-th); 0 or -1 */
static int op_run(struct worker *w, uint64_t i)
{
	const struct phase *ph = w->ph;
	struct bench *b = w->b;
	struct hdpm_file *f = pick_file(w, hb_rnd(&w->rng));
	uint64_t slots = b->file_size / ph->size ? b->file_size / ph->size : 1;
	uint64_t off = (hb_rnd(&w->rng) % slots) * ph->size;
	ssize_t n;

	w->buf[i % PG] = (char)i;
	switch (ph->kind) {
	case PH_OVERWRITE:
		n = hdpm_pwrite(f, w->buf, ph->size, off);
		break;
	case PH_READ:
		n = hdpm_pread(f, w->buf, ph->size, off);
		break;
	default:
		/* each file is appended to by one thread: its owner */
		f = b->files[w->id + b->nthreads * (i % own_files(w))];
		n = hdpm_pwrite(f, w->buf, ph->size,
				b->file_size + i / own_files(w) * ph->size);
		break;
	}
	return n == (ssize_t)ph->size ? 0 : fail(ph->name, hdpm_errormsg());
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t i, t;

	for (i = 0; i < w->n; i++) {
		t = hb_now_ns();
		if (op_run(w, i) < 0) {
			w->rc = -1;
			break;
		}
		w->b->lat[w->first + i] = hb_now_ns() - t;
	}
	return NULL;
}

static int phase_run(struct bench *b, const struct phase *ph, struct result *r)
{
	struct worker *w = calloc(b->nthreads, sizeof(*w));
	pthread_t *tid = calloc(b->nthreads, sizeof(*tid));
	uint64_t t0, t1, user, ops = b->o->ops;
	struct pma_pm_counters s0, s1;
	unsigned i;
	int rc = 0;

	if (!w || !tid) {
		free(w);
		free(tid);
		return fail("setup", "out of memory");
	}
	for (i = 0; i < b->nthreads; i++) {
		w[i].b = b;
		w[i].ph = ph;
		w[i].id = i;
		w[i].rng = hb_rnd(&b->rng) | 1;
		w[i].first = ops * i / b->nthreads;
		w[i].n = ops * (i + 1) / b->nthreads - w[i].first;
	}
	/* every thread's flushes and fences (the GC thread's too, if on) */
	pma_pm_counters(&s0, 0);
	t0 = hb_now_ns();
	for (i = 0; i < b->nthreads; i++)
		if (pthread_create(&tid[i], NULL, worker_main, &w[i])) {
			w[i].rc = -1;
			break;
		}
	while (i-- > 0)
		pthread_join(tid[i], NULL);
	t1 = hb_now_ns();
	pma_pm_counters(&s1, 0);
	for (i = 0; i < b->nthreads; i++)
		rc |= w[i].rc;
	free(w);
	free(tid);
	if (rc)
		return -1;
	qsort(b->lat, ops, sizeof(*b->lat), cmp_u64);
	r->ops_per_sec = (double)ops * 1e9 / (double)(t1 - t0);
	r->median_ns = b->lat[ops / 2];
	r->p99_ns = b->lat[ops * 99 / 100];
	r->p999_ns = b->lat[ops * 999 / 1000];
	r->flushes_per_op = (double)(s1.lines_flushed - s0.lines_flushed) /
			    (double)b->o->ops;
	r->fences_per_op = (double)(s1.fences - s0.fences) / (double)b->o->ops;
	user = ph->kind == PH_READ ? 0 : b->o->ops * ph->size;
	r->pm_per_user = user ? (double)(s1.lines_flushed - s0.lines_flushed) *
					 64.0 / (double)user :
				0.0;
	return 0;
}

static void row_print(const struct opts *o, const char *mode, const char *gran,
		      unsigned threads, const struct phase *ph,
		      const struct result *r)
{
	if (o->json) {
		printf("{\"bench\":\"%s\",\"mode\":\"%s\",\"threads\":%u,"
		       "\"shared\":%s,"
		       "\"persistence\":\"%s\",\"ops\":%" PRIu64
		       ",\"ops_per_sec\":%.0f,\"lat_median_ns\":%" PRIu64
		       ",\"lat_p99_ns\":%" PRIu64 ",\"lat_p999_ns\":%" PRIu64
		       ",\"flushes_per_op\":%.3f,\"fences_per_op\":%.3f,"
		       "\"pm_bytes_per_user_byte\":%.3f}\n",
		       ph->name, mode, threads, o->shared ? "true" : "false",
		       gran, o->ops, r->ops_per_sec, r->median_ns, r->p99_ns,
		       r->p999_ns, r->flushes_per_op, r->fences_per_op,
		       r->pm_per_user);
		return;
	}
	printf("%-14s %-6s %3u %-10s %10.0f %9" PRIu64 " %9" PRIu64 " %9" PRIu64
	       " %8.2f %8.2f %9.2f\n",
	       ph->name, mode, threads, gran, r->ops_per_sec, r->median_ns,
	       r->p99_ns, r->p999_ns, r->flushes_per_op, r->fences_per_op,
	       r->pm_per_user);
}

static int mode_setup(struct bench *b, const char *path, unsigned flags)
{
	/* the set, its copies during CoW and logs (2x), the appends with
	 * their logs (2 KiB per op at most), indexes and slack */
	uint64_t size = b->o->set_size * 2 + b->o->ops * 2048 + (64ULL << 20);

	if (pma_heap_create(path, size, PMA_HEAP_FORCE, &b->heap) < 0)
		return fail(path, pma_errormsg());
	/* the GC thread is off unless asked for: on these 2 vCPUs its
	 * free-space polls (pma_heap_stats) compete with the timed thread */
	if (hdpm_mount(b->heap,
		       b->o->gc_thread ? flags : flags | HDPM_NO_GC_THREAD,
		       &b->fs) < 0)
		return fail("mount", hdpm_errormsg());
	return files_make(b);
}

static void mode_teardown(struct bench *b, const char *path)
{
	unsigned i;

	for (i = 0; b->files && i < b->o->nfiles; i++)
		hdpm_close(b->files[i]);
	free(b->files);
	b->files = NULL;
	hdpm_unmount(b->fs);
	b->fs = NULL;
	pma_heap_close(b->heap);
	b->heap = NULL;
	(void)unlink(path);
}

static int mode_run(const struct opts *o, const char *mode, unsigned flags,
		    const char *gran, unsigned threads)
{
	struct bench b = { .o = o,
			   .rng = o->seed * 2654435761ULL + 1,
			   .nthreads = threads };
	struct result r;
	char path[4096];
	size_t i;
	int rc;

	snprintf(path, sizeof(path), "%s/hdpmbench-%d-%s.pool", o->dir,
		 (int)getpid(), mode);
	b.file_size = o->set_size / o->nfiles / PG * PG;
	b.lat = calloc(o->ops, sizeof(*b.lat));
	rc = b.lat ? mode_setup(&b, path, flags) : fail("setup", "no memory");
	for (i = 0; rc == 0 && i < NPHASES; i++) {
		rc = phase_run(&b, &phases[i], &r);
		if (rc == 0)
			row_print(o, mode, gran, threads, &phases[i], &r);
	}
	(void)fflush(stdout);
	mode_teardown(&b, path);
	free(b.lat);
	return rc;
}

const char *hb_probe_gran(const char *dir)
{
	const char *mode;

	return bench_pm_mode(dir, &mode) < 0 ? NULL : mode;
}

static void usage(FILE *f)
{
	fputs("usage: hdpmbench [--dir DIR] [--set-size SIZE] [--files N]\n"
	      "                 [--ops N] [--mode hybrid|cow|both] [--seed N]\n"
	      "                 [--threads N[,N...]] [--shared]\n"
	      "                 [--gc-thread] [--json]\n"
	      "       hdpmbench --filebench fileserver,varmail,webserver,"
	      "webproxy|all\n"
	      "                 [--threads N[,N...]] [--scale N] [--loops N]\n"
	      "                 [--repeat N]\n"
	      "                 [--dir DIR] [--mode M] [--seed N] [--gc-thread]"
	      " [--json]\n"
	      "\n"
	      "Hybrid vs copy-on-write-only HDPM: random overwrites of\n"
	      "64 B..4 KiB, 4 KiB reads after them, appends; latency median,\n"
	      "p99 and p99.9. --threads: run each phase with N threads (the\n"
	      "ops split between them), each on its own share of the files\n"
	      "(--files must be >= N) or, with --shared, on all of them\n"
	      "(appends always go to the thread's own files).\n"
	      "Defaults: --dir /dev/shm --set-size 16M --files 16 --ops 100000\n"
	      "--threads 1; the background GC thread is off unless --gc-thread.\n"
	      "\n"
	      "--filebench: Filebench's personalities in-process, hybrid and\n"
	      "cow in one run, with flowops/s, lines flushed, fences and\n"
	      "XPLines per op, PM bytes per user byte and hybrid/cow;\n"
	      "--json rows add each flowop's latency, median and p99.\n"
	      "--threads: thread counts to run (default 1, at most 7 counts\n"
	      "of 1..64); --scale: divide Filebench's file counts (default 10,\n"
	      "1 for Filebench's own); --loops: flowop loops per thread\n"
	      "(default 2000); --repeat: runs per mode, hybrid and cow\n"
	      "alternating, the median printed (default 3, at most 15).\n",
	      f);
}

static int parse_u64(const char *s, uint64_t *ret)
{
	char *end;

	errno = 0;
	*ret = strtoull(s, &end, 10);
	return errno || end == s || *end || s[0] == '-' ? -1 : 0;
}

/* "1,2,10": at most 7 counts of 1..64, 0-ended in threads[8] */
static int parse_threads(const char *arg, unsigned *threads)
{
	char buf[64], *tok, *save = NULL;
	unsigned n = 0;
	uint64_t v;

	if (strlen(arg) >= sizeof(buf))
		return -1;
	memcpy(buf, arg, strlen(arg) + 1);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == 7 || parse_u64(tok, &v) < 0 || !v || v > 64)
			return -1;
		threads[n++] = (unsigned)v;
	}
	threads[n] = 0;
	return n ? 0 : -1;
}

static int parse_opt(int c, const char *arg, struct opts *o)
{
	uint64_t v = 0;

	switch (c) {
	case 'F':
		return hb_filebench_parse(arg, &o->fb.which);
	case 'T':
		return parse_threads(arg, o->fb.threads);
	case 'C':
		if (parse_u64(arg, &v) < 0 || !v || v > 100000)
			return -1;
		o->fb.scale = (unsigned)v;
		return 0;
	case 'R':
		if (parse_u64(arg, &v) < 0 || !v || v > FB_REPEAT_MAX)
			return -1;
		o->fb.repeat = (unsigned)v;
		return 0;
	case 'L':
		return parse_u64(arg, &o->fb.loops) < 0 || !o->fb.loops ? -1 :
									  0;
	case 'd':
		o->dir = arg;
		return 0;
	case 's':
		return bench_size_parse(arg, &o->set_size) < 0 ? -1 : 0;
	case 'f':
		if (parse_u64(arg, &v) < 0 || !v || v > 4000)
			return -1;
		o->nfiles = (unsigned)v;
		return 0;
	case 'n':
		return parse_u64(arg, &o->ops) < 0 || !o->ops ? -1 : 0;
	case 'S':
		return parse_u64(arg, &o->seed);
	case 'm':
		o->modes = !strcmp(arg, "hybrid") ? 1 :
			   !strcmp(arg, "cow")	  ? 2 :
			   !strcmp(arg, "both")	  ? 3 :
						    0;
		return o->modes ? 0 : -1;
	case 'j':
		o->json = 1;
		return 0;
	case 'g':
		o->gc_thread = 1;
		return 0;
	case 'H':
		o->shared = 1;
		return 0;
	default:
		return -1;
	}
}

/* each thread of the write/read phases needs an op and a file of its
 * own (its appends go there, --shared or not) */
static int threads_check(const struct opts *o)
{
	unsigned t;

	for (t = 0; o->fb.threads[t]; t++)
		if (o->fb.threads[t] > o->ops || o->fb.threads[t] > o->nfiles) {
			fprintf(stderr,
				"hdpmbench: %u threads need --files and --ops "
				">= %u\n",
				o->fb.threads[t], o->fb.threads[t]);
			return -1;
		}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "set-size", required_argument, NULL, 's' },
		{ "files", required_argument, NULL, 'f' },
		{ "ops", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 'S' },
		{ "mode", required_argument, NULL, 'm' },
		{ "json", no_argument, NULL, 'j' },
		{ "gc-thread", no_argument, NULL, 'g' },
		{ "shared", no_argument, NULL, 'H' },
		{ "filebench", required_argument, NULL, 'F' },
		{ "threads", required_argument, NULL, 'T' },
		{ "scale", required_argument, NULL, 'C' },
		{ "loops", required_argument, NULL, 'L' },
		{ "repeat", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .dir = "/dev/shm",
			  .set_size = 16ULL << 20,
			  .nfiles = 16,
			  .ops = 100000,
			  .seed = 1,
			  .modes = 3,
			  .fb = { .threads = { 1 },
				  .scale = 10,
				  .loops = 2000,
				  .repeat = 3 } };
	const char *gran;
	unsigned t;
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, "d:s:f:n:S:m:jghHF:T:C:L:R:",
				longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (parse_opt(c, optarg, &o) < 0) {
			fprintf(stderr, "hdpmbench: bad option value\n");
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || o.set_size / o.nfiles < PG) {
		usage(stderr);
		return 2;
	}
	if (!o.fb.which && threads_check(&o) < 0)
		return 2;
	gran = hb_probe_gran(o.dir);
	if (!gran) {
		fprintf(stderr, "hdpmbench: cannot map a file in '%s'\n",
			o.dir);
		return 1;
	}
	if (o.fb.which) {
		o.fb.dir = o.dir;
		o.fb.seed = o.seed;
		o.fb.json = o.json;
		o.fb.gc_thread = o.gc_thread;
		o.fb.modes = o.modes;
		return hb_filebench_run(&o.fb, gran) < 0 ? 1 : 0;
	}
	if (!o.json)
		printf("%-14s %-6s %3s %-10s %10s %9s %9s %9s %8s %8s %9s\n",
		       "bench", "mode", "thr", "persist", "ops/s", "med_ns",
		       "p99_ns", "p999_ns", "flush/op", "fence/op", "pm/user");
	for (t = 0; rc == 0 && o.fb.threads[t]; t++) {
		if (o.modes & 1)
			rc = mode_run(&o, "hybrid", HDPM_HYBRID, gran,
				      o.fb.threads[t]);
		if (rc == 0 && (o.modes & 2))
			rc = mode_run(&o, "cow", HDPM_COW_ONLY, gran,
				      o.fb.threads[t]);
	}
	return rc ? 1 : 0;
}
