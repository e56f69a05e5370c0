/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmadbench: what pmad costs a libpmad client, against a running pmad
 * (--socket or $PMAD_SOCKET; pools "pmadbench-*" are created in its state
 * dir and stay there: use a scratch state dir).
 *   open     pmad_pool_open + pmad_pool_close round trips on a heap with
 *            --objects live 64 B blocks: median and p99 of open (pmad
 *            checkpoints and closes its heap, sends the descriptors; the
 *            client maps and opens the heap) and of close (the client
 *            checkpoints and unmaps; pmad reopens and recovers)
 *   recovery a child opens the pool, allocates --objects 64 B blocks and
 *            is killed with SIGKILL (logs not checkpointed since its last
 *            automatic checkpoint); then the time from its death
 *            (waitpid) to the next pmad_pool_open's return, and pmad's own
 *            reopen time for it (last_recovery_us of pool_list)
 * Prints the persistence mode, and the client's flushes and fences per
 * open and close (pma_pm_counters: the client's side only).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pmad.h"
#include "pmalloc.h"
#include "common.h"

struct opts {
	const char *sock;
	uint64_t pool_size;
	uint64_t objects;
	unsigned iters;
	int do_open, do_recovery;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "pmadbench: %s: %s (%s)\n", what, pmad_errormsg(),
		strerror(rc < 0 ? -rc : rc));
	exit(1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* ns as us, for printing */
static double us(uint64_t ns)
{
	return (double)ns / 1e3;
}

/* v[i] / n, for printing */
static double per(uint64_t v, unsigned n)
{
	return (double)v / (double)n;
}

static uint64_t pct(uint64_t *v, unsigned n, unsigned p)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[(size_t)n * p / 100 < n ? (size_t)n * p / 100 : n - 1];
}

/* a pool of --pool-size bytes through pmad (pmad_pool_create) */
static void create_pool(const struct opts *o, const char *name)
{
	struct pmad_client *c = NULL;
	int rc;

	rc = pmad_connect(o->sock, &c);
	if (rc == 0)
		rc = pmad_pool_create(c, name, o->pool_size);
	if (rc < 0) {
		fprintf(stderr, "pmadbench: pool_create %s: %s\n", name,
			pmad_errormsg());
		exit(1);
	}
	pmad_disconnect(c);
}

/* pmad's last_recovery_us of pool name, 0 if not known */
static uint64_t pmad_recovery_us(const struct opts *o, const char *name)
{
	struct pmad_pool_stats st = { 0 };
	struct pmad_client *c = NULL;
	int rc;

	rc = pmad_connect(o->sock, &c);
	if (rc == 0)
		rc = pmad_pool_stats(c, name, &st);
	pmad_disconnect(c);
	return rc < 0 ? 0 : st.last_recovery_us;
}

/* free what an earlier fill left (the root's array and its blocks) */
static void clear(struct pma_heap *heap, uint64_t root)
{
	uint64_t *head = pma_direct(heap, root), *arr, i, n;
	int rc = 0;

	if (!*head)
		return;
	arr = pma_direct(heap, *head);
	n = pma_usable_size(heap, *head) / sizeof(uint64_t);
	for (i = 0; i < n && rc == 0; i++)
		rc = pma_free_from(heap, &arr[i]);
	if (rc == 0)
		rc = pma_free_from(heap, head);
	if (rc < 0)
		die("clear", rc);
}

/* n 64 B blocks whose offsets live in an array held by the root (what
 * an earlier fill left is freed first) */
static void fill(struct pma_heap *heap, uint64_t n)
{
	uint64_t root = 0, *arr, i;
	int rc;

	rc = pma_root(heap, sizeof(uint64_t), &root);
	if (rc == 0)
		clear(heap, root);
	if (rc == 0)
		rc = pma_malloc_to(heap, (n ? n : 1) * sizeof(uint64_t),
				   pma_direct(heap, root));
	if (rc < 0)
		die("fill", rc);
	arr = pma_direct(heap, *(uint64_t *)pma_direct(heap, root));
	for (i = 0; i < n; i++) {
		rc = pma_malloc_to(heap, 64, &arr[i]);
		if (rc < 0)
			die("pma_malloc_to", rc);
	}
}

static const char *mode(void)
{
	const char *g = getenv("PMEM2_FORCE_GRANULARITY");

	return g && *g ? g : "default";
}

static void bench_open(const struct opts *o)
{
	uint64_t *t_open = calloc(o->iters, sizeof(uint64_t));
	uint64_t *t_close = calloc(o->iters, sizeof(uint64_t));
	struct pma_pm_counters s0, s1, s2;
	uint64_t fl_open = 0, fe_open = 0, fl_close = 0, fe_close = 0, t;
	struct pmad_client *c = NULL;
	struct pma_heap *heap = NULL;
	char name[64];
	unsigned i;
	int rc;

	snprintf(name, sizeof(name), "pmadbench-open-%d", (int)getpid());
	create_pool(o, name);
	rc = pmad_connect(o->sock, &c);
	if (rc == 0)
		rc = pmad_pool_open(c, name, &heap);
	if (rc < 0)
		die("open", rc);
	fill(heap, o->objects);
	if (pmad_pool_close(c, heap) < 0)
		die("close", -EIO);
	for (i = 0; i < o->iters; i++) {
		pma_pm_counters(&s0, 0);
		t = now_ns();
		rc = pmad_pool_open(c, name, &heap);
		t_open[i] = now_ns() - t;
		if (rc < 0)
			die("open", rc);
		pma_pm_counters(&s1, 0);
		t = now_ns();
		rc = pmad_pool_close(c, heap);
		t_close[i] = now_ns() - t;
		if (rc < 0)
			die("close", rc);
		pma_pm_counters(&s2, 0);
		fl_open += s1.lines_flushed - s0.lines_flushed;
		fe_open += s1.fences - s0.fences;
		fl_close += s2.lines_flushed - s1.lines_flushed;
		fe_close += s2.fences - s1.fences;
	}
	pmad_disconnect(c);
	printf("%-6s %-10s %9" PRIu64 " %9s %12.1f %12.1f %9.1f %9.1f\n",
	       "open", mode(), o->objects, "-", us(pct(t_open, o->iters, 50)),
	       us(pct(t_open, o->iters, 99)), per(fl_open, o->iters),
	       per(fe_open, o->iters));
	printf("%-6s %-10s %9" PRIu64 " %9s %12.1f %12.1f %9.1f %9.1f\n",
	       "close", mode(), o->objects, "-", us(pct(t_close, o->iters, 50)),
	       us(pct(t_close, o->iters, 99)), per(fl_close, o->iters),
	       per(fe_close, o->iters));
	free(t_open);
	free(t_close);
}

/* the child: open, allocate, report the log records left, die */
static void doomed_client(const struct opts *o, const char *name, int fd)
{
	struct pma_heap_stats st;
	struct pmad_client *c = NULL;
	struct pma_heap *heap = NULL;
	int rc;

	rc = pmad_connect(o->sock, &c);
	if (rc == 0)
		rc = pmad_pool_open(c, name, &heap);
	if (rc < 0)
		die("child open", rc);
	fill(heap, o->objects);
	if (pma_heap_stats(heap, &st) < 0)
		st.log_records = 0;
	if (write(fd, &st.log_records, sizeof(st.log_records)) < 0)
		_exit(2);
	raise(SIGKILL);
}

static void bench_recovery(const struct opts *o)
{
	uint64_t *t_rec = calloc(o->iters, sizeof(uint64_t));
	uint64_t *t_pmad = calloc(o->iters, sizeof(uint64_t));
	uint64_t records = 0, t;
	struct pmad_client *c = NULL;
	struct pma_heap *heap = NULL;
	char name[64];
	unsigned i;
	int p[2], status, rc;
	pid_t pid;

	/* one pool: each child frees what the last one left, then fills */
	snprintf(name, sizeof(name), "pmadbench-rec-%d", (int)getpid());
	create_pool(o, name);
	for (i = 0; i < o->iters; i++) {
		if (pipe(p) < 0)
			die("pipe", -errno);
		pid = fork();
		if (pid == 0) {
			close(p[0]);
			doomed_client(o, name, p[1]);
		}
		close(p[1]);
		if (read(p[0], &records, sizeof(records)) != sizeof(records))
			die("child", -EIO);
		close(p[0]);
		waitpid(pid, &status, 0);
		t = now_ns();
		rc = pmad_connect(o->sock, &c);
		if (rc == 0)
			rc = pmad_pool_open(c, name, &heap);
		t_rec[i] = now_ns() - t;
		if (rc < 0)
			die("open after the kill", rc);
		(void)pmad_pool_close(c, heap);
		pmad_disconnect(c);
		t_pmad[i] = pmad_recovery_us(o, name) * 1000;
	}
	printf("%-6s %-10s %9" PRIu64 " %9" PRIu64 " %12.1f %12.1f %9s %9s\n",
	       "kill", mode(), o->objects, records,
	       us(pct(t_rec, o->iters, 50)), us(pct(t_rec, o->iters, 99)), "-",
	       "-");
	printf("%-6s %-10s %9" PRIu64 " %9" PRIu64 " %12.1f %12.1f %9s %9s\n",
	       "pmad", mode(), o->objects, records,
	       us(pct(t_pmad, o->iters, 50)), us(pct(t_pmad, o->iters, 99)),
	       "-", "-");
	free(t_rec);
	free(t_pmad);
}

static void usage(void)
{
	printf("usage: pmadbench [--socket PATH] [--bench open,recovery]\n"
	       "                 [--objects N] [--iters N] [--pool-size SIZE]\n"
	       "Round trips of pmad_pool_open/close and the recovery of a\n"
	       "client killed with SIGKILL, against a running pmad (pools\n"
	       "pmadbench-* stay in its state dir). Rows: open/close (client\n"
	       "side latency of each call), kill (from the client's death to\n"
	       "the next open's return), pmad (pmad's reopen time for it);\n"
	       "us are median and p99; flush/fence are the client's per call.\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 'S' },
		{ "bench", required_argument, NULL, 'b' },
		{ "objects", required_argument, NULL, 'o' },
		{ "iters", required_argument, NULL, 'i' },
		{ "pool-size", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .sock = getenv("PMAD_SOCKET"),
			  .pool_size = 256ULL << 20,
			  .iters = 50,
			  .do_open = 1,
			  .do_recovery = 1 };
	int c;

	while ((c = getopt_long(argc, argv, "S:b:o:i:s:h", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'S':
			o.sock = optarg;
			break;
		case 'b':
			o.do_open = strstr(optarg, "open") != NULL;
			o.do_recovery = strstr(optarg, "recovery") != NULL;
			break;
		case 'o':
			if (bench_size_parse(optarg, &o.objects) < 0)
				return 2;
			break;
		case 'i':
			o.iters = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 's':
			if (bench_size_parse(optarg, &o.pool_size) < 0)
				return 2;
			break;
		case 'h':
			usage();
			return 0;
		default:
			fprintf(stderr, "try 'pmadbench --help'\n");
			return 2;
		}
	}
	if (!o.sock || !o.iters) {
		fprintf(stderr, "pmadbench: give --socket or $PMAD_SOCKET, "
				"and --iters > 0\n");
		return 2;
	}
	printf("%-6s %-10s %9s %9s %12s %12s %9s %9s\n", "row", "mode",
	       "objects", "log_recs", "median_us", "p99_us", "flush/op",
	       "fence/op");
	if (o.do_open)
		bench_open(&o);
	if (o.do_recovery)
		bench_recovery(&o);
	return 0;
}
