/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpmbench: HDPM's hybrid write path against copy-on-write only
 * (HDPM_COW_ONLY, the NOVA way) in the same engine, one run, one pool
 * type. Per mode: a fresh pool, a file set written sequentially, then
 * single-thread phases: random overwrites of 64 B, 256 B, 1 KiB and
 * 4 KiB (aligned to their size), 4 KiB random reads after them, and
 * 1 KiB appends. Each phase reports ops/s, latency median and p99, the
 * lib/pmem counters per op (cache lines flushed, fences) and PM bytes
 * written per user byte (flushed lines x 64 / bytes the caller wrote).
 * --filebench runs the Filebench personalities instead (hdpm-filebench.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hdpmbench.h"
#include "hdpm.h"
#include "pmalloc.h"
#include "pmem/pm.h"
#include "util/size.h"

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
	uint64_t median_ns, p99_ns;
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

/* one timed op of phase ph; 0 or -1 */
static int op_run(struct bench *b, const struct phase *ph, uint64_t i)
{
	struct hdpm_file *f = b->files[hb_rnd(&b->rng) % b->o->nfiles];
	uint64_t slots = b->file_size / ph->size ? b->file_size / ph->size : 1;
	uint64_t off = (hb_rnd(&b->rng) % slots) * ph->size;
	ssize_t n;

	b->buf[i % PG] = (char)i;
	switch (ph->kind) {
	case PH_OVERWRITE:
		n = hdpm_pwrite(f, b->buf, ph->size, off);
		break;
	case PH_READ:
		n = hdpm_pread(f, b->buf, ph->size, off);
		break;
	default:
		f = b->files[i % b->o->nfiles];
		n = hdpm_pwrite(f, b->buf, ph->size,
				b->file_size + i / b->o->nfiles * ph->size);
		break;
	}
	return n == (ssize_t)ph->size ? 0 : fail(ph->name, hdpm_errormsg());
}

static int phase_run(struct bench *b, const struct phase *ph, struct result *r)
{
	struct pm_stats s0, s1;
	uint64_t i, t, t0, t1, user;

	pm_stats_get(&s0);
	t0 = hb_now_ns();
	for (i = 0; i < b->o->ops; i++) {
		t = hb_now_ns();
		if (op_run(b, ph, i) < 0)
			return -1;
		b->lat[i] = hb_now_ns() - t;
	}
	t1 = hb_now_ns();
	pm_stats_get(&s1);
	qsort(b->lat, b->o->ops, sizeof(*b->lat), cmp_u64);
	r->ops_per_sec = (double)b->o->ops * 1e9 / (double)(t1 - t0);
	r->median_ns = b->lat[b->o->ops / 2];
	r->p99_ns = b->lat[b->o->ops * 99 / 100];
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
		      const struct phase *ph, const struct result *r)
{
	if (o->json) {
		printf("{\"bench\":\"%s\",\"mode\":\"%s\",\"threads\":1,"
		       "\"persistence\":\"%s\",\"ops\":%" PRIu64
		       ",\"ops_per_sec\":%.0f,\"lat_median_ns\":%" PRIu64
		       ",\"lat_p99_ns\":%" PRIu64
		       ",\"flushes_per_op\":%.3f,\"fences_per_op\":%.3f,"
		       "\"pm_bytes_per_user_byte\":%.3f}\n",
		       ph->name, mode, gran, o->ops, r->ops_per_sec,
		       r->median_ns, r->p99_ns, r->flushes_per_op,
		       r->fences_per_op, r->pm_per_user);
		return;
	}
	printf("%-14s %-6s %3d %-10s %10.0f %9" PRIu64 " %9" PRIu64
	       " %8.2f %8.2f %9.2f\n",
	       ph->name, mode, 1, gran, r->ops_per_sec, r->median_ns, r->p99_ns,
	       r->flushes_per_op, r->fences_per_op, r->pm_per_user);
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
		    const char *gran)
{
	struct bench b = { .o = o, .rng = o->seed * 2654435761ULL + 1 };
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
			row_print(o, mode, gran, &phases[i], &r);
	}
	(void)fflush(stdout);
	mode_teardown(&b, path);
	free(b.lat);
	return rc;
}

const char *hb_probe_gran(const char *dir)
{
	char path[4096];
	struct pm_map *map;
	const char *name = NULL;
	int fd;

	snprintf(path, sizeof(path), "%s/hdpmbench-%d-probe", dir,
		 (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, 1 << 16) == 0 && pm_map_new(fd, 0, &map) == 0) {
		name = pm_granularity_name(pm_map_granularity(map));
		pm_map_delete(&map);
	}
	close(fd);
	(void)unlink(path);
	return name;
}

static void usage(FILE *f)
{
	fputs("usage: hdpmbench [--dir DIR] [--set-size SIZE] [--files N]\n"
	      "                 [--ops N] [--mode hybrid|cow|both] [--seed N]\n"
	      "                 [--gc-thread] [--json]\n"
	      "       hdpmbench --filebench fileserver,varmail,webserver,"
	      "webproxy|all\n"
	      "                 [--threads N[,N...]] [--scale N] [--loops N]\n"
	      "                 [--repeat N]\n"
	      "                 [--dir DIR] [--mode M] [--seed N] [--gc-thread]"
	      " [--json]\n"
	      "\n"
	      "Hybrid vs copy-on-write-only HDPM, single thread: random\n"
	      "overwrites of 64 B..4 KiB, 4 KiB reads after them, appends.\n"
	      "Defaults: --dir /dev/shm --set-size 16M --files 16 --ops 100000;\n"
	      "the background GC thread is off unless --gc-thread.\n"
	      "\n"
	      "--filebench: Filebench's personalities in-process, hybrid and\n"
	      "cow in one run, with flowops/s, lines flushed, fences and\n"
	      "XPLines per op, PM bytes per user byte and hybrid/cow.\n"
	      "--threads: thread counts to run (default 1, at most 7 counts\n"
	      "of 1..64); --scale: divide Filebench's file counts (default 10;\n"
	      "HDPM holds 4096 inodes); --loops: flowop loops per thread\n"
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
		return util_size_parse(arg, &o->set_size) < 0 ? -1 : 0;
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
	default:
		return -1;
	}
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
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, "d:s:f:n:S:m:jghF:T:C:L:R:",
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
		printf("%-14s %-6s %3s %-10s %10s %9s %9s %8s %8s %9s\n",
		       "bench", "mode", "thr", "persist", "ops/s", "med_ns",
		       "p99_ns", "flush/op", "fence/op", "pm/user");
	if (o.modes & 1)
		rc = mode_run(&o, "hybrid", HDPM_HYBRID, gran);
	if (rc == 0 && (o.modes & 2))
		rc = mode_run(&o, "cow", HDPM_COW_ONLY, gran);
	return rc ? 1 : 0;
}
