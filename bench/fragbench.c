/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fragbench: the memory-usage benchmark of issue 19. The Rumble et al.
 * (FAST'14) workloads W1..W7 as PMDK's obj_fragmentation2 runs them: each
 * allocation phase allocates 5000 MB in total, and whenever more than
 * 1000 MB are live it frees 200 random live objects; a workload is phase
 * 1 sizes, the deletion of a fraction of the live objects, phase 2 sizes.
 * Sizes are uniform in [min, max); byte counts are the requested sizes,
 * so every allocator gets the same operations (same seed). Measured per
 * allocator: the PEAK footprint (bytes of the pool the allocator holds:
 * pmalloc's pages in use, exact high-water mark kept by the library;
 * libpmemobj's runs plus huge allocations from its CTL statistics,
 * sampled after every allocation), less what it held right after open
 * (metadata, the benchmark's slot array in the root object), and its
 * ratio to the peak live bytes; also the first -ENOMEM in the pool.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "common.h"

#define FB_ALLOC_TOTAL (5000ULL << 20) /* per allocation phase */
#define FB_LIVE_CAP (1000ULL << 20)
#define FB_FREES 200 /* frees each time the live cap is passed */

struct fb_workload {
	const char *name;
	size_t min1, max1; /* phase 1 sizes */
	double delete_frac; /* deleted between the phases */
	size_t min2, max2; /* phase 2 sizes */
};

static const struct fb_workload fb_workloads[] = {
	{ "W1", 100, 100, 0.0, 130, 130 },
	{ "W2", 100, 100, 0.9, 130, 130 },
	{ "W3", 100, 150, 0.0, 200, 250 },
	{ "W4", 100, 150, 0.9, 200, 250 },
	{ "W5", 100, 200, 0.5, 1000, 2000 },
	{ "W6", 1000, 2000, 0.9, 1500, 2500 },
	{ "W7", 50, 150, 0.9, 5000, 15000 },
};
#define FB_NWL (sizeof(fb_workloads) / sizeof(fb_workloads[0]))

static const struct bench_alloc *const fb_allocs[] = {
	&bench_alloc_pmalloc,
	&bench_alloc_pmalloc_nomorph,
	&bench_alloc_pmemobj,
};
#define FB_NALLOC (sizeof(fb_allocs) / sizeof(fb_allocs[0]))

struct fb_opts {
	const char *dir;
	double scale;
	uint64_t pool_size; /* 0: sized for the workload */
	uint64_t seed;
	unsigned wl_mask, alloc_mask;
	int json;
	int byte; /* BYTE mode, else CACHE_LINE */
	const char *mode; /* as probed */
};

/* one (workload, allocator) run */
struct fb_run {
	const struct fb_workload *wl;
	const struct bench_alloc *alloc;
	void *ctx;
	uint64_t rng;
	size_t nslots;
	size_t *live; /* slots in use, dense */
	size_t nlive;
	size_t *free_slots; /* stack */
	size_t nfree;
	uint32_t *size; /* requested bytes per slot */
	uint64_t live_bytes, peak_live;
	uint64_t baseline, sampled_peak;
	int sample; /* the allocator keeps no peak: sample every alloc */
	uint64_t ops;
	int enomem; /* 0, or the phase (1, 2) of the first -ENOMEM */
	uint64_t enomem_live, enomem_allocated, allocated;
	int err;
	char errmsg[160];
};

static uint64_t fb_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

/* obj_fragmentation2's RRAND: uniform in [min, max), min if equal */
static size_t fb_size(struct fb_run *r, size_t min, size_t max)
{
	return min == max ? min : min + fb_rand(&r->rng) % (max - min);
}

static int fb_fail(struct fb_run *r, int rc, const char *what)
{
	r->err = rc;
	snprintf(r->errmsg, sizeof(r->errmsg), "%s: %s", what,
		 r->alloc->errormsg());
	return rc;
}

static int fb_sample(struct fb_run *r)
{
	uint64_t now, peak;
	int rc = r->alloc->footprint(r->ctx, &now, &peak);

	if (rc < 0)
		return fb_fail(r, rc, "footprint");
	if (now > r->sampled_peak)
		r->sampled_peak = now;
	return 0;
}

/* free the live object at index i of r->live */
static int fb_free_at(struct fb_run *r, size_t i)
{
	size_t slot = r->live[i];
	int rc = r->alloc->free(r->ctx, slot);

	if (rc < 0)
		return fb_fail(r, rc, "free");
	r->ops++;
	r->live_bytes -= r->size[slot];
	r->live[i] = r->live[--r->nlive];
	r->free_slots[r->nfree++] = slot;
	return 0;
}

static int fb_free_random(struct fb_run *r, uint64_t n)
{
	int rc;

	for (; n && r->nlive; n--) {
		rc = fb_free_at(r, fb_rand(&r->rng) % r->nlive);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* 1: -ENOMEM (recorded), 0 ok, else -errno */
static int fb_alloc(struct fb_run *r, size_t size, int phase)
{
	size_t slot;
	int rc;

	if (!r->nfree)
		return fb_fail(r, -ENOSPC, "out of benchmark slots");
	slot = r->free_slots[--r->nfree];
	rc = r->alloc->alloc(r->ctx, slot, size);
	if (rc == -ENOMEM) {
		r->free_slots[r->nfree++] = slot;
		r->enomem = phase;
		r->enomem_live = r->live_bytes;
		r->enomem_allocated = r->allocated;
		return 1;
	}
	if (rc < 0)
		return fb_fail(r, rc, "alloc");
	r->ops++;
	r->size[slot] = (uint32_t)size;
	r->live[r->nlive++] = slot;
	r->live_bytes += size;
	r->allocated += size;
	if (r->live_bytes > r->peak_live)
		r->peak_live = r->live_bytes;
	return r->sample ? fb_sample(r) : 0;
}

/* obj_fragmentation2's allocate_objects, scaled */
static int fb_phase(struct fb_run *r, const struct fb_opts *o, size_t min,
		    size_t max, int phase)
{
	uint64_t total = 0, limit = (uint64_t)(FB_ALLOC_TOTAL * o->scale);
	uint64_t cap = (uint64_t)(FB_LIVE_CAP * o->scale);
	size_t s;
	int rc;

	while (total < limit) {
		s = fb_size(r, min, max);
		rc = fb_alloc(r, s, phase);
		if (rc)
			return rc;
		total += s;
		if (r->live_bytes > cap) {
			rc = fb_free_random(r, FB_FREES);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

static int fb_slots_init(struct fb_run *r, const struct fb_opts *o)
{
	size_t min = r->wl->min1 < r->wl->min2 ? r->wl->min1 : r->wl->min2, i;

	r->nslots = (size_t)(FB_LIVE_CAP * o->scale) / min + 2ULL * FB_FREES;
	r->live = calloc(r->nslots, sizeof(*r->live));
	r->free_slots = calloc(r->nslots, sizeof(*r->free_slots));
	r->size = calloc(r->nslots, sizeof(*r->size));
	if (!r->live || !r->free_slots || !r->size)
		return -ENOMEM;
	for (i = 0; i < r->nslots; i++)
		r->free_slots[i] = r->nslots - 1 - i;
	r->nfree = r->nslots;
	return 0;
}

static void fb_slots_release(struct fb_run *r)
{
	free(r->live);
	free(r->free_slots);
	free(r->size);
}

static uint64_t fb_pool_size(const struct fb_run *r, const struct fb_opts *o)
{
	uint64_t cap = (uint64_t)(FB_LIVE_CAP * o->scale);

	if (o->pool_size)
		return o->pool_size;
	/* 4x the live cap (libpmemobj needed up to ~3x in the paper's
	 * runs), the slot array (16 B per slot) and 64 MiB of room for
	 * metadata, at least 128 MiB */
	return (4 * cap + 16ULL * r->nslots + (64ULL << 20) + (128ULL << 20)) &
	       ~((64ULL << 10) - 1);
}

struct fb_result {
	uint64_t pool_size, peak_fp, end_fp, peak_live, end_live, ops;
	double secs;
	struct pma_pm_counters pm;
};

static int fb_body(struct fb_run *r, const struct fb_opts *o)
{
	uint64_t n;
	int rc;

	rc = fb_phase(r, o, r->wl->min1, r->wl->max1, 1);
	if (rc)
		return rc;
	n = (uint64_t)((double)r->nlive * r->wl->delete_frac);
	rc = fb_free_random(r, n);
	if (rc < 0)
		return rc;
	return fb_phase(r, o, r->wl->min2, r->wl->max2, 2);
}

static uint64_t fb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* run r (wl, alloc, rng set); 0, or -errno with r->err set */
static int fb_run(struct fb_run *r, const struct fb_opts *o,
		  struct fb_result *res)
{
	struct pma_pm_counters a, b;
	uint64_t now, peak, t0;
	int rc;

	rc = fb_slots_init(r, o);
	if (rc < 0)
		return fb_fail(r, rc, "benchmark slots");
	res->pool_size = fb_pool_size(r, o);
	rc = r->alloc->open(o->dir, res->pool_size, r->nslots, &r->ctx);
	if (rc < 0) {
		fb_fail(r, rc, "open");
		goto out_slots;
	}
	rc = r->alloc->footprint(r->ctx, &now, &peak);
	if (rc < 0) {
		fb_fail(r, rc, "footprint");
		goto out_close;
	}
	r->baseline = now;
	r->sample = peak == 0;
	r->sampled_peak = now;
	pma_pm_counters(&a, 0);
	t0 = fb_now_ns();
	rc = fb_body(r, o);
	res->secs = (double)(fb_now_ns() - t0) / 1e9;
	pma_pm_counters(&b, 0);
	if (rc < 0)
		goto out_close;
	rc = r->alloc->footprint(r->ctx, &now, &peak);
	if (rc < 0) {
		fb_fail(r, rc, "footprint");
		goto out_close;
	}
	if (r->sample || peak < r->sampled_peak)
		peak = r->sampled_peak > now ? r->sampled_peak : now;
	res->peak_fp = peak - r->baseline;
	res->end_fp = now - r->baseline;
	res->peak_live = r->peak_live;
	res->end_live = r->live_bytes;
	res->ops = r->ops;
	res->pm.lines_flushed = b.lines_flushed - a.lines_flushed;
	res->pm.fences = b.fences - a.fences;
	rc = 0;
out_close:
	r->alloc->close(r->ctx);
out_slots:
	fb_slots_release(r);
	return rc;
}

/* ------------------------------------------------------------ output */

static double fb_per_op(const struct fb_run *r, uint64_t n,
			const struct fb_result *res)
{
	return r->alloc->has_counters && res->ops ?
		       (double)n / (double)res->ops :
		       -1;
}

static void fb_json_num(const char *key, double v, const char *sep)
{
	if (v < 0)
		printf("\"%s\":null%s", key, sep);
	else
		printf("\"%s\":%.9g%s", key, v, sep);
}

static void fb_print_json(const struct fb_run *r, const struct fb_opts *o,
			  const struct fb_result *res)
{
	printf("{\"bench\":\"fragbench\",\"workload\":\"%s\","
	       "\"allocator\":\"%s\",\"pm_mode\":\"%s\",",
	       r->wl->name, r->alloc->name, o->mode);
	fb_json_num("scale", o->scale, ",");
	fb_json_num("pool_size", (double)res->pool_size, ",");
	fb_json_num("peak_footprint_bytes", r->err ? -1 : (double)res->peak_fp,
		    ",");
	fb_json_num("live_bytes", r->err ? -1 : (double)res->peak_live, ",");
	fb_json_num("ratio",
		    r->err || !res->peak_live ?
			    -1 :
			    (double)res->peak_fp / (double)res->peak_live,
		    ",");
	fb_json_num("end_footprint_bytes", r->err ? -1 : (double)res->end_fp,
		    ",");
	fb_json_num("end_live_bytes", r->err ? -1 : (double)res->end_live, ",");
	fb_json_num("ops", (double)res->ops, ",");
	fb_json_num("seconds", r->err ? -1 : res->secs, ",");
	fb_json_num("flushes_per_op", fb_per_op(r, res->pm.lines_flushed, res),
		    ",");
	fb_json_num("fences_per_op", fb_per_op(r, res->pm.fences, res), ",");
	printf("\"enomem\":%s,", r->enomem ? "true" : "false");
	fb_json_num("enomem_phase", r->enomem ? r->enomem : -1, ",");
	fb_json_num("enomem_live_bytes",
		    r->enomem ? (double)r->enomem_live : -1, ",");
	fb_json_num("enomem_allocated_bytes",
		    r->enomem ? (double)r->enomem_allocated : -1, ",");
	if (r->err)
		printf("\"error\":\"%s\"}\n", r->errmsg);
	else
		printf("\"error\":null}\n");
}

static void fb_header(void)
{
	printf("%-4s %-13s %-10s %10s %10s %6s %10s %8s %8s %9s %s\n", "wl",
	       "alloc", "mode", "peak_fp", "peak_live", "ratio", "end_fp",
	       "flush/op", "fence/op", "ops/s", "enomem");
}

static void fb_print_row(const struct fb_run *r, const struct fb_opts *o,
			 const struct fb_result *res)
{
	char a[BENCH_SIZE_BUF], b[BENCH_SIZE_BUF], c[BENCH_SIZE_BUF];
	double fl = fb_per_op(r, res->pm.lines_flushed, res);
	double fe = fb_per_op(r, res->pm.fences, res);

	if (r->err) {
		printf("%-4s %-13s %-10s error: %s\n", r->wl->name,
		       r->alloc->name, o->mode, r->errmsg);
		return;
	}
	bench_size_format(res->peak_fp, a, sizeof(a));
	bench_size_format(res->peak_live, b, sizeof(b));
	bench_size_format(res->end_fp, c, sizeof(c));
	printf("%-4s %-13s %-10s %10s %10s %6.3f %10s ", r->wl->name,
	       r->alloc->name, o->mode, a, b,
	       res->peak_live ? (double)res->peak_fp / (double)res->peak_live :
				0.0,
	       c);
	if (fl < 0)
		printf("%8s %8s ", "-", "-");
	else
		printf("%8.3f %8.3f ", fl, fe);
	printf("%9.0f ", res->secs > 0 ? (double)res->ops / res->secs : 0.0);
	if (r->enomem) {
		bench_size_format(r->enomem_live, a, sizeof(a));
		printf("phase %d at %s live\n", r->enomem, a);
	} else {
		printf("no\n");
	}
}

/* ------------------------------------------------------------ main */

static const char fb_usage[] =
	"usage: fragbench [options]\n"
	"\n"
	"Peak PM footprint of pmalloc and libpmemobj on the Rumble et al.\n"
	"workloads W1..W7 (PMDK obj_fragmentation2): 5000 MB allocated per\n"
	"phase, at most 1000 MB live (200 random frees when over), phase 1\n"
	"sizes, a fraction deleted, phase 2 sizes. One row per workload and\n"
	"allocator, the allocators side by side in one run.\n"
	"\n"
	"options:\n"
	"  -w, --workload LIST   W1..W7, comma separated (default all)\n"
	"  -a, --alloc LIST      pmalloc,pmalloc-nomorph,pmemobj (default\n"
	"                        all; pmalloc: the library's defaults, slab\n"
	"                        morphing on; pmalloc-nomorph: morphing off)\n"
	"      --morph PCT[,any] pmalloc's morph threshold: slabs <= PCT%\n"
	"                        used, idle ones only unless ',any' (default:\n"
	"                        the library's, pma_config_set_morph(3))\n"
	"  -s, --scale X         scale the 5000 MB and 1000 MB (default 1;\n"
	"                        0.1 quick, 0.01 smoke)\n"
	"  -p, --pool-size SIZE  fixed pool size (default: 4x the live cap +\n"
	"                        the slot array + 192 MiB); shows -ENOMEM\n"
	"  -m, --mode MODE       cacheline (default) or byte\n"
	"  -d, --dir DIR         where pools are made (default /dev/shm)\n"
	"      --seed N          random seed (default 1)\n"
	"  -j, --json            one JSON object per row\n"
	"  -h, --help            show this help and exit\n";

static int fb_parse_list(const char *arg, int is_wl, unsigned *ret_mask)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	unsigned mask = 0, i, n = is_wl ? FB_NWL : FB_NALLOC;
	int found;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		found = 0;
		for (i = 0; i < n; i++)
			if (!strcasecmp(tok, is_wl ? fb_workloads[i].name :
						     fb_allocs[i]->name)) {
				mask |= 1U << i;
				found = 1;
			}
		if (!found) {
			fprintf(stderr, "fragbench: unknown %s '%s'\n",
				is_wl ? "workload" : "allocator", tok);
			free(copy);
			return -EINVAL;
		}
	}
	free(copy);
	*ret_mask = mask;
	return mask ? 0 : -EINVAL;
}

enum { OPT_SEED = 256, OPT_MORPH };

/* --morph PCT[,any]: the pmalloc rows' morph threshold */
static int fb_parse_morph(const char *arg)
{
	char *end;
	unsigned long pct = strtoul(arg, &end, 10);

	if (end == arg || pct > 100 || (*end && strcmp(end, ",any") != 0)) {
		fprintf(stderr,
			"fragbench: bad morph threshold '%s' (PCT 0..100, "
			"optionally ',any')\n",
			arg);
		return -EINVAL;
	}
	bench_pmalloc_set_morph((int)pct, *end == 0);
	return 0;
}

static const struct option fb_longopts[] = {
	{ "workload", required_argument, NULL, 'w' },
	{ "alloc", required_argument, NULL, 'a' },
	{ "scale", required_argument, NULL, 's' },
	{ "pool-size", required_argument, NULL, 'p' },
	{ "mode", required_argument, NULL, 'm' },
	{ "dir", required_argument, NULL, 'd' },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "morph", required_argument, NULL, OPT_MORPH },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int fb_parse(int argc, char **argv, struct fb_opts *o)
{
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "w:a:s:p:m:d:jh", fb_longopts,
				NULL)) != -1) {
		switch (c) {
		case 'w':
			if (fb_parse_list(optarg, 1, &o->wl_mask) < 0)
				return 2;
			break;
		case 'a':
			if (fb_parse_list(optarg, 0, &o->alloc_mask) < 0)
				return 2;
			break;
		case 's':
			o->scale = strtod(optarg, &end);
			if (*end || !(o->scale > 0) || o->scale > 10) {
				fprintf(stderr, "fragbench: bad scale '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'p':
			if (bench_size_parse(optarg, &o->pool_size) < 0) {
				fprintf(stderr,
					"fragbench: bad pool size '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'm':
			if (strcasecmp(optarg, "cacheline") != 0 &&
			    strcasecmp(optarg, "byte") != 0) {
				fprintf(stderr, "fragbench: bad mode '%s'\n",
					optarg);
				return 2;
			}
			o->byte = !strcasecmp(optarg, "byte");
			break;
		case 'd':
			o->dir = optarg;
			break;
		case OPT_SEED:
			o->seed = strtoull(optarg, &end, 0);
			if (*end || !o->seed) {
				fprintf(stderr, "fragbench: bad seed '%s'\n",
					optarg);
				return 2;
			}
			break;
		case OPT_MORPH:
			if (fb_parse_morph(optarg) < 0)
				return 2;
			break;
		case 'j':
			o->json = 1;
			break;
		case 'h':
			fputs(fb_usage, stdout);
			return 0;
		default:
			fprintf(stderr, "try 'fragbench --help'\n");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "fragbench: unexpected argument '%s'\n",
			argv[optind]);
		return 2;
	}
	return -1;
}

/*
 * The persistence mode comes from the environment, which libpmem2 and
 * libpmemobj read when they load: set it and run ourselves again.
 */
static int fb_mode_exec(const struct fb_opts *o, char **argv)
{
	const char *want = o->byte ? "BYTE" : "CACHE_LINE";
	const char *have = getenv("PMEM2_FORCE_GRANULARITY");

	if (have && !strcmp(have, want) && getenv("FRAGBENCH_MODE"))
		return 0;
	setenv("PMEM2_FORCE_GRANULARITY", want, 1);
	setenv("PMEM_IS_PMEM_FORCE", "1", 1);
	if (o->byte)
		setenv("PMEM_NO_FLUSH", "1", 1);
	else
		unsetenv("PMEM_NO_FLUSH");
	setenv("FRAGBENCH_MODE", want, 1);
	execv("/proc/self/exe", argv);
	fprintf(stderr, "fragbench: cannot run itself again: %s\n",
		strerror(errno));
	return -1;
}

/* the persistence mode a pool in dir gets, NULL if none can be made */
static const char *fb_probe_mode(const char *dir)
{
	const char *mode;

	return bench_pm_mode(dir, &mode) < 0 ? NULL : mode;
}

int main(int argc, char **argv)
{
	struct fb_opts o = { .dir = "/dev/shm", .scale = 1, .seed = 1 };
	struct fb_result res;
	struct fb_run r;
	unsigned w, a, failed = 0;
	int rc;

	o.wl_mask = (1U << FB_NWL) - 1;
	o.alloc_mask = (1U << FB_NALLOC) - 1;
	rc = fb_parse(argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (fb_mode_exec(&o, argv) < 0)
		return 1;
	o.mode = fb_probe_mode(o.dir);
	if (!o.mode) {
		fprintf(stderr, "fragbench: cannot map a file in '%s'\n",
			o.dir);
		return 1;
	}
	bench_pobj_stats = 1;
	if (!o.json) {
		printf("# fragbench: scale %g, seed %" PRIu64 ", mode %s, "
		       "dir %s\n",
		       o.scale, o.seed, o.mode, o.dir);
		fb_header();
	}
	for (w = 0; w < FB_NWL; w++) {
		for (a = 0; a < FB_NALLOC; a++) {
			if (!(o.wl_mask & (1U << w)) ||
			    !(o.alloc_mask & (1U << a)))
				continue;
			memset(&r, 0, sizeof(r));
			memset(&res, 0, sizeof(res));
			r.wl = &fb_workloads[w];
			r.alloc = fb_allocs[a];
			r.rng = o.seed * 0x9e3779b97f4a7c15ULL + w;
			(void)fb_run(&r, &o, &res);
			failed += r.err != 0;
			if (o.json)
				fb_print_json(&r, &o, &res);
			else
				fb_print_row(&r, &o, &res);
			(void)fflush(stdout);
		}
	}
	return failed ? 1 : 0;
}
