/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmabench: the allocator suite (threadtest, prod-con, shbench, larson,
 * larson-q, large) for pmalloc, libpmemobj and jemalloc in one run, on the same pool
 * type, in the CACHE_LINE (ADR-like) and BYTE (eADR-like) modes, plus the
 * pmalloc recovery time. The libraries read their persistence environment
 * when they load, so the program re-executes itself once per mode.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "common.h"

#define BENCH_MAX_THREADS 64

/* the command line, beyond struct bench_cfg */
struct bench_opts {
	struct bench_cfg cfg;
	unsigned threads[BENCH_MAX_THREADS];
	unsigned nthreads;
	const struct bench_workload *wls[BENCH_MAX_WLS];
	unsigned nwls;
	int recovery; /* --bench includes recovery */
	const struct bench_alloc *allocs[BENCH_NALLOCS];
	unsigned nallocs;
	unsigned modes; /* bit 0: CACHE_LINE, bit 1: BYTE */
	const char *run_mode; /* internal: set in the re-executed child */
	const char *run_part; /* "alloc" or "recovery" */
};

static const struct bench_alloc *const all_allocs[BENCH_NALLOCS] = {
	&bench_alloc_pmalloc,
	&bench_alloc_pmemobj,
	&bench_alloc_jemalloc,
	/* pmalloc with per-arena checkpoints (layout 8) */
	&bench_alloc_pmalloc_local,
	/* a pool of one part per NUMA node: local-first, parts in turn */
	&bench_alloc_pmalloc_numa,
	&bench_alloc_pmalloc_spread,
	/* pmalloc on a heap from pmad (libpmad), $PMAD_SOCKET */
	&bench_alloc_pmad,
	/* pmalloc with slab morphing off (the default is on) */
	&bench_alloc_pmalloc_nomorph,
};

static const char *const mode_names[] = { "CACHE_LINE", "BYTE" };

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void bench_json_num(const char *key, double v, const char *sep)
{
	if (v < 0)
		printf("\"%s\":null%s", key, sep);
	else
		printf("\"%s\":%.9g%s", key, v, sep);
}

void bench_json_str(const char *key, const char *v, const char *sep)
{
	const unsigned char *p;

	if (!v) {
		printf("\"%s\":null%s", key, sep);
		return;
	}
	printf("\"%s\":\"", key);
	for (p = (const unsigned char *)v; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	printf("\"%s", sep);
}

/* ------------------------------------------------------------ output */

/* the pmalloc/peer ratio issue 3 asks for, or -1 if it sets none */
static double row_target(const struct bench_workload *wl, const char *mode,
			 const struct bench_alloc *alloc)
{
	int byte = !strcmp(mode, "BYTE");
	int large = !strcmp(wl->name, "large");

	if (alloc == &bench_alloc_pmemobj)
		return byte ? 10.0 : (large ? 3.0 : 2.0);
	if (alloc == &bench_alloc_jemalloc && byte)
		return 1.0 / 2.5; /* within 2.5x of jemalloc */
	return -1;
}

static double per_op(uint64_t v, const struct bench_result *r)
{
	if (!r->alloc->has_counters || r->err || !r->ops)
		return -1;
	return (double)v / (double)r->ops;
}

static const char *row_errmsg(const struct bench_result *r)
{
	return r->errmsg[0] ? r->errmsg : strerror(-r->err);
}

static void print_table_header(void)
{
	printf("%-10s %3s %-10s %-14s %12s %9s %9s %10s %9s %8s %s\n", "bench",
	       "thr", "mode", "alloc", "ops/s", "flush/op", "fence/op",
	       "reflush/op", "remote/op", "pma/this", "target");
}

static void print_cell(double v, int width, int prec)
{
	if (v < 0)
		printf(" %*s", width, "-");
	else
		printf(" %*.*f", width, prec, v);
}

static void print_row_table(const struct bench_workload *wl, unsigned thr,
			    const char *mode, const struct bench_result *r,
			    double ratio, double target)
{
	printf("%-10s %3u %-10s %-14s", wl->name, thr, mode, r->alloc->name);
	if (r->err) {
		printf(" FAILED: %s\n", row_errmsg(r));
		return;
	}
	printf(" %12.0f", r->ops_per_sec);
	print_cell(per_op(r->pm.lines_flushed, r), 9, 3);
	print_cell(per_op(r->pm.fences, r), 9, 3);
	print_cell(per_op(r->pm.reflushes, r), 10, 3);
	print_cell(per_op(r->pm.remote_lines, r), 9, 3);
	print_cell(ratio, 8, 2);
	if (target > 0 && ratio > 0)
		printf(" >=%.2g %s", target,
		       ratio >= target ? "met" : "MISSED");
	printf("\n");
}

/* ratio of pmalloc's throughput to r's, -1 if either is unknown */
static double ratio_of(const struct bench_result *pma,
		       const struct bench_result *r)
{
	if (!pma || !r || pma->err || r->err || r->ops_per_sec <= 0)
		return -1;
	return pma->ops_per_sec / r->ops_per_sec;
}

static void print_row_json(const struct bench_workload *wl, unsigned thr,
			   const char *mode, const struct bench_result *r,
			   const struct bench_result *grp[BENCH_NALLOCS])
{
	double ratio = ratio_of(grp[0], r);
	double target = row_target(wl, mode, r->alloc);

	printf("{\"bench\":\"%s\",\"allocator\":\"%s\",\"threads\":%u,"
	       "\"os_threads\":%u,\"pm_mode\":\"%s\",\"sizes\":\"%s\",",
	       wl->name, r->alloc->name, thr, thr * wl->threads_mult, mode,
	       wl->sizes);
	printf("\"ops\":%" PRIu64 ",", r->ops);
	bench_json_num("seconds", r->err ? -1 : r->secs, ",");
	bench_json_num("ops_per_sec", r->err ? -1 : r->ops_per_sec, ",");
	bench_json_num("flushes_per_op", per_op(r->pm.lines_flushed, r), ",");
	bench_json_num("fences_per_op", per_op(r->pm.fences, r), ",");
	bench_json_num("reflushes_per_op", per_op(r->pm.reflushes, r), ",");
	bench_json_num("xplines_per_op", per_op(r->pm.xplines, r), ",");
	bench_json_num("remote_lines_per_op", per_op(r->pm.remote_lines, r),
		       ",");
	bench_json_num("checkpoints", r->err ? -1 : (double)r->checkpoints,
		       ",");
	bench_json_num("sync_wait_frac", r->err ? -1 : r->wait_frac, ",");
	bench_json_num("ratio_pmalloc_over_this", ratio, ",");
	bench_json_num("ratio_pmalloc_over_pmemobj", ratio_of(grp[0], grp[1]),
		       ",");
	bench_json_num("ratio_pmalloc_over_jemalloc", ratio_of(grp[0], grp[2]),
		       ",");
	bench_json_num("target_ratio", target, ",");
	if (target > 0 && ratio > 0)
		printf("\"target_met\":%s,",
		       ratio >= target ? "true" : "false");
	else
		printf("\"target_met\":null,");
	bench_json_str("error", r->err ? row_errmsg(r) : NULL, "}\n");
}

/* run every allocator on (wl, thr) and print the rows with ratios;
 * returns the number of rows that failed */
static unsigned bench_group(const struct bench_opts *o,
			    const struct bench_workload *wl, unsigned thr,
			    const char *mode)
{
	struct bench_result res[BENCH_NALLOCS];
	const struct bench_result *grp[BENCH_NALLOCS] = { NULL };
	unsigned i, a, failed = 0;

	bench_run_group(&o->cfg, wl, thr, o->allocs, o->nallocs, res);
	for (i = 0; i < o->nallocs; i++) {
		failed += !!res[i].err;
		for (a = 0; a < BENCH_NALLOCS; a++)
			if (all_allocs[a] == o->allocs[i])
				grp[a] = &res[i];
	}
	for (i = 0; i < o->nallocs; i++) {
		if (o->cfg.json)
			print_row_json(wl, thr, mode, &res[i], grp);
		else
			print_row_table(wl, thr, mode, &res[i],
					ratio_of(grp[0], &res[i]),
					row_target(wl, mode, res[i].alloc));
	}
	(void)fflush(stdout);
	return failed;
}

/* ------------------------------------------------------------ modes */

/* refuse to measure in a mode other than the one asked for */
static int check_mode(const struct bench_opts *o)
{
	const char *mode;
	int rc;

	rc = bench_pm_mode(o->cfg.dir, &mode);
	if (rc < 0) {
		fprintf(stderr, "pmabench: cannot make a heap in '%s': %s\n",
			o->cfg.dir, pma_errormsg());
		return rc;
	}
	if (strcmp(mode, o->run_mode) != 0) {
		fprintf(stderr,
			"pmabench: '%s' maps with %s granularity, not %s\n",
			o->cfg.dir, mode, o->run_mode);
		return -EINVAL;
	}
	return 0;
}

static void check_process_malloc(void)
{
	Dl_info info;

	if (dladdr((void *)malloc, &info) && info.dli_fname &&
	    strstr(info.dli_fname, "jemalloc"))
		fprintf(stderr, "pmabench: warning: the process malloc is "
				"jemalloc's; DRAM allocations of pmalloc and "
				"libpmemobj use it too\n");
}

/* the measurements of one mode, in the re-executed child */
static int run_child(const struct bench_opts *o)
{
	unsigned b, t, failed = 0;

	check_process_malloc();
	if (check_mode(o) < 0)
		return 1;
	if (!strcmp(o->run_part, "recovery"))
		return bench_recovery(&o->cfg, o->run_mode) < 0;
	for (b = 0; b < o->nwls; b++)
		for (t = 0; t < o->nthreads; t++)
			failed += bench_group(o, o->wls[b], o->threads[t],
					      o->run_mode);
	/* a row that failed is an allocator error: the run fails */
	return failed ? 1 : 0;
}

static void mode_setenv(unsigned mode)
{
	/* libpmemobj: trust the mapping is PM; eADR-like: no flushes */
	setenv("PMEM_IS_PMEM_FORCE", "1", 1);
	if (mode == 0) {
		setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 1);
		unsetenv("PMEM_NO_FLUSH");
	} else {
		setenv("PMEM2_FORCE_GRANULARITY", "BYTE", 1);
		setenv("PMEM_NO_FLUSH", "1", 1);
	}
}

/* say on stderr how a child ended, unless it succeeded */
static int child_status(int status, unsigned mode, const char *part)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFSIGNALED(status))
		fprintf(stderr, "pmabench: the %s %s run died of signal %d\n",
			mode_names[mode], part, WTERMSIG(status));
	else
		fprintf(stderr, "pmabench: the %s %s run exited with %d\n",
			mode_names[mode], part, WEXITSTATUS(status));
	return -EIO;
}

/* remove the pools a child that died left behind in dir */
static void child_cleanup(const char *dir, pid_t pid)
{
	static const char *const kinds[] = { "pmalloc.pool", "pmemobj.pool",
					     "recovery.pool", "probe" };
	char path[4096];
	unsigned i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		snprintf(path, sizeof(path), "%s/pmabench-%d-%s", dir, (int)pid,
			 kinds[i]);
		(void)unlink(path);
	}
}

/* run ourselves with --run-mode MODE --run-part PART and the same args */
static int spawn_child(const char *dir, int argc, char **argv, unsigned mode,
		       const char *part)
{
	char **args = calloc((size_t)argc + 5, sizeof(*args));
	int status, i, n = 0;
	pid_t pid;

	if (!args)
		return -ENOMEM;
	args[n++] = argv[0];
	args[n++] = "--run-mode";
	args[n++] = (char *)mode_names[mode];
	args[n++] = "--run-part";
	args[n++] = (char *)part;
	for (i = 1; i < argc; i++)
		args[n++] = argv[i];
	(void)fflush(stdout);
	pid = fork();
	if (pid == 0) {
		mode_setenv(mode);
		execv("/proc/self/exe", args);
		_exit(127);
	}
	free(args);
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -errno;
	if (child_status(status, mode, part) == 0)
		return 0;
	child_cleanup(dir, pid);
	return -EIO;
}

static int run_parent(const struct bench_opts *o, int argc, char **argv)
{
	unsigned m;
	int rc = 0;

	if (o->nwls && !o->cfg.json)
		print_table_header();
	for (m = 0; m < 2 && o->nwls; m++)
		if (o->modes & (1u << m))
			rc |= spawn_child(o->cfg.dir, argc, argv, m, "alloc");
	if (o->recovery && !o->cfg.json)
		bench_recovery_header();
	for (m = 0; m < 2 && o->recovery; m++)
		if (o->modes & (1u << m))
			rc |= spawn_child(o->cfg.dir, argc, argv, m,
					  "recovery");
	return rc ? 1 : 0;
}

/* ------------------------------------------------------------ options */

static void usage(void)
{
	printf("Usage: pmabench [options]\n"
	       "Allocator benchmarks: pmalloc vs libpmemobj vs jemalloc.\n\n"
	       "  -d, --dir DIR           pool directory (default /dev/shm)\n"
	       "  -b, --bench LIST        threadtest,threadtest-h,sh6bench,\n"
	       "                          prod-con,shbench,larson,\n"
	       "                          larson-q,large,recovery\n"
	       "                          or all (default)\n"
	       "  -a, --alloc LIST        pmalloc,pmemobj,jemalloc,pmalloc-local,\n"
	       "                          pmalloc-numa,pmalloc-spread (a pool of\n"
	       "                          one part per NUMA node, local-first or\n"
	       "                          parts in turn; default the first three),\n"
	       "                          pmad (the heap opened through a running\n"
	       "                          pmad at $PMAD_SOCKET with libpmad),\n"
	       "                          pmalloc-nomorph (slab morphing off)\n"
	       "  -t, --threads LIST      thread counts (default 1,2)\n"
	       "  -m, --mode MODE         cache_line, byte or both (default)\n"
	       "  -n, --ops N             timed ops per row (default 500000)\n"
	       "  -w, --warmup N          untimed ops before (default ops/4)\n"
	       "  -s, --pool-size SIZE    bytes per pool (default 256M; the\n"
	       "                          recovery pool is at least what its\n"
	       "                          objects need)\n"
	       "  -r, --repeat N          runs per row, median kept (default 1)\n"
	       "  -R, --recovery-objects LIST  live objects (default 1M,4M)\n"
	       "      --recovery-parts N  recovery pool of N parts, one per NUMA\n"
	       "                          node, filled by a thread on each\n"
	       "      --seed N            random seed (default 1)\n"
	       "      --no-pin            do not pin worker i to the i-th "
	       "allowed CPU\n"
	       "  -q, --quick             small counts for a smoke test\n"
	       "  -j, --json              JSON lines, one object per row\n"
	       "  -h, --help              this text\n"
	       "  -V, --version           print the version\n");
	exit(0);
}

static int bad_arg(const char *what, const char *arg)
{
	fprintf(stderr,
		"pmabench: invalid %s '%s'\n"
		"try 'pmabench --help'\n",
		what, arg);
	exit(2);
}

/* "250000", "1M", "4k": a count with an optional decimal suffix */
static uint64_t parse_count(const char *s, const char *what)
{
	uint64_t mult = 1;
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end == 'k' || *end == 'K')
		mult = 1000;
	else if (*end == 'm' || *end == 'M')
		mult = 1000000;
	if (mult != 1)
		end++;
	if (errno || end == s || *end || s[0] == '-' || v > UINT64_MAX / mult)
		bad_arg(what, s);
	return v * mult;
}

/* a copy of an option's list for strtok_r: argv must stay intact for the
 * re-executed children */
static char *bench_strdup(const char *s)
{
	char *p = strdup(s);

	if (!p) {
		fprintf(stderr, "pmabench: out of memory\n");
		exit(1);
	}
	return p;
}

static void parse_threads(struct bench_opts *o, const char *arg)
{
	char *list = bench_strdup(arg), *save = NULL, *tok;
	uint64_t v;

	o->nthreads = 0;
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		v = parse_count(tok, "thread count");
		if (v < 1 || v > 32 || o->nthreads == BENCH_MAX_THREADS)
			bad_arg("thread count", tok);
		o->threads[o->nthreads++] = (unsigned)v;
	}
	if (!o->nthreads)
		bad_arg("thread list", "");
	free(list);
}

static void parse_benches(struct bench_opts *o, const char *arg)
{
	const struct bench_workload *wl;
	char *list = bench_strdup(arg), *save = NULL, *tok;

	o->nwls = 0;
	o->recovery = 0;
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "all")) {
			for (o->nwls = 0; bench_workloads[o->nwls]; o->nwls++)
				o->wls[o->nwls] = bench_workloads[o->nwls];
			o->recovery = 1;
		} else if (!strcmp(tok, "recovery")) {
			o->recovery = 1;
		} else if ((wl = bench_workload_find(tok)) &&
			   o->nwls < BENCH_MAX_WLS) {
			o->wls[o->nwls++] = wl;
		} else {
			bad_arg("bench", tok);
		}
	}
	free(list);
}

static void parse_allocs(struct bench_opts *o, const char *arg)
{
	char *list = bench_strdup(arg), *save = NULL, *tok;
	unsigned a, mask = 0;

	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (a = 0; a < BENCH_NALLOCS; a++)
			if (!strcmp(tok, all_allocs[a]->name))
				break;
		if (a == BENCH_NALLOCS)
			bad_arg("allocator", tok);
		mask |= 1u << a;
	}
	/* always in table order: pmalloc first, its peers after */
	o->nallocs = 0;
	for (a = 0; a < BENCH_NALLOCS; a++)
		if (mask & (1u << a))
			o->allocs[o->nallocs++] = all_allocs[a];
	if (!o->nallocs)
		bad_arg("allocator list", "");
	free(list);
}

static void parse_recovery(struct bench_opts *o, const char *arg)
{
	char *list = bench_strdup(arg), *save = NULL, *tok;
	struct bench_cfg *cfg = &o->cfg;

	cfg->rec_nobjs = 0;
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (cfg->rec_nobjs == 4)
			bad_arg("recovery object list (at most 4)", tok);
		cfg->rec_objs[cfg->rec_nobjs] = parse_count(tok, "count");
		if (!cfg->rec_objs[cfg->rec_nobjs++])
			bad_arg("recovery object count", tok);
	}
	free(list);
}

static void parse_mode(struct bench_opts *o, const char *arg)
{
	if (!strcasecmp(arg, "cache_line"))
		o->modes = 1;
	else if (!strcasecmp(arg, "byte"))
		o->modes = 2;
	else if (!strcasecmp(arg, "both"))
		o->modes = 3;
	else
		bad_arg("mode", arg);
}

enum { OPT_SEED = 256, OPT_RUN_MODE, OPT_RUN_PART, OPT_NO_PIN, OPT_REC_PARTS };

static const struct option longopts[] = {
	{ "dir", required_argument, NULL, 'd' },
	{ "bench", required_argument, NULL, 'b' },
	{ "alloc", required_argument, NULL, 'a' },
	{ "threads", required_argument, NULL, 't' },
	{ "mode", required_argument, NULL, 'm' },
	{ "ops", required_argument, NULL, 'n' },
	{ "warmup", required_argument, NULL, 'w' },
	{ "pool-size", required_argument, NULL, 's' },
	{ "repeat", required_argument, NULL, 'r' },
	{ "recovery-objects", required_argument, NULL, 'R' },
	{ "recovery-parts", required_argument, NULL, OPT_REC_PARTS },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "no-pin", no_argument, NULL, OPT_NO_PIN },
	{ "quick", no_argument, NULL, 'q' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ "run-mode", required_argument, NULL, OPT_RUN_MODE },
	{ "run-part", required_argument, NULL, OPT_RUN_PART },
	{ NULL, 0, NULL, 0 },
};

static void opts_default(struct bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->cfg.dir = "/dev/shm";
	o->cfg.ops = 500000;
	o->cfg.warmup = UINT64_MAX; /* ops / 4 unless given */
	o->cfg.pool_size = 256ULL << 20;
	o->cfg.seed = 1;
	o->cfg.repeat = 1;
	o->cfg.pin = 1;
	o->modes = 3;
	parse_threads(o, "1,2");
	parse_benches(o, "all");
	parse_allocs(o, "pmalloc,pmemobj,jemalloc");
	parse_recovery(o, "1M,4M");
}

/* --quick: counts for CI, applied before the options that follow it */
static void opts_quick(struct bench_opts *o)
{
	o->cfg.ops = 20000;
	parse_recovery(o, "100k,400k");
}

/* options taking a number; 0 if c is not one of them */
static int parse_opt_num(struct bench_opts *o, int c, const char *arg)
{
	switch (c) {
	case 'n':
		o->cfg.ops = parse_count(arg, "op count");
		break;
	case 'w':
		o->cfg.warmup = parse_count(arg, "warm-up count");
		break;
	case 's':
		if (bench_size_parse(arg, &o->cfg.pool_size) < 0)
			bad_arg("pool size", arg);
		break;
	case 'r':
		o->cfg.repeat = (unsigned)parse_count(arg, "repeat count");
		if (o->cfg.repeat < 1 || o->cfg.repeat > 15)
			bad_arg("repeat count (1-15)", arg);
		break;
	case OPT_SEED:
		o->cfg.seed = parse_count(arg, "seed");
		break;
	default:
		return 0;
	}
	return 1;
}

static void parse_opt(struct bench_opts *o, int c, char *arg)
{
	char *end;

	if (parse_opt_num(o, c, arg))
		return;
	switch (c) {
	case 'd':
		o->cfg.dir = arg;
		break;
	case 'b':
		parse_benches(o, arg);
		break;
	case 'a':
		parse_allocs(o, arg);
		break;
	case 't':
		parse_threads(o, arg);
		break;
	case 'm':
		parse_mode(o, arg);
		break;
	case 'R':
		parse_recovery(o, arg);
		break;
	case 'q':
		opts_quick(o);
		break;
	case 'j':
		o->cfg.json = 1;
		break;
	case 'h':
		usage();
		break;
	case 'V':
		printf("pmabench %s\n", PACKAGE_VERSION);
		exit(0);
	case OPT_NO_PIN:
		o->cfg.pin = 0;
		break;
	case OPT_REC_PARTS:
		o->cfg.rec_parts = (unsigned)strtoul(arg, &end, 10);
		if (!*arg || *end || o->cfg.rec_parts < 1 ||
		    o->cfg.rec_parts > 16)
			bad_arg("recovery part count (1..16)", arg);
		break;
	case OPT_RUN_MODE:
		o->run_mode = arg;
		break;
	case OPT_RUN_PART:
		o->run_part = arg;
		break;
	default:
		fprintf(stderr, "try 'pmabench --help'\n");
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	int c;

	opts_default(&o);
	while ((c = getopt_long(argc, argv, "d:b:a:t:m:n:w:s:r:R:qjhV",
				longopts, NULL)) != -1)
		parse_opt(&o, c, optarg);
	if (optind < argc)
		bad_arg("argument", argv[optind]);
	if (o.cfg.warmup == UINT64_MAX)
		o.cfg.warmup = o.cfg.ops / 4;
	if (o.cfg.ops == 0)
		bad_arg("op count", "0");
	if (o.run_mode && o.run_part)
		return run_child(&o);
	return run_parent(&o, argc, argv);
}
