/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-hdpm-names: the DRAM name index (lib/hdpm/names.c). After every
 * operation the index must say exactly what the inode table says: each
 * used inode is found under (parent, name), nothing else is found, and
 * each directory's child count is its number of entries. Checked with
 * many files in one directory (and the lookups must not scan), with
 * random create/unlink/rename/mkdir/rmdir against a DRAM model, across
 * remounts (the index is rebuilt), and with the hash narrowed so that
 * every name collides or the probe runs wrap around the table's end.
 * The inode table grows by chunks: from an 8-inode first chunk up to
 * its last chunk, then -ENOSPC, and again after a remount.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hdpm-env.h"
#include "hdpm.h"
#include "hdpm/internal.h"
#include "pmalloc.h"

#define HEAP_SIZE (64ULL << 20)
#define NMANY 3000 /* files in one directory (the table holds 4096) */

struct env {
	struct hdpm_env h;
	int narrow; /* apply mask and set to the hash after each mount */
	uint64_t mask, set;
};

/* a narrowed test hash, applied again after each mount */
static void apply_hash(struct env *e)
{
	if (!e->narrow)
		return;
	e->h.fs->names.hash_mask = e->mask;
	e->h.fs->names.hash_set = e->set;
	assert_int_equal(hdpm_names_rebuild(e->h.fs), 0);
}

static void env_remount(struct env *e)
{
	hdpm_env_remount(&e->h);
	apply_hash(e);
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	if (!e || hdpm_env_init(&e->h, "test-hdpm-names", HEAP_SIZE,
				HDPM_NO_GC_THREAD, 1))
		return -1;
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	hdpm_env_fini(&e->h);
	free(e);
	return 0;
}

/* the index agrees with the inode table, both ways */
static void check_index(struct hdpm_fs *fs)
{
	uint64_t i, found, entries = 0, *kids;
	size_t s, used = 0;

	kids = calloc(fs->ninodes, sizeof(*kids));
	assert_non_null(kids);
	for (i = 1; i < fs->ninodes; i++) {
		struct hdpm_inode *in = hdpm_inode(fs, i);
		const char *name;

		if (!hdpm_mode(in)) {
			assert_int_equal(fs->names.ref[i].in, 0);
			continue;
		}
		entries++;
		kids[in->parent]++;
		name = hdpm_direct(fs, in->name_off);
		found = UINT64_MAX;
		assert_int_equal(hdpm_names_find(fs, in->parent, name,
						 strlen(name), &found),
				 0);
		assert_int_equal(found, i);
	}
	for (s = 0; s < fs->names.cap; s++)
		used += fs->names.slots[s] != 0;
	assert_int_equal(used, entries);
	for (i = 0; i < fs->ninodes; i++)
		assert_int_equal(hdpm_names_children(fs, i), kids[i]);
	/* each directory's list (readdir's walk) holds exactly its
	 * children, linked both ways */
	for (i = 0; i < fs->ninodes; i++) {
		uint64_t e, prev = 0, n = 0;

		for (e = hdpm_names_first(fs, i); e;
		     e = hdpm_names_next(fs, e - 1)) {
			assert_true(e - 1 < fs->ninodes && n < fs->ninodes);
			assert_int_equal(hdpm_inode(fs, e - 1)->parent, i);
			assert_int_equal(fs->names.ref[e - 1].prev, prev);
			prev = e;
			n++;
		}
		assert_int_equal(n, kids[i]);
	}
	free(kids);
}

static void create_file(struct hdpm_fs *fs, const char *path)
{
	struct hdpm_file *f;

	assert_int_equal(
		hdpm_open(fs, path, O_CREAT | O_EXCL | O_RDWR, 0644, &f), 0);
	assert_int_equal(hdpm_close(f), 0);
}

static int count_entry(const char *name, const struct stat *st, void *arg)
{
	(void)name;
	(void)st;
	++*(unsigned *)arg;
	return 0;
}

/* many files in one directory; a find looks at few slots, not the table */
static void test_many_in_one_dir(void **state)
{
	struct env *e = *state;
	struct stat st;
	char path[64];
	uint64_t probes;
	unsigned i, n = 0;

	assert_int_equal(hdpm_mkdir(e->h.fs, "/d", 0755), 0);
	assert_int_equal(hdpm_mkdir(e->h.fs, "/e", 0755), 0);
	for (i = 0; i < NMANY; i++) {
		snprintf(path, sizeof(path), "/d/file-%u", i);
		create_file(e->h.fs, path);
	}
	/* the same names in another directory are other entries */
	for (i = 0; i < 100; i++) {
		snprintf(path, sizeof(path), "/e/file-%u", i);
		create_file(e->h.fs, path);
	}
	check_index(e->h.fs);
	probes = e->h.fs->names.probes;
	for (i = 0; i < NMANY; i++) {
		snprintf(path, sizeof(path), "/d/file-%u", i);
		assert_int_equal(hdpm_stat(e->h.fs, path, &st), 0);
	}
	/* two components per stat; a scan would look at ~4000 inodes each */
	probes = e->h.fs->names.probes - probes;
	print_message("%u stats: %.2f probes per component\n", NMANY,
		      (double)probes / (2.0 * NMANY));
	assert_true(probes < 8ULL * NMANY);
	assert_int_equal(hdpm_stat(e->h.fs, "/d/file-3000", &st), -ENOENT);
	assert_int_equal(hdpm_stat(e->h.fs, "/e/file-100", &st), -ENOENT);
	assert_int_equal(hdpm_readdir(e->h.fs, "/d", count_entry, &n), 0);
	assert_int_equal(n, NMANY);
	assert_int_equal(hdpm_rmdir(e->h.fs, "/e"), -ENOTEMPTY);
	/* rebuilt at mount */
	env_remount(e);
	check_index(e->h.fs);
	assert_int_equal(hdpm_stat(e->h.fs, "/d/file-2999", &st), 0);
	for (i = 0; i < NMANY; i += 2) {
		snprintf(path, sizeof(path), "/d/file-%u", i);
		assert_int_equal(hdpm_unlink(e->h.fs, path), 0);
	}
	check_index(e->h.fs);
	for (i = 0; i < NMANY; i++) {
		snprintf(path, sizeof(path), "/d/file-%u", i);
		assert_int_equal(hdpm_stat(e->h.fs, path, &st),
				 i % 2 ? 0 : -ENOENT);
	}
}

/* ---- a random namespace against a model ---- */

#define NDIRS 4
#define NNAMES 40

/* model: which names exist in each of /, /a, /b, /a/c; dirs are fixed */
static const char *const dirs[NDIRS] = { "", "/a", "/b", "/a/c" };

struct model {
	unsigned char exists[NDIRS][NNAMES];
};

static void name_path(char *buf, size_t size, unsigned d, unsigned n)
{
	snprintf(buf, size, "%s/n%u", dirs[d], n);
}

static void model_check(struct env *e, const struct model *m)
{
	char path[64];
	struct stat st;
	unsigned d, n;

	check_index(e->h.fs);
	for (d = 0; d < NDIRS; d++)
		for (n = 0; n < NNAMES; n++) {
			name_path(path, sizeof(path), d, n);
			assert_int_equal(hdpm_stat(e->h.fs, path, &st),
					 m->exists[d][n] ? 0 : -ENOENT);
		}
}

static void random_ops(struct env *e, unsigned seed, unsigned nops)
{
	struct model m;
	char from[64], to[64];
	unsigned i, d, n, d2, n2, op;
	int rc;

	memset(&m, 0, sizeof(m));
	srand(seed);
	assert_int_equal(hdpm_mkdir(e->h.fs, "/a", 0755), 0);
	assert_int_equal(hdpm_mkdir(e->h.fs, "/b", 0755), 0);
	assert_int_equal(hdpm_mkdir(e->h.fs, "/a/c", 0755), 0);
	for (i = 0; i < nops; i++) {
		op = (unsigned)rand() % 3;
		d = (unsigned)rand() % NDIRS;
		n = (unsigned)rand() % NNAMES;
		d2 = (unsigned)rand() % NDIRS;
		n2 = (unsigned)rand() % NNAMES;
		name_path(from, sizeof(from), d, n);
		name_path(to, sizeof(to), d2, n2);
		switch (op) {
		case 0: /* create */
			if (m.exists[d][n]) {
				struct hdpm_file *f;

				assert_int_equal(hdpm_open(e->h.fs, from,
							   O_CREAT | O_EXCL |
								   O_RDWR,
							   0644, &f),
						 -EEXIST);
			} else {
				create_file(e->h.fs, from);
				m.exists[d][n] = 1;
			}
			break;
		case 1: /* unlink */
			rc = hdpm_unlink(e->h.fs, from);
			assert_int_equal(rc, m.exists[d][n] ? 0 : -ENOENT);
			m.exists[d][n] = 0;
			break;
		default: /* rename, replacing what is there */
			rc = hdpm_rename(e->h.fs, from, to);
			assert_int_equal(rc, m.exists[d][n] ? 0 : -ENOENT);
			if (rc == 0) {
				m.exists[d][n] = 0;
				m.exists[d2][n2] = 1;
			}
			break;
		}
		if (i % 64 == 0)
			model_check(e, &m);
		if (i % 500 == 499) {
			env_remount(e);
			model_check(e, &m);
		}
	}
	model_check(e, &m);
	/* a directory renamed moves its whole subtree's lookups */
	assert_int_equal(hdpm_rename(e->h.fs, "/a", "/z"), 0);
	check_index(e->h.fs);
	for (n = 0; n < NNAMES; n++) {
		struct stat st;

		name_path(from, sizeof(from), 3, n);
		snprintf(to, sizeof(to), "/z/c/n%u", n);
		assert_int_equal(hdpm_stat(e->h.fs, from, &st), -ENOENT);
		assert_int_equal(hdpm_stat(e->h.fs, to, &st),
				 m.exists[3][n] ? 0 : -ENOENT);
	}
}

static void test_random_namespace(void **state)
{
	random_ops(*state, 18, 3000);
}

/* set the test hash and rebuild; the index must still be right */
static void narrow_hash(struct env *e, uint64_t mask, uint64_t set)
{
	e->narrow = 1;
	e->mask = mask;
	e->set = set;
	apply_hash(e);
	check_index(e->h.fs);
}

/* every name hashes the same: one run, told apart by the names */
static void test_all_collide(void **state)
{
	struct env *e = *state;
	struct stat st;
	char path[64];
	unsigned i;

	narrow_hash(e, 0, 0);
	for (i = 0; i < 200; i++) {
		snprintf(path, sizeof(path), "/f%u", i);
		create_file(e->h.fs, path);
	}
	check_index(e->h.fs);
	for (i = 0; i < 200; i += 3) {
		char to[64];

		snprintf(path, sizeof(path), "/f%u", i);
		snprintf(to, sizeof(to), "/g%u", i);
		assert_int_equal(hdpm_rename(e->h.fs, path, to), 0);
	}
	for (i = 1; i < 200; i += 3) {
		snprintf(path, sizeof(path), "/f%u", i);
		assert_int_equal(hdpm_unlink(e->h.fs, path), 0);
	}
	check_index(e->h.fs);
	for (i = 0; i < 200; i++) {
		snprintf(path, sizeof(path), "/f%u", i);
		assert_int_equal(hdpm_stat(e->h.fs, path, &st),
				 i % 3 == 2 ? 0 : -ENOENT);
		snprintf(path, sizeof(path), "/g%u", i);
		assert_int_equal(hdpm_stat(e->h.fs, path, &st),
				 i % 3 == 0 ? 0 : -ENOENT);
	}
	/* the random namespace with all names in one run */
	random_ops(e, 7, 1500);
}

/* homes in the last two slots: runs wrap past the end of the table */
static void test_wrapping_runs(void **state)
{
	struct env *e = *state;

	narrow_hash(e, 1, e->h.fs->names.cap - 2);
	random_ops(e, 11, 1500);
}

/* tags all equal (only the home bits vary): names compared every time */
static void test_equal_tags(void **state)
{
	struct env *e = *state;

	narrow_hash(e, e->h.fs->names.cap - 1, 0);
	random_ops(e, 12, 1500);
}

/* a file system whose inode table starts with 8 inodes */
static int setup_small(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	int rc;

	hdpm_test_itable_log2 = 3;
	rc = !e || hdpm_env_init(&e->h, "test-hdpm-names-grow", HEAP_SIZE,
				 HDPM_NO_GC_THREAD, 1);
	hdpm_test_itable_log2 = 0;
	if (rc)
		return -1;
	*state = e;
	return 0;
}

/* inodes of the first k chunks of an 8-inode first chunk */
static uint64_t chunks_hold(unsigned k)
{
	return 8 * ((1ULL << k) - 1);
}

static void test_itable_growth(void **state)
{
	struct env *e = *state;
	uint64_t max = chunks_hold(HDPM_ICHUNKS), i, n = 0;
	struct hdpm_file *f;
	char path[32];
	unsigned cnt;
	unsigned k = 1;
	int rc;

	assert_int_equal(e->h.fs->ninodes, 8);
	assert_int_equal(hdpm_mkdir(e->h.fs, "/x", 0755), 0);
	/* every create that finds the table full adds the next chunk */
	for (;;) {
		snprintf(path, sizeof(path), "/x/f%llu", (unsigned long long)n);
		rc = hdpm_open(e->h.fs, path, O_CREAT | O_RDWR, 0644, &f);
		if (rc < 0)
			break;
		assert_int_equal(hdpm_pwrite(f, path, 8, 0), 8);
		hdpm_close(f);
		n++;
		/* root, /x and n files: the fewest chunks that hold them */
		while (chunks_hold(k) < n + 2)
			k++;
		assert_int_equal(e->h.fs->ninodes, chunks_hold(k));
		if (n % 97 == 0)
			check_index(e->h.fs);
	}
	assert_int_equal(rc, -ENOSPC);
	assert_int_equal(n, max - 2);
	assert_int_equal(e->h.fs->ninodes, max);
	check_index(e->h.fs);
	cnt = 0;
	assert_int_equal(hdpm_readdir(e->h.fs, "/x", count_entry, &cnt), 0);
	assert_int_equal(cnt, n);
	/* a full table refuses a mkdir too, and nothing changed */
	assert_int_equal(hdpm_mkdir(e->h.fs, "/y", 0755), -ENOSPC);
	env_remount(e);
	assert_int_equal(e->h.fs->ninodes, max);
	check_index(e->h.fs);
	cnt = 0;
	assert_int_equal(hdpm_readdir(e->h.fs, "/x", count_entry, &cnt), 0);
	assert_int_equal(cnt, n);
	/* files in the last chunk read back; freed slots are reused */
	for (i = n - 5; i < n; i++) {
		char buf[8];

		snprintf(path, sizeof(path), "/x/f%llu", (unsigned long long)i);
		assert_int_equal(hdpm_open(e->h.fs, path, O_RDONLY, 0, &f), 0);
		assert_int_equal(hdpm_pread(f, buf, 8, 0), 8);
		assert_memory_equal(buf, path, 8);
		hdpm_close(f);
	}
	for (i = 0; i < n; i += 2) {
		snprintf(path, sizeof(path), "/x/f%llu", (unsigned long long)i);
		assert_int_equal(hdpm_unlink(e->h.fs, path), 0);
	}
	assert_int_equal(hdpm_mkdir(e->h.fs, "/y", 0755), 0);
	assert_int_equal(e->h.fs->ninodes, max);
	check_index(e->h.fs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_many_in_one_dir, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_random_namespace, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_all_collide, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_wrapping_runs, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_itable_growth, setup_small,
						teardown),
		cmocka_unit_test_setup_teardown(test_equal_tags, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
