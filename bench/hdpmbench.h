/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpmbench internals shared by hdpmbench.c (the single-thread write and
 * read phases) and hdpm-filebench.c (the Filebench personalities).
 */
#ifndef PMAD_BENCH_HDPMBENCH_H
#define PMAD_BENCH_HDPMBENCH_H

#include <stdint.h>
#include <time.h>

#define FB_REPEAT_MAX 15

/* the --filebench options */
struct fb_opts {
	const char *dir;
	unsigned which; /* bit per personality (FB_* in hdpm-filebench.c) */
	unsigned threads[8]; /* thread counts to run, 0-ended */
	unsigned scale; /* divide Filebench's file counts by this */
	uint64_t loops; /* flowop loops per thread */
	unsigned repeat; /* runs per mode, the median printed */
	uint64_t seed;
	int json;
	int gc_thread; /* hybrid mounts run the background GC thread */
	int modes; /* bit 0 hybrid, bit 1 cow */
};

static inline uint64_t hb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: *s must not be 0 */
static inline uint64_t hb_rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

/* the persistence granularity lib/pmem gets for a file in dir (NULL:
 * cannot map there) */
const char *hb_probe_gran(const char *dir);

/* parse "fileserver,varmail,webserver,webproxy|all" into fb_opts.which;
 * -1 on a bad name */
int hb_filebench_parse(const char *list, unsigned *ret_which);
/* run the personalities of o; 0 or -1 (message printed) */
int hb_filebench_run(const struct fb_opts *o, const char *gran);

#endif
