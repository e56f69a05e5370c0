/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-pmem: lib/pmem mapping (tmpfs and /tmp files, read-only, errors),
 * flush/persist/memcpy/memset data paths, and the exact per-thread counters
 * (lines, fences, reflushes, XPLines, bytes), checked against a naive
 * per-line model on random flush sequences, plus the global sum.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

#include "pmem/crash.h"
#include "pmem/pm.h"

#define MAP_SIZE (1024 * 1024)

struct fixture {
	char path[64];
	int fd;
	struct pm_map *map;
	unsigned char *base; /* the mapping, 64-byte aligned */
};

/* a temporary file of size bytes in dir; returns its fd */
static int make_file(const char *dir, size_t size, char *path, size_t plen)
{
	int fd;

	snprintf(path, plen, "%s/test-pmem.XXXXXX", dir);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	return fd;
}

static int fixture_setup_in(void **state, const char *dir)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->fd = make_file(dir, MAP_SIZE, f->path, sizeof(f->path));
	assert_int_equal(pm_map_new(f->fd, 0, &f->map), 0);
	f->base = pm_map_addr(f->map);
	pm_stats_reset();
	*state = f;
	return 0;
}

static int setup_shm(void **state)
{
	return fixture_setup_in(state, "/dev/shm");
}

static int setup_tmp(void **state)
{
	return fixture_setup_in(state, "/tmp");
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	pm_map_delete(&f->map);
	assert_null(f->map);
	close(f->fd);
	unlink(f->path);
	free(f);
	return 0;
}

/* ---------------------------------------------------------------- mapping */

static void check_map_basics(struct fixture *f)
{
	const char *force = getenv("PMEM2_FORCE_GRANULARITY");
	enum pm_granularity g = pm_map_granularity(f->map);

	assert_non_null(f->base);
	assert_int_equal((uintptr_t)f->base % 4096, 0);
	assert_int_equal(pm_map_size(f->map), MAP_SIZE);
	assert_true(g == PM_GRAN_BYTE || g == PM_GRAN_CACHE_LINE ||
		    g == PM_GRAN_PAGE);
	if (force && strcasecmp(force, "CACHE_LINE") == 0)
		assert_int_equal(g, PM_GRAN_CACHE_LINE);
	else if (force && strcasecmp(force, "PAGE") == 0)
		assert_int_equal(g, PM_GRAN_PAGE);
	else if (!force)
		assert_int_equal(g, PM_GRAN_PAGE); /* no real PM here */
}

/* data persisted through the mapping is in the file */
static void test_map_persist_roundtrip(void **state)
{
	struct fixture *f = *state;
	char buf[32];

	check_map_basics(f);
	memcpy(f->base + 4096, "hello, persistent world", 24);
	pm_persist(f->map, f->base + 4096, 24);
	assert_int_equal(pread(f->fd, buf, 24, 4096), 24);
	assert_memory_equal(buf, "hello, persistent world", 24);
}

static void test_granularity_names(void **state)
{
	(void)state;
	assert_string_equal(pm_granularity_name(PM_GRAN_BYTE), "BYTE");
	assert_string_equal(pm_granularity_name(PM_GRAN_CACHE_LINE),
			    "CACHE_LINE");
	assert_string_equal(pm_granularity_name(PM_GRAN_PAGE), "PAGE");
}

static void test_map_rdonly(void **state)
{
	struct pm_map *map = NULL;
	char path[64];
	int fd, rfd;

	(void)state;
	fd = make_file("/dev/shm", 8192, path, sizeof(path));
	assert_int_equal(pwrite(fd, "ro-data", 7, 100), 7);
	rfd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(rfd >= 0);
	/* read-write mapping of a read-only fd fails with a message */
	assert_true(pm_map_new(rfd, 0, &map) < 0);
	assert_true(strlen(pm_errormsg()) > 0);
	assert_int_equal(pm_map_new(rfd, PM_MAP_RDONLY, &map), 0);
	assert_int_equal(pm_map_size(map), 8192);
	assert_memory_equal((char *)pm_map_addr(map) + 100, "ro-data", 7);
	pm_map_delete(&map);
	pm_map_delete(&map); /* NULL is fine */
	close(rfd);
	close(fd);
	unlink(path);
}

static void test_map_errors(void **state)
{
	struct pm_map *map = NULL;
	char path[64];
	int fd;

	(void)state;
	assert_int_equal(pm_map_new(-1, 0, &map), -EBADF);
	assert_non_null(strstr(pm_errormsg(), "cannot map fd"));
	assert_null(map);

	fd = make_file("/dev/shm", 0, path, sizeof(path));
	assert_int_equal(pm_map_new(fd, 0, &map), -EINVAL);
	assert_string_equal(pm_errormsg(), "cannot map an empty file");
	assert_null(map);

	assert_int_equal(pm_map_new(fd, 0x100, &map), -EINVAL);
	assert_non_null(strstr(pm_errormsg(), "bad flags"));
	close(fd);
	unlink(path);
}

/* ---------------------------------------------------------------- counters */

static void stats_expect(uint64_t lines, uint64_t fences, uint64_t reflushes,
			 uint64_t xplines, uint64_t bytes)
{
	struct pm_stats s;

	pm_stats_get(&s);
	assert_int_equal(s.lines_flushed, lines);
	assert_int_equal(s.fences, fences);
	assert_int_equal(s.reflushes, reflushes);
	assert_int_equal(s.xplines, xplines);
	assert_int_equal(s.bytes_persisted, bytes);
}

/* flush the single line number n of the mapping */
static void flush_line(struct fixture *f, size_t n)
{
	pm_flush(f->map, f->base + n * PM_CACHELINE, PM_CACHELINE);
}

static void test_count_lines(void **state)
{
	struct fixture *f = *state;

	pm_flush(f->map, f->base, 3 * PM_CACHELINE);
	stats_expect(3, 0, 0, 1, 192);
	/* 8 bytes straddling a line boundary: two lines */
	pm_stats_reset();
	pm_flush(f->map, f->base + 1000 * 64 + 60, 8);
	stats_expect(2, 0, 0, 1, 8);
	pm_flush(f->map, f->base, 0);
	stats_expect(2, 0, 0, 1, 8);
	pm_drain(f->map);
	stats_expect(2, 1, 0, 1, 8);
	pm_stats_reset();
	stats_expect(0, 0, 0, 0, 0);
}

static void test_count_reflushes(void **state)
{
	struct fixture *f = *state;
	size_t abcdea[] = { 0, 1, 2, 3, 4, 0 }, i;

	flush_line(f, 10); /* A, B, A: one reflush */
	flush_line(f, 20);
	flush_line(f, 10);
	stats_expect(3, 0, 1, 3, 192);

	pm_stats_reset(); /* A, B, C, D, E, A: four others since, none */
	for (i = 0; i < 6; i++)
		flush_line(f, 100 + 10 * abcdea[i]);
	stats_expect(6, 0, 0, 6, 384);

	pm_stats_reset(); /* A, B, C, D, A: three others since, one */
	for (i = 0; i < 5; i++)
		flush_line(f, 100 + 10 * (i % 4));
	stats_expect(5, 0, 1, 5, 320);

	pm_stats_reset(); /* A, A and A, B, B (B twice back to back) */
	flush_line(f, 7);
	flush_line(f, 7);
	flush_line(f, 9);
	flush_line(f, 9);
	stats_expect(4, 0, 2, 2, 256);
}

static void test_count_xplines(void **state)
{
	struct fixture *f = *state;

	flush_line(f, 0); /* lines 0..3 share XPLine 0 */
	flush_line(f, 1);
	flush_line(f, 3);
	stats_expect(3, 0, 0, 1, 192);
	flush_line(f, 4); /* XPLine 1 */
	flush_line(f, 0); /* back to XPLine 0 (and a reflush: 3 since) */
	stats_expect(5, 0, 1, 3, 320);
	pm_stats_reset();
	pm_flush(f->map, f->base + 64, 8 * 64); /* lines 1..8: XPLines 0,1,2 */
	stats_expect(8, 0, 0, 3, 512);
}

/* persist counts exactly like flush + drain */
static void test_count_persist(void **state)
{
	struct fixture *f = *state;
	struct pm_stats a, b;

	pm_flush(f->map, f->base + 130, 200);
	pm_drain(f->map);
	pm_flush(f->map, f->base + 130, 200);
	pm_drain(f->map);
	pm_stats_get(&a);
	pm_stats_reset();
	pm_persist(f->map, f->base + 130, 200);
	pm_persist(f->map, f->base + 130, 200);
	pm_stats_get(&b);
	assert_memory_equal(&a, &b, sizeof(a));
	assert_int_equal(b.lines_flushed, 8);
	assert_int_equal(b.fences, 2);
	assert_int_equal(b.reflushes, 4);
	assert_int_equal(b.bytes_persisted, 400);
}

/* a BYTE (eADR) mapping: flushes write nothing back and count nothing,
 * fences are counted, copies count their bytes, data reaches the file */
static void test_byte_flush_noop(void **state)
{
	const char *old = getenv("PMEM2_FORCE_GRANULARITY");
	char *saved = old ? strdup(old) : NULL;
	struct fixture *f;
	char buf[16];

	setenv("PMEM2_FORCE_GRANULARITY", "BYTE", 1);
	fixture_setup_in(state, "/dev/shm");
	if (saved)
		setenv("PMEM2_FORCE_GRANULARITY", saved, 1);
	else
		unsetenv("PMEM2_FORCE_GRANULARITY");
	free(saved);
	f = *state;
	assert_int_equal(pm_map_granularity(f->map), PM_GRAN_BYTE);

	memcpy(f->base + 4096, "eADR caches", 12);
	pm_flush(f->map, f->base + 4096, 12); /* inline one-line case */
	pm_flush(f->map, f->base, 5 * PM_CACHELINE); /* general case */
	stats_expect(0, 0, 0, 0, 0);
	pm_drain(f->map);
	stats_expect(0, 1, 0, 0, 0);
	pm_persist(f->map, f->base + 130, 200);
	stats_expect(0, 2, 0, 0, 0);
	pm_memcpy(f->map, f->base + 8192, "copied", 7, 0);
	stats_expect(1, 3, 0, 1, 7);
	assert_int_equal(pread(f->fd, buf, 12, 4096), 12);
	assert_memory_equal(buf, "eADR caches", 12);
	teardown(state);
}

static void test_memcpy_memset(void **state)
{
	struct fixture *f = *state;
	unsigned char src[1000], buf[1000];
	size_t i;

	for (i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)(i * 7 + 1);
	/* large: non-temporal path; [8192, 9192) is 16 lines, 4 XPLines */
	assert_ptr_equal(pm_memcpy(f->map, f->base + 8192, src, 1000, 0),
			 f->base + 8192);
	stats_expect(16, 1, 0, 4, 1000);
	assert_int_equal(pread(f->fd, buf, 1000, 8192), 1000);
	assert_memory_equal(buf, src, 1000);

	pm_stats_reset(); /* small, no drain */
	pm_memcpy(f->map, f->base + 16384 + 8, src, 16, PM_COPY_NODRAIN);
	stats_expect(1, 0, 0, 1, 16);
	pm_drain(f->map);
	assert_int_equal(pread(f->fd, buf, 16, 16384 + 8), 16);
	assert_memory_equal(buf, src, 16);

	pm_stats_reset();
	assert_ptr_equal(pm_memset(f->map, f->base + 32768, 0x5a, 4096, 0),
			 f->base + 32768);
	stats_expect(64, 1, 0, 16, 4096);
	pm_memset(f->map, f->base + 32768, 0x33, 10, PM_COPY_NODRAIN);
	stats_expect(65, 1, 0, 17, 4106);
	pm_drain(f->map);
	assert_int_equal(pread(f->fd, buf, 20, 32768), 20);
	for (i = 0; i < 20; i++)
		assert_int_equal(buf[i], i < 10 ? 0x33 : 0x5a);
}

/*
 * Naive model of the counters: per line flush, a reflush if the line was
 * flushed before and fewer than 4 distinct other lines were flushed since.
 */
struct model {
	size_t hist[4096]; /* every line flushed, in order */
	size_t n;
	uint64_t reflushes, xplines, lines;
};

static void model_line(struct model *m, size_t line)
{
	size_t seen[4], nseen = 0, i, j;
	int dup;

	if (m->n == 0 || m->hist[m->n - 1] / 4 != line / 4)
		m->xplines++;
	for (i = m->n; i-- > 0 && nseen < 4;) {
		if (m->hist[i] == line) {
			m->reflushes++;
			break;
		}
		for (dup = 0, j = 0; j < nseen; j++)
			dup |= seen[j] == m->hist[i];
		if (!dup)
			seen[nseen++] = m->hist[i];
	}
	m->lines++;
	m->hist[m->n++] = line;
}

/* a random byte range covering exactly lines [first, first+nlines) */
static void random_range(size_t first, size_t nlines, size_t *ret_start,
			 size_t *ret_len)
{
	size_t start = first * 64 + (size_t)rand() % 64;
	size_t end;

	if (nlines == 1)
		end = start + 1 + (size_t)rand() % (64 - start % 64);
	else
		end = (first + nlines - 1) * 64 + 1 + (size_t)rand() % 64;
	*ret_start = start;
	*ret_len = end - start;
}

static void test_counters_match_model(void **state)
{
	struct fixture *f = *state;
	static struct model m;
	struct pm_stats s;
	size_t i, l, first, nlines, start, len, bytes = 0;

	srand(42);
	memset(&m, 0, sizeof(m));
	for (i = 0; i < 800 && m.n < 4096 - 16; i++) {
		first = (size_t)rand() % 24; /* a small window: many repeats */
		nlines = rand() % 3 ? 1 : 1 + (size_t)rand() % 9;
		random_range(first, nlines, &start, &len);
		pm_flush(f->map, f->base + start, len);
		bytes += len;
		for (l = first; l < first + nlines; l++)
			model_line(&m, l);
	}
	pm_stats_get(&s);
	assert_int_equal(s.lines_flushed, m.lines);
	assert_int_equal(s.reflushes, m.reflushes);
	assert_int_equal(s.xplines, m.xplines);
	assert_int_equal(s.bytes_persisted, bytes);
	assert_true(m.reflushes > 50 && m.reflushes < m.lines);
}

/* ---------------------------------------------------------------- global */

static void *thread_flush(void *arg)
{
	struct fixture *f = arg;
	struct pm_stats s;

	pm_persist(f->map, f->base, 5 * 64); /* 5 lines, 2 XPLines, 1 fence */
	pm_drain(f->map);
	flush_line(f, 4); /* reflush, same XPLine as the line before */
	pm_stats_get(&s);
	assert_int_equal(s.lines_flushed, 6);
	return NULL;
}

static void test_global_sum(void **state)
{
	struct fixture *f = *state;
	struct pm_stats g0, g1, mine;
	pthread_t t;

	flush_line(f, 3);
	pm_stats_get_global(&g0);
	assert_int_equal(pthread_create(&t, NULL, thread_flush, f), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	pm_stats_get_global(&g1);
	/* the exited thread's counts stay in the global sum */
	assert_int_equal(g1.lines_flushed - g0.lines_flushed, 6);
	assert_int_equal(g1.fences - g0.fences, 2);
	assert_int_equal(g1.reflushes - g0.reflushes, 1);
	assert_int_equal(g1.xplines - g0.xplines, 2);
	assert_int_equal(g1.bytes_persisted - g0.bytes_persisted, 384);
	/* and the calling thread's counters are untouched by the other one */
	pm_stats_get(&mine);
	assert_int_equal(mine.lines_flushed, 1);
	assert_true(g1.lines_flushed >= 7);
}

static void test_crash_api_consistent(void **state)
{
	(void)state;
	if (pm_crash_enabled()) {
		assert_int_equal(pm_crash_arm(0), 0);
		return;
	}
	assert_int_equal(pm_crash_arm(1), -ENOTSUP);
	assert_non_null(strstr(pm_errormsg(), "--enable-crash-sim"));
	assert_int_equal(pm_crash_fence_count(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_granularity_names),
		cmocka_unit_test_setup_teardown(test_map_persist_roundtrip,
						setup_shm, teardown),
		cmocka_unit_test_setup_teardown(test_map_persist_roundtrip,
						setup_tmp, teardown),
		cmocka_unit_test(test_map_rdonly),
		cmocka_unit_test(test_map_errors),
		cmocka_unit_test(test_byte_flush_noop),
		cmocka_unit_test_setup_teardown(test_count_lines, setup_shm,
						teardown),
		cmocka_unit_test_setup_teardown(test_count_reflushes, setup_shm,
						teardown),
		cmocka_unit_test_setup_teardown(test_count_xplines, setup_shm,
						teardown),
		cmocka_unit_test_setup_teardown(test_count_persist, setup_shm,
						teardown),
		cmocka_unit_test_setup_teardown(test_memcpy_memset, setup_shm,
						teardown),
		cmocka_unit_test_setup_teardown(test_memcpy_memset, setup_tmp,
						teardown),
		cmocka_unit_test_setup_teardown(test_counters_match_model,
						setup_shm, teardown),
		cmocka_unit_test_setup_teardown(test_global_sum, setup_shm,
						teardown),
		cmocka_unit_test(test_crash_api_consistent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
