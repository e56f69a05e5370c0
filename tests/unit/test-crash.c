/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-crash: the crash simulator itself (--enable-crash-sim builds).
 * Durability rules (unflushed / unfenced stores are lost, snapshot at
 * flush time, per-thread fences), the seeded torn images (only dirty lines,
 * whole 8-byte words, seed-dependent), mappings of one file sharing one
 * durable image, the fence hook, and PM_CRASH_AT in
 * a re-executed child ("--crash-child PATH") that must _exit with the image.
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "pmem/crash.h"
#include "pmem/pm.h"

#define MAP_SIZE (64 * 1024)
#define LINE(f, n) ((f)->base + (size_t)(n)*PM_CACHELINE)
#define LINE_OFF(n) ((size_t)(n)*PM_CACHELINE)

struct fixture {
	char path[64];
	int fd;
	struct pm_map *map;
	unsigned char *base;
	unsigned char *img; /* MAP_SIZE scratch for images */
};

static int make_file(char *path, size_t plen, size_t size)
{
	int fd;

	snprintf(path, plen, "/dev/shm/test-crash.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	return fd;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->fd = make_file(f->path, sizeof(f->path), MAP_SIZE);
	/* content before mapping counts as durable */
	assert_int_equal(pwrite(f->fd, "pre", 3, MAP_SIZE - 64), 3);
	assert_int_equal(pm_crash_arm(1), 0);
	assert_int_equal(pm_map_new(f->fd, 0, &f->map), 0);
	f->base = pm_map_addr(f->map);
	f->img = malloc(MAP_SIZE);
	assert_non_null(f->img);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(pm_crash_set_hook(NULL, NULL), 0);
	pm_map_delete(&f->map);
	close(f->fd);
	unlink(f->path);
	free(f->img);
	free(f);
	return 0;
}

/* the durable image (seed 0) of f into f->img */
static void durable(struct fixture *f)
{
	assert_int_equal(pm_crash_image(f->map, 0, f->img), 0);
}

/* ---------------------------------------------------------------- rules */

static void test_enabled(void **state)
{
	(void)state;
	assert_int_equal(pm_crash_enabled(), 1);
}

static void test_initial_content_durable(void **state)
{
	struct fixture *f = *state;

	durable(f);
	assert_memory_equal(f->img + MAP_SIZE - 64, "pre", 3);
	assert_int_equal(pm_crash_dirty_lines(f->map), 0);
}

static void test_unflushed_lost(void **state)
{
	struct fixture *f = *state;

	memset(LINE(f, 5), 0xaa, 64);
	durable(f);
	assert_int_equal(f->img[5 * 64], 0);
	assert_int_equal(pm_crash_dirty_lines(f->map), 1);
	pm_drain(f->map); /* a fence alone does not help */
	durable(f);
	assert_int_equal(f->img[5 * 64], 0);
}

static void test_flushed_unfenced_lost(void **state)
{
	struct fixture *f = *state;

	memset(LINE(f, 6), 0xbb, 100); /* lines 6 and 7 */
	pm_flush(f->map, LINE(f, 6), 100);
	durable(f);
	assert_int_equal(f->img[6 * 64], 0);
	assert_int_equal(f->img[7 * 64], 0);
	assert_int_equal(pm_crash_dirty_lines(f->map), 2);
}

static void test_flushed_fenced_durable(void **state)
{
	struct fixture *f = *state;

	memset(LINE(f, 6), 0xbb, 100);
	pm_flush(f->map, LINE(f, 6), 100);
	pm_drain(f->map);
	memcpy(LINE(f, 9), "persist", 8);
	pm_persist(f->map, LINE(f, 9), 8);
	pm_memcpy(f->map, LINE(f, 20), "memcpy", 7, 0);
	pm_memset(f->map, LINE(f, 30), 0xcc, 300, 0);
	durable(f);
	assert_memory_equal(f->img, f->base, MAP_SIZE);
	assert_int_equal(pm_crash_dirty_lines(f->map), 0);
}

static void test_memcpy_nodrain_not_durable(void **state)
{
	struct fixture *f = *state;

	pm_memcpy(f->map, LINE(f, 20), "memcpy", 7, PM_COPY_NODRAIN);
	durable(f);
	assert_int_equal(f->img[20 * 64], 0);
	pm_drain(f->map);
	durable(f);
	assert_memory_equal(f->img + 20 * 64, "memcpy", 7);
}

/* a store after the flush but before the fence is not made durable */
static void test_snapshot_at_flush(void **state)
{
	struct fixture *f = *state;

	memcpy(LINE(f, 3), "first", 6);
	pm_flush(f->map, LINE(f, 3), 6);
	memcpy(LINE(f, 3), "later", 6);
	pm_drain(f->map);
	durable(f);
	assert_memory_equal(f->img + 3 * 64, "first", 6);
	assert_int_equal(pm_crash_dirty_lines(f->map), 1);
}

/* ---------------------------------------------------------------- torn */

#define TORN_FIRST 100
#define TORN_LINES 32

/* which dirty lines of img took new words; counts torn (partial) lines */
static uint64_t check_torn_image(struct fixture *f, const unsigned char *dur,
				 unsigned *ret_partial)
{
	uint64_t mask = 0;
	size_t line, w, off, nnew;

	for (line = 0; line < MAP_SIZE / 64; line++) {
		off = line * 64;
		if (line < TORN_FIRST || line >= TORN_FIRST + TORN_LINES) {
			assert_memory_equal(f->img + off, dur + off, 64);
			continue;
		}
		for (nnew = 0, w = 0; w < 8; w++) {
			off = line * 64 + w * 8;
			if (memcmp(f->img + off, f->base + off, 8) == 0)
				nnew++;
			else /* whole word old, never a byte mix */
				assert_memory_equal(f->img + off, dur + off, 8);
		}
		if (nnew)
			mask |= 1ULL << (line - TORN_FIRST);
		if (nnew && nnew < 8)
			(*ret_partial)++;
	}
	return mask;
}

static void test_seeded_images(void **state)
{
	struct fixture *f = *state;
	unsigned char *dur = malloc(MAP_SIZE), *again = malloc(MAP_SIZE);
	uint64_t masks[16];
	unsigned partial = 0, distinct = 0;
	size_t i, j;

	assert_non_null(dur);
	assert_non_null(again);
	memcpy(LINE(f, 50), "durable", 8);
	pm_persist(f->map, LINE(f, 50), 8);
	for (i = 0; i < TORN_LINES * 64; i++) /* every byte differs */
		LINE(f, TORN_FIRST)[i] = (unsigned char)(1 + i % 251);
	pm_flush(f->map, LINE(f, TORN_FIRST), 64); /* unfenced counts too */
	assert_int_equal(pm_crash_dirty_lines(f->map), TORN_LINES);
	durable(f);
	memcpy(dur, f->img, MAP_SIZE);
	assert_memory_equal(dur + 50 * 64, "durable", 8);
	for (i = 0; i < 16; i++) {
		assert_int_equal(pm_crash_image(f->map, i + 1, f->img), 0);
		masks[i] = check_torn_image(f, dur, &partial);
		assert_int_equal(pm_crash_image(f->map, i + 1, again), 0);
		assert_memory_equal(f->img, again, MAP_SIZE); /* repeatable */
		for (j = 0; j < i && masks[j] != masks[i]; j++)
			;
		distinct += j == i;
	}
	assert_true(distinct >= 12); /* different seeds, different subsets */
	assert_true(partial > 0); /* some lines torn within the line */
	free(dur);
	free(again);
}

/* ---------------------------------------------------------------- threads */

struct mt {
	struct fixture *f;
	pthread_barrier_t flushed, go_fence;
};

static void *thread_a(void *arg)
{
	struct mt *mt = arg;

	memcpy(LINE(mt->f, 1), "thread A", 9);
	pm_flush(mt->f->map, LINE(mt->f, 1), 9);
	pthread_barrier_wait(&mt->flushed);
	pthread_barrier_wait(&mt->go_fence);
	pm_drain(mt->f->map);
	return NULL;
}

static void *thread_exit_unfenced(void *arg)
{
	struct fixture *f = arg;

	memcpy(LINE(f, 4), "lost", 5);
	pm_flush(f->map, LINE(f, 4), 5);
	return NULL;
}

static void test_fence_is_per_thread(void **state)
{
	struct fixture *f = *state;
	struct mt mt = { .f = f };
	pthread_t t;

	pthread_barrier_init(&mt.flushed, NULL, 2);
	pthread_barrier_init(&mt.go_fence, NULL, 2);
	assert_int_equal(pthread_create(&t, NULL, thread_a, &mt), 0);
	pthread_barrier_wait(&mt.flushed);
	memcpy(LINE(f, 2), "main", 5);
	pm_persist(f->map, LINE(f, 2), 5);
	durable(f); /* our fence did not make A's flush durable */
	assert_memory_equal(f->img + 2 * 64, "main", 5);
	assert_int_equal(f->img[1 * 64], 0);
	pthread_barrier_wait(&mt.go_fence);
	assert_int_equal(pthread_join(t, NULL), 0);
	durable(f);
	assert_memory_equal(f->img + 1 * 64, "thread A", 9);

	/* a thread that exits without a fence never made its flush durable */
	assert_int_equal(pthread_create(&t, NULL, thread_exit_unfenced, f), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	pm_drain(f->map);
	durable(f);
	assert_int_equal(f->img[4 * 64], 0);
	pthread_barrier_destroy(&mt.flushed);
	pthread_barrier_destroy(&mt.go_fence);
}

/*
 * A flushes line 1 (old content) but fences late; meanwhile the main thread
 * stores newer content to the same line, flushes and fences. A's late fence
 * must not roll the line back: a line is durable with its newest flush.
 */
static void test_late_fence_does_not_roll_back(void **state)
{
	struct fixture *f = *state;
	struct mt mt = { .f = f };
	pthread_t t;

	pthread_barrier_init(&mt.flushed, NULL, 2);
	pthread_barrier_init(&mt.go_fence, NULL, 2);
	assert_int_equal(pthread_create(&t, NULL, thread_a, &mt), 0);
	pthread_barrier_wait(&mt.flushed);
	memcpy(LINE(f, 1), "main new", 9);
	pm_persist(f->map, LINE(f, 1), 9);
	pthread_barrier_wait(&mt.go_fence);
	assert_int_equal(pthread_join(t, NULL), 0);
	durable(f);
	assert_memory_equal(f->img + 1 * 64, "main new", 9);
	pthread_barrier_destroy(&mt.flushed);
	pthread_barrier_destroy(&mt.go_fence);
}

/* ---------------------------------------------------------------- maps */

static void test_multiple_maps(void **state)
{
	struct fixture *f = *state;
	struct pm_map *m2 = NULL, *m3 = NULL;
	unsigned char *b2, *b3, img2[4096];
	char p2[64], p3[64];
	int fd2, fd3;

	fd2 = make_file(p2, sizeof(p2), 4096);
	fd3 = make_file(p3, sizeof(p3), 4096);
	assert_int_equal(pm_map_new(fd2, 0, &m2), 0);
	assert_int_equal(pm_map_new(fd3, 0, &m3), 0);
	b2 = pm_map_addr(m2);
	b3 = pm_map_addr(m3);
	memcpy(LINE(f, 8), "one", 4);
	memcpy(b2 + 128, "two", 4);
	memcpy(b3 + 256, "three", 6);
	pm_flush(f->map, LINE(f, 8), 4);
	pm_flush(m2, b2 + 128, 4);
	pm_flush(m3, b3 + 256, 6);
	/* m3 goes away with a pending snapshot: it must be dropped */
	pm_map_delete(&m3);
	/* one fence of this thread covers its flushes on every mapping */
	pm_drain(m2);
	durable(f);
	assert_memory_equal(f->img + 8 * 64, "one", 4);
	assert_int_equal(pm_crash_image(m2, 0, img2), 0);
	assert_memory_equal(img2 + 128, "two", 4);
	pm_map_delete(&m2);
	close(fd2);
	close(fd3);
	unlink(p2);
	unlink(p3);
}

/* two mappings of one file (two opens of a pool in one process): one
 * shadow, the durable image of the file */
static void test_maps_of_one_file(void **state)
{
	struct fixture *f = *state;
	struct pm_map *m2 = NULL;
	unsigned char *b2, *img2 = malloc((size_t)MAP_SIZE);
	int fd2 = open(f->path, O_RDWR | O_CLOEXEC);

	assert_non_null(img2);
	assert_true(fd2 >= 0);
	/* not durable when the second mapping is made: not in its image */
	memcpy(LINE(f, 3), "lost", 5);
	assert_int_equal(pm_map_new(fd2, 0, &m2), 0);
	b2 = pm_map_addr(m2);
	assert_memory_equal(b2 + LINE_OFF(3), "lost", 5);
	assert_int_equal(pm_crash_image(m2, 0, img2), 0);
	assert_int_equal(img2[LINE_OFF(3)], 0);
	/* made durable through either mapping: in both images */
	memcpy(b2 + LINE_OFF(4), "two", 4);
	pm_persist(m2, b2 + LINE_OFF(4), 4);
	memcpy(LINE(f, 5), "one", 4);
	pm_persist(f->map, LINE(f, 5), 4);
	durable(f);
	assert_int_equal(pm_crash_image(m2, 0, img2), 0);
	assert_memory_equal(f->img, img2, (size_t)MAP_SIZE);
	assert_memory_equal(img2 + LINE_OFF(4), "two", 4);
	assert_memory_equal(img2 + LINE_OFF(5), "one", 4);
	assert_int_equal(img2[LINE_OFF(3)], 0);
	/* the first mapping goes: the second keeps the shadow */
	pm_map_delete(&f->map);
	assert_int_equal(pm_crash_image(m2, 0, img2), 0);
	assert_memory_equal(img2 + LINE_OFF(5), "one", 4);
	assert_int_equal(img2[LINE_OFF(3)], 0);
	assert_int_equal(pm_map_new(f->fd, 0, &f->map), 0);
	f->base = pm_map_addr(f->map);
	pm_map_delete(&m2);
	durable(f);
	assert_memory_equal(f->img + LINE_OFF(5), "one", 4);
	assert_int_equal(f->img[LINE_OFF(3)], 0);
	close(fd2);
	free(img2);
}

static void test_write_image(void **state)
{
	struct fixture *f = *state;
	unsigned char *back = malloc(MAP_SIZE);
	char path[64];
	int fd;

	assert_non_null(back);
	memcpy(LINE(f, 11), "kept", 5);
	pm_persist(f->map, LINE(f, 11), 5);
	memcpy(LINE(f, 12), "dropped", 8);
	fd = make_file(path, sizeof(path), 0);
	assert_int_equal(pm_crash_write_image(f->map, 0, path), 0);
	assert_int_equal(pread(fd, back, MAP_SIZE, 0), MAP_SIZE);
	durable(f);
	assert_memory_equal(back, f->img, MAP_SIZE);
	assert_memory_equal(back + 11 * 64, "kept", 5);
	assert_int_equal(back[12 * 64], 0);
	assert_int_equal(pm_crash_write_image(f->map, 0, "/nonexistent/x"),
			 -ENOENT);
	assert_non_null(strstr(pm_errormsg(), "/nonexistent/x"));
	close(fd);
	unlink(path);
	free(back);
}

static void test_unarmed_map(void **state)
{
	struct fixture *f = *state;
	struct pm_map *m = NULL;
	uint64_t fences;
	char path[64];
	int fd;

	(void)f;
	fd = make_file(path, sizeof(path), 4096);
	assert_int_equal(pm_crash_arm(0), 0);
	assert_int_equal(pm_map_new(fd, 0, &m), 0);
	assert_int_equal(pm_crash_arm(1), 0);
	memset(pm_map_addr(m), 1, 64);
	assert_int_equal(pm_crash_dirty_lines(m), 0);
	fences = pm_crash_fence_count();
	pm_persist(m, pm_map_addr(m), 64);
	assert_int_equal(pm_crash_fence_count(), fences);
	assert_int_equal(pm_crash_image(m, 0, f->img), -EINVAL);
	assert_non_null(strstr(pm_errormsg(), "not armed"));
	pm_map_delete(&m);
	close(fd);
	unlink(path);
}

/* ---------------------------------------------------------------- hook */

struct hook_log {
	struct fixture *f;
	uint64_t no[8];
	unsigned char seen[8]; /* line 40 of the durable image at the hook */
	size_t n;
};

static void record_hook(uint64_t fence_no, void *arg)
{
	struct hook_log *log = arg;

	assert_true(log->n < 8);
	/* building an image from inside the hook is allowed */
	assert_int_equal(pm_crash_image(log->f->map, 0, log->f->img), 0);
	log->seen[log->n] = log->f->img[40 * 64];
	log->no[log->n++] = fence_no;
}

static void test_hook_every_fence(void **state)
{
	struct fixture *f = *state;
	struct hook_log log = { .f = f };
	size_t i;

	assert_int_equal(pm_crash_set_hook(record_hook, &log), 0);
	LINE(f, 40)[0] = 7;
	pm_flush(f->map, LINE(f, 40), 1);
	pm_drain(f->map); /* 1: before it takes effect */
	pm_drain(f->map); /* 2: now durable */
	pm_persist(f->map, LINE(f, 41), 1); /* 3 */
	pm_memcpy(f->map, LINE(f, 42), "x", 1, 0); /* 4 */
	pm_memset(f->map, LINE(f, 43), 1, 1, PM_COPY_NODRAIN); /* none */
	assert_int_equal(log.n, 4);
	assert_int_equal(log.seen[0], 0);
	assert_int_equal(log.seen[1], 7);
	for (i = 1; i < log.n; i++)
		assert_int_equal(log.no[i], log.no[i - 1] + 1);
	assert_int_equal(pm_crash_fence_count(), log.no[3]);
	assert_int_equal(pm_crash_set_hook(NULL, NULL), 0);
	pm_drain(f->map);
	assert_int_equal(log.n, 4);
}

/* ---------------------------------------------------------------- crash at */

#define CHILD_LINES 5

static unsigned char child_byte(size_t line, size_t i)
{
	return (unsigned char)(0x10 * (line + 1) + i % 16);
}

/* the workload of the child: fence k (from 1) persists line k-1 */
static int crash_child(const char *path)
{
	struct pm_map *map = NULL;
	unsigned char *base;
	size_t line, i;
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0 || pm_map_new(fd, 0, &map))
		return 2;
	base = pm_map_addr(map);
	memset(base + 10 * 64, 0xee, 64); /* never flushed */
	for (line = 0; line < CHILD_LINES; line++) {
		for (i = 0; i < 64; i++)
			base[line * 64 + i] = child_byte(line, i);
		pm_persist(map, base + line * 64, 64);
	}
	pm_map_delete(&map);
	close(fd);
	return 0;
}

/* run the child on a fresh zeroed file; returns its wait status */
static int run_child(const char *path, const char *crash_at, const char *seed)
{
	char *argv[] = { "test-crash", "--crash-child", (char *)path, NULL };
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("PM_CRASH_AT", crash_at, 1);
		if (seed)
			setenv("PM_CRASH_SEED", seed, 1);
		else
			unsetenv("PM_CRASH_SEED");
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

/* line of buf: 0 = all old (zero), 1 = all new, 2 = torn in whole words */
static int line_state(const unsigned char *buf, size_t line)
{
	size_t w, i, nnew = 0, nold = 0, wnew;

	for (w = 0; w < 8; w++) {
		for (wnew = 0, i = w * 8; i < w * 8 + 8; i++)
			wnew += buf[line * 64 + i] == child_byte(line, i);
		assert_true(wnew == 0 || wnew == 8); /* 8-byte atomic */
		if (wnew)
			nnew++;
		else
			nold++;
		for (i = w * 8; !wnew && i < w * 8 + 8; i++)
			assert_int_equal(buf[line * 64 + i], 0);
	}
	return nold == 8 ? 0 : nnew == 8 ? 1 : 2;
}

static void test_crash_at(void **state)
{
	unsigned char buf[16 * 64];
	char path[64];
	int status, fd;
	size_t line;

	(void)state;
	fd = make_file(path, sizeof(path), 4096);
	status = run_child(path, "3", NULL);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), PM_CRASH_EXIT_CODE);
	assert_int_equal(pread(fd, buf, sizeof(buf), 0), sizeof(buf));
	/* fences 1 and 2 took effect; fence 3 and later never did */
	assert_int_equal(line_state(buf, 0), 1);
	assert_int_equal(line_state(buf, 1), 1);
	for (line = 2; line < CHILD_LINES; line++)
		assert_int_equal(line_state(buf, line), 0);
	assert_int_equal(buf[10 * 64], 0);
	close(fd);
	unlink(path);
}

static void test_crash_at_seeded(void **state)
{
	unsigned char buf[16 * 64];
	char path[64], seed[16];
	int status, fd, s, seen_new = 0;

	(void)state;
	for (s = 1; s <= 8; s++) {
		fd = make_file(path, sizeof(path), 4096);
		snprintf(seed, sizeof(seed), "%d", s);
		status = run_child(path, "3", seed);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), PM_CRASH_EXIT_CODE);
		assert_int_equal(pread(fd, buf, sizeof(buf), 0), sizeof(buf));
		assert_int_equal(line_state(buf, 0), 1);
		assert_int_equal(line_state(buf, 1), 1);
		/* line 2 was flushed, not fenced: may have reached media */
		seen_new |= line_state(buf, 2) != 0;
		assert_int_equal(line_state(buf, 3), 0); /* not yet stored */
		close(fd);
		unlink(path);
	}
	assert_true(seen_new);
}

static void test_crash_at_never_reached(void **state)
{
	unsigned char buf[16 * 64];
	char path[64];
	int status, fd;
	size_t line;

	(void)state;
	fd = make_file(path, sizeof(path), 4096);
	status = run_child(path, "1000", NULL);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(pread(fd, buf, sizeof(buf), 0), sizeof(buf));
	for (line = 0; line < CHILD_LINES; line++)
		assert_int_equal(line_state(buf, line), 1);
	close(fd);
	unlink(path);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_enabled),
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_initial_content_durable),
		T(test_unflushed_lost),
		T(test_flushed_unfenced_lost),
		T(test_flushed_fenced_durable),
		T(test_memcpy_nodrain_not_durable),
		T(test_snapshot_at_flush),
		T(test_seeded_images),
		T(test_fence_is_per_thread),
		T(test_late_fence_does_not_roll_back),
		T(test_multiple_maps),
		T(test_maps_of_one_file),
		T(test_write_image),
		T(test_unarmed_map),
		T(test_hook_every_fence),
#undef T
		cmocka_unit_test(test_crash_at),
		cmocka_unit_test(test_crash_at_seeded),
		cmocka_unit_test(test_crash_at_never_reached),
	};

	if (argc == 3 && strcmp(argv[1], "--crash-child") == 0)
		return crash_child(argv[2]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
