/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmabench recovery: a child process fills a heap with N live 64 B objects
 * (destinations in the root object) and _exit()s without closing it, so
 * the bookkeeping logs keep their un-checkpointed records: a crash, as far
 * as the heap is concerned. The parent times pma_heap_open (recovery),
 * checks every object survived, then times a clean open for comparison.
 * With --recovery-parts N the pool has N parts (one per NUMA node of
 * pma_numa_nodes; PMAD_FAKE_NUMA fakes them) and N threads, pinned to the first
 * N CPUs the process may use, fill it: local-first spreads the objects
 * over the parts, whose recoveries all run at the open.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "pmalloc.h"

#define REC_OBJ_SIZE 64
#define REC_TARGET_MS 100.0

/* what the crashing child tells the parent */
struct rec_report {
	int rc;
	uint64_t log_records; /* not checkpointed at the crash */
	uint64_t checkpoints; /* done while filling */
	char msg[160];
};

struct rec_row {
	uint64_t objects, pool_size;
	unsigned parts;
	struct rec_report rep;
	double recovery_ms, clean_open_ms;
	uint64_t live; /* destinations naming a live block after recovery */
	int rc;
	char msg[200];
};

/* room for n objects in 64 KiB slabs, their root array and the logs */
static uint64_t rec_pool_size(uint64_t n)
{
	uint64_t size = n * (REC_OBJ_SIZE + 8) / 10 * 12 + (64ULL << 20);

	return (size + 0xffff) & ~0xffffULL;
}

/* a filler thread: slots [first, end), pinned to the cpu-th CPU */
struct rec_filler {
	struct pma_heap *heap;
	uint64_t *slots, first, end;
	unsigned cpu;
	int rc;
};

static void *rec_fill_thread(void *arg)
{
	struct rec_filler *f = arg;
	cpu_set_t allowed, one;
	unsigned k = 0;
	int c;

	if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
		for (c = 0; c < CPU_SETSIZE; c++) {
			if (!CPU_ISSET(c, &allowed) || k++ != f->cpu)
				continue;
			CPU_ZERO(&one);
			CPU_SET(c, &one);
			(void)pthread_setaffinity_np(pthread_self(),
						     sizeof(one), &one);
			break;
		}
	for (; f->first < f->end; f->first++) {
		f->rc = pma_malloc_to(f->heap, REC_OBJ_SIZE,
				      &f->slots[f->first]);
		if (f->rc < 0)
			break;
	}
	return NULL;
}

static int rec_fill(struct pma_heap *heap, uint64_t n, unsigned nthreads,
		    struct rec_report *rep)
{
	struct rec_filler f[16];
	struct pma_heap_stats st;
	pthread_t tid[16];
	uint64_t root, *slots;
	unsigned t;
	int rc;

	rc = pma_root(heap, n * sizeof(uint64_t), &root);
	if (rc < 0)
		return rc;
	slots = pma_direct(heap, root);
	nthreads = nthreads < 1 ? 1 : nthreads > 16 ? 16 : nthreads;
	for (t = 0; t < nthreads; t++) {
		f[t] = (struct rec_filler){ .heap = heap,
					    .slots = slots,
					    .first = n * t / nthreads,
					    .end = n * (t + 1) / nthreads,
					    .cpu = t };
		if (pthread_create(&tid[t], NULL, rec_fill_thread, &f[t]))
			return -EAGAIN;
	}
	for (t = 0; t < nthreads; t++) {
		pthread_join(tid[t], NULL);
		if (f[t].rc < 0)
			rc = f[t].rc;
	}
	if (rc < 0)
		return rc;
	rc = pma_heap_stats(heap, &st);
	if (rc < 0)
		return rc;
	rep->log_records = st.log_records;
	rep->checkpoints = st.checkpoints;
	return 0;
}

/* part i's file: path, then path.part1, path.part2 ... as
 * pma_heap_create_cfg names them (cut short: the unlink then misses) */
static void rec_part_path(const char *path, unsigned i, char *buf, size_t len)
{
	int n = i ? snprintf(buf, len, "%.4000s.part%u", path, i % 100) :
		    snprintf(buf, len, "%.4000s", path);

	(void)n;
}

/* a config for a pool of nparts parts, one per online node in order */
static int rec_parts_config(unsigned nparts, struct pma_config *cfg)
{
	int nodes[16];
	unsigned i;
	int rc;

	rc = pma_numa_nodes(nodes, 16);
	if (rc < 0)
		return rc;
	if ((unsigned)rc < nparts)
		return -ENODEV; /* fewer nodes than parts */
	rc = pma_config_set_parts(cfg, nparts);
	for (i = 0; rc == 0 && i < nparts; i++)
		rc = pma_config_set_part_node(cfg, i, nodes[i]);
	if (rc == 0)
		rc = pma_config_set_flags(cfg, PMA_HEAP_FORCE);
	return rc;
}

/* a pool of nparts parts of size bytes, one per online node */
static int rec_create_parts(const char *path, uint64_t size, unsigned nparts,
			    struct pma_heap **ret_heap)
{
	struct pma_config *cfg;
	int rc;

	if (nparts > 16)
		return -EINVAL;
	rc = pma_config_new(&cfg);
	if (rc < 0)
		return rc;
	rc = rec_parts_config(nparts, cfg);
	if (rc == 0)
		rc = pma_heap_create_cfg(path, size / nparts, cfg, ret_heap);
	pma_config_delete(&cfg);
	return rc;
}

/* in the child: fill, report, then crash (no close, no checkpoint) */
static void __attribute__((noreturn))
rec_child(const char *path, uint64_t size, uint64_t n, unsigned nparts, int fd)
{
	struct rec_report rep;
	struct pma_heap *heap;
	ssize_t w;

	memset(&rep, 0, sizeof(rep));
	rep.rc = nparts > 1 ?
			 rec_create_parts(path, size, nparts, &heap) :
			 pma_heap_create(path, size, PMA_HEAP_FORCE, &heap);
	if (rep.rc == 0)
		rep.rc = rec_fill(heap, n, nparts, &rep);
	if (rep.rc < 0)
		snprintf(rep.msg, sizeof(rep.msg), "%s", pma_errormsg());
	w = write(fd, &rep, sizeof(rep));
	_exit(w == (ssize_t)sizeof(rep) ? 0 : 1);
}

/* fork the crashing child and collect its report */
static int rec_crash(const char *path, struct rec_row *row)
{
	int fds[2], status;
	ssize_t got;
	pid_t pid;

	if (pipe(fds) < 0)
		return -errno;
	(void)fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		rec_child(path, row->pool_size, row->objects, row->parts,
			  fds[1]);
	}
	close(fds[1]);
	got = pid < 0 ? -1 : read(fds[0], &row->rep, sizeof(row->rep));
	close(fds[0]);
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -errno;
	if (got != (ssize_t)sizeof(row->rep) || !WIFEXITED(status)) {
		snprintf(row->msg, sizeof(row->msg),
			 "the child filling the heap died (%s %d)",
			 WIFSIGNALED(status) ? "signal" : "exit status",
			 WIFSIGNALED(status) ? WTERMSIG(status) :
					       WEXITSTATUS(status));
		return -EIO;
	}
	if (row->rep.rc < 0)
		snprintf(row->msg, sizeof(row->msg), "filling the heap: %s",
			 row->rep.msg);
	return row->rep.rc;
}

/* count the root's destinations that name a live block */
static int rec_verify(struct pma_heap *heap, struct rec_row *row)
{
	uint64_t root, *slots, i;
	int rc;

	rc = pma_root(heap, row->objects * sizeof(uint64_t), &root);
	if (rc < 0)
		return rc;
	slots = pma_direct(heap, root);
	row->live = 0;
	for (i = 0; i < row->objects; i++)
		if (slots[i] && pma_usable_size(heap, slots[i]) >= REC_OBJ_SIZE)
			row->live++;
	return 0;
}

static int rec_open_timed(const char *path, double *ret_ms,
			  struct pma_heap **ret_heap)
{
	uint64_t t0, t1;
	int rc;

	t0 = bench_now_ns();
	rc = pma_heap_open(path, 0, ret_heap);
	t1 = bench_now_ns();
	if (rc == 0)
		*ret_ms = (double)(t1 - t0) / 1e6;
	return rc;
}

static int rec_measure(const char *path, struct rec_row *row)
{
	struct pma_heap *heap;
	int rc;

	rc = rec_crash(path, row);
	if (rc < 0)
		return rc;
	rc = rec_open_timed(path, &row->recovery_ms, &heap);
	if (rc < 0)
		goto out_msg;
	rc = rec_verify(heap, row);
	pma_heap_close(heap);
	if (rc < 0)
		goto out_msg;
	rc = rec_open_timed(path, &row->clean_open_ms, &heap);
	if (rc < 0)
		goto out_msg;
	pma_heap_close(heap);
	return 0;

out_msg:
	snprintf(row->msg, sizeof(row->msg), "reopening: %s", pma_errormsg());
	return rc;
}

void bench_recovery_header(void)
{
	printf("\n%-10s %-10s %9s %9s %11s %11s %11s %9s %s\n", "recovery",
	       "mode", "objects", "pool_MiB", "log_records", "recovery_ms",
	       "clean_open", "live_ok", "target");
}

static void rec_print_table(const char *mode, const struct rec_row *r)
{
	printf("%-10s %-10s %9" PRIu64 " %9" PRIu64, "pmalloc", mode,
	       r->objects, r->pool_size >> 20);
	if (r->rc < 0) {
		printf(" FAILED: %s\n", r->msg[0] ? r->msg : strerror(-r->rc));
		return;
	}
	printf(" %11" PRIu64 " %11.2f %11.2f %9s <%.0fms %s\n",
	       r->rep.log_records, r->recovery_ms, r->clean_open_ms,
	       r->live == r->objects ? "yes" : "NO", REC_TARGET_MS,
	       r->recovery_ms < REC_TARGET_MS ? "met" : "MISSED");
}

static void rec_print_json(const char *mode, const struct rec_row *r)
{
	printf("{\"bench\":\"recovery\",\"allocator\":\"pmalloc\","
	       "\"threads\":%u,\"parts\":%u,\"pm_mode\":\"%s\","
	       "\"objects\":%" PRIu64 ",\"object_size\":%d,"
	       "\"pool_size\":%" PRIu64 ",",
	       r->parts > 1 ? r->parts : 1, r->parts > 1 ? r->parts : 1, mode,
	       r->objects, REC_OBJ_SIZE, r->pool_size);
	if (r->rc < 0) {
		bench_json_str("error", r->msg[0] ? r->msg : strerror(-r->rc),
			       "}\n");
		return;
	}
	printf("\"log_records_at_crash\":%" PRIu64
	       ",\"checkpoints_before_crash\":%" PRIu64
	       ",\"live_after_recovery\":%" PRIu64 ",",
	       r->rep.log_records, r->rep.checkpoints, r->live);
	bench_json_num("recovery_ms", r->recovery_ms, ",");
	bench_json_num("clean_open_ms", r->clean_open_ms, ",");
	bench_json_num("target_ms", REC_TARGET_MS, ",");
	printf("\"target_met\":%s,\"error\":null}\n",
	       r->recovery_ms < REC_TARGET_MS && r->live == r->objects ?
		       "true" :
		       "false");
}

int bench_recovery(const struct bench_cfg *cfg, const char *mode)
{
	char path[PATH_MAX], part[PATH_MAX];
	struct rec_row row;
	uint64_t max = 0;
	unsigned i, p;
	int rc = 0;

	for (i = 0; i < cfg->rec_nobjs; i++)
		if (cfg->rec_objs[i] > max)
			max = cfg->rec_objs[i];
	snprintf(path, sizeof(path), "%s/pmabench-%d-recovery.pool", cfg->dir,
		 (int)getpid());
	for (i = 0; i < cfg->rec_nobjs; i++) {
		memset(&row, 0, sizeof(row));
		row.objects = cfg->rec_objs[i];
		row.parts = cfg->rec_parts;
		/* one pool size for every count: only the live set varies;
		 * -s makes it larger (recovery time against heap size) */
		row.pool_size = rec_pool_size(max);
		if (cfg->pool_size > row.pool_size)
			row.pool_size = cfg->pool_size;
		row.rc = rec_measure(path, &row);
		if (cfg->json)
			rec_print_json(mode, &row);
		else
			rec_print_table(mode, &row);
		(void)fflush(stdout);
		for (p = 0; p < (row.parts > 1 ? row.parts : 1); p++) {
			rec_part_path(path, p, part, sizeof(part));
			(void)unlink(part);
		}
		if (row.rc < 0)
			rc = row.rc;
	}
	return rc;
}
