/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pma-recovery-worst: recovery time when the logs are as full as the
 * checkpoint triggers allow. THREADS threads (one arena each) do OPS
 * small allocations and frees each in a child process that then exits
 * without closing (a crash: every record stays in the logs); the parent
 * times the open that recovers, then a clean open.
 *   pma-recovery-worst [--threads N] [--ops N] [--size BYTES] [PATH]
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pmalloc.h"

struct worst {
	struct pma_heap *heap;
	uint64_t *slots;
	unsigned long ops;
	int failed;
};

struct worker {
	struct worst *w;
	unsigned id;
};

/* alternate malloc_to and free_from on the thread's own slots */
static void *work(void *arg)
{
	struct worker *k = arg;
	struct worst *w = k->w;
	unsigned long i, half = w->ops / 2 ? w->ops / 2 : 1;
	uint64_t *d;
	int rc;

	for (i = 0; i < w->ops; i++) {
		d = &w->slots[k->id * half + i % half];
		rc = *d ? pma_free_from(w->heap, d) :
			  pma_malloc_to(w->heap, 64 + (i % 7) * 64, d);
		if (rc < 0) {
			w->failed = 1;
			break;
		}
	}
	return NULL;
}

/* the crashing child: fill the logs, report, _exit without closing */
static int child(const char *path, unsigned threads, struct worst *w)
{
	struct worker k[64];
	pthread_t tid[64];
	struct pma_heap_stats st;
	uint64_t root;
	unsigned t;

	if (pma_heap_open(path, 0, &w->heap) < 0 ||
	    pma_root(w->heap, threads * (w->ops / 2 + 1) * 8, &root) < 0)
		return 2;
	w->slots = pma_direct(w->heap, root);
	for (t = 0; t < threads; t++) {
		k[t].w = w;
		k[t].id = t;
		if (pthread_create(&tid[t], NULL, work, &k[t]))
			return 2;
	}
	for (t = 0; t < threads; t++)
		pthread_join(tid[t], NULL);
	if (w->failed || pma_heap_stats(w->heap, &st) < 0)
		return 3;
	printf("crash with %llu log records pending (%llu checkpoints "
	       "before)\n",
	       (unsigned long long)st.log_records,
	       (unsigned long long)st.checkpoints);
	(void)fflush(stdout);
	_exit(0);
}

static double ms_since(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) * 1e3 +
	       (double)(b.tv_nsec - a->tv_nsec) / 1e6;
}

static int timed_open(const char *path, const char *what)
{
	struct pma_heap *heap;
	struct timespec a;

	clock_gettime(CLOCK_MONOTONIC, &a);
	if (pma_heap_open(path, 0, &heap) < 0) {
		fprintf(stderr, "pma-recovery-worst: %s: %s\n", what,
			pma_errormsg());
		return -1;
	}
	printf("%s: %.2f ms\n", what, ms_since(&a));
	pma_heap_close(heap);
	return 0;
}

static void usage(FILE *f)
{
	fputs("usage: pma-recovery-worst [--threads N] [--ops N] "
	      "[--size BYTES] [PATH]\n"
	      "Time recovery after a crash with full logs: N threads (one "
	      "arena each,\ndefault 16) do --ops malloc_to/free_from each "
	      "(default 4000) on a new\nheap of --size bytes (default 1 GiB) "
	      "at PATH (default\n/dev/shm/pma-recovery-worst.pool, removed "
	      "after).\n",
	      f);
}

/* NOLINTNEXTLINE(readability-function-size): options, then one run */
int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "ops", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = "/dev/shm/pma-recovery-worst.pool";
	struct worst w = { .ops = 4000 };
	unsigned long long size = 1ULL << 30;
	unsigned long threads = 16;
	struct pma_heap *heap;
	char *end;
	int c, status;
	pid_t pid;

	while ((c = getopt_long(argc, argv, "t:n:s:h", opts, NULL)) != -1) {
		errno = 0;
		switch (c) {
		case 't':
			threads = strtoul(optarg, &end, 10);
			if (errno || *end || threads < 1 || threads > 64) {
				fprintf(stderr,
					"pma-recovery-worst: bad "
					"--threads '%s' (1-64)\n",
					optarg);
				return 2;
			}
			break;
		case 'n':
			w.ops = strtoul(optarg, &end, 10);
			if (errno || *end || w.ops < 2) {
				fprintf(stderr,
					"pma-recovery-worst: bad --ops "
					"'%s' (>= 2)\n",
					optarg);
				return 2;
			}
			break;
		case 's':
			size = strtoull(optarg, &end, 10);
			if (errno || *end) {
				fprintf(stderr,
					"pma-recovery-worst: bad --size "
					"'%s' (bytes)\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		path = argv[optind++];
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	(void)unlink(path);
	if (pma_heap_create(path, size, 0, &heap) < 0) {
		fprintf(stderr, "pma-recovery-worst: create %s: %s\n", path,
			pma_errormsg());
		return 1;
	}
	pma_heap_close(heap);
	(void)fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(child(path, (unsigned)threads, &w));
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		fprintf(stderr, "pma-recovery-worst: the crashing child "
				"failed\n");
		(void)unlink(path);
		return 1;
	}
	c = timed_open(path, "recovery (open after the crash)") < 0 ||
	    timed_open(path, "clean open") < 0;
	(void)unlink(path);
	return c;
}
